"""Converters of the shape and indexing ops: reshape, permute, expand, repeat, cat, stack, split, basic and
advanced indexing, flip, roll, pad, gather and index_select.

A traced reshape holds concrete sizes; a size that follows a dynamic input dimension is written as 0
(copy the input's) when it is that same dimension, as -1 when it is the only one left, and otherwise
computed from the runtime shape (``OpContext.ints``).
"""
import numpy as np

from ..nn.functional.padding import Pad
from ..ops import indexing, shape as sh
from .table import converts

_BIG = 2 ** 62


def _dim_pair(ctx, i, axis):
    """(size in the exported trace, size in the probe) of dimension ``axis`` of argument ``i``."""
    slot = ctx.arg(i)
    return ctx.conversion.capture.shapes[slot][axis], ctx.conversion.variation.b.shapes[slot][axis]


@converts(sh.Reshape)
def reshape(ctx):
    target = list(ctx.state["shape"])
    varying = {path[0]: pair for path, pair in ctx.varying_under("state", "shape").items()}
    entries = list(target)
    left = {}
    has_zero = 0 in target
    for k, pair in sorted(varying.items()):
        if not has_zero and k < len(ctx.in_shape(0)) and k in ctx.dynamic(0) and _dim_pair(ctx, 0, k) == pair:
            entries[k] = 0
        else:
            left[k] = pair
    if len(left) == 1 and not has_zero:
        entries[next(iter(left))] = -1
        shape = ctx.g.ints(entries)
    else:
        shape = ctx.ints(None, entries, pairs=left)
    if has_zero:
        return ctx.g.node("Reshape", [ctx.input(0), shape], allowzero=1)
    return ctx.g.node("Reshape", [ctx.input(0), shape])


@converts(sh.Permute)
def permute(ctx):
    return ctx.g.node("Transpose", [ctx.input(0)], perm=list(ctx.state["dims"]))


@converts(sh.Expand)
def expand(ctx):
    """``Expand`` broadcasts both ways: a size that follows the input's own dimension is written as 1."""
    target = list(ctx.state["shape"])
    varying = {path[0]: pair for path, pair in ctx.varying_under("state", "shape").items()}
    offset = len(target) - len(ctx.in_shape(0))
    left = {}
    for k, pair in varying.items():
        axis = k - offset
        if axis >= 0 and axis in ctx.dynamic(0) and _dim_pair(ctx, 0, axis) == pair:
            target[k] = 1
        else:
            left[k] = pair
    return ctx.g.node("Expand", [ctx.input(0), ctx.ints(None, target, pairs=left)])


@converts(sh.Repeat)
def repeat(ctx):
    reps = list(ctx.state["reps"])
    x = ctx.input(0)
    extra = len(reps) - len(ctx.in_shape(0))
    if extra > 0:
        x = ctx.unsqueeze(x, list(range(extra)))
    return ctx.g.node("Tile", [x, ctx.ints(("state", "reps"), reps)])


@converts(sh.Cat)
def cat(ctx):
    dtype = ctx.state["dtype"]
    parts = [ctx.input(i, dtype) for i, skip in enumerate(ctx.state["skip"]) if not skip]
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
    starts, ends, axes, steps, squeeze, unsqueeze = [], [], [], [], [], []
    axis = out_axis = 0
    for item, path in zip(items, paths):
        if item is None:
            unsqueeze.append(out_axis)
            out_axis += 1
            continue
        pair = varying.get((path,)) if path is not None else None
        if isinstance(item, int):
            start = _index_value(ctx, item, pair, axis)
            end = ctx.g.ints([_BIG]) if item == -1 else ctx.g.node("Add", [start, ctx.g.ints([1])])
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
    y = ctx.input(0)
    if axes:
        y = ctx.g.node("Slice", [y, _concat(ctx, starts), _concat(ctx, ends), ctx.g.ints(axes), ctx.g.ints(steps)])
    if squeeze:
        y = ctx.squeeze(y, squeeze)
    if unsqueeze:
        y = ctx.unsqueeze(y, unsqueeze)
    if y == ctx.input(0):
        y = ctx.g.node("Identity", [y])
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
    """Each rolled dim as the concatenation of its last ``shift`` entries and the rest."""
    y = ctx.input(0)
    for shift, dim in zip(ctx.state["shifts"], ctx.state["dims"]):
        if dim in ctx.dynamic(0):
            ctx.fail(f"rolling along dim {dim}, whose size follows the input")
        n = ctx.in_shape(0)[dim]
        s = shift % n if n else 0
        if s == 0:
            continue
        tail = ctx.g.node("Slice", [y, ctx.g.ints([n - s]), ctx.g.ints([n]), ctx.g.ints([dim])])
        head = ctx.g.node("Slice", [y, ctx.g.ints([0]), ctx.g.ints([n - s]), ctx.g.ints([dim])])
        y = ctx.g.node("Concat", [tail, head], axis=dim)
    return y if y != ctx.input(0) else ctx.g.node("Identity", [y])


@converts(Pad)
def pad(ctx):
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    mode = ctx.state["mode"]
    if mode == "circular" and ctx.opset < 19:
        ctx.fail("circular padding needs ONNX opset 19 (Pad mode 'wrap')")
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


# ---- advanced indexing and gathers ---------------------------------------------------------------
@converts(indexing.AdvancedIndex)
def advanced_index(ctx):
    """numpy advanced indexing with constant index arrays: ``Gather`` for one array, else ``GatherND`` over
    the indexed axes moved to the front (the result's index dims go where numpy puts them)."""
    if ctx.varying_under("state", "key"):
        ctx.fail("its index arrays were computed from the input's values outside the traced ops")
    key = ctx.state["key"]
    arrays = [(axis, np.asarray(k)) for axis, k in enumerate(key) if not isinstance(k, slice)]
    if any(k != slice(None) for k in key if isinstance(k, slice)):
        ctx.fail("advanced indexing mixed with partial slices")
    x = ctx.input(0)
    if len(arrays) == 1:
        axis, index = arrays[0]
        return ctx.g.node("Gather", [x, ctx.g.constant(index.astype(np.int64))], axis=axis)
    axes = [axis for axis, _ in arrays]
    rank = len(ctx.in_shape(0))
    broadcast = np.broadcast_arrays(*(index.astype(np.int64) for _, index in arrays))
    indices = np.stack(broadcast, axis=-1)
    rest = [a for a in range(rank) if a not in axes]
    moved = ctx.g.node("Transpose", [x], perm=axes + rest) if axes != list(range(len(axes))) else x
    y = ctx.g.node("GatherND", [moved, ctx.g.constant(indices)])
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    if adjacent and axes[0] > 0:
        n_index = indices.ndim - 1
        lead = list(range(n_index, n_index + axes[0]))
        perm = lead + list(range(n_index)) + list(range(n_index + axes[0], n_index + len(rest)))
        y = ctx.g.node("Transpose", [y], perm=perm)
    return y


@converts(indexing.Gather)
def gather(ctx):
    return ctx.g.node("GatherElements", [ctx.input(0), ctx.input(1, np.int64)], axis=ctx.state["dim"])


@converts(indexing.IndexSelect)
def index_select(ctx):
    index = ctx.g.node("Reshape", [ctx.input(1, np.int64), ctx.g.ints([-1])])
    return ctx.g.node("Gather", [ctx.input(0), index], axis=ctx.state["dim"])
