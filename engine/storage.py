"""Storages: the memory under tensors, as torch's ``UntypedStorage`` (bytes) and ``TypedStorage`` (elements of
one dtype; deprecated in torch, with its warning), the legacy ``FloatStorage``-style names, and the tensor
methods that reach them: ``untyped_storage``, ``storage``, ``storage_type``, ``set_`` and ``is_set_to``, with
``is_storage`` and ``from_file``.

A tensor's array views the memory of an outermost array (its root: the allocation, what numpy's ``base`` chain
or CuPy's ends at). A storage wraps that root's bytes as a flat uint8 array, so two views of one tensor report
the same ``data_ptr`` and ``nbytes`` is the whole allocation; writes through a storage reach every tensor over
it. ``set_`` makes a tensor view a storage's bytes in any geometry. Unlike torch's, a storage never grows: a
``set_`` past its end is refused.
"""
import os
import warnings

import numpy as np

from . import _device, _dtype
from ._layout import contiguous_strides
from .autograd import grad_mode
from .storage_conversions import _NO_ORDER, StorageQueries, buffer_values
from .tensor import Tensor, _new, register_method

_TYPED_STORAGE_WARNING = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage "
    "class. This should only matter to you if you are using storages directly.  To access UntypedStorage "
    "directly, use tensor.untyped_storage() instead of tensor.storage()")


def _root(array):
    """The outermost array whose memory ``array`` views (through numpy's ``base`` chain, stride tricks' dummy
    holders included, or CuPy's)."""
    kind = type(array) if _device.is_cuda_array(array) else np.ndarray
    while True:
        base = getattr(array, "base", None)
        if not isinstance(base, kind):
            base = getattr(base, "base", None)  # as_strided's DummyArray holds the array it views
        if not isinstance(base, kind):
            return array
        array = base


def _flat_bytes(array):
    """A 1-d uint8 view of all of ``array``'s memory (a copy only for a root that is not contiguous)."""
    return array.ravel(order="K").view(np.uint8) if array.ndim else array.reshape(1).view(np.uint8)


def _address(array):
    return array.data.ptr if _device.is_cuda_array(array) else array.__array_interface__["data"][0]


def _to_device(array, device):
    return array if device is None else _device.move(array, device)


class UntypedStorage(StorageQueries):
    """Bytes: ``UntypedStorage(nbytes)`` (zeros), ``UntypedStorage(byte values)``, or a tensor's
    (``tensor.untyped_storage()``)."""

    def __init__(self, *args, device=None):
        if len(args) > 1:
            raise TypeError(f"UntypedStorage takes a size or a sequence of byte values, got {len(args)} arguments")
        arg = args[0] if args else 0
        if isinstance(arg, (int, np.integer)):
            data = np.zeros(int(arg), np.uint8)
        elif isinstance(arg, (bytes, bytearray)):
            data = np.frombuffer(arg, np.uint8).copy()
        elif isinstance(arg, (list, tuple)):  # byte values, wrapped into 0..255 as torch stores them
            data = np.asarray(arg, np.int64).astype(np.uint8)
        else:
            raise RuntimeError(f"{__package__}.UntypedStorage(): Expected a sequence type, but got "
                               f"{type(arg).__name__}")
        self._bytes = _to_device(data.reshape(-1), device)

    @classmethod
    def _wrap(cls, flat):
        storage = cls.__new__(cls)
        storage._bytes = flat
        return storage

    @classmethod
    def from_buffer(cls, buffer, byte_order=_NO_ORDER, count=-1, offset=0, *, dtype=None):
        """The bytes of ``count`` elements of ``dtype`` read from ``buffer`` (from byte ``offset``) in
        ``byte_order`` ('little', 'big' or 'native'), put in this machine's byte order: a copy."""
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        return cls._wrap(buffer_values(buffer, byte_order, count, offset, _dtype.to_dtype(dtype)).view(np.uint8))

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """The bytes of ``filename`` mapped in memory (``shared``: writes reach the file)."""
        return cls._wrap(_map_file(filename, shared, nbytes, np.dtype(np.uint8)))

    # ---- size and place ---------------------------------------------------------------------------------
    def nbytes(self):
        return int(self._bytes.size)

    def size(self):
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    def data_ptr(self):
        return _address(self._bytes)

    @property
    def device(self):
        return _device.device_of(self._bytes)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def type(self):
        return f"{__package__}.storage.UntypedStorage"

    def untyped(self):
        return self

    def _elements(self):
        return self._bytes

    # ---- values ---------------------------------------------------------------------------------------------
    def tolist(self):
        return _device.move(self._bytes, "cpu").tolist()

    def __getitem__(self, index):
        if isinstance(index, slice):
            if index.step not in (None, 1):
                raise RuntimeError(f"Trying to slice with a step of {index.step}, but only a step of 1 is supported")
            return UntypedStorage._wrap(self._bytes[index])
        return int(self._bytes[_checked_index(index, self.nbytes())])

    def __setitem__(self, index, value):
        self._bytes[index if isinstance(index, slice) else _checked_index(index, self.nbytes())] = value

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        self._bytes[...] = value
        return self

    def copy_(self, source, non_blocking=False):
        """Copy ``source``'s bytes in (same size; across devices too)."""
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was "
                               f"{source.nbytes()} bytes")
        self._bytes[...] = _device.move(source.untyped()._bytes, self.device, non_blocking)
        return self

    def clone(self):
        return UntypedStorage._wrap(self._bytes.copy())

    def to(self, device, non_blocking=False):
        moved = _device.move(self._bytes, device, non_blocking)
        return self if moved is self._bytes else UntypedStorage._wrap(moved)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to(_device.device("cuda", device) if isinstance(device, int) else device or "cuda", non_blocking)

    def __repr__(self):
        values = "".join(f" {v}\n" for v in self.tolist())
        return f"{values}[{__package__}.storage.UntypedStorage(device={self.device}) of size {self.nbytes()}]"


def _checked_index(index, size):
    if not -size <= index < size:
        raise IndexError(f"index {index} out of range for storage of size {size}")
    return index % size


class TypedStorage(StorageQueries):
    """Elements of one dtype over an ``UntypedStorage`` (deprecated in torch, with its warning):
    ``TypedStorage(size, dtype=...)``, ``TypedStorage(values)``, or ``tensor.storage()``."""

    _fixed_dtype = None  # the legacy classes' (``FloatStorage``) own dtype

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        if not _internal:
            warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=2)
        self._dtype = _dtype.to_dtype(dtype or self._fixed_dtype or _dtype.get_default_dtype())
        if wrap_storage is not None:
            self._untyped_storage = wrap_storage
            return
        arg = args[0] if args else 0
        if isinstance(arg, (int, np.integer)):
            values = np.zeros(int(arg), self._dtype.np)
        else:
            from .ops.python_data import _python_data  # torch.tensor's checks (a value past the dtype's range)
            values = _python_data(arg, self._dtype, None).reshape(-1)
        self._untyped_storage = UntypedStorage._wrap(_to_device(values.view(np.uint8), device))

    @classmethod
    def from_buffer(cls, buffer, byte_order=_NO_ORDER, count=-1, offset=0, *, dtype=None):
        """``count`` elements of ``dtype`` (the class's own, or the default float type) read from ``buffer``
        (from byte ``offset``) in ``byte_order``: a copy in this machine's byte order."""
        d = _dtype.to_dtype(cls._fixed_dtype or dtype or _dtype.get_default_dtype())
        values = buffer_values(buffer, byte_order, count, offset, d)
        return cls(wrap_storage=UntypedStorage._wrap(values.view(np.uint8)), dtype=d, _internal=True)

    @classmethod
    def from_file(cls, filename, shared=False, size=0, dtype=None):
        """``size`` elements of ``filename`` mapped in memory (``shared``: writes reach the file)."""
        d = _dtype.to_dtype(dtype or cls._fixed_dtype or _dtype.get_default_dtype())
        flat = _map_file(filename, shared, size * d.itemsize, np.dtype(np.uint8))
        return cls(wrap_storage=UntypedStorage._wrap(flat), dtype=d, _internal=True)

    def _elements(self):
        return self._array()

    def _array(self):
        """The elements as a 1-d array over the bytes (whole elements only)."""
        flat = self._untyped_storage._bytes
        return flat[:self.size() * self._dtype.itemsize].view(self._dtype.np)

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        return self._untyped_storage.is_cuda

    def untyped(self):
        return self._untyped_storage

    def size(self):
        return self._untyped_storage.nbytes() // self._dtype.itemsize

    def __len__(self):
        return self.size()

    def nbytes(self):
        return self._untyped_storage.nbytes()

    def element_size(self):
        return self._dtype.itemsize

    def data_ptr(self):
        return self._untyped_storage.data_ptr()

    def type(self):
        """The legacy storage class's name (``'engine.FloatStorage'``); torch has none for uint16, uint32 and
        uint64: ``'engine.storage.TypedStorage'``."""
        if self._dtype not in LEGACY_STORAGES:
            return f"{__package__}.storage.TypedStorage"
        return f"{__package__}.{self._dtype.title}Storage"

    def tolist(self):
        return _device.move(self._array(), "cpu").tolist()

    def __getitem__(self, index):
        if isinstance(index, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._array()[_checked_index(index, self.size())].item()

    def __setitem__(self, index, value):
        self._array()[index if isinstance(index, slice) else _checked_index(index, self.size())] = value

    def __iter__(self):
        return iter(self.tolist())

    def fill_(self, value):
        self._array()[...] = value
        return self

    def copy_(self, source, non_blocking=False):
        self._untyped_storage.copy_(source.untyped(), non_blocking)
        return self

    def clone(self):
        return TypedStorage(wrap_storage=self._untyped_storage.clone(), dtype=self._dtype, _internal=True)

    def to(self, device, non_blocking=False):
        moved = self._untyped_storage.to(device, non_blocking)
        return self if moved is self._untyped_storage else TypedStorage(wrap_storage=moved, dtype=self._dtype,
                                                                        _internal=True)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        moved = self._untyped_storage.cuda(device, non_blocking)
        return TypedStorage(wrap_storage=moved, dtype=self._dtype, _internal=True)

    def __repr__(self):
        values = "".join(f" {v}\n" for v in self.tolist())
        return (f"{values}[{__package__}.storage.TypedStorage(dtype={__package__}.{self._dtype.name}, "
                f"device={self.device}) of size {self.size()}]")


class _LegacyStorageType(type):
    """``isinstance(s, FloatStorage)`` holds for any TypedStorage of float32, as in torch."""

    def __instancecheck__(cls, instance):
        if cls._fixed_dtype is None:
            return type.__instancecheck__(cls, instance)
        return isinstance(instance, TypedStorage) and instance.dtype is cls._fixed_dtype


def _legacy_class(d):
    return _LegacyStorageType(f"{d.title}Storage", (TypedStorage,), {"_fixed_dtype": d, "__module__": __package__})


LEGACY_STORAGES = {d: _legacy_class(d) for d in _dtype.ALL if not d.name.startswith("uint") or d.name == "uint8"}
globals().update({cls.__name__: cls for cls in LEGACY_STORAGES.values()})


def is_storage(obj):
    """Whether ``obj`` is a storage (untyped or typed)."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


# ---- files ------------------------------------------------------------------------------------------------
def _map_file(filename, shared, nbytes, dtype):
    """``nbytes`` of ``filename`` mapped in memory as a plain array: shared (read-write, the file extended with
    zeros when shorter, created when missing) or private (copy-on-write: writes never reach the file)."""
    filename = os.fspath(filename)
    if shared:
        with open(filename, "ab") as f:  # creates a missing file; never truncates
            if f.tell() < nbytes:
                f.truncate(nbytes)
    elif not os.path.exists(filename):
        raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such file or directory (2)")
    elif os.path.getsize(filename) < nbytes:
        raise RuntimeError(f"file <{filename}> size <{os.path.getsize(filename)}> is smaller than the required "
                           f"mapping size <{nbytes}>")
    if nbytes == 0:
        return np.zeros(0, dtype)
    mapped = np.memmap(filename, np.uint8, "r+" if shared else "c", shape=(nbytes,))
    return mapped.view(np.ndarray).view(dtype)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    """A 1-d tensor of ``size`` elements read from the raw file ``filename`` by a memory map: with ``shared``
    writes to the tensor reach the file (extended when shorter), else they stay private copies."""
    d = _dtype.to_dtype(dtype or _dtype.get_default_dtype())
    array = _map_file(filename, bool(shared), size * d.itemsize, np.dtype(np.uint8)).view(d.np)
    return _new(_to_device(array, device), requires_grad)


# ---- tensor methods -----------------------------------------------------------------------------------------
def untyped_storage(self):
    """The bytes of the whole allocation this tensor views."""
    return UntypedStorage._wrap(_flat_bytes(_root(self._data)))


def storage(self):
    """This tensor's storage as a ``TypedStorage`` of its dtype (deprecated, as torch's)."""
    warnings.warn(_TYPED_STORAGE_WARNING, UserWarning, stacklevel=2)
    return TypedStorage(wrap_storage=untyped_storage(self), dtype=self.dtype, _internal=True)


def storage_type(self):
    """The legacy storage class of this tensor's dtype (``FloatStorage`` for float32; torch has none for uint16,
    uint32 and uint64: ``TypedStorage``)."""
    return LEGACY_STORAGES.get(self.dtype, TypedStorage)


def _view_bytes(flat, dtype, offset, size, stride):
    """An array of ``dtype`` over the uint8 array ``flat``: ``size`` and ``stride`` in elements, from element
    ``offset``; bounds-checked as torch's ``setStorage``."""
    itemsize = dtype.itemsize
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(n < 0 for n in size):
        raise RuntimeError("numel: integer multiplication overflow")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed * itemsize > flat.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of bounds "
                           f"for storage of size {flat.size}")
    byte_strides = tuple(s * itemsize for s in stride)
    if _device.is_cuda_array(flat):
        start = offset * itemsize
        whole = flat[start:start + (flat.size - start) // itemsize * itemsize].view(dtype)
        return _device.array_module(flat).lib.stride_tricks.as_strided(whole, tuple(size), byte_strides)
    if flat.size == 0:
        return np.zeros(tuple(size), dtype)
    return np.ndarray(tuple(size), dtype, buffer=flat, offset=offset * itemsize, strides=byte_strides)


def storage_layout(array):
    """``array`` as (its root, the element offset of its first element there, its strides in elements), or None
    where it is no regular view of a dense root (negative or misaligned strides)."""
    root = _root(array)
    itemsize = array.itemsize
    offset = _address(array) - _address(root)
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or offset < 0 or offset % itemsize or \
            any(s < 0 or s % itemsize for s in array.strides):
        return None
    return root, offset // itemsize, tuple(s // itemsize for s in array.strides)


def view_of(root, offset, stride, dtype, shape):
    """The array of ``dtype`` and ``shape`` at element ``offset`` with ``stride`` in ``root``'s memory."""
    return _view_bytes(_flat_bytes(root), np.dtype(dtype), offset, shape, stride)


def deepcopy_array(array, memo):
    """A copy of ``array`` for ``copy.deepcopy``: a view of a copy of its root, that copy made once per ``memo``
    and root memory (so views deep-copied together keep sharing memory, as torch's storages do)."""
    layout = storage_layout(array)
    if layout is None:
        return array.copy()
    root, offset, stride = layout
    key = ("engine.storage", _device.is_cuda_array(root), _address(root), root.nbytes)  # wrappers may differ
    if key not in memo:
        memo[key] = root.copy(order="K")
        memo.setdefault(id(memo), []).append(root)  # keeps the address from being reused
    return view_of(memo[key], offset, stride, array.dtype, array.shape)


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make this tensor view other memory: nothing (an empty tensor), ``source``'s (a tensor: its geometry too),
    or a storage's, from element ``storage_offset`` with ``size`` and ``stride`` (default: all of it, 1-d)."""
    if grad_mode._State.enabled and self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    dtype = self._data.dtype
    xp = _device.array_module(self._data)
    if source is None:
        data = xp.zeros(0, dtype)
    elif isinstance(source, Tensor):
        if source._data.dtype != dtype:
            raise RuntimeError(f"Could not set tensor of type {_dtype.cpp_name(source.dtype)} to a tensor of type "
                               f"{_dtype.cpp_name(self.dtype)}")
        data = source._data.view()
    elif is_storage(source):
        if isinstance(source, TypedStorage) and source.dtype.np != dtype:
            raise RuntimeError(f"Expected a Storage of type {self.dtype} but got type {source.dtype} for argument "
                               f"1 'storage'")
        flat = source.untyped()._bytes
        size = (flat.size // dtype.itemsize,) if size is None else tuple(size)
        stride = contiguous_strides(size) if stride is None else tuple(stride)
        data = _view_bytes(flat, dtype, storage_offset, size, stride)
    else:
        raise TypeError(f"set_(): expected a Tensor or a storage, got {type(source).__name__}")
    self._data, self._base = data, None
    self._version_counter[0] += 1
    return self


def is_set_to(self, tensor):
    """Whether both tensors view the same memory in the same geometry (storage, offset, size and stride)."""
    a, b = self._data, tensor._data
    return (a.dtype == b.dtype and self.device == tensor.device and a.shape == b.shape and a.strides == b.strides
            and _address(a) == _address(b) and _address(_root(a)) == _address(_root(b)))


for _method in (untyped_storage, storage, storage_type, set_, is_set_to):
    register_method(_method)

__all__ = ["UntypedStorage", "TypedStorage", "is_storage", "from_file"] + [
    cls.__name__ for cls in LEGACY_STORAGES.values()]
