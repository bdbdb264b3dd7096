"""Gradient clipping by total norm or by value (``torch.nn.utils.clip_grad``)."""
import math
import types
import warnings

import numpy as np

from ... import _dtype
from ..._device import move
from ...ops._common import xp_of
from ...tensor import Tensor, _new


def _as_list(tensors):
    """A single tensor or an iterable of tensors as a list."""
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _check_identity(arr, norm_type, by_foreach):
    """torch's refusal of a norm without an identity (infinite or negative order) of an empty tensor; the
    infinity norm's message names ``_foreach_norm`` where torch computes it so (``by_foreach``)."""
    if arr.size or not (norm_type < 0 or norm_type == math.inf):
        return
    if norm_type == math.inf and by_foreach:
        raise RuntimeError("_foreach_norm cannot compute the infinity norm on an empty tensor because the "
                           "operation does not have an identity")
    raise RuntimeError(f"linalg.vector_norm cannot compute the {norm_type:g} norm on an empty tensor because the "
                       "operation does not have an identity")


def _vector_norm(arr, norm_type):
    """The ``norm_type``-norm of all elements of ``arr``, accumulated in float64, in ``arr``'s dtype."""
    xp = xp_of(arr)
    a = xp.abs(arr.astype(np.float64, copy=False)).ravel()
    if a.size == 0:
        out = 0.0
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


def _in_opmath(arr):
    """``arr`` as torch's CPU kernels compute on it: float16/bfloat16 in float32, other dtypes as they are."""
    return arr.astype(np.float32) if arr.dtype in _dtype.HALF_NP else arr


def _elements(t):
    """The elements whose norm is ``t``'s: a sparse tensor's coalesced values (as torch reads them)."""
    return t.coalesce()._data.values if t.is_sparse else t._data


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm of the per-tensor norms of ``tensors`` (as if all were concatenated), a 0-d tensor (0 in the
    default dtype when there is none)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _new(np.asarray(0.0, _dtype.get_default_dtype().np))
    first_device = tensors[0].device
    elements = [_elements(t) for t in tensors]
    for t, arr in zip(tensors, elements):  # torch's foreach path norms a sparse tensor one by one
        _check_identity(arr, norm_type, foreach is not False and not t.is_sparse)
    norms = [move(_vector_norm(arr, norm_type), first_device) for arr in elements]
    xp = xp_of(norms[0])
    total = _vector_norm(xp.stack(norms), norm_type)
    if error_if_nonfinite and not bool(xp.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return _new(total)


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` by ``min(1, max_norm / (total_norm + 1e-6))`` in place. As in torch,
    the coefficient is ``max_norm * reciprocal(total_norm + 1e-6)`` in ``total_norm``'s dtype, a half type
    computing each step in float32 (so an infinite norm with a ``max_norm`` past the half range gives 0, not
    inf / inf = nan), and a half gradient is multiplied by it in float32."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm, np.float32)
    xp = xp_of(total)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # torch makes inf and nan silently too
        shifted = (_in_opmath(total) + 1e-6).astype(total.dtype)
        inverse = xp.reciprocal(_in_opmath(shifted)).astype(total.dtype)
        coef = xp.minimum(_in_opmath(inverse) * float(max_norm), 1.0).astype(total.dtype)
    with np.errstate(invalid="ignore"):  # an infinite norm scales inf entries to nan, silently like torch
        for g in grads:
            scaled = g._data.values if g.is_sparse else g._data  # a sparse gradient: its values, in place
            if scaled.dtype in _dtype.HALF_NP:
                scaled[...] = scaled.astype(np.float32) * move(coef, g.device).astype(np.float32)
            else:
                scaled *= move(coef, g.device).astype(scaled.dtype, copy=False)
            g._version_counter[0] += 1


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


def _check_clip_value(clip_value, d):
    """torch's refusal of a finite ``clip_value`` beyond the largest value of the gradient's dtype ``d``."""
    if math.isfinite(clip_value) and abs(clip_value) > float(np.finfo(d.np).max):
        raise RuntimeError(f"value cannot be converted to type {_dtype.cpp_name(d)} without overflow")


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    for p in _as_list(parameters):
        if p.grad is not None:
            _check_clip_value(clip_value, p.grad.dtype)
            g = p.grad._data
            xp_of(g).clip(g, -clip_value, clip_value, out=g)
            p.grad._version_counter[0] += 1
