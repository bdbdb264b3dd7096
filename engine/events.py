"""``torch.Stream`` and ``torch.Event``: the device-generic stream and event.

On a CUDA device they wrap ``engine.cuda.Stream`` / ``engine.cuda.Event`` (CuPy's). On the CPU, as torch's, a
stream is a no-op that is always done, and events cannot be recorded (the CPU runs ops in order as they are
called; torch answers "cpu backend doesn't support events."). Without a device argument both take the current
accelerator (a GPU where there is one), else the CPU.
"""
from . import _device

_NO_EVENTS = "cpu backend doesn't support events."
_DEVICE_TYPES = {"cpu": 0, "cuda": 1}


def _resolve_device(device):
    if device is None:
        from . import accelerator
        device = accelerator.current_accelerator(check_available=True) or "cpu"
    return _device.device(device)


def _index(dev):
    """torch's device_index: -1 on the CPU; on a GPU the given index, else the current GPU."""
    if dev.type != "cuda":
        return -1
    if dev.index is not None:
        return dev.index
    from . import cuda
    return cuda.current_device()


class Stream:
    """A stream on a device (``torch.Stream``): ``with stream:`` queues the GPU kernels inside on it."""

    def __init__(self, device=None, *, priority=0):
        self.device = _resolve_device(device)
        self._impl = None
        if self.device.type == "cuda":
            from . import cuda
            self._impl = cuda.Stream(self.device, priority=priority)
        self._context = None

    @property
    def device_type(self):
        """torch's DeviceType number: 0 for the CPU, 1 for CUDA."""
        return _DEVICE_TYPES[self.device.type]

    @property
    def device_index(self):
        return _index(self.device)

    @property
    def stream_id(self):
        return 0 if self._impl is None else self._impl.cuda_stream

    def query(self):
        """Whether all work queued on the stream is done (always, on the CPU)."""
        return True if self._impl is None else self._impl.query()

    def synchronize(self):
        """Wait for the work queued on the stream."""
        if self._impl is not None:
            self._impl.synchronize()

    def wait_event(self, event):
        """Later work on this stream waits for ``event``."""
        if self._impl is not None:
            self._impl.wait_event(event._impl)

    def wait_stream(self, stream):
        """Later work on this stream waits for what is queued on ``stream`` now."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        self._impl.wait_stream(stream._impl)

    def record_event(self, event=None):
        """Record ``event`` (a new one if None) on this stream; returns it."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def __enter__(self):
        if self._impl is not None:
            from . import cuda
            self._context = cuda.stream(self._impl)
            self._context.__enter__()
        return self

    def __exit__(self, *exc_info):
        if self._context is not None:
            self._context.__exit__(*exc_info)
            self._context = None

    def __eq__(self, other):
        return (isinstance(other, Stream) and self.device == other.device and self.stream_id == other.stream_id)

    def __hash__(self):
        return hash((self.device.type, self.device_index, self.stream_id))

    def __repr__(self):
        return (f"engine.Stream device_type={self.device.type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A marker in a device's stream of work (``torch.Event``): record it, wait for it, time between two."""

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        self.device = _resolve_device(device)
        self.enable_timing = enable_timing
        self._impl = None
        self._recorded = False
        if self.device.type == "cuda":
            from . import cuda
            self._impl = cuda.Event(enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    @property
    def event_id(self):
        return 0 if self._impl is None else id(self._impl._event)

    def record(self, stream=None):
        """Mark the current point of ``stream`` (the current stream if None)."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        self._impl.record(None if stream is None else stream._impl)
        self._recorded = True

    def wait(self, stream=None):
        """Make ``stream`` (the current one if None) wait for this event (nothing to wait for on the CPU)."""
        if self._impl is None:
            return
        if stream is None:
            self._impl.wait()
        else:
            stream._impl.wait_event(self._impl)

    def query(self):
        """Whether the work before the event is done (always, on the CPU)."""
        return True if self._impl is None else self._impl.query()

    def synchronize(self):
        """Wait until the work before the event is done."""
        if self._impl is not None:
            self._impl.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event to ``end_event``: both timed, both recorded."""
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return self._impl.elapsed_time(end_event._impl)

    def __repr__(self):
        return (f"engine.Event device_type={self.device.type}, device_index={_index(self.device)}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")
