"""Ops that run along one dim relating each element to those before it: cummax, cummin,
logcumsumexp and diff (``cumsum``/``cumprod`` live in ``reduction``).
"""
import numpy as np

from .. import _dtype
from .._layout import RowMajorResults
from ..autograd.double_backward import constant
from ..autograd.function import Function
from ..tensor import Tensor, register_method
from ._common import wrap_dim, xp_of
from .indexing import _along_key
from .reduction import return_type
from .shape import cat, narrow
from .complex_refusals import refuse_complex

_cummax_result = return_type("cummax")
_cummin_result = return_type("cummin")


def inclusive_scan(xp, ufunc, x, axis):
    """``ufunc`` accumulated along ``axis``: numpy's ``accumulate``, and for other array modules (CuPy's
    ``accumulate`` is not relied on beyond sums) Hillis-Steele doubling, log2(n) whole-array passes."""
    if xp is np:
        return ufunc.accumulate(x, axis=axis)
    out = x.copy()
    n = x.shape[axis]
    lead = (slice(None),) * axis
    step = 1
    while step < n:
        out[lead + (slice(step, None),)] = ufunc(out[lead + (slice(step, None),)], out[lead + (slice(0, n - step),)])
        step *= 2
    return out


class CumExtreme(RowMajorResults, Function):
    """The running max (or min) along ``dim`` and, for each position, the index it was last reached
    at (PyTorch's choice on ties; a NaN, once seen, stays the value). The gradient of each output goes
    to the element at its index."""

    uses_inputs = False

    def __init__(self, dim, largest):
        self.dim, self.largest = dim, largest

    def forward(self, x):
        xp = xp_of(x)
        ufunc = xp.maximum if self.largest else xp.minimum
        values = inclusive_scan(xp, ufunc, x, self.dim) if x.size else x.copy()
        reached = (x == values)
        if x.dtype.kind == "f":
            reached |= xp.isnan(x)
        shape = [1] * x.ndim
        shape[self.dim] = x.shape[self.dim]
        positions = xp.arange(x.shape[self.dim], dtype=np.int64).reshape(shape)
        marks = xp.where(reached, positions, 0)
        self.indices = inclusive_scan(xp, xp.maximum, marks, self.dim) if x.size else marks
        self.in_shape = x.shape
        return values, self.indices

    def backward(self, gy, g_indices):
        xp = xp_of(gy)
        g = xp.zeros(self.in_shape, gy.dtype)
        xp.add.at(g, _along_key(self.indices, self.dim), gy)
        return g

    def backward_tensors(self, gy, g_indices):
        from .indexing import Scatter
        zeros = constant(xp_of(gy._data).zeros(self.in_shape, gy._data.dtype))
        return Scatter(self.dim, "add", False)(zeros, constant(self.indices), gy)


def _cum_extreme(input, dim, largest, result, name):
    """torch's kernel, which refuses complex input, runs only on a dimensioned input with elements."""
    if input.ndim == 0:
        if dim not in (-1, 0):
            raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
        return result(input.clone(), input.new_zeros((), dtype=_dtype.int64))
    axis = wrap_dim(dim, input.ndim)
    if input.numel():
        refuse_complex(name, input)
    values, indices = CumExtreme(axis, largest)(input)
    return result(values, indices)


def cummax(input, dim):
    """The running maximum along ``dim`` and where it was reached: ``(values, indices)``."""
    return _cum_extreme(input, dim, True, _cummax_result, "cummax")


def cummin(input, dim):
    """The running minimum along ``dim`` and where it was reached: ``(values, indices)``."""
    return _cum_extreme(input, dim, False, _cummin_result, "cummin")


class LogCumSumExp(RowMajorResults, Function):
    """log(cumsum(exp(x))) along ``dim`` without overflow. Backward: each input's gradient is
    sum over i >= j of gy_i * exp(x_j - y_i), summed in log space (positive and negative parts of gy
    apart) so that no exponential overflows."""

    uses_inputs = False

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x):
        xp = xp_of(x)
        self.x = x
        self.y = inclusive_scan(xp, xp.logaddexp, x, self.dim) if x.size else x.copy()
        return self.y

    def backward(self, gy):
        xp = xp_of(gy)
        if not gy.size:
            return gy
        with np.errstate(divide="ignore", invalid="ignore"):
            positive = self._tail_sums(xp, xp.log(xp.where(gy > 0, gy, 0)))
            negative = self._tail_sums(xp, xp.log(xp.where(gy < 0, -gy, 0)))
            return xp.exp(self.x + positive) - xp.exp(self.x + negative)

    def backward_tensors(self, gy):
        """sum over i >= j of gy_i exp(x_j - y_i) as exp(x_j - m) times a reverse running sum of
        gy_i exp(m - y_i), m the largest output along the dim (a constant: the value does not depend on it)."""
        if not self.y.size:
            return gy
        m = constant(self.y.max(self.dim, keepdims=True))
        x, y = self.saved_input(0, self.x), self.saved_output(0, self.y)
        tail = (gy * (m - y).exp()).flip(self.dim).cumsum(self.dim).flip(self.dim)
        return (x - m).exp() * tail

    def _tail_sums(self, xp, log_g):
        """log of sum over i >= j of exp(log_g_i - y_i), for every j."""
        reversed_terms = xp.flip(log_g - self.y, self.dim)
        return xp.flip(inclusive_scan(xp, xp.logaddexp, reversed_terms, self.dim), self.dim)


def logcumsumexp(input, dim):
    """log of the cumulative sum of exp(input) along ``dim`` (floating types only, as in PyTorch)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"logcumsumexp_out_{input.device.type}\" not implemented for "
                                  f"'{input.dtype.title}'")
    if input.ndim == 0:
        return input.clone()
    return LogCumSumExp(wrap_dim(dim, input.ndim))(input)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim``, after joining ``prepend`` and ``append``
    (bool tensors give ``!=`` of neighbours, as PyTorch)."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    if n == 0:  # a copy: torch leaves prepend and append out too
        return input.clone()
    parts = [_joinable(p, input, d) for p in (prepend, input, append) if p is not None]
    out = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = out.shape[d]
        if length == 0:
            break
        later, earlier = narrow(out, d, 1, length - 1), narrow(out, d, 0, length - 1)
        out = later != earlier if out.dtype is _dtype.bool_ else later - earlier
    return out


def _joinable(part, input, dim):
    """``prepend``/``append`` as a tensor that joins ``input`` along ``dim`` (a scalar fills a slice)."""
    if isinstance(part, Tensor):
        return part
    shape = list(input.shape)
    shape[dim] = 1
    return input.new_full(shape, part)


for _name in ("cummax", "cummin", "logcumsumexp", "diff"):
    register_method(globals()[_name], _name)

__all__ = ["cummax", "cummin", "logcumsumexp", "diff"]
