"""``engine.asarray``: torch's array-API conversion, which shares memory with its source whenever it can.

The source decides the rules, as in torch: a tensor keeps its autograd history (a new dtype or device goes
through ``Tensor.to``, a copy through ``clone``); a numpy array is viewed (``from_numpy``), a numpy scalar copied
into a 0-d tensor; an object with ``__dlpack__`` goes through ``from_dlpack``; any other object with the buffer
protocol is read as raw bytes of ``dtype`` (the default float type when none is given, as ``frombuffer``); a
Python scalar or sequence is copied (``tensor``). ``copy=False`` raises torch's ValueError where the result cannot
share the source's memory.
"""
import warnings

import numpy as np

from .. import _dtype
from ..tensor import Tensor
from .._device import factory_device
from .creation import from_numpy, tensor as _tensor
from .memory_layout_creation import frombuffer


def _alias_error(source, target):
    """torch's error for ``copy=False`` where the device or the dtype has to change."""
    if source.device != target.device:
        return ValueError(f"can't alias tensor from device '{source.device}' to '{target.device}'.")
    return ValueError(f"can't alias tensor with dtype '{source.dtype.title}' into dtype '{target.dtype.title}'.")


def _from_tensor(obj, dtype, device, copy):
    converted = obj.to(device=device, dtype=dtype)
    if converted is not obj:
        if copy is False:
            raise _alias_error(obj, converted)
        return converted
    return obj.clone() if copy else obj


def _from_numpy_array(obj, dtype, device, copy):
    if isinstance(obj, np.generic):  # a numpy scalar is always copied, into a 0-d tensor, and cast as an array
        return _from_tensor(from_numpy(np.array(obj)), dtype, device, None)
    return _from_tensor(from_numpy(obj), dtype, device, copy)


def _has_buffer(obj):
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def _set_requires_grad(result, requires_grad, source):
    """torch's rule: None stands for the source tensor's own flag (False for other sources), which a result of
    an integer dtype cannot take (torch's error); True or False is set on the result, and a result still
    carrying history is detached to drop it. The tensor handed back as it is gets the flag set on itself, as
    torch does."""
    if requires_grad is None:
        requires_grad = isinstance(source, Tensor) and source.requires_grad
        if requires_grad and result is source:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                          "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                          "warning.", UserWarning, stacklevel=3)
    if requires_grad and not _dtype.is_floating(result._data.dtype):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    if result.requires_grad == requires_grad:
        return result
    if not requires_grad and result.grad_fn is not None:
        return result.detach()
    return result.requires_grad_(requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor, sharing its memory where dtype and device allow (see the module docstring)."""
    device = factory_device(device)
    if isinstance(obj, Tensor):
        result = _from_tensor(obj, dtype, device, copy)
    elif isinstance(obj, (np.ndarray, np.generic)):
        result = _from_numpy_array(obj, dtype, device, copy)
    elif hasattr(obj, "__dlpack__"):
        from ..utils.dlpack import from_dlpack
        result = _from_tensor(from_dlpack(obj), dtype, device, copy)
    elif _has_buffer(obj) and not isinstance(obj, (int, float, bool, complex)):
        result = frombuffer(obj, dtype=dtype if dtype is not None else _dtype.get_default_dtype())
        result = _from_tensor(result, None, device, copy)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        result = _tensor(obj, dtype=dtype, device=device)
    return _set_requires_grad(result, requires_grad, obj)


__all__ = ["asarray"]
