"""PyTorch's zip checkpoint format (torch >= 1.6): ``<archive>/data.pkl`` plus one ``data/<key>`` per storage.

Storages are stored uncompressed, so a checkpoint on disk is memory-mapped and every tensor is a
strided view into the mapping (no copy); shared storages give tensors that share memory.
"""
import io
import struct
import zipfile

import numpy as np

from .unpickler import RestrictedUnpickler, Storage, UnpicklingError, storage_numpy_dtype

__all__ = ["load_zip"]

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length


def _record_prefix(names):
    """The archive's top folder (``'archive/'``), found from its ``data.pkl``."""
    for name in names:
        if name.endswith("data.pkl") and name.count("/") == 1:
            return name[: -len("data.pkl")]
    raise UnpicklingError("not a PyTorch checkpoint: the zip archive has no '<name>/data.pkl'")


class _MemberReader:
    """Raw bytes of archive members: views into a memory map when stored, else decompressed copies."""

    def __init__(self, archive, mapped):
        self.archive = archive
        self.mapped = mapped

    def read(self, name):
        info = self.archive.getinfo(name)
        if self.mapped is None or info.compress_type != zipfile.ZIP_STORED:
            return np.frombuffer(self.archive.read(name), dtype=np.uint8)
        start = info.header_offset
        signature, name_len, extra_len = _LOCAL_HEADER.unpack(bytes(self.mapped[start:start + 30]))
        if signature != b"PK\x03\x04":
            raise UnpicklingError(f"corrupt checkpoint: bad local header for '{name}'")
        begin = start + 30 + name_len + extra_len
        if begin + info.file_size > self.mapped.size:
            raise UnpicklingError(f"truncated checkpoint: '{name}' extends past the end of the file")
        return self.mapped[begin:begin + info.file_size]


def load_zip(source, mapped=None):
    """The object pickled in the zip checkpoint ``source`` (a path or file object).

    ``mapped`` is the whole file as a uint8 array (a memory map) to take stored members from.
    """
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise UnpicklingError(f"corrupt or truncated checkpoint (bad zip archive): {e}") from e
    with archive:
        names = archive.namelist()
        prefix = _record_prefix(names)
        byteorder = "little"
        if prefix + "byteorder" in names:
            byteorder = archive.read(prefix + "byteorder").decode("ascii").strip()
        reader = _MemberReader(archive, mapped)
        storages = {}

        def load_storage(storage_type, key, location, numel):
            """The storage ``data/<key>``, read once and shared by every tensor that uses it."""
            if key not in storages:
                member = f"{prefix}data/{key}"
                if member not in names:
                    raise UnpicklingError(f"corrupt checkpoint: storage '{member}' is missing")
                raw = reader.read(member)
                dtype = storage_numpy_dtype(storage_type.dtype)
                if raw.size % dtype.itemsize:
                    raise UnpicklingError(f"corrupt checkpoint: storage '{member}' has {raw.size} bytes, "
                                          f"not a multiple of {dtype.itemsize}")
                array = raw.view(dtype)
                if byteorder == "big" and dtype.itemsize > 1:
                    array = array.view(dtype.newbyteorder(">")).astype(dtype)
                storages[key] = Storage(array, storage_type.dtype)
            return storages[key]

        try:
            data = archive.read(prefix + "data.pkl")
        except (zipfile.BadZipFile, EOFError, OSError) as e:
            raise UnpicklingError(f"corrupt checkpoint: cannot read data.pkl: {e}") from e
        return RestrictedUnpickler(io.BytesIO(data), load_storage).load()
