"""torch's float32 CPU kernels for resizing (``interpolate`` bilinear and bicubic, with and without antialias)
and for sampling at a grid (``grid_sample`` bilinear and nearest, zero padding), reproduced to the bit, for
integer images: torchvision resizes and warps those in float32 and rounds, so a sum one float32 step off
torch's rounds to the other integer where the value lies near a .5.

What fixes the bits, as torch's compiled kernels compute (found by probing them: one-hot inputs give the
weights, random ones the order of the sums):

- antialiased: separable passes, the width then the height, each only where that size changes. Window weights
  in float32: centre ``scale * (i + 0.5)`` and tap offsets through double, Keys' cubic (a = -0.5) in fused
  multiply-adds, divided by their float32 sum. An output is ``x0 * w0`` plus the other taps in order: four at a
  time as rounded products added one by one, the remaining ones as fused multiply-adds;
- bilinear: for small outputs (height + width <= 128) or three channels on one thread, torch's channels-last
  kernel: weights ``h * w`` rounded, ``x01 w01``, then ``x00 w00``, ``x10 w10``, ``x11 w11`` fused in. Else the
  general kernel: along the width ``x0 w0`` fused into the rounded ``x1 w1``, then the same along the height;
- bicubic: four taps per axis (a = -0.75, border pixels repeated) with torch's rounding of the coefficients,
  summed ``x1 w1``, then ``x0 w0``, ``x2 w2``, ``x3 w3`` fused in, the width then the height;
- grid sampling: a grid coordinate ``g`` becomes the pixel ``(g + 1) * size / 2 - 0.5`` in one fused
  multiply-add; the bilinear weights are products of ``w = x - floor(x)`` and ``1 - w``, summed north-west,
  north-east, south-west, south-east, the last three fused in.
"""
import numpy as np

import engine
from engine._device import array_module, device_of, move
from engine.backends.interpolation_geometry import taps

_F32, _F64 = np.float32, np.float64


def _fma(a, b, c):
    """float32 ``a * b + c`` with one rounding (exact in float64 for float32 images of integers)."""
    return (a.astype(_F64) * b.astype(_F64) + c.astype(_F64)).astype(_F32)


def _full(x, value):
    return np.full_like(x, value)


def _on(host, x):
    """The host array ``host`` where ``x`` is."""
    return host if isinstance(x, np.ndarray) else move(host, device_of(x))


def _along(weights, x, axis):
    """A per-output host vector shaped to broadcast along ``axis`` of ``x``."""
    shape = [1] * x.ndim
    shape[axis] = -1
    return _on(weights.reshape(shape), x)


# ---- antialiased ------------------------------------------------------------------------------------------------
def _aa_filter(x, mode):
    """The antialiasing filter at float32 offsets ``x``: the triangle, or Keys' cubic in fused multiply-adds."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, _F32(1) - x, _F32(0)).astype(_F32)
    a = _F32(-0.5)
    near = _fma((_fma(_full(x, a + 2), x, _full(x, -(a + 3))) * x).astype(_F32), x, _full(x, 1))
    far = _fma(_fma(_fma(_full(x, a), x, _full(x, -5 * a)), x, _full(x, 8 * a)), x, _full(x, -4 * a))
    return np.where(x < 1, near, np.where(x < 2, far, _F32(0))).astype(_F32)


def _aa_taps(n_in, n_out, mode):
    """(first input index [n_out], weights [n_out, taps], taps in each window [n_out]); taps past a window
    weigh 0."""
    scale = _F32(n_in) / _F32(n_out)
    half = 1.0 if mode == "bilinear" else 2.0
    support = _F32(half * scale) if scale >= 1 else _F32(half)
    inverse = _F64(_F32(1.0 / _F64(scale))) if scale >= 1 else 1.0
    center = (_F64(scale) * (np.arange(n_out) + 0.5)).astype(_F32)
    first = np.maximum((_F64(center - support) + 0.5).astype(np.int64), 0)
    stop = np.minimum((_F64(center + support) + 0.5).astype(np.int64), n_in)
    index = first[:, None] + np.arange(max(int((stop - first).max()), 1))
    offset = (((index.astype(_F32) - center[:, None]).astype(_F64) + 0.5) * inverse).astype(_F32)
    weights = np.where(index < stop[:, None], _aa_filter(offset, mode), _F32(0))
    total = np.zeros(n_out, _F32)
    for column in weights.T:
        total = (total + column).astype(_F32)
    weights = np.where(total[:, None] != 0, weights / np.where(total == 0, 1, total)[:, None], weights)
    return first, weights.astype(_F32), stop - first


def _aa_pass(x, n_out, axis, mode):
    xp = array_module(x)
    n_in = x.shape[axis]
    first, weights, count = _aa_taps(n_in, n_out, mode)
    # taps 1 .. count - 1 go four at a time (rounded products added in order); the rest are fused
    fused = np.arange(weights.shape[1])[None, :] > 4 * ((count[:, None] - 1) // 4)
    total = None
    for tap in range(weights.shape[1]):
        term = xp.take(x, _on(np.minimum(first + tap, n_in - 1), x), axis=axis)
        weight = _along(weights[:, tap], x, axis)
        product = (term * weight).astype(_F32)
        if total is not None:
            product = xp.where(_along(fused[:, tap], x, axis), _fma(term, weight, total), total + product)
        total = product
    return total


def antialiased(x, size, mode):
    """float32 ``x`` [..., H, W] resized to ``size`` with antialias (``mode`` bilinear or bicubic)."""
    if size[1] != x.shape[-1]:
        x = _aa_pass(x, size[1], x.ndim - 1, mode)
    if size[0] != x.shape[-2]:
        x = _aa_pass(x, size[0], x.ndim - 2, mode)
    return x


# ---- bilinear ---------------------------------------------------------------------------------------------------
def _linear_taps(n_in, n_out):
    """(index0, index1, weight0, weight1) per output pixel; an unchanged size copies (weights 1 and 0)."""
    index, weight = taps(n_in, n_out, "linear", False, None, _F32)
    if index.shape[1] == 1:
        return index[:, 0], index[:, 0], weight[:, 0], np.zeros(n_out, _F32)
    return index[:, 0], index[:, 1], weight[:, 0], weight[:, 1]


def _bilinear_pointwise(x, size):
    """torch's channels-last kernel: each output from its four pixels and the products of the weights."""
    xp = array_module(x)
    (h0, h1, a0, a1), (w0, w1, b0, b1) = _linear_taps(x.shape[-2], size[0]), _linear_taps(x.shape[-1], size[1])

    def pixels(rows, columns):
        return xp.take(xp.take(x, _on(rows, x), axis=-2), _on(columns, x), axis=-1)

    def weight(a, b):
        return _on((a[:, None] * b[None, :]).astype(_F32), x)

    total = (pixels(h0, w1) * weight(a0, b1)).astype(_F32)
    total = _fma(pixels(h0, w0), weight(a0, b0), total)
    total = _fma(pixels(h1, w0), weight(a1, b0), total)
    return _fma(pixels(h1, w1), weight(a1, b1), total)


def _linear_pass(x, axis, n_out):
    """One axis of torch's general kernel: ``x0 * w0`` fused into the rounded ``x1 * w1``."""
    xp = array_module(x)
    i0, i1, w0, w1 = _linear_taps(x.shape[axis], n_out)
    x0, x1 = xp.take(x, _on(i0, x), axis=axis), xp.take(x, _on(i1, x), axis=axis)
    return _fma(x0, _along(w0, x, axis), (x1 * _along(w1, x, axis)).astype(_F32))


def bilinear(x, size, channels):
    """float32 ``x`` [..., H, W] resized bilinearly to ``size``; ``channels``: the C torch's kernel sees."""
    if size[0] + size[1] <= 128 or (engine.get_num_threads() == 1 and channels == 3):
        return _bilinear_pointwise(x, size)
    return _linear_pass(_linear_pass(x, x.ndim - 1, size[1]), x.ndim - 2, size[0])


# ---- bicubic ----------------------------------------------------------------------------------------------------
def _cubic_taps(n_in, n_out):
    """(index [n_out, 4], weights [n_out, 4]) with torch's float32 coefficients (a = -0.75)."""
    scale = _F32(n_in) / _F32(n_out)
    source = (_F64(scale) * (np.arange(n_out) + 0.5) - 0.5).astype(_F32)
    start = np.minimum(np.floor(source).astype(np.int64), n_in - 1)
    t = np.clip((source - start.astype(_F32)).astype(_F32), 0, 1).astype(_F32)
    a = _F32(-0.75)

    def near(x):  # ((a + 2) x - (a + 3)) x x + 1
        inner = (_fma(_full(x, a + 2), x, _full(x, -(a + 3))) * x).astype(_F32)
        return ((inner * x).astype(_F32) + _F32(1)).astype(_F32)

    def far(x):  # ((a x - 5 a) x + 8 a) x - 4 a
        inner = _fma(_fma(_full(x, a), x, _full(x, -5 * a)), x, _full(x, 8 * a))
        return ((inner * x).astype(_F32) + _F32(-4 * a)).astype(_F32)

    mirror = (_F32(1) - t).astype(_F32)
    weights = np.stack([far((t + _F32(1)).astype(_F32)), near(t), near(mirror),
                        far((mirror + _F32(1)).astype(_F32))], 1)
    return np.clip(start[:, None] + np.arange(-1, 3), 0, n_in - 1), weights


def _cubic_pass(x, axis, n_out):
    xp = array_module(x)
    index, weights = _cubic_taps(x.shape[axis], n_out)

    def term(tap):
        return xp.take(x, _on(index[:, tap], x), axis=axis), _along(weights[:, tap], x, axis)

    pixel, weight = term(1)
    total = (pixel * weight).astype(_F32)
    for tap in (0, 2, 3):
        total = _fma(*term(tap), total)
    return total


def bicubic(x, size):
    """float32 ``x`` [..., H, W] resized bicubically (no antialias) to ``size``."""
    return _cubic_pass(_cubic_pass(x, x.ndim - 1, size[1]), x.ndim - 2, size[0])


# ---- grid sampling ----------------------------------------------------------------------------------------------
def grid_coordinates(grid, size):
    """Pixel coordinates of the float32 normalised ``grid`` along an axis of ``size`` pixels."""
    xp = array_module(grid)
    return _fma((grid + _F32(1)).astype(_F32), xp.asarray(_F32(size / 2)), xp.asarray(_F32(-0.5)))


def grid_sample_bilinear(x, ix, iy):
    """float32 ``x`` (N, C, H, W) sampled bilinearly at the pixel coordinates ``ix``, ``iy`` (OH, OW) from
    ``grid_coordinates``; pixels outside count 0."""
    xp = array_module(x)
    height, width = x.shape[-2:]
    x0, y0 = xp.floor(ix), xp.floor(iy)
    east, south = (ix - x0).astype(_F32), (iy - y0).astype(_F32)
    west, north = (_F32(1) - east).astype(_F32), (_F32(1) - south).astype(_F32)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)

    def tap(rows, columns):
        inside = (columns >= 0) & (columns < width) & (rows >= 0) & (rows < height)
        return x[..., xp.clip(rows, 0, height - 1), xp.clip(columns, 0, width - 1)] * inside

    total = (tap(y0, x0) * (north * west).astype(_F32)).astype(_F32)
    total = _fma(tap(y0, x0 + 1), (north * east).astype(_F32), total)
    total = _fma(tap(y0 + 1, x0), (south * west).astype(_F32), total)
    return _fma(tap(y0 + 1, x0 + 1), (south * east).astype(_F32), total)
