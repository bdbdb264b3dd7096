"""PyTorch's legacy checkpoint format (before torch 1.6, and ``_use_new_zipfile_serialization=False``).

The file is a chain of pickles: a magic number, the protocol version, a ``sys_info`` dict, the
object itself (storages as persistent ids), the sorted list of storage keys, then for each key an
int64 element count followed by the raw elements. The storages come after the pickle that uses
them, so the object pickle is scanned once to find where it ends, the storages are located as
slices of the file's bytes, then the object pickle is read again for real.
"""
import pickle
import struct

from .byte_view import open_bytes
from .errors import CheckpointError
from .files import writable
from .pickle_writer import checkpoint_pickle
from .storages import UNTYPED, StoragePlanner, storage_type_of
from .torch_save import _little_endian_bytes  # the same bytes as the zip format's records
from .unpickler import RestrictedUnpickler, Storage, storage_numpy_dtype

__all__ = ["MAGIC_NUMBER", "load_legacy", "save_legacy"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 8}}  # the sizes of a 64-bit Linux build, as torch writes


def load_legacy(data, place=None, text=("utf-8", "strict")):
    """The object in the legacy checkpoint whose bytes are the uint8 array ``data``; tensors are views of it.
    ``text``: the (encoding, errors) of Python 2 strings in the object's pickle."""
    file = open_bytes(data)
    magic = RestrictedUnpickler(file).load()
    if type(magic) is not int or magic != MAGIC_NUMBER:
        raise CheckpointError("not a PyTorch checkpoint: invalid magic number")
    protocol = RestrictedUnpickler(file).load()
    if type(protocol) is not int or protocol != PROTOCOL_VERSION:
        raise CheckpointError(f"unsupported legacy checkpoint protocol version {protocol!r:.40}")
    sys_info = RestrictedUnpickler(file).load()
    little_endian = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    object_start = file.tell()
    # scan pass: collect each storage's element type so the raw records can be sized
    element_types = {}

    def note_storage(storage_type, key, location, numel, view_metadata=None):
        element_types.setdefault(key, storage_type.dtype)

    RestrictedUnpickler(file, note_storage, None, text).load()
    keys = RestrictedUnpickler(file).load()
    if not isinstance(keys, list) or set(keys) != set(element_types):
        raise CheckpointError("corrupt checkpoint: its storage key list does not match its pickle")
    storages = {}
    for key in keys:
        header = file.read(8)
        if len(header) != 8:
            raise CheckpointError(f"truncated checkpoint: storage '{key}' is missing")
        count = int.from_bytes(header, "little" if little_endian else "big", signed=True)
        dtype = storage_numpy_dtype(element_types[key])
        start, nbytes = file.tell(), count * dtype.itemsize
        if count < 0 or start + nbytes > data.size:
            raise CheckpointError(f"truncated checkpoint: storage '{key}' should have {count} elements")
        file.seek(start + nbytes)
        array = data[start:start + nbytes].view(dtype)
        if not little_endian and dtype.itemsize > 1:
            array = array.view(dtype.newbyteorder(">")).astype(dtype)
        storages[key] = Storage(array, element_types[key])

    def load_storage(storage_type, key, location, numel, view_metadata=None):
        """The root storage ``key``, or the slice of it that an old-style view names."""
        if view_metadata is None:
            return storages[key]
        _, offset, size = view_metadata
        return Storage(storages[key].array[offset:offset + size], storage_type.dtype)

    file.seek(object_start)
    return RestrictedUnpickler(file, load_storage, place, text).load()


def save_legacy(obj, f, protocol=2):
    """Write ``obj`` to ``f`` in the legacy format (``torch.save(..., _use_new_zipfile_serialization=False)``):
    storages little-endian, each after its element count (its byte count for an untyped storage)."""
    planner = StoragePlanner()
    checkpoint_pickle(obj, planner.add)
    planner.plan()
    pickled = checkpoint_pickle(obj, planner.locate, protocol, legacy=True)
    storages = dict(planner.storages())
    keys = sorted(storages)
    with writable(f) as out:
        for header in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
            out.write(pickle.dumps(header, protocol=protocol))
        out.write(pickled)
        out.write(pickle.dumps(keys, protocol=protocol))
        for key in keys:
            flat = storages[key]
            untyped = storage_type_of(flat.dtype.newbyteorder("=")) == UNTYPED
            out.write(struct.pack("<q", flat.nbytes if untyped else flat.size))
            out.write(_little_endian_bytes(flat))
