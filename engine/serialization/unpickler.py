"""A restricted unpickler for PyTorch checkpoints: it rebuilds tensors and containers, nothing else.

Only the globals a checkpoint pickle needs are resolved, each to a value or function of ours (never
to the real torch object). Any other global (``os.system``, ``builtins.eval``, a user class) raises
``CheckpointError`` naming it before anything is called, so a checkpoint cannot run code, unless the
user allowed it with ``add_safe_globals``. BUILD may only set an OrderedDict's attributes (or the state
of a class the user allowed). Before unpickling, the opcodes are scanned once: a memo index or a
length field that a file of this size cannot hold is refused there, because ``pickle`` would first
allocate what it names, and so is a text string with an invalid escape (a warning, which ``-W error``
would turn into an exception).
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
from . import safe_globals as sg
from . import tensor_state as ts
from .errors import CheckpointError

__all__ = ["RestrictedUnpickler", "StorageType", "Storage", "BFLOAT16", "to_native", "typed_root",
           "storage_numpy_dtype"]


BFLOAT16 = _dtype.bfloat16  # its storages are read as uint16: bfloat16 tensors, or float32 without ml_dtypes

_TORCH_DTYPES = {d.name: d for d in _dtype.ALL + _dtype.QUANTIZED}  # torch's dtypes by name: engine's own
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
        self._typed = {}

    def typed(self, dtype):
        """The storage as elements of torch dtype ``dtype`` (``typed_root``), made once per dtype so that the
        tensors viewing it share one array."""
        if dtype not in self._typed:
            self._typed[dtype] = typed_root(self.array, dtype)
        return self._typed[dtype]


def storage_numpy_dtype(dtype):
    """The numpy dtype elements of torch dtype ``dtype`` are stored as (bfloat16 as raw uint16)."""
    if dtype is BFLOAT16:  # before .np, which needs ml_dtypes
        return np.dtype(np.uint16)
    if isinstance(dtype, _dtype.dtype):
        return dtype.np
    if isinstance(dtype, ts.UnsupportedDtype):
        raise CheckpointError(f"the checkpoint holds a tensor of dtype {dtype}, which engine does not support")
    raise CheckpointError(f"a tensor's dtype is {dtype!r:.80}, not a dtype")


def typed_root(raw, dtype):
    """The bytes of the 1-d contiguous array ``raw`` as engine-native elements of torch dtype ``dtype``, in an
    array of its own (no array base, the same memory): engine counts a tensor's storage offset, and
    ``as_strided`` reads, from the first array of its chain of bases, which must then be this storage, in the
    tensor's dtype, as in torch. bfloat16 without ml_dtypes is widened to float32, a copy."""
    stored = storage_numpy_dtype(dtype)
    if raw.nbytes % stored.itemsize:
        raise CheckpointError(f"a storage of {raw.nbytes} bytes cannot hold {dtype} elements")
    if dtype is BFLOAT16 and _dtype.bfloat16.np is None:
        return to_native(np.frombuffer(memoryview(raw), dtype=stored), dtype)
    return np.frombuffer(memoryview(raw), dtype=_dtype.bfloat16.np if dtype is BFLOAT16 else stored)


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


def _strided_view(storage, storage_offset, size, stride, dtype, place, metadata=None):
    """The tensor ``(size, stride)`` at ``storage_offset`` of ``storage``, bounds-checked, as a view (a copy
    where ``metadata`` sets torch's lazy conjugate or negative bit)."""
    if storage is None:  # scan pass of the legacy reader: shapes only
        return None
    if not isinstance(storage, Storage):
        raise CheckpointError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
    flat = storage.typed(storage.dtype if dtype is None else dtype)  # v3 tensors name theirs; the storage is bytes
    size, stride = _integers(tuple(size), "size"), _integers(tuple(stride), "stride")
    if type(storage_offset) is not int:
        raise CheckpointError(f"invalid tensor storage offset {storage_offset!r:.80}")
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise CheckpointError(f"invalid tensor geometry: size {size}, stride {stride}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if storage_offset < 0 or storage_offset + extent > flat.size:
        raise CheckpointError(f"tensor of size {size} and stride {stride} at offset {storage_offset} "
                              f"does not fit in a storage of {flat.size} elements")
    # np.ndarray over flat keeps flat as the view's base (as_strided would hide it behind a wrapper)
    array = np.ndarray(size, flat.dtype, buffer=flat, offset=storage_offset * flat.itemsize,
                       strides=tuple(s * flat.itemsize for s in stride))
    return _wrap(_resolve_bits(array, metadata), place, storage.location)


def _resolve_bits(array, metadata):
    """``array`` as the tensor it stands for once torch's lazy bits in ``metadata`` (``{'conj': True}``,
    ``{'neg': True}``: the stored elements are to be conjugated, negated) are applied, as engine has no such bits."""
    if metadata is None:
        return array
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
        raise CheckpointError(f"unsupported tensor metadata {metadata!r:.80}")
    if metadata.get("neg"):
        array = np.negative(array)
    if metadata.get("conj"):
        if array.dtype.kind != "c":
            raise CheckpointError(f"a tensor of dtype {array.dtype} is marked conjugate")
        array = np.conj(array)
    return array


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


def _requiring_grad(tensor, requires_grad):
    """``tensor`` with the ``requires_grad`` flag it was saved with (None, in a scan pass, stays None)."""
    if tensor is None or not requires_grad:
        return tensor
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise CheckpointError(f"a tensor of dtype {tensor.dtype} is marked requires_grad, which only floating "
                              "point and complex tensors can be")
    return tensor.requires_grad_(True)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None, *,
                       place=None):
    """``torch._utils._rebuild_tensor_v2``: a tensor over a storage (backward hooks are dropped)."""
    return _requiring_grad(_strided_view(storage, storage_offset, size, stride, None, place, metadata),
                           requires_grad)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                       metadata=None, *, place=None):
    """``torch._utils._rebuild_tensor_v3``: like v2, with the dtype given explicitly."""
    return _requiring_grad(_strided_view(storage, storage_offset, size, stride, dtype, place, metadata),
                           requires_grad)


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
    if arrays and isinstance(data, tuple) and len(data) == 4 and all(t is None for t in data[:arrays]):
        return None  # scan pass of the legacy reader: its parts are tensors without storages
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
        ("collections", "Counter"): ts.make_counter,
        ("builtins", "bytearray"): ts.make_bytearray,
        ("torch", "Tensor"): ts.TENSOR,
        ("torch.nn.parameter", "Parameter"): ts.PARAMETER,
        ("torch._tensor", "_rebuild_from_type_v2"): ts.rebuild_from_type_v2,
        ("torch._utils", "_rebuild_parameter_with_state"): ts.rebuild_parameter_with_state,
        ("torch._utils", "_rebuild_meta_tensor_no_storage"): ts.refuse("a meta tensor (a tensor without data)"),
        ("torch._utils", "_rebuild_nested_tensor"): ts.refuse("a nested tensor"),
        ("torch._utils", "_rebuild_wrapper_subclass"): ts.refuse("a tensor subclass"),
    }
    allowed.update({("torch", name): ts.UnsupportedDtype(name) for name in ts.UNSUPPORTED_DTYPES})
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


def allowed_names():
    """``module.name`` of every global a checkpoint may name without ``add_safe_globals``."""
    return {f"{module}.{name}" for module, name in (*_ALLOWED, *_TENSOR_BUILDERS)}


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


def _load_build(unpickler):
    """The BUILD opcode, which sets an object's state: only an OrderedDict's attributes (a state_dict's
    ``_metadata``) may be set, and the state of an instance of a class ``add_safe_globals`` allowed, as torch's
    weights-only unpickler allows. Anything else would let a checkpoint change objects shared beyond it
    (``engine.float32``, the allowlist's storage types, module functions)."""
    if sg.is_user_type(unpickler.stack[-2]):  # a class the user allowed: its own way of taking its state
        return pickle._Unpickler.load_build(unpickler)
    state = unpickler.stack.pop()
    target = unpickler.stack[-1]
    if type(target) is not collections.OrderedDict or not isinstance(state, dict) \
            or not all(type(key) is str for key in state):
        raise CheckpointError(f"refusing to set the state of a {type(target).__name__} to a "
                              f"{type(state).__name__}: only an OrderedDict's attributes may be set")
    target.__dict__.update(state)


class RestrictedUnpickler(pickle._Unpickler):
    """Unpickles a checkpoint; ``load_storage(storage_type, key, location, numel, ...)`` supplies storages.

    With ``load_storage=None`` every storage is None and tensors come back as None (a scan pass that
    only finds where the pickle ends). ``place(tensor, location)`` puts each tensor on its device (None: the CPU).
    ``text`` is the (encoding, errors) Python 2 strings are decoded with (torch.load's default: UTF-8).
    It is Python's own unpickler (the C one cannot be told how to BUILD), which reads the few thousand opcodes of
    a checkpoint's pickle about as fast.
    """

    dispatch = {**pickle._Unpickler.dispatch, pickle.BUILD[0]: _load_build}

    def __init__(self, file, load_storage=None, place=None, text=("utf-8", "strict")):
        super().__init__(file, encoding=text[0], errors=text[1])
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
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        trusted = sg.user_global(module, name)
        if trusted is None:
            raise CheckpointError(
                f"refusing to load the global '{module}.{name}': only tensors, storages and plain containers "
                "are allowed (nothing in a checkpoint may run code); engine.serialization.add_safe_globals"
                f"([{name}]) allows one you trust")
        return trusted

    def persistent_load(self, pid):
        if isinstance(pid, tuple):  # a Python 2 pickle read with encoding='bytes' gives its strings as bytes
            pid = tuple(part.decode("ascii") if isinstance(part, bytes) else part for part in pid)
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"
                and isinstance(pid[1], StorageType)):
            raise CheckpointError(f"unsupported persistent id {pid!r:.200}")
        if self._load_storage is None:
            return None
        storage = self._load_storage(*pid[1:])
        if isinstance(storage, Storage) and isinstance(pid[3], str):
            storage.location = pid[3]
        return storage
