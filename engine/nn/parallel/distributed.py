"""``nn.parallel.DistributedDataParallel``: one model replica per process, gradients averaged over the
process group during the backward (``engine.distributed``; see ``engine/distributed/reducer.py``).

At wrap time every rank checks that all ranks hold the same parameters and buffers (names, shapes,
dtypes) and takes rank 0's values. Each forward first gives every rank rank 0's buffers (BatchNorm's
running statistics; ``broadcast_buffers``), as torch. The wrapped module is the ``module`` attribute,
so ``state_dict`` keys start with ``module.``. Inside ``nn.Graph`` the buffer broadcast is a recorded
op and the gradient all-reduces run in the replayed backward, so a compiled training step
communicates as the eager one does.
"""
import contextlib
import itertools

from ... import _device
from ...autograd import grad_mode
from ..modules.module import Module
from .device_transfer import to_device


class DistributedDataParallel(Module):
    """Data-parallel training over ``engine.distributed``'s default process group (torch's signature;
    ``device_ids`` holds at most the one GPU of a CUDA module; ``dim``, ``output_device`` and
    ``static_graph`` are kept as given and ``check_reduction``, deprecated in torch, is ignored)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        from ... import distributed
        from ...distributed.module_states import broadcast_module_states, check_same_layout
        from ...distributed.reducer import Reducer
        self.module = module
        self.process_group = process_group
        self.world_size = distributed.get_world_size(process_group)
        self.device = _module_device(module, device_ids)
        self.device_ids = None if device_ids is None else [self.device.index or 0]
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self.require_backward_grad_sync = True
        check_same_layout(module, process_group)
        broadcast_module_states(module, 0, process_group)
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self.reducer = Reducer(params, process_group, self.bucket_bytes_cap, find_unused_parameters,
                               gradient_as_bucket_view)

    def forward(self, *inputs, **kwargs):
        from ...distributed.module_states import broadcast_in_place
        if self.device_ids is not None:
            inputs, kwargs = to_device(inputs, self.device), to_device(kwargs, self.device)
        if self.broadcast_buffers and self.world_size > 1:
            broadcast_in_place([b for b in self.module.buffers() if b is not None], 0, self.process_group)
        outputs = self.module(*inputs, **kwargs)
        if grad_mode.is_grad_enabled() and self.training:
            self.reducer.prepare(outputs, self.require_backward_grad_sync)
        return outputs

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, forwards and their backwards accumulate gradients locally, without averaging; the
        first backward after it averages the accumulated gradients."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def extra_repr(self):
        return f"world_size={self.world_size}, broadcast_buffers={self.broadcast_buffers}"


def _module_device(module, device_ids):
    """The one device all of the module's tensors are on; ``device_ids`` may name it (one CUDA device)."""
    devices = {t.device for t in itertools.chain(module.parameters(), module.buffers()) if t is not None}
    if len(devices) > 1:
        raise ValueError(f"DistributedDataParallel needs a module on one device, got tensors on "
                         f"{sorted(map(str, devices))}")
    device = devices.pop() if devices else _device.CPU
    if device_ids is None:
        return device
    named = [_device.device(d) if not isinstance(d, int) else _device.device("cuda", d) for d in device_ids]
    if len(named) != 1 or named[0] != device or device.type != "cuda":
        raise ValueError(f"DistributedDataParallel device_ids only work with a single-device GPU module: got "
                         f"device_ids {list(device_ids)} for a module on {device}")
    return named[0]
