"""RoIAlign and RoIPool forward/backward on numpy, vectorised over boxes, bins and samples.

Both kernels work channels-last: the feature map becomes a (N*H*W, C) table, every (box, bin,
sample) position is one row index into it, and a single fancy-index gathers all channels of all
positions at once. Boxes are processed in chunks that bound the gathered block's size (a loop over
chunks, never over boxes or bins). Arithmetic follows torchvision's CPU kernels in the input dtype.

The position-sensitive variants (R-FCN's PSRoIPool, Light-Head R-CNN's PSRoIAlign) read each bin from
its own group of channels: they run on a bin-major view of the input, in which every (image, bin) pair
is an image of C / (PH * PW) channels, so that RoIAlign's taps serve them unchanged.
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
    if out.size == 0:   # no boxes, no channels or an empty output grid: nothing to sample
        return np.zeros((k, c) + pooled, x.dtype), RoIAlignSaved(x.shape, [])
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
    if k * c * ph * pw == 0:   # no boxes, no channels or an empty output grid: no bin to take a maximum over
        return np.zeros((k, c, ph, pw), x.dtype), RoIPoolSaved(x.shape, np.full((k, c, ph, pw), -1, np.int64))
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


PSRoIAlignSaved = namedtuple("PSRoIAlignSaved", "x_shape bins align count")
PSRoIAlignSaved.__doc__ = ("Input shape, bins per box, RoIAlign's saved taps on the bin-major view of the input, "
                           "and the per-box sample count.")

PSRoIPoolSaved = namedtuple("PSRoIPoolSaved", "x_shape bins rows area")
PSRoIPoolSaved.__doc__ = ("Input shape, bins per box, the four corner rows of each bin's window in the "
                          "summed-area table and each window's area.")


def _bin_major(x, pooled):
    """(N, C, H, W), C = C_out * PH * PW -> (N * PH * PW, C_out, H, W): one image per (image, bin), so that
    bin (ph, pw) of a box reads channel (c_out * PH + ph) * PW + pw as channel c_out of its own image."""
    n, c, h, w = x.shape
    bins = pooled[0] * pooled[1]
    return x.reshape(n, c // bins, bins, h, w).transpose(0, 2, 1, 3, 4).reshape(n * bins, c // bins, h, w)


def _from_bin_major(grad, x_shape, bins):
    """Inverse of ``_bin_major`` for a gradient."""
    n, c, h, w = x_shape
    return np.ascontiguousarray(grad.reshape(n, bins, c // bins, h, w).transpose(0, 2, 1, 3, 4)).reshape(x_shape)


def _bin_images(image, pooled):
    """(K, PH, PW) index of each box bin's image in the bin-major view."""
    bins = pooled[0] * pooled[1]
    return image[:, None, None] * bins + np.arange(bins).reshape(pooled)


def ps_roi_align_forward(x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    """(K, C / (PH * PW), PH, PW): bin (ph, pw) of output channel c averages bilinear samples of input
    channel (c * PH + ph) * PW + pw. Boxes are shifted by half a pixel and not widened (RoIAlign's
    ``aligned``); a bin with no samples divides 0 by 0, as torchvision's does."""
    pooled = (int(pooled_height), int(pooled_width))
    view = _bin_major(x, pooled)
    dtype, (_, c_out, h, w) = x.dtype, view.shape
    image, *geometry = _align_geometry(rois.astype(dtype, copy=False), spatial_scale, pooled, sampling_ratio,
                                       True, dtype)
    count = (geometry[4] * geometry[5]).astype(dtype)
    geometry = (np.zeros_like(image), *geometry[:-1], np.ones_like(count))   # taps of image 0, unnormalised
    table, shift = _channels_last(view), _bin_images(image, pooled) * (h * w)
    out = np.zeros((len(rois), pooled[0], pooled[1], c_out), dtype)
    chunks = []
    gh, gw = np.maximum(geometry[5], 0), np.maximum(geometry[6], 0)
    for boxes in _chunks(gh * gw * 4 * pooled[0] * pooled[1], c_out):
        rows, weights = _align_taps(view.shape, geometry, boxes, pooled, dtype)
        rows = rows + shift[boxes][..., None]
        if rows.shape[-1]:
            out[boxes] = (weights[..., None, :] @ table[rows])[..., 0, :]
        chunks.append((boxes, rows, weights))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = out / count[:, None, None, None]
    saved = PSRoIAlignSaved(x.shape, pooled[0] * pooled[1], RoIAlignSaved(view.shape, chunks), count)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)), saved


def ps_roi_align_backward(gy, saved):
    """Each bin's gradient / its sample count onto the bilinear taps it averaged (none where it has none)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gy = np.where(saved.count[:, None, None, None] != 0, gy / saved.count[:, None, None, None], 0)
    grad = roi_align_backward(gy.astype(saved.count.dtype, copy=False), saved.align)
    return _from_bin_major(grad, saved.x_shape, saved.bins)


def _ps_pool_windows(rois, scale, pooled, h, w):
    """Per box and bin: integer window [y0, y1) x [x0, x1) clipped to [0, h] x [0, w], with torchvision's
    rounding of the box and its floor/ceil bin edges (boxes narrower than one pixel count as one)."""
    ends = _round_half_away(rois[:, 1:] * rois.dtype.type(scale)).astype(np.int64)
    height = np.maximum(ends[:, 3] - ends[:, 1], 1).astype(rois.dtype) / rois.dtype.type(pooled[0])
    width = np.maximum(ends[:, 2] - ends[:, 0], 1).astype(rois.dtype) / rois.dtype.type(pooled[1])
    y0, y1 = _pool_windows(ends[:, 1], height, pooled[0], h)
    x0, x1 = _pool_windows(ends[:, 0], width, pooled[1], w)
    return y0[:, :, None], y1[:, :, None], x0[:, None, :], x1[:, None, :]


def _window_corners(windows, plane, w):
    """Rows of the four corners (+, -, -, +) of each window in a (h + 1, w + 1) summed-area table whose
    planes start at ``plane``, and each window's area."""
    y0, y1, x0, x1 = windows
    rows = np.stack([plane + y * (w + 1) + xx for y, xx in ((y1, x1), (y0, x1), (y1, x0), (y0, x0))], -1)
    return rows, (np.maximum(y1 - y0, 0) * np.maximum(x1 - x0, 0)).astype(np.float64)


def ps_roi_pool_forward(x, rois, spatial_scale, pooled_height, pooled_width):
    """(K, C / (PH * PW), PH, PW): bin (ph, pw) of output channel c is the mean of input channel
    (c * PH + ph) * PW + pw over the bin's integer window, 0 for an empty window. As torchvision's
    forward, window edges are clipped to the last row and column (which a window then never reaches);
    its backward clips them to the map's size. Window sums come from a float64 summed-area table
    (four reads per bin instead of a loop over the window)."""
    pooled = (int(pooled_height), int(pooled_width))
    view = _bin_major(x, pooled)
    images, c_out, h, w = view.shape
    windows = _ps_pool_windows(rois.astype(x.dtype, copy=False), spatial_scale, pooled, h, w)
    summed = np.zeros((images, h + 1, w + 1, c_out))
    summed[:, 1:, 1:] = view.transpose(0, 2, 3, 1).cumsum(1, dtype=np.float64).cumsum(2)
    plane = _bin_images(rois[:, 0].astype(np.int64), pooled) * ((h + 1) * (w + 1))
    rows, area = _window_corners([np.minimum(edge, limit - 1) for edge, limit in zip(windows, (h, h, w, w))],
                                 plane, w)
    table = summed.reshape(-1, c_out)
    sums = table[rows[..., 0]] - table[rows[..., 1]] - table[rows[..., 2]] + table[rows[..., 3]]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(area[..., None] > 0, sums / area[..., None], 0).astype(x.dtype)
    saved = PSRoIPoolSaved(x.shape, pooled[0] * pooled[1], *_window_corners(windows, plane, w))
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2)), saved


def ps_roi_pool_backward(gy, saved):
    """Each bin's gradient / its area onto every element of its window: the adjoint of the summed-area
    reads, +/- at the window's corners, spread back by a reversed 2-D cumulative sum."""
    n, c, h, w = saved.x_shape
    c_out = c // saved.bins
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(saved.area[:, None] > 0, gy / saved.area[:, None], 0)   # (K, C_out, PH, PW)
    share = share.transpose(0, 2, 3, 1)[..., None, :] * np.array([1.0, -1.0, -1.0, 1.0])[:, None]
    index = saved.rows[..., None] * c_out + np.arange(c_out)
    corners = np.bincount(index.ravel(), share.ravel(), n * saved.bins * (h + 1) * (w + 1) * c_out)
    spread = corners.reshape(n * saved.bins, h + 1, w + 1, c_out)[:, ::-1, ::-1].cumsum(1).cumsum(2)[:, ::-1, ::-1]
    grad = spread[:, 1:, 1:].transpose(0, 3, 1, 2).astype(gy.dtype)
    return _from_bin_major(grad, saved.x_shape, saved.bins)
