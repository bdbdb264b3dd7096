"""Inference passes over a traced Plan: fuse eval BatchNorm, the residual add and the activation into the
convolution's output pass, drop dead ops, and free values after their last use.

Each pass returns a one-line summary of what it changed (``Graph.debug`` prints them).
"""
from ... import backends
from ...autograd.function import Function
from ..._device import array_module
from ...backends import Epilogue
from ...ops.activation import GELU, Hardsigmoid, Hardswish, Hardtanh, ReLU, SiLU
from ...ops.elementwise import Add
from ..functional.conv import ConvNd
from ..functional.normalization import BatchNorm
from .plan import SLOT, TENSOR, Op


class FusedConv(Function):
    """conv2d, then in one pass over its output: eval BatchNorm as a per-channel scale and shift,
    ``+ residual`` and the activation (ReLU, ReLU6/Hardtanh, Hardswish, Hardsigmoid, SiLU or exact GELU).

    BatchNorm is applied to the output rather than folded into the weights, so the graph keeps no
    second copy of the convolution weights and always reads the current parameters and statistics.
    """

    op_name = "FusedConv"

    def forward(self, x, w, b, residual=None):
        kernels = backends.kernels(x, "conv")
        scale = shift = None
        if self.bn is not None:
            scale, shift = self.scale_shift(b)
            b = None
        if self.nd == 1:
            x, w = x[:, :, None, :], w[:, :, None, :]
        epilogue = Epilogue(scale, shift, residual, self.activation)
        if epilogue.is_empty():
            epilogue = None
        y, _ = kernels.conv2d_forward(x, w, b, self.stride, self.pads, self.dilation, self.groups,
                                      weight_grad=False, epilogue=epilogue)
        return y[:, :, 0, :] if self.nd == 1 else y

    def scale_shift(self, b):
        """BatchNorm's (scale, shift) per channel, with the convolution's bias ``b`` folded into the shift."""
        eps, mean, var, gamma, beta = self.bn
        xp = array_module(var._data)
        scale = 1 / xp.sqrt(var._data.astype(xp.float64) + eps)
        if gamma is not None:
            scale = scale * gamma._data
        shift = -mean._data * scale
        if beta is not None:
            shift = shift + beta._data
        if b is not None:
            shift = shift + b * scale
        return scale, shift


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
    """Turn conv [-> eval BatchNorm] [-> add residual] [-> activation] chains into single FusedConv ops."""
    counts = {"bn": 0, "add": 0, "activation": 0}
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
            f"({counts['bn']} BatchNorm fused, {counts['add']} residual adds, {counts['activation']} activations)")


def _fusible_chain(plan, uses, i, fuse_add):
    conv = plan.ops[i]
    state = conv.state
    out = conv.outs[0]
    bn = None
    removed, kinds = [], []
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
    activation = None
    if j is not None and plan.ops[j].args[0] == (SLOT, out):
        activation = _activation_spec(plan.ops[j])
        if activation is not None:
            removed.append(j)
            kinds.append("activation")
            out = plan.ops[j].outs[0]
    if not kinds:
        return None
    fused_state = {"nd": state["nd"], "stride": state["stride"], "pads": state["pads"],
                   "dilation": state["dilation"], "groups": state["groups"], "bn": bn, "activation": activation}
    args = [conv.args[0], conv.args[1], conv.args[2]] + ([residual] if residual is not None else [])
    return Op(FusedConv, fused_state, args, [out]), set(removed), kinds


def _activation_spec(op):
    """The epilogue's description of an activation op ("relu", "hardswish", "hardsigmoid", "silu", "gelu",
    ("clip", lo, hi)), else None (GELU's tanh approximation among those)."""
    if op.cls is ReLU:
        return "relu"
    if op.cls is Hardswish:
        return "hardswish"
    if op.cls is Hardsigmoid:
        return "hardsigmoid"
    if op.cls is SiLU:
        return "silu"
    if op.cls is GELU and op.state["approximate"] == "none":
        return "gelu"
    if op.cls is Hardtanh:
        return ("clip", op.state["lo"], op.state["hi"])
    return None


def _computed_before(plan, slot, i):
    """Whether ``slot`` is a graph input or an output of an op before op ``i``."""
    return not any(slot in op.outs for op in plan.ops[i:])


def _next_consumer(plan, uses, slot):
    """The only op reading ``slot``, when it has exactly one reader and is not a graph output."""
    if not _single_use(plan, uses, slot):
        return None
    return uses[slot][0]


def _has_side_effect(op):
    """Whether ``op`` writes something besides its outputs: an in-place op (its target may be a parameter, a
    buffer, or a view of a value that is read later, such as ``x.view(-1).mul_(2)`` before ``x`` is used; the
    later reader names ``x``'s slot, not the view's), or training BatchNorm (its running statistics)."""
    if op.inplace:
        return True
    return op.cls is BatchNorm and op.state.get("training", False)


def eliminate_dead_ops(plan):
    """Remove ops whose outputs nobody reads (keeping in-place writes and what they write into)."""
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
