"""Convolutions as timm creates them (``create_conv2d``), shared by its TensorFlow-ported families: padded as
PyTorch pads (half the receptive field) or as TensorFlow pads ("same", per input where no fixed padding gives it,
``Conv2dSame``), MixNet's mixed-kernel convolutions (``MixedConv2d``), CondConv's per-example mixtures of
expert kernels (``CondConv2d``), and pooling with TensorFlow's "same" padding (``AvgPool2dSame``,
``MaxPool2dSame``), and the group count of a grouped convolution given its group size (``num_groups``).
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

__all__ = ["num_groups", "create_conv2d", "Conv2dSame", "MixedConv2d", "CondConv2d", "AvgPool2dSame", "MaxPool2dSame"]


def pair(value):
    """``value`` as a (height, width) tuple: a sequence as it is, a number twice."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def num_groups(group_size, channels):
    """The groups of a convolution over ``channels`` with ``group_size`` channels per group (None or 0: one group;
    1: depthwise)."""
    if not group_size:
        return 1
    if channels % group_size:
        raise ValueError(f"{channels} channels do not split into groups of {group_size}")
    return channels // group_size


def get_padding(kernel_size, stride=1, dilation=1):
    """timm's symmetric (PyTorch-style) padding: half the receptive field, which keeps a stride-1 map's size."""
    return ((stride - 1) + dilation * (kernel_size - 1)) // 2


def get_same_padding(size, kernel_size, stride, dilation):
    """TensorFlow's total "same" padding along one axis of length ``size``: enough for ceil(size / stride)
    outputs."""
    return max((math.ceil(size / stride) - 1) * stride + (kernel_size - 1) * dilation + 1 - size, 0)


class Conv2dSame(nn.Conv2d):
    """A convolution with TensorFlow's "same" padding, computed from each input's size: the total padding of an
    axis is split with the odd pixel at the end (bottom, right), as TensorFlow does."""

    def forward(self, x):
        x = _pad_same(x, self.kernel_size, self.stride, self.dilation)
        return super().forward(x)


def _split_channels(channels, num_groups):
    """``channels`` shared out over ``num_groups`` groups, the remainder going to the first."""
    split = [channels // num_groups] * num_groups
    split[0] += channels - sum(split)
    return split


class MixedConv2d(nn.ModuleDict):
    """MixNet's mixed convolution: the channels split into as many groups as ``kernel_size`` lists kernels, each
    group convolved with its own kernel size (``'0'``, ``'1'``...), the outputs concatenated; ``depthwise`` makes
    each group's convolution depthwise."""

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, dilation=1, depthwise=False, pad_type=""):
        super().__init__()
        in_splits = _split_channels(in_chs, len(kernel_size))
        out_splits = _split_channels(out_chs, len(kernel_size))
        self.in_channels = in_chs
        self.out_channels = out_chs
        self.splits = in_splits
        for i, (kernel, in_split, out_split) in enumerate(zip(kernel_size, in_splits, out_splits)):
            groups = in_split if depthwise else 1
            self.add_module(str(i), create_conv2d(in_split, out_split, kernel, stride, dilation, groups, pad_type))

    def forward(self, x):
        chunks = torch.split(x, self.splits, 1)
        return torch.cat([conv(chunk) for conv, chunk in zip(self.values(), chunks)], 1)


def _needs_dynamic_padding(pad_type, kernel_size, stride, dilation):
    """Whether TensorFlow's "same" padding depends on the input's size (a stride, or an even receptive field, whose
    odd pixel of padding goes at the end), so that no fixed symmetric padding gives it."""
    return pad_type == "same" and (stride > 1 or dilation * (kernel_size - 1) % 2 == 1)


def _pad_same(x, kernel_size, stride, dilation, value=0.0):
    """``x`` padded with ``value`` as TensorFlow's "same" convolution or pooling pads it: the total padding of each
    axis split with the odd pixel at the end (bottom, right)."""
    height, width = x.shape[-2:]
    pad_h = get_same_padding(height, kernel_size[0], stride[0], dilation[0])
    pad_w = get_same_padding(width, kernel_size[1], stride[1], dilation[1])
    return F.pad(x, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2), value=value)


class AvgPool2dSame(nn.AvgPool2d):
    """Average pooling with TensorFlow's "same" padding, computed from each input's size (timm's ``AvgPool2dSame``;
    the padded zeros count)."""

    def __init__(self, kernel_size, stride, count_include_pad=True):
        super().__init__(pair(kernel_size), pair(stride), (0, 0), count_include_pad=count_include_pad)

    def forward(self, x):
        x = _pad_same(x, self.kernel_size, self.stride, (1, 1))
        return super().forward(x)


class MaxPool2dSame(nn.MaxPool2d):
    """Max pooling with TensorFlow's "same" padding, computed from each input's size (timm's ``MaxPool2dSame``)."""

    def __init__(self, kernel_size, stride):
        super().__init__(pair(kernel_size), pair(stride), (0, 0), (1, 1))

    def forward(self, x):
        x = _pad_same(x, self.kernel_size, self.stride, self.dilation, value=-math.inf)
        return super().forward(x)


class CondConv2d(nn.Module):
    """CondConv (Yang et al. 2019, "CondConv: Conditionally Parameterized Convolutions for Efficient Inference"): a
    bias-free convolution whose kernel is, for each example, the mixture of ``num_experts`` expert kernels weighted
    by that example's routing weights (``forward(x, routing_weights)``, routing of shape (N, num_experts)).

    ``weight`` holds one flattened kernel per expert, (num_experts, out * in / groups * kh * kw), as timm stores
    it. The examples' kernels are applied at once as one convolution grouped over the batch. Padding as
    ``create_conv2d`` pads ('same': TensorFlow's, per input where no fixed padding gives it)."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=1, groups=1, pad_type="", num_experts=4):
        super().__init__()
        self.in_channels = in_chs
        self.out_channels = out_chs
        self.kernel_size = (kernel_size, kernel_size)
        self.stride = (stride, stride)
        self.dilation = (dilation, dilation)
        self.groups = groups
        self.num_experts = num_experts
        self.dynamic_padding = _needs_dynamic_padding(pad_type, kernel_size, stride, dilation)
        padding = 0 if self.dynamic_padding else get_padding(kernel_size, stride, dilation)
        self.padding = (padding, padding)
        self.weight_shape = (out_chs, in_chs // groups) + self.kernel_size
        self.weight = nn.Parameter(torch.empty(num_experts, math.prod(self.weight_shape)))
        self.reset_parameters()

    def expert_kernels(self):
        """Each expert's kernel as a view of ``weight`` in the (out, in / groups, kh, kw) layout, for initialising
        them one by one."""
        return [self.weight[i].view(self.weight_shape) for i in range(self.num_experts)]

    def reset_parameters(self):
        """Every expert kernel initialised as a convolution's default (Kaiming uniform, a = sqrt(5))."""
        for kernel in self.expert_kernels():
            nn.init.kaiming_uniform_(kernel, a=math.sqrt(5))

    def forward(self, x, routing_weights):
        batch, channels, height, width = x.shape
        kernels = routing_weights @ self.weight
        kernels = kernels.reshape((batch * self.out_channels,) + self.weight_shape[1:])
        x = x.reshape(1, batch * channels, height, width)
        if self.dynamic_padding:
            x = _pad_same(x, self.kernel_size, self.stride, self.dilation)
        out = F.conv2d(x, kernels, None, self.stride, self.padding, self.dilation, self.groups * batch)
        return out.reshape(batch, self.out_channels, out.shape[-2], out.shape[-1])


def create_conv2d(in_chs, out_chs, kernel_size, stride=1, dilation=1, groups=1, pad_type="", bias=False,
                  num_experts=0):
    """A convolution padded as ``pad_type`` says: '' pads half the receptive field (PyTorch style); 'same' pads as
    TensorFlow, statically and symmetrically where that is exact (stride 1, odd receptive field), otherwise per
    input (``Conv2dSame``). A list of kernel sizes gives a ``MixedConv2d`` (depthwise when ``groups`` is the
    input's channels); ``num_experts`` a ``CondConv2d`` of that many experts."""
    if isinstance(kernel_size, list):
        return MixedConv2d(in_chs, out_chs, kernel_size, stride, dilation, groups == in_chs, pad_type)
    if num_experts:
        return CondConv2d(in_chs, out_chs, kernel_size, stride, dilation, groups, pad_type, num_experts)
    if _needs_dynamic_padding(pad_type, kernel_size, stride, dilation):
        return Conv2dSame(in_chs, out_chs, kernel_size, stride=stride, dilation=dilation, groups=groups, bias=bias)
    padding = get_padding(kernel_size, stride, dilation)
    return nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups,
                     bias=bias)
