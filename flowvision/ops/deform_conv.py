"""Deformable convolution (torchvision.ops.deform_conv2d / DeformConv2d): a convolution whose kernel taps
sample the input at learnt offsets from their regular positions (Dai et al. 2017, DCN), each sample
optionally scaled by a learnt mask (Zhu et al. 2018, DCN v2). The kernels are the backend's
``deform_conv`` family."""
import math

import engine
from engine import backends, nn
from engine.autograd.function import Function
from engine.nn import init
from engine.nn.modules._utils import _pair


class _DeformConv2d(Function):
    """Deformable convolution on raw arrays; gradients for the input, weight, offsets, mask and bias."""

    def __init__(self, stride, padding, dilation, groups, offset_groups):
        self.args = (stride, padding, dilation, groups, offset_groups)

    def forward(self, x, weight, offset, mask, bias):
        self.kernels = backends.kernels(x, "deform_conv")
        y, self.saved = self.kernels.deform_conv2d_forward(x, weight, offset, mask, bias, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.deform_conv2d_backward(gy, self.saved)


def _check_geometry(stride, padding, dilation, kernel):
    """Strides, dilations and kernel sizes must be positive, paddings non-negative."""
    for name, value, low in (("stride", stride, 1), ("padding", padding, 0), ("dilation", dilation, 1),
                             ("kernel size", kernel, 1)):
        if min(value) < low:
            raise RuntimeError(f"deform_conv2d: {name} must be {'>= 0' if low == 0 else 'positive'}, "
                               f"got {tuple(value)}")


def _check_shapes(input, offset, weight, mask, bias, groups, offset_groups, out_size):
    """The shape rules of torchvision's kernel, each broken one named with the shapes involved."""
    n, c = input.shape[:2]
    o, c_per_group, kh, kw = weight.shape
    taps = kh * kw
    if c_per_group * groups != c:
        raise RuntimeError(f"deform_conv2d: input has {c} channels, but weight {list(weight.shape)} takes "
                           f"{c_per_group} per group for {groups} groups")
    if o % groups:
        raise RuntimeError(f"deform_conv2d: {o} output channels do not split into {groups} groups")
    if c % offset_groups:
        raise RuntimeError(f"deform_conv2d: input channels ({c}) must be a multiple of offset groups "
                           f"({offset_groups}); offset shape {list(offset.shape)}")
    if min(out_size) <= 0:
        raise RuntimeError(f"deform_conv2d: calculated output size too small: {out_size} for input "
                           f"{list(input.shape)} and weight {list(weight.shape)}")
    for name, t, channels in (("offset", offset, offset_groups * 2 * taps), ("mask", mask, offset_groups * taps)):
        if t is None:
            continue
        if t.shape[1] != channels:
            raise RuntimeError(f"deform_conv2d: {name}.shape[1] is not valid: got {t.shape[1]}, expected {channels}")
        if t.shape[0] != n:
            raise RuntimeError(f"deform_conv2d: invalid batch size of {name}: {list(t.shape)} for input "
                               f"{list(input.shape)}")
        if tuple(t.shape[2:]) != out_size:
            raise RuntimeError(f"deform_conv2d: {name} output dims {tuple(t.shape[2:])} differ from the computed "
                               f"output dims {out_size}")
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"deform_conv2d: bias of shape {list(bias.shape)} for {o} output channels")


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), mask=None):
    """Deformable convolution v1 (``mask`` None) or v2 of ``input`` (N, C, H, W) with ``weight``
    (O, C / groups, KH, KW), groups being C / weight.shape[1].

    ``offset`` (N, 2 * offset_groups * KH * KW, Ho, Wo) holds a (dy, dx) pair per tap and output
    position, moving the tap's sample away from its regular position; samples are bilinear, zero outside
    the input. ``mask`` (N, offset_groups * KH * KW, Ho, Wo) scales each sample. Each of the
    offset_groups groups of consecutive input channels has its own offsets and mask.
    """
    for name, t in (("input", input), ("offset", offset), ("weight", weight)):
        if t.dim() != 4:
            raise RuntimeError(f"deform_conv2d: {name} must be 4-D, got shape {list(t.shape)}")
    kh, kw = weight.shape[-2:]
    offset_groups = offset.shape[1] // (2 * kh * kw)
    if offset_groups == 0:
        raise RuntimeError("the shape of the offset tensor at dimension 1 is not valid. It should be a multiple "
                           f"of 2 * weight.size[2] * weight.size[3]. Got offset.shape[1]={offset.shape[1]}, "
                           f"while 2 * weight.size[2] * weight.size[3]={2 * kh * kw}")
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    _check_geometry(stride, padding, dilation, (kh, kw))
    groups = input.shape[1] // weight.shape[1]
    out_size = tuple((input.shape[2 + a] + 2 * padding[a] - dilation[a] * ((kh, kw)[a] - 1) - 1) // stride[a] + 1
                     for a in range(2))
    _check_shapes(input, offset, weight, mask, bias, max(groups, 1), offset_groups, out_size)
    for name, t in (("offset", offset), ("weight", weight), ("mask", mask), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"deform_conv2d: {name} has dtype {t.dtype}, input {input.dtype}; they must match")
    return _DeformConv2d(stride, padding, dilation, groups, offset_groups)(input, weight, offset, mask, bias)


class DeformConv2d(nn.Module):
    """Module form of :func:`deform_conv2d`: holds the weight (and bias) and takes the offsets (and
    mask) as inputs; initialised as ``nn.Conv2d``."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        self.weight = nn.Parameter(engine.empty(out_channels, in_channels // groups, *self.kernel_size))
        if bias:
            self.bias = nn.Parameter(engine.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input, offset, mask=None):
        return deform_conv2d(input, offset, self.weight, self.bias, stride=self.stride, padding=self.padding,
                             dilation=self.dilation, mask=mask)

    def __repr__(self):
        s = (f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        s += f", padding={self.padding}" if self.padding != (0, 0) else ""
        s += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        return s + ")"


__all__ = ["deform_conv2d", "DeformConv2d"]
