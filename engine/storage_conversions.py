"""What torch's two storage classes (``engine.storage``) share beyond their bytes: the conversions of their
elements into a new ``TypedStorage`` (``s.double()``, ``s.bool()``: an untyped storage's elements are its bytes),
the sharing queries (a storage here is never in shared or pinned memory), and the reading of raw buffers in a
given byte order behind ``UntypedStorage.from_buffer`` and ``TypedStorage.from_buffer``.
"""
import sys

import numpy as np

from . import _dtype

_NO_ORDER = object()  # from_buffer's byte_order left out, which only a one-byte integer dtype may


class StorageQueries:
    """What both storage classes answer alike: conversions of their elements (an untyped storage's are its
    bytes) into a new TypedStorage (``s.double()``), and the sharing queries (never shared nor pinned here)."""

    def _converted(self, d):
        if getattr(self, "dtype", None) is d:
            return self
        values = self._elements()
        from .storage import TypedStorage, UntypedStorage
        return TypedStorage(wrap_storage=UntypedStorage._wrap(values.astype(d.np).view(np.uint8)), dtype=d,
                            _internal=True)

    def double(self):
        return self._converted(_dtype.float64)

    def float(self):
        return self._converted(_dtype.float32)

    def half(self):
        return self._converted(_dtype.float16)

    def bfloat16(self):
        return self._converted(_dtype.bfloat16)

    def long(self):
        return self._converted(_dtype.int64)

    def int(self):
        return self._converted(_dtype.int32)

    def short(self):
        return self._converted(_dtype.int16)

    def char(self):
        return self._converted(_dtype.int8)

    def byte(self):
        return self._converted(_dtype.uint8)

    def bool(self):
        return self._converted(_dtype.bool_)

    def complex_float(self):
        return self._converted(_dtype.complex64)

    def complex_double(self):
        return self._converted(_dtype.complex128)

    def is_shared(self):
        return False

    def is_pinned(self, device="cuda"):
        return False

    is_sparse = False


def buffer_values(buffer, byte_order, count, offset, d):
    """``count`` elements of dtype ``d`` (all that follow when negative) from byte ``offset`` of ``buffer``, read
    in ``byte_order`` (each part of a complex number on its own), as a new 1-d array in native order; torch's
    errors, in its order, for a bad order, offset or count."""
    if byte_order is None:
        raise TypeError("argument 2 must be str, not None")
    if byte_order is _NO_ORDER and d not in (_dtype.uint8, _dtype.int8):
        raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
    if d not in (_dtype.uint8, _dtype.int8) and byte_order not in ("big", "little", "native"):  # bytes: no order
        raise ValueError(f"invalid byte_order '{byte_order}' (expected 'big', 'little', or 'native')")
    raw = np.frombuffer(buffer, np.uint8)
    if offset < 0 or offset > raw.size:
        raise ValueError(f"offset must be non-negative and no greater than buffer length ({offset}) , but got "
                         f"{raw.size}")
    if count < 0:
        if (raw.size - offset) % d.itemsize:
            raise ValueError(f"buffer size ({raw.size}) must be a multiple of element size ({d.itemsize})")
        count = (raw.size - offset) // d.itemsize
    elif offset + count * d.itemsize > raw.size:
        raise ValueError(f"buffer has only {raw.size - offset} elements after offset {offset}, but specified a size "
                         f"of {count}")
    part = d.itemsize // 2 if d.is_complex else d.itemsize
    chunks = raw[offset:offset + count * d.itemsize].reshape(-1, part)
    if byte_order in ("big", "little") and byte_order != sys.byteorder:
        chunks = chunks[:, ::-1]
    values = np.ascontiguousarray(chunks).reshape(-1)
    return values != 0 if d is _dtype.bool_ else values.view(d.np)
