"""``engine.mps``: ``torch.mps``'s calls for code that checks for Apple's Metal backend, which the engine does not
have. As torch's on a machine without it: ``is_available()`` is False, ``device_count()`` 0, ``manual_seed`` does
nothing, and every call that needs the device raises torch's one line."""
from ..backends import mps as _backend
from . import profiler  # noqa: F401  (torch.mps.profiler)


def _missing(call):
    return RuntimeError(f"Cannot execute {call}() without MPS backend.")


def is_available():
    """False: the engine has no Metal backend (``engine.backends.mps``)."""
    return _backend.is_available()


def device_count():
    """0: no Metal device can be used."""
    return 0


def synchronize():
    raise _missing("deviceSynchronize")


def get_rng_state(device="mps"):
    raise _missing("getDefaultGenerator")


def set_rng_state(new_state, device="mps"):
    raise _missing("getDefaultGenerator")


def manual_seed(seed):
    """Nothing to seed without the backend (torch's returns quietly too)."""


def seed():
    raise _missing("getDefaultGenerator")


def empty_cache():
    raise _missing("emptyCache")


def set_per_process_memory_fraction(fraction):
    raise _missing("setMemoryFraction")


def current_allocated_memory():
    raise _missing("getCurrentAllocatedMemory")


def driver_allocated_memory():
    raise _missing("getDriverAllocatedMemory")


def recommended_max_memory():
    raise _missing("getRecommendedMaxMemory")


def compile_shader(source):
    raise RuntimeError("MPS is not available")


def load_metallib(source):
    raise RuntimeError("MPS is not available")


class Event:
    """``torch.mps.Event``: cannot be made without the backend."""

    def __init__(self, enable_timing=False):
        raise _missing("acquireEvent")


__all__ = ["Event", "compile_shader", "current_allocated_memory", "device_count", "driver_allocated_memory",
           "empty_cache", "get_rng_state", "is_available", "load_metallib", "manual_seed", "profiler",
           "recommended_max_memory", "seed", "set_per_process_memory_fraction", "set_rng_state", "synchronize"]
