"""The ``data.pkl`` of a PyTorch checkpoint: a protocol-2 pickle written opcode by opcode.

``pickle.Pickler`` would look each global up by importing it (``torch._utils._rebuild_tensor_v2``),
and engine never imports torch; so the few opcodes a checkpoint needs are written here, exactly the
ones torch's ``weights_only`` unpickler accepts: containers, numbers, strings, None, bools, and
through allowlisted globals tensors (``_rebuild_tensor_v2`` over a persistent storage id), quantized
tensors (``_rebuild_qtensor``), sparse tensors (``_rebuild_sparse_tensor``), parameters, ``torch.Size``,
``torch.device`` and dtypes. Tensors and containers are memoized, so an object saved twice loads as one
object, and a container may hold itself.
"""
import io
import struct
from collections import Counter, OrderedDict

import numpy as np

from .. import _dtype, _layout
from .._device import device

__all__ = ["checkpoint_pickle"]

_SUPPORTED = ("tensors, quantized tensors, numpy arrays, numbers, strings, bytes, bytearrays, bools, None, dtypes, "
              "sizes, devices, and dicts, Counters, lists, tuples and sets of these")


class _Writer:
    """Writes the pickle of a checkpoint object; ``locate(tensor)`` gives each tensor's ``Placement``; ``legacy``:
    storage ids in the legacy format's form, with a sixth field (a view of a storage, always None here)."""

    def __init__(self, locate, protocol=2, legacy=False):
        self.out = io.BytesIO()
        self.locate = locate
        self.protocol = protocol
        self.legacy = legacy
        self.memo = {}  # id(object) -> memo index
        self.alive = []  # memoized objects, kept referenced so that their ids stay theirs
        self.globals = {}  # (module, name) -> memo index
        self.memo_size = 0
        self.open_tuples = set()

    def op(self, code, payload=b""):
        self.out.write(code + payload)

    def remember(self, obj):
        """Memoize the object just built (on top of the stack)."""
        self.memo[id(obj)] = self.put()
        self.alive.append(obj)

    def put(self):
        """Store the top of the stack at the next memo index, and return that index."""
        index = self.memo_size
        self.memo_size += 1
        if index < 256:
            self.op(b"q", bytes([index]))
        else:
            self.op(b"r", struct.pack("<I", index))
        return index

    def get(self, index):
        """Push the object stored at memo ``index``."""
        if index < 256:
            self.op(b"h", bytes([index]))
        else:
            self.op(b"j", struct.pack("<I", index))

    def global_(self, module, name):
        if module == "__builtin__" and self.protocol >= 3:  # Python 2's name, which unpicklers map under protocol 2 only
            module = "builtins"
        if (module, name) in self.globals:
            self.get(self.globals[(module, name)])
            return
        self.op(b"c", f"{module}\n{name}\n".encode("ascii"))
        self.globals[(module, name)] = self.put()

    def call(self, module, name, *args):
        """``module.name(*args)``: the global, the argument tuple, REDUCE."""
        self.global_(module, name)
        self.tuple(args, "argument")
        self.op(b"R")

    def save(self, obj, where):
        from ..tensor import Size, Tensor

        if obj is None:
            self.op(b"N")
        elif obj is True or obj is False:
            self.op(b"\x88" if obj else b"\x89")
        elif isinstance(obj, int):
            self.int(int(obj), where)
        elif isinstance(obj, float):
            self.op(b"G", struct.pack(">d", obj))
        elif isinstance(obj, str):
            encoded = obj.encode("utf-8", "surrogatepass")
            self.op(b"X", struct.pack("<I", len(encoded)) + encoded)
        elif isinstance(obj, complex):
            self.call("__builtin__", "complex", obj.real, obj.imag)
        elif isinstance(obj, bytes):  # protocol 2's form, b'' included (torch.save writes it as bytes(), which
            # torch.load(weights_only=True) refuses)
            self.call("_codecs", "encode", obj.decode("latin1"), "latin1")
        elif isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            self.save(obj.item(), where)
        elif id(obj) in self.memo:
            self.get(self.memo[id(obj)])
        elif getattr(obj, "is_quantized", False) and not isinstance(obj, Tensor):
            self.quantized_tensor(obj)
        elif isinstance(obj, Tensor) and obj.layout is not _layout.strided:
            self.sparse_tensor(obj)
        elif isinstance(obj, (Tensor, np.ndarray)):
            self.tensor(obj)
        elif isinstance(obj, _dtype.dtype):
            self.global_("torch", obj.name)
        elif isinstance(obj, device):
            self.call("torch", "device", obj.type, *(() if obj.index is None else (obj.index,)))
        elif isinstance(obj, Size):
            self.call("torch", "Size", tuple(obj))
        elif type(obj) is Counter:
            self.call("collections", "Counter", dict(obj))
            self.remember(obj)
        elif type(obj) is bytearray:
            self.call("__builtin__", "bytearray", bytes(obj))
        elif isinstance(obj, dict):
            self.dict(obj, where)
        elif isinstance(obj, list):
            self.list(obj, where)
        elif isinstance(obj, tuple):
            self.tuple(obj, where)
        elif type(obj) is set:
            self.call("__builtin__", "set", list(obj))
        else:
            raise TypeError(f"engine.save cannot write {where}, a {type(obj).__name__}: it writes {_SUPPORTED}")

    def int(self, value, where):
        if 0 <= value < 256:
            self.op(b"K", bytes([value]))
        elif 0 <= value < 65536:
            self.op(b"M", struct.pack("<H", value))
        elif -2 ** 31 <= value < 2 ** 31:
            self.op(b"J", struct.pack("<i", value))
        else:
            encoded = value.to_bytes(value.bit_length() // 8 + 1, "little", signed=True)
            if len(encoded) > 255:
                raise TypeError(f"engine.save cannot write {where}: an integer of {value.bit_length()} bits")
            self.op(b"\x8a", bytes([len(encoded)]) + encoded)

    def dict(self, obj, where):
        ordered = isinstance(obj, OrderedDict)
        if ordered:
            self.call("collections", "OrderedDict")
        else:
            self.op(b"}")
        self.remember(obj)
        if obj:
            self.op(b"(")
            for key, value in obj.items():
                self.save(key, f"a key of {where}")
                self.save(value, f"{where}[{key!r}]")
            self.op(b"u")
        attributes = getattr(obj, "__dict__", None) if ordered else None
        if attributes:  # a state_dict's _metadata (module versions)
            self.save(dict(attributes), f"{where}.__dict__")
            self.op(b"b")

    def list(self, obj, where):
        self.op(b"]")
        self.remember(obj)
        if obj:
            self.op(b"(")
            for index, value in enumerate(obj):
                self.save(value, f"{where}[{index}]")
            self.op(b"e")

    def tuple(self, obj, where):
        if id(obj) in self.open_tuples:
            raise TypeError(f"engine.save cannot write {where}: a tuple that contains itself")
        self.open_tuples.add(id(obj))
        self.op(b"(")
        for index, value in enumerate(obj):
            self.save(value, f"{where}[{index}]")
        self.op(b"t")
        self.open_tuples.discard(id(obj))

    def tensor(self, obj):
        """A tensor, parameter or numpy array; the public Python attributes a tensor carries are written as
        torch writes a tensor's (``_rebuild_from_type_v2``) or a parameter's (``_rebuild_parameter_with_state``)."""
        from ..nn.parameter import Parameter
        from ..tensor import Tensor

        state = _attributes(obj) if isinstance(obj, Tensor) else {}
        if isinstance(obj, Parameter):
            self.global_("torch._utils", "_rebuild_parameter_with_state" if state else "_rebuild_parameter")
            self.op(b"(")
            self.plain_tensor(obj, False)
            self.save(bool(obj.requires_grad), "requires_grad")
            self.call("collections", "OrderedDict")
            if state:
                self.save(state, "a parameter's attributes")
            self.op(b"tR")
        elif state:
            placement = self.locate(obj)
            self.global_("torch._tensor", "_rebuild_from_type_v2")
            self.op(b"(")
            self.global_("torch._utils", _rebuild_name(placement))
            self.global_("torch", "Tensor")
            self.tensor_arguments(obj, placement, bool(obj.requires_grad))
            self.save(state, "a tensor's attributes")
            self.op(b"tR")
        else:
            self.plain_tensor(obj, isinstance(obj, Tensor) and bool(obj.requires_grad))
        self.remember(obj)

    def sparse_tensor(self, obj):
        """``_rebuild_sparse_tensor(layout, data)``, as torch pickles a sparse tensor: data is (indices, values,
        size, is_coalesced) for COO, (compressed indices, plain indices, values, size) for CSR/CSC/BSR/BSC."""
        from ..sparse.serialization import sparse_parts
        layout, data = sparse_parts(obj)
        self.global_("torch._utils", "_rebuild_sparse_tensor")
        self.op(b"(")
        self.call("torch.serialization", "_get_layout", f"torch.{layout.name}")
        self.save(data, "a sparse tensor's parts")
        self.op(b"tR")
        self.remember(obj)

    def quantized_tensor(self, obj):
        """``_rebuild_qtensor(storage, offset, size, stride, quantizer_params, False, OrderedDict())``; the
        quantizer parameters are (scheme, scale, zero point) or (scheme, scales, zero points, axis)."""
        placement = self.locate(obj)
        self.global_("torch._utils", "_rebuild_qtensor")
        self.op(b"(")
        self.storage_id(placement)
        self.save(placement.offset, "offset")
        self.save(tuple(int(n) for n in obj.shape), "size")
        self.save(placement.stride, "stride")
        self.op(b"(")
        self.global_("torch", obj.qscheme().name)
        if obj.qscheme().name == "per_channel_affine":
            scales, zero_points = obj._qparam_tensors()
            self.save(scales, "scales")
            self.save(zero_points, "zero points")
            self.save(obj.q_per_channel_axis(), "axis")
        else:
            self.save(obj.q_scale(), "scale")
            self.save(obj.q_zero_point(), "zero point")
        self.op(b"t")
        self.save(False, "requires_grad")
        self.call("collections", "OrderedDict")
        self.op(b"tR")
        self.remember(obj)

    def storage_id(self, placement):
        """The persistent id ``("storage", StorageType, key, location, numel)``."""
        self.op(b"(")
        self.save("storage", "storage id")
        self.global_("torch.storage" if placement.dtype is not None else "torch", placement.storage_type)
        for part in (placement.key, placement.location, placement.numel):
            self.save(part, "storage id")
        if self.legacy:
            self.op(b"N")
        self.op(b"tQ")

    def plain_tensor(self, obj, requires_grad):
        """``_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict())``, or for a storage
        that is untyped, ``_rebuild_tensor_v3`` with the tensor's dtype after the hooks."""
        placement = self.locate(obj)
        self.global_("torch._utils", _rebuild_name(placement))
        self.tensor_arguments(obj, placement, requires_grad)
        self.op(b"R")

    def tensor_arguments(self, obj, placement, requires_grad):
        """The argument tuple of ``_rebuild_tensor_v2`` (or v3) for ``obj``."""
        self.op(b"(")
        self.storage_id(placement)
        self.save(placement.offset, "offset")
        self.save(tuple(int(n) for n in obj.shape), "size")
        self.save(placement.stride, "stride")
        self.save(requires_grad, "requires_grad")
        self.call("collections", "OrderedDict")
        if placement.dtype is not None:
            self.global_("torch", placement.dtype)
        self.op(b"t")


def _rebuild_name(placement):
    """The torch function that rebuilds a tensor at ``placement``: v3 names the dtype an untyped storage holds."""
    return "_rebuild_tensor_v2" if placement.dtype is None else "_rebuild_tensor_v3"


_TENSOR_FIELDS = None  # the attributes every engine tensor has (computed once, from a fresh tensor)


def _attributes(tensor):
    """The public attributes the user set on ``tensor`` (engine's own, and private ones, are not written)."""
    global _TENSOR_FIELDS
    if _TENSOR_FIELDS is None:
        from ..tensor import _new

        _TENSOR_FIELDS = frozenset(vars(_new(np.empty(0))))
    return {key: value for key, value in vars(tensor).items()
            if key not in _TENSOR_FIELDS and not key.startswith("_")}


def checkpoint_pickle(obj, locate, protocol=2, legacy=False):
    """The pickle of ``obj`` (bytes); ``locate(tensor)`` gives each tensor's storage placement. It is written with
    protocol 2's opcodes, which every later protocol reads, under the header of ``protocol`` (2 to 5)."""
    writer = _Writer(locate, protocol, legacy)
    writer.op(b"\x80", bytes([protocol]))
    writer.save(obj, "the checkpoint")
    writer.op(b".")
    return writer.out.getvalue()
