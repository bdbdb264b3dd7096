"""Deformable convolution (DCN v1, and v2 with a modulation mask) forward/backward on numpy, with
torchvision's semantics.

Each kernel tap k of each output position samples the input at its regular position plus a learnt
offset (dy, dx) by bilinear interpolation with zeros outside the map; in DCN v2 the sample is then
scaled by a mask value. The samples of all channels, taps and positions form the im2col matrix that a
single (per-group batched) GEMM with the weights turns into the output. Offsets and masks come in
``offset_groups`` groups of consecutive input channels; the weights in ``groups`` as ``conv2d``'s.

Everything is vectorised over images, channels, taps and positions at once: the four corners of each
sample are gathered with one fancy index each and scattered back with one ``bincount``. The backward
recomputes the samples from the saved inputs rather than keeping the corner values alive.
"""
from collections import namedtuple

import numpy as np

from .gemm import matmul

DeformGeometry = namedtuple("DeformGeometry", "stride padding dilation groups offset_groups")
DeformGeometry.__doc__ = "(sh, sw), (ph, pw), (dh, dw), weight groups and offset groups."

DeformSaved = namedtuple("DeformSaved", "x weight offset mask has_bias geometry")
DeformSaved.__doc__ = "The inputs (mask None for DCN v1), whether a bias was added, and the geometry."

Samples = namedtuple("Samples", "index weights values frac")
Samples.__doc__ = ("Per corner (y0x0, y0x1, y1x0, y1x1): flat plane index (N, G, 1, K, L), bilinear weight "
                   "(N, G, 1, K, L) and value (N, G, Cg, K, L), both 0 off the map, and each sample's fractional "
                   "position (ly, lx).")


def output_size(x_shape, weight_shape, geometry):
    """(Ho, Wo) of a deformable convolution, as ``conv2d``'s."""
    return tuple((x_shape[2 + a] + 2 * geometry.padding[a] - geometry.dilation[a] * (weight_shape[2 + a] - 1) - 1)
                 // geometry.stride[a] + 1 for a in range(2))


def _positions(offset, weight_shape, geometry):
    """Sample positions y, x: (N, G, K, L) each, regular tap position plus the tap's offset."""
    n, _, ho, wo = offset.shape
    kh, kw = weight_shape[2:]
    (sh, sw), (ph, pw), (dh, dw) = geometry.stride, geometry.padding, geometry.dilation
    off = offset.reshape(n, geometry.offset_groups, kh * kw, 2, ho, wo)
    base_y = (np.arange(ho) * sh - ph)[None, :, None] + (np.arange(kh) * dh).repeat(kw)[:, None, None]
    base_x = (np.arange(wo) * sw - pw)[None, None, :] + np.tile(np.arange(kw) * dw, kh)[:, None, None]
    y = base_y.astype(offset.dtype) + off[:, :, :, 0]
    x = base_x.astype(offset.dtype) + off[:, :, :, 1]
    shape = (n, geometry.offset_groups, kh * kw, ho * wo)
    return y.reshape(shape), x.reshape(shape)


def _sample(x, offset, weight_shape, geometry):
    """Bilinear samples of every channel at every tap's position, corner by corner. A corner off the map
    reads 0; torchvision's test that the sample lies inside (-1, H) x (-1, W) is implied, as a sample outside
    it has no corner on the map or (exactly on row or column -1) gives weight 0 to the one it has."""
    n, c, h, w = x.shape
    groups = geometry.offset_groups
    y, xx = _positions(offset, weight_shape, geometry)
    y0, x0 = np.floor(y), np.floor(xx)
    ly, lx = y - y0, xx - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    planes = x.reshape(n, groups, 1, c // groups, h * w)
    index, weights, values = [], [], []
    for dy, dx, wy, wx in ((0, 0, 1 - ly, 1 - lx), (0, 1, 1 - ly, lx), (1, 0, ly, 1 - lx), (1, 1, ly, lx)):
        cy, cx = y0 + dy, x0 + dx
        valid = (cy >= 0) & (cy < h) & (cx >= 0) & (cx < w)
        at = np.where(valid, np.clip(cy, 0, h - 1) * w + np.clip(cx, 0, w - 1), 0)
        k, length = at.shape[2:]
        gathered = np.take_along_axis(planes, at.reshape(n, groups, 1, 1, k * length), axis=4)
        gathered = gathered.reshape(n, groups, c // groups, k, length)
        index.append(at[:, :, None])
        weights.append((wy * wx * valid)[:, :, None])
        values.append(np.where(valid[:, :, None], gathered, 0))
    return Samples(index, weights, values, (ly[:, :, None], lx[:, :, None]))


def _interpolated(samples):
    """(N, G, Cg, K, L) bilinear values of the samples."""
    return sum(wt * v for wt, v in zip(samples.weights, samples.values))


def _mask_of(mask, shape):
    """The mask as (N, G, 1, K, L), or 1 for DCN v1."""
    return 1 if mask is None else mask.reshape(shape[0], shape[1], 1, shape[3], shape[4])


def _columns(sampled, groups):
    """(N, G, Cg, K, L) -> the im2col matrix (groups, C / groups * K, N * L)."""
    n, offset_groups, per_group, k, length = sampled.shape
    rows = offset_groups * per_group * k // groups
    return sampled.reshape(n, groups, rows, length).transpose(1, 2, 0, 3).reshape(groups, rows, n * length)


def deform_conv2d_forward(x, weight, offset, mask, bias, stride, padding, dilation, groups, offset_groups):
    """(N, O, Ho, Wo) deformable convolution of x (N, C, H, W) with weight (O, C / groups, KH, KW),
    offset (N, 2 * offset_groups * KH * KW, Ho, Wo), mask (N, offset_groups * KH * KW, Ho, Wo) or None,
    bias (O,) or None; and what the backward needs."""
    geometry = DeformGeometry(tuple(stride), tuple(padding), tuple(dilation), int(groups), int(offset_groups))
    n, o = x.shape[0], weight.shape[0]
    ho, wo = output_size(x.shape, weight.shape, geometry)
    samples = _sample(x, offset, weight.shape, geometry)
    sampled = _interpolated(samples)
    sampled = sampled * _mask_of(mask, sampled.shape)
    y = matmul(weight.reshape(groups, o // groups, -1), _columns(sampled, groups))     # (groups, O/groups, N*L)
    y = y.reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if bias is not None:
        y = y + bias.reshape(1, o, 1, 1)
    return np.ascontiguousarray(y), DeformSaved(x, weight, offset, mask, bias is not None, geometry)


def _scatter_input_grad(grad_sampled, samples, x_shape):
    """Each sample's gradient onto its four corners, weighted as the forward read them."""
    n, c, h, w = x_shape
    groups = grad_sampled.shape[1]
    plane = (np.arange(n)[:, None, None] * c + np.arange(c).reshape(groups, c // groups))[..., None, None]
    index = np.concatenate([(plane * (h * w) + at).ravel() for at in
                            (np.broadcast_to(i, grad_sampled.shape) for i in samples.index)])
    share = np.concatenate([(grad_sampled * wt).ravel() for wt in samples.weights])
    return np.bincount(index, share, n * c * h * w).astype(grad_sampled.dtype).reshape(x_shape)


def _offset_grad(grad_sampled, samples):
    """(N, G, K, 2, L): the gradient along y and x of each sample, from the derivatives of its bilinear
    weights. As torchvision's, a sample exactly on row (column) -1 has the y (x) derivative of the row
    (column) 0 it is about to enter."""
    v00, v01, v10, v11 = samples.values
    ly, lx = samples.frac
    d_y = (1 - lx) * (v10 - v00) + lx * (v11 - v01)
    d_x = (1 - ly) * (v01 - v00) + ly * (v11 - v10)
    return np.stack([(grad_sampled * d_y).sum(2), (grad_sampled * d_x).sum(2)], axis=3)


def deform_conv2d_backward(gy, saved):
    """Gradients of x, weight, offset, mask (None for DCN v1) and bias (None without one)."""
    x, weight, offset, mask, geometry = saved.x, saved.weight, saved.offset, saved.mask, saved.geometry
    groups, o = geometry.groups, weight.shape[0]
    n, _, ho, wo = gy.shape
    samples = _sample(x, offset, weight.shape, geometry)
    sampled = _interpolated(samples)
    scale = _mask_of(mask, sampled.shape)
    grad_rows = gy.transpose(1, 0, 2, 3).reshape(groups, o // groups, n * ho * wo)
    grad_weight = matmul(grad_rows, _columns(sampled * scale, groups).transpose(0, 2, 1)).reshape(weight.shape)
    grad_columns = matmul(weight.reshape(groups, o // groups, -1).transpose(0, 2, 1), grad_rows)
    grad_columns = grad_columns.reshape(x.shape[1], sampled.shape[3], n, ho * wo).transpose(2, 0, 1, 3)
    grad_columns = grad_columns.reshape(sampled.shape)
    grad_sampled = grad_columns * scale
    grad_x = _scatter_input_grad(grad_sampled, samples, x.shape)
    grad_offset = _offset_grad(grad_sampled, samples).reshape(offset.shape)
    grad_mask = None if mask is None else (grad_columns * sampled).sum(2).reshape(mask.shape)
    grad_bias = gy.sum((0, 2, 3)) if saved.has_bias else None
    return grad_x, grad_weight, grad_offset, grad_mask, grad_bias
