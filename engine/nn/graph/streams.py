"""Batch streams: an inference plan whose every op works sample by sample runs its batch as one stream
per BLAS thread, each stream a plan of its own for its share of the images, all at once, with OpenBLAS
on one thread.

OpenBLAS splits every GEMM over all cores, and between GEMMs the cores wait on each other and on the
numpy passes between them. One stream per core keeps each core busy with its own images instead. On
2 cores (medians of 8-10 calls, separate processes, 2026-12-03): resnet50 at batch 8 474-519 ms a
call as two streams of 4 against 558-607 ms as one, at batch 2 132-143 against 171-184;
mobilenet_v3_large at batch 8 102-108 against 161-172; mobilenet_v2 at batch 2 the same time. Outputs
equal the single plan's up to the GEMMs' rounding.

A plan qualifies when all its inputs, values and outputs have the same leading (batch) size of 2 or
more and every op is one known to compute each sample from that sample alone: elementwise ops whose
other operands do not vary along the batch, convolutions, pooling, eval BatchNorm, linear layers,
resizing, reshapes that keep the batch axis, and softmax, concatenation, slicing and sums, means and maxima
along other axes (squeeze-and-excitation's spatial means).
Anything else (an unknown op, a reduction over the batch, training-mode BatchNorm) keeps it whole.
"""
import numpy as np

from ... import backends
from ...ops import activation, convert, elementwise, reduction
from ...ops.shape import Cat, Reshape, Slice
from ..functional.conv import ConvNd
from ..functional.linear import _Linear
from ..functional.normalization import BatchNorm
from ..functional.pooling import _Pool
from ..functional.vision import Interpolate
from .passes import FusedConv
from .plan import SLOT, TENSOR

_ELEMENTWISE = (elementwise._Binary, elementwise._Unary, elementwise.Clamp, elementwise.Where,
                elementwise._Compare, elementwise._Bitwise, elementwise._Predicate, elementwise.NanToNum,
                convert.Alias, convert.Clone, convert.Contiguous, convert.ToDtype)


def _elementwise_ok(op, shapes):
    """Broadcasting keeps samples apart when every graph value spans all output dims (so its batch axis
    meets the output's) and no outside tensor or constant varies along the batch axis."""
    ndim = len(shapes[op.outs[0]])
    for kind, ref in op.args:
        if kind == SLOT:
            if len(shapes[ref]) != ndim:
                return False
            continue
        shape = tuple(ref.shape) if kind == TENSOR else np.shape(ref)
        if len(shape) == ndim and shape[0] != 1:
            return False
    return True


def _slice_ok(key, ndim):
    """Basic indexing leaves the batch axis whole: its first entry is ``:``, or an Ellipsis that covers
    at least the first axis."""
    first = key[0]
    if first is Ellipsis:
        return sum(k is not None and k is not Ellipsis for k in key) < ndim
    return isinstance(first, slice) and first == slice(None)


def _op_ok(op, shapes):
    """Whether ``op`` computes each sample of its output from that sample of its inputs alone."""
    cls, state = op.cls, op.state
    x_shape = shapes[op.args[0][1]] if op.args and op.args[0][0] == SLOT else None
    if op.inplace and op.args and op.args[0][0] != SLOT:
        return False  # writes to something outside the graph
    if issubclass(cls, activation._Activation):
        return cls is not activation.RReLU and _elementwise_ok(op, shapes)
    if issubclass(cls, _ELEMENTWISE):
        return _elementwise_ok(op, shapes)
    if x_shape is None:
        return False
    ndim = len(x_shape)
    if cls in (activation.Softmax, activation.LogSoftmax):
        return ndim >= 2 and state["dim"] is not None and state["dim"] % ndim != 0
    if cls in (ConvNd, FusedConv):
        return ndim == state["nd"] + 2
    if cls is BatchNorm:
        return not state["training"] and ndim >= 2
    if cls is _Linear:
        return ndim >= 2
    if cls in (_Pool, Interpolate, Reshape):
        return True  # trailing axes only; a reshape keeping the leading size keeps samples apart
    if cls is Cat:
        return state["dim"] % ndim != 0
    if cls is Slice:
        return _slice_ok(state["key"], ndim)
    if cls in (reduction.Sum, reduction.Mean, reduction.AMax):
        axes = state["axes"]
        axes = (axes,) if isinstance(axes, int) else axes
        return axes is not None and all(a % ndim != 0 for a in axes)
    return False


def stream_batch(plan, shapes):
    """The batch size this plan can be split along (see the module docstring), or None."""
    slots = list(plan.input_slots) + [s for op in plan.ops for s in op.outs]
    if not plan.input_slots or any(len(shapes[s]) == 0 for s in slots):
        return None
    batch = shapes[plan.input_slots[0]][0]
    if batch < 2 or any(shapes[s][0] != batch for s in slots):
        return None
    return batch if all(_op_ok(op, shapes) for op in plan.ops) else None


def stream_bounds(batch):
    """The samples [lo, hi) of each stream: as many streams as the CPU runtime allows (one per BLAS
    thread), the batch shared out evenly."""
    n = backends.runtime("cpu").stream_count(batch)
    cuts = [batch * i // n for i in range(n + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def plan_bounds(plan):
    """``stream_bounds`` of the plan's batch where it runs as two or more streams, else []."""
    bounds = stream_bounds(plan.stream_batch) if plan.stream_batch is not None else []
    return bounds if len(bounds) > 1 else []


def run(plan, arrays, part_plan):
    """The plan's outputs on ``arrays`` computed by streams, or None where it runs as one plan.
    ``part_plan(lo, hi)`` gives (compiling it the first time) the plan for samples [lo, hi)."""
    bounds = plan_bounds(plan)
    if not bounds or not all(isinstance(a, np.ndarray) for a in arrays):
        return None
    parts = [(part_plan(lo, hi), [a[lo:hi] for a in arrays]) for lo, hi in bounds]
    results = backends.runtime("cpu").run_streams([lambda p=p, a=a: p.run_arrays(a) for p, a in parts])
    if results is None:
        return None
    return plan.share_outputs([np.concatenate(outs) for outs in zip(*results)], arrays)
