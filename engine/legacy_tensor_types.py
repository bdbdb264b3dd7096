"""torch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ... and their ``cuda`` twins.

Each is a class whose instances are never made: calling it makes an ordinary ``engine.Tensor`` of its dtype on
its device (``FloatTensor(2, 3)``: uninitialised, of that shape; ``FloatTensor([1, 2])`` or a numpy array: that
data converted; ``FloatTensor()``: empty; ``FloatTensor(t)``: ``t`` itself, which must have the type), and
``isinstance(t, FloatTensor)`` is true for every float32 CPU tensor, as in torch. ``as_tensor_type`` is what
``Tensor.type(...)`` converts with, ``set_default_tensor_type`` torch's deprecated setter of the default dtype
(and, for a CUDA type, device). The CUDA types are in ``CUDA_TYPES`` (``engine.cuda`` exposes them).
"""
import numbers
import warnings

import numpy as np

from . import _dtype
from ._device import device as _device, get_default_device, set_default_device
from .tensor import Size, Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
           "IntTensor", "LongTensor", "BoolTensor", "CPU_TYPES", "CUDA_TYPES", "as_tensor_type",
           "set_default_tensor_type"]

_DTYPES = {"FloatTensor": _dtype.float32, "DoubleTensor": _dtype.float64, "HalfTensor": _dtype.float16,
           "BFloat16Tensor": _dtype.bfloat16, "ByteTensor": _dtype.uint8, "CharTensor": _dtype.int8,
           "ShortTensor": _dtype.int16, "IntTensor": _dtype.int32, "LongTensor": _dtype.int64,
           "BoolTensor": _dtype.bool_}


class _TensorType(type):
    """The metaclass of the legacy types: ``isinstance`` by dtype and device type, calling constructs."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == cls.device_type

    def __subclasscheck__(cls, other):
        return other is cls

    def __repr__(cls):
        return f"<class '{cls.__module__}.{cls.__name__}'>"

    def __call__(cls, *args, device=None):
        from . import empty, tensor

        if cls.is_cuda:
            warnings.warn("The torch.cuda.*DtypeTensor constructors are no longer recommended. It's best to use "
                          "methods such as torch.tensor(data, dtype=*, device='cuda') to create tensors.",
                          stacklevel=2)
        if device is not None and _device(device).type != cls.device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls.device_type} but device type: "
                               f"{_device(device).type} was passed")
        place = dict(dtype=cls.dtype, device=device if device is not None else cls.device_type)
        if not args:
            return empty(0, **place)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)) for a in args):
            return empty(*(int(a) for a in args), **place)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, Size):
                return empty(*data, **place)
            if isinstance(data, Tensor):
                if not isinstance(data, cls):
                    raise TypeError(f"expected {cls.__module__}.{cls.__name__} (got {data.type()})")
                return data
            if isinstance(data, (np.ndarray, list, tuple)):
                return tensor(data, **place)
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        got = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({got}), but expected one of: "
                        "(), (tuple of ints size), (Tensor other), (object data), each with a keyword device")


def _make(name, device_type):
    module = "engine.cuda" if device_type == "cuda" else "engine"
    doc = f"``{module}.{name}``: {_DTYPES[name]} tensors on the {device_type.upper()} (see ``legacy_tensor_types``)."
    return _TensorType(name, (), {"__module__": module, "__doc__": doc, "dtype": _DTYPES[name],
                                  "device_type": device_type, "is_cuda": device_type == "cuda", "is_sparse": False})


CPU_TYPES = {name: _make(name, "cpu") for name in _DTYPES}
CUDA_TYPES = {name: _make(name, "cuda") for name in _DTYPES}
FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor, ShortTensor, IntTensor, LongTensor, \
    BoolTensor = CPU_TYPES.values()


def _named_type(name):
    """The legacy type a name such as ``'torch.FloatTensor'``, ``'engine.cuda.IntTensor'`` or ``'LongTensor'``
    stands for, or None."""
    parts = name.split(".")
    if parts[0] in ("torch", "engine"):
        parts = parts[1:]
    table = CUDA_TYPES if len(parts) == 2 and parts[0] == "cuda" else CPU_TYPES if len(parts) == 1 else {}
    return table.get(parts[-1])


def as_tensor_type(tensor, type, non_blocking=False):
    """``tensor.type(type)``: ``tensor`` converted to a dtype, a legacy type or a legacy type's name (its dtype
    and device type); ``tensor`` itself when it already is one. Anything else: torch's ValueError."""
    if isinstance(type, str):
        legacy = _named_type(type)
        if legacy is None:
            raise ValueError(f"invalid type: '{type}'")
        type = legacy
    if isinstance(type, _dtype.dtype):
        return tensor.to(type, non_blocking=non_blocking)
    if isinstance(type, _TensorType):
        if isinstance(tensor, type):
            return tensor
        target = tensor.device if tensor.device.type == type.device_type else type.device_type
        return tensor.to(target, type.dtype, non_blocking=non_blocking)
    raise ValueError(f"invalid type: '{getattr(type, '__name__', type)}'")


_state = {"device_from_type": False}  # whether the default device is CUDA because of set_default_tensor_type


def set_default_tensor_type(t):
    """Deprecated (``torch.set_default_tensor_type``): make the floating legacy type ``t`` (or its name) the type
    of new tensors: its dtype the default dtype, and a CUDA type's device the default device (until a CPU type is
    set again)."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", stacklevel=2)
    if isinstance(t, str):
        named = _named_type(t)
        if named is None:
            raise AttributeError(f"module 'engine' has no attribute '{t.split('.')[-1]}'")
        t = named
    if not isinstance(t, _TensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dtype.set_default_dtype(t.dtype)
    if t.is_cuda:
        set_default_device("cuda")
        _state["device_from_type"] = True
    elif _state["device_from_type"] and get_default_device().type == "cuda":
        set_default_device(None)
        _state["device_from_type"] = False
