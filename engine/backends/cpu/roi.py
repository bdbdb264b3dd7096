"""RoIAlign and RoIPool forward/backward on numpy, vectorised over boxes, bins and samples.

Both kernels work channels-last: the feature map becomes a (N*H*W, C) table, every (box, bin,
sample) position is one row index into it, and a single fancy-index gathers all channels of all
positions at once. Boxes are processed in chunks that bound the gathered block's size (a loop over
chunks, never over boxes or bins). Arithmetic follows torchvision's CPU kernels in the input dtype.
"""
from collections import namedtuple

import numpy as np

#: upper bound on the elements one gathered (positions x channels) block may hold
CHUNK_ELEMENTS = 1 << 23

RoIAlignSaved = namedtuple("RoIAlignSaved", "x_shape chunks")
RoIAlignSaved.__doc__ = "Input shape and, per chunk of boxes, (box indices, row indices, weights / count)."

RoIPoolSaved = namedtuple("RoIPoolSaved", "x_shape argmax")
RoIPoolSaved.__doc__ = "Input shape and the flat (N, C, H, W) index each output bin took its maximum from."


def _channels_last(x):
    """(N, C, H, W) -> contiguous (N*H*W, C) table."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(n * h * w, c)


def _chunks(cost, channels):
    """Split boxes, sorted by per-box cost, into runs whose padded gather fits CHUNK_ELEMENTS."""
    order = np.argsort(cost, kind="stable")
    cost = np.maximum(cost[order], 1) * channels
    runs, start, k = [], 0, len(order)
    while start < k:
        fits = np.arange(1, k - start + 1) * cost[start:] <= CHUNK_ELEMENTS
        stop = start + max(1, int(fits.sum()))
        runs.append(order[start:stop])
        start = stop
    return runs


def _axis_samples(start, bin_size, grid, pooled, size, dtype):
    """Bilinear taps along one axis: (K, pooled, G, 2) row indices and weights, G = max grid.

    A sample outside [-1, size] or beyond its box's grid gets weight 0 (index 0).
    """
    g = max(int(grid.max(initial=0)), 0)
    p = np.arange(pooled, dtype=dtype)[None, :, None]
    i = np.arange(g)
    pos = (start[:, None, None] + p * bin_size[:, None, None]) + \
        (i.astype(dtype)[None, None, :] + dtype.type(0.5)) * bin_size[:, None, None] / \
        np.maximum(grid, 1).astype(dtype)[:, None, None]
    valid = (i[None, None, :] < grid[:, None, None]) & (pos >= -1) & (pos <= size)
    pos = np.clip(np.nan_to_num(pos), 0, size)
    low = np.minimum(pos.astype(np.int64), size - 1)
    high = np.minimum(low + 1, size - 1)
    pos = np.where(low >= size - 1, low.astype(dtype), pos)
    frac = pos - low.astype(dtype)
    weights = np.stack([dtype.type(1) - frac, frac], axis=-1) * valid[..., None]
    index = np.where(valid[..., None], np.stack([low, high], axis=-1), 0)
    return index, weights.astype(dtype, copy=False)


def _align_geometry(rois, spatial_scale, pooled, sampling_ratio, aligned, dtype):
    """Per box: image index, start (y, x), bin sizes (h, w), sampling grid (h, w) and 1/count."""
    scale = dtype.type(spatial_scale)
    offset = dtype.type(0.5 if aligned else 0.0)
    start_x, start_y = rois[:, 1] * scale - offset, rois[:, 2] * scale - offset
    width, height = rois[:, 3] * scale - offset - start_x, rois[:, 4] * scale - offset - start_y
    if not aligned:
        width, height = np.maximum(width, dtype.type(1)), np.maximum(height, dtype.type(1))
    bin_h, bin_w = height / dtype.type(pooled[0]), width / dtype.type(pooled[1])
    if sampling_ratio > 0:
        grid_h = grid_w = np.full(len(rois), int(sampling_ratio))
    else:
        grid_h, grid_w = np.ceil(bin_h).astype(np.int64), np.ceil(bin_w).astype(np.int64)
    count = np.maximum(grid_h * grid_w, 1).astype(dtype)
    return rois[:, 0].astype(np.int64), start_y, start_x, bin_h, bin_w, grid_h, grid_w, count


def _align_taps(x_shape, geometry, boxes, pooled, dtype):
    """Rows into the channels-last table and weights/count: (k, PH, PW, taps) each."""
    _, _, h, w = x_shape
    b, sy, sx, bh, bw, gh, gw, count = (a[boxes] for a in geometry)
    yi, yw = _axis_samples(sy, bh, gh, pooled[0], h, dtype)
    xi, xw = _axis_samples(sx, bw, gw, pooled[1], w, dtype)
    k = len(boxes)
    rows = (b[:, None, None, None, None, None, None] * h + yi[:, :, None, :, :, None, None]) * w + \
        xi[:, None, :, None, None, :, :]
    weights = yw[:, :, None, :, :, None, None] * xw[:, None, :, None, None, :, :]
    weights = weights / count[:, None, None, None, None, None, None]
    return rows.reshape(k, pooled[0], pooled[1], -1), weights.reshape(k, pooled[0], pooled[1], -1)


def roi_align_forward(x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """(K, C, PH, PW) average of bilinear samples per bin, and what the backward needs."""
    n, c, h, w = x.shape
    k, pooled = rois.shape[0], (int(pooled_height), int(pooled_width))
    out = np.zeros((k, pooled[0], pooled[1], c), x.dtype)
    geometry = _align_geometry(rois.astype(x.dtype, copy=False), spatial_scale, pooled,
                               sampling_ratio, aligned, x.dtype)
    gh, gw = np.maximum(geometry[5], 0), np.maximum(geometry[6], 0)
    table = _channels_last(x)
    chunks = []
    for boxes in _chunks(gh * gw * 4 * pooled[0] * pooled[1], c):
        rows, weights = _align_taps(x.shape, geometry, boxes, pooled, x.dtype)
        if rows.shape[-1]:
            out[boxes] = (weights[..., None, :] @ table[rows])[..., 0, :]
        chunks.append((boxes, rows, weights))
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)), RoIAlignSaved(x.shape, chunks)


def roi_align_backward(gy, saved):
    """Scatter each bin's gradient back onto the bilinear taps it averaged."""
    n, c, h, w = saved.x_shape
    grad = np.zeros(n * h * w * c, gy.dtype)
    gy = gy.transpose(0, 2, 3, 1)
    channel = np.arange(c)
    for boxes, rows, weights in saved.chunks:
        values = weights[..., :, None] * gy[boxes][..., None, :]
        np.add.at(grad, (rows[..., None] * c + channel).ravel(), values.ravel())
    return np.ascontiguousarray(grad.reshape(n, h, w, c).transpose(0, 3, 1, 2))


def _round_half_away(v):
    """std::round: halves go away from zero."""
    return np.copysign(np.floor(np.abs(v) + 0.5), v)


def _pool_windows(start, bin_size, pooled, size):
    """Per box and bin along one axis: clipped [lo, hi) of the pooling window."""
    p = np.arange(pooled, dtype=bin_size.dtype)
    lo = np.floor(p[None, :] * bin_size[:, None]).astype(np.int64) + start[:, None]
    hi = np.ceil((p[None, :] + 1) * bin_size[:, None]).astype(np.int64) + start[:, None]
    return np.clip(lo, 0, size), np.clip(hi, 0, size)


def roi_pool_forward(x, rois, spatial_scale, pooled_height, pooled_width):
    """(K, C, PH, PW) max over each bin's integer window (0 for empty bins), and argmax indices."""
    n, c, h, w = x.shape
    k, ph, pw = rois.shape[0], int(pooled_height), int(pooled_width)
    rois = rois.astype(x.dtype, copy=False)
    ends = _round_half_away(rois[:, 1:] * x.dtype.type(spatial_scale)).astype(np.int64)
    height = np.maximum(ends[:, 3] - ends[:, 1] + 1, 1).astype(x.dtype) / x.dtype.type(ph)
    width = np.maximum(ends[:, 2] - ends[:, 0] + 1, 1).astype(x.dtype) / x.dtype.type(pw)
    y0, y1 = _pool_windows(ends[:, 1], height, ph, h)
    x0, x1 = _pool_windows(ends[:, 0], width, pw, w)
    out = np.zeros((k, ph, pw, c), x.dtype)
    argmax = np.full((k, ph, pw, c), -1, np.int64)
    table = _channels_last(np.where(np.isnan(x), -np.inf, x) if np.isnan(x).any() else x)
    batch = rois[:, 0].astype(np.int64)
    span_h, span_w = np.maximum(y1 - y0, 0).max(axis=1), np.maximum(x1 - x0, 0).max(axis=1)
    for boxes in _chunks(span_h * span_w * ph * pw, c):
        wh, ww = int(span_h[boxes].max()), int(span_w[boxes].max())
        if wh == 0 or ww == 0:
            continue
        ys = y0[boxes][:, :, None] + np.arange(wh)                 # (k, PH, wh)
        xs = x0[boxes][:, :, None] + np.arange(ww)                 # (k, PW, ww)
        inside = (ys < y1[boxes][:, :, None])[:, :, None, :, None] & \
            (xs < x1[boxes][:, :, None])[:, None, :, None, :]
        plane = np.minimum(ys, h - 1)[:, :, None, :, None] * w + np.minimum(xs, w - 1)[:, None, :, None, :]
        plane = np.broadcast_to(plane, inside.shape).reshape(len(boxes), ph, pw, -1)
        inside = inside.reshape(plane.shape)
        values = table[batch[boxes][:, None, None, None] * (h * w) + plane]
        values = np.where(inside[..., None], values, -np.inf)
        best = values.argmax(axis=3)                                 # first maximum, row-major
        top = np.take_along_axis(values, best[:, :, :, None, :], axis=3)[:, :, :, 0, :]
        found = top > -np.finfo(x.dtype).max
        nonempty = inside.any(axis=3)[..., None]
        out[boxes] = np.where(found, top, np.where(nonempty, -np.finfo(x.dtype).max, 0))
        index = np.take_along_axis(plane[..., None], best[:, :, :, None, :], axis=3)[:, :, :, 0, :]
        flat = (batch[boxes][:, None, None, None] * c + np.arange(c)) * (h * w) + index
        argmax[boxes] = np.where(found, flat, -1)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)), RoIPoolSaved(x.shape, argmax.transpose(0, 3, 1, 2))


def roi_pool_backward(gy, saved):
    """Route each bin's gradient to the input element that was its maximum."""
    hit = saved.argmax >= 0
    size = int(np.prod(saved.x_shape))
    grad = np.bincount(saved.argmax[hit], weights=gy[hit], minlength=size)
    return grad.astype(gy.dtype, copy=False).reshape(saved.x_shape)
