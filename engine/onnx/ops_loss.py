"""Converters of the loss Functions (engine/nn/functional/loss.py): the pointwise regression losses, the binary
cross-entropies, NLL / cross-entropy with class indices (weights, ``ignore_index``, label smoothing) or class
probabilities, KL divergence, the soft margin loss, and the final sum or mean (``_Reduce``).

Each is written from the engine's own formula, in the op's float dtype, so that ONNX Runtime gives the eager
numbers; ONNX's NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss are not used (no label smoothing). A mean
over values whose count follows the input is a ``ReduceMean`` (the count is read at run time).
"""
import numpy as np

from ..nn.functional import loss
from .table import converts


def _all_axes(ctx, i=0):
    return list(range(len(ctx.in_shape(i))))


def _total(ctx, x, rank, mean):
    """Sum or mean of every element of ``x`` (of ``rank`` dims) as a 0-d value."""
    if rank == 0:
        return ctx.g.node("Identity", [x])
    return ctx.reduce("ReduceMean" if mean else "ReduceSum", x, list(range(rank)), False)


@converts(loss._Reduce)
def reduce_all(ctx):
    """``x.mean()`` or ``x.sum()`` of a loss (a mean of no values is NaN in both)."""
    return _total(ctx, ctx.input(0), len(ctx.in_shape(0)), ctx.state["mean"])


# ---- pointwise regression losses ---------------------------------------------------------------
def _difference(ctx):
    dtype = ctx.state["dtype"]
    return ctx.g.node("Sub", [ctx.input(0, dtype), ctx.input(1, dtype)])


@converts(loss._MSE)
def mse(ctx):
    d = _difference(ctx)
    return ctx.g.node("Mul", [d, d])


@converts(loss._L1)
def l1(ctx):
    return ctx.g.node("Abs", [_difference(ctx)])


@converts(loss._SmoothL1, loss._Huber)
def smooth_l1(ctx):
    """Where |d| < beta: 0.5 d^2 / beta (smooth L1) or 0.5 d^2 (Huber); else |d| - 0.5 beta or delta (|d| - 0.5
    delta)."""
    param = ctx.state["param"]
    d = _difference(ctx)
    ad = ctx.g.node("Abs", [d])
    square = ctx.g.node("Mul", [d, d])
    if ctx.op.cls is loss._SmoothL1:
        inside = ctx.g.node("Mul", [ctx.g.node("Mul", [ctx.scalar(0.5 / param), d]), d])
        outside = ctx.g.node("Sub", [ad, ctx.scalar(0.5 * param)])
    else:
        inside = ctx.g.node("Mul", [ctx.scalar(0.5), square])
        outside = ctx.g.node("Mul", [ctx.scalar(param), ctx.g.node("Sub", [ad, ctx.scalar(0.5 * param)])])
    return ctx.g.node("Where", [ctx.g.node("Less", [ad, ctx.scalar(param)]), inside, outside])


# ---- binary cross-entropies --------------------------------------------------------------------
def _weighted(ctx, value, i):
    """``value * argument i`` when the optional weight ``i`` is given."""
    return value if ctx.is_none(i) else ctx.g.node("Mul", [value, ctx.input(i)])


@converts(loss._BCE)
def bce(ctx):
    """-(t max(log x, -100) + (1 - t) max(log(1 - x), -100)) w (the eager range check on x is not exported)."""
    x, t = ctx.input(0), ctx.input(1)
    floor = ctx.scalar(-100)
    log_x = ctx.g.node("Max", [ctx.g.node("Log", [x]), floor])
    log_1mx = ctx.g.node("Max", [ctx.g.node("Log", [ctx.g.node("Sub", [ctx.scalar(1), x])]), floor])
    both = ctx.g.node("Add", [ctx.g.node("Mul", [t, log_x]),
                              ctx.g.node("Mul", [ctx.g.node("Sub", [ctx.scalar(1), t]), log_1mx])])
    return _weighted(ctx, ctx.g.node("Neg", [both]), 2)


def _softplus(ctx, x):
    """log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))."""
    tail = ctx.g.node("Log", [ctx.g.node("Add", [ctx.scalar(1), ctx.g.node("Exp", [ctx.g.node("Neg", [
        ctx.g.node("Abs", [x])])])])])
    return ctx.g.node("Add", [ctx.g.node("Relu", [x]), tail])


@converts(loss._BCEWithLogits)
def bce_with_logits(ctx):
    """((1 - t) x + (1 + (pw - 1) t) softplus(-x)) w."""
    x, t = ctx.input(0), ctx.input(1)
    sp = _softplus(ctx, ctx.g.node("Neg", [x]))
    if not ctx.is_none(3):
        scale = ctx.g.node("Add", [ctx.scalar(1), ctx.g.node("Mul", [ctx.g.node("Sub", [ctx.input(3), ctx.scalar(1)]),
                                                                     t])])
        sp = ctx.g.node("Mul", [scale, sp])
    value = ctx.g.node("Add", [ctx.g.node("Mul", [ctx.g.node("Sub", [ctx.scalar(1), t]), x]), sp])
    return _weighted(ctx, value, 2)


@converts(loss._SoftMargin)
def soft_margin(ctx):
    """softplus(-t x)."""
    return _softplus(ctx, ctx.g.node("Neg", [ctx.g.node("Mul", [ctx.input(1), ctx.input(0)])]))


# ---- class losses ------------------------------------------------------------------------------
def _class_weights_shape(rank):
    """The shape (1, C, 1...) a class weight vector is read in against a (N, C, d...) input."""
    return [1, -1] + [1] * (rank - 2)


def _batched(ctx, x, t):
    """An unbatched (C,) input and its target with a batch axis added; (x, t, unbatched, rank, classes)."""
    unbatched = len(ctx.in_shape(0)) == 1
    if unbatched:
        x, t = ctx.unsqueeze(x, [0]), ctx.unsqueeze(t, [0])
    return x, t, unbatched, max(len(ctx.in_shape(0)), 2), ctx.in_shape(0)[0 if unbatched else 1]


@converts(loss._ClassLoss)
def class_loss(ctx):
    """NLL of log-probabilities (or of log_softmax(logits)) at class indices, skipping ``ignore_index``:
    loss_n = -(1 - eps) w[t_n] logp[n, t_n] - (eps / C) sum_c w_c logp[n, c]; the mean divides by the
    sum of w[t_n] over the targets kept."""
    dtype = ctx.out_dtype()
    x, t, unbatched, rank, n_class = _batched(ctx, ctx.input(0, dtype), ctx.input(1, np.int64))
    eps, reduction = ctx.state["eps"], ctx.state["reduction"]
    logp = ctx.g.node("LogSoftmax", [x], axis=1) if ctx.state["from_logits"] else x
    valid = ctx.g.node("Not", [ctx.g.node("Equal", [t, ctx.scalar(ctx.state["ignore_index"], np.int64)])])
    target = ctx.g.node("Where", [valid, t, ctx.scalar(0, np.int64)])
    picked = ctx.squeeze(ctx.g.node("GatherElements", [logp, ctx.unsqueeze(target, [1])], axis=1), [1])
    zero = ctx.scalar(0, dtype)
    if ctx.is_none(2):
        weight = ctx.g.node("Cast", [valid], to=ctx.g.elem_type(dtype))
    else:
        w = ctx.input(2, dtype)
        weight = ctx.g.node("Where", [valid, ctx.g.node("Gather", [w, target], axis=0), zero])
    value = ctx.g.node("Mul", [ctx.g.node("Mul", [picked, weight]), ctx.scalar(-(1 - eps), dtype)])
    if eps:
        spread = logp if ctx.is_none(2) else ctx.g.node("Mul", [logp, ctx.g.node(
            "Reshape", [w, ctx.g.ints(_class_weights_shape(rank))])])
        smooth = ctx.g.node("Neg", [ctx.reduce("ReduceSum", spread, [1], False)])
        smooth = ctx.g.node("Where", [valid, smooth, zero])
        value = ctx.g.node("Add", [value, ctx.g.node("Mul", [smooth, ctx.scalar(eps / n_class, dtype)])])
    if reduction == "none":
        return ctx.squeeze(value, [0]) if unbatched else value
    total = _total(ctx, value, rank - 1, False)
    if reduction == "sum":
        return total
    return ctx.g.node("Div", [total, _total(ctx, weight, rank - 1, False)])


@converts(loss._SoftTargetCE)
def soft_target_ce(ctx):
    """-sum_c w_c t'_c log_softmax(x)_c with t' = (1 - eps) t + eps / C (class probabilities)."""
    dtype = ctx.out_dtype()
    x, t, unbatched, rank, n_class = _batched(ctx, ctx.input(0, dtype), ctx.input(1, dtype))
    eps, reduction = ctx.state["eps"], ctx.state["reduction"]
    if eps:
        t = ctx.g.node("Add", [ctx.g.node("Mul", [t, ctx.scalar(1 - eps, dtype)]), ctx.scalar(eps / n_class, dtype)])
    if not ctx.is_none(2):
        t = ctx.g.node("Mul", [t, ctx.g.node("Reshape", [ctx.input(2, dtype),
                                                         ctx.g.ints(_class_weights_shape(rank))])])
    logp = ctx.g.node("LogSoftmax", [x], axis=1)
    value = ctx.g.node("Neg", [ctx.reduce("ReduceSum", ctx.g.node("Mul", [logp, t]), [1], False)])
    if reduction == "none":
        return ctx.squeeze(value, [0]) if unbatched else value
    return _total(ctx, value, rank - 1, reduction == "mean")


@converts(loss._KLDiv)
def kl_div(ctx):
    """exp(t) (t - x) for log-probability targets, else t log t - t x with 0 log 0 = 0."""
    x, t = ctx.input(0), ctx.input(1)
    if ctx.state["log_target"]:
        return ctx.g.node("Mul", [ctx.g.node("Exp", [t]), ctx.g.node("Sub", [t, x])])
    zero = ctx.scalar(0)
    entropy = ctx.g.node("Where", [ctx.g.node("Equal", [t, zero]), zero, ctx.g.node("Mul", [t, ctx.g.node("Log", [t])])])
    return ctx.g.node("Sub", [entropy, ctx.g.node("Mul", [t, x])])
