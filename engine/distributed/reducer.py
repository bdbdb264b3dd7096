"""DistributedDataParallel's gradient reducer: parameters in buckets whose averaging starts during the
backward, as soon as every gradient of a bucket is ready.

Buckets follow the parameters in reverse order (roughly the order the backward produces their
gradients), grouped by dtype and device, up to ``bucket_cap_mb`` each (the first one to 1 MB, as torch,
so that the first all-reduce starts early). Each parameter has a post-accumulate-grad hook: it copies
the gradient, divided by the world size, into its bucket's flat array, and when the bucket is full,
the bucket's non-blocking all-reduce (a sum: the average) starts; buckets start in index order on every rank, as MPI and NCCL need. The hook
of the last gradient waits for all buckets and copies the averages back into the ``.grad`` arrays
(keeping them, so ``nn.Graph`` and optimizers that reuse gradient arrays see the averages in place).

With ``find_unused_parameters``, each forward walks the autograd graph from the outputs; parameters it
does not reach count as ready, with zeros, when the backward starts, and a small all-reduce of which
parameters each rank used leaves ``.grad`` alone where no rank used a parameter.
"""
import numpy as np

from .._device import array_module
from ..autograd.function import AccumulateGrad
from ..tensor import Tensor, _new
from .collectives import all_reduce
from .process_group import resolve
from .reduce_op import ReduceOp

#: torch's size of the first bucket
FIRST_BUCKET_BYTES = 1024 * 1024


class Bucket:
    """Parameters whose gradients are averaged together, in one flat array."""

    def __init__(self, params):
        self.params = params
        self.starts = np.cumsum([0] + [p.numel() for p in params]).tolist()
        xp = array_module(params[0]._data)
        self.flat = xp.zeros(self.starts[-1], params[0]._data.dtype)
        #: each parameter's part of the flat array, shaped as the parameter
        self.slots = [self.flat[lo:hi].reshape(p._data.shape)
                      for p, lo, hi in zip(params, self.starts, self.starts[1:])]
        self.pending = len(params)
        self.work = None


def assign_buckets(params, cap_bytes, first_cap_bytes=FIRST_BUCKET_BYTES):
    """The parameters in reverse order, cut into lists of one dtype and device of at most the cap's bytes
    (a single larger parameter is a bucket of its own)."""
    buckets = []
    current, size, cap = [], 0, min(first_cap_bytes, cap_bytes)
    for p in reversed(params):
        kind = (p.dtype, p.device)
        if current and (size + p.nbytes > cap or (current[0].dtype, current[0].device) != kind):
            buckets.append(current)
            current, size, cap = [], 0, cap_bytes
        current.append(p)
        size += p.nbytes
    if current:
        buckets.append(current)
    return buckets


def reached_parameters(outputs):
    """The ids of the leaf tensors the autograd graph of ``outputs`` (any nesting) leads to."""
    stack = [t.grad_fn for t in _tensors(outputs) if t.grad_fn is not None]
    seen = set(map(id, stack))
    reached = set()
    while stack:
        node = stack.pop()
        if isinstance(node, AccumulateGrad):
            tensor = node.tensor_ref()
            if tensor is not None:
                reached.add(id(tensor))
            continue
        for edge in getattr(node, "next_edges", ()):
            if edge is not None and id(edge[0]) not in seen:
                seen.add(id(edge[0]))
                stack.append(edge[0])
    for t in _tensors(outputs):
        if t.grad_fn is None and t.requires_grad:
            reached.add(id(t))
    return reached


def _tensors(obj):
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item)


class Reducer:
    """Averages the gradients of ``params`` over ``group`` during each backward (see the module docstring)."""

    def __init__(self, params, group, bucket_cap_bytes, find_unused_parameters=False, gradient_as_bucket_view=False):
        self.group = group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.buckets = [Bucket(ps) for ps in assign_buckets(params, bucket_cap_bytes)]
        #: each gradient is divided by the world size as it enters its bucket, so the all-reduce's sum is
        #: the average (as torch's DDP; dividing after would be one more pass over every gradient)
        self.scale = 1.0 / resolve(group).size()
        self.place = {id(p): (b, i) for b, bucket in enumerate(self.buckets) for i, p in enumerate(bucket.params)}
        self.sync = True  # set by each forward: False inside DistributedDataParallel.no_sync()
        self.unused = []  # parameters the last forward's graph does not reach (find_unused_parameters)
        self.ready = set()
        self.next_bucket = 0
        for p in params:
            p.register_post_accumulate_grad_hook(self._on_gradient)

    # ---- each forward ----------------------------------------------------------------------------
    def prepare(self, outputs, sync):
        """Before the backward of ``outputs``: whether to average, and which parameters it will not reach."""
        self.check_finished()
        self.sync = sync
        if sync and self.find_unused_parameters:
            reached = reached_parameters(outputs)
            self.unused = [bucket.params[i] for bucket in self.buckets for i in range(len(bucket.params))
                           if id(bucket.params[i]) not in reached]

    def check_finished(self):
        """Refuse to start a new iteration while the last backward left gradients unreduced."""
        if self.ready:
            missing = len(self.place) - len(self.ready)
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before "
                f"starting a new one: {missing} parameter(s) did not receive a gradient in the last backward "
                "(the module has parameters that were not used in producing the loss); pass "
                "find_unused_parameters=True to DistributedDataParallel, or make every output take part in "
                "the loss")

    # ---- during the backward ---------------------------------------------------------------------
    def _on_gradient(self, param):
        if not self.sync:
            return
        if not self.ready and self.unused:
            for p in self.unused:
                self._mark_ready(p, used=False)
        self._mark_ready(param, used=True)

    def _mark_ready(self, param, used):
        if id(param) in self.ready:
            return
        self.ready.add(id(param))
        b, i = self.place[id(param)]
        bucket = self.buckets[b]
        slot = bucket.slots[i]
        if not used or param.grad is None:
            slot[...] = 0
        elif param.grad._data is slot:
            slot *= self.scale
        else:
            array_module(slot).multiply(param.grad._data, self.scale, out=slot)
        bucket.pending -= 1
        self._start_ready_buckets()
        if self.next_bucket == len(self.buckets):
            self._finish()
        else:
            self._progress()

    def _start_ready_buckets(self):
        """Start the all-reduces of the full buckets that follow the last one started."""
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            bucket.work = all_reduce(_new(bucket.flat), ReduceOp.SUM, group=self.group, async_op=True)
            self.next_bucket += 1

    def _progress(self):
        """Let the transport advance the all-reduces in flight (MPI moves data only when called)."""
        for bucket in self.buckets[:self.next_bucket]:
            bucket.work.is_completed()

    def _finish(self):
        """Wait for every bucket, put the averages in the ``.grad`` arrays and reset for the next backward."""
        used = self._used_anywhere() if self.unused else None
        for bucket in self.buckets:
            bucket.work.wait()
            for i, param in enumerate(bucket.params):
                if used is not None and not used[id(param)]:
                    continue
                self._land(param, bucket.slots[i])
            bucket.pending = len(bucket.params)
            bucket.work = None
        self.ready = set()
        self.next_bucket = 0

    def _land(self, param, average):
        if self.gradient_as_bucket_view:
            if param.grad is None or param.grad._data is not average:
                param.grad = _new(average)
            return
        if param.grad is None:
            param.grad = _new(average.copy())
        else:
            param.grad._data[...] = average

    def _used_anywhere(self):
        """{parameter id: whether any rank's forward used it} (one small all-reduce of a byte per parameter)."""
        params = [p for bucket in self.buckets for p in bucket.params]
        unused = set(map(id, self.unused))
        flags = _new(np.array([id(p) not in unused for p in params], np.uint8))
        all_reduce(flags, ReduceOp.MAX, group=self.group)
        return {id(p): bool(flag) for p, flag in zip(params, flags._data)}
