"""Converters of the indexing ops: advanced indexing by constant arrays (``AdvancedIndex``) and by traced
tensors (``TensorIndex``, boolean masks through ``NonZero``), ``nonzero``, gather, index_select,
masked_fill and scatter.

numpy's rule decides where the index dims go: one index array is a ``Gather`` along its axis; several are
broadcast together and read with one ``GatherND`` over their axes moved to the front, the result's index
dims then moved to the first indexed axis when the indexed axes are adjacent.
"""
import numpy as np

from ..nn.graph.plan import CONST
from ..ops import indexing, tensor_index
from .ops_shape import basic_index
from .table import converts


def gather_advanced(ctx, x, rank, entries):
    """``x[...]`` for ``entries`` [(axis, int64 index value, index rank)] sorted by axis, every other axis whole."""
    if len(entries) == 1:
        axis, index, _ = entries[0]
        return ctx.g.node("Gather", [x, index], axis=axis)
    axes = [axis for axis, _, _ in entries]
    zero = ctx.scalar(0, np.int64)
    broadcast = entries[0][1]
    for _, index, _ in entries[1:]:
        broadcast = ctx.g.node("Add", [ctx.g.node("Mul", [broadcast, zero]), ctx.g.node("Mul", [index, zero])])
    shape = ctx.g.node("Shape", [broadcast])
    columns = [ctx.unsqueeze(ctx.g.node("Expand", [index, shape]), [-1]) for _, index, _ in entries]
    indices = ctx.g.node("Concat", columns, axis=-1)
    rest = [a for a in range(rank) if a not in axes]
    moved = ctx.g.node("Transpose", [x], perm=axes + rest) if axes != list(range(len(axes))) else x
    y = ctx.g.node("GatherND", [moved, indices])
    index_rank = max(r for _, _, r in entries)
    if axes == list(range(axes[0], axes[0] + len(axes))) and axes[0] > 0:
        lead = list(range(index_rank, index_rank + axes[0]))
        perm = lead + list(range(index_rank)) + list(range(index_rank + axes[0], index_rank + len(rest)))
        y = ctx.g.node("Transpose", [y], perm=perm)
    return y


@converts(indexing.AdvancedIndex)
def advanced_index(ctx):
    """numpy advanced indexing by the constant index arrays of the op's key (slices whole)."""
    if ctx.varying_under("state", "key"):
        ctx.fail("its index arrays were computed from the input's values outside the traced ops")
    key = ctx.state["key"]
    if any(k != slice(None) for k in key if isinstance(k, slice)):
        ctx.fail("advanced indexing mixed with partial slices")
    entries = [(axis, ctx.g.constant(np.asarray(k).astype(np.int64)), np.ndim(k))
               for axis, k in enumerate(key) if not isinstance(k, slice)]
    return gather_advanced(ctx, ctx.input(0), len(ctx.in_shape(0)), entries)


@converts(tensor_index.TensorIndex)
def tensor_index_(ctx):
    """``x[key]`` with traced index tensors: the basic items first (a view), then the index arrays, boolean
    masks becoming their ``NonZero`` coordinates."""
    if ctx.varying_under("state", "key"):
        ctx.fail("the constant part of its index follows the input")
    key = list(ctx.state["key"])
    positions = ctx.state["positions"]
    items = [_index_item(ctx, k, positions.index(i) + 1 if i in positions else None) for i, k in enumerate(key)]
    rank = len(ctx.in_shape(0))
    consumed = sum(_consumes(item) for item in items)
    if any(item is Ellipsis for item in items):
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (rank - consumed)
    else:
        items += [slice(None)] * (rank - consumed)
    basic, indexed = [], []
    view_axis = 0
    for item in items:
        if isinstance(item, _Index):
            indexed.append((view_axis, item))
            basic.extend([slice(None)] * item.width)
            view_axis += item.width
            continue
        basic.append(item)
        if not isinstance(item, int):
            view_axis += 1
    view = basic_index(ctx, ctx.input(0), basic, [None] * len(basic))
    if not indexed:
        return view if view != ctx.input(0) else ctx.g.node("Identity", [view])
    view_shape = np.broadcast_to(np.zeros((), np.int8), ctx.in_shape(0))[tuple(basic)].shape
    entries = []
    for axis, item in indexed:
        columns = item.columns(ctx, view, axis, view_shape[axis])
        entries += [(axis + j, column, index_rank) for j, (column, index_rank) in enumerate(columns)]
    return gather_advanced(ctx, view, view_axis, entries)


class _Index:
    """One index item of a key: an int array (a traced argument or a constant) or a boolean mask. A constant
    ``arange(n)`` indexing an axis of size n (rows 0..n-1 of a batch of detections) reads every row of that
    axis at run time, however many there are then."""

    def __init__(self, value, shape, is_mask, array=None):
        self.value, self.shape, self.is_mask, self.array = value, shape, is_mask, array
        self.width = len(shape) if is_mask else 1

    def columns(self, ctx, view, axis, size):
        """[(int64 index value, its rank)]: the array itself, or one coordinate row of the mask's ``NonZero``."""
        if self.is_mask:
            if not self.shape:
                ctx.fail("indexing by a 0-d boolean tensor")
            coordinates = ctx.g.node("NonZero", [self.value])
            return [(ctx.g.node("Gather", [coordinates, ctx.g.constant(np.int64(j))], axis=0), 1)
                    for j in range(len(self.shape))]
        if self.array is not None and size == len(self.array) >= 2 and np.array_equal(self.array, np.arange(size)):
            length = ctx.g.node("Squeeze", [ctx.shape_of(view, axis, axis + 1), ctx.g.ints([0])])
            rows = ctx.g.node("Range", [ctx.g.constant(np.int64(0)), length, ctx.g.constant(np.int64(1))])
            return [(rows, 1)]
        return [(self.value, len(self.shape))]


def _index_item(ctx, item, argument):
    """A key item for the converter: ints, slices, None and Ellipsis as they are, index arrays as ``_Index``."""
    if argument is not None:
        dtype = ctx.in_dtype(argument)
        is_mask = dtype in (np.bool_, np.uint8)
        value = ctx.input(argument, np.bool_ if is_mask else np.int64)
        array = ctx.value(argument)
        return _Index(value, ctx.in_shape(argument), is_mask, None if array is None else np.asarray(array))
    if item is None or item is Ellipsis or isinstance(item, (int, slice)):
        return item
    array = np.asarray(item)
    is_mask = array.dtype == np.bool_
    return _Index(ctx.g.constant(array if is_mask else array.astype(np.int64)), array.shape, is_mask,
                  None if is_mask else array)


def _consumes(item):
    """How many input dims a key item indexes."""
    if item is None or item is Ellipsis:
        return 0
    if isinstance(item, _Index):
        return len(item.shape) if item.is_mask else 1
    return 1


@converts(tensor_index.NonZero)
def nonzero(ctx):
    x = ctx.input(0)
    rank = len(ctx.in_shape(0))
    if rank == 0:
        x = ctx.g.node("Reshape", [x, ctx.g.ints([1])])
        rank = 1
    coordinates = ctx.g.node("NonZero", [x])
    if not ctx.state["as_tuple"]:
        return ctx.g.node("Transpose", [coordinates], perm=[1, 0])
    return [ctx.g.node("Gather", [coordinates, ctx.g.constant(np.int64(j))], axis=0) for j in range(rank)]


@converts(indexing.Gather)
def gather(ctx):
    return ctx.g.node("GatherElements", [ctx.input(0), ctx.input(1, np.int64)], axis=ctx.state["dim"])


@converts(indexing.IndexSelect)
def index_select(ctx):
    index = ctx.g.node("Reshape", [ctx.input(1, np.int64), ctx.g.ints([-1])])
    return ctx.g.node("Gather", [ctx.input(0), index], axis=ctx.state["dim"])


@converts(indexing.MaskedFill)
def masked_fill(ctx):
    """``Where(mask, value, x)``: the mask broadcasts against ``x`` as in the engine."""
    ctx.varying_under("state", "shape")  # the broadcast shape, which Where finds again
    value = ctx.input(2, ctx.out_dtype())
    return ctx.g.node("Where", [ctx.input(1), value, ctx.input(0)])


_SCATTER_REDUCTIONS = {None: "none", "add": "add", "multiply": "mul"}


@converts(indexing.Scatter)
def scatter(ctx):
    """``ScatterElements`` (with ``reduction`` from opset 16). torch reads only the leading ``index.shape`` block
    of a larger ``src`` (ONNX wants equal shapes: a ``Slice``); a number ``src`` is expanded to the index's shape."""
    reduce = ctx.state["reduce"]
    if reduce is not None and ctx.opset < 16:
        ctx.fail(f"scatter with reduce='{reduce}' needs ONNX opset 16 (ScatterElements' reduction)")
    index = ctx.input(1, np.int64)
    index_shape = ctx.shape_of(index)
    if ctx.kind(2) == CONST:
        updates = ctx.g.node("Expand", [ctx.scalar(ctx.arg(2)), index_shape])
    else:
        updates = ctx.input(2, ctx.out_dtype())
        if tuple(ctx.in_shape(2)) != tuple(ctx.in_shape(1)) or ctx.dynamic(2) != ctx.dynamic(1):
            starts = ctx.g.ints([0] * len(ctx.in_shape(1)))
            updates = ctx.g.node("Slice", [updates, starts, index_shape])
    attrs = {"reduction": _SCATTER_REDUCTIONS[reduce]} if ctx.opset >= 16 else {}
    return ctx.g.node("ScatterElements", [ctx.input(0), index, updates], axis=ctx.state["dim"], **attrs)


@converts(indexing.IndexAdd)
def index_add(ctx):
    """``ScatterElements`` with reduction 'add' (opset 16) of ``alpha * source`` at the index, spread over the
    source's other axes; a 0-d source is one entry."""
    if ctx.opset < 16:
        ctx.fail("index_add needs ONNX opset 16 (ScatterElements' reduction)")
    dim, rank = ctx.state["dim"], len(ctx.in_shape(0))
    source = ctx.input(2)
    if not ctx.in_shape(2):
        source = ctx.g.node("Reshape", [source, ctx.g.ints([1] * rank)])
    if ctx.state["alpha"] != 1:
        source = ctx.g.node("Mul", [source, ctx.scalar(ctx.state["alpha"])])
    index = ctx.g.node("Reshape", [ctx.input(1, np.int64), ctx.g.ints([-1 if k == dim else 1 for k in range(rank)])])
    index = ctx.g.node("Expand", [index, ctx.shape_of(source)])
    return ctx.g.node("ScatterElements", [ctx.input(0), index, source], axis=dim, reduction="add")


@converts(indexing.MaskedSelect)
def masked_select(ctx):
    """The entries of the input where the (broadcast) mask is True, in order: ``Compress`` of both broadcast
    and flattened."""
    x, mask = ctx.input(0), ctx.input(1)
    x = ctx.g.node("Expand", [x, ctx.shape_of(mask)])
    mask = ctx.g.node("Expand", [mask, ctx.shape_of(x)])
    flat = ctx.g.ints([-1])
    return ctx.g.node("Compress", [ctx.g.node("Reshape", [x, flat]), ctx.g.node("Reshape", [mask, flat])], axis=0)
