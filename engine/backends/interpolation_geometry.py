"""Interpolation geometry with torch's rules, shared by the CPU and CUDA interpolation kernels: output sizes,
and per axis the source index and weight of every output position's taps (host-side numpy, computed in
the float type torch computes them in)."""
import math

import numpy as np

MODES = {3: ("nearest", "nearest-exact", "linear", "area"),
         4: ("nearest", "nearest-exact", "bilinear", "bicubic", "area")}
CUBIC_A = -0.75


def output_sizes(in_sizes, size, scale_factor, recompute_scale_factor):
    """torch.nn.functional.interpolate's output sizes and the per-axis scale factors the kernels see."""
    nd = len(in_sizes)
    if size is not None:
        out = (size,) * nd if np.isscalar(size) else tuple(size)
        return tuple(int(o) for o in out), (None,) * nd
    scales = (scale_factor,) * nd if np.isscalar(scale_factor) else tuple(scale_factor)
    out = tuple(int(math.floor(float(n) * float(s))) for n, s in zip(in_sizes, scales))
    return out, ((None,) * nd if recompute_scale_factor else tuple(float(s) for s in scales))


def _scale(n_in, n_out, scale, f):
    """torch's compute_scales_value in float type f: 1/scale_factor when given, else in/out."""
    return f(1.0 / scale) if scale is not None and scale > 0 else f(n_in) / f(n_out)


def nearest_index(n_in, n_out, scale, exact):
    """Source index of every output position, computed in float32 exactly as torch does."""
    dst = np.arange(n_out)
    if not exact and n_out == n_in:
        return dst
    if not exact and n_out == 2 * n_in:
        return dst >> 1
    s = _scale(n_in, n_out, scale, np.float32)
    src = np.float32((dst + 0.5) * np.float64(s)) if exact else dst.astype(np.float32) * s
    return np.minimum(np.floor(src).astype(np.int64), n_in - 1)


def taps(n_in, n_out, mode, align_corners, scale, f):
    """(index, weight) arrays of shape (n_out, taps) for the linear and cubic modes, in float type f."""
    dst = np.arange(n_out, dtype=f)
    if mode != "bicubic" and n_out == n_in:  # torch copies when the size is unchanged
        return np.arange(n_out)[:, None], np.ones((n_out, 1), f)
    if align_corners:
        s = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
        src = s * dst
    else:
        # one rounding of scale * (dst + 0.5) - 0.5, as torch's kernels get from a fused multiply-add
        src = (np.float64(_scale(n_in, n_out, scale, f)) * (np.arange(n_out) + 0.5) - 0.5).astype(f)
        if mode != "bicubic":
            src = np.maximum(src, f(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    t = np.clip(src - i0, f(0), f(1)).astype(f)
    if mode != "bicubic":
        return np.stack([i0, i0 + (i0 < n_in - 1)], 1), np.stack([f(1) - t, t], 1)
    a = f(CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    w = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1).astype(f)
    return np.clip(i0[:, None] + np.arange(-1, 3), 0, n_in - 1), w


def matrix(n_in, n_out, mode, align_corners, scale, dtype):
    """(n_out, n_in) matrix R with y = R @ x along one axis; its transpose gives the gradient."""
    R = np.zeros((n_out, n_in), dtype)
    rows = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        R[rows, nearest_index(n_in, n_out, scale, mode == "nearest-exact")] = 1
    elif mode == "area":  # adaptive average pooling bins
        start, end = rows * n_in // n_out, -(-(rows + 1) * n_in // n_out)
        cols = np.arange(n_in)
        R[...] = ((cols >= start[:, None]) & (cols < end[:, None])) / (end - start)[:, None]
    else:
        idx, w = taps(n_in, n_out, mode, align_corners, scale, dtype.type)
        np.add.at(R, (np.broadcast_to(rows[:, None], idx.shape), idx), w)
    return R


def check_mode(ndim, mode, align_corners):
    """torch's errors for a mode the input's rank lacks and for align_corners with a non-interpolating mode."""
    if mode not in MODES.get(ndim, ()):
        raise ValueError(f"interpolate: mode {mode!r} is not supported for {ndim}-D input")
    if align_corners and mode not in ("linear", "bilinear", "bicubic"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic")
