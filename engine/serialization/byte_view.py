"""A read-only binary file over bytes already in memory or memory-mapped, without copying them.

``zipfile`` and ``pickle`` read from file objects; ``io.BytesIO`` would first copy the whole
checkpoint. ``open_bytes`` serves their reads straight from the uint8 array ``engine.load`` holds,
through ``io.BufferedReader`` so that the many small reads of a pickle stay in C.
"""
import io

__all__ = ["open_bytes"]


class _RawView(io.RawIOBase):
    """The raw, seekable, read-only file whose content is the 1-d uint8 array ``data``."""

    def __init__(self, data):
        super().__init__()
        self._buffer = memoryview(data).cast("B")
        self._position = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._position

    def seek(self, offset, whence=io.SEEK_SET):
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._buffer)}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._position = base + offset
        return self._position

    def readinto(self, target):
        chunk = self._buffer[self._position:self._position + len(target)]
        memoryview(target).cast("B")[:len(chunk)] = chunk
        self._position += len(chunk)
        return len(chunk)


def open_bytes(data):
    """A buffered binary file reading the uint8 array ``data`` (no copy of the array is made)."""
    return io.BufferedReader(_RawView(data))
