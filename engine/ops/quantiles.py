"""quantile and nanquantile: find the elements at q's rank along the dim, then read (and interpolate) them.

Composed of ``gather`` (at the positions torch's selection finds) and arithmetic, so the gradient goes to the
one or two elements each quantile reads, weighted by the interpolation, as in PyTorch, and, for linear
interpolation, to a tensor ``q`` through the weight. The order puts NaN last: a slice holding NaN reads
its last element (quantile), and one of only NaN reads its first (nanquantile), which gives NaN and
sends the gradient where PyTorch sends it. Only "linear" and "midpoint" blend two elements (with
torch's two-sided lerp); the others read one, so an infinity stays itself.
"""
import numbers

import numpy as np

from .. import _dtype, backends
from ..amp import autocast_mode
from ..autograd.function import Function
from ..tensor import Tensor, _new, register_method
from .elementwise import where
from ._common import wrap_dim, xp_of
from .indexing import gather
from .shape import flatten, movedim, squeeze, unsqueeze
from .sorting import REPLAY_MAX, torch_cpu_ranks

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(input, q, interpolation):
    """PyTorch's argument checks in its order (a scalar q's range first, the tensors' after the interpolation;
    its messages say quantile() for nanquantile too); returns q as a 1-d array and whether it was a scalar."""
    scalar = isinstance(q, numbers.Real)
    if scalar and not 0 <= q <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(q):g}")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or "
                           f"nearest, but got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if not scalar and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not scalar and q.dtype is not input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if not scalar and q.device != input.device:
        raise RuntimeError("quantile() q tensor must be on the same device as the input tensor")
    xp = xp_of(input._data)
    values = xp.asarray([q], input._data.dtype) if scalar else q._data.reshape(-1)
    if not scalar and not bool(((values >= 0) & (values <= 1)).all()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    return values, scalar or q.ndim == 0


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    qs, scalar_q = _check(input, q, interpolation)
    xp = xp_of(input._data)
    if dim is None:
        rows = flatten(input)
    else:
        rows = movedim(input, wrap_dim(dim, input.ndim), -1) if input.ndim else input.reshape(1)
    n = rows.shape[-1]
    nan = xp.isnan(rows._data)
    count = n - nan.sum(axis=-1, keepdims=True) if ignore_nan else xp.full(tuple(rows.shape[:-1]) + (1,), n)
    rank = qs * (xp.maximum(count, 1) - 1)
    if not ignore_nan:
        rank = xp.where(nan.any(axis=-1, keepdims=True), n - 1, rank)
    if interpolation in ("lower", "higher", "nearest"):
        pick = {"lower": xp.floor, "higher": xp.ceil, "nearest": xp.round}[interpolation](rank)
        at, _ = _positions(rows._data, pick, pick)
        out = movedim(gather(rows, -1, _new(at)), -1, 0)
    else:
        below = xp.floor(rank)
        at_low, at_high = _positions(rows._data, below, xp.ceil(rank))
        low, high = gather(rows, -1, _new(at_low)), gather(rows, -1, _new(at_high))
        if interpolation == "midpoint":
            weight = _new(xp.full(rank.shape, 0.5, input._data.dtype))
        else:
            weight = _new((rank - below).astype(input._data.dtype))
            if isinstance(q, Tensor) and q.requires_grad:
                fixed = (qs * (count - 1) < 0) if ignore_nan else nan.any(axis=-1, keepdims=True)
                weight = weight + _rank_change(q, count, xp.broadcast_to(fixed, rank.shape))
        out = movedim(Lerp()(low, high, weight), -1, 0)
    if keepdim:
        out = _keep_dims(out, input.ndim, dim)
    return squeeze(out, 0) if scalar_q else out


def _positions(data, low, high):
    """Where along the last axis of ``data`` its ``low``-th and ``high``-th smallest values (NaN largest) lie, the
    ranks given as float arrays shaped as ``data`` but for their last axis (one per q). With one q, the ones
    torch's CPU selection picks among equal values (so the gradient goes where torch's goes): on the GPU too,
    through the host (as topk and kthvalue do), unless a CUDA graph is being captured or the rows are too long
    to replay; else a stable order's."""
    xp = xp_of(data)
    low, high = low.astype(np.int64), high.astype(np.int64)
    n = data.shape[-1]
    if low.shape[-1] == 1 and (xp is np or (n <= REPLAY_MAX and not backends.runtime(data).capturing())):
        rows, ranks_low, ranks_high = (data, low, high) if xp is np else map(xp.asnumpy, (data, low, high))
        at_low, at_high = torch_cpu_ranks(rows.reshape(-1, n), ranks_low.reshape(-1, 1), ranks_high.reshape(-1, 1))
        return xp.asarray(at_low.reshape(low.shape)), xp.asarray(at_high.reshape(high.shape))
    order = xp.argsort(data, axis=-1, kind="stable")
    return xp.take_along_axis(order, low, -1), xp.take_along_axis(order, high, -1)


def _rank_change(q, count, fixed):
    """Zero, with q's gradient through the rank q * (count - 1): the count less one, cut off (not multiplied by 0:
    NaN stays out) where the rank is ``fixed``: rows holding NaN for quantile, rows of only NaN for nanquantile
    where q > 0 (torch clamps a negative rank, and -0.0 is not negative)."""
    xp = xp_of(fixed)
    slope = _new(((count - 1) * xp.ones(fixed.shape)).astype(q._data.dtype))
    return where(_new(xp.ascontiguousarray(fixed)), 0.0, (q.reshape(-1) - q.detach().reshape(-1)) * slope)


class Lerp(Function):
    """torch's lerp of equal-shaped ``low``, ``high`` and ``weight``: from ``low`` below a weight of 0.5, from
    ``high`` above (exact at both ends); its gradients are torch's, one formula each (not a ``where`` of two
    branches, whose unchosen one would turn an infinite step times a zero gradient into NaN)."""

    def forward(self, low, high, weight):
        xp = xp_of(low)
        self.low, self.high, self.weight = low, high, weight
        with np.errstate(invalid="ignore"):
            step = high - low
            return xp.where(weight < 0.5, low + weight * step, high - step * (1 - weight)).astype(low.dtype)

    def backward(self, gy):
        with np.errstate(invalid="ignore"):
            return gy * (1 - self.weight), gy * self.weight, gy * (self.high - self.low)

    def backward_tensors(self, gy):
        low, high, weight = (self.saved_input(i, a) for i, a in enumerate((self.low, self.high, self.weight)))
        return gy * (1 - weight), gy * weight, gy * (high - low)


def _keep_dims(out, ndim, dim):
    """Put back the reduced dim(s) as size 1 after q's leading dim."""
    if dim is None:
        return out.reshape((out.shape[0],) + (1,) * ndim)
    return unsqueeze(out, 1 + wrap_dim(dim, ndim)) if ndim else out


@autocast_mode.float32("cpu")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-quantiles (a scalar or 1-d tensor in [0, 1]) of ``input`` along ``dim`` (all of it
    when None); a 1-d q puts its dim first. A slice holding NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


@autocast_mode.float32("cpu")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaN (a slice of only NaN gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


register_method(quantile)
register_method(nanquantile)

__all__ = ["quantile", "nanquantile"]
