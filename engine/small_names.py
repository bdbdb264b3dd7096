"""Small torch-level names: ``torch.GradScaler``, the function forms of quantized tensors' parameters
(``torch.q_scale(q)``...), the build flags ``torch.has_lapack``..., ``torch.is_distributed``, ``torch._assert``,
and the Tensor methods ``record_stream``, ``const_data_ptr`` and ``module_load``.
"""
from . import _device
from .amp import GradScaler  # noqa: F401  (torch.GradScaler is torch.amp.GradScaler)
from .quantized_tensor import QuantizedTensor
from .tensor import Tensor, register_method

# the build's capabilities, as torch reports its own: LAPACK through numpy's linalg, FFTs through numpy.fft; no MKL
# and no OpenMP in the engine (its CPU threads are BLAS's and its own pools)
has_lapack = True
has_mkl = False
has_openmp = False
has_spectral = True


def _quantized_only(name, input):
    if not isinstance(input, QuantizedTensor):
        backend = "CUDA" if isinstance(input, Tensor) and input.is_cuda else "CPU"
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the '{backend}' backend. "
                                  f"'aten::{name}' is only available for quantized tensors.")
    return getattr(input, name)()


def q_scale(input):
    """The scale of a per-tensor quantized tensor."""
    return _quantized_only("q_scale", input)


def q_zero_point(input):
    """The zero point of a per-tensor quantized tensor."""
    return _quantized_only("q_zero_point", input)


def q_per_channel_scales(input):
    """The scales of a per-channel quantized tensor (float64, one per channel)."""
    return _quantized_only("q_per_channel_scales", input)


def q_per_channel_zero_points(input):
    """The zero points of a per-channel quantized tensor (int64, one per channel)."""
    return _quantized_only("q_per_channel_zero_points", input)


def q_per_channel_axis(input):
    """The channel axis of a per-channel quantized tensor."""
    return _quantized_only("q_per_channel_axis", input)


def int_repr(input):
    """The stored integers of a quantized tensor, as a plain integer tensor."""
    return _quantized_only("int_repr", input)


def is_distributed(input):
    """Whether ``input`` is a distributed tensor: never, as in torch's eager mode."""
    return False


def _assert(condition, message):
    """``torch._assert``: raise AssertionError(``message``) unless ``condition`` holds. A function rather than the
    statement, so that symbolic tracing (``engine.fx``) records it as a node instead of branching on a Proxy."""
    if not condition:
        raise AssertionError(message)


def record_stream(self, stream):
    """Mark that ``stream`` uses this tensor, so that its memory is not reused before that work is done.

    torch raises on CPU tensors (the op has no CPU kernel), and so does this. On a GPU it checks its arguments
    and does nothing more: CuPy's memory pool frees a block for reuse on the stream that allocated it and has no
    per-stream record of other users, so code that hands a tensor to a side stream must keep the tensor alive
    (or synchronize) until that stream's work is done."""
    if not _device.is_cuda_array(self._data):
        raise NotImplementedError("Could not run 'aten::record_stream' with arguments from the 'CPU' backend. "
                                  "'aten::record_stream' is only available for these backends: [CUDA].")
    if getattr(getattr(stream, "device", None), "type", "cuda") != "cuda":  # engine.Stream("cpu")
        raise RuntimeError(f"record_stream: expected a CUDA stream, got {stream!r}")


def const_data_ptr(self):
    """The address of the first element, for reading (``data_ptr``: the engine does not tell reads from
    writes)."""
    return self.data_ptr()


def module_load(self, other, assign=False):
    """What ``nn.Module.load_state_dict`` swaps in for this parameter or buffer when swapping: ``other`` detached
    with ``assign``, else this tensor after copying ``other`` into it, detached (a new tensor object either way)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


register_method(record_stream, "record_stream")
register_method(const_data_ptr, "const_data_ptr")
register_method(module_load, "module_load")

__all__ = ["GradScaler", "has_lapack", "has_mkl", "has_openmp", "has_spectral", "int_repr", "is_distributed",
           "q_per_channel_axis", "q_per_channel_scales", "q_per_channel_zero_points", "q_scale", "q_zero_point"]
