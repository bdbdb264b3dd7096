"""Converters of the elementwise ops: arithmetic, hypot, logaddexp, math functions, comparisons, logic, where,
clamp, casts and the copies and aliases that ONNX (where every value is its own) needs no node for.

Binary ops compute in their recorded result dtype: an operand of another dtype is cast first, as the
engine casts both operands before computing.
"""
import math

import numpy as np

from ..ops import convert, elementwise as ew, pointwise as pw
from .table import converts


def _operands(ctx):
    dtype = ctx.state["dtype"]
    return ctx.input(0, dtype), ctx.input(1, dtype)


@converts(ew.Add, ew.Sub)
def add(ctx):
    a, b = _operands(ctx)
    alpha = ctx.state.get("alpha", 1)
    if alpha != 1:
        b = ctx.g.node("Mul", [b, ctx.scalar(alpha, ctx.state["dtype"])])
    return ctx.g.node("Sub" if ctx.op.cls is ew.Sub else "Add", [a, b])


@converts(ew.Mul)
def mul(ctx):
    return ctx.g.node("Mul", list(_operands(ctx)))


@converts(ew.Div)
def div(ctx):
    a, b = _operands(ctx)
    mode = ctx.state.get("rounding_mode")
    floating = ctx.state["dtype"].kind == "f"
    if mode is None or (mode == "trunc" and not floating and _non_negative(ctx)):
        return ctx.g.node("Div", [a, b])
    if floating:
        q = ctx.g.node("Div", [a, b])
        if mode == "floor":
            return ctx.g.node("Floor", [q])
        return _trunc(ctx, q)
    if mode == "floor":
        return _floor_divide_int(ctx, a, b)
    ctx.fail("integer division with rounding_mode='trunc' of possibly negative values")


def _non_negative(ctx):
    """Integer operands known to be >= 0 (constants): ONNX's integer Div truncates, which then equals floor."""
    values = [ctx.value(i) for i in range(2)]
    return all(v is not None and np.all(np.asarray(v) >= 0) for v in values)


def _trunc(ctx, q):
    """Round toward zero: floor of |q| with q's sign."""
    return ctx.g.node("Mul", [ctx.g.node("Sign", [q]), ctx.g.node("Floor", [ctx.g.node("Abs", [q])])])


def _floor_divide_int(ctx, a, b):
    """Integer floor division (ONNX's integer Div truncates): q - 1 where the remainder is non-zero and the
    operands' signs differ."""
    q = ctx.g.node("Div", [a, b])
    r = ctx.g.node("Sub", [a, ctx.g.node("Mul", [q, b])])
    zero = ctx.scalar(0, ctx.state["dtype"])
    signs_differ = ctx.g.node("Xor", [ctx.g.node("Less", [a, zero]), ctx.g.node("Less", [b, zero])])
    inexact = ctx.g.node("Not", [ctx.g.node("Equal", [r, zero])])
    fix = ctx.g.node("Cast", [ctx.g.node("And", [signs_differ, inexact])], to=ctx.g.elem_type(ctx.state["dtype"]))
    return ctx.g.node("Sub", [q, fix])


@converts(ew.FloorDivide)
def floor_divide(ctx):
    a, b = _operands(ctx)
    if ctx.state["dtype"].kind == "f":
        return ctx.g.node("Floor", [ctx.g.node("Div", [a, b])])
    return _floor_divide_int(ctx, a, b)


@converts(ew.Remainder)
def remainder(ctx):
    a, b = _operands(ctx)
    if ctx.state["dtype"].kind == "f":
        return ctx.g.node("Sub", [a, ctx.g.node("Mul", [b, ctx.g.node("Floor", [ctx.g.node("Div", [a, b])])])])
    return ctx.g.node("Mod", [a, b], fmod=0)


@converts(ew.Fmod)
def fmod(ctx):
    """C's fmod (the dividend's sign): ONNX's Mod with fmod=1, which floats require and integers follow."""
    return ctx.g.node("Mod", list(_operands(ctx)), fmod=1)


@converts(ew.Pow)
def pow_(ctx):
    return ctx.g.node("Pow", list(_operands(ctx)))


@converts(ew.Maximum, ew.Minimum)
def maximum(ctx):
    return ctx.g.node("Max" if ctx.op.cls is ew.Maximum else "Min", list(_operands(ctx)))


@converts(ew.Atan2)
def atan2(ctx):
    y, x = _operands(ctx)
    angle = ctx.g.node("Atan", [ctx.g.node("Div", [y, x])])
    zero = ctx.scalar(0.0, ctx.state["dtype"])
    pi = ctx.scalar(np.pi, ctx.state["dtype"])
    x_negative = ctx.g.node("Less", [x, zero])
    y_negative = ctx.g.node("Less", [y, zero])
    shift = ctx.g.node("Where", [y_negative, ctx.g.node("Neg", [pi]), pi])
    return ctx.g.node("Where", [x_negative, ctx.g.node("Add", [angle, shift]), angle])



@converts(pw.Hypot)
def hypot(ctx):
    """big * sqrt(1 + (small / big)^2), as C's hypot, so that squares cannot overflow; 0 where both are 0."""
    a, b = (ctx.g.node("Abs", [v]) for v in _operands(ctx))
    big, small = ctx.g.node("Max", [a, b]), ctx.g.node("Min", [a, b])
    zero, one = ctx.scalar(0.0, ctx.state["dtype"]), ctx.scalar(1.0, ctx.state["dtype"])
    is_zero = ctx.g.node("Equal", [big, zero])
    ratio = ctx.g.node("Div", [small, ctx.g.node("Where", [is_zero, one, big])])
    root = ctx.g.node("Sqrt", [ctx.g.node("Add", [one, ctx.g.node("Mul", [ratio, ratio])])])
    return ctx.g.node("Mul", [big, root])


@converts(pw.LogAddExp, pw.LogAddExp2)
def logaddexp(ctx):
    """max + softplus(-|a - b|) (base 2: the gap and the softplus scaled by ln 2); equal operands, infinities
    among them, give a + log(2) (base 2: a + 1) instead of inf - inf."""
    a, b = _operands(ctx)
    dtype = ctx.state["dtype"]
    base2 = ctx.op.cls is pw.LogAddExp2
    gap = ctx.g.node("Neg", [ctx.g.node("Abs", [ctx.g.node("Sub", [a, b])])])
    if base2:
        gap = ctx.g.node("Mul", [gap, ctx.scalar(math.log(2.0), dtype)])
    rest = ctx.g.node("Softplus", [gap])
    if base2:
        rest = ctx.g.node("Div", [rest, ctx.scalar(math.log(2.0), dtype)])
    y = ctx.g.node("Add", [ctx.g.node("Max", [a, b]), rest])
    doubled = ctx.g.node("Add", [a, ctx.scalar(1.0 if base2 else math.log(2.0), dtype)])
    return ctx.g.node("Where", [ctx.g.node("Equal", [a, b]), doubled, y])

# ---- unary ----------------------------------------------------------------------------------------
_UNARY = {ew.Neg: "Neg", ew.Abs: "Abs", ew.Sign: "Sign", ew.Exp: "Exp", ew.Log: "Log", ew.Sqrt: "Sqrt",
          ew.Reciprocal: "Reciprocal", ew.Sin: "Sin", ew.Cos: "Cos", ew.Tan: "Tan", ew.Atan: "Atan",
          ew.Asin: "Asin", ew.Acos: "Acos", ew.Sinh: "Sinh", ew.Cosh: "Cosh", ew.Tanh: "Tanh",
          ew.Sigmoid: "Sigmoid", ew.Erf: "Erf", ew.Floor: "Floor", ew.Ceil: "Ceil"}


@converts(*_UNARY)
def unary(ctx):
    return ctx.g.node(_UNARY[ctx.op.cls], [ctx.input(0, ctx.state["dtype"])])


@converts(ew.Round)
def round_(ctx):
    """Round half to even (numpy's and ONNX's), to ``decimals`` places."""
    dtype = ctx.state["dtype"]
    x = ctx.input(0, dtype)
    decimals = ctx.state.get("decimals", 0)
    if not decimals:
        return ctx.g.node("Round", [x])
    scale = ctx.scalar(10.0 ** decimals, dtype)
    return ctx.g.node("Div", [ctx.g.node("Round", [ctx.g.node("Mul", [x, scale])]), scale])


@converts(ew.Trunc)
def trunc(ctx):
    return _trunc(ctx, ctx.input(0, ctx.state["dtype"]))


@converts(ew.Frac)
def frac(ctx):
    x = ctx.input(0, ctx.state["dtype"])
    return ctx.g.node("Sub", [x, _trunc(ctx, x)])


@converts(ew.Rsqrt)
def rsqrt(ctx):
    return ctx.g.node("Reciprocal", [ctx.g.node("Sqrt", [ctx.input(0, ctx.state["dtype"])])])


@converts(ew.Square)
def square(ctx):
    x = ctx.input(0, ctx.state["dtype"])
    return ctx.g.node("Mul", [x, x])


@converts(ew.Exp2, ew.Expm1, ew.Log2, ew.Log10, ew.Log1p)
def exp_log_variants(ctx):
    x = ctx.input(0, ctx.state["dtype"])
    dtype = ctx.state["dtype"]
    name = ctx.name
    if name == "Exp2":
        return ctx.g.node("Pow", [ctx.scalar(2.0, dtype), x])
    if name == "Expm1":
        return ctx.g.node("Sub", [ctx.g.node("Exp", [x]), ctx.scalar(1.0, dtype)])
    if name == "Log1p":
        return ctx.g.node("Log", [ctx.g.node("Add", [x, ctx.scalar(1.0, dtype)])])
    base = 2.0 if name == "Log2" else 10.0
    return ctx.g.node("Div", [ctx.g.node("Log", [x]), ctx.scalar(np.log(base), dtype)])


# ---- bounds, selection, comparison, logic ----------------------------------------------------------
@converts(ew.Clamp)
def clamp(ctx):
    dtype = ctx.state["dtype"]
    x = ctx.input(0, dtype)
    y = x
    if not ctx.is_none(1):
        y = ctx.g.node("Max", [y, ctx.input(1, dtype)])
    if not ctx.is_none(2):
        y = ctx.g.node("Min", [y, ctx.input(2, dtype)])
    return y if y is not x else ctx.g.node("Identity", [x])


@converts(ew.Where)
def where(ctx):
    dtype = ctx.state["dtype"]
    return ctx.g.node("Where", [ctx.input(0, np.bool_), ctx.input(1, dtype), ctx.input(2, dtype)])


_COMPARE = {"equal": ("Equal", False), "not_equal": ("Equal", True), "less": ("Less", False),
            "less_equal": ("LessOrEqual", False), "greater": ("Greater", False),
            "greater_equal": ("GreaterOrEqual", False)}


@converts(ew._Compare)
def compare(ctx):
    op_type, negate = _COMPARE[ctx.state["ufunc"]]
    y = ctx.g.node(op_type, list(_operands(ctx)))
    return ctx.g.node("Not", [y]) if negate else y


_LOGIC = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor", "logical_not": "Not",
          "bitwise_and": "BitwiseAnd", "bitwise_or": "BitwiseOr", "bitwise_xor": "BitwiseXor", "invert": "BitwiseNot"}
_BOOL_LOGIC = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor", "invert": "Not"}


@converts(ew._Bitwise)
def bitwise(ctx):
    ufunc = ctx.state["ufunc"]
    if ufunc.startswith("logical"):
        operands = [ctx.input(i, np.bool_) for i in range(ctx.n_args()) if not ctx.is_none(i)]
        return ctx.g.node(_LOGIC[ufunc], operands)
    dtype = ctx.state["dtype"]
    operands = [ctx.input(i, dtype) for i in range(ctx.n_args()) if not ctx.is_none(i)]
    if dtype == np.bool_:
        return ctx.g.node(_BOOL_LOGIC[ufunc], operands)
    if ctx.opset < 18:
        ctx.fail(f"{ufunc} of integers needs ONNX opset 18 (Bitwise* operators)")
    return ctx.g.node(_LOGIC[ufunc], operands)


@converts(ew._Predicate)
def predicate(ctx):
    x = ctx.input(0)
    ufunc = ctx.state["ufunc"]
    if ufunc == "isnan":
        return ctx.g.node("IsNaN", [x])
    if ufunc == "isinf":
        return ctx.is_inf(x, ctx.in_dtype(0))
    return ctx.g.node("Not", [ctx.g.node("Or", [ctx.g.node("IsNaN", [x]), ctx.is_inf(x, ctx.in_dtype(0))])])


@converts(ew.NanToNum)
def nan_to_num(ctx):
    x = ctx.input(0)
    dtype = ctx.out_dtype()
    nan, posinf, neginf = ctx.state["args"]
    info = np.finfo(dtype)
    y = ctx.g.node("Where", [ctx.g.node("IsNaN", [x]), ctx.scalar(nan), x])
    y = ctx.g.node("Where", [ctx.is_inf(y, dtype, detect_negative=0),
                             ctx.scalar(info.max if posinf is None else posinf), y])
    return ctx.g.node("Where", [ctx.is_inf(y, dtype, detect_positive=0),
                                ctx.scalar(info.min if neginf is None else neginf), y])


# ---- casts and copies -----------------------------------------------------------------------------
@converts(convert.ToDtype)
def to_dtype(ctx):
    return ctx.g.node("Cast", [ctx.input(0)], to=ctx.g.elem_type(ctx.state["dtype"].np))


@converts(convert.Alias, convert.Clone, convert.Contiguous, convert.ToDevice)
def identity(ctx):
    return ctx.g.node("Identity", [ctx.input(0)])


@converts(convert.Copy)
def copy(ctx):
    """``dst.copy_(src)``: the result is src broadcast to dst's shape, in dst's dtype."""
    src = ctx.cast(ctx.input(1), ctx.in_dtype(1), ctx.out_dtype())
    return ctx.g.node("Expand", [src, ctx.shape_of(ctx.input(0))])
