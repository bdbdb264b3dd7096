"""Sorting and selection with PyTorch semantics: sort, argsort, topk, kthvalue, msort, unique,
unique_consecutive, searchsorted, bucketize.

Sorts are stable (equal elements keep their order, also when descending); NaN sorts as the
largest value. Gradients of the selected values scatter back to their source positions.
"""
import numpy as np

from .. import _dtype
from .._layout import inverse_permutation, pointwise_order
from ..tensor import Tensor, _new, register_method
from ._common import as_operand, wrap_dim, xp_of
from .reduction import Compute, Select, _check_nonempty, return_type
from .complex_refusals import refuse_complex


def _stable_argsort(xp, x, axis, descending):
    """Stable ascending order, or stable descending order (ties keep their original order)."""
    if not descending:
        return xp.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    return n - 1 - xp.flip(xp.argsort(xp.flip(x, axis), axis=axis, kind="stable"), axis)


class SortSelect(Select):
    """Sorted values along ``axis`` with the indices that sort them, both laid out as the input (as torch's: a
    transposed input gives transposed results); a row-major input takes the plain path."""

    lays_out_results = True

    def __init__(self, axis, descending):
        super().__init__(axis)
        self.descending = descending

    def forward(self, x):
        if x.flags.c_contiguous:
            return super().forward(x)
        outer_first = tuple(reversed(pointwise_order([x], x.shape)))
        if outer_first == tuple(range(x.ndim)):
            return super().forward(x)
        # sort the array seen in its memory order (a view), then view the row-major results back
        back = inverse_permutation(outer_first)
        axis, self.axis = self.axis, outer_first.index(self.axis)
        values, indices = super().forward(x.transpose(outer_first))
        self.axis, self.shape, self.idx = axis, x.shape, self.idx.transpose(back)
        return values.transpose(back), indices.transpose(back)

    def indices(self, xp, x):
        return _stable_argsort(xp, x, self.axis, self.descending)


class TopK(Select):
    """The ``k`` largest (or smallest) values along ``axis``, sorted."""

    def __init__(self, axis, k, largest):
        super().__init__(axis)
        self.k, self.largest = k, largest

    def indices(self, xp, x):
        n, k, axis = x.shape[self.axis], self.k, self.axis
        if 0 < k < n:
            kth = n - k if self.largest else k - 1
            part = xp.argpartition(x, kth, axis=axis)
            part = xp.take(part, xp.arange(n - k, n) if self.largest else xp.arange(k), axis=axis)
            order = _stable_argsort(xp, xp.take_along_axis(x, part, axis), axis, self.largest)
            return xp.take_along_axis(part, order, axis)
        order = _stable_argsort(xp, x, axis, self.largest)
        return xp.take(order, xp.arange(k), axis=axis)


class KthValue(Select):
    """The ``k``-th smallest value (1-based) along ``axis``."""

    def __init__(self, axis, squeeze, k):
        super().__init__(axis, squeeze)
        self.k = k

    def indices(self, xp, x):
        part = xp.argpartition(x, self.k - 1, axis=self.axis)
        return xp.take(part, xp.asarray([self.k - 1]), axis=self.axis)


def _axis(input, dim):
    return wrap_dim(int(dim), input.ndim) if input.ndim else 0


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) sorted along ``dim``; always stable."""
    refuse_complex("sort", input)  # numpy would order by real then imaginary part; torch has no order for complex
    values, indices = SortSelect(_axis(input, dim), descending)(input)
    return return_type("sort")(values, indices)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def msort(input):
    """Sorted along the first dim."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) entries along ``dim``."""
    refuse_complex("topk", input)
    axis = _axis(input, dim)
    size = input.shape[axis] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if input.dtype is _dtype.bool_:
        raise RuntimeError(f"topk does not support bool dtypes on {input.device.type.upper()}")
    values, indices = TopK(axis, int(k), largest)(input)
    return return_type("topk")(values, indices)


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the ``k``-th smallest entry along ``dim``."""
    refuse_complex("kthvalue", input)
    axis = _axis(input, dim)
    if input.ndim:
        _check_nonempty(input, (axis,), "kthvalue")
    size = input.shape[axis] if input.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    if input.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"kthvalue_{input.device.type}\" not implemented for 'Bool'")
    values, indices = KthValue(axis, not keepdim, int(k))(input)
    return return_type("kthvalue")(values, indices)


# ---- unique --------------------------------------------------------------------------------------
def _group_outputs(xp, values, starts, inverse, return_inverse, return_counts, n):
    """Package (values[, inverse][, counts]) from the first index of each group."""
    out = [_new(values)]
    if return_inverse:
        out.append(_new(inverse.astype(np.int64)))
    if return_counts:
        ends = xp.concatenate([starts[1:], xp.asarray([n])])
        out.append(_new((ends - starts).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


def _rows(x, axis):
    """``x`` with ``axis`` moved first and the rest flattened (one row per slice); torch refuses an empty
    dim other than ``axis``."""
    if x.size == 0 and x.shape[axis] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    xp = xp_of(x)
    moved = xp.moveaxis(x, axis, 0)
    return moved, moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique elements (or unique slices along ``dim``) with optional inverse and counts."""
    refuse_complex("unique", input)
    x = input.detach()._data
    xp = xp_of(x)
    if dim is None:
        flat = x.reshape(-1)
        order = xp.argsort(flat, kind="stable")
        ordered = flat[order]
        new = xp.concatenate([xp.ones(min(flat.size, 1), bool), ordered[1:] != ordered[:-1]])
        group = xp.cumsum(new) - 1
        inverse = xp.empty(flat.size, np.int64)
        inverse[order] = group
        starts = xp.flatnonzero(new)
        return _group_outputs(xp, ordered[starts], starts, inverse.reshape(x.shape), return_inverse,
                              return_counts, flat.size)
    axis = wrap_dim(int(dim), x.ndim)
    moved, rows = _rows(x, axis)
    order = xp.lexsort(rows.T[::-1]) if rows.shape[1] else xp.arange(rows.shape[0])
    ordered = rows[order]
    new = xp.concatenate([xp.ones(min(len(rows), 1), bool), (ordered[1:] != ordered[:-1]).any(axis=1)])
    inverse = xp.empty(len(rows), np.int64)
    inverse[order] = xp.cumsum(new) - 1
    starts = xp.flatnonzero(new)
    values = xp.moveaxis(moved[order[starts]], 0, axis)
    return _group_outputs(xp, values, starts, inverse, return_inverse, return_counts, len(rows))


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    x = input.detach()._data
    xp = xp_of(x)
    if dim is None:
        flat = x.reshape(-1)
        new = xp.concatenate([xp.ones(min(flat.size, 1), bool), flat[1:] != flat[:-1]])
        starts = xp.flatnonzero(new)
        inverse = (xp.cumsum(new) - 1).reshape(x.shape)
        return _group_outputs(xp, flat[starts], starts, inverse, return_inverse, return_counts, flat.size)
    axis = wrap_dim(int(dim), x.ndim)
    moved, rows = _rows(x, axis)
    new = xp.concatenate([xp.ones(min(len(rows), 1), bool), (rows[1:] != rows[:-1]).any(axis=1)])
    starts = xp.flatnonzero(new)
    values = xp.moveaxis(moved[starts], 0, axis)
    return _group_outputs(xp, values, starts, xp.cumsum(new) - 1, return_inverse, return_counts, len(rows))


# ---- searchsorted, bucketize -------------------------------------------------------------------
def _search(seq, values, right, out_int32):
    """Insertion points of ``values`` in the sorted last dim of ``seq`` (1-D, or batched with values' leading
    dims) by torch's binary search, comparison for comparison, so that NaN in either lands where torch's does:
    the lower bound moves past a probe unless probe >= value, the upper bound unless probe > value (a NaN value
    goes past every probe; numpy's search orders NaN last instead). A fixed number of halvings, all rows at once."""
    xp = xp_of(seq)
    n = seq.shape[-1]
    rows = seq.reshape(-1, n) if seq.ndim > 1 else seq.reshape(1, n)
    wanted = values.reshape(rows.shape[0], values.shape[-1] if seq.ndim > 1 else values.size)
    start = xp.zeros(wanted.shape, np.int64)
    end = xp.full(wanted.shape, n, np.int64)
    row = xp.arange(rows.shape[0]).reshape(-1, 1)
    for _ in range(n.bit_length()):
        active = start < end
        mid = start + ((end - start) >> 1)
        probe = rows[row, xp.minimum(mid, n - 1)]
        onward = ~(probe > wanted) if right else ~(probe >= wanted)
        start = xp.where(active & onward, mid + 1, start)
        end = xp.where(active & ~onward, mid, end)
    return start.reshape(values.shape).astype(np.int32 if out_int32 else np.int64)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Indices where ``input`` would be inserted to keep ``sorted_sequence`` sorted."""
    refuse_complex("searchsorted", sorted_sequence, input)
    right = right or side == "right"
    values = as_operand(input, like=sorted_sequence)
    scalar = not isinstance(values, Tensor)
    if scalar:
        values = _new(xp_of(sorted_sequence._data).asarray(values, sorted_sequence._data.dtype))
    seq = sorted_sequence
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")

    def compute(s, v, order):
        if order is not None:
            s = xp_of(s).take_along_axis(s, order, -1)
        return _search(s, v, right, out_int32)
    return Compute(compute)(seq, values, sorter)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Bucket index of each element of ``input`` among the sorted 1-D ``boundaries``."""
    refuse_complex("bucketize", input, boundaries)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


for _fn in (sort, argsort, msort, topk, kthvalue, unique, unique_consecutive):
    register_method(_fn)

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted",
           "bucketize"]
