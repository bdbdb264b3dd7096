"""The layout torch gives an op's 4-D output: channels-last when its input is laid out so.

torch's CPU and CUDA kernels for convolution, BatchNorm, GroupNorm, pooling and interpolation write a channels-last
output for a channels-last input (a convolution also for a channels-last weight); pointwise ops keep their input's
layout, as numpy's do. The values are the same either way; what differs is the memory order, and dropout draws its
mask in memory order. So a model that turns an NHWC map into NCHW with ``permute`` (or that a user converted with
``model.to(memory_format=channels_last)``) drops the same elements here as in torch only when these ops lay their
outputs out as torch's do. The check and the copy cost nothing on NCHW inputs, the usual case.
"""
from ... import _layout


def like_input(input, out):
    """``out`` laid out channels-last when ``input`` is (as torch reads strides), else ``out`` itself."""
    return _as_channels_last(out) if _layout.strides_like_channels_last(input._data) else out


def like_conv_input(input, weight, out):
    """A 2-D convolution's (or transposed convolution's) output laid out channels-last when its input or its weight
    is, else ``out`` itself."""
    if _layout.strides_like_channels_last(input._data) or _layout.strides_like_channels_last(weight._data):
        return _as_channels_last(out)
    return out


def _as_channels_last(out):
    if out.dim() != 4 or out.numel() == 0 or out.is_contiguous(memory_format=_layout.channels_last):
        return out
    return out.contiguous(memory_format=_layout.channels_last)
