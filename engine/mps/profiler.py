"""``torch.mps.profiler``: Metal's signpost tracing, which needs the backend the engine does not have."""
import contextlib


def start(mode="interval", wait_until_completed=False):
    raise RuntimeError("Cannot execute profilerStartTrace() without MPS backend.")


def stop():
    raise RuntimeError("Cannot execute profilerStopTrace() without MPS backend.")


@contextlib.contextmanager
def profile(mode="interval", wait_until_completed=False):
    """Trace the code inside (as torch's: stopping the trace raises last, so its message is the one seen)."""
    try:
        start(mode, wait_until_completed)
        yield
    finally:
        stop()


def is_metal_capture_enabled():
    """False: there is no Metal to capture."""
    return False


def is_capturing_metal():
    """False: there is no Metal to capture."""
    return False
