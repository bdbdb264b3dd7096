"""Pooling kernels (max, average, adaptive) on numpy with torch's window, index and divisor rules."""
from collections import namedtuple

import numpy as np

from ..pool_geometry import adaptive_output_size as _output_size, bins as _bins, geometry as _geometry
from .scratch import phase_windows, scratch
from .threads import copyto, parallel_chunks

MaxPoolSaved = namedtuple("MaxPoolSaved", "indices x_shape overlap outside", defaults=(False,))
MaxPoolSaved.__doc__ = ("What the max-pool backwards need: flat argmax indices, whether windows overlap and whether "
                        "some index lies outside its plane (a window wholly in the padding).")

AvgPoolSaved = namedtuple("AvgPoolSaved", "x_shape divisor kernel stride padding")
AvgPoolSaved.__doc__ = "What avg_pool2d_backward needs: the geometry and the (OH, OW) divisor."

AdaptiveAvgSaved = namedtuple("AdaptiveAvgSaved", "x_shape rows cols")
AdaptiveAvgSaved.__doc__ = "Input shape and the row/column averaging matrices (None for a reshape-mean fast path)."


def _pad(x, top, bottom, left, right, value):
    """Constant-pad the last two axes (returns x itself when nothing is added)."""
    if top == bottom == left == right == 0:
        return x
    N, C, H, W = x.shape
    out = np.full((N, C, H + top + bottom, W + left + right), value, x.dtype)
    copyto(out[:, :, top:top + H, left:left + W], x)
    return out


def _has_nan(a):
    """Whether ``a`` holds a NaN: max propagates NaN, so one reduction answers (none in an empty array)."""
    return a.size > 0 and bool(np.isnan(a.max()))


def _max_and_tap(views, has_nan, y):
    """Elementwise max over the tap views into y, and the index of the tap that torch's scan keeps.

    torch replaces the running max when a value is strictly greater or is NaN, so the first maximum
    wins, NaN propagates, and the last NaN wins.
    """
    np.copyto(y, views[0])
    code = np.min_scalar_type(len(views))
    tap, upd, hit = np.zeros(y.shape, code), np.empty(y.shape, bool), np.empty(y.shape, code)
    for t, v in enumerate(views[1:], 1):
        np.greater(v, y, out=upd)
        if has_nan:
            upd |= np.isnan(v)
        # Updates come in increasing t, so the kept tap is the largest t that updated (a masked
        # store would cost ~3x more).
        np.maximum(tap, np.multiply(upd, code.type(t), out=hit), out=tap)
        np.maximum(y, v, out=y)  # NaN-propagating, like torch's values
    return tap


def _tap_rows(x, y, k, s, d, p, out, extra):
    """The windows of max pooling x into y (N, C, OH, OW), read from stride-phase planes of the input
    padded with -inf (see scratch.phase_windows): every tap reads one contiguous run per plane, where
    strided views of the input ran ~2.5x slower.

    Returns ``(views, rows, crop, Wq)``: ``views(lo, hi)`` the taps' (hi - lo, OH*Wq) runs for channel
    planes [lo, hi); ``rows`` the (N*C, OH*Wq) array their maxima go to, y itself when Wq == OW, else
    scratch whose first OW columns of each output row ``crop(lo, hi)`` copies into y."""
    N, C = x.shape[:2]
    padded = (x.shape[2] + 2 * p[0] + extra[0], x.shape[3] + 2 * p[1] + extra[1])
    planes, taps, Wq = phase_windows(x, k, s, d, p[0], p[1], padded, out[0], -np.inf)
    length = out[0] * Wq
    rows = y.reshape(N * C, length) if Wq == out[1] else scratch("pool_rows", (N * C, length), x.dtype)
    y_rows = y.reshape((N * C,) + out)

    def views(lo, hi):
        return [planes[a, b, lo:hi, o:o + length] for a, b, o in taps]

    def crop(lo, hi):
        if Wq != out[1]:
            np.copyto(y_rows[lo:hi], rows[lo:hi].reshape(hi - lo, out[0], Wq)[:, :, :out[1]])
    return views, rows, crop, Wq


def max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d of x (N,C,H,W); returns (y, indices, saved) with torch's return_indices indices
    (int64 flat positions in each H*W input plane).  Channel planes are split among the CPU thread pool."""
    N, C, H, W = x.shape
    k, s, p, d, out, extra = _geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    start_h = np.arange(out[0]) * s[0] - p[0]
    start_w = np.arange(out[1]) * s[1] - p[1]
    starts = start_h[:, None] * W + start_w
    offsets = (np.arange(k[0])[:, None] * d[0] * W + np.arange(k[1]) * d[1]).ravel()
    first_h = start_h + np.maximum(0, (d[0] - 1 - start_h) // d[0]) * d[0]
    first_w = start_w + np.maximum(0, (d[1] - 1 - start_w) // d[1]) * d[1]
    y, indices = np.empty((N, C) + out, x.dtype), np.empty((N, C) + out, np.int64)
    views, rows, crop, Wq = _tap_rows(x, y, k, s, d, p, out, extra)
    x_rows, y_rows, index_rows = x.reshape(N * C, H * W), y.reshape((N * C,) + out), indices.reshape((N * C,) + out)

    def part(lo, hi):
        tap = _max_and_tap(views(lo, hi), _has_nan(x_rows[lo:hi]), rows[lo:hi])
        crop(lo, hi)
        np.take(offsets, tap.reshape(hi - lo, out[0], Wq)[:, :, :out[1]], out=index_rows[lo:hi])
        index_rows[lo:hi] += starts
        if np.isneginf(y_rows[lo:hi]).any():  # all -inf window: torch keeps its first in-bounds element
            index_rows[lo:hi] = np.where(np.isneginf(y_rows[lo:hi]), first_h[:, None] * W + first_w, index_rows[lo:hi])
    parallel_chunks(part, N * C, x.nbytes)
    overlap = s[0] < d[0] * (k[0] - 1) + 1 or s[1] < d[1] * (k[1] - 1) + 1
    outside = bool((first_h >= H).any() or (first_w >= W).any())  # such a window's index is torch's, past the plane
    return y, indices, MaxPoolSaved(indices, x.shape, overlap, outside)


def max_pool2d_values_forward(x, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d's values alone, for inference (no gradient, no indices asked for): returns (y, None).

    np.maximum over the tap views propagates NaN as torch does; no argmax tap is tracked. Image by
    image: the phase planes in scratch are then one image big rather than the batch (13 MB at batch 4
    after ResNet's stem), the same time within noise.
    """
    N, C = x.shape[:2]
    k, s, p, d, out, extra = _geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    y = np.empty((N, C) + out, x.dtype)
    for n in range(N):
        views, rows, crop, _ = _tap_rows(x[n:n + 1], y[n:n + 1], k, s, d, p, out, extra)

        def part(lo, hi):
            block = rows[lo:hi]
            first, *others = views(lo, hi)
            np.copyto(block, first)
            for v in others:
                np.maximum(block, v, out=block)
            crop(lo, hi)
        parallel_chunks(part, C, x[n].nbytes)
    return y, None


def max_pool2d_backward(gy, saved):
    """Input gradient of max pooling: gy scattered (summed where windows overlap) onto the argmax positions."""
    N, C, H, W = saved.x_shape
    gx = np.zeros(N * C * H * W, gy.dtype)
    planes = saved.indices.reshape(N * C, saved.indices.shape[2] * saved.indices.shape[3])
    flat = (planes + np.arange(0, N * C * H * W, H * W)[:, None]).ravel()
    if saved.outside:  # windows wholly in the padding: no input element takes their gradient
        inside = (planes < H * W).ravel()
        np.add.at(gx, flat[inside], gy.reshape(-1)[inside])
    elif saved.overlap:
        np.add.at(gx, flat, gy.reshape(-1))
    else:  # each input position lies in at most one window: indices are unique, plain assignment suffices
        gx[flat] = gy.reshape(-1)
    return gx.reshape(N, C, H, W)


def _avg_divisor(n, k, s, p, out, count_include_pad, dtype):
    """Per-output-position window length along one axis, by torch's rules."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    if count_include_pad:
        return (end - start).astype(dtype)
    return (np.minimum(end, n) - np.maximum(start, 0)).astype(dtype)


def _tap_overlap(n, k, s, p, out):
    """Per tap i along one axis: (input slice, output slice) of the window positions that land inside
    the unpadded input, so average pooling never materialises the zero padding."""
    pairs = []
    for i in range(k):
        lo = max(0, -((i - p) // s))  # first output whose tap i is at input row >= 0
        hi = min(out, (n - 1 + p - i) // s + 1)
        if lo < hi:
            first = lo * s - p + i
            pairs.append((slice(first, first + (hi - lo - 1) * s + 1, s), slice(lo, hi)))
    return pairs


def avg_pool2d_forward(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    """avg_pool2d of x (N,C,H,W) with torch's divisor rules; returns (y, saved)."""
    N, C, H, W = x.shape
    k, s, p, _, out, _ = _geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode)
    t = np.zeros((N, C, out[0], W), x.dtype)  # separable window sums: rows first, then columns
    for xr, yr in _tap_overlap(H, k[0], s[0], p[0], out[0]):
        t[:, :, yr] += x[:, :, xr]
    y = np.zeros((N, C) + out, x.dtype)
    for xc, yc in _tap_overlap(W, k[1], s[1], p[1], out[1]):
        y[:, :, :, yc] += t[:, :, :, xc]
    if divisor_override:
        divisor = np.asarray(divisor_override, x.dtype)
    else:
        divisor = np.multiply.outer(_avg_divisor(H, k[0], s[0], p[0], out[0], count_include_pad, x.dtype),
                                    _avg_divisor(W, k[1], s[1], p[1], out[1], count_include_pad, x.dtype))
    y /= divisor
    return y, AvgPoolSaved(x.shape, divisor, k, s, p)


def avg_pool2d_backward(gy, saved):
    """Input gradient of average pooling: each output adds gy/divisor to every input of its window."""
    N, C, H, W = saved.x_shape
    (kh, kw), (sh, sw), (ph, pw) = saved.kernel, saved.stride, saved.padding
    g = gy / saved.divisor
    t = np.zeros((N, C, g.shape[2], W), g.dtype)  # the separable sums of the forward, transposed
    for xc, yc in _tap_overlap(W, kw, sw, pw, g.shape[3]):
        t[:, :, :, xc] += g[:, :, :, yc]
    gx = np.zeros(saved.x_shape, g.dtype)
    for xr, yr in _tap_overlap(H, kh, sh, ph, g.shape[2]):
        gx[:, :, xr] += t[:, :, yr]
    return gx


def _averaging_matrix(n, out, dtype):
    """(out, n) matrix whose row i averages bin i, so pooling one axis is a GEMM."""
    start, end = _bins(n, out)
    cols = np.arange(n)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def adaptive_avg_pool2d_forward(x, output_size):
    """adaptive_avg_pool2d of x (N,C,H,W); returns (y, saved).

    Global and evenly dividing cases are reshape-means; otherwise y = Ah @ x @ Aw^T with small
    bin-averaging matrices (vectorised, BLAS, exact bins, no cumulative-sum rounding).
    """
    N, C, H, W = x.shape
    OH, OW = _output_size(x.shape, output_size)
    if (OH, OW) == (1, 1):
        return x.mean(axis=(2, 3), keepdims=True), AdaptiveAvgSaved(x.shape, None, None)
    if H % OH == 0 and W % OW == 0:
        y = x.reshape(N, C, OH, H // OH, OW, W // OW).mean(axis=(3, 5))
        return y, AdaptiveAvgSaved(x.shape, None, None)
    rows, cols = _averaging_matrix(H, OH, x.dtype), _averaging_matrix(W, OW, x.dtype)
    return rows @ (x @ cols.T), AdaptiveAvgSaved(x.shape, rows, cols)


def adaptive_avg_pool2d_backward(gy, saved):
    """Input gradient of adaptive average pooling (the transposed averaging)."""
    N, C, H, W = saved.x_shape
    if saved.rows is not None:
        return (saved.rows.T @ gy) @ saved.cols
    OH, OW = gy.shape[2:]
    g = gy / ((H // OH) * (W // OW))
    return np.broadcast_to(g[:, :, :, None, :, None], (N, C, OH, H // OH, OW, W // OW)).reshape(N, C, H, W)


def _bin_taps(n, out):
    """Per bin, the input positions it covers padded to a common length with index n (a -inf pad)."""
    start, end = _bins(n, out)
    pos = start[:, None] + np.arange((end - start).max())
    return np.where(pos < end[:, None], pos, n), start


def adaptive_max_pool2d_forward(x, output_size):
    """adaptive_max_pool2d of x (N,C,H,W); returns (y, indices, saved) like torch's return_indices.

    Evenly dividing sizes are a plain max pool; otherwise each bin is gathered into a fixed-size,
    -inf padded window so all bins reduce at once.
    """
    N, C, H, W = x.shape
    OH, OW = _output_size(x.shape, output_size)
    if H % OH == 0 and W % OW == 0:
        k = (H // OH, W // OW)
        return max_pool2d_forward(x, k, k, 0, 1, False)
    rows, start_h = _bin_taps(H, OH)
    cols, start_w = _bin_taps(W, OW)
    xp = _pad(x, 0, 1, 0, 1, -np.inf)
    v = xp[:, :, rows[:, :, None, None], cols[None, None]]  # (N, C, OH, Lh, OW, Lw)
    y = np.empty(v.shape[:3] + v.shape[4:5], x.dtype)
    tap = _max_and_tap([v[:, :, :, i, :, j] for i in range(rows.shape[1]) for j in range(cols.shape[1])],
                       _has_nan(x), y)
    lw = cols.shape[1]
    indices = rows[np.arange(OH)[:, None], tap // lw] * W + cols[np.arange(OW), tap % lw]
    if np.isneginf(y).any():  # all -inf bin: torch keeps the bin's first element
        indices = np.where(np.isneginf(y), start_h[:, None] * W + start_w, indices)
    overlap = bool((start_h[1:] < start_h[:-1] + rows.shape[1]).any() or (start_w[1:] < start_w[:-1] + lw).any())
    return y, indices, MaxPoolSaved(indices, x.shape, overlap)


def adaptive_max_pool2d_backward(gy, saved):
    """Input gradient of adaptive max pooling: the same argmax scatter as max_pool2d_backward."""
    return max_pool2d_backward(gy, saved)
