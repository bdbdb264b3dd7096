"""Copy the tensors inside a module call's arguments to one device, keeping the containers around them
(what ``torch.nn.parallel.scatter`` does when there is a single target device)."""
from ...tensor import Tensor


def to_device(obj, device):
    """``obj`` with every tensor in it (nested in tuples, named tuples, lists and dicts) moved to ``device``
    (differentiably); other objects are passed as they are."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_device(item, device) for item in obj))
    if isinstance(obj, tuple):
        return tuple(to_device(item, device) for item in obj)
    if isinstance(obj, list):
        return [to_device(item, device) for item in obj]
    if isinstance(obj, dict):
        return type(obj)((key, to_device(value, device)) for key, value in obj.items())
    return obj
