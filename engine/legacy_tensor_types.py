"""torch's legacy tensor types: ``FloatTensor``, ``LongTensor``, ... and their ``cuda`` twins.

Each is a class whose instances are never made: calling it makes an ordinary ``engine.Tensor`` of its dtype on
its device (``FloatTensor(2, 3)``: uninitialised, of that shape; ``FloatTensor([1, 2])`` or a numpy array: that
data converted; ``FloatTensor()``: empty; ``FloatTensor(t)``: ``t`` itself, which must have the type), and
``isinstance(t, FloatTensor)`` is true for every float32 CPU tensor, as in torch. ``as_tensor_type`` is what
``Tensor.type(...)`` converts with, ``set_default_tensor_type`` torch's deprecated setter of the default dtype
(and, for a CUDA type, device). The CUDA types are in ``CUDA_TYPES`` (``engine.cuda`` exposes them).
"""
import builtins
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
        if cls.is_cuda:
            warnings.warn("The torch.cuda.*DtypeTensor constructors are no longer recommended. It's best to use "
                          "methods such as torch.tensor(data, dtype=*, device='cuda') to create tensors.",
                          stacklevel=2)
        if device is not None and _device(device).type != cls.device_type:
            raise RuntimeError(f"legacy constructor expects device type: {cls.device_type} but device type: "
                               f"{_device(device).type} was passed")
        return legacy_new(cls.dtype, device if device is not None else cls.device_type, args, cls)


def legacy_new(dtype, device, args, tensor_type=None):
    """torch's legacy constructor (``FloatTensor(...)``, ``Tensor(...)``): no arguments, an empty tensor;
    sizes (or a ``Size``), an uninitialised one; a sequence or numpy array, its values; a storage, a tensor over
    its memory; a tensor, itself (torch: an alias), which must be of ``tensor_type`` where one is given
    (``Tensor(t)`` takes any)."""
    from . import empty, tensor
    from .storage import is_storage

    place = dict(dtype=dtype, device=device)
    if not args:
        return empty(0, **place)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, (bool, np.bool_)) for a in args):
        return empty(*(int(a) for a in args), **place)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Size):
            return empty(*data, **place)
        if isinstance(data, Tensor):
            if tensor_type is not None and not isinstance(data, tensor_type):
                raise TypeError(f"expected {tensor_type.__module__}.{tensor_type.__name__} (got {data.type()})")
            return data
        if is_storage(data):
            if getattr(data, "dtype", dtype) is not dtype:  # a TypedStorage of another dtype
                raise RuntimeError(f"Expected a Storage of type {dtype.title} or an UntypedStorage, but got type "
                                   f"{data.dtype.title} for argument 1 'storage'")
            return empty(0, **place).set_(data)
        if isinstance(data, (np.ndarray, list, tuple)):
            return tensor(data, **place)
        if isinstance(data, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
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


#: types ``Tensor.type`` knows by name only: torch has no class for them (``torch.ComplexFloatTensor`` does not
#: exist, ``x.type('torch.ComplexFloatTensor')`` converts)
_NAME_ONLY = {"ComplexFloatTensor": _dtype.complex64, "ComplexDoubleTensor": _dtype.complex128,
              "UInt16Tensor": _dtype.uint16, "UInt32Tensor": _dtype.uint32, "UInt64Tensor": _dtype.uint64}


def _named_type(name):
    """The legacy type a name such as ``'torch.FloatTensor'`` or ``'engine.cuda.IntTensor'`` stands for, or
    None."""
    parts = name.split(".")
    if parts[0] not in ("torch", "engine"):
        return None
    parts = parts[1:]
    table = CUDA_TYPES if len(parts) == 2 and parts[0] == "cuda" else CPU_TYPES if len(parts) == 1 else {}
    return table.get(parts[-1])


def _target(type):
    """The device type and dtype ``Tensor.type(type)`` converts to, for a legacy type or its name (or the name
    of a type torch has no class for: ``'torch.ComplexFloatTensor'``; ``'torch.Tensor'`` and ``Tensor``: the
    default dtype), or None for a dtype. torch's errors for anything else."""
    if isinstance(type, str):
        legacy = _named_type(type)
        if legacy is not None:
            return legacy.device_type, legacy.dtype
        parts = type.split(".")
        if parts[0] in ("torch", "engine") and (len(parts) == 2 or len(parts) == 3 and parts[1] == "cuda"):
            dt = _dtype.get_default_dtype() if parts[-1] == "Tensor" else _NAME_ONLY.get(parts[-1])
            if dt is not None:
                return "cuda" if len(parts) == 3 else "cpu", dt
        raise ValueError(f"invalid type: '{type}'")
    if isinstance(type, _TensorType):
        return type.device_type, type.dtype
    if type is Tensor:
        return "cpu", _dtype.get_default_dtype()
    if isinstance(type, _dtype.dtype):
        return None
    if not isinstance(type, builtins.type):
        raise TypeError("dtype must be a type, str, or dtype object")
    raise ValueError(f"invalid type: '{type.__name__}'")


def as_tensor_type(tensor, type, non_blocking=False):
    """``tensor.type(type)``: ``tensor`` converted to a dtype, a legacy type or a legacy type's name (its dtype
    and device type); ``tensor`` itself when it already is one."""
    target = _target(type)
    if target is None:
        return tensor.to(type, non_blocking=non_blocking)
    device_type, dt = target
    device = tensor.device if tensor.device.type == device_type else device_type
    return tensor.to(device, dt, non_blocking=non_blocking)


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
