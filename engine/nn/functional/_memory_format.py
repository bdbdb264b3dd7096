"""The layout torch gives an op's 4-D output (5-D too for ``channel_shuffle``): channels-last when its input is
laid out so.

torch's CPU and CUDA kernels for convolution, BatchNorm, GroupNorm, pooling and interpolation write a channels-last
output for a channels-last input (a convolution also for a channels-last weight); pointwise ops keep their input's
layout, as numpy's do. The values are the same either way; what differs is the memory order, and dropout draws its
mask in memory order. So a model that turns an NHWC map into NCHW with ``permute`` (or that a user converted with
``model.to(memory_format=channels_last)``) drops the same elements here as in torch only when these ops lay their
outputs out as torch's do. The check costs 2 us and copies nothing on NCHW inputs, the usual case.

The output's array is replaced, not copied through an op: a layout is no computation, so traces (``nn.Graph``,
ONNX export) record the same ops whatever the strides of the input they were traced with, and the gradient passes
unchanged.
"""
from ... import _layout
from ..._device import array_module


def like_input(input, out):
    """``out`` laid out channels-last when ``input`` is (as torch reads strides)."""
    if _layout.strides_like_channels_last(input._data):
        _make_channels_last(out, input)
    return out


def like_conv_input(input, weight, out):
    """A 2-D convolution's (or transposed convolution's) output laid out channels-last when its input or its weight
    is."""
    if _layout.strides_like_channels_last(input._data) or _layout.strides_like_channels_last(weight._data):
        _make_channels_last(out, input)
    return out


def like_input_any_rank(input, out):
    """``out`` laid out in ``input``'s suggested memory format, channels-last 4-D or 5-D (``channel_shuffle``)."""
    fmt = _layout.suggested_format(input._data)
    if fmt is not _layout.contiguous_format:
        _make_channels_last(out, input, fmt)
    return out


def _make_channels_last(out, input, fmt=_layout.channels_last):
    """Lay out the fresh output ``out`` in ``fmt`` in place of its array; an output that shares the input's memory
    (a view), or has another rank than ``fmt``'s, keeps its layout."""
    data = out._data
    if data.ndim != input._data.ndim or data.size == 0 or _layout.is_contiguous_as(data, fmt):
        return
    if data.ndim != (4 if fmt is _layout.channels_last else 5):
        return
    xp = array_module(data)
    if xp.may_share_memory(data, input._data):
        return
    out._data = _layout.in_memory_format(data, fmt, xp)
