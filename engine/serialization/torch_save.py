"""``engine.save``'s PyTorch format: the zip archive ``torch.save`` writes, readable by ``torch.load``.

The archive holds ``archive/data.pkl`` (the object, each tensor a strided view of a storage named by
a persistent id), ``.format_version``, ``.storage_alignment``, ``byteorder``, one
``archive/data/<key>`` per storage (raw little-endian elements) and ``version``, every record stored
uncompressed with its data starting on a 64-byte boundary (padding in the local header's extra
field), so a reader can map the storages straight from the file.
"""
import struct
import zipfile

import numpy as np

from .files import writable
from .pickle_writer import checkpoint_pickle
from .storages import StoragePlanner

__all__ = ["save_torch"]

ALIGNMENT = 64
_PADDING_FIELD = 0x4246  # the extra-field id torch's writer pads with ("FB")
_LOCAL_HEADER_BYTES = 30
_ZIP64_EXTRA_BYTES = 20
_FILE_FORMAT_VERSION = b"3\n"


def _add_record(archive, name, payload):
    """Store ``payload`` (bytes-like) as ``name``, its data aligned to ``ALIGNMENT`` bytes in the file."""
    size = memoryview(payload).nbytes
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a member it is told the size of
    header = _LOCAL_HEADER_BYTES + len(name.encode("utf-8")) + 4 + (_ZIP64_EXTRA_BYTES if zip64 else 0)
    padding = -(archive.start_dir + header) % ALIGNMENT
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    info.extra = struct.pack("<HH", _PADDING_FIELD, padding) + b"Z" * padding
    with archive.open(info, "w", force_zip64=zip64) as member:
        member.write(payload)


def _little_endian_bytes(flat):
    """The bytes of the 1-d contiguous array ``flat``, little-endian, without a copy on little-endian hosts."""
    return flat.astype(flat.dtype.newbyteorder("<"), copy=False).view(np.uint8)


def save_torch(obj, f, protocol=2, byteorder_record=True):
    """Write ``obj`` (nested dicts, lists and tuples of tensors and plain values) to ``f`` as torch.save does,
    its pickle under protocol ``protocol``'s header; ``byteorder_record=False`` leaves out the byte order record
    (``_disable_byteorder_record``)."""
    planner = StoragePlanner()
    checkpoint_pickle(obj, planner.add)  # a first pass finds every tensor, in the order torch numbers them
    planner.plan()
    pickled = checkpoint_pickle(obj, planner.locate, protocol)
    with writable(f) as out, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        _add_record(archive, "archive/data.pkl", pickled)
        _add_record(archive, "archive/.format_version", b"1")
        _add_record(archive, "archive/.storage_alignment", str(ALIGNMENT).encode())
        if byteorder_record:
            _add_record(archive, "archive/byteorder", b"little")
        for key, flat in planner.storages():
            _add_record(archive, f"archive/data/{key}", _little_endian_bytes(flat))
        _add_record(archive, "archive/version", _FILE_FORMAT_VERSION)
