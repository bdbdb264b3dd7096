"""A restricted unpickler for PyTorch checkpoints: it rebuilds tensors and containers, nothing else.

Only the globals a checkpoint pickle needs are resolved, each to a value or function of ours (never
to the real torch object). Any other global (``os.system``, ``builtins.eval``, a user class) raises
``CheckpointError`` naming it before anything is called, so a checkpoint cannot run code. Before
unpickling, the opcodes are scanned once: a memo index or a length field that a file of this size
cannot hold is refused there, because C ``pickle`` would first allocate what it names, and so is a
text string with an invalid escape (a warning, which ``-W error`` would turn into an exception).
"""
import _compat_pickle
import collections
import functools
import io
import pickle
import pickletools
import warnings

import numpy as np

from .. import _dtype
from .errors import CheckpointError

__all__ = ["RestrictedUnpickler", "StorageType", "Storage", "BFLOAT16", "to_native", "storage_numpy_dtype"]


BFLOAT16 = "bfloat16"  # bfloat16 storages are read as uint16: bfloat16 tensors, or float32 without ml_dtypes

# torch's dtypes by name: engine's own where engine has them, numpy's for the few it lacks
_TORCH_DTYPES = {d.name: d for d in _dtype.ALL + _dtype.QUANTIZED}
_TORCH_DTYPES.update({"bfloat16": BFLOAT16, "uint16": np.dtype(np.uint16), "uint32": np.dtype(np.uint32),
                      "uint64": np.dtype(np.uint64)})
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool", "UntypedStorage": "uint8",
    "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
    "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
}
_MEMO_OPCODES = {"PUT", "BINPUT", "LONG_BINPUT"}


class StorageType:
    """What a pickled ``torch.FloatStorage`` (etc.) stands for: the element type of a storage."""

    def __init__(self, name, dtype):
        self.name = name
        self.dtype = dtype

    def __repr__(self):
        return f"StorageType({self.name})"


class Storage:
    """A storage read from a checkpoint: a flat array of its elements (uint8 when untyped)."""

    def __init__(self, array, dtype, location="cpu"):
        self.array = array
        self.dtype = dtype
        self.location = location  # the device it was saved from ('cpu', 'cuda:0'), which map_location may read


def storage_numpy_dtype(dtype):
    """The numpy dtype elements of torch dtype ``dtype`` are stored as (bfloat16 as raw uint16)."""
    if dtype is BFLOAT16:
        return np.dtype(np.uint16)
    if isinstance(dtype, _dtype.dtype):
        return dtype.np
    if isinstance(dtype, np.dtype):
        return dtype
    raise CheckpointError(f"a tensor's dtype is {dtype!r:.80}, not a dtype")


def to_native(array, dtype):
    """``array`` as an engine-compatible array: bfloat16 bits viewed as engine.bfloat16 (as torch.load gives),
    or widened to float32 (exactly) where ml_dtypes, which engine's bfloat16 needs, is not installed."""
    if dtype is BFLOAT16:
        if _dtype.bfloat16.np is not None:
            return array.view(_dtype.bfloat16.np)
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _integers(values, what):
    """``values`` as a tuple of ints; anything else in a tensor's geometry means a corrupt pickle."""
    if not isinstance(values, tuple) or not all(type(v) is int for v in values):
        raise CheckpointError(f"invalid tensor {what} {values!r:.80}: expected a tuple of integers")
    return values


def _strided_view(storage, storage_offset, size, stride, dtype, place):
    """The tensor ``(size, stride)`` at ``storage_offset`` of ``storage``, bounds-checked, as a view."""
    if storage is None:  # scan pass of the legacy reader: shapes only
        return None
    if not isinstance(storage, Storage):
        raise CheckpointError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
    dtype = storage.dtype if dtype is None else dtype
    flat = storage.array
    if storage.dtype is not dtype:  # v3 tensors carry their dtype; the storage is untyped bytes
        if storage.array.nbytes % storage_numpy_dtype(dtype).itemsize:
            raise CheckpointError(f"a storage of {storage.array.nbytes} bytes cannot hold {dtype} elements")
        flat = flat.view(storage_numpy_dtype(dtype))
    size, stride = _integers(tuple(size), "size"), _integers(tuple(stride), "stride")
    if type(storage_offset) is not int:
        raise CheckpointError(f"invalid tensor storage offset {storage_offset!r:.80}")
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise CheckpointError(f"invalid tensor geometry: size {size}, stride {stride}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if storage_offset < 0 or storage_offset + extent > flat.size:
        raise CheckpointError(f"tensor of size {size} and stride {stride} at offset {storage_offset} "
                              f"does not fit in a storage of {flat.size} elements")
    base = flat[storage_offset:]
    if 0 in size:
        array = np.empty(size, dtype=base.dtype)
    else:
        array = np.lib.stride_tricks.as_strided(
            base, shape=size, strides=tuple(s * base.itemsize for s in stride), writeable=base.flags.writeable)
    return _wrap(to_native(array, dtype), place, storage.location)


def _wrap(array, place, location):
    """An engine tensor sharing ``array``, put on its device by ``place(tensor, location)`` (``location``: the
    device its storage was saved from); dtypes engine lacks are refused."""
    from ..tensor import _new

    try:
        _dtype.from_numpy_dtype(array.dtype)
    except TypeError as e:
        raise CheckpointError(f"checkpoint holds a tensor of dtype {array.dtype}, which engine does not support") from e
    tensor = _new(array)
    return tensor if place is None else place(tensor, location)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None, *,
                       place=None):
    """``torch._utils._rebuild_tensor_v2``: a tensor over a storage (hooks and metadata are dropped)."""
    return _strided_view(storage, storage_offset, size, stride, None, place)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None, *, place=None):
    """``torch._utils._rebuild_tensor_v3``: like v2, with the dtype given explicitly."""
    return _strided_view(storage, storage_offset, size, stride, dtype, place)


def _rebuild_tensor(storage, storage_offset, size, stride, *, place=None):
    """``torch._utils._rebuild_tensor`` (checkpoints from torch < 1.0)."""
    return _strided_view(storage, storage_offset, size, stride, None, place)


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks, *,
                     place=None):
    """``torch._utils._rebuild_qtensor``: an ``engine.QuantizedTensor`` (per-tensor or per-channel affine)."""
    from .. import quantized_tensor as qt

    if not isinstance(quantizer_params, tuple) or not quantizer_params:
        raise CheckpointError(f"invalid quantizer parameters {quantizer_params!r:.80}")
    scheme = quantizer_params[0]
    if storage is None:
        return None
    dtype = storage.dtype
    if dtype not in _dtype.QUANTIZED:
        raise CheckpointError(f"a quantized tensor's storage holds {dtype}, not a quantized type")
    data = np.array(_strided_view(storage, storage_offset, size, stride, None, None)._data)
    if scheme is qt.per_tensor_affine and len(quantizer_params) == 3:
        scale, zero_point = quantizer_params[1:]
        if isinstance(scale, (int, float)) and type(zero_point) is int:
            return qt.QuantizedTensor(data, dtype, float(scale), zero_point)
    elif scheme is qt.per_channel_affine and len(quantizer_params) == 4:
        scales, zero_points, axis = quantizer_params[1:]
        channels = data.shape[axis] if type(axis) is int and -data.ndim <= axis < data.ndim else None
        if channels is not None and all(getattr(t, "shape", None) == (channels,) for t in (scales, zero_points)):
            return qt.QuantizedTensor(data, dtype, scales=np.asarray(scales._data, np.float64),
                                      zero_points=np.asarray(zero_points._data, np.int64), axis=axis % data.ndim)
    else:
        raise CheckpointError(f"quantized tensors of scheme {scheme!r:.60} are not supported (per_tensor_affine and "
                              f"per_channel_affine are)")
    raise CheckpointError(f"invalid quantizer parameters {quantizer_params!r:.120} for a tensor of size {size}")


def _rebuild_parameter(data, requires_grad, backward_hooks):
    """``torch._utils._rebuild_parameter``: an ``engine.nn.Parameter``."""
    if data is None:
        return None
    from ..nn.parameter import Parameter
    from ..tensor import Tensor

    if not isinstance(data, Tensor):
        raise CheckpointError(f"a parameter's data is a {type(data).__name__}, not a tensor")
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_sparse_tensor(layout, data):
    """``torch._utils._rebuild_sparse_tensor``: a sparse COO, CSR, CSC, BSR or BSC tensor from its index and value
    tensors."""
    from .. import _layout
    from ..sparse.serialization import rebuild_sparse_tensor
    from ..tensor import Tensor

    compressed = (_layout.sparse_csr, _layout.sparse_csc, _layout.sparse_bsr, _layout.sparse_bsc)
    arrays = 2 if layout is _layout.sparse_coo else 3 if layout in compressed else 0
    if not arrays or not isinstance(data, tuple) or len(data) != 4 or not all(isinstance(t, Tensor)
                                                                               for t in data[:arrays]):
        raise CheckpointError(f"invalid sparse tensor parts for layout {layout!r:.40}")
    return rebuild_sparse_tensor(layout, data)


def _torch_layout(name):
    """``torch.serialization._get_layout('torch.sparse_coo')``: the engine's layout of that name."""
    from .. import _layout

    layout = getattr(_layout, name[len("torch."):], None) if isinstance(name, str) and name.startswith("torch.") \
        else None
    if not isinstance(layout, _layout.layout):
        raise CheckpointError(f"unknown layout {name!r:.40}")
    return layout


def _torch_size(dims=()):
    """``torch.Size``: an ``engine.Size``."""
    from ..tensor import Size

    return Size(_integers(tuple(dims), "size"))


def _torch_device(kind, index=None):
    """``torch.device``: an ``engine.device``."""
    from .._device import device

    if not isinstance(kind, str) or not (index is None or type(index) is int):
        raise CheckpointError(f"invalid device ({kind!r:.40}, {index!r:.40})")
    try:
        return device(kind, index)
    except (RuntimeError, ValueError) as e:
        raise CheckpointError(f"invalid device {kind!r:.40}: {e}") from e


_TENSOR_BUILDERS = {  # each gets the loader's ``place``
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_qtensor"): _rebuild_qtensor,
}


def _encode(text, encoding="utf-8"):
    """``_codecs.encode`` as protocol 2 pickles bytes (a latin-1 string): text to bytes, nothing else."""
    if not isinstance(text, str) or encoding != "latin1":
        raise CheckpointError(f"unsupported bytes encoding {encoding!r:.40} of a {type(text).__name__}")
    return text.encode("latin1")


def _allowlist():
    """(module, name) -> the object of ours that stands in for it (tensor builders apart)."""
    allowed = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "set"): set,  # constructors of plain values, as torch's weights-only unpickler allows
        ("builtins", "complex"): complex,
        ("_codecs", "encode"): _encode,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
        ("torch", "Size"): _torch_size,
        ("torch", "device"): _torch_device,
    }
    for name, dtype_name in _STORAGE_DTYPES.items():
        for module in ("torch", "torch.storage"):
            allowed[(module, name)] = StorageType(name, _TORCH_DTYPES[dtype_name])
    for name, dtype in _TORCH_DTYPES.items():
        allowed[("torch", name)] = dtype
    allowed[("torch.serialization", "_get_layout")] = _torch_layout
    from ..quantized_tensor import QSCHEMES

    for name, scheme in QSCHEMES.items():
        allowed[("torch", name)] = scheme
    return allowed


_ALLOWED = _allowlist()


def check_opcodes(file):
    """Scan the pickle at ``file``'s position up to its STOP (then return there): refuse what C pickle
    would allocate blindly (a memo index past anything the pickle could have stored, a length or a
    frame past the end of the file)."""
    start = file.tell()
    end = file.seek(0, io.SEEK_END)
    file.seek(start)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # an invalid escape in a text-mode string
            for opcode, argument, position in pickletools.genops(file):
                if opcode.name in _MEMO_OPCODES and argument > position - start:
                    raise CheckpointError(f"corrupt pickle: memo index {argument} at byte {position}")
                if opcode.name == "FRAME" and argument > end - position:
                    raise CheckpointError(f"corrupt pickle: a frame of {argument} bytes at byte {position}")
    except (ValueError, DeprecationWarning) as e:  # pickletools' message for a bad length, opcode or string
        raise CheckpointError(f"corrupt pickle: {e}") from e
    except MemoryError:  # a buffered file allocates the length a corrupt count field names before reading
        raise CheckpointError("corrupt pickle: a length field names more bytes than memory holds") from None
    file.seek(start)


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickles a checkpoint; ``load_storage(storage_type, key, location, numel, ...)`` supplies storages.

    With ``load_storage=None`` every storage is None and tensors come back as None (a scan pass that
    only finds where the pickle ends). ``place(tensor, location)`` puts each tensor on its device (None: the CPU).
    """

    def __init__(self, file, load_storage=None, place=None):
        super().__init__(file)
        self._file = file
        self._load_storage = load_storage
        self._place = place

    def load(self):
        check_opcodes(self._file)
        return super().load()

    def find_class(self, module, name):
        # protocol 2 pickles use Python 2 names (__builtin__.eval): check and report Python 3's
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) in _TENSOR_BUILDERS:
            return functools.partial(_TENSOR_BUILDERS[(module, name)], place=self._place)
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise CheckpointError(
                f"refusing to load the global '{module}.{name}': only tensors, storages and plain containers "
                "are allowed (nothing in a checkpoint may run code)") from None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                and isinstance(pid[1], StorageType)):
            raise CheckpointError(f"unsupported persistent id {pid!r:.200}")
        if self._load_storage is None:
            return None
        storage = self._load_storage(*pid[1:])
        if isinstance(storage, Storage) and isinstance(pid[3], str):
            storage.location = pid[3]
        return storage
