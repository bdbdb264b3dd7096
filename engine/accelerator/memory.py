"""``engine.accelerator.memory``: the GPU memory pool's statistics and caches (``torch.accelerator.memory``).

Without a usable GPU the statistics are 0 (an empty ``memory_stats``) and the cache calls do nothing,
as PyTorch's do before its allocator starts; ``get_memory_info`` needs a GPU.
"""
import collections

from .. import _device, cuda as _cuda
from ._index import device_index_of


def empty_cache():
    """Hand the memory pool's free blocks back to the driver."""
    _cuda.empty_cache()


def empty_host_cache():
    """Hand the pinned host memory pool's free blocks back to the driver."""
    if _cuda.is_available():
        _device.cupy().get_default_pinned_memory_pool().free_all_blocks()


def get_memory_info(device_index=None, /):
    """(free, total) bytes of the GPU."""
    device_index_of(device_index, optional=True)
    return _cuda.mem_get_info()


def memory_stats(device_index=None, /):
    """The pool's statistics under PyTorch's flat names: ``allocated_bytes.all.current`` and ``.peak``
    (bytes held by tensors) and ``reserved_bytes.all.current`` (bytes the pool holds)."""
    if not _cuda.is_available():
        return collections.OrderedDict()
    device_index_of(device_index, optional=True)
    return collections.OrderedDict([
        ("allocated_bytes.all.current", _cuda.memory_allocated()),
        ("allocated_bytes.all.peak", _cuda.max_memory_allocated()),
        ("reserved_bytes.all.current", _cuda.memory_reserved()),
    ])


def memory_allocated(device_index=None, /):
    """Bytes held by tensors."""
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /):
    """The peak of ``memory_allocated`` since the first statistics call or ``reset_peak_memory_stats``."""
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /):
    """Bytes the memory pool holds, in use or cached."""
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def reset_peak_memory_stats(device_index=None, /):
    """Start measuring ``max_memory_allocated`` afresh."""
    _cuda.reset_peak_memory_stats()


__all__ = ["empty_cache", "empty_host_cache", "get_memory_info", "max_memory_allocated", "memory_allocated",
           "memory_reserved", "memory_stats", "reset_peak_memory_stats"]
