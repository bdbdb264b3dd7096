"""Converter of assignment through basic indexing (``x[:, 1:3] = v``, ``x[..., -1] = y``; ``IndexPut`` without
tensor indices): a ``Where`` between the written value and the old tensor.

Each indexed axis addresses fixed positions (an integer or a slice, with any step) of an axis whose size is fixed;
a full slice ``:`` leaves an axis, fixed or dynamic, whole. The mask of written elements is then a constant that
broadcasts over the whole axes. The value, broadcast to the indexed region as torch does, is brought to the
tensor's rank (integer-indexed axes get back a unit axis, ``None`` axes are dropped) and spread along each
indexed axis by a ``Gather`` that sends position P[j] of the axis to the value's entry j (the other positions
are masked out). ``accumulate`` adds the masked value instead of replacing. One constant integer index tensor
along one axis (``x[:, [0, 2]] = v``, ``index_put``) is a ``ScatterElements``.
"""
import numpy as np

from ..ops.indexing import IndexPut
from .table import converts


@converts(IndexPut)
def index_put(ctx):
    if ctx.state["adv"] is not None:
        return _put_along_axis(ctx)
    shape, dynamic = ctx.in_shape(0), ctx.dynamic(0)
    positions, region = _selection(ctx, ctx.state["basic"], shape, dynamic)
    if any(p is not None and len(p) == 0 for p in positions):
        return ctx.g.node("Identity", [ctx.input(0)])
    value, value_shape = _aligned_value(ctx, region, positions)
    mask = np.ones([1] * len(shape), np.bool_)
    for axis, chosen in enumerate(positions):
        if chosen is None:
            continue
        along = np.zeros(shape[axis], np.bool_)
        along[chosen] = True
        mask = mask & along.reshape([-1 if k == axis else 1 for k in range(len(shape))])
        if value_shape[axis] != 1:
            inverse = np.zeros(shape[axis], np.int64)
            inverse[chosen] = np.arange(len(chosen))
            value = ctx.g.node("Gather", [value, ctx.g.constant(inverse, hint="positions")], axis=axis)
    mask = ctx.g.constant(mask, hint="written")
    if ctx.state["accumulate"]:
        added = ctx.g.node("Where", [mask, value, ctx.scalar(0, ctx.in_dtype(0))])
        return ctx.g.node("Add", [ctx.input(0), added])
    return ctx.g.node("Where", [mask, value, ctx.input(0)])


def _selection(ctx, key, shape, dynamic):
    """(positions per axis of the tensor: None for a whole axis, else the indices written in order; region: what
    each axis of the indexed region is: ("axis", k) or ("new",)) of a basic key (ints, slices, None, Ellipsis)."""
    rank = len(shape)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    positions = [None] * rank
    region = []
    axis = 0
    expanded = False
    for k in key:
        if k is Ellipsis:
            count = 0 if expanded else rank - consumed
            expanded = True
            region += [("axis", a) for a in range(axis, axis + count)]
            axis += count
        elif k is None:
            region.append(("new",))
        elif isinstance(k, slice) and k == slice(None):
            region.append(("axis", axis))
            axis += 1
        else:
            if axis in dynamic:
                ctx.fail(f"assignment to part of axis {axis}, whose size follows the input (only a whole ':' slice "
                         "of such an axis can be written)")
            chosen = np.arange(shape[axis])[k]
            positions[axis] = np.atleast_1d(chosen)
            if isinstance(k, slice):
                region.append(("axis", axis))
            axis += 1
    return positions, region


def _aligned_value(ctx, region, positions):
    """The value (in the tensor's dtype) with one axis per axis of the tensor, each of size 1 or of the region's
    size along it, and its traced sizes (those of the indexed axes, which are fixed, decide the ``Gather``)."""
    value = ctx.input(1, ctx.in_dtype(0))
    value_shape = list(ctx.in_shape(1))
    if len(value_shape) > len(region):
        extra = len(value_shape) - len(region)
        if any(d != 1 for d in value_shape[:extra]):
            ctx.fail(f"assignment of a value of shape {tuple(value_shape)} to a region of {len(region)} dimensions")
        value, value_shape = ctx.squeeze(value, list(range(extra))), value_shape[extra:]
    if len(value_shape) < len(region):
        lead = len(region) - len(value_shape)
        value = ctx.unsqueeze(value, list(range(lead))) if value_shape else ctx.g.node(
            "Reshape", [value, ctx.g.ints([1] * lead)])
        value_shape = [1] * lead + value_shape
    new = [k for k, entry in enumerate(region) if entry[0] == "new"]
    if new:
        value = ctx.squeeze(value, new)
        value_shape = [d for k, d in enumerate(value_shape) if k not in new]
    sizes = dict(zip((entry[1] for entry in region if entry[0] == "axis"), value_shape))
    removed = [axis for axis, chosen in enumerate(positions) if chosen is not None and axis not in sizes]
    if removed:
        value = ctx.unsqueeze(value, removed)
    return value, [sizes.get(axis, 1) for axis in range(len(positions))]


def _put_along_axis(ctx):
    """``x[:, index] = v`` (``index_put``) with one constant 1-D integer index along one axis, the other axes
    whole: ``ScatterElements`` of the value broadcast to the indexed region (reduction 'add' with
    ``accumulate``, from opset 16, so that repeated indices add up)."""
    basic, adv = ctx.state["basic"], ctx.state["adv"]
    arrays = [k for k, a in enumerate(adv) if not (isinstance(a, slice) and a == slice(None))]
    whole = all(isinstance(k, slice) and k == slice(None) or k is Ellipsis for k in basic)
    single = len(arrays) == 1 and np.ndim(adv[arrays[0]]) == 1 and np.asarray(adv[arrays[0]]).dtype.kind in "iu"
    if not whole or not single:
        ctx.fail("assignment through tensor indices other than one 1-D integer index along one axis (x[index] = "
                 "value with masks or several index tensors); write it with engine.where, masked_fill or scatter")
    if ctx.state["accumulate"] and ctx.opset < 16:
        ctx.fail("index_put with accumulate=True needs ONNX opset 16 (ScatterElements' reduction)")
    axis, index = arrays[0], np.asarray(adv[arrays[0]], np.int64)
    x, rank = ctx.input(0), len(ctx.in_shape(0))
    region = ctx.g.node("Concat", [ctx.shape_of(x, 0, axis), ctx.g.ints([len(index)]),
                                   ctx.shape_of(x, axis + 1, rank)], axis=0)
    value, value_rank = ctx.input(1, ctx.in_dtype(0)), len(ctx.in_shape(1))
    if value_rank > rank:
        value = ctx.squeeze(value, list(range(value_rank - rank)))
    value = ctx.g.node("Expand", [value, region])
    positions = ctx.g.constant(index.reshape([-1 if k == axis else 1 for k in range(rank)]), hint="positions")
    positions = ctx.g.node("Expand", [positions, region])
    attrs = {"reduction": "add"} if ctx.state["accumulate"] else {}
    return ctx.g.node("ScatterElements", [x, positions, value], axis=axis, **attrs)
