"""``index_reduce``: reduce rows of ``source`` into ``input`` at the positions ``index`` gives along a dim, with
prod, mean, amax or amin (``torch.index_reduce``, ``Tensor.index_reduce(_)``). It is ``scatter_reduce`` with the
1-d index spread over every other dim of ``source``, so values, gradients and the mean's count are the same."""
from .. import _dtype
from ..tensor import register_method
from ._common import wrap_dim
from .scatter_reductions import scatter_reduce, scatter_reduce_

REDUCES = ("prod", "mean", "amax", "amin")


def _spread_index(input, dim, index, source, reduce):
    """(dim, index spread over source's shape) after torch's checks."""
    if reduce not in REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, got {index.ndim} dims")
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got {index.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_reduce_(): self ({input.dtype}) and source ({source.dtype}) must have the same "
                           f"scalar type")
    dim = wrap_dim(dim, input.ndim)
    along = source.shape[dim] if source.ndim else 1
    if index.numel() != along:
        raise IndexError(f"index_reduce_(): Number of indices ({index.numel()}) should be equal to "
                         f"source.size(dim) ({along})")
    return dim, index.reshape((-1,) + (1,) * (source.ndim - 1 - dim)).expand(*source.shape).long()


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    dim, spread = _spread_index(input, dim, index, source, reduce)
    return scatter_reduce(input, dim, spread, source, reduce, include_self=include_self)


def index_reduce_(input, dim, index, source, reduce, *, include_self=True):
    dim, spread = _spread_index(input, dim, index, source, reduce)
    return scatter_reduce_(input, dim, spread, source, reduce, include_self=include_self)

register_method(index_reduce)
register_method(index_reduce_)

__all__ = ["index_reduce"]
