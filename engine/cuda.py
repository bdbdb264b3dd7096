"""``engine.cuda``: GPU availability and seeding (the GPU path runs on CuPy when installed)."""
from ._device import _cupy, cuda_available


def is_available():
    return cuda_available()


def device_count():
    return _cupy.cuda.runtime.getDeviceCount() if is_available() else 0


def current_device():
    return _cupy.cuda.Device().id if is_available() else 0


def synchronize(device=None):
    if is_available():
        _cupy.cuda.Device().synchronize()


def manual_seed(seed):
    """Seeding is shared: the engine draws random numbers on the host for every device."""


def manual_seed_all(seed):
    """See ``manual_seed``."""


def empty_cache():
    if is_available():
        _cupy.get_default_memory_pool().free_all_blocks()


def max_memory_allocated(device=None):
    return _cupy.get_default_memory_pool().total_bytes() if is_available() else 0
