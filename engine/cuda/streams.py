"""Streams, events and the contexts that pick a GPU or a stream, as ``torch.cuda``'s (on CuPy's streams)."""
import contextlib

from .. import _device
from .memory import gpu as _cupy


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


class ExternalStream(Stream):
    """A stream made elsewhere (another library), from its ``cudaStream_t`` address; the caller keeps it alive."""

    def __init__(self, stream_ptr, device=None, **kwargs):
        index = -1 if device is None else _device_index(device)
        super().__init__(_stream=_cupy().cuda.ExternalStream(int(stream_ptr), index))


def get_stream_from_external(data_ptr, device=None):
    """An ``ExternalStream`` on the stream at address ``data_ptr``."""
    _cupy()
    return ExternalStream(data_ptr, device)


def current_stream(device=None):
    return Stream(_stream=_cupy().cuda.get_current_stream())


def default_stream(device=None):
    return Stream(_stream=_cupy().cuda.Stream.null)


def set_stream(stream):
    """Make ``stream`` the current stream (None: no change)."""
    if stream is not None:
        stream._stream.use()


def is_current_stream_capturing():
    """Whether the current stream is being captured into a CUDA graph."""
    return bool(_cupy().cuda.get_current_stream().is_capturing())


class StreamContext:
    """``with StreamContext(s):`` queues the kernels inside on stream ``s`` (None: no change)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is not None:
            self.stream._stream.__enter__()
        return self

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream._stream.__exit__(*exc)
        return False


def stream(stream):
    """Queue the kernels inside on stream ``stream`` (None: no change)."""
    return StreamContext(stream)


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


# ---- the current GPU ------------------------------------------------------------------------------
def _device_index(device, optional=False):
    """A GPU index from an int, "cuda:1" or an engine.device (None: the current GPU where ``optional``)."""
    if device is None and optional:
        return _cupy().cuda.Device().id
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str) and device == "cuda":
        return _cupy().cuda.Device().id
    device = _device.device(device)
    if device.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return device.index if device.index is not None else _cupy().cuda.Device().id


@contextlib.contextmanager
def _on_device(index):
    if index < 0:  # torch's "no device": nothing changes
        yield
        return
    with _cupy().cuda.Device(index):
        yield


class device:
    """``with engine.cuda.device(1):`` makes GPU 1 the current one inside (-1: no change)."""

    def __init__(self, device):
        self.idx = _device_index(device, optional=True)
        self._context = None

    def __enter__(self):
        self._context = _on_device(self.idx)
        self._context.__enter__()
        return self

    def __exit__(self, *exc):
        self._context.__exit__(*exc)
        return False


class device_of(device):
    """``with device_of(tensor):`` makes the tensor's GPU the current one inside (no change for a CPU tensor)."""

    def __init__(self, obj):
        self.idx = obj.get_device() if obj.is_cuda else -1
        self._context = None
