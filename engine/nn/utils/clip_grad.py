"""Gradient clipping by total norm or by value (``torch.nn.utils.clip_grad``)."""
import math
import types
import warnings

import numpy as np

from ..._device import move
from ...ops._common import xp_of
from ...tensor import Tensor, _new


def _as_list(tensors):
    """A single tensor or an iterable of tensors as a list."""
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _vector_norm(arr, norm_type):
    """The ``norm_type``-norm of all elements of ``arr``, accumulated in float64, in ``arr``'s dtype."""
    xp = xp_of(arr)
    a = xp.abs(arr.astype(np.float64, copy=False)).ravel()
    if a.size == 0:
        out = 0.0 if norm_type != -math.inf else math.inf
    elif norm_type == math.inf:
        out = a.max()
    elif norm_type == -math.inf:
        out = a.min()
    elif norm_type == 0:
        out = (a != 0).sum()
    elif norm_type == 1:
        out = a.sum()
    elif norm_type == 2:
        out = xp.sqrt((a * a).sum())
    else:
        out = (a ** norm_type).sum() ** (1.0 / norm_type)
    return xp.asarray(out, dtype=arr.dtype)


def _elements(t):
    """The elements whose norm is ``t``'s: a sparse tensor's coalesced values (as torch reads them)."""
    return t.coalesce()._data.values if t.is_sparse else t._data


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the per-tensor norms of ``tensors`` (as if all were concatenated), a 0-d tensor."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _new(np.asarray(0.0, np.float32))
    first_device = tensors[0].device
    norms = [move(_vector_norm(_elements(t), norm_type), first_device) for t in tensors]
    xp = xp_of(norms[0])
    total = _vector_norm(xp.stack(norms), norm_type)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return _new(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))`` in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm, np.float32)
    xp = xp_of(total)
    coef = xp.minimum(float(max_norm) / (total + 1e-6), 1.0)
    with np.errstate(invalid="ignore"):  # an infinite norm scales inf entries to nan, silently like torch
        for g in grads:
            scaled = g._data.values if g.is_sparse else g._data  # a sparse gradient: its values, in place
            scaled *= move(coef, g.device).astype(scaled.dtype, copy=False)
            g._version[0] += 1


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients' total norm to ``max_norm`` in place; returns the norm before clipping."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            g = p.grad._data
            xp_of(g).clip(g, -clip_value, clip_value, out=g)
            p.grad._version[0] += 1
