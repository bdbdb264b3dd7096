"""Converters of the reductions, arg-extremes, median along a dim, top-k, sort and cumulative sums and products
(engine/ops/reduction.py and engine/ops/sorting.py), and the closures the engine runs some reductions as."""
import inspect
import math

import numpy as np

from ..ops import reduction as red, sorting
from .table import converts


def _x(ctx):
    dtype = ctx.state.get("dtype")
    return ctx.input(0, dtype)


@converts(red.Sum, red.Mean, red.Prod)
def reduce_(ctx):
    op_type = {"Sum": "ReduceSum", "Mean": "ReduceMean", "Prod": "ReduceProd"}[ctx.name]
    return ctx.reduce(op_type, _x(ctx), list(ctx.state["axes"]), ctx.state["keepdim"])


@converts(red.AMax)
def amax(ctx):
    op_type = "ReduceMax" if ctx.state["largest"] else "ReduceMin"
    return ctx.reduce(op_type, ctx.input(0), list(ctx.state["axes"]), ctx.state["keepdim"])


@converts(red.Var, red.Std)
def var(ctx):
    x = ctx.input(0)
    axes = list(ctx.state["axes"])
    centred = ctx.g.node("Sub", [x, ctx.reduce("ReduceMean", x, axes, True)])
    total = ctx.reduce("ReduceSum", ctx.g.node("Mul", [centred, centred]), axes, ctx.state["keepdim"])
    y = ctx.g.node("Div", [total, _degrees_of_freedom(ctx, x, axes)])
    return ctx.g.node("Sqrt", [y]) if ctx.op.cls is red.Std else y



def _degrees_of_freedom(ctx, x, axes):
    """max(n - correction, 0) for n the number of values reduced, taken from the run's shape when it follows the
    input."""
    correction = ctx.state["correction"]
    if not any(a in ctx.dynamic(0) for a in axes):
        return ctx.scalar(max(int(np.prod([ctx.in_shape(0)[a] for a in axes])) - correction, 0))
    sizes = ctx.g.node("Gather", [ctx.shape_of(x), ctx.g.ints(axes)], axis=0)
    n = ctx.cast(ctx.reduce("ReduceProd", sizes, [0], False), np.int64, ctx.out_dtype())
    return ctx.g.node("Relu", [ctx.g.node("Sub", [n, ctx.scalar(correction)])])

@converts(red.LogSumExp)
def logsumexp(ctx):
    return ctx.reduce("ReduceLogSumExp", _x(ctx), list(ctx.state["axes"]), ctx.state["keepdim"])


@converts(red.VectorNorm)
def vector_norm(ctx):
    x = _x(ctx)
    p, axes, keep = ctx.state["ord"], list(ctx.state["axes"]), ctx.state["keepdim"]
    if p == 2:
        return ctx.reduce("ReduceL2", x, axes, keep)
    if p == 1:
        return ctx.reduce("ReduceL1", x, axes, keep)
    if p == math.inf:
        return ctx.reduce("ReduceMax", ctx.g.node("Abs", [x]), axes, keep)
    if p == -math.inf:
        return ctx.reduce("ReduceMin", ctx.g.node("Abs", [x]), axes, keep)
    if p == 0:
        nonzero = ctx.g.node("Cast", [ctx.g.node("Not", [ctx.g.node("Equal", [x, ctx.scalar(0)])])],
                             to=ctx.g.elem_type(ctx.out_dtype()))
        return ctx.reduce("ReduceSum", nonzero, axes, keep)
    powered = ctx.g.node("Pow", [ctx.g.node("Abs", [x]), ctx.scalar(p)])
    return ctx.g.node("Pow", [ctx.reduce("ReduceSum", powered, axes, keep), ctx.scalar(1.0 / p)])


@converts(red.CumSum)
def cumsum(ctx):
    x = _x(ctx)
    if not ctx.in_shape(0):
        return ctx.g.node("Identity", [x])
    return ctx.g.node("CumSum", [x, ctx.g.constant(np.int64(ctx.state["axis"]))])


@converts(red.CumProd)
def cumprod(ctx):
    """ONNX has no CumProd: y_k = prod_{j <= k} x_j as a ``ReduceProd`` over a triangular (n, n) layout along the
    axis, x_j where j <= k and 1 elsewhere, exact around zeros and negative values (no exp/log), for any dtype
    and for an axis whose length follows the input (n^2 memory along it). float16/bfloat16 run in float32 and
    round once, as the engine's scan."""
    dtype = np.dtype(ctx.state["dtype"])
    wide = np.dtype(np.float32) if dtype.kind == "f" and dtype.itemsize < 4 else dtype
    x = ctx.input(0, wide)
    rank = len(ctx.in_shape(0))
    if rank == 0:
        return ctx.cast(x, wide, dtype)
    axis = ctx.state["axis"]
    if axis in ctx.dynamic(0):
        n = ctx.g.node("Squeeze", [ctx.shape_of(x, axis, axis + 1), ctx.g.ints([0])])
        positions = ctx.g.node("Range", [ctx.g.constant(np.int64(0)), n, ctx.g.constant(np.int64(1))])
    else:
        positions = ctx.g.ints(range(ctx.in_shape(0)[axis]))
    lower = ctx.g.node("GreaterOrEqual", [ctx.unsqueeze(positions, [1]), ctx.unsqueeze(positions, [0])])
    trailing = list(range(2, 2 + rank - 1 - axis))
    if trailing:
        lower = ctx.unsqueeze(lower, trailing)
    spread = ctx.g.node("Where", [lower, ctx.unsqueeze(x, [axis]), ctx.g.constant(np.ones((), wide))])
    return ctx.cast(ctx.reduce("ReduceProd", spread, [axis + 1], False), wide, dtype)


@converts(red.ArgExtreme)
def arg_extreme(ctx):
    """Values and int64 indices of the max/min along ``axis`` (first occurrence, as numpy)."""
    axis = ctx.state["axis"]
    if axis is None:
        ctx.fail("argmax/argmin of a 0-d tensor")
    x = ctx.input(0)
    keep = 0 if ctx.state["squeeze"] else 1
    indices = ctx.g.node("ArgMax" if ctx.state["largest"] else "ArgMin", [x], axis=axis, keepdims=1,
                         select_last_index=0)
    values = ctx.g.node("GatherElements", [x, indices], axis=axis)
    if not keep:
        return ctx.squeeze(values, [axis]), ctx.squeeze(indices, [axis])
    return values, indices



@converts(red.MedianDim)
def median_dim(ctx):
    """The lower median along ``axis``: the last of the ``(n - 1) // 2 + 1`` smallest (``TopK`` keeps equal values in
    index order, as the engine's stable sort), with its index. A NaN is not singled out as the engine does."""
    axis = ctx.state["axis"]
    if axis is None:
        ctx.fail("median of a 0-d tensor along a dim")
    x = ctx.input(0)
    if axis in ctx.dynamic(0):
        n = ctx.shape_of(x, axis, axis + 1)
        last = ctx.g.node("Div", [ctx.g.node("Sub", [n, ctx.g.ints([1])]), ctx.g.ints([2])])
    else:
        last = ctx.g.ints([(ctx.in_shape(0)[axis] - 1) // 2])
    count = ctx.g.node("Add", [last, ctx.g.ints([1])])
    values, indices = ctx.g.node("TopK", [x, count], outputs=2, axis=axis, largest=0, sorted=1)
    picked = [ctx.g.node("Slice", [v, last, count, ctx.g.ints([axis])]) for v in (values, indices)]
    if ctx.state["squeeze"]:
        return tuple(ctx.squeeze(v, [axis]) for v in picked)
    return tuple(picked)

@converts(sorting.TopK)
def topk(ctx):
    """``TopK`` (sorted; ONNX Runtime orders ties by index, as the engine's stable sort does), k at most the axis'
    size at run time: ``min(k, n)`` in the model's Python is decided again for the run's n (a number of
    candidates that follows the data can be smaller on another input than in both traces)."""
    axis = ctx.state["axis"]
    k = ctx.varying("state", "k")
    count = ctx.dim(k, "k") if k is not None else ctx.g.ints([ctx.state["k"]])
    count = ctx.g.node("Min", [count, ctx.shape_of(ctx.input(0), axis, axis + 1)])
    values, indices = ctx.g.node("TopK", [ctx.input(0), count], outputs=2, axis=axis,
                                 largest=int(ctx.state["largest"]), sorted=1)
    if ctx.state.get("squeeze"):
        return ctx.squeeze(values, [axis]), ctx.squeeze(indices, [axis])
    return values, indices


@converts(sorting.SortSelect)
def sort(ctx):
    """A full sort as ``TopK`` with k the axis' size (taken at run time when it follows the input)."""
    axis = ctx.state["axis"]
    x = ctx.input(0)
    if axis in ctx.dynamic(0):
        count = ctx.shape_of(x, axis, axis + 1)
    else:
        count = ctx.g.ints([ctx.in_shape(0)[axis]])
    values, indices = ctx.g.node("TopK", [x, count], outputs=2, axis=axis, largest=int(ctx.state["descending"]),
                                 sorted=1)
    return values, indices


# ---- reductions the engine runs as closures (``Compute``): argmax/argmin, all/any, count_nonzero ----
@converts(red.Compute)
def compute(ctx):
    """``Compute`` ops carry a closure; the ones the engine's reductions build are recognised by the function
    that made them and read through the values it closed over."""
    fn = ctx.state["fn"]
    maker = fn.__qualname__.split(".<locals>")[0]
    closed = inspect.getclosurevars(fn).nonlocals
    if maker == "_arg_extreme":
        return _arg_closure(ctx, closed)
    if maker == "_logical_reduce":
        return _logical_closure(ctx, closed)
    if maker == "count_nonzero":
        return ctx.reduce("ReduceSum", _nonzero_ints(ctx), list(closed["axes"]), False)
    ctx.fail(f"the computation {fn.__qualname__} (no ONNX mapping)")


def _nonzero_ints(ctx):
    x = ctx.input(0)
    is_zero = ctx.g.node("Equal", [x, ctx.scalar(0, ctx.in_dtype(0))])
    return ctx.g.node("Cast", [ctx.g.node("Not", [is_zero])], to=ctx.g.elem_type(np.int64))


def _arg_closure(ctx, closed):
    op_type = "ArgMax" if closed["name"] == "argmax" else "ArgMin"
    x = ctx.input(0)
    rank = len(ctx.in_shape(0))
    if closed["dim"] is None:
        flat = ctx.g.node(op_type, [ctx.g.node("Reshape", [x, ctx.g.ints([-1])])], axis=0, keepdims=0)
        return ctx.g.node("Reshape", [flat, ctx.g.ints([1] * rank if closed["keepdim"] else [])])
    if closed["axis"] is None:
        return ctx.g.constant(np.int64(0))
    return ctx.g.node(op_type, [x], axis=closed["axis"], keepdims=int(bool(closed["keepdim"])), select_last_index=0)


def _logical_closure(ctx, closed):
    """any: some element is nonzero (a positive count of nonzeros); all: no element is zero (a zero count of
    zeros, which holds whatever the reduced sizes are at run time)."""
    x = ctx.input(0)
    is_zero = ctx.g.node("Equal", [x, ctx.scalar(0, ctx.in_dtype(0))])
    flags = is_zero if closed["name"] == "all" else ctx.g.node("Not", [is_zero])
    counts = ctx.reduce("ReduceSum", ctx.g.node("Cast", [flags], to=ctx.g.elem_type(np.int64)),
                        list(closed["axes"]), closed["keepdim"])
    compare = "Equal" if closed["name"] == "all" else "Greater"
    result = ctx.g.node(compare, [counts, ctx.scalar(0, np.int64)])
    return ctx.cast(result, np.bool_, ctx.out_dtype())
