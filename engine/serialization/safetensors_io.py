"""safetensors files: written and read by us (no dependency), tensors read as views of the file's bytes.

Reading checks the whole header first (``safetensors_header``), then returns each tensor as a view
into the bytes ``engine.load`` holds (a memory map or one in-memory copy of the file). Writing
orders tensors by element size, largest first, after a header padded to 8 bytes (as the reference
writer does), so that each tensor's data is aligned for its type.
"""
import json
import sys
from collections.abc import Mapping

import numpy as np

from .. import _dtype
from .errors import CheckpointError
from .files import writable
from .safetensors_header import DTYPES, header_length, parse_header
from .unpickler import BFLOAT16, typed_root

__all__ = ["save_safetensors", "load_safetensors", "read_metadata", "is_safetensors"]

_NAMES = {np.dtype(numpy_type): name for name, numpy_type in DTYPES.items() if name != "BF16"}


def _name(np_dtype):
    """The safetensors name of a numpy dtype (native byte order), None for one it cannot hold."""
    bfloat16 = _dtype.BFLOAT16_NP  # None until bfloat16 is used: then no array holds it
    if bfloat16 is not None and np_dtype == bfloat16:
        return "BF16"
    return _NAMES.get(np_dtype)


def is_safetensors(head):
    """Whether the first bytes of a file look like a safetensors header."""
    return len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1


def read_metadata(path):
    """The ``__metadata__`` strings of the safetensors file at ``path`` (an empty dict when it has none)."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        try:
            length = header_length(f.read(8), size)
            _, metadata = parse_header(f.read(length), size - 8 - length)
        except CheckpointError as e:
            raise CheckpointError(f"cannot read '{path}': {e}") from e
    return metadata


def load_safetensors(data, place=None):
    """name -> engine tensor for the safetensors file whose bytes are the uint8 array ``data``."""
    from ..tensor import _new

    length = header_length(bytes(data[:8]), data.size)
    start = 8 + length
    entries, _ = parse_header(bytes(data[8:start]), data.size - start)
    out = {}
    for entry in entries:
        raw, stored = data[start + entry.begin:start + entry.end], np.dtype(DTYPES[entry.dtype])
        if sys.byteorder == "big" and stored.itemsize > 1:  # the file's little-endian elements, copied native
            raw = np.frombuffer(memoryview(raw), dtype=stored.newbyteorder("<")).astype(stored).view(np.uint8)
        dtype = BFLOAT16 if entry.dtype == "BF16" else _dtype.from_numpy_dtype(stored)
        tensor = _new(typed_root(raw, dtype).reshape(entry.shape))  # its own storage, as each of torch's
        out[entry.name] = tensor if place is None else place(tensor, "cpu")
    return out


def _as_array(name, value):
    """A C-contiguous little-endian numpy array for a tensor or array value (a clear error for anything else)."""
    from ..tensor import Tensor

    if not isinstance(name, str) or name == "__metadata__":
        raise TypeError(f"a safetensors file names its tensors with strings other than '__metadata__', got {name!r}")
    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise TypeError(f"a safetensors file holds a dict of tensors: value for '{name}' is a {type(value).__name__}")
    if _name(value.dtype.newbyteorder("=")) is None:
        raise TypeError(f"safetensors cannot hold '{name}' of dtype {value.dtype}")
    value = value.astype(value.dtype.newbyteorder("<"), copy=False)
    return value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d arrays 0-d


def save_safetensors(tensors, f, metadata=None):
    """Write ``tensors`` (a dict of name -> tensor or array) as safetensors with string ``metadata``.

    ``f`` is a path (written to a temporary file beside it, then renamed: no half-written file ever
    has its name) or a binary file object.
    """
    if not isinstance(tensors, Mapping):
        raise TypeError(f"a safetensors file holds a state_dict (a dict of tensors), got {type(tensors).__name__}")
    arrays = {name: _as_array(name, value) for name, value in tensors.items()}
    order = sorted(arrays, key=lambda name: (-arrays[name].itemsize, name))
    header = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}} if metadata else {}
    offset = 0
    for name in order:
        array = arrays[name]
        header[name] = {"dtype": _name(array.dtype.newbyteorder("=")), "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with writable(f) as out:
        out.write(len(raw).to_bytes(8, "little"))
        out.write(raw)
        for name in order:
            out.write(arrays[name].reshape(-1).view(np.uint8))
