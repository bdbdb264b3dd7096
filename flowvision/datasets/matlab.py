"""A reader for MATLAB level-5 .mat files, enough for the datasets that publish labels in them (SVHN, Flowers102,
SBD), so that they load without scipy.

A level-5 file is a 128-byte header (text, then the version and an endian mark, 'IM' for little-endian) followed by
data elements: an 8-byte tag (type, byte count; or a 4-byte tag with up to 4 bytes of data packed in), the data,
padding to 8 bytes (none after compressed elements). A variable is a miMATRIX element, possibly zlib-compressed
inside a miCOMPRESSED element: array flags (class, logical/complex bits), dimensions, name, then the data for its
class. Arrays are column-major.

Values come back as scipy.io.loadmat's do, but plainer: numeric and logical arrays as numpy arrays of the stored
shape and class (logical as uint8); character arrays as a str (one row) or a list of row strings; cell arrays as
object arrays of values; structs as object arrays of {field: value} dicts; sparse matrices as dense arrays of
their stored value type. Complex, object and function classes are refused.
"""
import zlib

import numpy as np

__all__ = ["read_mat"]

_MI_MATRIX, _MI_COMPRESSED = 14, 15
_MI_UTF8, _MI_UTF16, _MI_UTF32 = 16, 17, 18
_MI_DTYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 9: "f8", 12: "i8", 13: "u8"}
_MX_CELL, _MX_STRUCT, _MX_CHAR, _MX_SPARSE = 1, 2, 4, 5
_MX_DTYPES = {6: "f8", 7: "f4", 8: "i1", 9: "u1", 10: "i2", 11: "u2", 12: "i4", 13: "u4", 14: "i8", 15: "u8"}
_COMPLEX = 0x0800


class _Reader:
    """Walks the data elements of one byte string with the file's byte order."""

    def __init__(self, data, order):
        self.data, self.order, self.pos = data, order, 0

    def element(self):
        """(type, bytes) of the next data element, skipping its padding."""
        tag = np.frombuffer(self.data, self.order + "u4", 2, self.pos)
        small_size = int(tag[0]) >> 16
        if small_size:  # small element: type and size share the first word, data in the second
            kind, size = int(tag[0]) & 0xFFFF, small_size
            payload = self.data[self.pos + 4:self.pos + 4 + size]
            self.pos += 8
            return kind, payload
        kind, size = int(tag[0]), int(tag[1])
        start = self.pos + 8
        if start + size > len(self.data):
            raise ValueError(f"truncated .mat data: an element of {size} bytes at offset {self.pos} runs past the end")
        # compressed elements are written without padding
        self.pos = start + (size if kind == _MI_COMPRESSED else (size + 7) // 8 * 8)
        return kind, self.data[start:start + size]

    def array(self):
        """The numbers of the next numeric element."""
        kind, payload = self.element()
        if kind not in _MI_DTYPES:
            raise ValueError(f"unsupported .mat numeric element type {kind}")
        return np.frombuffer(payload, self.order + _MI_DTYPES[kind])

    def text(self):
        kind, payload = self.element()
        return bytes(payload).decode("utf-8" if kind in (_MI_UTF8, 1, 2) else "latin-1")


def _matrix(payload, order):
    """(name, value) of one miMATRIX element's content."""
    if not payload:
        return "", np.zeros((0, 0))
    reader = _Reader(payload, order)
    flags = reader.array()
    mx_class, bits = int(flags[0]) & 0xFF, int(flags[0]) & 0xFF00
    dims = tuple(int(d) for d in reader.array())
    name = reader.text()
    count = int(np.prod(dims))
    if bits & _COMPLEX:
        raise ValueError(f"complex .mat variable {name!r} is not supported")
    if mx_class in _MX_DTYPES:
        return name, reader.array().astype(_MX_DTYPES[mx_class]).reshape(dims, order="F")
    if mx_class == _MX_CHAR:
        return name, _chars(reader, dims)
    if mx_class == _MX_CELL:
        cells = np.empty(count, dtype=object)
        for i in range(count):
            cells[i] = _value(reader, order)
        return name, cells.reshape(dims, order="F")
    if mx_class == _MX_STRUCT:
        width = int(reader.array()[0])
        raw = bytes(reader.element()[1])
        fields = [raw[i:i + width].split(b"\0", 1)[0].decode() for i in range(0, len(raw), width)]
        records = np.empty(count, dtype=object)
        for i in range(count):
            records[i] = {field: _value(reader, order) for field in fields}
        return name, records.reshape(dims, order="F")
    if mx_class == _MX_SPARSE:
        rows, col_starts = reader.array(), reader.array()
        values = reader.array()
        dense = np.zeros(dims, dtype=values.dtype.newbyteorder("="))
        for col in range(dims[1]):
            start, stop = int(col_starts[col]), int(col_starts[col + 1])
            dense[rows[start:stop], col] = values[start:stop]
        return name, dense
    raise ValueError(f".mat variable {name!r} has unsupported class {mx_class}")


def _chars(reader, dims):
    kind, payload = reader.element()
    if kind in (_MI_UTF8, 1, 2):
        codes = np.frombuffer(bytes(payload).decode("utf-8").encode("utf-32-le"), "<u4")
    elif kind in (_MI_UTF16, 4):
        codes = np.frombuffer(payload, reader.order + "u2")
    elif kind in (_MI_UTF32, 6):
        codes = np.frombuffer(payload, reader.order + "u4")
    else:
        raise ValueError(f"unsupported .mat character element type {kind}")
    if not dims or 0 in dims:
        return ""
    grid = codes.reshape(dims, order="F")
    rows = ["".join(map(chr, row)) for row in grid.reshape(dims[0], -1)]
    return rows[0] if dims[0] == 1 else rows


def _value(reader, order):
    """The value of the next element, a (possibly compressed) matrix."""
    kind, payload = reader.element()
    if kind == _MI_COMPRESSED:
        inner = _Reader(zlib.decompress(payload), order)
        kind, payload = inner.element()
    if kind != _MI_MATRIX:
        raise ValueError(f"expected a .mat matrix element, got type {kind}")
    return _matrix(payload, order)[1]


def read_mat(path):
    """The variables of a level-5 .mat file as {name: value} (see the module docstring for the value types)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 128 or data[126:128] not in (b"IM", b"MI"):
        raise ValueError(f"{path} is not a MATLAB level-5 .mat file (v7.3 files are HDF5 and not supported)")
    order = "<" if data[126:128] == b"IM" else ">"
    reader = _Reader(data, order)
    reader.pos = 128
    variables = {}
    while reader.pos + 8 <= len(data):
        kind, payload = reader.element()
        if kind == _MI_COMPRESSED:
            try:
                payload = zlib.decompress(payload)
            except zlib.error as e:
                raise ValueError(f"{path}: corrupt compressed .mat element ({e})") from None
            kind, payload = _Reader(payload, order).element()
        if kind == _MI_MATRIX:
            name, value = _matrix(payload, order)
            variables[name] = value
    return variables
