"""The blocks of timm's EfficientNet builder, with timm's module names: convolutions padded as TensorFlow pads them
("same"), BatchNorm fused with an activation, squeeze-and-excitation, and the four block kinds the builder strings
name: ``cn`` (ConvBnAct), ``ds`` (DepthwiseSeparableConv), ``ir`` (InvertedResidual, MBConv) and ``er``
(EdgeResidual, FusedMBConv).
"""
import math

import engine.nn.functional as F
from engine import nn

from .._utils import _make_divisible
from . import _layers
from ._layers import drop_path_module

__all__ = ["create_conv2d", "Conv2dSame", "BatchNormAct2d", "SqueezeExcite", "ConvBnAct",
           "DepthwiseSeparableConv", "InvertedResidual", "EdgeResidual"]


def _symmetric_padding(kernel_size, stride=1, dilation=1):
    """PyTorch-style padding: half the receptive field, which keeps a stride-1 map's size."""
    return ((stride - 1) + dilation * (kernel_size - 1)) // 2


def _same_padding(size, kernel_size, stride, dilation):
    """TensorFlow's total "same" padding along one axis of length ``size``: enough for ceil(size / stride)
    outputs."""
    return max((math.ceil(size / stride) - 1) * stride + (kernel_size - 1) * dilation + 1 - size, 0)


class Conv2dSame(nn.Conv2d):
    """A convolution with TensorFlow's "same" padding, computed from each input's size: the total padding of an
    axis is split with the odd pixel at the end (bottom, right), as TensorFlow does."""

    def forward(self, x):
        height, width = x.shape[-2:]
        pad_h = _same_padding(height, self.kernel_size[0], self.stride[0], self.dilation[0])
        pad_w = _same_padding(width, self.kernel_size[1], self.stride[1], self.dilation[1])
        x = F.pad(x, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
        return super().forward(x)


def create_conv2d(in_chs, out_chs, kernel_size, stride=1, dilation=1, groups=1, pad_type="", bias=False):
    """A convolution padded as ``pad_type`` says: '' pads half the receptive field (PyTorch style); 'same' pads as
    TensorFlow, statically and symmetrically where that is exact (stride 1, odd receptive field), otherwise per
    input (``Conv2dSame``)."""
    if pad_type == "same" and (stride > 1 or dilation * (kernel_size - 1) % 2):
        return Conv2dSame(in_chs, out_chs, kernel_size, stride=stride, dilation=dilation, groups=groups, bias=bias)
    padding = _symmetric_padding(kernel_size, stride, dilation)
    return nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups,
                     bias=bias)


class BatchNormAct2d(_layers.BatchNormAct2d):
    """BatchNorm, then ``act_layer`` (an identity with ``apply_act=False``), in timm's single-module layout."""

    def __init__(self, num_features, eps=1e-5, act_layer=nn.ReLU, apply_act=True):
        super().__init__(num_features, eps=eps, apply_act=apply_act)
        self.act = act_layer() if apply_act else nn.Identity()


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation: the channels' global means through a 1x1 reduction to ``rd_ratio`` of them, the
    activation and a 1x1 expansion give a sigmoid gate that scales each channel."""

    def __init__(self, in_chs, rd_ratio=0.25, act_layer=nn.ReLU):
        super().__init__()
        rd_channels = round(in_chs * rd_ratio)
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1)
        self.act1 = act_layer()
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.conv_reduce(scale)
        scale = self.act1(scale)
        scale = self.conv_expand(scale)
        return x * self.gate(scale)


def _se_module(chs, se_ratio, act_layer):
    """Squeeze-and-excitation over ``chs`` channels, or an identity without ``se_ratio``."""
    return SqueezeExcite(chs, se_ratio, act_layer) if se_ratio else nn.Identity()


class _Residual(nn.Module):
    """A block whose output is added to its input where shapes allow (``has_skip``), after stochastic depth."""

    def residual(self, x, shortcut):
        """``x`` plus the block's input when the block has a skip connection."""
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


class ConvBnAct(_Residual):
    """A convolution, BatchNorm and activation; with ``skip``, added to the input where shapes allow."""

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, dilation=1, skip=False, pad_type="",
                 act_layer=nn.ReLU, eps=1e-5, drop_path_rate=0.0):
        super().__init__()
        self.has_skip = skip and stride == 1 and in_chs == out_chs
        self.conv = create_conv2d(in_chs, out_chs, kernel_size, stride, dilation, pad_type=pad_type)
        self.bn1 = BatchNormAct2d(out_chs, eps, act_layer)
        self.aa = nn.Identity()
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv(x)
        x = self.bn1(x)
        x = self.aa(x)
        return self.residual(x, shortcut)


class DepthwiseSeparableConv(_Residual):
    """A depthwise convolution with BatchNorm and activation, squeeze-and-excitation, then a pointwise convolution
    with BatchNorm (and activation with ``pw_act``); residual unless ``noskip`` or the shape changes."""

    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, dilation=1, se_ratio=0.0, pw_act=False,
                 noskip=False, pad_type="", act_layer=nn.ReLU, eps=1e-5, drop_path_rate=0.0):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        self.conv_dw = create_conv2d(in_chs, in_chs, dw_kernel_size, stride, dilation, groups=in_chs,
                                     pad_type=pad_type)
        self.bn1 = BatchNormAct2d(in_chs, eps, act_layer)
        self.aa = nn.Identity()
        self.se = _se_module(in_chs, se_ratio, act_layer)
        self.conv_pw = create_conv2d(in_chs, out_chs, 1, pad_type=pad_type)
        self.bn2 = BatchNormAct2d(out_chs, eps, act_layer, apply_act=pw_act)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pw(x)
        x = self.bn2(x)
        return self.residual(x, shortcut)


class InvertedResidual(_Residual):
    """MobileNetV2's inverted bottleneck (MBConv): a pointwise expansion to ``exp_ratio`` times the channels, a
    depthwise convolution, squeeze-and-excitation (``se_ratio`` of the input's channels), a linear pointwise
    projection; residual unless ``noskip`` or the shape changes."""

    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, dilation=1, exp_ratio=1.0, se_ratio=0.0,
                 noskip=False, pad_type="", act_layer=nn.ReLU, eps=1e-5, drop_path_rate=0.0):
        super().__init__()
        mid_chs = _make_divisible(in_chs * exp_ratio, 8)
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        self.conv_pw = create_conv2d(in_chs, mid_chs, 1, pad_type=pad_type)
        self.bn1 = BatchNormAct2d(mid_chs, eps, act_layer)
        self.conv_dw = create_conv2d(mid_chs, mid_chs, dw_kernel_size, stride, dilation, groups=mid_chs,
                                     pad_type=pad_type)
        self.bn2 = BatchNormAct2d(mid_chs, eps, act_layer)
        self.aa = nn.Identity()
        self.se = _se_module(mid_chs, se_ratio / exp_ratio, act_layer)
        self.conv_pwl = create_conv2d(mid_chs, out_chs, 1, pad_type=pad_type)
        self.bn3 = BatchNormAct2d(out_chs, eps, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv_pw(x)
        x = self.bn1(x)
        x = self.conv_dw(x)
        x = self.bn2(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pwl(x)
        x = self.bn3(x)
        return self.residual(x, shortcut)


class EdgeResidual(_Residual):
    """EfficientNetV2's fused MBConv: one full convolution expands to ``exp_ratio`` times the channels (replacing
    the pointwise expansion and the depthwise convolution), optional squeeze-and-excitation, a linear pointwise
    projection; residual unless ``noskip`` or the shape changes."""

    def __init__(self, in_chs, out_chs, exp_kernel_size=3, stride=1, dilation=1, exp_ratio=1.0, se_ratio=0.0,
                 noskip=False, pad_type="", act_layer=nn.ReLU, eps=1e-5, drop_path_rate=0.0):
        super().__init__()
        mid_chs = _make_divisible(in_chs * exp_ratio, 8)
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        self.conv_exp = create_conv2d(in_chs, mid_chs, exp_kernel_size, stride, dilation, pad_type=pad_type)
        self.bn1 = BatchNormAct2d(mid_chs, eps, act_layer)
        self.aa = nn.Identity()
        self.se = _se_module(mid_chs, se_ratio / exp_ratio, act_layer)
        self.conv_pwl = create_conv2d(mid_chs, out_chs, 1, pad_type=pad_type)
        self.bn2 = BatchNormAct2d(out_chs, eps, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv_exp(x)
        x = self.bn1(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pwl(x)
        x = self.bn2(x)
        return self.residual(x, shortcut)
