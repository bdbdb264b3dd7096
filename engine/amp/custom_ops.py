"""``torch.amp.custom_fwd`` / ``custom_bwd``: decorators that give a custom ``autograd.Function``'s forward and
backward a defined autocast state.

``custom_fwd`` records on ``ctx`` whether autocast was on for the device type and its dtype; with
``cast_inputs``, inside an autocast region, it casts the floating inputs on that device type (not float64, and
through lists, tuples and dicts) to ``cast_inputs`` and runs the forward with autocast off. ``custom_bwd`` runs the
backward under the autocast state its forward recorded, so both halves compute in the same types.
"""
import collections.abc
import functools

import numpy as np

from .. import _dtype
from .autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["custom_fwd", "custom_bwd"]


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def _cast(value, device_type, dtype):
    """``value`` with its floating tensors on ``device_type`` (float64 excepted) cast to ``dtype``, looking into
    mappings and iterables (lists and tuples keep their type; other iterables become generators, as in torch)."""
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _dtype.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        items = (_cast(v, device_type, dtype) for v in value)
        return type(value)(items) if isinstance(value, (list, tuple)) else items
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom Function's ``forward(ctx, ...)`` (see the module's docstring); without ``fwd`` it returns
    the decorator. Outside an autocast region it changes nothing."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom Function's ``backward(ctx, ...)`` so that it runs with the autocast state (on or off, and
    the dtype) that ``custom_fwd`` recorded for its forward."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
