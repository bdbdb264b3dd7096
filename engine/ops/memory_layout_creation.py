"""Tensors created with a chosen memory geometry: ``empty_strided`` (any strides), ``empty_permuted`` (dims laid out
in a given order) and ``frombuffer`` (a view of a Python buffer's bytes), as torch's."""
import warnings

import numpy as np

from .. import _dtype
from .._device import factory_device, xp_for
from ..autograd import grad_mode
from ..tensor import _new, register_method


def _empty_flat(count, dtype, device):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return xp_for(factory_device(device) or "cpu").empty(count, d.np)


def _leaf(arr, requires_grad):
    t = grad_mode.mark_inference(_new(arr))
    if requires_grad:
        t.requires_grad_(True)
    return t


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of ``size`` whose element strides are ``stride``, over the least memory that holds
    them (``1 + sum((size - 1) * stride)`` elements; none when a size is 0)."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if any(s < 0 for s in size + stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    count = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    flat = _empty_flat(count, dtype, device)
    xp = xp_for(factory_device(device) or "cpu")
    arr = xp.lib.stride_tricks.as_strided(flat, size, tuple(s * flat.itemsize for s in stride))
    return _leaf(arr, requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of ``size`` whose dims lie in memory in the order ``physical_layout`` (outermost
    first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is channels-last."""
    size, order = tuple(int(s) for s in size), tuple(int(d) for d in physical_layout)
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    if any(not 0 <= d < len(size) for d in order):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-len(size)}, {len(size) - 1}], "
                         f"but got {max(order, key=lambda d: not 0 <= d < len(size))})")
    count = int(np.prod(size, dtype=np.int64))
    physical = _empty_flat(count, dtype, device).reshape(tuple(size[d] for d in order))
    return _leaf(physical.transpose(tuple(int(i) for i in np.argsort(order))), requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    """``empty_strided`` with this tensor's dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor viewing ``count`` elements (all, for -1) of ``buffer`` (anything with the buffer protocol) from
    byte ``offset``: it shares the buffer's memory. A read-only buffer (``bytes``) warns as torch's; its tensor
    stays read-only (numpy refuses writes into it, where torch's writes into the bytes object)."""
    d = _dtype.to_dtype(dtype)
    view = memoryview(buffer).cast("B")
    length, itemsize = view.nbytes, np.dtype(d.np).itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (length - offset) // itemsize
    elif offset + count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor.", UserWarning, stacklevel=2)
    return _leaf(np.frombuffer(view, dtype=d.np, count=count, offset=offset), requires_grad)


register_method(new_empty_strided)

__all__ = ["empty_permuted", "empty_strided", "frombuffer"]
