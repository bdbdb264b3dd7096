"""``ShapeProp``: run a ``GraphModule`` on example inputs and record, on every node, the metadata of the tensor(s)
it produced (``node.meta["tensor_meta"]``, torch.fx's ``TensorMetadata``) and the result's type
(``node.meta["type"]``); used by passes that need shapes without re-running the model."""
from typing import NamedTuple

from ..interpreter import Interpreter
from ..node import map_aggregate


class TensorMetadata(NamedTuple):
    """What a pass may want to know about a tensor without holding it."""
    shape: object
    dtype: object
    requires_grad: bool
    stride: tuple
    memory_format: object
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result):
    """``TensorMetadata`` of tensor ``result``; ``memory_format`` is the first layout it is contiguous in."""
    import engine
    memory_format = None
    for fmt in (engine.contiguous_format, engine.channels_last, engine.channels_last_3d):
        if result.is_contiguous(memory_format=fmt):
            memory_format = fmt
            break
    qparams = {}
    if result.is_quantized:
        qparams["qscheme"] = result.qscheme()
        if hasattr(result, "q_scale"):
            qparams["scale"] = result.q_scale()
            qparams["zero_point"] = result.q_zero_point()
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), memory_format,
                          result.is_quantized, qparams)


class ShapeProp(Interpreter):
    """``ShapeProp(gm).propagate(*args)`` runs ``gm`` and annotates each node as it goes."""

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n):
        result = super().run_node(n)
        from ...tensor import Tensor
        found = []

        def meta(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        tensor_meta = map_aggregate(result, meta)
        if found:
            n.meta["tensor_meta"] = tensor_meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on ``args`` (annotating every node); returns its result."""
        return super().run(*args)
