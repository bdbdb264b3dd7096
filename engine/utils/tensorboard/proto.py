"""A minimal protocol-buffer wire-format encoder, enough to write TensorBoard's messages by hand.

Each helper returns the encoded bytes of one field (key and payload), or ``b""`` where proto3 leaves the
field out (a scalar at its default value, with ``always=False``). A message is the concatenation of its
fields in field-number order, which is the order the official serializers use, so our bytes match
theirs. Wire types: 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit.
"""
import struct


def varint(value):
    """Base-128 varint of an integer; negative values as their 64-bit two's complement (int32/int64)."""
    value = int(value)
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(number, wire_type):
    return varint((number << 3) | wire_type)


def uint(number, value, always=False):
    """An int32/int64/uint32/bool/enum field."""
    if not value and not always:
        return b""
    return _key(number, 0) + varint(value)


def double(number, value, always=False):
    """A double field (proto3 omits it only when its bits are all zero, so -0.0 is kept)."""
    payload = struct.pack("<d", float(value))
    if payload == bytes(8) and not always:
        return b""
    return _key(number, 1) + payload


def float32(number, value, always=False):
    """A float field."""
    payload = struct.pack("<f", float(value))
    if payload == bytes(4) and not always:
        return b""
    return _key(number, 5) + payload


def blob(number, value, always=False):
    """A bytes, string (str is UTF-8 encoded) or embedded-message field."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not value and not always:
        return b""
    return _key(number, 2) + varint(len(value)) + bytes(value)


def message(number, encoded):
    """An embedded message that is set, so written even when empty (message fields have presence)."""
    return blob(number, encoded, always=True)


def repeated_blob(number, values):
    """A repeated string/bytes/message field: one key and payload per element."""
    return b"".join(blob(number, v, always=True) for v in values)


def packed_doubles(number, values):
    """A packed repeated double field."""
    values = list(values)
    return blob(number, struct.pack(f"<{len(values)}d", *values)) if values else b""


def packed_floats(number, values):
    """A packed repeated float field."""
    values = list(values)
    return blob(number, struct.pack(f"<{len(values)}f", *values)) if values else b""


def packed_varints(number, values):
    """A packed repeated int32/int64/uint32/bool field."""
    return blob(number, b"".join(varint(v) for v in values))
