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
