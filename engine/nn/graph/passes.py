"""Inference passes over a traced Plan: fold BatchNorm into convolutions, fuse the residual add and
activation into the convolution's output, drop dead ops, and free values after their last use.

Each pass returns a one-line summary of what it changed (``Graph.debug`` prints them).
"""
import numpy as np

from ...autograd.function import Function
from ...ops._common import xp_of
from ...ops.activation import ReLU
from ...ops.elementwise import Add
from ..functional.conv import ConvNd
from ..functional.normalization import BatchNorm
from .plan import SLOT, TENSOR, Op


class FusedConv(Function):
    """conv2d with BatchNorm folded into its weights, then ``+ residual`` and ReLU in place.

    The folded weights are cached and recomputed only when a parameter or running statistic
    changed (their version counters), so an optimizer step between replays is honoured.
    """

    op_name = "FusedConv"

    def forward(self, x, w, b, residual=None):
        from ... import backends
        if self.bn is not None:
            w, b = self.folded(w, b)
        kernels = backends.kernels(x, "conv")
        if self.nd == 1:
            x, w = x[:, :, None, :], w[:, :, None, :]
        y, _ = kernels.conv2d_forward(x, w, b, self.stride, self.pads, self.dilation, self.groups,
                                      weight_grad=False)
        if self.nd == 1:
            y = y[:, :, 0, :]
        if residual is not None:
            y += residual
        if self.relu:
            xp_of(y).maximum(y, 0, out=y)
        return y

    def folded(self, w, b):
        eps, mean, var, gamma, beta = self.bn
        tensors = [t for t in (mean, var, gamma, beta) if t is not None]
        key = tuple(t._version[0] for t in tensors) + tuple(id(t._data) for t in tensors) + (id(w), id(b))
        cache = self.cache
        if cache.get("key") != key or cache.get("w_version") != self.w_version():
            scale = 1 / np.sqrt(var._data.astype(np.float64) + eps)
            if gamma is not None:
                scale = scale * gamma._data
            shift = -mean._data * scale
            if beta is not None:
                shift = shift + beta._data
            if b is not None:
                shift = shift + b * scale
            cache["w"] = (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(w.dtype)
            cache["b"] = shift.astype(w.dtype)
            cache["key"], cache["w_version"] = key, self.w_version()
        return cache["w"], cache["b"]

    def w_version(self):
        return tuple(t._version[0] for t in self.conv_params if t is not None)


def _consumers(plan):
    uses = {}
    for i, op in enumerate(plan.ops):
        for slot in op.slot_args():
            uses.setdefault(slot, []).append(i)
    return uses


def _single_use(plan, uses, slot):
    return slot not in plan.output_slots and len(uses.get(slot, ())) == 1 and all(
        s != slot for s, _ in plan.backward_calls)


def fuse_convolutions(plan, fuse_add=True):
    """Turn conv [-> eval BatchNorm] [-> add residual] [-> ReLU] chains into single FusedConv ops."""
    counts = {"bn": 0, "add": 0, "relu": 0}
    while True:
        uses = _consumers(plan)
        changed = False
        for i, op in enumerate(plan.ops):
            if op.cls is not ConvNd or op.args[1][0] != TENSOR:
                continue
            chain = _fusible_chain(plan, uses, i, fuse_add)
            if chain is None:
                continue
            fused, removed, kinds = chain
            for k in kinds:
                counts[k] += 1
            plan.ops[i] = fused
            plan.ops = [o for j, o in enumerate(plan.ops) if j not in removed]
            changed = True
            break
        if not changed:
            break
    total = sum(counts.values())
    return (f"fuse_convolutions: {total} ops fused into convolutions "
            f"({counts['bn']} BatchNorm folded, {counts['add']} residual adds, {counts['relu']} ReLUs)")


def _fusible_chain(plan, uses, i, fuse_add):
    conv = plan.ops[i]
    state = conv.state
    out = conv.outs[0]
    bn = None
    removed, kinds = [], []
    weight = conv.args[1][1]
    bias = conv.args[2]
    j = _next_consumer(plan, uses, out)
    if j is not None and plan.ops[j].cls is BatchNorm and not plan.ops[j].state["training"]:
        bn_op = plan.ops[j]
        if bn_op.args[0] == (SLOT, out) and all(kind != SLOT for kind, _ in bn_op.args[1:]):
            mean, var = bn_op.state["running"]
            gamma = bn_op.args[1][1] if bn_op.args[1][0] == TENSOR else None
            beta = bn_op.args[2][1] if bn_op.args[2][0] == TENSOR else None
            bn = (bn_op.state["eps"], mean, var, gamma, beta)
            removed.append(j)
            kinds.append("bn")
            out = bn_op.outs[0]
            j = _next_consumer(plan, uses, out)
    residual = None
    if fuse_add and j is not None and plan.ops[j].cls is Add and plan.ops[j].state.get("alpha", 1) == 1:
        add = plan.ops[j]
        refs = add.args
        if refs[0] == (SLOT, out) and refs[1][0] == SLOT:
            residual = refs[1]
        elif refs[1] == (SLOT, out) and refs[0][0] == SLOT and not add.inplace:
            residual = refs[0]
        if residual is not None and not _computed_before(plan, residual[1], i):
            residual = None  # the fused op runs where the conv did: its residual must exist by then
        if residual is not None:
            removed.append(j)
            kinds.append("add")
            out = add.outs[0]
            j = _next_consumer(plan, uses, out)
    relu = False
    if j is not None and plan.ops[j].cls is ReLU and plan.ops[j].args[0] == (SLOT, out):
        relu = True
        removed.append(j)
        kinds.append("relu")
        out = plan.ops[j].outs[0]
    if not kinds:
        return None
    fused_state = {"nd": state["nd"], "stride": state["stride"], "pads": state["pads"],
                   "dilation": state["dilation"], "groups": state["groups"], "bn": bn, "relu": relu,
                   "cache": {}, "conv_params": (weight, bias[1] if bias[0] == TENSOR else None)}
    args = [conv.args[0], conv.args[1], conv.args[2]] + ([residual] if residual is not None else [])
    return Op(FusedConv, fused_state, args, [out]), set(removed), kinds


def _computed_before(plan, slot, i):
    """Whether ``slot`` is a graph input or an output of an op before op ``i``."""
    return not any(slot in op.outs for op in plan.ops[i:])


def _next_consumer(plan, uses, slot):
    """The only op reading ``slot``, when it has exactly one reader and is not a graph output."""
    if not _single_use(plan, uses, slot):
        return None
    return uses[slot][0]


def _has_side_effect(op):
    if op.inplace and op.args and op.args[0][0] == TENSOR:
        return True
    return op.cls is BatchNorm and op.state.get("training", False)


def eliminate_dead_ops(plan):
    """Remove ops whose outputs nobody reads (keeping in-place writes to parameters/buffers)."""
    needed = set(plan.output_slots) | {slot for slot, _ in plan.backward_calls}
    kept = []
    for op in reversed(plan.ops):
        if _has_side_effect(op) or any(s in needed for s in op.outs):
            kept.append(op)
            needed.update(op.slot_args())
    removed = len(plan.ops) - len(kept)
    plan.ops = kept[::-1]
    return f"eliminate_dead_ops: removed {removed} ops"


def plan_memory(plan):
    plan.plan_liveness()
    freed = sum(len(op.free_after) for op in plan.ops)
    return f"plan_memory: {freed} intermediate values released right after their last use"


def optimize_inference(plan, config):
    """Run the inference passes in order; returns the summaries."""
    log = [eliminate_dead_ops(plan)]
    log.append(fuse_convolutions(plan, fuse_add=config.fuse_add_to_output))
    log.append(plan_memory(plan))
    return log


__all__ = ["FusedConv", "optimize_inference", "eliminate_dead_ops", "fuse_convolutions", "plan_memory"]
