"""RoIAlign and RoIPool on the GPU with torchvision's semantics: one thread per output bin and channel,
gradients scattered with atomicAdd (the twin of ``backends/cpu/roi.py``). float16 is computed in
float32. Their position-sensitive variants, whose bins each read their own group of channels, are the
kernels of ``kernels/ps_roi.cu``."""
from collections import namedtuple

import cupy

from .source import launch

RoIAlignSaved = namedtuple("RoIAlignSaved", "x_shape dtype rois args")
RoIAlignSaved.__doc__ = ("The input's shape and dtype, the boxes and the kernel's geometry arguments (RoIAlign's, and "
                         "the position-sensitive kernels').")

RoIPoolSaved = namedtuple("RoIPoolSaved", "x_shape dtype argmax")
RoIPoolSaved.__doc__ = "The input's shape and dtype and the flat input index each bin took its maximum from."


def _computable(a, dtype=None):
    a = cupy.ascontiguousarray(a.astype(dtype or a.dtype, copy=False))
    return a.astype(cupy.float32) if a.dtype == cupy.float16 else a


def roi_align_forward(x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned):
    """(K, C, PH, PW) average of bilinear samples per bin, and what the backward needs."""
    xc = _computable(x)
    r = _computable(rois, xc.dtype)
    N, C, H, W = xc.shape
    K, ph, pw = r.shape[0], int(pooled_height), int(pooled_width)
    args = (K, C, H, W, ph, pw, xc.dtype.type(spatial_scale), int(sampling_ratio), int(bool(aligned)))
    y = cupy.empty((K, C, ph, pw), xc.dtype)
    launch("roi", "roi_align_forward", xc.dtype, y.size, xc, r, y, *args)
    return y.astype(x.dtype, copy=False), RoIAlignSaved(x.shape, x.dtype, r, args)


def roi_align_backward(gy, saved):
    """Each bin's gradient, weighted, onto the bilinear taps it averaged."""
    return _scatter_bins("roi", "roi_align_backward", gy, saved)


def _scatter_bins(source, kernel, gy, saved):
    """The input gradient of a box pooling (``saved``: RoIAlignSaved): ``kernel`` of ``source`` adds each bin's
    gradient gy onto the input elements it read, into zeros."""
    g = _computable(gy, saved.rois.dtype)
    gx = cupy.zeros(saved.x_shape, g.dtype)
    launch(source, kernel, g.dtype, g.size, g, saved.rois, gx, *saved.args)
    return gx.astype(saved.dtype, copy=False)


def roi_pool_forward(x, rois, spatial_scale, pooled_height, pooled_width):
    """(K, C, PH, PW) max over each bin's integer window (0 for empty bins), and the argmax indices."""
    xc = _computable(x)
    r = _computable(rois, xc.dtype)
    N, C, H, W = xc.shape
    K, ph, pw = r.shape[0], int(pooled_height), int(pooled_width)
    y = cupy.empty((K, C, ph, pw), xc.dtype)
    argmax = cupy.empty((K, C, ph, pw), cupy.int64)
    launch("roi", "roi_pool_forward", xc.dtype, y.size, xc, r, y, argmax, K, C, H, W, ph, pw,
           xc.dtype.type(spatial_scale))
    return y.astype(x.dtype, copy=False), RoIPoolSaved(x.shape, x.dtype, argmax)


def roi_pool_backward(gy, saved):
    """Each bin's gradient onto the input element that was its maximum."""
    g = _computable(gy)
    gx = cupy.zeros(saved.x_shape, g.dtype)
    launch("roi", "roi_pool_backward", g.dtype, g.size, g, saved.argmax, gx, g.size)
    return gx.astype(saved.dtype, copy=False)


def _ps_launch_args(x, rois, spatial_scale, pooled_height, pooled_width):
    """Computable input and boxes, the output, and the (K, C_out, H, W, PH, PW, scale) kernel arguments."""
    xc = _computable(x)
    r = _computable(rois, xc.dtype)
    N, C, H, W = xc.shape
    ph, pw = int(pooled_height), int(pooled_width)
    args = (r.shape[0], C // (ph * pw), H, W, ph, pw, xc.dtype.type(spatial_scale))
    return xc, r, cupy.empty((r.shape[0], C // (ph * pw), ph, pw), xc.dtype), args


def ps_roi_align_forward(x, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio):
    """(K, C / (PH * PW), PH, PW): each bin averages bilinear samples of its own input channel."""
    xc, r, y, args = _ps_launch_args(x, rois, spatial_scale, pooled_height, pooled_width)
    args += (int(sampling_ratio),)
    launch("ps_roi", "ps_roi_align_forward", xc.dtype, y.size, xc, r, y, *args)
    return y.astype(x.dtype, copy=False), RoIAlignSaved(x.shape, x.dtype, r, args)


def ps_roi_align_backward(gy, saved):
    """Each bin's gradient, weighted, onto the bilinear taps of its channel."""
    return _scatter_bins("ps_roi", "ps_roi_align_backward", gy, saved)


def ps_roi_pool_forward(x, rois, spatial_scale, pooled_height, pooled_width):
    """(K, C / (PH * PW), PH, PW): each bin's mean over its integer window of its own input channel."""
    xc, r, y, args = _ps_launch_args(x, rois, spatial_scale, pooled_height, pooled_width)
    launch("ps_roi", "ps_roi_pool_forward", xc.dtype, y.size, xc, r, y, *args)
    return y.astype(x.dtype, copy=False), RoIAlignSaved(x.shape, x.dtype, r, args)


def ps_roi_pool_backward(gy, saved):
    """Each bin's gradient / its area onto every element of its window."""
    return _scatter_bins("ps_roi", "ps_roi_pool_backward", gy, saved)
