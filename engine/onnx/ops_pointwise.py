"""Converters of the pointwise ops of ``engine.ops.pointwise`` and ``outer`` that ONNX writes in a node or a few:
inverse hyperbolic functions, degree/radian scaling, logit, NaN-ignoring maximum/minimum, heaviside, xlogy,
sinc. Each computes in the op's dtype, as the engine does."""
import math

import numpy as np

from ..ops import linalg, pointwise as pw
from .table import converts

_INVERSE_HYPERBOLIC = {pw.Asinh: "Asinh", pw.Acosh: "Acosh", pw.Atanh: "Atanh"}


def _x(ctx):
    return ctx.input(0, ctx.state["dtype"])


@converts(*_INVERSE_HYPERBOLIC)
def inverse_hyperbolic(ctx):
    return ctx.g.node(_INVERSE_HYPERBOLIC[ctx.op.cls], [_x(ctx)])


@converts(pw.Deg2Rad, pw.Rad2Deg)
def scale(ctx):
    return ctx.g.node("Mul", [_x(ctx), ctx.scalar(ctx.op.cls.factor, ctx.state["dtype"])])


@converts(pw.Logit)
def logit(ctx):
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (as torch: the lower bound first,
    so that eps > 0.5 gives 1 - eps everywhere above eps)."""
    dtype = ctx.state["dtype"]
    x = _x(ctx)
    eps = ctx.state["eps"]
    if eps is not None:
        low, high = ctx.scalar(eps, dtype), ctx.scalar(1 - eps, dtype)
        x = ctx.g.node("Where", [ctx.g.node("Less", [x, low]), low,
                                 ctx.g.node("Where", [ctx.g.node("Greater", [x, high]), high, x])])
    one = ctx.scalar(1.0, dtype)
    return ctx.g.node("Log", [ctx.g.node("Div", [x, ctx.g.node("Sub", [one, x])])])


@converts(pw.FMax, pw.FMin)
def fmax(ctx):
    """The larger (smaller) operand where both are numbers, the other where one is NaN."""
    dtype = ctx.state["dtype"]
    a, b = ctx.input(0, dtype), ctx.input(1, dtype)
    both = ctx.g.node("Max" if ctx.op.cls is pw.FMax else "Min", [a, b])
    if np.dtype(dtype).kind != "f":
        return both
    y = ctx.g.node("Where", [ctx.g.node("IsNaN", [b]), a, both])
    return ctx.g.node("Where", [ctx.g.node("IsNaN", [a]), b, y])


@converts(pw.Heaviside)
def heaviside(ctx):
    """0 where a < 0, ``values`` where a == 0, 1 where a > 0."""
    dtype = ctx.state["dtype"]
    a, values = ctx.input(0), ctx.input(1, dtype)
    positive = ctx.g.node("Cast", [ctx.g.node("Greater", [a, ctx.scalar(0, ctx.in_dtype(0))])],
                          to=ctx.g.elem_type(dtype))
    return ctx.g.node("Where", [ctx.g.node("Equal", [a, ctx.scalar(0, ctx.in_dtype(0))]), values, positive])


@converts(pw.Xlogy)
def xlogy(ctx):
    """x * log(y), 0 where x == 0 unless y is NaN."""
    dtype = ctx.state["dtype"]
    x, y = ctx.input(0, dtype), ctx.input(1, dtype)
    product = ctx.g.node("Mul", [x, ctx.g.node("Log", [y])])
    zero = ctx.g.node("And", [ctx.g.node("Equal", [x, ctx.scalar(0.0, dtype)]),
                              ctx.g.node("Not", [ctx.g.node("IsNaN", [y])])])
    return ctx.g.node("Where", [zero, ctx.scalar(0.0, dtype), product])


@converts(pw.Sinc)
def sinc(ctx):
    """sin(pi x) / (pi x), 1 at x == 0."""
    dtype = ctx.state["dtype"]
    x = _x(ctx)
    px = ctx.g.node("Mul", [x, ctx.scalar(math.pi, dtype)])
    is_zero = ctx.g.node("Equal", [x, ctx.scalar(0.0, dtype)])
    safe = ctx.g.node("Where", [is_zero, ctx.scalar(1.0, dtype), px])
    ratio = ctx.g.node("Div", [ctx.g.node("Sin", [safe]), safe])
    return ctx.g.node("Where", [is_zero, ctx.scalar(1.0, dtype), ratio])


@converts(linalg.Outer)
def outer(ctx):
    """a[:, None] * b[None, :] in the result dtype."""
    dtype = ctx.state["dtype"]
    return ctx.g.node("Mul", [ctx.unsqueeze(ctx.input(0, dtype), [1]), ctx.unsqueeze(ctx.input(1, dtype), [0])])
