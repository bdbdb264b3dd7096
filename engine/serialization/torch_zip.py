"""PyTorch's zip checkpoint format (torch >= 1.6): ``<archive>/data.pkl`` plus one ``data/<key>`` per storage.

Storages are stored uncompressed, so every tensor is a strided view into the file's bytes (memory
mapped or read into memory by ``engine.load``); shared storages give tensors that share memory.
"""
import io
import struct
import zipfile

import numpy as np

from .byte_view import open_bytes
from .errors import CheckpointError
from .unpickler import RestrictedUnpickler, Storage, storage_numpy_dtype

__all__ = ["load_zip"]

_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length
_ENCRYPTED = 0x1  # general purpose flag bit 0
_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # torch stores; deflate is what re-zipping gives


def _record_prefix(names):
    """The archive's top folder (``'archive/'``), found from its ``data.pkl``."""
    for name in names:
        if name.endswith("data.pkl") and name.count("/") == 1:
            return name[: -len("data.pkl")]
    raise CheckpointError("not a PyTorch checkpoint: the zip archive has no '<name>/data.pkl'")


class _MemberReader:
    """Raw bytes of archive members: views into the file's bytes when stored, else decompressed copies."""

    def __init__(self, archive, data):
        self.archive = archive
        self.data = data

    def read(self, name):
        info = self.archive.getinfo(name)
        if info.compress_type != zipfile.ZIP_STORED:  # a writable copy, like every loaded tensor
            return np.frombuffer(bytearray(self.archive.read(name)), dtype=np.uint8)
        start = info.header_offset
        header = bytes(self.data[start:start + _LOCAL_HEADER.size])
        if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
            raise CheckpointError(f"corrupt checkpoint: bad local header for '{name}'")
        _, name_len, extra_len = _LOCAL_HEADER.unpack(header)
        begin = start + _LOCAL_HEADER.size + name_len + extra_len
        if begin + info.file_size > self.data.size:
            raise CheckpointError(f"truncated checkpoint: '{name}' extends past the end of the file")
        return self.data[begin:begin + info.file_size]


def _byteorder(archive, prefix, names):
    """The byte order the storages are written in (``'little'`` when the archive does not say)."""
    if prefix + "byteorder" not in names:
        return "little"
    order = archive.read(prefix + "byteorder")
    if order not in (b"little", b"big"):
        raise CheckpointError(f"corrupt checkpoint: unknown byte order {order[:20]!r}")
    return order.decode()


def load_zip(data, place=None, text=("utf-8", "strict")):
    """The object pickled in the zip checkpoint whose bytes are the uint8 array ``data``; ``text``: the (encoding,
    errors) of Python 2 strings in the pickle."""
    archive = zipfile.ZipFile(open_bytes(data))
    with archive:
        for info in archive.infolist():
            if info.flag_bits & _ENCRYPTED or info.compress_type not in _COMPRESSIONS:
                raise CheckpointError(f"corrupt checkpoint: its record '{info.filename:.80}' claims encryption "
                                      f"or compression method {info.compress_type}, which checkpoints do not use")
        names = set(archive.namelist())
        prefix = _record_prefix(sorted(names))
        byteorder = _byteorder(archive, prefix, names)
        reader = _MemberReader(archive, data)
        storages = {}

        def load_storage(storage_type, key, location, numel):
            """The storage ``data/<key>``, read once and shared by every tensor that uses it."""
            if key not in storages:
                member = f"{prefix}data/{key}"
                if member not in names:
                    raise CheckpointError(f"corrupt checkpoint: storage '{member}' is missing")
                raw = reader.read(member)
                dtype = storage_numpy_dtype(storage_type.dtype)
                if raw.size % dtype.itemsize:
                    raise CheckpointError(f"corrupt checkpoint: storage '{member}' has {raw.size} bytes, "
                                          f"not a multiple of {dtype.itemsize}")
                array = raw.view(dtype)
                if byteorder == "big" and dtype.itemsize > 1:
                    array = array.view(dtype.newbyteorder(">")).astype(dtype)
                storages[key] = Storage(array, storage_type.dtype)
            return storages[key]

        pickled = archive.read(prefix + "data.pkl")
        return RestrictedUnpickler(io.BytesIO(pickled), load_storage, place, text).load()
