"""Switches for gradient recording: no_grad, enable_grad, set_grad_enabled, inference_mode."""
import functools


class _State:
    enabled = True


def is_grad_enabled():
    return _State.enabled


class _GradMode:
    """Base for context managers that also work as decorators."""

    mode = True

    def __enter__(self):
        self.prev = _State.enabled
        _State.enabled = self.mode

    def __exit__(self, *exc):
        _State.enabled = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()


class no_grad(_GradMode):
    """Operations inside record no graph (as ``torch.no_grad``)."""

    mode = False


class enable_grad(_GradMode):
    mode = True


class inference_mode(_GradMode):
    """Like ``no_grad`` (the engine has no separate inference tensors)."""

    def __init__(self, mode=True):
        self.mode = not mode

    def _args(self):
        return (not self.mode,)


class set_grad_enabled(_GradMode):
    """Sets gradient recording on or off; takes effect immediately, and undoes it as a context."""

    def __init__(self, mode):
        self.prev = _State.enabled
        self.mode = bool(mode)
        _State.enabled = self.mode

    def __enter__(self):
        pass

    def _args(self):
        return (self.mode,)
