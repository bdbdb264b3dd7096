"""Converters of the activations and softmaxes (engine/ops/activation.py).

Where ONNX has the function at the asked opset it is used (Relu, HardSwish, HardSigmoid, Softmax...);
the others are written from the engine's own formula (GELU before opset 20, SiLU, Mish, Softplus with
its threshold).
"""
import math

import numpy as np

from ..ops import activation as act
from .table import converts


def _x(ctx):
    return ctx.input(0)


def _scalar(ctx, value):
    return ctx.scalar(value, ctx.out_dtype())


@converts(act.ReLU)
def relu(ctx):
    return ctx.g.node("Relu", [_x(ctx)])


@converts(act.Hardtanh)
def hardtanh(ctx):
    return ctx.g.node("Clip", [_x(ctx), _scalar(ctx, ctx.state["lo"]), _scalar(ctx, ctx.state["hi"])])


@converts(act.LeakyReLU)
def leaky_relu(ctx):
    return ctx.g.node("LeakyRelu", [_x(ctx)], alpha=float(ctx.state["slope"]))


@converts(act.Threshold)
def threshold(ctx):
    x = _x(ctx)
    keep = ctx.g.node("Greater", [x, _scalar(ctx, ctx.state["threshold"])])
    return ctx.g.node("Where", [keep, x, _scalar(ctx, ctx.state["value"])])


@converts(act.Hardshrink, act.Softshrink)
def shrink(ctx):
    lambd = float(ctx.state["lambd"])
    return ctx.g.node("Shrink", [_x(ctx)], lambd=lambd, bias=lambd if ctx.op.cls is act.Softshrink else 0.0)


@converts(act.ELU)
def elu(ctx):
    alpha, scale, input_scale = (float(ctx.state[k]) for k in ("alpha", "scale", "input_scale"))
    x = _x(ctx)
    if input_scale == 1.0 and scale == 1.0:
        return ctx.g.node("Elu", [x], alpha=alpha)
    negative = ctx.g.node("Mul", [ctx.g.node("Sub", [ctx.g.node("Exp", [ctx.g.node("Mul", [x, _scalar(ctx, input_scale)])]),
                                                     _scalar(ctx, 1.0)]), _scalar(ctx, scale * alpha)])
    positive = ctx.g.node("Mul", [x, _scalar(ctx, scale)])
    return ctx.g.node("Where", [ctx.g.node("Greater", [x, _scalar(ctx, 0.0)]), positive, negative])


@converts(act.GELU)
def gelu(ctx):
    x = _x(ctx)
    approximate = ctx.state["approximate"]
    if ctx.opset >= 20:
        return ctx.g.node("Gelu", [x], approximate=approximate)
    if approximate == "tanh":
        cube = ctx.g.node("Mul", [ctx.g.node("Mul", [x, x]), x])
        inner = ctx.g.node("Add", [x, ctx.g.node("Mul", [cube, _scalar(ctx, 0.044715)])])
        t = ctx.g.node("Tanh", [ctx.g.node("Mul", [inner, _scalar(ctx, math.sqrt(2.0 / math.pi))])])
    else:
        t = ctx.g.node("Erf", [ctx.g.node("Mul", [x, _scalar(ctx, 1 / math.sqrt(2.0))])])
    half_x = ctx.g.node("Mul", [x, _scalar(ctx, 0.5)])
    return ctx.g.node("Mul", [half_x, ctx.g.node("Add", [t, _scalar(ctx, 1.0)])])


@converts(act.SiLU)
def silu(ctx):
    x = _x(ctx)
    return ctx.g.node("Mul", [x, ctx.g.node("Sigmoid", [x])])


def _softplus(ctx, x):
    return ctx.g.node("Softplus", [x])


@converts(act.Mish)
def mish(ctx):
    x = _x(ctx)
    return ctx.g.node("Mul", [x, ctx.g.node("Tanh", [_softplus(ctx, x)])])


@converts(act.Hardswish)
def hardswish(ctx):
    x = _x(ctx)
    if ctx.opset < 14:
        return ctx.g.node("Mul", [x, ctx.g.node("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])
    return ctx.g.node("HardSwish", [x])


@converts(act.Hardsigmoid)
def hardsigmoid(ctx):
    return ctx.g.node("HardSigmoid", [_x(ctx)], alpha=1.0 / 6, beta=0.5)


@converts(act.Softplus)
def softplus(ctx):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as the engine and torch)."""
    x = _x(ctx)
    beta, limit = float(ctx.state["beta"]), float(ctx.state["threshold"])
    bx = ctx.g.node("Mul", [x, _scalar(ctx, beta)]) if beta != 1.0 else x
    soft = _softplus(ctx, bx)
    if beta != 1.0:
        soft = ctx.g.node("Div", [soft, _scalar(ctx, beta)])
    return ctx.g.node("Where", [ctx.g.node("Greater", [bx, _scalar(ctx, limit)]), x, soft])


@converts(act.Softsign)
def softsign(ctx):
    return ctx.g.node("Softsign", [_x(ctx)])


@converts(act.Tanhshrink)
def tanhshrink(ctx):
    x = _x(ctx)
    return ctx.g.node("Sub", [x, ctx.g.node("Tanh", [x])])


@converts(act.LogSigmoid)
def log_sigmoid(ctx):
    return ctx.g.node("Neg", [_softplus(ctx, ctx.g.node("Neg", [_x(ctx)]))])


@converts(act.PReLU)
def prelu(ctx):
    """PRelu of the input and the slopes, both in the result dtype (ONNX wants one type)."""
    x = ctx.input(0, ctx.out_dtype())
    rank = len(ctx.in_shape(0))
    n = int(np.prod(ctx.in_shape(1)))
    shape = [1] * rank
    if n > 1:
        shape[1] = n
    slope = ctx.g.node("Reshape", [ctx.input(1, ctx.out_dtype()), ctx.g.ints(shape)])
    return ctx.g.node("PRelu", [x, slope])


@converts(act.GLU)
def glu(ctx):
    dim = ctx.state["dim"]
    half = ctx.in_shape(0)[dim] // 2
    a, b = ctx.split(_x(ctx), dim, [half, half])
    return ctx.g.node("Mul", [a, ctx.g.node("Sigmoid", [b])])


@converts(act.Softmax, act.LogSoftmax)
def softmax(ctx):
    op_type = "Softmax" if ctx.op.cls is act.Softmax else "LogSoftmax"
    if not ctx.in_shape(0):
        ctx.fail("softmax of a 0-d tensor")
    return ctx.g.node(op_type, [_x(ctx)], axis=ctx.state["dim"])
