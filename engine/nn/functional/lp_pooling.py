"""Power-average (LP) pooling: ``(sum over the window of x ** p) ** (1 / p)``, torch's formula through
average pooling.

The window sum is the average pool of ``x ** p`` times the window's size (a clipped ``ceil_mode`` window is
still scaled by the full size, as in torch). torch passes the sum through ``sign(s) * relu(|s|)``, which
is ``s`` itself (negative sums of odd ``p`` give NaN roots, NaN stays NaN) but gives zero sums a zero
gradient instead of the infinite one of ``s ** (1 / p)`` at 0. Here that is a ``where`` whose root branch
sees 1 in place of zero sums: the engine masks gradients by multiplying, and an infinite gradient times a
zero mask would be NaN. ``p = +-inf`` is the max (min) of ``|x|``. All of it composes differentiable ops,
so autograd gives the backward pass on either device.
"""
import math

from ...ops.elementwise import where
from .pooling import _expand, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .pooling3d import avg_pool3d, max_pool3d


def _lp_pool(nd, avg_pool, max_pool, input, norm_type, kernel_size, stride, ceil_mode):
    """LP pooling with ``avg_pool``/``max_pool`` of ``nd`` spatial dims."""
    if norm_type == 0:
        raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    window = math.prod(_expand(kernel_size, nd))
    sums = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode).mul(window)
    nonzero = sums != 0
    root = where(nonzero, sums, 1).pow(1.0 / norm_type)
    return where(nonzero, root, 0.0 if norm_type > 0 else math.inf)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch's ``lp_pool1d`` over (N, C, L) or (C, L) inputs."""
    return _lp_pool(1, avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch's ``lp_pool2d`` over (N, C, H, W) or (C, H, W) inputs."""
    return _lp_pool(2, avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """torch's ``lp_pool3d`` over (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _lp_pool(3, avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride, ceil_mode)


__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]
