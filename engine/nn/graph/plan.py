"""A traced program: the ops that ``build`` ran, as a flat list over numbered value slots.

Tracing runs ``build`` eagerly once with a ``Tracer`` active; each Function call is recorded
with a snapshot of its parameters, where its arguments came from (a slot computed in the graph,
a tensor from outside such as a parameter or buffer, or a constant) and the slots of its outputs.
A ``Plan`` replays that list on arrays (inference) or on tensors with autograd (training).
"""
import linecache
import os
import sys

from ...autograd import bfloat16, grad_mode, tracing
from ...tensor import Tensor, _new

SLOT, TENSOR, CONST = 0, 1, 2


class Op:
    """One recorded call: Function class, its parameter snapshot, argument refs and output slots.

    ``data_dependent`` is set on an op whose output size depends on values (nonzero, a boolean mask, NMS):
    (its traced output shapes, where it was called). A replay computes such sizes anew, which later ops that
    only map values follow; one that fails on them is reported with the size that changed (``Plan``)."""

    __slots__ = ("cls", "state", "args", "outs", "free_after", "data_dependent")

    def __init__(self, cls, state, args, outs):
        self.cls, self.state, self.args, self.outs = cls, state, args, outs
        self.free_after = ()
        self.data_dependent = None

    def size_change(self, outs):
        """For a data-dependent op whose outputs differ in shape from the traced ones, a phrase saying so."""
        traced, where = self.data_dependent
        now = tuple(tuple(o.shape) for o in outs)
        if now == traced:
            return None
        return f"{self.name()}{where} returned shape {_shapes(now)} where the traced call had {_shapes(traced)}"

    @property
    def inplace(self):
        return self.state.get("inplace", self.cls.inplace)

    def name(self):
        return getattr(self.cls, "op_name", self.cls.__name__)

    def slot_args(self):
        return [ref for kind, ref in self.args if kind == SLOT]

    def make(self):
        """A fresh Function instance carrying the recorded parameters."""
        fn = self.cls.__new__(self.cls)
        fn.__dict__.update(self.state)
        return fn

    def __repr__(self):
        args = ", ".join(f"%{ref}" if kind == SLOT else ("<tensor>" if kind == TENSOR else repr(ref))
                         for kind, ref in self.args)
        outs = ", ".join(f"%{s}" for s in self.outs)
        return f"{outs} = {self.name()}({args})"


class Plan:
    """The ops of one traced signature, with input/output slots and backward calls."""

    def __init__(self, ops, input_slots, output_slots, output_spec, backward_calls, n_slots):
        self.ops = ops
        self.input_slots = input_slots
        self.output_slots = output_slots
        self.output_spec = output_spec
        self.backward_calls = backward_calls
        self.n_slots = n_slots
        self.name = "nn.Graph"  # the graph's class name, for messages
        self.log = []
        self.stream_batch = None  # set where the batch may run as streams (graph/streams.py)
        self.parts = {}  # the stream plans, by their number of samples
        self.input_signature = None  # (input spec, [(shape, dtype, device)]): set by nn.Graph, saved with the plan
        self.captured = None  # the replay captured as a CUDA graph (capture.py), where it could be
        self.failed_op = None  # the op that raised in the last replay that failed

    def plan_liveness(self):
        """Drop each slot's value right after its last reader, so memory is freed as early as eager."""
        keep = set(self.output_slots) | {slot for slot, _ in self.backward_calls}
        last = {}
        for i, op in enumerate(self.ops):
            for slot in op.slot_args():
                last[slot] = i
            for slot in op.outs:
                last.setdefault(slot, i)
        frees = {}
        for slot, i in last.items():
            if slot not in keep:
                frees.setdefault(i, []).append(slot)
        for i, op in enumerate(self.ops):
            op.free_after = tuple(frees.get(i, ()))

    def run_arrays(self, arrays):
        """Replay on raw arrays without autograd (inference)."""
        env = [None] * self.n_slots
        for slot, arr in zip(self.input_slots, arrays):
            env[slot] = arr
        changed = None
        for op in self.ops:
            fn = op.make()
            args = [env[ref] if kind == SLOT else (ref._data if kind == TENSOR else ref) for kind, ref in op.args]
            fn.needs_input_grad = (False,) * len(args)
            try:
                outs = bfloat16.forward(fn, args)
            except Exception as error:
                self.failed_op = op
                self._raise_after_size_change(changed, op, error)
                raise
            if not isinstance(outs, tuple):
                outs = (outs,)
            if op.data_dependent is not None and changed is None:
                changed = op.size_change(outs)
            if op.inplace and outs[0] is not args[0]:
                args[0][...] = outs[0]
                outs = (args[0],) + outs[1:]
            for slot, value in zip(op.outs, outs):
                env[slot] = value
            for slot in op.free_after:
                env[slot] = None
        return [env[s] for s in self.output_slots]

    def share_outputs(self, outputs, arrays):
        """``outputs`` of a replay that made a new array for each output (batch streams, a CUDA graph's copies),
        made to share memory as ``run_arrays``' do: an output that is an input is the caller's input array, and
        an output returned twice is one array, so that writing into one shows in the other, as in eager code."""
        inputs = dict(zip(self.input_slots, arrays))
        first = {}
        shared = []
        for slot, out in zip(self.output_slots, outputs):
            shared.append(inputs[slot] if slot in inputs else first.setdefault(slot, out))
        return shared

    def run_tensors(self, tensors, grad_scale=None):
        """Replay through Function calls (records autograd), then run the traced backward calls.

        Values are dropped after their last reader and the slots are let go before the backward, so
        only the autograd graph holds activations and the backward frees them as it goes, as in eager.
        """
        env = [None] * self.n_slots
        for slot, t in zip(self.input_slots, tensors):
            env[slot] = t
        changed = None
        for op in self.ops:
            fn = op.make()
            args = [env[ref] if kind == SLOT else ref for kind, ref in op.args]
            try:
                outs = fn(*args)
            except Exception as error:
                self.failed_op = op
                self._raise_after_size_change(changed, op, error)
                raise
            if not isinstance(outs, tuple):
                outs = (outs,)
            if op.data_dependent is not None and changed is None:
                changed = op.size_change(outs)
            for slot, value in zip(op.outs, outs):
                env[slot] = value
            for slot in op.free_after:
                env[slot] = None
        outputs = [env[s] for s in self.output_slots]
        roots = [(env[slot], gradient) for slot, gradient in self.backward_calls]
        env = args = outs = None
        for root, gradient in roots:
            if gradient is None and grad_scale is not None:
                gradient = _new(root._data * 0 + grad_scale)
            root.backward(gradient)
        return outputs

    def _raise_after_size_change(self, changed, op, error):
        """When ``op`` failed after a data-dependent size changed in this replay, raise the one-line error that
        says so (the likely cause: ``op`` replays a size of the trace)."""
        if changed is None:
            return
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RuntimeError(
            f"{self.name}: {changed}, and {op.name()} then failed ({first}): nn.Graph replays the sizes of its "
            "trace where later ops fix them. Run this model eagerly, or export it with engine.onnx.export (its "
            "files keep data-dependent sizes dynamic).") from error

    def describe(self):
        lines = [f"inputs: {', '.join(f'%{s}' for s in self.input_slots)}"]
        lines += [f"  {op!r}" for op in self.ops]
        lines.append(f"outputs: {', '.join(f'%{s}' for s in self.output_slots)}")
        return "\n".join(lines)


class Tracer:
    """Records Function calls while ``build`` runs eagerly (installed as ``tracing.active``)."""

    def __init__(self, graph_name):
        self.graph_name = graph_name
        self.ops = []
        self.backward_calls = []
        self.backward_roots = []
        self.n_slots = 0
        self.shapes = []  # each slot's traced shape
        self.counts = {}  # op index -> the data-dependent count it reported (``tracing.vary``)

    def new_slot(self, tensor):
        """Number ``tensor``'s value; the mark lives on the tensor, so dead tensors free memory."""
        slot = self.n_slots
        self.n_slots += 1
        self.shapes.append(tuple(tensor.shape))
        tensor._graph_slot = (self, slot)
        return slot

    def slot_of(self, tensor):
        mark = tensor.__dict__.get("_graph_slot")
        return mark[1] if mark is not None and mark[0] is self else None

    def unmark(self, tensors):
        """Take this trace's slot marks off ``tensors`` (the caller's inputs and outputs, parameters and buffers
        written in place): after the trace the marks only keep the tracer alive, and ``copy.deepcopy`` of such a
        tensor (of a model whose BatchNorm counted a traced batch) would copy the whole trace, or fail on it."""
        for t in tensors:
            mark = t.__dict__.get("_graph_slot")
            if mark is not None and mark[0] is self:
                del t.__dict__["_graph_slot"]

    def is_traced(self, tensor):
        return self.slot_of(tensor) is not None

    def ref(self, value):
        if isinstance(value, Tensor):
            slot = self.slot_of(value)
            return (TENSOR, value) if slot is None else (SLOT, slot)
        return (CONST, value)

    def record(self, cls, state, inputs, results):
        args = [self.ref(v) for v in inputs]
        outs = [self.new_slot(r) for r in results]
        op = Op(cls, state, args, outs)
        if len(self.ops) in self.counts:
            where = user_line(skip=getattr(sys.modules.get(cls.__module__), "__file__", None))
            op.data_dependent = (tuple(tuple(r.shape) for r in results), where)
        self.ops.append(op)

    def vary_count(self, count):
        """``tracing.vary``: the op being run has a data-dependent count; note it, so that ``record`` marks the op
        (``Op.data_dependent``). A graph's trace never changes the count (an export's probe does)."""
        self.counts[len(self.ops)] = count
        return False

    def record_backward(self, tensor, gradient):
        if not self.is_traced(tensor):
            raise RuntimeError("nn.Graph: backward() on a tensor that was not computed inside build()")
        self.backward_calls.append((self.slot_of(tensor), gradient))
        self.backward_roots.append(tensor)

    def refuse_value_read(self, what):
        raise RuntimeError(
            f"{self.graph_name}.build() reads the value of a tensor computed in the graph ({what}){user_line()}. "
            "nn.Graph traces build() once and replays it, so Python control flow that depends on "
            "tensor values cannot be captured; compute it with tensor ops (e.g. engine.where) or "
            "move it out of build().")

    def __enter__(self):
        if tracing.active is not None:
            raise RuntimeError("nn.Graph: a graph cannot be built while another graph is being traced")
        tracing.active = self
        return self

    def __exit__(self, *exc):
        tracing.active = None
        return False


_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def user_line(skip=None):
    """" at FILE:LINE: `code`" for the innermost stack frame outside the engine package and the file ``skip``
    (the user's line that read a traced value or called an op), or "" when there is none."""
    frame = sys._getframe(1)
    skip = os.path.abspath(skip) if skip else None
    while frame is not None and (os.path.abspath(frame.f_code.co_filename).startswith(_ENGINE_DIR)
                                 or os.path.abspath(frame.f_code.co_filename) == skip):
        frame = frame.f_back
    if frame is None:
        return ""
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f" at {frame.f_code.co_filename}:{frame.f_lineno}: `{code}`"


def _shapes(shapes):
    return ", ".join(str(list(shape)) for shape in shapes)


def trace(graph_name, build, inputs, input_tensors):
    """Run ``build(*inputs)`` eagerly under a tracer; returns (outputs, plan-without-outputs)."""
    tracer = Tracer(graph_name)
    input_slots = [tracer.new_slot(t) for t in input_tensors]
    with tracer:
        outputs = build(*inputs)
    return outputs, tracer, input_slots


__all__ = ["Op", "Plan", "Tracer", "trace", "SLOT", "TENSOR", "CONST", "grad_mode"]
