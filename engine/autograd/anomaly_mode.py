"""Anomaly detection for the backward engine (``torch.autograd.detect_anomaly``).

While it is on, every recorded node keeps the Python stack of the forward call that made it (the engine's own
frames left out), so that an error raised in a backward is preceded by a warning that shows where that node came
from; with ``check_nan``, a backward that returns NaN raises an error naming the node and the gradient. Off (the
default), the forward pays one flag test per recorded op and the backward one per node.
"""
import functools
import os
import traceback
import warnings

_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _State:
    enabled = False
    check_nan = True


def is_anomaly_enabled():
    return _State.enabled


def is_anomaly_check_nan_enabled():
    return _State.check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    _State.enabled = bool(enabled)
    _State.check_nan = bool(check_nan)


class detect_anomaly:
    """Anomaly detection on inside the block (or the decorated function), with torch's warning that it is
    slow; the previous setting comes back on exit."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (_State.enabled, _State.check_nan)
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off at once; as a context, puts the previous setting back on exit."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_State.enabled, _State.check_nan)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False


def forward_stack():
    """The current Python stack as text, outermost call first, without the engine's frames."""
    frames = [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_ENGINE_DIR)]
    return "".join(traceback.format_list(frames))


def warn_failed(node):
    """torch's warning before an error that ``node``'s backward raised: where the node was made."""
    stack = getattr(node, "_anomaly_stack", None)
    if stack is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. Enable detect "
                      "anomaly during forward pass for more information.", stacklevel=2)
    else:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                      f"{stack}", stacklevel=2)


def check_nan(node, grads_in):
    """Raise when one of the gradients ``node``'s backward returned holds a NaN."""
    from .._device import array_module
    for i, grad in enumerate(grads_in):
        if grad is not None and grad.dtype.kind in "fc" and bool(array_module(grad).isnan(grad).any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]
