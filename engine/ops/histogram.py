"""Counting ops: bincount and histc (not differentiable, as in PyTorch)."""
import builtins
import math

import numpy as np

from .. import _dtype
from ..tensor import _new, register_method
from ._common import check_same_device, xp_of
from .complex_refusals import refuse_complex


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in a 1-d non-negative integer tensor (or the sum of
    ``weights`` at its occurrences); at least ``minlength`` bins. Weighted counts are float32 for
    float32 weights and float64 otherwise, as in PyTorch; an empty input gives ``minlength`` int64 zeros
    whatever the weights."""
    if input.dtype.is_floating_point or input.dtype.is_complex or input.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"bincount_{input.device.type}\" not implemented for '{input.dtype.title}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = input._data
    xp = xp_of(x)
    if x.ndim != 1 or (x.size and int(x.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if x.size == 0:
        return _new(xp.zeros(minlength, np.int64))
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != x.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    check_same_device(input, weights)
    length = max(int(x.max()) + 1 if x.size else 0, minlength)
    if weights is None:
        return _new(xp.bincount(x, minlength=length).astype(np.int64, copy=False))
    out_dtype = np.float32 if weights.dtype is _dtype.float32 else np.float64
    counts = xp.bincount(x, weights=weights._data.astype(np.float64), minlength=length)
    return _new(counts.astype(out_dtype, copy=False))


def histc(input, bins=100, min=0, max=0):
    """A histogram of ``bins`` equal bins over [min, max] (the data's range when they are equal; widened
    by 1 each way when that range is one value); values outside are left out, ``max`` counts in the
    last bin. The result has the input's float dtype. As torch's, a range that is not finite (data
    holding inf or NaN, when the range comes from the data) is refused, not narrowed to the finite data,
    and the checks come in torch's order (bins, the data's range, the range, then the dtype)."""
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input._data.reshape(-1)
    xp = xp_of(x)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        refuse_complex("histc", input)  # torch takes the data's range with aminmax, which has no complex kernel
        lo, hi = _data_range(xp, x)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if input.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"linspace_{input.device.type}\" not implemented for 'Bool'")
    info = np.iinfo(x.dtype) if x.dtype.kind in "iu" else np.finfo(x.dtype)
    if not (float(info.min) <= lo and hi <= float(info.max)):  # torch casts the range to the input's type first
        raise RuntimeError(f"value cannot be converted to type {_CPP_NAMES[input.dtype.name]} without overflow")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_{input.device.type}\" not implemented for '{input.dtype.title}'")
    inside = x[(x >= lo) & (x <= hi)]
    with np.errstate(over="ignore", invalid="ignore"):  # a range near the dtype's largest overflows to inf
        position = xp.clip((inside - lo) * bins / (hi - lo), 0, bins - 1)
    position = position[~xp.isnan(position)].astype(np.int64)  # a range too wide for the dtype: inf / inf
    return _new(xp.bincount(position, minlength=bins).astype(input._data.dtype))


#: the C++ names of torch's message on a range its input's type cannot hold
_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
              "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
              "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _data_range(xp, x):
    """(lowest, highest) of the data as torch's aminmax finds them (NaN when any is NaN): its running min starts
    at the largest float (float32's for narrower types, which round it to inf) and its max at the lowest, so an
    infinity pairs with the largest finite value."""
    if x.dtype.kind == "f" and bool(xp.isnan(x).any()):
        return math.nan, math.nan
    if x.dtype.kind != "f":
        return float(x.min()), float(x.max())
    with np.errstate(over="ignore"):
        largest = float(np.asarray(np.finfo(np.promote_types(x.dtype, np.float32)).max).astype(x.dtype))
    return builtins.min(float(x.min()), largest), builtins.max(float(x.max()), -largest)


register_method(bincount)
register_method(histc)

__all__ = ["bincount", "histc"]
