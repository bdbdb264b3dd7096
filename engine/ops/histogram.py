"""Counting ops: bincount and histc (not differentiable, as in PyTorch)."""
import math

import numpy as np

from .. import _dtype
from ..tensor import _new, register_method
from ._common import xp_of
from .complex_refusals import refuse_complex


def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in a 1-d non-negative integer tensor (or the sum of
    ``weights`` at its occurrences); at least ``minlength`` bins. Weighted counts are float32 for
    float32 weights and float64 otherwise, as in PyTorch."""
    refuse_complex("bincount", input)
    if input.dtype.is_floating_point:
        raise RuntimeError(f"\"bincount_{input.device.type}\" not implemented for '{input.dtype.title}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    x = input._data
    xp = xp_of(x)
    if x.ndim != 1 or input.dtype is _dtype.bool_ or (x.size and int(x.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != x.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
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
    holding inf or NaN, when the range comes from the data) is refused, not narrowed to the finite data."""
    refuse_complex("histc", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_{input.device.type}\" not implemented for '{input.dtype.title}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    x = input._data.reshape(-1)
    xp = xp_of(x)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = (math.nan, math.nan) if bool(xp.isnan(x).any()) else (float(x.min()), float(x.max()))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    inside = x[(x >= lo) & (x <= hi)]
    position = ((inside - lo) * bins / (hi - lo)).astype(np.int64)
    position = xp.minimum(position, bins - 1)
    return _new(xp.bincount(position, minlength=bins).astype(input._data.dtype))


register_method(bincount)
register_method(histc)

__all__ = ["bincount", "histc"]
