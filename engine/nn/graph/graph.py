"""``nn.Graph``: trace ``build`` once per input signature, optimise the op list, replay it.

As in OneFlow: subclass ``Graph``, assign modules as attributes, optionally ``add_optimizer``,
and write ``build(*inputs)`` with ordinary eager code. The first call with a new signature
(shapes, dtypes, devices, train/eval state) traces and compiles a plan; later calls replay it.
Without an optimizer the graph is an inference graph: replays run on raw arrays, with eval
BatchNorm, residual adds and ReLUs fused into the convolutions' output pass; on the CPU a batch
whose samples are computed each on its own runs as one stream per core (``streams.py``; the first
call then also compiles a plan for each stream's share of the batch), and on the GPU the plan is
captured into a CUDA graph that later calls replay in one launch (``capture.py``); a training call
is captured whole, optimizer update included, from its second call on. With an optimizer, each
call replays forward and the traced ``backward()`` and then steps the optimizer (and scheduler),
reusing the gradient arrays; its backward, as any backward pass, prepares the device's runtime for
training (on the CPU the C allocator keeps freed blocks in the process, so each step reuses the last
one's memory instead of faulting it in).
"""
import contextlib
import warnings

from ... import backends
from ...autograd import grad_mode
from ...autograd.graph import reached_leaves
from ...backends.flag_module import switched
from ...ops._common import xp_of
from ...tensor import Tensor, _new
from ..modules.module import Module
from . import capture, passes, streams
from .plan import SLOT, TENSOR, Plan, trace


class GraphConfig:
    """Switches of a Graph (OneFlow's ``graph.config``)."""

    def __init__(self):
        self.fuse_add_to_output = True
        self.fuse_model_update_ops = False
        self.gradient_accumulation_steps = 1
        self.amp = False
        self.cuda_graph = True
        self.tf32 = False

    def allow_fuse_add_to_output(self, mode=True):
        """Fuse residual additions into the producing convolution's output."""
        self.fuse_add_to_output = bool(mode)

    def allow_fuse_model_update_ops(self, mode=True):
        """Accepted for OneFlow compatibility; optimizer updates already run on raw arrays in place."""
        self.fuse_model_update_ops = bool(mode)

    def enable_cuda_graph(self, mode=True):
        """On the GPU, capture each inference plan, and each training call (forward, backward and the optimizer
        update) from its second call on, into a CUDA graph and replay that (on by default here; OneFlow's
        default is off). Off: plans are replayed op by op."""
        self.cuda_graph = bool(mode)

    def allow_tf32(self, mode=True):
        """Let this graph's float32 GEMMs (convolutions and matmuls) use TF32 on the GPU, whatever
        ``torch.backends.cuda.matmul.allow_tf32`` and ``torch.backends.cudnn.allow_tf32`` say outside it (off by
        default: full float32, as those switches' defaults here)."""
        self.tf32 = bool(mode)

    def set_gradient_accumulation_steps(self, value):
        """Split each call's batch into ``value`` micro-batches and accumulate their gradients."""
        if int(value) < 1:
            raise ValueError(f"gradient accumulation steps must be >= 1, got {value}")
        self.gradient_accumulation_steps = int(value)

    def enable_amp(self, mode=True, dtype=None):
        """bfloat16 autocast on the GPU (off by default): convolutions, linear layers and matmuls multiply their
        float32 operands rounded to bfloat16, with float32 accumulation; BatchNorm and everything else stay
        float32, and outputs keep their dtype (``backends/cuda/autocast.py``). The CPU has no bfloat16 GEMMs:
        there the first call warns once and the graph runs in the model's dtype. ``dtype``: only bfloat16
        (OneFlow's default, float16, is not offered)."""
        if dtype is not None and getattr(dtype, "name", dtype) != "bfloat16":
            raise ValueError(f"nn.Graph: enable_amp runs bfloat16 autocast only, got dtype={dtype}")
        self.amp = bool(mode)

    def __repr__(self):
        return (f"GraphConfig(fuse_add_to_output={self.fuse_add_to_output}, "
                f"fuse_model_update_ops={self.fuse_model_update_ops}, "
                f"gradient_accumulation_steps={self.gradient_accumulation_steps}, amp={self.amp}, "
                f"cuda_graph={self.cuda_graph}, tf32={self.tf32})")


def _flatten(obj, leaves):
    """Tensors of a nested tuple/list/dict in order, and a spec to rebuild the structure."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("t",)
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(_flatten(o, leaves) for o in obj))
    if isinstance(obj, dict):
        return ("dict", tuple((k, _flatten(v, leaves)) for k, v in obj.items()))
    return ("const", obj)


def _unflatten(spec, leaves):
    """The structure ``_flatten`` described by ``spec``, with ``leaves`` in its tensors' places.

    A module-level recursion rather than a nested one: a closure that calls itself is a reference
    cycle, and it kept every call's outputs alive until the cyclic garbage collector ran (lraspp's
    21 MB output of each call piled up for ten calls, and every call took fresh memory)."""
    return _rebuild(spec, iter(leaves))


def _rebuild(spec, leaves):
    kind = spec[0]
    if kind == "t":
        return next(leaves)
    if kind in ("tuple", "list"):
        items = [_rebuild(c, leaves) for c in spec[1]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _rebuild(c, leaves) for k, c in spec[1]}
    return spec[1]


@contextlib.contextmanager
def _tf32_allowed():
    """Inside, both TF32 switches on (``config.allow_tf32``); restored after."""
    with switched(backends.cuda.matmul, allow_tf32=True), switched(backends.cudnn, allow_tf32=True):
        yield


def _split_batch(obj, n):
    """``n`` micro-batches of a nested input, split along dim 0."""
    if isinstance(obj, Tensor):
        if obj.shape[0] % n:
            raise RuntimeError(f"nn.Graph: batch size {obj.shape[0]} is not divisible by the gradient "
                               f"accumulation steps {n}")
        return list(obj.chunk(n, 0))
    if isinstance(obj, (tuple, list)):
        parts = [_split_batch(o, n) for o in obj]
        return [type(obj)(p[i] for p in parts) for i in range(n)]
    if isinstance(obj, dict):
        parts = {k: _split_batch(v, n) for k, v in obj.items()}
        return [{k: v[i] for k, v in parts.items()} for i in range(n)]
    return [obj] * n


class Graph:
    """Base class of static graphs (see the module docstring)."""

    def __init__(self):
        object.__setattr__(self, "_modules", {})
        self.config = GraphConfig()
        self._optimizers = []
        self._plans = {}
        self._debug_level = -1
        self._last_plan = None
        self._steps = {}  # training call signature -> its CapturedStep, or False where it is not captured
        self._traced_calls = set()  # training call signatures called once (traced) on a GPU
        self._reached = {}  # training call signature -> {id: parameter} its backward gives gradients to
        self._amp_warned = False

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def build(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    @property
    def name(self):
        return type(self).__name__

    @property
    def training(self):
        return bool(self._optimizers)

    @property
    def num_compiled(self):
        """How many plans (input signatures) this graph has compiled."""
        return len(self._plans)

    def add_optimizer(self, optimizer, *, lr_sch=None, is_sparse=False):
        """Train with ``optimizer`` (stepped after every call) and an optional lr scheduler. As in OneFlow, a
        parameter group may ask for gradient clipping: ``{"params": ..., "clip_grad_max_norm": 1.0,
        "clip_grad_norm_type": 2.0}`` (``_clip_grads``)."""
        self._optimizers.append((optimizer, lr_sch))

    def debug(self, v_level=0, **kwargs):
        """Print the optimisation passes and their effect when a plan compiles (v_level >= 1: the op list)."""
        self._debug_level = v_level

    # ---- running --------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        inputs = (args, kwargs)
        if not (self.config.tf32 or self.config.amp):
            return self._call(inputs)
        with self._gemm_precision(inputs):
            return self._call(inputs)

    @contextlib.contextmanager
    def _gemm_precision(self, inputs):
        """Around a call: both TF32 switches on (``config.allow_tf32``) and bfloat16 autocast where the inputs'
        device has it (``config.enable_amp``; the CPU does not: one warning)."""
        with contextlib.ExitStack() as stack:
            if self.config.tf32:
                stack.enter_context(_tf32_allowed())
            if self.config.amp:
                leaves = []
                _flatten(inputs, leaves)
                autocast = backends.runtime(leaves[0]._data if leaves else "cpu").autocast()
                if autocast is not None:
                    stack.enter_context(autocast)
                elif not self._amp_warned:
                    self._amp_warned = True
                    warnings.warn(f"{self.name}: enable_amp does nothing on the CPU (no bfloat16 GEMMs); the graph "
                                  "runs in the model's dtype", stacklevel=4)
            yield

    def _call(self, inputs):
        if not self.training:
            with grad_mode.no_grad():
                return self._run(inputs, None)
        leaves = []
        spec = _flatten(inputs, leaves)
        key = self._signature(leaves, spec)
        self._match_grads(self._reached.get(key))
        outputs = self._captured_step(key, spec, leaves)
        if outputs is None:
            # Gradient buffers are reused: zeroed in place and accumulated into, not dropped and made again
            # each step (fresh parameter-sized arrays page-fault: resnet50 at batch 8, before the allocator
            # setting below, faulted 42K times per step against 22K, best step 2134 against 2012 ms, in
            # alternating blocks of steps). After a call they hold that step's gradients.
            for optimizer, _ in self._optimizers:
                optimizer.zero_grad(set_to_none=False)
            outputs = self._forward_backward(inputs)
            self._reached[key] = getattr(self._last_plan, "grad_leaves", None)
            self._match_grads(self._reached[key])
            self._clip_grads()
            for optimizer, _ in self._optimizers:
                optimizer.step()
        for _, scheduler in self._optimizers:
            if scheduler is not None:
                scheduler.step()
        return outputs

    def _match_grads(self, reached):
        """Give gradients to exactly the optimizers' parameters that a call's backward reaches (``reached``, by id;
        None before the call with that signature first ran: nothing changes).

        Each step zeroes the gradient arrays in place to reuse them, where eager code's ``zero_grad()`` sets
        them to None: a parameter this step's backward never reaches (a head used only in training, after
        ``eval()``) would keep a zero gradient, and momentum, Adam's moments and weight decay would still move
        it, where the eager optimizer skips it; its gradient goes to None. A reached one without a gradient
        (after such a call) gets zeros before the call: a captured step updates the parameters that have
        gradients when it is captured."""
        if reached is None:
            return
        for optimizer, _ in self._optimizers:
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if id(p) not in reached:
                        p.grad = None
                    elif p.grad is None:
                        p.grad = _new(xp_of(p._data).zeros_like(p._data))

    def _clip_grads(self):
        """OneFlow's gradient clipping in a graph: each parameter group with a ``clip_grad_max_norm`` has its
        gradients' total norm (of order ``clip_grad_norm_type``, 2 by default) clipped to it before the update,
        as ``clip_grad_norm_`` on the group's parameters between ``backward()`` and ``step()`` does."""
        from ..utils.clip_grad import clip_grad_norm_
        for optimizer, _ in self._optimizers:
            for group in optimizer.param_groups:
                if group.get("clip_grad_max_norm") is not None:
                    clip_grad_norm_(group["params"], group["clip_grad_max_norm"],
                                    group.get("clip_grad_norm_type", 2.0))

    def _forward_backward(self, inputs):
        """Forward and backward of a training call: the whole batch, or its micro-batches (gradient accumulation)."""
        steps = self.config.gradient_accumulation_steps
        if steps == 1:
            return self._run(inputs, None)
        micro = [self._run(chunk, 1.0 / steps) for chunk in _split_batch(inputs, steps)]
        return self._combine(micro)

    def _captured_step(self, key, spec, leaves):
        """On the GPU, a training call's outputs from its CUDA graph (``capture.CapturedStep``): the first call
        with a signature (``key``) traces (None here: run it op by op), the second runs and captures, later ones
        replay. None where the step is not captured."""
        if not (self.config.cuda_graph and leaves and backends.runtime(leaves[0]._data).captures_graphs()):
            return None
        step = self._steps.get(key, None)
        if step is False:
            return None
        if step is not None:
            outputs = step(leaves)
            if outputs is not None:
                return outputs
        elif key not in self._traced_calls:
            self._traced_calls.add(key)
            return None
        outputs, step = capture.capture_step(self, spec, leaves)
        self._steps[key] = step if step is not None else False
        return outputs

    @staticmethod
    def _combine(micro):
        """Mean of scalar outputs, concatenation of batched ones, over the micro-batches."""
        from ...ops.shape import cat
        leaves_per = []
        spec = None
        for out in micro:
            leaves = []
            spec = _flatten(out, leaves)
            leaves_per.append(leaves)
        combined = []
        for parts in zip(*leaves_per):
            if parts[0].dim() == 0:
                combined.append(sum(p.detach() for p in parts) / len(parts))
            else:
                combined.append(cat([p.detach() for p in parts], 0))
        return _unflatten(spec, combined)

    def _signature(self, leaves, spec):
        """The key of a call's plan: its inputs' (shape, dtype, device) and structure, each module's train/eval
        state, and which tensors the modules hold as parameters (and whether each requires grad) and buffers. A
        plan reads the tensors it was traced with, so one assigned in their place (``m.weight =
        nn.Parameter(...)``, ``load_state_dict(..., assign=True)``) needs a new trace, as eager code would read the
        new one; and a training plan's backward reaches the parameters that required grad when it was traced, so a
        frozen one (``requires_grad_(False)``) needs one too, or the optimizer would still move it."""
        modules = [m for module in self._modules.values() for m in module.modules()]
        held = tuple(p if p is None else (id(p), p.requires_grad) for m in modules for p in m._parameters.values())
        held += tuple(id(t) for m in modules for t in m._buffers.values())
        return (tuple((tuple(t.shape), t.dtype.name, str(t.device)) for t in leaves), repr(spec),
                tuple(m.training for m in modules), held)

    def _run(self, inputs, grad_scale):
        leaves = []
        spec = _flatten(inputs, leaves)
        key = self._signature(leaves, spec)
        plan = self._plans.get(key)
        if plan is None:
            return self._compile(key, inputs, spec, leaves, grad_scale)
        self._last_plan = plan
        if not self.training:
            arrays = [t._data for t in leaves]
            if plan.captured is not None:
                outputs = plan.captured(arrays)
            else:
                outputs = streams.run(plan, arrays, lambda lo, hi: self._part_plan(plan, spec, leaves, lo, hi))
            if outputs is None:
                outputs = plan.run_arrays(arrays)
            return _unflatten(plan.output_spec, [_new(a) for a in outputs])
        outputs = plan.run_tensors(leaves, grad_scale)
        return _unflatten(plan.output_spec, outputs)

    def _compile(self, key, inputs, spec, leaves, grad_scale):
        plan, outputs = self._build_plan(inputs, leaves, grad_scale)
        bounds = streams.plan_bounds(plan)
        if bounds:
            for lo, hi in bounds:
                self._part_plan(plan, spec, leaves, lo, hi)
            backends.runtime(leaves[0].device).release_scratch()  # sized by the whole batch; streams need less
        plan.input_signature = (spec, key[0])
        self._forget_stale(key)
        self._plans[key] = plan
        self._last_plan = plan
        return outputs

    def _forget_stale(self, key):
        """Drop the plans and captured steps of ``key``'s call made over tensors the modules no longer hold: they
        could only run again if those very tensors were put back, and they keep them alive."""
        for table in (self._plans, self._steps, self._reached):
            for old in [k for k in table if k[:3] == key[:3] and k[3] != key[3]]:
                del table[old]

    def _part_plan(self, plan, spec, leaves, lo, hi):
        """The plan of a batch stream: ``plan`` traced again on samples [lo, hi) of the inputs (copies: the call
        has run, and a ``build`` that writes its inputs in place must not write them once more)."""
        part = plan.parts.get(hi - lo)
        if part is None:
            chunk = [_new(t._data[lo:hi].copy()) for t in leaves]
            part, _ = self._build_plan(_unflatten(spec, chunk), chunk, None)
            plan.parts[hi - lo] = part
        return part

    def _build_plan(self, inputs, leaves, grad_scale):
        """Trace ``build`` on the inputs and compile the ops it ran; returns (plan, traced outputs)."""
        args, kwargs = inputs
        outputs, tracer, input_slots = trace(self.name, lambda: self.build(*args, **kwargs), (), leaves)
        out_leaves = []
        output_spec = _flatten(outputs, out_leaves)
        for t in out_leaves:
            if not tracer.is_traced(t):
                raise RuntimeError(f"{self.name}.build() returned a tensor that was not computed from its "
                                   "inputs (return computed tensors; parameters are reachable as modules)")
        plan = Plan(tracer.ops, input_slots, [tracer.slot_of(t) for t in out_leaves], output_spec,
                    tracer.backward_calls, tracer.n_slots)
        tracer.unmark(leaves + out_leaves + [ref for op in tracer.ops for kind, ref in op.args if kind == TENSOR])
        plan.name = self.name
        plan.log = [f"traced {len(plan.ops)} ops for inputs "
                    f"{', '.join(str(list(t.shape)) for t in leaves) or '()'}"]
        if self.training:
            plan.grad_leaves = {id(leaf): leaf for leaf in reached_leaves(tracer.backward_roots)}
            self._backward_eager(tracer, grad_scale)
            plan.plan_liveness()
            hooked = sum(bool(p._post_accumulate_grad_hooks) for m in self._modules.values() for p in m.parameters())
            if hooked:
                plan.log.append(f"backward: the post-accumulate-grad hooks of {hooked} parameters run in each "
                                "replay (DistributedDataParallel's gradient all-reduces)")
            if leaves and backends.runtime(leaves[0].device).prepare_backward():
                plan.log.append("retain_freed_memory: freed blocks stay in the process for the next step")
        else:
            plan.log += passes.optimize_inference(plan, self.config)
            if all(t.device.type == "cpu" for t in leaves):
                plan.stream_batch = streams.stream_batch(plan, tracer.shapes)
            if plan.stream_batch is not None:
                plan.log.append(f"batch streams: every sample is computed on its own, so the batch of "
                                f"{plan.stream_batch} may run as one stream per BLAS thread")
            if self.config.cuda_graph:
                plan.captured = capture.capture_plan(plan, [t._data for t in leaves])
                if plan.captured is not None:
                    plan.log.append("captured into a CUDA graph: later calls replay it")
        plan.log.append(f"compiled: {len(plan.ops)} ops")
        if self._debug_level >= 0:
            print(f"[{self.name}] " + f"\n[{self.name}] ".join(plan.log))
            if self._debug_level >= 1:
                print(plan.describe())
        return plan, outputs

    @staticmethod
    def _backward_eager(tracer, grad_scale):
        """The traced run deferred ``backward()``: run it now, as replays will."""
        for (slot, gradient), root in zip(tracer.backward_calls, tracer.backward_roots):
            if gradient is None and grad_scale is not None:
                gradient = _new(root._data * 0 + grad_scale)
            root.backward(gradient)

    # ---- state ----------------------------------------------------------------------------------
    def state_dict(self):
        """Module states by attribute name, plus optimizer and scheduler states."""
        state = {name: module.state_dict() for name, module in self._modules.items()}
        for i, (optimizer, scheduler) in enumerate(self._optimizers):
            state[f"optimizer_{i}"] = optimizer.state_dict()
            if scheduler is not None:
                state[f"lr_scheduler_{i}"] = scheduler.state_dict()
        return state

    def load_state_dict(self, state_dict, strict=True):
        for name, module in self._modules.items():
            module.load_state_dict(state_dict[name], strict=strict)
        for i, (optimizer, scheduler) in enumerate(self._optimizers):
            optimizer.load_state_dict(state_dict[f"optimizer_{i}"])
            if scheduler is not None:
                scheduler.load_state_dict(state_dict[f"lr_scheduler_{i}"])

    def save(self, path):
        """Write the last compiled inference plan and its tensors to one safetensors file."""
        from .saving import save_plan
        if self.training:
            raise RuntimeError("nn.Graph.save: only inference graphs (without an optimizer) can be saved")
        if self._last_plan is None:
            raise RuntimeError("nn.Graph.save: call the graph once so that it compiles before saving")
        save_plan(self._last_plan, path)

    @staticmethod
    def load(path):
        """A callable graph from ``save``'s file; needs no model class."""
        from .saving import load_plan
        return load_plan(path)

    def __repr__(self):
        lines = [f"(GRAPH:{self.name}): ("]
        lines.append(f"  (CONFIG): {self.config!r}")
        for name, module in self._modules.items():
            lines.append(f"  (MODULE:{name}): {type(module).__name__}")
        for i, (optimizer, scheduler) in enumerate(self._optimizers):
            lines.append(f"  (OPTIMIZER:{i}): {type(optimizer).__name__}"
                         + (f" with {type(scheduler).__name__}" if scheduler is not None else ""))
        for i, plan in enumerate(self._plans.values()):
            lines.append(f"  (PLAN:{i}): {len(plan.ops)} ops")
            lines += ["    " + line for line in plan.describe().splitlines()]
        lines.append(")")
        return "\n".join(lines)


__all__ = ["Graph", "GraphConfig", "SLOT"]
