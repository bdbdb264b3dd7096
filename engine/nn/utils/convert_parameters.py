"""Flatten parameters into one vector and back (``torch.nn.utils.convert_parameters``)."""
from ...tensor import Tensor


def _check_same_device(param, device):
    """All parameters must live on one device."""
    if param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def parameters_to_vector(parameters):
    """One 1-D tensor holding all ``parameters`` flattened, in order (differentiable)."""
    from ... import ops
    parameters = list(parameters)
    device = parameters[0].device if parameters else None
    for p in parameters:
        _check_same_device(p, device)
    return ops.cat([p.view(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Make each of ``parameters`` hold the next slice of ``vec``: as in torch, its ``.data`` becomes a view of
    ``vec`` (so it takes ``vec``'s dtype and shares its memory), no autograd."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    parameters = list(parameters)
    device = parameters[0].device if parameters else None
    for p in parameters:
        _check_same_device(p, device)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p)
        pointer += n
