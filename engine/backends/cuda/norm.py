"""The per-channel passes of batch normalisation as whole-array CuPy arithmetic over (N, C, L) arrays
with (C, 1) per-channel columns (the twin of ``backends/cpu/norm.py``)."""
import numpy as np


def _column(v, dtype):
    return v.astype(dtype, copy=False).reshape(-1, 1)


def scale_shift(x3, scale, shift):
    """A fresh ``x3 * scale + shift`` per channel."""
    out = x3 * _column(scale, x3.dtype)
    out += _column(shift, x3.dtype)
    return out


def centred(x3, mean, g3=None):
    """``x - mean`` per channel (fresh), and the per-channel sums over (N, L) of ``(x - mean) * g`` in
    float64, g defaulting to ``x - mean`` itself."""
    xc = x3 - _column(mean, x3.dtype)
    other = xc if g3 is None else g3
    return xc, (other * xc).sum(axis=(0, 2), dtype=np.float64)


def affine_(out3, scale, shift=None, g3=None, g_scale=None):
    """In place on a contiguous (N, C, L) array, which it returns: ``out * scale + shift + g * g_scale``
    per channel (the terms given)."""
    out3 *= _column(scale, out3.dtype)
    if shift is not None:
        out3 += _column(shift, out3.dtype)
    if g3 is not None:
        out3 += g3 * _column(g_scale, out3.dtype)
    return out3
