"""Interpolation on the GPU (nearest, nearest-exact, (bi)linear, bicubic, area): one thread per output
reading its taps, whose indices and weights come from the shared geometry with torch's rounding; the
gradient scatters back onto the taps (the twin of ``backends/cpu/interpolate.py``).

Area mode is adaptive average pooling. Integer inputs (nearest modes only) are gathered with ``take``;
float16 is computed in float32.
"""
import functools
from collections import namedtuple

import cupy
import numpy as np

from ..interpolation_geometry import antialias_taps, check_mode, nearest_index, output_sizes, taps
from . import pool
from .source import launch

InterpolateSaved = namedtuple("InterpolateSaved", "x_shape dtype taps pooled")
InterpolateSaved.__doc__ = ("The input's shape and dtype, the device taps (ih, wh, iw, ww) of the rows and "
                            "columns, or for area mode the adaptive pooling's saved state.")


def _axis_taps(n_in, n_out, mode, align_corners, scale, dtype, antialias=False):
    """(index, weight) host arrays of shape (n_out, taps) for one axis. Antialiasing taps are padded to the
    row with the most (weight 0 on a repeated index): the same kernels then run them, the columns mixed
    first and then the rows, as torch does."""
    if antialias:
        return antialias_taps(n_in, n_out, mode, align_corners, scale, dtype.type)[:2]
    if mode in ("nearest", "nearest-exact"):
        index = nearest_index(n_in, n_out, scale, mode == "nearest-exact")
        return index.reshape(-1, 1), np.ones((n_out, 1), dtype)
    return taps(n_in, n_out, mode, align_corners, scale, dtype.type)


def _device_taps(x_shape, out, mode, align_corners, scales, dtype, antialias=False):
    """The (ih, wh, iw, ww) device arrays of a 3-D or 4-D input; a 1-D resize has one identity row tap.

    Kept per geometry and device (they are only read): computed on the host and copied once, so repeated
    calls copy nothing from the host, which a CUDA graph capture would refuse."""
    return _cached_taps(tuple(x_shape[2:]), tuple(out), mode, align_corners, tuple(scales), np.dtype(dtype),
                        cupy.cuda.Device().id, antialias)


@functools.lru_cache(maxsize=256)
def _cached_taps(in_size, out, mode, align_corners, scales, dtype, device_id, antialias=False):
    axes = list(zip(in_size, out, scales))
    if len(axes) == 1:
        rows = (np.zeros((1, 1), np.int64), np.ones((1, 1), dtype))
    else:
        rows = _axis_taps(*axes[0][:2], mode, align_corners, axes[0][2], dtype, antialias)
    cols = _axis_taps(*axes[-1][:2], mode, align_corners, axes[-1][2], dtype, antialias)
    return tuple(cupy.asarray(np.ascontiguousarray(a, dtype=np.int64 if i % 2 == 0 else dtype))
                 for i, a in enumerate(rows + cols))


@functools.lru_cache(maxsize=256)
def _device_index(n_in, n_out, scale, exact, device_id):
    """The nearest-neighbour source index of each output position, on the device (kept, as the taps are)."""
    return cupy.asarray(nearest_index(n_in, n_out, scale, exact))


def _planes(shape):
    """(P, H, W) of an (N, C, L) or (N, C, H, W) shape: P = N*C planes, L as a 1 x L plane."""
    n, c = shape[:2]
    return (n * c, 1, shape[2]) if len(shape) == 3 else (n * c, shape[2], shape[3])


def interpolate_forward(x, size=None, mode="nearest", align_corners=None, scale_factor=None,
                        recompute_scale_factor=None, antialias=False):
    """torch.nn.functional.interpolate for (N,C,L) and (N,C,H,W) inputs; returns (y, saved).

    antialias=True (bilinear, bicubic; 4-D) runs the same tap kernels with the widened antialiasing taps,
    which weigh a padding tap by zero: unlike torch, an inf or NaN input can then reach such outputs as NaN."""
    check_mode(x.ndim, mode, align_corners, antialias)
    out, scales = output_sizes(x.shape[2:], size, scale_factor, recompute_scale_factor)
    if mode == "area":
        x4 = x.reshape(x.shape[:2] + (1,) * (4 - x.ndim) + x.shape[2:])
        y, pooled = pool.adaptive_avg_pool2d_forward(x4, ((1,) * (4 - x.ndim)) + out)
        return y.reshape(x.shape[:2] + out), InterpolateSaved(x.shape, x.dtype, None, pooled)
    if antialias and x.dtype.kind != "f":  # integers are resampled in float32, as on the CPU
        x = x.astype(np.float32)
    if x.dtype.kind != "f":  # nearest modes on integers: a gather per axis
        for axis, (n, o, s) in enumerate(zip(x.shape[2:], out, scales), 2):
            x = x.take(_device_index(n, o, s, mode == "nearest-exact", cupy.cuda.Device().id), axis=axis)
        return x, None
    dtype = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype
    xc = cupy.ascontiguousarray(x.astype(dtype, copy=False))
    device_taps = _device_taps(x.shape, out, mode, align_corners, scales, dtype, antialias)
    P, H, W = _planes(x.shape)
    OH, OW = _planes(x.shape[:2] + out)[1:]
    y = cupy.empty(x.shape[:2] + out, dtype)
    launch("interpolate", "resample_forward", dtype, y.size, xc, y, *device_taps, P, H, W, OH, OW,
           device_taps[0].shape[1], device_taps[2].shape[1])
    return y.astype(x.dtype, copy=False), InterpolateSaved(x.shape, x.dtype, device_taps, None)


def interpolate_backward(gy, saved):
    """Input gradient of interpolate: the transposed resampling."""
    if saved.pooled is not None:
        g4 = gy.reshape(gy.shape[:2] + (1,) * (4 - gy.ndim) + gy.shape[2:])
        return pool.adaptive_avg_pool2d_backward(g4, saved.pooled).reshape(saved.x_shape)
    ih, wh = saved.taps[:2]
    dtype = wh.dtype
    g = cupy.ascontiguousarray(gy.astype(dtype, copy=False))
    P, H, W = _planes(saved.x_shape)
    OH, OW = _planes(gy.shape)[1:]
    gx = cupy.zeros(saved.x_shape, dtype)
    launch("interpolate", "resample_backward", dtype, g.size, g, gx, *saved.taps, P, H, W, OH, OW,
           ih.shape[1], saved.taps[2].shape[1])
    return gx.astype(saved.dtype, copy=False)
