"""The safetensors header, read and checked as the format's specification requires.

A file is an 8-byte little-endian header length N (at most 100 MB), N bytes of UTF-8 JSON, then the
data. The JSON object maps each tensor name to ``{"dtype", "shape", "data_offsets": [begin, end]}``
(offsets relative to the data) and may hold ``"__metadata__"``, a map of strings to strings. The
tensors must tile the data exactly: sorted by offset they are contiguous, start at 0, do not
overlap, end at the end of the file, and each spans product(shape) x itemsize bytes.
"""
import json
import math
from dataclasses import dataclass

import numpy as np

from .errors import CheckpointError

__all__ = ["DTYPES", "MAX_HEADER_BYTES", "TensorEntry", "header_length", "parse_header"]

MAX_HEADER_BYTES = 100_000_000
DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I64": np.int64,
          "I32": np.int32, "I16": np.int16, "I8": np.int8, "U64": np.uint64, "U32": np.uint32, "U16": np.uint16,
          "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64}  # the format has no complex128


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of the header: its name, safetensors dtype, shape and byte range in the data."""

    name: str
    dtype: str
    shape: tuple
    begin: int
    end: int


def header_length(first_bytes, file_size):
    """N, the JSON header's length, from the file's first 8 bytes (checked against ``file_size``)."""
    if file_size < 8 or len(first_bytes) < 8:
        raise CheckpointError(f"not a safetensors file: it is only {file_size} bytes")
    length = int.from_bytes(first_bytes[:8], "little")
    if length > MAX_HEADER_BYTES:
        raise CheckpointError(f"corrupt safetensors file: a header of {length} bytes is over the "
                              f"format's limit of {MAX_HEADER_BYTES}")
    if 8 + length > file_size:
        raise CheckpointError(f"truncated or corrupt safetensors file: a header of {length} bytes "
                              f"in a file of {file_size} bytes")
    return length


def _unique_keys(pairs):
    """A JSON object as a dict, refusing a key given twice (which entry would be meant?)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise CheckpointError(f"corrupt safetensors header: key '{key:.80}' appears twice")
        out[key] = value
    return out


def _decode(raw):
    """The header's JSON object."""
    try:
        header = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
    except UnicodeDecodeError as e:
        raise CheckpointError(f"corrupt safetensors header: not UTF-8 ({e})") from e
    except RecursionError:
        raise CheckpointError("corrupt safetensors header: JSON nested too deeply") from None
    except ValueError as e:
        raise CheckpointError(f"corrupt safetensors header: bad JSON ({e})") from e
    if not isinstance(header, dict):
        raise CheckpointError(f"corrupt safetensors header: a JSON {type(header).__name__}, not an object")
    return header


def _counts(value, length, what, name):
    """``value`` as a tuple of non-negative integers (of ``length`` when given)."""
    if (not isinstance(value, list) or (length is not None and len(value) != length)
            or not all(type(v) is int and v >= 0 for v in value)):
        expected = f"{length} non-negative integers" if length else "a list of non-negative integers"
        raise CheckpointError(f"corrupt safetensors header: tensor '{name:.80}' has {what} {value!r:.80}, "
                              f"expected {expected}")
    return tuple(value)


def _entry(name, fields):
    """A checked ``TensorEntry`` from a header's JSON entry."""
    if not isinstance(fields, dict) or not {"dtype", "shape", "data_offsets"} <= fields.keys():
        raise CheckpointError(f"corrupt safetensors header: tensor '{name:.80}' lacks dtype, shape or data_offsets")
    dtype = fields["dtype"]
    if dtype not in DTYPES:
        raise CheckpointError(f"safetensors tensor '{name:.80}' has dtype {dtype!r:.40}, which engine does not "
                              f"read (it reads {', '.join(DTYPES)})")
    shape = _counts(fields["shape"], None, "shape", name)
    begin, end = _counts(fields["data_offsets"], 2, "data_offsets", name)
    expected = math.prod(shape) * np.dtype(DTYPES[dtype]).itemsize
    if end - begin != expected:
        raise CheckpointError(f"corrupt safetensors header: tensor '{name:.80}' of shape {list(shape)} and dtype "
                              f"{dtype} needs {expected} bytes, its offsets [{begin}, {end}) give {end - begin}")
    return TensorEntry(name, dtype, shape, begin, end)


def _metadata(value):
    """The ``__metadata__`` map, checked to be strings to strings."""
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise CheckpointError("corrupt safetensors header: __metadata__ must map strings to strings")
    return value


def _check_tiling(entries, data_size):
    """The tensors' byte ranges cover the ``data_size`` bytes of data exactly once, in order."""
    position = 0
    for entry in sorted(entries, key=lambda e: (e.begin, e.end)):
        if entry.begin != position:
            problem = "overlaps the tensor before it" if entry.begin < position else "leaves a gap before it"
            raise CheckpointError(f"corrupt safetensors header: tensor '{entry.name:.80}' at bytes "
                                  f"[{entry.begin}, {entry.end}) {problem}")
        position = entry.end
    if position != data_size:
        raise CheckpointError(f"truncated or corrupt safetensors file: its tensors span {position} bytes of "
                              f"data, the file holds {data_size}")


def parse_header(raw, data_size):
    """(tensor entries in header order, metadata dict) of the JSON header bytes ``raw``.

    ``data_size`` is the number of bytes after the header, which the tensors must tile exactly.
    """
    header = _decode(raw)
    metadata = _metadata(header.pop("__metadata__")) if "__metadata__" in header else {}
    entries = [_entry(name, fields) for name, fields in header.items()]
    _check_tiling(entries, data_size)
    return entries, metadata
