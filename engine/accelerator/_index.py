"""The device argument of the ``engine.accelerator`` calls turned into a GPU index, as PyTorch reads it:
an int is the index, a device (or device string) must be of the accelerator's type."""
from .. import _device, cuda as _cuda


def require_gpu():
    """Raise one line saying why no GPU can be used, unless one can."""
    reason = _device.cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")


def device_index_of(device, optional):
    """The GPU index ``device`` names; None (or a device without an index) means the current GPU when
    ``optional``, and is a ValueError otherwise."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if device is not None and not isinstance(device, (str, _device.device)):
        raise TypeError(f"device must be an engine.device, a str or an int, not {type(device).__name__}")
    index = None
    if device is not None:
        device = _device.device(device)
        if _device.cupy_module() is None:
            raise RuntimeError("Accelerator expected: CUDA is not built in (CuPy is not installed)")
        if device.type != "cuda":
            raise ValueError(f"{device.type} doesn't match the current accelerator cuda.")
        index = device.index
    if index is not None:
        return index
    if not optional:
        raise ValueError(f"Expected an engine.device with a specified index or an integer, but got:{device}")
    return _cuda.current_device()
