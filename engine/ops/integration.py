"""Numerical integration by the trapezoidal rule along a dim: ``trapezoid`` (and its older name ``trapz``) and
``cumulative_trapezoid``, with sample points ``x`` or a constant spacing ``dx``, built from differentiable ops so
that gradients reach ``y`` and ``x``."""
from ._common import wrap_dim


def _spacing(y, x, dx, dim, name):
    """The widths of the intervals along ``dim``: diff(x) shaped to broadcast against y, or the number ``dx``."""
    if x is None:
        return 1 if dx is None else dx
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point, but got {x.shape[0]} "
                               f"x values and {y.shape[dim]} sample points along dim {dim}")
        return x.diff().reshape((-1,) + (1,) * (y.ndim - 1 - dim))
    return x.diff(dim=dim - y.ndim if x.ndim < y.ndim else dim)


def _check(y, x, dx, name):
    if x is not None and dx is not None:
        raise TypeError(f"{name}: pass either the sample points x or the spacing dx, not both")
    if y.ndim == 0:
        raise IndexError(f"{name}: y must have at least one dimension, got a 0-d tensor")


def _midpoint_areas(y, x, dx, dim, name):
    """Area of each trapezoid between consecutive samples along ``dim``."""
    n = y.shape[dim]
    left, right = y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1)
    return (left + right) * _spacing(y, x, dx, dim, name) / 2


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule (0 where dim has fewer than 2 samples)."""
    _check(y, x, dx, "trapezoid")
    dim = wrap_dim(dim, y.ndim)
    if y.shape[dim] == 0:
        return y.sum(dim) * 1.0  # zeros, in a floating type
    return _midpoint_areas(y, x, dx, dim, "trapezoid").sum(dim)


def trapz(y, x=None, *, dx=1.0, dim=-1):
    """``trapezoid``'s older name: ``dx`` defaults to 1.0."""
    return trapezoid(y, x, dim=dim) if x is not None else trapezoid(y, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim``: one fewer value than samples."""
    _check(y, x, dx, "cumulative_trapezoid")
    dim = wrap_dim(dim, y.ndim)
    if y.shape[dim] == 0:
        return y * 1.0
    return _midpoint_areas(y, x, dx, dim, "cumulative_trapezoid").cumsum(dim)


__all__ = ["trapezoid", "trapz", "cumulative_trapezoid"]
