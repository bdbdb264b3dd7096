"""A restricted unpickler for PyTorch checkpoints: it rebuilds tensors and containers, nothing else.

Only the globals a ``state_dict`` pickle needs are resolved, each to a function of ours (never to
the real torch object). Any other global (``os.system``, ``builtins.eval``, a user class) raises
``UnpicklingError`` naming it before anything is called, so a checkpoint cannot run code.
"""
import _compat_pickle
import collections
import pickle

import numpy as np

__all__ = ["UnpicklingError", "RestrictedUnpickler", "StorageType", "BFLOAT16", "to_native"]


class UnpicklingError(pickle.UnpicklingError):
    """A checkpoint that is malformed or asks for a global outside the allowlist."""


BFLOAT16 = "bfloat16"  # bfloat16 storages are read as uint16 and widened to float32

_STORAGE_DTYPES = {
    "DoubleStorage": np.float64, "FloatStorage": np.float32, "HalfStorage": np.float16,
    "BFloat16Storage": BFLOAT16, "LongStorage": np.int64, "IntStorage": np.int32,
    "ShortStorage": np.int16, "CharStorage": np.int8, "ByteStorage": np.uint8,
    "BoolStorage": np.bool_, "UntypedStorage": np.uint8,
}
_TORCH_DTYPES = {
    "float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": BFLOAT16,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8, "uint8": np.uint8,
    "bool": np.bool_, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
}


class StorageType:
    """What a pickled ``torch.FloatStorage`` (etc.) stands for: the element type of a storage."""

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self):
        return f"StorageType({self.name})"


class Storage:
    """A storage read from a checkpoint: a flat array of its elements (uint8 when untyped)."""

    def __init__(self, array, dtype):
        self.array = array
        self.dtype = dtype


def storage_numpy_dtype(dtype):
    """The numpy dtype a storage of ``dtype`` is stored as (bfloat16 as raw uint16)."""
    return np.dtype(np.uint16) if dtype is BFLOAT16 else np.dtype(dtype)


def to_native(array, dtype):
    """``array`` as an engine-compatible array: bfloat16 bits widened to float32."""
    if dtype is BFLOAT16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _strided_view(storage, storage_offset, size, stride, dtype=None):
    """The tensor ``(size, stride)`` at ``storage_offset`` of ``storage``, bounds-checked, as a view."""
    if storage is None:  # scan pass of the legacy reader: shapes only
        return None
    dtype = storage.dtype if dtype is None else dtype
    flat = storage.array
    if storage.dtype != dtype:  # v3 tensors carry their dtype; the storage is untyped bytes
        flat = flat.view(storage_numpy_dtype(dtype))
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise UnpicklingError(f"invalid tensor geometry: size {size}, stride {stride}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if storage_offset < 0 or storage_offset + extent > flat.size:
        raise UnpicklingError(f"tensor of size {size} and stride {stride} at offset {storage_offset} "
                              f"does not fit in a storage of {flat.size} elements")
    base = flat[storage_offset:]
    if 0 in size:
        array = np.empty(size, dtype=base.dtype)
    else:
        array = np.lib.stride_tricks.as_strided(
            base, shape=size, strides=tuple(s * base.itemsize for s in stride), writeable=base.flags.writeable)
    return _wrap(to_native(array, dtype))


def _wrap(array):
    """An engine tensor sharing ``array`` (dtypes the engine lacks are refused by name)."""
    from .._dtype import from_numpy_dtype
    from ..tensor import _new

    try:
        from_numpy_dtype(array.dtype)
    except (TypeError, KeyError, ValueError) as e:
        raise UnpicklingError(f"checkpoint holds a tensor of dtype {array.dtype}, which engine does not support") from e
    return _new(array)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    """``torch._utils._rebuild_tensor_v2``: a tensor over a storage (hooks and metadata are dropped)."""
    return _strided_view(storage, storage_offset, size, stride)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None):
    """``torch._utils._rebuild_tensor_v3``: like v2, with the dtype given explicitly."""
    return _strided_view(storage, storage_offset, size, stride, dtype)


def _rebuild_tensor(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor`` (checkpoints from torch < 1.0)."""
    return _strided_view(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """``torch._utils._rebuild_parameter``: an ``engine.nn.Parameter``."""
    if data is None:
        return None
    from ..nn.parameter import Parameter

    return Parameter(data, requires_grad=bool(requires_grad))


def _torch_size(dims=()):
    """``torch.Size``: an ``engine.Size``."""
    from ..tensor import Size

    return Size(int(d) for d in dims)


def _allowlist():
    """(module, name) -> the object of ours that stands in for it."""
    allowed = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch", "Size"): _torch_size,
    }
    for name, dtype in _STORAGE_DTYPES.items():
        for module in ("torch", "torch.storage"):
            allowed[(module, name)] = StorageType(name, dtype)
    for name, dtype in _TORCH_DTYPES.items():
        allowed[("torch", name)] = dtype
    return allowed


_ALLOWED = _allowlist()


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles a checkpoint; ``load_storage(storage_type, key, location, numel)`` supplies storages.

    With ``load_storage=None`` every storage is None and tensors come back as None (a scan pass that
    only finds where the pickle ends).
    """

    def __init__(self, file, load_storage=None):
        super().__init__(file)
        self._load_storage = load_storage

    def find_class(self, module, name):
        # protocol 2 pickles use Python 2 names (__builtin__.eval): check and report Python 3's
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UnpicklingError(
                f"refusing to load the global '{module}.{name}' from a checkpoint: only tensors, "
                "storages and plain containers are allowed (nothing in a checkpoint may run code)") from None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                and isinstance(pid[1], StorageType)):
            raise UnpicklingError(f"unsupported persistent id in checkpoint: {pid!r:.200}")
        if self._load_storage is None:
            return None
        return self._load_storage(*pid[1:])
