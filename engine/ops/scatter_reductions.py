"""``scatter_reduce``: reduce ``src`` into ``input`` at ``index`` along a dim with sum, prod, mean, amax
or amin, with or without the values already there (``include_self``), forward and backward as
PyTorch's (a mean divides by how many values met; amax/amin share the gradient among ties; prod
handles zeros exactly).
"""
import numpy as np

from .._device import device_of, move
from ..autograd.double_backward import constant, masked
from ..autograd.function import Function
from ..tensor import Tensor, register_method
from ._common import as_operand, wrap_dim, xp_of
from .indexing import Gather, _along_key, _check_along, _check_bounds, _head, _index_array, _into_head

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
ALIASES = {"max": "amax", "min": "amin"}  # PyTorch takes these too


def _identity(reduce, dtype):
    """The value a reduction starts from when the input's own values are left out."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    low, high = (-np.inf, np.inf) if dtype.kind == "f" else (info.min, info.max)
    return low if reduce == "amax" else high


class _MultiplyAt:
    """``multiply.at`` for numpy and CuPy arrays: CuPy has no such scatter, so its arrays take a trip
    through host memory (numpy's loop) and back."""

    @staticmethod
    def at(out, key, values):
        if isinstance(out, np.ndarray):
            np.multiply.at(out, key, values)
            return
        host = move(out, "cpu")
        np.multiply.at(host, tuple(move(k, "cpu") for k in key), move(values, "cpu"))
        out[...] = move(host, device_of(out))


_multiply_at = _MultiplyAt()


class ScatterReduce(Function):
    uses_inputs = False

    def __init__(self, dim, reduce, include_self, inplace):
        self.dim, self.reduce, self.include_self, self.inplace = dim, reduce, include_self, inplace

    def forward(self, x, index, src):
        xp = xp_of(x)
        out = x if self.inplace else x.copy()
        self.x = x.copy() if self.inplace else x
        self.key = _along_key(index, self.dim)
        self.src_shape, self.src_input = src.shape, src
        self.src = _head(src, index.shape).astype(x.dtype, copy=False)
        self.hit = xp.zeros(x.shape, bool)
        self.hit[self.key] = True
        if not self.include_self:
            out[self.hit] = _identity(self.reduce, x.dtype)
        ufunc = {"sum": xp.add, "mean": xp.add, "prod": _multiply_at, "amax": xp.maximum, "amin": xp.minimum}
        ufunc[self.reduce].at(out, self.key, self.src)
        if self.reduce == "mean":
            self.count = xp.zeros(x.shape, np.int64)
            xp.add.at(self.count, self.key, 1)
            self.count += 1 if self.include_self else 0
            divisor = xp.maximum(self.count, 1)
            out[...] = out / divisor if x.dtype.kind == "f" else xp.floor_divide(out, divisor)
        self.y = out.copy() if self.inplace else out
        return out

    def backward(self, gy):
        xp = xp_of(gy)
        own = self.include_self | ~self.hit  # where the input's own value takes part in the result
        if self.reduce == "sum":
            g_self, g_src = gy * own, gy[self.key]
        elif self.reduce == "mean":
            share = gy / xp.maximum(self.count, 1)
            g_self, g_src = xp.where(self.hit, share, gy) * own, share[self.key]
        elif self.reduce == "prod":
            g_self, g_src = self._prod_grads(xp, gy, own)
        else:
            g_self, g_src = self._extreme_grads(xp, gy, own)
        g_full = None
        if self.needs_input_grad[2]:
            g_full = xp.zeros(self.src_shape, gy.dtype)
            _head(g_full, g_src.shape)[...] = g_src
        return g_self, None, g_full

    def backward_tensors(self, gy):
        """sum, mean, amax and amin are linear in ``gy`` with constant masks and counts (the winners of amax and
        amin fixed, as torch's); prod's gradients are result / value, on the graph, where no value that met is
        zero (torch's formula for zeros is not differentiable here: that case raises)."""
        xp = xp_of(gy._data)
        own = self.include_self | ~self.hit
        index = constant(self.key[self.dim])
        if self.reduce in ("sum", "mean"):
            share = gy / constant(xp.maximum(self.count, 1).astype(gy._data.dtype)) if self.reduce == "mean" else gy
            g_self = masked(share.where(constant(self.hit), gy), own)
            g_src = Gather(self.dim)(share, index)
        elif self.reduce == "prod":
            g_self, g_src = self._prod_grad_tensors(xp, gy, own, index)
        else:
            self_wins, src_wins = self.x == self.y, self.src == self.y[self.key]
            ties = self_wins.astype(gy._data.dtype)
            xp.add.at(ties, self.key, src_wins.astype(ties.dtype))
            share = gy / constant(xp.maximum(ties, 1))
            g_self = masked(share, self_wins & own)
            g_src = masked(Gather(self.dim)(share, index), src_wins)
        return g_self, None, _into_head(g_src, self.src_shape) if self.needs_input_grad[2] else None

    def _prod_grad_tensors(self, xp, gy, own, index):
        if bool(((self.x == 0) & own).any()) or bool((self.src == 0).any()):
            raise RuntimeError("scatter_reduce(reduce='prod') double backward where a reduced value is zero is not "
                               "supported")
        g = gy * self.saved_output(0, self.y)
        x = self.saved_input(0, self.x)
        src = _head_tensor(self.saved_input(2, self.src_input), self.src.shape)
        return masked(g / masked(x, own, 1.0), own), Gather(self.dim)(g, index) / src

    def _prod_grads(self, xp, gy, own):
        """d(product)/d(element): the product of the others, exact where some of them are zero."""
        self_zero = (self.x == 0) & own
        zeros = self_zero.astype(np.int64)
        xp.add.at(zeros, self.key, (self.src == 0).astype(np.int64))
        nonzero = xp.where(own & ~self_zero, self.x, 1).astype(gy.dtype)
        _multiply_at.at(nonzero, self.key, xp.where(self.src == 0, 1, self.src).astype(gy.dtype))
        g_self = xp.where(own, gy * _product_of_others(xp, self.x, self_zero, zeros, nonzero), 0)
        g_src = gy[self.key] * _product_of_others(xp, self.src, self.src == 0, zeros[self.key], nonzero[self.key])
        return g_self, g_src

    def _extreme_grads(self, xp, gy, own):
        """amax/amin: the gradient shared evenly among the values equal to the result (the input's own
        value counted even when left out, as PyTorch counts it)."""
        self_wins = self.x == self.y
        src_wins = self.src == self.y[self.key]
        ties = self_wins.astype(gy.dtype)
        xp.add.at(ties, self.key, src_wins.astype(gy.dtype))
        share = gy / xp.maximum(ties, 1)
        return share * (self_wins & own), share[self.key] * src_wins


def _head_tensor(t, shape):
    """The leading block of tensor ``t`` with ``shape`` (``t`` as it is when it has that shape)."""
    return t if tuple(t.shape) == tuple(shape) else t[tuple(slice(0, n) for n in shape)]


def _product_of_others(xp, values, is_zero, zero_count, nonzero_product):
    """The product of the other values that met each value: ``nonzero_product / value`` when there is
    no zero, the nonzero product for the one zero, and 0 wherever another value is zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.where(is_zero, xp.where(zero_count == 1, nonzero_product, 0),
                        xp.where(zero_count == 0, nonzero_product / values, 0))


def _scatter_reduce(input, dim, index, src, reduce, include_self, inplace):
    index = _index_array(index, "scatter_reduce")
    reduce = ALIASES.get(reduce, reduce)
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    src = as_operand(src, like=input)
    if not isinstance(src, Tensor) or src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = wrap_dim(dim, input.ndim)
    _check_along("scatter_reduce", tuple(input.shape), d, tuple(index.shape), tuple(src.shape))
    _check_bounds(index._data, input.shape[d], d)
    return ScatterReduce(d, reduce, include_self, inplace)(input, index, src)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with ``src``'s values reduced in at ``index`` along ``dim`` (see the module doc)."""
    return _scatter_reduce(input, dim, index, src, reduce, include_self, False)


def scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    return _scatter_reduce(input, dim, index, src, reduce, include_self, True)


register_method(scatter_reduce)
register_method(scatter_reduce_)

__all__ = ["scatter_reduce"]
