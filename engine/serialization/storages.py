"""Which storage each saved tensor lives in: tensors that view the same memory share one storage.

PyTorch pickles a tensor as (storage, offset, size, stride) and writes each storage once. Engine
tensors are numpy arrays, so storages are found from memory: CPU arrays of one dtype whose byte
ranges overlap (a tensor and its transpose, slices of one buffer) become one storage covering the
union of their ranges, each tensor an offset and strides into it. Anything else (a GPU tensor, a
negative stride, an empty tensor) gets its own contiguous copy.
"""
from dataclasses import dataclass

import numpy as np

from .. import _dtype
from .._layout import contiguous_strides
from .._device import move

__all__ = ["StoragePlanner", "Placement", "storage_type_of", "UNTYPED"]

STORAGE_TYPES = {np.dtype(np.float64): "DoubleStorage", np.dtype(np.float32): "FloatStorage",
                 np.dtype(np.float16): "HalfStorage", np.dtype(np.int64): "LongStorage",
                 np.dtype(np.int32): "IntStorage", np.dtype(np.int16): "ShortStorage",
                 np.dtype(np.int8): "CharStorage", np.dtype(np.uint8): "ByteStorage",
                 np.dtype(np.bool_): "BoolStorage", np.dtype(np.complex64): "ComplexFloatStorage",
                 np.dtype(np.complex128): "ComplexDoubleStorage"}


# dtypes newer than typed storages: torch saves them in an UntypedStorage (counted in bytes) and names the
# dtype in _rebuild_tensor_v3
UNTYPED = "UntypedStorage"
_UNTYPED_DTYPES = (np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))


def storage_type_of(np_dtype):
    """torch's storage type name for arrays of a numpy dtype (native byte order), None for one it lacks."""
    bfloat16 = _dtype.BFLOAT16_NP  # None until bfloat16 is used: then no array holds it
    if bfloat16 is not None and np_dtype == bfloat16:
        return "BFloat16Storage"
    if np_dtype in _UNTYPED_DTYPES:
        return UNTYPED
    return STORAGE_TYPES.get(np_dtype)


QUANTIZED_STORAGE_TYPES = {"qint8": "QInt8Storage", "quint8": "QUInt8Storage", "qint32": "QInt32Storage"}


@dataclass(frozen=True)
class Placement:
    """Where a tensor's elements are: storage ``key`` of ``numel`` elements (bytes for an untyped storage), at
    ``offset`` with ``stride`` (in elements of ``dtype``, the torch dtype name an untyped storage holds)."""

    storage_type: str
    key: str
    location: str
    numel: int
    offset: int
    stride: tuple
    dtype: str = None


_PENDING = Placement("", "", "", 0, 0, ())


@dataclass
class _Source:
    """One tensor to save: its elements on the host, its device, and the storage found for it."""

    array: np.ndarray
    location: str
    storage_type: str = None  # a quantized tensor's (QInt8Storage ...); None: the array dtype's
    storage: int = -1
    offset: int = 0
    stride: tuple = ()


def _byte_span(array):
    """(first byte, one past the last byte) of a non-empty array with non-negative strides."""
    first = array.__array_interface__["data"][0]
    return first, first + sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + array.itemsize


def _can_share(source):
    """Whether ``source`` may be a strided view into a storage shared with others."""
    array = source.array
    return (source.location == "cpu" and array.size > 0 and source.storage_type is None
            and all(s >= 0 and s % array.itemsize == 0 for s in array.strides))


class StoragePlanner:
    """Collects the tensors of a checkpoint (``add``), then places them in storages (``locate``)."""

    def __init__(self):
        self._sources = {}
        self._storages = []

    def add(self, value):
        """Note tensor or numpy array ``value``; returns a placeholder (placements come after ``plan``)."""
        from ..tensor import Tensor

        if id(value) in self._sources:
            return _PENDING
        if getattr(value, "is_quantized", False):  # an engine.QuantizedTensor: its integers, in its own storage
            self._sources[id(value)] = _Source(value._data, "cpu", QUANTIZED_STORAGE_TYPES[value.dtype.name])
            return _PENDING
        if isinstance(value, Tensor):
            location = str(value.device)
            array = value._data if value.device.type == "cpu" else move(value._data, "cpu")
        else:
            location, array = "cpu", value
        if storage_type_of(array.dtype.newbyteorder("=")) is None:
            raise TypeError(f"engine.save cannot write an array of dtype {array.dtype}")
        self._sources[id(value)] = _Source(array, location)
        return _PENDING

    def plan(self):
        """Give every collected tensor its storage, offset and strides; storages are numbered in the
        order the pickle first mentions them, as torch numbers them."""
        run_of = {id(source): run for run in self._overlapping_runs() for source in run}
        for source in self._sources.values():
            if source.storage >= 0:
                continue
            if id(source) in run_of:
                self._share(run_of[id(source)])
            else:
                self._own(source)

    def _overlapping_runs(self):
        """Lists of shareable arrays of one dtype and alignment whose byte ranges overlap, transitively."""
        groups = {}
        for source in filter(_can_share, self._sources.values()):
            first, _ = _byte_span(source.array)
            groups.setdefault((source.array.dtype.str, first % source.array.itemsize), []).append(source)
        runs = []
        for members in groups.values():
            members.sort(key=lambda s: _byte_span(s.array))
            run, run_end = [], None
            for source in members:
                first, end = _byte_span(source.array)
                if run and first < run_end:
                    run.append(source)
                    run_end = max(run_end, end)
                else:
                    run, run_end = [source], end
                    runs.append(run)
        return runs

    def _share(self, run):
        """One storage spanning the overlapping arrays of ``run``, each placed inside it."""
        anchor = run[0].array
        itemsize = anchor.itemsize
        start = _byte_span(anchor)[0]
        end = max(_byte_span(s.array)[1] for s in run)
        flat = np.lib.stride_tricks.as_strided(anchor, shape=((end - start) // itemsize,), strides=(itemsize,),
                                               writeable=False)
        for source in run:
            source.storage = len(self._storages)
            source.offset = (_byte_span(source.array)[0] - start) // itemsize
            source.stride = tuple(s // itemsize for s in source.array.strides)
        self._storages.append(flat)

    def _own(self, source):
        """A contiguous storage of ``source``'s elements alone."""
        source.storage = len(self._storages)
        source.stride = contiguous_strides(source.array.shape)
        self._storages.append(np.ascontiguousarray(source.array).reshape(-1))

    def storages(self):
        """(key, flat array of the elements) of each storage, in key order."""
        return [(str(index), flat) for index, flat in enumerate(self._storages)]

    def locate(self, value):
        """The ``Placement`` of a tensor or array passed to ``add``."""
        source = self._sources[id(value)]
        flat = self._storages[source.storage]
        storage_type = source.storage_type or storage_type_of(flat.dtype.newbyteorder("="))
        if storage_type == UNTYPED:
            return Placement(storage_type, str(source.storage), source.location, flat.nbytes, source.offset,
                             source.stride, flat.dtype.name)
        return Placement(storage_type, str(source.storage), source.location, flat.size, source.offset, source.stride)
