"""``engine.cuda``: the GPU devices, memory statistics, streams and events, as ``torch.cuda`` (on CuPy).

Without CuPy or a GPU, ``is_available()`` is False, ``device_count()`` is 0, and everything that needs a
device raises one line saying which of the two is missing and how to install the ``gpu`` extra.
Beside the device calls here: ``memory`` (statistics, the allocator, ``OutOfMemoryError``), ``properties``
(``get_device_properties``, capability checks, NVML readings), ``streams`` (streams, events, the device and stream
contexts), ``random`` (the GPUs' generator states) and ``nvtx``.
"""
from .. import _device, random as _random
from .memory import gpu as _cupy


def is_available():
    return _device.cuda_available()


def device_count():
    return _device.cupy().cuda.runtime.getDeviceCount() if is_available() else 0


def current_device():
    return _cupy().cuda.Device().id


def set_device(device):
    """Make ``device`` (an index, ``"cuda:1"`` or an engine.device) the current GPU."""
    index = device if isinstance(device, int) else (_device.device(device).index or 0)
    _cupy().cuda.Device(index).use()


def _index(device):
    if device is None:
        return current_device()
    return device if isinstance(device, int) else (_device.device(device).index or 0)


def get_device_name(device=None):
    name = _cupy().cuda.runtime.getDeviceProperties(_index(device))["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None):
    props = _cupy().cuda.runtime.getDeviceProperties(_index(device))
    return int(props["major"]), int(props["minor"])


def synchronize(device=None):
    """Wait for every kernel queued on the GPU."""
    if is_available():
        with _device.cupy().cuda.Device(_index(device)):
            _device.cupy().cuda.runtime.deviceSynchronize()


def manual_seed(seed):
    """Seed the random numbers drawn on the GPUs (``engine.manual_seed`` seeds them and the CPU's)."""
    _random.seed_cuda(seed)


manual_seed_all = manual_seed


def empty_cache():
    """Hand the memory pool's free blocks back to the driver."""
    if is_available():
        _device.cupy().get_default_memory_pool().free_all_blocks()


from . import amp, nvtx  # noqa: E402,F401  (torch.cuda.amp, torch.cuda.nvtx: need the functions above)
from .memory import (OutOfMemoryError, caching_allocator_alloc, caching_allocator_delete,  # noqa: E402
                     get_per_process_memory_fraction, ipc_collect, max_memory_allocated, max_memory_cached,
                     max_memory_reserved, mem_get_info, memory_allocated, memory_cached, memory_reserved,
                     memory_snapshot, memory_stats, memory_stats_as_nested_dict, memory_summary,
                     reset_accumulated_memory_stats, reset_max_memory_allocated, reset_max_memory_cached,
                     reset_peak_memory_stats, set_per_process_memory_fraction)
from .properties import (can_device_access_peer, clock_rate, get_arch_list, get_device_properties,  # noqa: E402
                         get_gencode_flags, init, is_bf16_supported, is_initialized, is_tf32_supported,
                         list_gpu_processes, memory_usage, power_draw, temperature, utilization)
from .random import (get_rng_state, get_rng_state_all, initial_seed, seed, seed_all, set_rng_state,  # noqa: E402
                     set_rng_state_all)
from .streams import (Event, ExternalStream, Stream, StreamContext, current_stream, default_stream,  # noqa: E402
                      device, device_of, get_stream_from_external, is_current_stream_capturing, set_stream,
                      stream)
from ..legacy_tensor_types import CUDA_TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)  # engine.cuda.FloatTensor, ...: torch.cuda's legacy tensor types


def __getattr__(name):
    """``default_generators``: the GPUs' generators, made when first asked for."""
    if name == "default_generators":
        from .random import default_generators
        return default_generators()
    raise AttributeError(f"module 'engine.cuda' has no attribute '{name}'")


__all__ = ["is_available", "device_count", "current_device", "set_device", "get_device_name",
           "get_device_capability", "synchronize", "manual_seed", "manual_seed_all", "empty_cache",
           "mem_get_info", "amp", "nvtx", "OutOfMemoryError", "caching_allocator_alloc",
           "caching_allocator_delete", "get_per_process_memory_fraction", "ipc_collect", "max_memory_allocated",
           "max_memory_cached", "max_memory_reserved", "memory_allocated", "memory_cached", "memory_reserved",
           "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict", "memory_summary",
           "reset_accumulated_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_peak_memory_stats", "set_per_process_memory_fraction", "can_device_access_peer", "clock_rate",
           "get_arch_list", "get_device_properties", "get_gencode_flags", "init", "is_bf16_supported",
           "is_initialized", "is_tf32_supported", "list_gpu_processes", "memory_usage", "power_draw",
           "temperature", "utilization", "get_rng_state", "get_rng_state_all", "initial_seed", "seed", "seed_all",
           "set_rng_state", "set_rng_state_all", "Event", "ExternalStream", "Stream", "StreamContext",
           "current_stream", "default_stream", "device", "device_of", "get_stream_from_external",
           "is_current_stream_capturing", "set_stream", "stream"]
