"""``ReduceOp``: how ``all_reduce``, ``reduce`` and ``reduce_scatter_tensor`` combine the ranks' values."""
import enum


class ReduceOp(enum.Enum):
    """torch.distributed's reduction operations (``dist.ReduceOp.SUM``...)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


def check_reduce_op(op):
    """``op`` as a ReduceOp, or one line naming what was passed."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be an engine.distributed.ReduceOp (e.g. ReduceOp.SUM), got {op!r}")
    return op
