"""``engine.accelerator``: PyTorch's device-agnostic accelerator API (``torch.accelerator``), on CUDA.

The engine has one accelerator, CUDA through CuPy. As a CUDA build of PyTorch does, it names CUDA as
the current accelerator whenever that backend is built in (here: whenever CuPy imports), even on a
machine without a GPU; ``is_available()`` and ``current_accelerator(check_available=True)`` tell
whether one can be used. Without CuPy there is no accelerator (``current_accelerator()`` is None).
Where no GPU can be used, the calls that need one raise RuntimeError, as PyTorch's do.

The usual device pick of a script::

    device = engine.accelerator.current_accelerator(check_available=True) or engine.device("cpu")

Not here (the engine has no equivalent yet): ``Graph`` (capture with ``engine.nn.Graph``),
``max_memory_reserved`` and ``reset_accumulated_memory_stats`` (CuPy's pool keeps no such counts) and
the ``random`` submodule (seed with ``engine.manual_seed`` / ``engine.cuda.manual_seed``).
"""
import warnings

from .. import _device, _dtype, cuda as _cuda
from . import memory
from ._index import device_index_of, require_gpu
from .memory import (empty_cache, empty_host_cache, get_memory_info, max_memory_allocated,
                     memory_allocated, memory_reserved, memory_stats, reset_peak_memory_stats)


def current_accelerator(check_available=False):
    """``engine.device("cuda")`` when the CUDA backend is built in (CuPy imports), else None; with
    ``check_available=True`` also None when no GPU can be used."""
    if _device.cupy_module() is None:
        return None
    if check_available and not _cuda.is_available():
        return None
    return _device.device("cuda")


def is_available():
    """Whether a GPU can be used (CuPy imports, a driver answers and at least one GPU is visible)."""
    return current_accelerator() is not None and _cuda.is_available()


def device_count():
    """The number of usable GPUs (0 without any)."""
    return _cuda.device_count()


def current_device_index():
    """The index of the current GPU (RuntimeError without one)."""
    return _cuda.current_device()


def set_device_index(device, /):
    """Make ``device`` (an index, ``"cuda:1"`` or an engine.device with an index) the current GPU; a
    negative index changes nothing."""
    index = device_index_of(device, optional=False)
    if index >= 0:
        _cuda.set_device(index)


def current_device_idx():
    """Deprecated name of ``current_device_index``."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /):
    """Deprecated name of ``set_device_index``."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def synchronize(device=None, /):
    """Wait for every kernel queued on ``device`` (default: the current GPU)."""
    index = device_index_of(device, optional=True)
    _cuda.synchronize(index)


def current_stream(device=None, /):
    """The stream kernels are queued on for ``device`` (default: the current GPU)."""
    index = device_index_of(device, optional=True)
    return _cuda.current_stream(index)


def set_stream(stream):
    """Queue the following kernels on ``stream`` (an ``engine.cuda.Stream``)."""
    if not isinstance(stream, _cuda.Stream):
        raise TypeError(f"set_stream expects an engine.cuda.Stream, got {type(stream).__name__}")
    stream._stream.use()


def get_device_capability(device=None, /):
    """``{"supported_dtypes": {...}}``: the dtypes tensors on the GPU may have (every engine dtype)."""
    device_index_of(device, optional=True)
    require_gpu()
    return {"supported_dtypes": set(_dtype.ALL)}


class device_index:
    """``with engine.accelerator.device_index(1):`` makes GPU 1 current inside and restores the
    previous one after; ``device_index(None)`` changes nothing."""

    def __init__(self, device, /):
        self.index = device
        self.previous = None

    def __enter__(self):
        if self.index is not None:
            self.previous = current_device_index()
            set_device_index(self.index)

    def __exit__(self, *exc_info):
        if self.previous is not None:
            set_device_index(self.previous)
            self.previous = None
        return False


__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream",
           "device_count", "device_index", "empty_cache", "empty_host_cache", "get_device_capability",
           "get_memory_info", "is_available", "max_memory_allocated", "memory", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_peak_memory_stats", "set_device_idx",
           "set_device_index", "set_stream", "synchronize"]
