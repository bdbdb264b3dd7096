"""Converters of the shape ops: reshape, permute, expand, repeat, repeat_interleave, cat, stack, split, basic
indexing, flip, roll, windows (``Tensor.unfold``), pad, tril/triu and diagonal.

A traced reshape holds concrete sizes; a size that follows a dynamic input dimension is written as 0
(copy the input's) when it is that same dimension, as -1 when it is the only one left, and otherwise
computed from the runtime shape (``OpContext.ints``).
"""
import numbers

import numpy as np

from ..nn.functional.padding import Pad
from ..nn.graph.plan import SLOT
from ..ops import creation
from ..ops import rearrange
from ..ops import shape as sh
from .table import converts

_BIG = 2 ** 62


def _dim_pair(ctx, i, axis):
    """(size in the exported trace, size in the probe) of dimension ``axis`` of argument ``i``."""
    slot = ctx.arg(i)
    return ctx.conversion.capture.shapes[slot][axis], ctx.conversion.variation.b.shapes[slot][axis]


def _same_size(ctx, in_shape, axis, varying, k):
    """Whether entry ``k`` of a target shape is the size of input 0's dim ``axis`` in both traces (fixed in both,
    or following the input the same way)."""
    dynamic = ctx.kind(0) == SLOT and axis in ctx.dynamic(0)
    if k in varying:
        return dynamic and _dim_pair(ctx, 0, axis) == varying[k]
    return not dynamic


@converts(sh.Reshape)
def reshape(ctx):
    """The leading sizes equal to the input's are copied (0) even when they did not change between the traces
    (a batch of detections capped at the same number twice can be smaller on another input, as torch's traced
    ``x.view(x.size(0), -1)`` would follow it); of the other sizes that follow the input, a single one is -1 and
    more are computed at run time."""
    target = list(ctx.state["shape"])
    in_shape = ctx.in_shape(0)
    varying = {path[0]: pair for path, pair in ctx.varying_under("state", "shape").items()}
    has_zero = 0 in target or 0 in in_shape
    entries = list(target)
    copied = 0
    while (not has_zero and copied < min(len(target), len(in_shape)) and target[copied] == in_shape[copied]
           and _same_size(ctx, in_shape, copied, varying, copied)):
        entries[copied] = 0
        copied += 1
    left = {k: pair for k, pair in varying.items() if k >= copied}
    if len(left) == 1 and not has_zero:
        entries[next(iter(left))] = -1
        shape = ctx.g.ints(entries)
    else:
        shape = ctx.ints(None, entries, pairs=left)
    if has_zero:
        return ctx.g.node("Reshape", [ctx.input(0), shape], allowzero=1)
    return ctx.g.node("Reshape", [ctx.input(0), shape])


@converts(creation.FilledLike)
def filled_like(ctx):
    """``zeros_like`` and kin: the fill value expanded to the input's run-time shape."""
    return ctx.g.node("Expand", [ctx.g.constant(ctx.state["fill"] or 0, ctx.out_dtype()), ctx.shape_of(ctx.input(0))])


@converts(sh.Permute)
def permute(ctx):
    return ctx.g.node("Transpose", [ctx.input(0)], perm=list(ctx.state["dims"]))


@converts(sh.Expand)
def expand(ctx):
    """``Expand`` broadcasts both ways: a size equal to the input's own (following the input or not) is written
    as 1, so it keeps the input's size at run time."""
    target = list(ctx.state["shape"])
    varying = {path[0]: pair for path, pair in ctx.varying_under("state", "shape").items()}
    in_shape = ctx.in_shape(0)
    offset = len(target) - len(in_shape)
    left = {}
    for k in range(len(target)):
        axis = k - offset
        if axis >= 0 and target[k] == in_shape[axis] and _same_size(ctx, in_shape, axis, varying, k):
            target[k] = 1
        elif k in varying:
            left[k] = varying[k]
    return ctx.g.node("Expand", [ctx.input(0), ctx.ints(None, target, pairs=left)])


@converts(sh.Repeat)
def repeat(ctx):
    reps = list(ctx.state["reps"])
    x = ctx.input(0)
    extra = len(reps) - len(ctx.in_shape(0))
    if extra > 0:
        x = ctx.unsqueeze(x, list(range(extra)))
    return ctx.g.node("Tile", [x, ctx.ints(("state", "reps"), reps)])


@converts(sh.RepeatInterleave)
def repeat_interleave(ctx):
    """Each element's copies side by side along ``dim``: with one count, ``Tile`` on a new axis after ``dim``
    that ``Reshape`` merges back into it; with a count per element, a ``Gather`` of the repeated indices."""
    repeats = ctx.state["repeats"]
    dim = ctx.state["dim"]
    x = ctx.input(0)
    if not isinstance(repeats, numbers.Integral):
        indices = np.repeat(np.arange(len(repeats)), repeats)
        return ctx.g.node("Gather", [x, ctx.g.ints(indices.tolist())], axis=dim)
    rank = len(ctx.in_shape(0))
    reps = [1] * (rank + 1)
    reps[dim + 1] = repeats
    varying = {dim + 1: pair for pair in ctx.varying_under("state", "repeats").values()}
    tiled = ctx.g.node("Tile", [ctx.unsqueeze(x, [dim + 1]), ctx.ints(None, reps, pairs=varying)])
    pieces = [ctx.shape_of(x, 0, dim)] if dim > 0 else []
    pieces.append(ctx.g.ints([-1]))
    if dim + 1 < rank:
        pieces.append(ctx.shape_of(x, dim + 1, rank))
    shape = pieces[0] if len(pieces) == 1 else ctx.g.node("Concat", pieces, axis=0)
    return ctx.g.node("Reshape", [tiled, shape])


@converts(sh.Cat)
def cat(ctx):
    """``Concat`` of every input of the output's rank, empty ones too (the engine skips legacy empty 1-d
    inputs; which ones are empty can follow the data, and ONNX concatenates empty tensors as they are)."""
    dtype = ctx.state["dtype"]
    ctx.varying_under("state", "skip")
    rank = len(ctx.out_shape())
    parts = [ctx.input(i, dtype) for i in range(ctx.n_args()) if len(ctx.in_shape(i)) == rank]
    if len(parts) == 1:
        return ctx.g.node("Identity", parts)
    return ctx.g.node("Concat", parts, axis=ctx.state["dim"])


@converts(sh.Stack)
def stack(ctx):
    dim = ctx.state["dim"]
    dtype = ctx.state["dtype"]
    parts = [ctx.unsqueeze(ctx.input(i, dtype), [dim]) for i in range(ctx.n_args())]
    if len(parts) == 1:
        return parts[0]
    return ctx.g.node("Concat", parts, axis=dim)


@converts(sh.SplitViews)
def split_views(ctx):
    """Contiguous pieces covering the whole axis become one ``Split``; others are slices or gathers."""
    dim = ctx.state["dim"]
    parts = ctx.state["parts"]
    varying = ctx.varying_under("state", "parts")
    x = ctx.input(0)
    size = ctx.in_shape(0)[dim]
    contiguous = all(isinstance(p, tuple) for p in parts) and parts and parts[0][0] == 0 and parts[-1][1] == size \
        and all(p[1] == q[0] for p, q in zip(parts, parts[1:]))
    if contiguous and not varying and dim not in ctx.dynamic(0):
        return ctx.split(x, dim, [stop - start for start, stop in parts])
    outs = []
    for k, part in enumerate(parts):
        if isinstance(part, int):
            outs.append(ctx.g.node("Gather", [x, ctx.g.constant(np.int64(part))], axis=dim))
            continue
        bounds = [_bound(ctx, varying, (k, j), part[j], dim, j == 1) for j in range(2)]
        outs.append(ctx.g.node("Slice", [x, bounds[0], bounds[1], ctx.g.ints([dim])]))
    return outs


def _bound(ctx, varying, path, value, dim, is_stop):
    """One slice bound as an int64 [1] value; a stop at the end of a dynamic axis reads to its end."""
    pair = varying.get(path)
    if pair is None:
        return ctx.g.ints([value])
    if is_stop and ctx.dynamic(0) and dim in ctx.dynamic(0) and _dim_pair(ctx, 0, dim) == pair:
        return ctx.g.ints([_BIG])
    return ctx.dim(pair, f"a split bound along dim {dim}")


@converts(sh.Slice)
def slice_(ctx):
    """Basic indexing: one ONNX ``Slice`` for the slices and integers, ``Squeeze`` for the integers,
    ``Unsqueeze`` for the Nones."""
    key = list(ctx.state["key"])
    rank = len(ctx.in_shape(0))
    at = key.index(Ellipsis)
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    items = key[:at] + [slice(None)] * (rank - used) + key[at + 1:]
    paths = list(range(at)) + [None] * (rank - used) + list(range(at + 1, len(key)))
    varying = ctx.varying_under("state", "key")
    pairs = [varying.get((path,)) if path is not None else None for path in paths]
    y = basic_index(ctx, ctx.input(0), items, pairs)
    return y if y != ctx.input(0) else ctx.g.node("Identity", [y])


def basic_index(ctx, x, items, pairs):
    """``x[items]`` for ints, slices and Nones covering every dim of ``x`` (``pairs[k]``: item k's values in
    the two traces when it follows the input, else None)."""
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = out_axis = 0
    for item, pair in zip(items, pairs):
        if item is None:
            unsqueeze.append(out_axis)
            out_axis += 1
            continue
        if isinstance(item, int):
            start = _index_value(ctx, item, pair, axis)
            if pair is None:
                end = ctx.g.ints([_BIG if item == -1 else item + 1])
            else:
                end = ctx.g.node("Add", [start, ctx.g.ints([1])])
            starts.append(start)
            ends.append(end)
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
        elif item != slice(None):
            start, end, step = _slice_values(ctx, item, pair, axis)
            starts.append(start)
            ends.append(end)
            axes.append(axis)
            steps.append(step)
            out_axis += 1
        else:
            out_axis += 1
        axis += 1
    y = x
    if axes:
        y = ctx.g.node("Slice", [y, _concat(ctx, starts), _concat(ctx, ends), ctx.g.ints(axes), ctx.g.ints(steps)])
    if squeeze:
        y = ctx.squeeze(y, squeeze)
    if unsqueeze:
        y = ctx.unsqueeze(y, unsqueeze)
    return y


def _index_value(ctx, item, pair, axis):
    if pair is None:
        return ctx.g.ints([item])
    return ctx.dim(pair, f"the index into dim {axis}")


def _slice_values(ctx, item, pair, axis):
    """(start, end) int64 [1] values and the step of one slice; bounds that follow the input are runtime."""
    step = 1 if item.step is None else item.step
    if step < 0:
        start = _BIG if item.start is None else item.start
        stop = -_BIG if item.stop is None else item.stop
    else:
        start = 0 if item.start is None else item.start
        stop = _BIG if item.stop is None else item.stop
    if pair is None:
        return ctx.g.ints([start]), ctx.g.ints([stop]), step
    a, b = pair
    if a.step != b.step:
        ctx.fail(f"the step of its slice along dim {axis} follows the input")
    values = []
    for bound, x, y in ((start, a.start, b.start), (stop, a.stop, b.stop)):
        if x == y:
            values.append(ctx.g.ints([bound]))
        elif x is None or y is None:
            ctx.fail(f"a slice bound along dim {axis} is None in one run only")
        elif x < 0 and y < 0:
            values.append(ctx.g.node("Neg", [ctx.dim((-x, -y), f"a slice bound along dim {axis}")]))
        else:
            values.append(ctx.dim((x, y), f"a slice bound along dim {axis}"))
    return values[0], values[1], step


def _concat(ctx, pieces):
    return pieces[0] if len(pieces) == 1 else ctx.g.node("Concat", pieces, axis=0)


@converts(sh.Flip)
def flip(ctx):
    dims = list(ctx.state["dims"])
    n = len(dims)
    return ctx.g.node("Slice", [ctx.input(0), ctx.g.ints([-1] * n), ctx.g.ints([-_BIG] * n), ctx.g.ints(dims),
                                ctx.g.ints([-1] * n)])


@converts(sh.Roll)
def roll(ctx):
    """Each rolled dim as the concatenation of its last ``shift`` entries and the rest (``shift`` mod the size
    taken at run time along a dim whose size follows the input)."""
    y = ctx.input(0)
    for shift, dim in zip(ctx.state["shifts"], ctx.state["dims"]):
        if dim in ctx.dynamic(0):
            n = ctx.shape_of(y, dim, dim + 1)
            rest = ctx.g.node("Mod", [ctx.g.ints([shift]), ctx.g.node("Max", [n, ctx.g.ints([1])])], fmod=0)
            cut = ctx.g.node("Sub", [n, rest])
            tail = ctx.g.node("Slice", [y, cut, ctx.g.ints([_BIG]), ctx.g.ints([dim])])
            head = ctx.g.node("Slice", [y, ctx.g.ints([0]), cut, ctx.g.ints([dim])])
            y = ctx.g.node("Concat", [tail, head], axis=dim)
            continue
        n = ctx.in_shape(0)[dim]
        s = shift % n if n else 0
        if s == 0:
            continue
        tail = ctx.g.node("Slice", [y, ctx.g.ints([n - s]), ctx.g.ints([n]), ctx.g.ints([dim])])
        head = ctx.g.node("Slice", [y, ctx.g.ints([0]), ctx.g.ints([n - s]), ctx.g.ints([dim])])
        y = ctx.g.node("Concat", [tail, head], axis=dim)
    return y if y != ctx.input(0) else ctx.g.node("Identity", [y])


@converts(rearrange.Unfold)
def windows(ctx):
    """``Tensor.unfold``: one ``Gather`` of the windows' indices, (count, size), along the dim, then the size axis
    moved last."""
    dim, size, step = ctx.state["dim"], ctx.state["size"], ctx.state["step"]
    rank = len(ctx.in_shape(0))
    if rank == 0 or dim in ctx.dynamic(0):
        ctx.fail(f"windows along dim {dim}, whose size follows the input" if rank else "windows of a 0-d tensor")
    count = (ctx.in_shape(0)[dim] - size) // step + 1
    index = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    gathered = ctx.g.node("Gather", [ctx.input(0), ctx.g.constant(index)], axis=dim)
    perm = list(range(dim + 1)) + list(range(dim + 2, rank + 1)) + [dim + 1]
    return ctx.g.node("Transpose", [gathered], perm=perm)


@converts(Pad)
def pad(ctx):
    """``Pad`` (circular: mode 'wrap' from opset 19, before it slices of the far ends concatenated)."""
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    mode = ctx.state["mode"]
    if mode == "circular" and ctx.opset < 19:
        return _wrap_pad(ctx)
    rank = len(ctx.in_shape(0))
    begins, ends = [0] * rank, [0] * rank
    varying = ctx.varying_under("state", "pairs")
    pairs = {}
    for k, (axis, before, after) in enumerate(ctx.state["pairs"]):
        begins[axis], ends[axis] = before, after
        for j, position in ((1, axis), (2, rank + axis)):
            if (k, j) in varying:
                pairs[position] = varying[(k, j)]
    pads = ctx.ints(None, begins + ends, pairs=pairs)
    inputs = [ctx.input(0), pads]
    if mode == "constant":
        inputs.append(ctx.scalar(ctx.state["value"], ctx.in_dtype(0)))
    return ctx.g.node("Pad", inputs, mode=modes[mode])



def _wrap_pad(ctx):
    """Circular padding as, per padded axis, the last ``before`` entries, the tensor and the first ``after`` ones
    concatenated."""
    if ctx.varying_under("state", "pairs"):
        ctx.fail("circular padding by amounts that follow the input needs ONNX opset 19 (Pad mode 'wrap')")
    x = ctx.input(0)
    for axis, before, after in ctx.state["pairs"]:
        if before < 0 or after < 0:
            ctx.fail("circular padding by negative amounts needs ONNX opset 19 (Pad mode 'wrap')")
        pieces = [x]
        if before:
            pieces.insert(0, ctx.g.node("Slice", [x, ctx.g.ints([-before]), ctx.g.ints([_BIG]), ctx.g.ints([axis])]))
        if after:
            pieces.append(ctx.g.node("Slice", [x, ctx.g.ints([0]), ctx.g.ints([after]), ctx.g.ints([axis])]))
        x = ctx.g.node("Concat", pieces, axis=axis) if len(pieces) > 1 else x
    return x

@converts(sh.Triangle)
def triangle(ctx):
    """tril/triu as ``Trilu`` (opset 14 on)."""
    if ctx.opset < 14:
        ctx.fail("tril/triu needs ONNX opset 14 (Trilu)")
    k = ctx.g.constant(np.int64(ctx.state["diagonal"]))
    return ctx.g.node("Trilu", [ctx.input(0), k], upper=int(ctx.state["upper"]))


@converts(sh.Diagonal)
def diagonal(ctx):
    """The diagonal's dims moved last, the rows it crosses sliced, and each row's entry picked with
    ``GatherElements`` (column = row + offset); the two dims' sizes must not follow the input."""
    offset, dim1, dim2 = ctx.state["args"]
    if {dim1, dim2} & ctx.dynamic(0):
        ctx.fail("a diagonal over dims whose size follows the input")
    shape = ctx.in_shape(0)
    rank = len(shape)
    rest = [a for a in range(rank) if a not in (dim1, dim2)]
    x = ctx.g.node("Transpose", [ctx.input(0)], perm=rest + [dim1, dim2])
    first_row, first_col = max(-offset, 0), max(offset, 0)
    n = max(min(shape[dim1] - first_row, shape[dim2] - first_col), 0)
    rows = ctx.g.node("Slice", [x, ctx.g.ints([first_row]), ctx.g.ints([first_row + n]), ctx.g.ints([rank - 2])])
    columns = ctx.g.constant(np.arange(first_col, first_col + n, dtype=np.int64).reshape(n, 1))
    lead = ctx.shape_of(rows, 0, rank - 2)
    index = ctx.g.node("Expand", [columns, ctx.g.node("Concat", [lead, ctx.g.ints([n, 1])], axis=0)])
    picked = ctx.g.node("GatherElements", [rows, index], axis=rank - 1)
    return ctx.squeeze(picked, [rank - 1])
