"""``nn.parallel.replicate``: copies of a module, one per device, whose parameters are differentiable copies
of the original's (so the replicas' gradients reach the original parameters), as torch's.

Each replica is a shallow copy of every submodule, as torch's: its parameters are no longer ``Parameter``
leaves but plain tensor attributes (also kept in ``_former_parameters``), so ``replica.parameters()`` is
empty; buffers are the originals on their own device (batch norm's running statistics update the module's)
and copies elsewhere. With ``detach`` the parameter copies carry no gradient.
"""
from collections import OrderedDict

from .comm import as_device


def _copy_to(tensor, device, detach):
    """``tensor`` on ``device``: a differentiable alias on its own device (not the leaf itself), a copy
    elsewhere."""
    if detach:
        tensor = tensor.detach()
    return tensor.to(device) if tensor.device != device else tensor.view_as(tensor)


def _shallow_copy(module):
    replica = module.__class__.__new__(module.__class__)
    replica.__dict__ = module.__dict__.copy()
    replica.__dict__.update(_parameters=OrderedDict(), _buffers=module._buffers.copy(),
                            _modules=module._modules.copy(), _former_parameters=OrderedDict(), _is_replica=True)
    return replica


def replicate(network, devices, detach=False):
    """A list of copies of ``network``, the i-th on ``devices[i]`` (see the module docstring)."""
    devices = [as_device(d) for d in devices]
    originals = list(network.modules())
    replicas = []
    for device in devices:
        copies = {id(m): _shallow_copy(m) for m in originals}
        for module in originals:
            replica = copies[id(module)]
            for name, child in module._modules.items():
                replica._modules[name] = None if child is None else copies[id(child)]
            for name, param in module._parameters.items():
                if param is None:
                    replica._parameters[name] = None
                    continue
                copy = _copy_to(param, device, detach or not param.requires_grad)
                setattr(replica, name, copy)
                replica._former_parameters[name] = copy
            for name, buffer in module._buffers.items():
                if buffer is not None and buffer.device != device:
                    replica._buffers[name] = _copy_to(buffer, device, detach or not buffer.requires_grad)
        replicas.append(copies[id(network)])
    return replicas


__all__ = ["replicate"]
