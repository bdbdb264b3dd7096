"""DLPack exchange with other array libraries (numpy, CuPy, torch, JAX...) without copying: ``to_dlpack`` makes a
capsule of a tensor's memory, ``from_dlpack`` views an object that has ``__dlpack__`` (or a capsule) as a tensor;
tensors have ``__dlpack__``/``__dlpack_device__`` so other libraries' ``from_dlpack`` take them, as torch's."""
import ctypes

import numpy as np

from .._device import xp_for
from ..tensor import Tensor, _new, register_method

DLPACK_CPU, DLPACK_CUDA = 1, 2  # DLDeviceType's values for the devices the engine runs on


def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of this tensor's memory (numpy's or CuPy's); refused for tensors that require grad."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    given = dict(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)
    return self._data.__dlpack__(**{k: v for k, v in given.items() if v is not None})


def __dlpack_device__(self):
    """(DLPack device type, device index)."""
    return self._data.__dlpack_device__()


def to_dlpack(tensor):
    """A DLPack capsule (``dltensor``) sharing ``tensor``'s memory; it can be consumed once."""
    return __dlpack__(tensor)


class _Capsule:
    """A bare DLPack capsule given the ``__dlpack__`` protocol that ``numpy``/``cupy.from_dlpack`` read."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        """The device fields of the capsule's DLTensor: {void *data; int32 device_type; int32 device_id; ...}."""
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        address = get_pointer(self.capsule, b"dltensor")
        device = (ctypes.c_int32 * 2).from_address(address + ctypes.sizeof(ctypes.c_void_p))
        return int(device[0]), int(device[1])


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of ``ext_tensor`` (an object with ``__dlpack__``, or a capsule from
    ``to_dlpack``); CPU memory gives a numpy-backed tensor, CUDA memory a CuPy-backed one. ``device`` moves it
    (copying) and ``copy=True`` always copies."""
    if isinstance(ext_tensor, Tensor):
        result = ext_tensor
    else:
        source = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
        kind = source.__dlpack_device__()[0]
        if kind not in (DLPACK_CPU, DLPACK_CUDA):
            raise RuntimeError(f"from_dlpack: unsupported DLPack device type {kind} (the engine runs on CPU and CUDA)")
        arr = (np if kind == DLPACK_CPU else xp_for("cuda")).from_dlpack(source)
        result = _new(arr)
    if device is not None:
        result = result.to(device)
    return result.clone() if copy else result


register_method(__dlpack__)
register_method(__dlpack_device__)

__all__ = ["from_dlpack", "to_dlpack"]
