"""PyTorch's legacy checkpoint format (before torch 1.6, and ``_use_new_zipfile_serialization=False``).

The file is a chain of pickles: a magic number, the protocol version, a ``sys_info`` dict, the
object itself (storages as persistent ids), the sorted list of storage keys, then for each key an
int64 element count followed by the raw elements. The storages come after the pickle that uses
them, so the object pickle is scanned once to find where it ends, the storages are located (and
memory-mapped when reading a file), then the object pickle is read again for real.
"""

import numpy as np

from .unpickler import RestrictedUnpickler, Storage, UnpicklingError, storage_numpy_dtype

__all__ = ["MAGIC_NUMBER", "load_legacy"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001


def _plain(file, what):
    """One pickle of plain data (no globals allowed) from ``file``."""
    try:
        return RestrictedUnpickler(file).load()
    except UnpicklingError:
        raise
    except Exception as e:  # pickle raises many types on garbage input
        raise UnpicklingError(f"not a PyTorch checkpoint: cannot read its {what} ({e})") from e


def load_legacy(file, mapped=None):
    """The object in the legacy checkpoint open as ``file`` (``mapped``: the file as a uint8 memory map)."""
    if _plain(file, "magic number") != MAGIC_NUMBER:
        raise UnpicklingError("not a PyTorch checkpoint: invalid magic number")
    protocol = _plain(file, "protocol version")
    if protocol != PROTOCOL_VERSION:
        raise UnpicklingError(f"unsupported legacy checkpoint protocol version {protocol}")
    sys_info = _plain(file, "system info")
    little_endian = not isinstance(sys_info, dict) or sys_info.get("little_endian", True)
    object_start = file.tell()
    # scan pass: collect each storage's element type so the raw records can be sized
    element_types = {}

    def note_storage(storage_type, key, location, numel, view_metadata=None):
        element_types.setdefault(key, storage_type.dtype)

    RestrictedUnpickler(file, note_storage).load()
    keys = _plain(file, "storage keys")
    if not isinstance(keys, list) or set(keys) != set(element_types):
        raise UnpicklingError("corrupt checkpoint: storage key list does not match the pickle")
    storages = {}
    for key in keys:
        header = file.read(8)
        if len(header) != 8:
            raise UnpicklingError(f"truncated checkpoint: storage '{key}' is missing")
        count = int.from_bytes(header, "little" if little_endian else "big", signed=True)
        dtype = storage_numpy_dtype(element_types[key])
        start, nbytes = file.tell(), count * dtype.itemsize
        if mapped is not None:
            data = mapped[start:start + nbytes]
            file.seek(start + nbytes)
        else:
            data = np.frombuffer(file.read(nbytes), dtype=np.uint8)
        if count < 0 or data.size != nbytes:
            raise UnpicklingError(f"truncated checkpoint: storage '{key}' should have {count} elements")
        array = data.view(dtype)
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
    return RestrictedUnpickler(file, load_storage).load()
