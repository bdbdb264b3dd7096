"""Plans captured by their device's runtime: on the GPU, one CUDA graph per input signature.

- Inference (``capture_plan``): the plan's replay is captured when it compiles; what the capture's run writes
  outside the graph (training BatchNorm's running statistics, the GPU's generator) is put back, as the call
  has already run. The capture reads the parameters' and buffers' arrays where they were when it was made:
  a replay checks that every tensor the plan reads from outside still holds the same array
  (``load_state_dict``, ``.to()`` or an assignment to ``.data`` puts in another) and captures anew where one
  does not; values changed in place (an optimizer step, ``copy_``) need nothing. The same holds for the GEMM
  settings (TF32, bfloat16 autocast): a call under other settings captures anew, as does a training step.
- Training (``capture_step``): a whole call (gradients zeroed, forward and backward of each micro-batch,
  each optimizer's update) is captured on its second call, whose step is the capture's warm-up (kernels
  compile, its allocations are planned; optimizer state exists from the first call). The numbers that
  change from step to step (the learning rate, Adam's bias corrections) are computed on the host before
  each replay (``Optimizer.step_scalars``) and written to device scalars the graph reads; a change to any
  other hyper-parameter, or to which parameters have gradients, makes a new capture. Learning-rate
  schedulers step on the host after each call.
- Random draws (dropout, stochastic depth, ``rand``/``randn`` in ``build``) come from the device's generator,
  whose seed and offset live on the device: each replay draws new numbers, in the order eager code would.
- A graph runs on its own copies of the inputs: where ``build`` may write an input in place (``x.mul_(2)``),
  the call copies what it wrote back to the caller's tensor.

What cannot be captured is refused with one warning naming it, and that plan or step then runs op by op:
data-dependent sizes, ops that read the host, samplers other than uniform and normal ones.
"""
import contextlib
import warnings

import numpy as np

from ... import backends
from ..._device import device_of, is_cuda_array
from ...autograd.graph import failed_backward
from ...ops._common import xp_of
from ...tensor import Tensor, _new
from .plan import SLOT, TENSOR


def _outside_tensors(plan):
    """The tensors from outside the graph that the plan's ops read (arguments and tensors in their state)."""
    return _tensors_of(plan, lambda op: [ref for kind, ref in op.args if kind == TENSOR])


def _tensors_of(plan, arguments):
    """The distinct tensors among each op's ``arguments(op)`` and the values of its state (one level of tuples and
    lists looked into)."""
    found = {}
    for op in plan.ops:
        values = arguments(op)
        for value in op.state.values():
            values += value if isinstance(value, (tuple, list)) else [value]
        for value in values:
            if isinstance(value, Tensor):
                found[id(value)] = value
    return list(found.values())


def _may_write_inputs(plan):
    """Whether an in-place op of ``plan`` may write one of its inputs: its target is an input, or a value
    computed from inputs by ops that read nothing from outside the graph (a view, such as ``x.view(-1)``, is
    one of those; an op reading a weight makes a new array)."""
    aliased = set(plan.input_slots)
    for op in plan.ops:
        first = op.args[0] if op.args else None
        if first is None or first[0] != SLOT or first[1] not in aliased:
            continue
        if op.inplace:
            return True
        if all(kind != TENSOR for kind, _ in op.args):
            aliased.update(op.outs)
    return False


def _state_tensors(plan):
    """The tensors from outside the graph that the plan's ops may write: the targets of in-place ops and the
    tensors in ops' state (training BatchNorm's running statistics)."""
    return _tensors_of(plan, lambda op: [op.args[0][1]] if op.inplace and op.args and op.args[0][0] == TENSOR else [])


@contextlib.contextmanager
def _undone(tensors):
    """Inside, ``tensors`` may be written; after, they hold their values from before. A capture runs the plan
    (its warm-up) without it being a call: a training BatchNorm's running statistics, or a counter added to in
    place, must move once per call, as eager code moves them, not once more for each capture."""
    saved = [(t._data, t._data.copy()) for t in tensors]
    try:
        yield
    finally:
        for array, before in saved:
            array[...] = before


@contextlib.contextmanager
def _draws_undone(array):
    """Inside, the generator of ``array``'s GPU may draw; after, it is where it was. The capture's warm-up run
    draws the plan's random numbers (dropout in train mode), and the call that compiled the plan has drawn them
    already: eager code would draw the next call's from there."""
    if not is_cuda_array(array):
        yield
        return
    from ... import random
    state = random.cuda_rng(device_of(array).index or 0).state
    before = state.copy()
    try:
        yield
    finally:
        state[...] = before


def _hold(tensors):
    """(tensor, its array) for each of ``tensors``: a capture reads and writes these arrays by address, and
    keeps them alive."""
    return [(t, t._data) for t in tensors]


def _moved(held):
    """Whether a held tensor now holds another array (the capture must be made again)."""
    return any(t._data is not a for t, a in held)


class CapturedPlan:
    """A plan's replay captured by the runtime of its inputs' device, recaptured when an outside tensor's
    array changed. ``capture_plan`` makes one."""

    def __init__(self, plan, arrays):
        self.plan = plan
        self.tensors = _outside_tensors(plan)
        self.writes_inputs = _may_write_inputs(plan)
        self._capture(arrays)

    def _capture(self, arrays):
        runtime = backends.runtime(arrays[0])
        self.held = _hold(self.tensors)
        self.settings = runtime.gemm_settings()
        with _undone(_state_tensors(self.plan)), _draws_undone(arrays[0]):
            self.graph = runtime.capture(self._run, arrays)

    def _run(self, arrays):
        """The captured work: the plan's outputs, then, where it may write its inputs in place, the inputs."""
        outputs = self.plan.run_arrays(arrays)
        return outputs + list(arrays) if self.writes_inputs else outputs

    def __call__(self, arrays):
        if _moved(self.held) or backends.runtime(arrays[0]).gemm_settings() != self.settings:
            self._capture(arrays)
        outputs = self.graph(arrays)
        if self.writes_inputs:
            # The graph ran on its own copies of the inputs: what it wrote there goes to the caller's arrays, as
            # the in-place op (``x.mul_(2)`` in build) writes the caller's tensor in eager code.
            n = len(outputs) - len(arrays)
            for array, written in zip(arrays, outputs[n:]):
                array[...] = written
            outputs = outputs[:n]
        return self.plan.share_outputs(outputs, arrays)


def capture_plan(plan, arrays):
    """``plan``'s inference replay on ``arrays`` captured by their device's runtime, or None: where the
    runtime captures nothing (the CPU), or with a one-line warning naming the op that cannot be captured
    (the plan is then replayed op by op)."""
    if not arrays or not backends.runtime(arrays[0]).captures_graphs():
        return None
    refusal = _plan_refusal(plan)
    if refusal is not None:
        _refused(plan, *refusal)
        return None
    plan.failed_op = None
    try:
        return CapturedPlan(plan, arrays)
    except Exception as error:
        if plan.failed_op is None:
            raise
        _refused(plan, plan.failed_op, str(error).splitlines()[0] if str(error) else type(error).__name__)
        return None


def _plan_refusal(plan):
    """(op, why) for the first op of ``plan`` that no capture can hold, judged before it runs; else None."""
    for op in plan.ops:
        if op.data_dependent is not None:
            return op, "its output size depends on values"
    return None


def _refused(plan, op, why):
    _warn(plan.name, op.name(), why, "this plan is replayed op by op")


def _warn(graph_name, what, why, instead):
    warnings.warn(f"{graph_name}: {what} cannot be captured into a CUDA graph ({why}); {instead}", RuntimeWarning,
                  stacklevel=5)


# ---- training steps ------------------------------------------------------------------------------
def capture_step(graph, spec, leaves):
    """(this call's outputs, its step captured) for a training graph's second call with a signature; (None,
    None) where the step cannot be captured before it runs, (outputs, None) where the capture failed after it
    ran, each with a one-line warning."""
    refusal = _step_refusal(graph, leaves)
    if refusal is not None:
        _warn(graph.name, *refusal, "the training step runs op by op")
        return None, None
    step = CapturedStep(graph, spec, leaves)
    try:
        step.capture(leaves)
    except Exception as error:
        if step.first_outputs is None:  # the step itself failed, before any capture
            raise
        failed = next((plan.failed_op.name() for plan in graph._plans.values() if plan.failed_op is not None),
                      None) or failed_backward(error)
        if failed is None:
            raise
        why = str(error).splitlines()[0] if str(error) else type(error).__name__
        _warn(graph.name, failed, why, "the training step runs op by op")
        return step.first_outputs, None
    return step.first_outputs, step


def _step_refusal(graph, leaves):
    """(what, why) where a training call cannot be captured, judged before it runs; else None."""
    for optimizer, _ in graph._optimizers:
        name = type(optimizer).__name__
        if not optimizer.captures:
            return name, "its update is not split into host scalars and array math; SGD, Adam and AdamW are"
        if optimizer._step_pre_hooks or optimizer._step_post_hooks:
            return f"{name} with step hooks", "the hooks run on the host"
        if any(p._post_accumulate_grad_hooks for group in optimizer.param_groups for p in group["params"]):
            return "gradient hooks", "they run on the host, as DistributedDataParallel's all-reduces do"
    if any(t.requires_grad for t in leaves):
        return "an input that requires grad", "its gradient would be computed into the graph's own buffers"
    for plan in graph._plans.values():
        refusal = _plan_refusal(plan)
        if refusal is not None:
            op, why = refusal
            return op.name(), why
    return None


def _settings(optimizers):
    """Every hyper-parameter but the learning rate, and which parameters have gradients: a captured step holds
    these, and a change to them needs a new capture."""
    return [[(key, repr(value)) for key, value in sorted(group.items()) if key not in ("params", "lr")]
            + [(id(p), id(p.grad)) for p in group["params"] if p.grad is not None]
            for optimizer in optimizers for group in optimizer.param_groups]


def _step_tensors(graph, optimizers):
    """The tensors a captured step reads and writes in place: parameters, gradients, optimizer state, module
    buffers (the graph holds their arrays, and is captured anew where one of them gets another array)."""
    tensors = [t for module in graph._modules.values() for t in module.buffers()]
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            for p in group["params"]:
                tensors += [p] + ([p.grad] if p.grad is not None else [])
                tensors += [v for v in optimizer.state.get(p, {}).values() if isinstance(v, Tensor)]
    return [t for t in tensors if t._data.__class__ is not np.ndarray]


class CapturedStep:
    """A training graph's call captured into one CUDA graph (see the module docstring): ``capture_step``
    makes one; calling it replays the step, or returns None where the optimizers' settings changed."""

    def __init__(self, graph, spec, leaves):
        self.graph, self.spec = graph, spec
        self.optimizers = [optimizer for optimizer, _ in graph._optimizers]
        self.settings = _settings(self.optimizers)
        self.output_spec = None
        self.replay = None
        self.scalars = None
        self.items = []
        self.held = []
        self.gemm_settings = None
        self.first_outputs = None
        self.writes_inputs = any(_may_write_inputs(plan) for plan in graph._plans.values())
        self.arrays = None  # the caller's input arrays of the call running now

    def _upload_scalars(self, like):
        """This step's host scalars (step counters advance), written to the device scalars the graph reads."""
        host = [optimizer.step_scalars() for optimizer in self.optimizers]
        flat = np.array([value for items in host for _, _, scalars in items for value in scalars], np.float64)
        values = xp_of(like).asarray(flat)
        if self.scalars is None:
            self.scalars = values
            views = iter([values[i] for i in range(flat.size)])  # 0-d device views, made before the capture
            self.items = [[(group, p, tuple(next(views) for _ in scalars)) for group, p, scalars in items]
                          for items in host]
        else:
            self.scalars[...] = values
        for optimizer in self.optimizers:
            optimizer._opt_called = True

    def _step(self, arrays):
        """The captured work: zero the gradients, forward and backward, each optimizer's array math."""
        from .graph import _flatten, _unflatten
        inputs = _unflatten(self.spec, [_new(a) for a in arrays])
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=False)
        outputs = self.graph._forward_backward(inputs)
        self.graph._clip_grads()
        for optimizer, items in zip(self.optimizers, self.items):
            optimizer.apply_scalars(items)
        leaves = []
        self.output_spec = _flatten(outputs, leaves)
        return [t.detach()._data for t in leaves] + (list(arrays) if self.writes_inputs else [])

    def _outputs(self, outputs):
        """The step's outputs as the call returns them; where the step may write its inputs in place, what it
        wrote into the graph's copies of them goes to the caller's arrays first (as eager code writes them)."""
        from .graph import _unflatten
        if self.writes_inputs:
            n = len(outputs) - len(self.arrays)
            for array, written in zip(self.arrays, outputs[n:]):
                array[...] = written
            outputs = outputs[:n]
        self.arrays = None
        return _unflatten(self.output_spec, [_new(a) for a in outputs])

    def _first_run(self, outputs):
        """The warm-up before the capture ran this call's step: its outputs are this call's."""
        self.first_outputs = self._outputs(outputs)
        for plan in self.graph._plans.values():
            plan.failed_op = None
        self.held = _hold(_step_tensors(self.graph, self.optimizers))

    def capture(self, leaves):
        """Run this call's step (the capture's warm-up; kernels compile, its allocations are planned) and capture
        the next; ``first_outputs`` are this call's outputs once the step has run."""
        arrays = self.arrays = [t._data for t in leaves]
        runtime = backends.runtime(arrays[0])
        self.gemm_settings = runtime.gemm_settings()
        self._upload_scalars(arrays[0])
        self.replay = runtime.capture(self._step, arrays, on_warm_up=self._first_run)

    def __call__(self, leaves):
        if (_settings(self.optimizers) != self.settings or _moved(self.held)
                or backends.runtime(leaves[0]._data).gemm_settings() != self.gemm_settings):
            return None
        self._upload_scalars(leaves[0]._data)
        self.arrays = [t._data for t in leaves]
        return self._outputs(self.replay(self.arrays))
