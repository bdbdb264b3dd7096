"""An inference plan captured by its device's runtime (on the GPU: one CUDA graph per input signature).

The capture reads the parameters' and buffers' arrays where they were when it was made. A replay checks
that every tensor the plan reads from outside still holds the same array (``load_state_dict``, ``.to()``
or an assignment to ``.data`` puts in another) and captures anew where one does not; values changed in
place (an optimizer step, ``copy_``) need nothing.
"""
import warnings

from ... import backends
from ...tensor import Tensor
from .plan import TENSOR


def _outside_tensors(plan):
    """The tensors from outside the graph that the plan's ops read (arguments and tensors in their state)."""
    found = {}
    for op in plan.ops:
        values = [ref for kind, ref in op.args if kind == TENSOR]
        for value in op.state.values():
            values += value if isinstance(value, (tuple, list)) else [value]
        for value in values:
            if isinstance(value, Tensor):
                found[id(value)] = value
    return list(found.values())


class CapturedPlan:
    """A plan's replay captured by the runtime of its inputs' device, recaptured when an outside tensor's
    array changed. ``capture_plan`` makes one."""

    def __init__(self, plan, arrays):
        self.plan = plan
        self.tensors = _outside_tensors(plan)
        self._capture(arrays)

    def _capture(self, arrays):
        self.arrays = [t._data for t in self.tensors]  # kept: the graph reads them by address
        self.graph = backends.runtime(arrays[0]).capture(self.plan.run_arrays, arrays)

    def __call__(self, arrays):
        if any(t._data is not a for t, a in zip(self.tensors, self.arrays)):
            self._capture(arrays)
        return self.graph(arrays)


def capture_plan(plan, arrays):
    """``plan``'s inference replay on ``arrays`` captured by their device's runtime, or None: where the
    runtime captures nothing (the CPU), or with a one-line warning naming the op that cannot be captured
    (the plan is then replayed op by op)."""
    if not arrays or not backends.runtime(arrays[0]).captures_graphs():
        return None
    dependent = next((op for op in plan.ops if op.data_dependent is not None), None)
    if dependent is not None:
        _refused(plan, dependent, "its output size depends on values")
        return None
    random = next((op for op in plan.ops if getattr(op.cls, "draws_random", False)), None)
    if random is not None:
        _refused(plan, random, "it draws random numbers, which every replay of a capture would repeat")
        return None
    plan.failed_op = None
    try:
        return CapturedPlan(plan, arrays)
    except Exception as error:
        if plan.failed_op is None:
            raise
        _refused(plan, plan.failed_op, str(error).splitlines()[0] if str(error) else type(error).__name__)
        return None


def _refused(plan, op, why):
    warnings.warn(f"{plan.name}: {op.name()} cannot be captured into a CUDA graph ({why}); this plan is replayed "
                  "op by op", RuntimeWarning, stacklevel=4)
