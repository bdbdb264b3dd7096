"""``engine.cuda``: the GPU devices, memory statistics, streams and events, as ``torch.cuda`` (on CuPy).

Without CuPy or a GPU, ``is_available()`` is False, ``device_count()`` is 0, and everything that needs a
device raises one line saying which of the two is missing and how to install the ``gpu`` extra.
"""
import contextlib

from .. import _device, random as _random

_peak = {}


def _cupy():
    reason = _device.cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")
    return _device.cupy()


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


# ---- memory statistics ---------------------------------------------------------------------------
def _track_peak():
    """Record the pool's peak of bytes in use: from the first call on, every allocation goes through a
    hook that notes the high-water mark (CuPy's pool keeps none)."""
    cp = _cupy()
    if "pool" in _peak:
        return _peak
    pool = cp.get_default_memory_pool()
    _peak.update(pool=pool, bytes=pool.used_bytes())

    def malloc(size):
        memory = pool.malloc(size)
        used = pool.used_bytes()
        if used > _peak["bytes"]:
            _peak["bytes"] = used
        return memory
    cp.cuda.set_allocator(malloc)
    return _peak


def memory_allocated(device=None):
    """Bytes held by tensors (the memory pool's blocks in use)."""
    return _device.cupy().get_default_memory_pool().used_bytes() if is_available() else 0


def memory_reserved(device=None):
    """Bytes the memory pool holds, in use or cached."""
    return _device.cupy().get_default_memory_pool().total_bytes() if is_available() else 0


def max_memory_allocated(device=None):
    """The peak of ``memory_allocated`` since the first memory-statistics call or the last
    ``reset_peak_memory_stats`` (call that before the code you measure)."""
    if not is_available():
        return 0
    peak = _track_peak()
    peak["bytes"] = max(peak["bytes"], memory_allocated())
    return peak["bytes"]


def reset_peak_memory_stats(device=None):
    if is_available():
        _track_peak()["bytes"] = memory_allocated()


def mem_get_info(device=None):
    """(free, total) bytes of the GPU."""
    return _cupy().cuda.runtime.memGetInfo()


# ---- streams and events --------------------------------------------------------------------------
class Stream:
    """A CUDA stream (``torch.cuda.Stream``): kernels queued in ``with engine.cuda.stream(s)`` run on it."""

    def __init__(self, device=None, priority=0, _stream=None):
        self._stream = _stream if _stream is not None else _cupy().cuda.Stream(non_blocking=True)

    def synchronize(self):
        self._stream.synchronize()

    def query(self):
        return self._stream.done

    def wait_event(self, event):
        self._stream.wait_event(event._event)

    def wait_stream(self, stream):
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    @property
    def cuda_stream(self):
        return self._stream.ptr

    def __eq__(self, other):
        return isinstance(other, Stream) and other._stream.ptr == self._stream.ptr

    def __hash__(self):
        return hash(self._stream.ptr)

    def __repr__(self):
        return f"<engine.cuda.Stream cuda_stream={self._stream.ptr:#x}>"


def current_stream(device=None):
    return Stream(_stream=_cupy().cuda.get_current_stream())


def default_stream(device=None):
    return Stream(_stream=_cupy().cuda.Stream.null)


@contextlib.contextmanager
def stream(s):
    """Queue the kernels inside on stream ``s`` (None: no change)."""
    if s is None:
        yield
        return
    with s._stream:
        yield


class Event:
    """A CUDA event (``torch.cuda.Event``): ``record`` on a stream, ``elapsed_time`` in milliseconds."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self._event = _cupy().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream=None):
        self._event.record(None if stream is None else stream._stream)

    def synchronize(self):
        self._event.synchronize()

    def query(self):
        return self._event.done

    def wait(self, stream=None):
        (stream or current_stream()).wait_event(self)

    def elapsed_time(self, end_event):
        return _cupy().cuda.get_elapsed_time(self._event, end_event._event)


from . import amp  # noqa: E402  (torch.cuda.amp: needs the functions above)
from ..legacy_tensor_types import CUDA_TYPES as _LEGACY_TYPES  # noqa: E402
globals().update(_LEGACY_TYPES)  # engine.cuda.FloatTensor, ...: torch.cuda's legacy tensor types

__all__ = ["is_available", "device_count", "current_device", "set_device", "get_device_name",
           "get_device_capability", "synchronize", "manual_seed", "manual_seed_all", "empty_cache",
           "memory_allocated", "memory_reserved", "max_memory_allocated", "reset_peak_memory_stats",
           "mem_get_info", "Stream", "current_stream", "default_stream", "stream", "Event", "amp"]
