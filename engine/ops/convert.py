"""Moves between dtypes and devices, and copies: differentiable, so ``x.double()`` keeps the graph."""
import warnings

import numpy as np

from .._device import device_of, move
from .._layout import copy_preserving, copy_preserving_format, in_memory_format
from ..autograd import tracing
from ..autograd.double_backward import constant
from ..autograd.function import Function
from ..tensor import Tensor, register_method
from ._common import as_operand, check_broadcast, xp_of


class ToDtype(Function):
    uses_inputs = False

    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, x):
        if x.dtype.kind == "c" and self.dtype.np.kind == "b":  # true where either part is nonzero, as torch's
            return x != 0
        if x.dtype.kind == "c" and not self.dtype.is_complex:
            warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=4)
            x = x.real
        # values out of the target's range (70000 to float16: inf) convert as in torch, without numpy's warning
        with np.errstate(over="ignore", invalid="ignore"):
            return copy_preserving(x, xp_of(x), self.dtype.np)

    def backward(self, gy):
        if gy.dtype.kind == "c" and self.input_meta[0][1].kind != "c":  # d(complex(x))/dx: the real part
            return gy.real
        return gy

    def backward_tensors(self, gy):
        if gy.is_complex() and self.input_meta[0][1].kind != "c":  # as backward, without a cast's warning
            return gy.real
        return gy


class ToDevice(Function):
    uses_inputs, moves_only = False, True

    def __init__(self, device, non_blocking=False):
        self.device, self.non_blocking = device, non_blocking

    def forward(self, x):
        self.source = device_of(x)
        return move(x, self.device, self.non_blocking)

    def backward(self, gy):
        return move(gy, self.source)

    def backward_tensors(self, gy):
        return gy.to(self.source)


class Alias(Function):
    """The same array under a new tensor (``detach`` while a graph is traced, so replays see it)."""

    uses_inputs = False
    is_view = True

    def forward(self, x):
        return x


class Clone(Function):
    """A copy laid out in ``memory_format`` (``preserve_format``: the input's layout, as torch's)."""

    uses_inputs, moves_only = False, True

    def __init__(self, memory_format=None):
        self.memory_format = memory_format

    def forward(self, x):
        return copy_preserving_format(x, self.memory_format, xp_of(x))

    def backward(self, gy):
        return gy

    def backward_tensors(self, gy):
        return gy


class Contiguous(Function):
    """A copy laid out in ``memory_format``: row-major (by default) or channels-last."""

    uses_inputs, moves_only = False, True

    def __init__(self, memory_format=None):
        self.memory_format = memory_format

    def forward(self, x):
        y = in_memory_format(x, self.memory_format, xp_of(x))
        self.is_view = y is x  # recorded by a trace on an array already laid out so (see ``contiguous``)
        return y

    def backward(self, gy):
        return gy

    def backward_tensors(self, gy):
        return gy


def to_dtype(x, dtype):
    return ToDtype(dtype)(x)


def to_device(x, device, non_blocking=False):
    return ToDevice(device, non_blocking)(x)


def clone(input, memory_format=None):
    return Clone(memory_format)(input)


def contiguous(x, memory_format=None):
    """``x`` itself when it is laid out in ``memory_format`` (row-major by default), else a copy that is. While a
    trace records (``nn.Graph``, ONNX export) the op is recorded either way (a no-op on a laid-out array): a layout
    can depend on the input's size (a size-1 side reads as either format), and the traces of two sizes must hold
    the same ops."""
    if x.is_contiguous(memory_format) and tracing.active is None:
        return x
    return Contiguous(memory_format)(x)


class Copy(Function):
    """``dst.copy_(src)``: overwrite dst (broadcasting src); the gradient flows to src only."""

    uses_inputs = False
    inplace = True

    def forward(self, dst, src):
        dst[...] = move(src, device_of(dst))
        self.src_device = device_of(src)
        return dst

    def backward(self, gy):
        return xp_of(gy).zeros_like(gy), move(gy, self.src_device)

    def backward_tensors(self, gy):
        return constant(xp_of(gy._data).zeros_like(gy._data)), gy.to(self.src_device)


def copy_(self, other, non_blocking=False):
    """Overwrite ``self`` with ``other`` (torch's name for the source) broadcast to its shape; torch's errors when
    the shapes do not broadcast or the broadcast shape is not ``self``'s."""
    src = other
    if not isinstance(src, Tensor):
        src = as_operand(src)
    if tuple(src.shape) != tuple(self.shape):
        check_broadcast(self, src)
        shape = np.broadcast_shapes(tuple(self.shape), tuple(src.shape))
        if shape != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    return Copy()(self, src)


register_method(to_dtype, "_to_dtype")
register_method(clone)
register_method(contiguous)
register_method(copy_)

__all__ = ["clone"]
