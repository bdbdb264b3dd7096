"""Pooling on the GPU (max, average, adaptive) with torch's window, index and divisor rules: one thread
per output window, gradients scattered with atomicAdd (the twin of ``backends/cpu/pool.py``).

Global and evenly dividing adaptive average pooling are reshape-means, which CuPy reduces in parallel
(one thread per window would sum a whole plane serially). float16 inputs are computed in float32.
"""
from collections import namedtuple

import cupy

from ..pool_geometry import adaptive_output_size, geometry
from .source import launch

MaxPoolSaved = namedtuple("MaxPoolSaved", "indices x_shape dtype")
MaxPoolSaved.__doc__ = "What the max-pool backwards need: flat argmax indices per plane and the input's shape."

AvgPoolSaved = namedtuple("AvgPoolSaved", "x_shape dtype args")
AvgPoolSaved.__doc__ = "What avg_pool2d_backward needs: the input's shape and the kernel's geometry arguments."

AdaptiveAvgSaved = namedtuple("AdaptiveAvgSaved", "x_shape dtype")
AdaptiveAvgSaved.__doc__ = "The input's shape (the bins follow from it and the output's)."


def _computable(a):
    a = cupy.ascontiguousarray(a)
    return a.astype(cupy.float32) if a.dtype == cupy.float16 else a


def max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d of x (N,C,H,W); returns (y, indices, saved) with torch's int64 flat indices."""
    N, C, H, W = x.shape
    k, s, p, d, out, _ = geometry(x.shape, kernel_size, stride, padding, dilation, ceil_mode)
    xc = _computable(x)
    y = cupy.empty((N, C) + out, xc.dtype)
    indices = cupy.empty((N, C) + out, cupy.int64)
    launch("pool", "max_pool_forward", xc.dtype, y.size, xc, y, indices, N * C, H, W, *k, *s, *p, *d, *out)
    return y.astype(x.dtype, copy=False), indices, MaxPoolSaved(indices, x.shape, x.dtype)


def max_pool2d_values_forward(x, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool2d's values alone (inference); the kernel writes its indices to a scratch array."""
    y, _, _ = max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode)
    return y, None


def max_pool2d_backward(gy, saved):
    """Input gradient of (adaptive) max pooling: gy added at each window's argmax."""
    N, C, H, W = saved.x_shape
    g = _computable(gy)
    gx = cupy.zeros(saved.x_shape, g.dtype)
    launch("pool", "max_pool_backward", g.dtype, g.size, g, cupy.ascontiguousarray(saved.indices), gx, N * C,
           H * W, g.shape[2] * g.shape[3])
    return gx.astype(saved.dtype, copy=False)


def avg_pool2d_forward(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    """avg_pool2d of x (N,C,H,W) with torch's divisor rules; returns (y, saved)."""
    N, C, H, W = x.shape
    k, s, p, _, out, _ = geometry(x.shape, kernel_size, stride, padding, 1, ceil_mode)
    args = (N * C, H, W, *k, *s, *p, *out, int(bool(count_include_pad)), int(divisor_override or 0))
    xc = _computable(x)
    y = cupy.empty((N, C) + out, xc.dtype)
    launch("pool", "avg_pool_forward", xc.dtype, y.size, xc, y, *args)
    return y.astype(x.dtype, copy=False), AvgPoolSaved(x.shape, x.dtype, args)


def avg_pool2d_backward(gy, saved):
    """Input gradient of average pooling: each output adds gy/divisor to every input of its window."""
    g = _computable(gy)
    gx = cupy.zeros(saved.x_shape, g.dtype)
    launch("pool", "avg_pool_backward", g.dtype, g.size, g, gx, *saved.args)
    return gx.astype(saved.dtype, copy=False)


def adaptive_avg_pool2d_forward(x, output_size):
    """adaptive_avg_pool2d of x (N,C,H,W); returns (y, saved)."""
    N, C, H, W = x.shape
    OH, OW = adaptive_output_size(x.shape, output_size)
    xc = _computable(x)
    if H % OH == 0 and W % OW == 0:
        y = xc.reshape(N, C, OH, H // OH, OW, W // OW).mean(axis=(3, 5))
    else:
        y = cupy.empty((N, C, OH, OW), xc.dtype)
        launch("pool", "adaptive_avg_pool_forward", xc.dtype, y.size, xc, y, N * C, H, W, OH, OW)
    return y.astype(x.dtype, copy=False), AdaptiveAvgSaved(x.shape, x.dtype)


def adaptive_avg_pool2d_backward(gy, saved):
    """Input gradient of adaptive average pooling (the transposed averaging)."""
    N, C, H, W = saved.x_shape
    g = _computable(gy)
    OH, OW = g.shape[2:]
    if H % OH == 0 and W % OW == 0:
        g = g / ((H // OH) * (W // OW))
        gx = cupy.broadcast_to(g[:, :, :, None, :, None], (N, C, OH, H // OH, OW, W // OW)).reshape(N, C, H, W)
        return gx.astype(saved.dtype)
    gx = cupy.zeros(saved.x_shape, g.dtype)
    launch("pool", "adaptive_avg_pool_backward", g.dtype, g.size, g, gx, N * C, H, W, OH, OW)
    return gx.astype(saved.dtype, copy=False)


def adaptive_max_pool2d_forward(x, output_size):
    """adaptive_max_pool2d of x (N,C,H,W); returns (y, indices, saved) like torch's return_indices."""
    N, C, H, W = x.shape
    OH, OW = adaptive_output_size(x.shape, output_size)
    xc = _computable(x)
    y = cupy.empty((N, C, OH, OW), xc.dtype)
    indices = cupy.empty((N, C, OH, OW), cupy.int64)
    launch("pool", "adaptive_max_pool_forward", xc.dtype, y.size, xc, y, indices, N * C, H, W, OH, OW)
    return y.astype(x.dtype, copy=False), indices, MaxPoolSaved(indices, x.shape, x.dtype)


def adaptive_max_pool2d_backward(gy, saved):
    """Input gradient of adaptive max pooling: the same argmax scatter as max_pool2d_backward."""
    return max_pool2d_backward(gy, saved)
