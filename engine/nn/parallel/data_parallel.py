"""``nn.DataParallel`` and ``data_parallel``, as PyTorch's on zero or one GPU.

Without a usable GPU, ``DataParallel(module)`` just calls ``module`` (``device_ids`` is empty), as
torch's does (``data_parallel`` raises, as torch's does). With one GPU it moves the module there at
construction and scatters the call's arguments there at each call (``scatter_kwargs``: on one device,
every tensor moves whole), and checks that the module stayed there. Splitting a batch over several GPUs
is not enabled (``replicate``, ``parallel_apply`` and ``gather`` are there, untested on several GPUs):
more than one device id is refused in one line. The wrapped module is the ``module`` attribute, so
``state_dict`` keys start with ``module.`` as in torch.
"""
import itertools

from ... import _device, cuda
from ..modules.module import Module
from .scatter_gather import scatter_kwargs


def _gpu_index(device):
    """The GPU index of ``device`` (an int, ``"cuda:1"`` or an engine.device)."""
    if isinstance(device, int):
        return device
    return _device.device(device).index or 0


def _gpu_ids(device_ids):
    """The GPU indices to use: all visible GPUs by default; more than one is refused."""
    ids = list(range(cuda.device_count())) if device_ids is None else [_gpu_index(d) for d in device_ids]
    if not ids:
        raise RuntimeError("no available devices were found")
    if len(ids) > 1:
        raise NotImplementedError(f"DataParallel over several GPUs (device_ids={ids}) is not implemented: pass "
                                  "one device id, e.g. device_ids=[0]")
    return ids


def _check_module_on(module, device):
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        if tensor.device != device:
            raise RuntimeError(f"module must have its parameters and buffers on device {device} (device_ids[0]) "
                               f"but found one of them on device: {tensor.device}")


class DataParallel(Module):
    """Runs ``module`` on ``device_ids[0]`` (see the module's docstring); ``output_device`` and ``dim`` are
    kept as torch keeps them (one device gathers nothing)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        if not cuda.is_available():
            self.device_ids = []
            return
        self.device_ids = _gpu_ids(device_ids)
        self.output_device = self.device_ids[0] if output_device is None else _gpu_index(output_device)
        self.dim = dim
        self.src_device_obj = _device.device("cuda", self.device_ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_module_on(self.module, self.src_device_obj)
        return _call_on_one(self.module, inputs, kwargs, self.device_ids, self.dim)


def _call_on_one(module, inputs, kwargs, device_ids, dim):
    """``module`` called on its one device with the arguments scattered there."""
    inputs, kwargs = scatter_kwargs(inputs, kwargs, device_ids, dim)
    if not inputs and not kwargs:
        inputs, kwargs = ((),), ({},)
    return module(*inputs[0], **kwargs[0])


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """Call ``module(*inputs, **module_kwargs)`` on one GPU as ``DataParallel`` would, without wrapping
    it; without a GPU it raises, as torch's does."""
    if not isinstance(inputs, tuple):
        inputs = () if inputs is None else (inputs,)
    module_kwargs = module_kwargs or {}
    if not cuda.is_available():
        raise RuntimeError("device type could not be determined: data_parallel needs a GPU")
    ids = _gpu_ids(device_ids)
    _check_module_on(module, _device.device("cuda", ids[0]))
    return _call_on_one(module, inputs, module_kwargs, ids, dim)
