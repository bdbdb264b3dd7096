"""torch's older spellings of the autocast state, kept for old code: ``torch.is_autocast_cpu_enabled()`` and the
other per-device getters and setters warn (DeprecationWarning, torch's text) and answer as
``is_autocast_enabled(device_type)`` and its kin; ``autocast_increment_nesting``/``autocast_decrement_nesting``
move the count of open regions (the parameter cache empties when ``autocast`` brings it back to 0) and return it."""
import warnings

from . import autocast_mode


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return autocast_mode.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    autocast_mode.set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return autocast_mode.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    autocast_mode.set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return autocast_mode.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    autocast_mode.set_autocast_dtype("cuda", dtype)


def autocast_increment_nesting():
    autocast_mode._state.depth += 1
    return autocast_mode._state.depth


def autocast_decrement_nesting():
    autocast_mode._state.depth -= 1
    return autocast_mode._state.depth
