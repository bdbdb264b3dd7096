"""Interpolation kernels (nearest, nearest-exact, (bi)linear, bicubic, area) as separable per-axis matrices."""
from collections import namedtuple

import numpy as np

from ..interpolation_geometry import antialias_taps as _antialias_taps, check_mode, matrix as _matrix, \
    nearest_index as _nearest_index, output_sizes as _output_sizes, taps as _taps

InterpolateSaved = namedtuple("InterpolateSaved", "x_shape matrices")
InterpolateSaved.__doc__ = "Input shape and, per spatial axis, the arguments of its (out, in) interpolation matrix."

# The last axis, when at most this long, is resized by one GEMM with its dense interpolation matrix:
# the gather it replaces reads and writes the whole output once per tap with short strided rows
# (65 -> 520 columns of 21 channels: 2.5 ms instead of 18). A non-finite input keeps the gather, so
# inf and NaN stay where torch's stencil puts them instead of spreading through 0 * inf.
_GEMM_MAX_WIDTH = 512
# The rows of an (N, C, H, W) input, when at most this many, are resized by GEMMs with the (out, H)
# matrix: its 2*H flops per output beat the gather's passes over the output (21 x 65x65 -> 520x520:
# 5.5 ms instead of 13.6) until H nears ~190 (measured crossover).
_GEMM_MAX_HEIGHT = 160
# Output rows per GEMM of the banded form (see _banded_matmul).
_BAND_ROWS = 16


def _along(x, axis, idx, w):
    """One axis of a separable filter: sum over taps k of ``w[:, k] * x`` gathered at ``idx[:, k]``."""
    shape = [1] * x.ndim
    shape[axis] = -1
    y = x.take(idx[:, 0], axis=axis)
    y *= w[:, 0].reshape(shape)
    for k in range(1, idx.shape[1]):
        y += x.take(idx[:, k], axis=axis) * w[:, k].reshape(shape)
    return y


def _along_counted(x, axis, idx, w, count):
    """``_along`` for antialiasing taps, of which row i has only ``count[i]`` real ones: the padding taps are
    left out rather than weighted by zero, so an inf or NaN input stays within the support of its outputs
    (as in torch's loop over each output's own taps) instead of turning 0 * inf into NaN elsewhere."""
    shape = [1] * x.ndim
    shape[axis] = -1
    y = x.take(idx[:, 0], axis=axis) * w[:, 0].reshape(shape)
    for k in range(1, idx.shape[1]):
        term = x.take(idx[:, k], axis=axis) * w[:, k].reshape(shape)
        y += np.where((k < count).reshape(shape), term, 0)
    return y


def _antialias_forward(x, saved, dtype):
    """interpolate(antialias=True) of an (N, C, H, W) array: one antialiasing matrix per axis, applied as two
    GEMMs (see _separable). A non-finite input takes the per-tap gather instead, the columns first and then
    the rows as torch does, leaving unchanged axes alone, so inf and NaN stay where torch puts them."""
    x = x.astype(dtype, copy=False)
    if np.isfinite(x).all():
        return _separable(x, *[_matrix(*args) for args in saved.matrices])
    for axis, args in ((3, saved.matrices[1]), (2, saved.matrices[0])):
        if args[0] != args[1]:
            x = _along_counted(x, axis, *_antialias_taps(*args[:5], dtype.type))
    return x


def _banded_matmul(R, x):
    """``R @ x`` over the last two axes for an interpolation matrix R (out, H) whose rows are zero
    outside a narrow band: the output rows in bands of _BAND_ROWS, each band one GEMM with just the input
    rows it reads (a gathered copy of those rows), all of them in one stacked matmul. Upsampling by 8
    reads 4 input rows per band instead of 65: segmentation's last resize, 21x65x65 -> 520x520, takes
    5.7 ms instead of 8.0 (in-process alternating runs). Where bands would read more than half the
    rows, the dense product."""
    out_n, in_n = R.shape
    nonzero = R != 0
    first, last = nonzero.argmax(1), in_n - 1 - nonzero[:, ::-1].argmax(1)
    r = _BAND_ROWS
    nb = out_n // r
    if nb == 0:
        return np.matmul(R, x)
    starts = first[:nb * r].reshape(nb, r).min(1)
    K = int((last[:nb * r].reshape(nb, r).max(1) - starts).max()) + 1
    if 2 * K > in_n:
        return np.matmul(R, x)
    rows = np.minimum(starts, in_n - K)[:, None] + np.arange(K)  # (nb, K) input rows of each band
    bands = R[np.arange(nb * r).reshape(nb, r, 1), rows[:, None, :]]
    lead, width = x.shape[:-2], x.shape[-1]
    y = np.empty(lead + (out_n, width), np.result_type(R, x))
    windows = np.take(x, rows.reshape(-1), axis=-2).reshape(lead + (nb, K, width))
    np.matmul(bands, windows, out=y[..., :nb * r, :].reshape(lead + (nb, r, width)))
    if nb * r < out_n:
        lo, hi = first[nb * r:].min(), last[nb * r:].max() + 1
        np.matmul(R[nb * r:, lo:hi], x[..., lo:hi, :], out=y[..., nb * r:, :])
    return y


def _separable(x, rh, rw):
    """``rh @ x @ rw.T`` over the last two axes of an (N, C, H, W) array, as two large 2-D GEMMs.

    One GEMM per axis over the whole batch (numpy's stacked matmul would run N*C small ones);
    the cheaper axis order goes first.
    """
    n, c, h, w = x.shape
    oh, ow = rh.shape[0], rw.shape[0]
    if h * w * ow + oh * h * ow <= oh * h * w + oh * w * ow:
        t = (x.reshape(n * c * h, w) @ rw.T).reshape(n * c, h, ow)
        y = rh @ t.transpose(1, 0, 2).reshape(h, n * c * ow)
    else:
        t = rh @ x.reshape(n * c, h, w).transpose(1, 0, 2).reshape(h, n * c * w)
        y = t.reshape(oh * n * c, w) @ rw.T
    return np.ascontiguousarray(y.reshape(oh, n, c, ow).transpose(1, 2, 0, 3))


def interpolate_forward(x, size=None, mode="nearest", align_corners=None, scale_factor=None,
                        recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for (N,C,L) and (N,C,H,W) inputs; returns (y, saved).

    Every mode is separable, one spatial axis after the other. Nearest modes gather; (bi)linear
    and bicubic sum 2 or 4 gathered taps per axis (the last axis first), except that a short last
    axis or few rows are GEMMs with the interpolation matrix (see _GEMM_MAX_WIDTH, _GEMM_MAX_HEIGHT
    and _banded_matmul); area multiplies by small per-axis averaging matrices; antialiased bilinear and
    bicubic multiply by per-axis antialiasing matrices (see _antialias_forward). The backward pass
    multiplies by the transposed matrices.
    """
    check_mode(x.ndim, mode, align_corners, antialias)
    out, scales = _output_sizes(x.shape[2:], size, scale_factor, recompute_scale_factor)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    saved = InterpolateSaved(x.shape, [(n, o, mode, align_corners, s, dtype, antialias)
                                       for n, o, s in zip(x.shape[2:], out, scales)])
    if x.dtype == np.float16 and mode not in ("nearest", "nearest-exact"):
        # torch interpolates float16 in float32 and rounds once (float16 sums were 0.02 off on [0, 1] images)
        y, _ = interpolate_forward(x.astype(np.float32), size, mode, align_corners, scale_factor,
                                   recompute_scale_factor, antialias)
        return y.astype(np.float16), saved
    if antialias:
        return _antialias_forward(x, saved, dtype), saved
    axes = range(2, x.ndim)
    if mode in ("nearest", "nearest-exact"):
        for axis, (n, o, s) in zip(axes, zip(x.shape[2:], out, scales)):
            x = x.take(_nearest_index(n, o, s, mode == "nearest-exact"), axis=axis)
        return x, saved
    if mode == "area":
        mats = [_matrix(*args) for args in saved.matrices]
        if x.ndim == 3:
            return (x.reshape(-1, x.shape[2]) @ mats[0].T).reshape(x.shape[:2] + out), saved
        return _separable(x, *mats), saved
    # the last axis first, as torch's kernel mixes each row's taps before mixing rows: the closest rounding
    finite = bool(np.isfinite(x).all())
    for axis, args in reversed(list(zip(axes, saved.matrices))):
        if finite and axis == x.ndim - 1 and args[0] <= _GEMM_MAX_WIDTH:
            x = (x.reshape(-1, args[0]) @ _matrix(*args).T).reshape(x.shape[:-1] + (args[1],))
        elif finite and axis == 2 and x.ndim == 4 and args[0] <= _GEMM_MAX_HEIGHT:
            x = _banded_matmul(_matrix(*args), x)
        else:
            x = _along(x, axis, *_taps(*args[:5], dtype.type))
    return x, saved


def interpolate_backward(gy, saved):
    """Input gradient of interpolate: the transposed interpolation, gx = Rh^T @ gy @ Rw."""
    mats = [_matrix(*args).astype(gy.dtype, copy=False) for args in saved.matrices]
    if len(mats) == 1:
        return (gy.reshape(-1, gy.shape[2]) @ mats[0]).reshape(saved.x_shape)
    return _separable(gy, mats[0].T, mats[1].T)
