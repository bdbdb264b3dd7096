"""Numerical integration by the trapezoidal rule along a dim: ``trapezoid`` (and its older name ``trapz``) and
``cumulative_trapezoid``, with sample points ``x`` or a constant spacing ``dx``, built from differentiable ops so
that gradients reach ``y`` and ``x``. The arithmetic is torch's, term for term: with a constant spacing,
``trapezoid`` is (sum - (first + last) / 2) * dx, so infinities give what torch's give."""
from .. import _dtype
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


def _refuse_bool(y, x, name):
    """torch's error for bool samples (or bool sample points)."""
    if x is not None and _dtype.bool_ in (y.dtype, x.dtype):
        raise NotImplementedError(f"{name}: received a bool input for `x` or `y`, but bool is not supported")
    if y.dtype is _dtype.bool_:
        raise NotImplementedError(f"{name}: received a bool input for `y`, but bool is not supported")


def _midpoint_areas(y, x, dx, dim, name):
    """Area of each trapezoid between consecutive samples along ``dim`` (none for fewer than 2 samples)."""
    n = y.shape[dim]
    left, right = (y, y) if n == 0 else (y.narrow(dim, 0, n - 1), y.narrow(dim, 1, n - 1))
    if x is None:
        return (1 if dx is None else dx) / 2 * (left + right)
    return _spacing(y, x, dx, dim, name) * (left + right) / 2


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule (0 where dim has fewer than 2 samples; zeros
    of y's dtype where it has none)."""
    _check(y, x, dx, "trapezoid")
    dim = wrap_dim(dim, y.ndim)
    if y.shape[dim] == 0:
        return y.new_zeros(tuple(y.shape[:dim]) + tuple(y.shape[dim + 1:]))
    _refuse_bool(y, x, "trapezoid")
    if x is None:
        return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * (1 if dx is None else dx)
    return _midpoint_areas(y, x, dx, dim, "trapezoid").sum(dim)


def trapz(y, x=None, *, dx=1.0, dim=-1):
    """``trapezoid``'s older name: ``dx`` defaults to 1.0."""
    return trapezoid(y, x, dim=dim) if x is not None else trapezoid(y, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim``: one fewer value than samples."""
    _check(y, x, dx, "cumulative_trapezoid")
    _refuse_bool(y, x, "cumulative_trapezoid")
    dim = wrap_dim(dim, y.ndim)
    return _midpoint_areas(y, x, dx, dim, "cumulative_trapezoid").cumsum(dim)


__all__ = ["trapezoid", "trapz", "cumulative_trapezoid"]
