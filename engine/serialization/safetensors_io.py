"""safetensors files: written with the ``safetensors`` package, read as zero-copy memory-mapped views.

The format is an 8-byte little-endian header length, a JSON header (name -> dtype, shape,
data_offsets; optional ``__metadata__`` of strings) and the raw little-endian data. Reading maps
the file copy-on-write and returns each tensor as a view, after checking every offset against the
file (``safetensors.numpy.load_file`` copies each tensor, which doubles the cost of a load).
"""
import json
import os
import tempfile

import numpy as np

from .unpickler import UnpicklingError

__all__ = ["save_safetensors", "load_safetensors", "read_metadata", "is_safetensors"]

_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
           "BOOL": np.bool_}
_MAX_HEADER = 100 * 1024 * 1024


def is_safetensors(head):
    """Whether the first bytes of a file look like a safetensors header."""
    return len(head) >= 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1


def _parse_header(mapped, name):
    """(header dict, offset where the data starts) of a safetensors file mapped as uint8."""
    if mapped.size < 8:
        raise UnpicklingError(f"'{name}' is not a safetensors file: it is only {mapped.size} bytes")
    length = int.from_bytes(bytes(mapped[:8]), "little")
    if length > _MAX_HEADER or 8 + length > mapped.size:
        raise UnpicklingError(f"corrupt or truncated safetensors file '{name}': header of {length} bytes "
                              f"in a file of {mapped.size} bytes")
    try:
        header = json.loads(bytes(mapped[8:8 + length]))
    except ValueError as e:
        raise UnpicklingError(f"corrupt safetensors file '{name}': bad JSON header ({e})") from e
    if not isinstance(header, dict):
        raise UnpicklingError(f"corrupt safetensors file '{name}': header is not a JSON object")
    return header, 8 + length


def read_metadata(path):
    """The ``__metadata__`` strings of a safetensors file (an empty dict when it has none)."""
    with open(path, "rb") as f:
        head = f.read(8)
        length = int.from_bytes(head, "little") if len(head) == 8 else -1
        if length < 2 or length > _MAX_HEADER:
            raise UnpicklingError(f"'{path}' is not a safetensors file")
        raw = f.read(length)
    try:
        return dict(json.loads(raw).get("__metadata__") or {})
    except (ValueError, AttributeError) as e:
        raise UnpicklingError(f"corrupt safetensors file '{path}': bad JSON header ({e})") from e


def load_safetensors(mapped, name="<buffer>"):
    """name -> engine tensor for the safetensors file ``mapped`` (a uint8 array, e.g. a memory map)."""
    from ..tensor import _new
    from .unpickler import BFLOAT16, to_native

    header, start = _parse_header(mapped, name)
    data_size = mapped.size - start
    out = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype = np.dtype(_DTYPES[entry["dtype"]])
            shape = tuple(int(s) for s in entry["shape"])
            begin, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as e:
            raise UnpicklingError(f"corrupt or unsupported safetensors entry '{key}' in '{name}': {e}") from e
        if not 0 <= begin <= end <= data_size or end - begin != int(np.prod(shape)) * dtype.itemsize:
            raise UnpicklingError(f"corrupt or truncated safetensors file '{name}': tensor '{key}' of shape "
                                  f"{list(shape)} does not fit its offsets [{begin}, {end}) in {data_size} bytes")
        array = mapped[start + begin:start + end].view(dtype).reshape(shape)
        out[key] = _new(to_native(array, BFLOAT16) if entry["dtype"] == "BF16" else array)
    return out


def _as_array(name, value):
    """A C-contiguous numpy array for a tensor or array value (a clear error for anything else)."""
    from ..tensor import Tensor

    if isinstance(value, Tensor):
        value = value.detach().cpu().numpy()
    if not isinstance(value, np.ndarray):
        raise TypeError(f"engine.save writes a dict of tensors: value for '{name}' is a {type(value).__name__}")
    return value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d arrays 0-d


def save_safetensors(tensors, path, metadata=None):
    """Write ``tensors`` (name -> tensor/array) to ``path`` atomically, with string ``metadata``."""
    from safetensors.numpy import save_file

    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"engine.save writes a dict with string keys, got key {name!r}")
        arrays[name] = _as_array(name, value)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()}
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".safetensors")
    os.close(fd)
    try:
        save_file(arrays, tmp, metadata=meta)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
