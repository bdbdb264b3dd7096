"""Sorting and selection with PyTorch semantics: sort, argsort, topk, kthvalue, msort, unique,
unique_consecutive, searchsorted, bucketize.

Sorts are stable (equal elements keep their order, also when descending); NaN sorts as the
largest value. Gradients of the selected values scatter back to their source positions.
"""
import math

import numpy as np

from .. import _dtype, backends
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


# ---- which of equal values torch's CPU kernels pick -----------------------------------------------
def _before(x, y):
    """Ascending order with NaN last (torch's CPU selection comparator)."""
    return x < y or (y != y and x == x)


def _after(x, y):
    """Descending order with NaN first."""
    return x > y or (x != x and y == y)


#: the longest row replayed step for step (``_Replay`` runs in Python at about 0.3 us per comparison: a row of
#: 4096 equal values costs ~15 ms in topk, a row of 120,000 ~0.5 s); in longer rows equal values are taken in
#: index order, which may differ from torch's choice among them (never the values)
REPLAY_MAX = 4096


def _same_as(rows, values):
    """How many entries of each row of ``rows`` equal that row's value in ``values`` (m x 1; NaN equals NaN)."""
    same = rows == values
    if rows.dtype.kind in "fc":
        same |= (rows != rows) & (values != values)
    return same.sum(-1)


class _Replay:
    """One row's values with their positions, reordered as libstdc++'s ``nth_element``, ``sort`` and
    ``partial_sort`` (which torch's CPU topk and quantile call) and torch's own quickselect (its kthvalue)
    reorder them: step for step, so that among equal values (and NaNs) the one picked, and the order of an
    unsorted topk, are torch's. Plain Python on lists: it runs only on rows where equal values make it matter."""

    def __init__(self, values, less):
        self.v, self.i, self.less = list(values), list(range(len(values))), less

    def lt(self, a, b):
        return self.less(self.v[a], self.v[b])

    def swap(self, a, b):
        v, i = self.v, self.i
        v[a], v[b], i[a], i[b] = v[b], v[a], i[b], i[a]

    def move(self, to, frm):
        self.v[to], self.i[to] = self.v[frm], self.i[frm]

    def insert_back(self, pos, item):
        """Shift ``item`` (value, position) left from ``pos`` past every element it orders before."""
        while self.less(item[0], self.v[pos - 1]):
            self.move(pos, pos - 1)
            pos -= 1
        self.v[pos], self.i[pos] = item

    def insertion_sort(self, first, last):
        for pos in range(first + 1, last):
            item = (self.v[pos], self.i[pos])
            if self.less(item[0], self.v[first]):
                for j in range(pos, first, -1):
                    self.move(j, j - 1)
                self.v[first], self.i[first] = item
            else:
                self.insert_back(pos, item)

    def partition_pivot(self, first, last):
        """The median of three moved to ``first``, then an unguarded partition of the rest around it."""
        a, b, c, lt = first + 1, first + (last - first) // 2, last - 1, self.lt
        if lt(a, b):
            median = b if lt(b, c) else c if lt(a, c) else a
        else:
            median = a if lt(a, c) else c if lt(b, c) else b
        self.swap(first, median)
        lo, hi = first + 1, last
        while True:
            while lt(lo, first):
                lo += 1
            hi -= 1
            while lt(first, hi):
                hi -= 1
            if lo >= hi:
                return lo
            self.swap(lo, hi)
            lo += 1

    def sift(self, first, hole, length, item):
        """Fill the heap's ``hole`` down to a leaf, then push ``item`` up from there."""
        top = second = hole
        while second < (length - 1) // 2:
            second = 2 * (second + 1)
            if self.lt(first + second, first + second - 1):
                second -= 1
            self.move(first + hole, first + second)
            hole = second
        if length % 2 == 0 and second == (length - 2) // 2:
            second = 2 * (second + 1)
            self.move(first + hole, first + second - 1)
            hole = second - 1
        parent = (hole - 1) // 2
        while hole > top and self.less(self.v[first + parent], item[0]):
            self.move(first + hole, first + parent)
            hole, parent = parent, (parent - 1) // 2
        self.v[first + hole], self.i[first + hole] = item

    def pop_heap(self, first, last, result):
        item = (self.v[result], self.i[result])
        self.move(result, first)
        self.sift(first, 0, last - first, item)

    def heap_select(self, first, middle, last):
        length = middle - first
        for parent in range((length - 2) // 2, -1, -1):
            self.sift(first, parent, length, (self.v[first + parent], self.i[first + parent]))
        for pos in range(middle, last):
            if self.lt(pos, first):
                self.pop_heap(first, middle, pos)

    def partial_sort(self, first, middle, last):
        self.heap_select(first, middle, last)
        for end in range(middle - 1, first, -1):
            self.pop_heap(first, end, end)

    def sort(self, first, last):
        if last - first < 2:
            return
        self.introsort(first, last, 2 * int(math.log2(last - first)))
        self.insertion_sort(first, min(last, first + 16))
        for pos in range(first + 16, last):
            self.insert_back(pos, (self.v[pos], self.i[pos]))

    def introsort(self, first, last, depth):
        while last - first > 16:
            if depth == 0:
                self.partial_sort(first, last, last)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            self.introsort(cut, last, depth)
            last = cut

    def nth_element(self, first, nth, last):
        depth = 2 * int(math.log2(last - first)) if last > first else 0
        while last - first > 3:
            if depth == 0:
                self.heap_select(first, nth + 1, last)
                self.swap(first, nth)
                return
            depth -= 1
            cut = self.partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self.insertion_sort(first, last)

    def quickselect(self, k):
        """torch's kthvalue: a median-of-three quickselect of the ``k``-th (0-based) smallest."""
        gt = self.lt
        left, right = 0, len(self.v) - 1
        while right > left:
            if right == left + 1:
                if gt(right, left):
                    self.swap(left, right)
                return
            self.swap(left + (right - left) // 2, left + 1)
            for a, b in ((left + 1, right), (left, right), (left + 1, left)):
                if gt(b, a):
                    self.swap(a, b)
            i, j = left + 1, right
            while True:
                i += 1
                while self.lt(i, left):
                    i += 1
                j -= 1
                while self.lt(left, j):
                    j -= 1
                if j < i:
                    break
                self.swap(i, j)
            self.swap(left, j)
            if j <= k:
                left = i
            if j >= k:
                right = j - 1


def _equal_neighbours(ordered):
    """Where each sorted value equals the next one (NaN equals NaN), along the last axis (one shorter)."""
    later, earlier = ordered[..., 1:], ordered[..., :-1]
    same = later == earlier
    if ordered.dtype.kind in "fc":
        same |= (later != later) & (earlier != earlier)
    return same


def _tied(ordered, ranks):
    """Rows (of ascending ``ordered``) whose value at any of ``ranks`` (m x R) has an equal elsewhere."""
    n = ordered.shape[-1]
    same = _equal_neighbours(ordered)
    pad = np.zeros(ordered.shape[:-1] + (1,), bool)
    left, right = np.concatenate([pad, same], -1), np.concatenate([same, pad], -1)
    hit = np.take_along_axis(left | right, np.clip(ranks, 0, n - 1), -1)
    return hit.any(-1)


def torch_cpu_ranks(rows, low, high):
    """Positions along the last axis of ``rows`` (m x n, numpy) of the ``low``-th and ``high``-th smallest (m x 1
    arrays, low <= high; NaN largest) as torch's CPU quantile finds them: ``nth_element`` at ``high``, then at
    ``low`` among those before it. A stable order gives them where the values there have no equal."""
    order = np.argsort(rows, axis=-1, kind="stable")
    at_low, at_high = np.take_along_axis(order, low, -1), np.take_along_axis(order, high, -1)
    if rows.shape[-1] > REPLAY_MAX:
        return at_low, at_high
    ordered = np.take_along_axis(rows, order, -1)
    for r in np.flatnonzero(_tied(ordered, np.concatenate([low, high], -1))):
        lo, hi = int(low[r, 0]), int(high[r, 0])
        row = _Replay(rows[r].tolist(), _before)
        row.nth_element(0, hi, len(row.v))
        if hi > lo:
            row.nth_element(0, lo, hi)
        at_low[r, 0], at_high[r, 0] = row.i[lo], row.i[hi]
    return at_low, at_high


def _rows_along(x, axis):
    """``x`` with ``axis`` last, as (rows, n), and the function putting such an array back."""
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    return rows, lambda out: np.moveaxis(out.reshape(moved.shape[:-1] + (out.shape[-1],)), -1, axis)


class TopK(Select):
    """The ``k`` largest (or smallest) values along ``axis``, sorted (or, unsorted, in the order torch's CPU
    kernel leaves them). On the CPU, rows where equal values make the choice or the order ambiguous are replayed
    as torch's kernel runs: ``partial_sort`` when k * 64 <= n, else ``nth_element`` then a sort of the first k - 1."""

    def __init__(self, axis, k, largest, sorted):
        super().__init__(axis)
        self.k, self.largest, self.sorted = k, largest, sorted

    def indices(self, xp, x):
        n, k, axis = x.shape[self.axis], self.k, self.axis
        if 0 < k < n:
            kth = n - k if self.largest else k - 1
            part = xp.argpartition(x, kth, axis=axis)
            part = xp.take(part, xp.arange(n - k, n) if self.largest else xp.arange(k), axis=axis)
            order = _stable_argsort(xp, xp.take_along_axis(x, part, axis), axis, self.largest)
            picked = xp.take_along_axis(part, order, axis)
        else:
            picked = xp.take(_stable_argsort(xp, x, axis, self.largest), xp.arange(k), axis=axis)
        if k == 0:
            return picked
        return _on_host(xp, self._replayed, x, picked, x.shape[self.axis] if x.ndim else 1)

    def _replayed(self, x, picked):
        rows, back = _rows_along(x, self.axis)
        chosen, _ = _rows_along(picked, self.axis)
        n, k = rows.shape[-1], self.k
        if n > REPLAY_MAX:
            return picked
        chosen = chosen.copy()
        partial = k * 64 <= n
        if self.sorted or partial:  # equal values among the picked ones, or one left out equal to the last
            values = np.take_along_axis(rows, chosen, -1)
            replay = _equal_neighbours(values).any(-1)
            replay |= _same_as(rows, values[:, -1:]) > _same_as(values, values[:, -1:])
        else:  # the order nth_element leaves
            replay = np.ones(rows.shape[0], bool)
        for r in np.flatnonzero(replay):
            row = _Replay(rows[r].tolist(), _after if self.largest else _before)
            if partial:
                row.partial_sort(0, k, n)
            else:
                row.nth_element(0, k - 1, n)
                if self.sorted:
                    row.sort(0, k - 1)
            chosen[r] = row.i[:k]
        return back(chosen)


class KthValue(Select):
    """The ``k``-th smallest value (1-based) along ``axis``; on the CPU, among equal values the one torch's
    quickselect picks."""

    def __init__(self, axis, squeeze, k):
        super().__init__(axis, squeeze)
        self.k = k

    def indices(self, xp, x):
        part = xp.argpartition(x, self.k - 1, axis=self.axis)
        picked = xp.take(part, xp.asarray([self.k - 1]), axis=self.axis)
        return _on_host(xp, self._replayed, x, picked, x.shape[self.axis] if x.ndim else 1)

    def _replayed(self, x, picked):
        rows, back = _rows_along(x, self.axis)
        chosen, _ = _rows_along(picked, self.axis)
        if rows.shape[-1] > REPLAY_MAX:
            return picked
        chosen = chosen.copy()
        tied = _same_as(rows, np.take_along_axis(rows, chosen, -1)) > 1
        for r in np.flatnonzero(tied):
            row = _Replay(rows[r].tolist(), _before)
            row.quickselect(self.k - 1)
            chosen[r, 0] = row.i[self.k - 1]
        return back(chosen)


def _on_host(xp, replayed, x, picked, n):
    """``replayed(x, picked)`` (numpy arrays), which settles equal values as torch's CPU kernels do: on the GPU too,
    through the host, so that CUDA results equal CPU ones, except where the rows (of length ``n``) are too long to
    replay (nothing to do) or a CUDA graph is being captured (which cannot wait for the host)."""
    if xp is np:
        return replayed(x, picked)
    if n > REPLAY_MAX or backends.runtime(x).capturing():
        return picked
    return xp.asarray(replayed(xp.asnumpy(x), xp.asnumpy(picked)))


def _axis(input, dim):
    return wrap_dim(int(dim), input.ndim) if input.ndim else 0


def sort(input, dim=-1, descending=False, stable=False):
    """(values, indices) sorted along ``dim``; always stable."""
    axis = _axis(input, dim)
    refuse_complex("sort", input)  # numpy would order by real then imaginary part; torch has no order for complex
    values, indices = SortSelect(axis, descending)(input)
    return return_type("sort")(values, indices)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim``."""
    return sort(input, dim, descending, stable).indices


def msort(input):
    """Sorted along the first dim."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) entries along ``dim``."""
    axis = _axis(input, dim)
    size = input.shape[axis] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    refuse_complex("topk", input)
    if input.dtype is _dtype.bool_:
        raise RuntimeError(f"topk does not support bool dtypes on {input.device.type.upper()}")
    values, indices = TopK(axis, int(k), largest, sorted)(input)
    return return_type("topk")(values, indices)


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the ``k``-th smallest entry along ``dim``."""
    axis = _axis(input, dim)
    if input.ndim:
        _check_nonempty(input, (axis,), "kthvalue")
    size = input.shape[axis] if input.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    refuse_complex("kthvalue", input)
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


def _refuse_complex_unique(input, by_slices):
    """torch's refusal of complex input: its kernel by slices is "unique_dim", the flat one "unique"."""
    if input.dtype.is_complex:
        kernel = "unique_dim" if by_slices else "unique"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.title}'")


def _slices_axis(dim, ndim):
    """``dim`` wrapped; a 0-dim tensor has no slices to compare."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(int(dim), ndim)


def _rows(x, axis):
    """``x`` with ``axis`` moved first and the rest flattened (one row per slice); torch refuses an empty
    dim other than ``axis``, and more than one empty dim."""
    if x.size == 0 and x.shape[axis] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    if x.shape.count(0) > 1:  # torch's message ends in a space
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
    xp = xp_of(x)
    moved = xp.moveaxis(x, axis, 0)
    return moved, moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique elements (or unique slices along ``dim``) with optional inverse and counts."""
    _refuse_complex_unique(input, dim is not None)
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
    axis = _slices_axis(dim, x.ndim)
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
    _refuse_complex_unique(input, dim is not None and not (dim == 0 and input.ndim == 1))
    x = input.detach()._data
    xp = xp_of(x)
    if dim is None:
        flat = x.reshape(-1)
        new = xp.concatenate([xp.ones(min(flat.size, 1), bool), flat[1:] != flat[:-1]])
        starts = xp.flatnonzero(new)
        inverse = (xp.cumsum(new) - 1).reshape(x.shape)
        return _group_outputs(xp, flat[starts], starts, inverse, return_inverse, return_counts, flat.size)
    axis = _slices_axis(dim, x.ndim)
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
    rows = seq.reshape(int(np.prod(seq.shape[:-1])), n)
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
    """Indices where ``input`` would be inserted to keep ``sorted_sequence`` sorted. Both compare in their
    promoted dtype, as torch's (a Python scalar or 0-dim value takes a 1-d sequence's type of its kind: -2
    wraps into uint8); a bool or complex one is refused, unless there is nothing to search for."""
    _check_side(side, right)
    right = right or side == "right"
    values = as_operand(input, like=sorted_sequence)
    seq = sorted_sequence
    if sorter is not None:
        if sorter.dtype is not _dtype.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype.title}")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(seq.shape)}and got sorter tensor {list(sorter.shape)}")
    if (not isinstance(values, Tensor) or values.ndim == 0) and seq.ndim != 1:
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                           f"is 1, but we got boundaries tensor dim({seq.ndim}) and input value's dim(0) numel(1)")
    if seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(values.shape)}")
    dtype = _dtype.result_type(seq, values)
    if not isinstance(values, Tensor):
        values = _new(xp_of(seq._data).asarray(values)).to(dtype)
    elif values.numel() == 0:
        return values.new_zeros(values.shape, dtype=_dtype.int32 if out_int32 else _dtype.int64)
    if dtype is _dtype.bool_ or dtype.is_complex:
        raise NotImplementedError(f"\"searchsorted_out_{seq.device.type}\" not implemented for '{dtype.title}'")
    if sorter is not None and sorter.numel() and not bool(((sorter >= 0) & (sorter < seq.shape[-1])).all()):
        raise RuntimeError("torch.searchsorted(): sorter index out of range")

    def compute(s, v, order):
        if order is not None:
            s = xp_of(s).take_along_axis(s, order, -1)
        return _search(s, v, right, out_int32)
    return Compute(compute)(seq.to(dtype), values.to(dtype), sorter)


def _check_side(side, right):
    """torch's checks of ``side`` against ``right``."""
    if side is None:
        return
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left while "
                           "right was True")


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """Bucket index of each element of ``input`` among the sorted 1-D ``boundaries``."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


for _fn in (sort, argsort, msort, topk, kthvalue, unique, unique_consecutive):
    register_method(_fn)

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted",
           "bucketize"]
