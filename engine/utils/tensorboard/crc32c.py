"""CRC-32C (Castagnoli), the checksum of TFRecord framing, and TensorFlow's masked form of it.

Table-driven, one byte at a time: event files are small, and this keeps the writer free of any
compiled dependency. ``masked_crc32c`` rotates and offsets the checksum as TensorFlow does, so that a
CRC computed over data that itself holds CRCs stays well distributed.
"""
_POLY = 0x82F63B78  # reflected Castagnoli polynomial


def _make_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data, crc=0):
    """The CRC-32C of ``data`` (bytes-like), continuing from ``crc`` (a previous result) if given."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    """TFRecord's masked CRC-32C of ``data``: rotated right by 15 bits plus 0xA282EAD8, mod 2**32."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
