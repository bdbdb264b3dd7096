"""Interpolation geometry with torch's rules, shared by the CPU and CUDA interpolation kernels: output sizes,
and per axis the source index and weight of every output position's taps (host-side numpy, computed in
the float type torch computes them in)."""
import math

import numpy as np

MODES = {3: ("nearest", "nearest-exact", "linear", "area"),
         4: ("nearest", "nearest-exact", "bilinear", "bicubic", "area")}
CUBIC_A = -0.75
# The antialiasing cubic filter is Keys' a = -0.5 (as Pillow's), not the -0.75 of the plain bicubic mode.
AA_CUBIC_A = -0.5
AA_MODES = ("bilinear", "bicubic")
AA_ERROR = "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input"


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


def _aa_filter(x, mode, f):
    """The antialiasing kernel at offsets x (in output-pixel units), in float type f: the triangle for
    bilinear, Keys' cubic with a = -0.5 for bicubic; zero outside its support (1 or 2)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, f(1) - x, f(0)).astype(f)
    a = f(AA_CUBIC_A)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, f(0))).astype(f)


def antialias_taps(n_in, n_out, mode, align_corners, scale, f):
    """(index, weight, count) of ``interpolate(antialias=True)`` along one axis, in float type f.

    Follows torch's separable antialiased kernels (Pillow's resampling): with the axis scale s (in/out,
    1/scale_factor, or (in-1)/(out-1) with align_corners), output i is centred at s * (i + 0.5) in input
    pixel units; the filter is stretched by max(s, 1), so a downscale averages over a support of
    half * s input pixels each side (half = 1 bilinear, 2 bicubic) while an upscale is plain
    interpolation; the taps are the input pixels inside the support, clipped to the axis (no
    clamping of indices), and the weights are normalised to sum to one. An axis whose size is unchanged
    is copied, as torch's forward does. index and weight are (n_out, K), K the most taps of any output;
    count (n_out,) says how many of each row's taps are real: the rest repeat the first index with weight 0.
    The arithmetic keeps torch's float type and roundings (centre and support in f, offsets in double).
    """
    if n_in == n_out:
        return np.arange(n_out)[:, None], np.ones((n_out, 1), f), np.ones(n_out, np.int64)
    if align_corners:
        s = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    else:
        s = _scale(n_in, n_out, scale, f)
    half = 1.0 if mode == "bilinear" else 2.0
    support = f(half * np.float64(s)) if s >= 1 else f(half)
    invscale = f(1.0 / np.float64(s)) if s >= 1 else f(1)
    max_taps = int(math.ceil(support)) * 2 + 1
    center = (np.float64(s) * (np.arange(n_out) + 0.5)).astype(f)
    first = np.maximum(((center - support).astype(np.float64) + 0.5).astype(np.int64), 0)
    stop = np.minimum(((center + support).astype(np.float64) + 0.5).astype(np.int64), n_in)
    count = np.clip(stop - first, 0, max_taps)
    k = np.arange(max(int(count.max()), 1))
    real = k < count[:, None]
    index = np.where(real, first[:, None] + k, first[:, None])
    offset = ((index.astype(f) - center[:, None]).astype(np.float64) + 0.5) * np.float64(invscale)
    weight = np.where(real, _aa_filter(offset.astype(f), mode, f), f(0))
    total = weight.sum(1, keepdims=True, dtype=f)
    weight = np.where(total != 0, weight / np.where(total != 0, total, f(1)), weight).astype(f)
    return np.minimum(index, n_in - 1), weight, count


def matrix(n_in, n_out, mode, align_corners, scale, dtype, antialias=False):
    """(n_out, n_in) matrix R with y = R @ x along one axis; its transpose gives the gradient."""
    R = np.zeros((n_out, n_in), dtype)
    rows = np.arange(n_out)
    if antialias:
        idx, w, _ = antialias_taps(n_in, n_out, mode, align_corners, scale, dtype.type)
        np.add.at(R, (np.broadcast_to(rows[:, None], idx.shape), idx), w)
    elif mode in ("nearest", "nearest-exact"):
        R[rows, nearest_index(n_in, n_out, scale, mode == "nearest-exact")] = 1
    elif mode == "area":  # adaptive average pooling bins
        start, end = rows * n_in // n_out, -(-(rows + 1) * n_in // n_out)
        cols = np.arange(n_in)
        R[...] = ((cols >= start[:, None]) & (cols < end[:, None])) / (end - start)[:, None]
    else:
        idx, w = taps(n_in, n_out, mode, align_corners, scale, dtype.type)
        np.add.at(R, (np.broadcast_to(rows[:, None], idx.shape), idx), w)
    return R


def check_antialias(ndim, mode, antialias):
    """torch's error for antialiasing other than bilinear or bicubic on 4-D input (raised before any other)."""
    if antialias and not (mode in AA_MODES and ndim == 4):
        raise ValueError(AA_ERROR)


def check_mode(ndim, mode, align_corners, antialias=False):
    """torch's errors for a mode the input's rank lacks, for align_corners with a non-interpolating mode,
    and for antialiasing other than bilinear or bicubic on 4-D input."""
    check_antialias(ndim, mode, antialias)
    if mode not in MODES.get(ndim, ()):
        raise ValueError(f"interpolate: mode {mode!r} is not supported for {ndim}-D input")
    if align_corners and mode not in ("linear", "bilinear", "bicubic"):
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic")
