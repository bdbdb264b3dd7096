"""``torch.use_deterministic_algorithms`` and its queries, for scripts that set them.

The engine's CPU kernels are deterministic; on the GPU, the backward passes that scatter with atomicAdd
(pooling windows, interpolation, RoIAlign) may sum in a different order from run to run. The mode is
recorded and reported, as torch does, but no kernel consults it (torch would raise, or warn with
``warn_only=True``, when such a kernel runs in deterministic mode).
"""

_mode = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record whether deterministic algorithms are asked for (both arguments bools, as torch checks)."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError("use_deterministic_algorithms(): argument 'warn_only' must be bool, "
                        f"not {type(warn_only).__name__}")
    _mode["enabled"] = mode
    _mode["warn_only"] = warn_only


def are_deterministic_algorithms_enabled():
    return _mode["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    return _mode["warn_only"]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """``torch.set_deterministic_debug_mode``: "default"/0 turns deterministic mode off, "warn"/1 turns it on with
    ``warn_only``, "error"/2 turns it on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):  # a bool is an int, as in torch: True is "warn"
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """0 with deterministic mode off, 1 with it on in ``warn_only``, 2 with it on."""
    if not _mode["enabled"]:
        return 0
    return 1 if _mode["warn_only"] else 2
