"""Selective Kernel ResNets (Li et al. 2019, "Selective Kernel Networks"): skresnet18, skresnet34 and
skresnext50_32x4d, and timm's variants without published weights, skresnet50 and skresnet50d.

A ResNet whose 3x3 convolution (the first of a basic block, the middle of a bottleneck) is a selective kernel
convolution: parallel paths with different receptive fields (3x3 kernels dilated to cover 3x3 and 5x5) each with
norm and ReLU, and an attention that pools their sum, squeezes it through a 1x1 bottleneck and gives, per channel,
a softmax across the paths with which their outputs are mixed. timm's variants may split the input channels
between the paths to keep the parameter count down. The models are timm's ResNet
(``flowvision.models.timm_families.resnet``) built with these blocks; model names, module names,
``state_dict`` keys, initialisation and the published weights follow timm's ``sknet`` module, so its checkpoints
load with ``strict=True``.
"""
import math

import engine as torch
from engine import nn

from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._layers import ConvNormAct, drop_path_module
from .resnet import ResNet

# The classes are reached through this module; the registry adds the model entrypoints.
__all__ = []


class SelectiveKernelAttn(nn.Module):
    """The path weights from the paths' stacked outputs (N, paths, C, H, W): their sum averaged over space, a
    bias-free 1x1 bottleneck ``fc_reduce`` with norm and ReLU, a bias-free 1x1 ``fc_select`` to one logit per
    path and channel, and a softmax across the paths, as (N, paths, C, 1, 1)."""

    def __init__(self, channels, num_paths, attn_channels):
        super().__init__()
        self.num_paths = num_paths
        self.fc_reduce = nn.Conv2d(channels, attn_channels, kernel_size=1, bias=False)
        self.bn = nn.BatchNorm2d(attn_channels)
        self.act = nn.ReLU(inplace=True)
        self.fc_select = nn.Conv2d(attn_channels, channels * num_paths, kernel_size=1, bias=False)

    def forward(self, x):
        x = x.sum(1).mean((2, 3), keepdim=True)
        x = self.fc_reduce(x)
        x = self.bn(x)
        x = self.act(x)
        x = self.fc_select(x)
        x = x.reshape(x.shape[0], self.num_paths, x.shape[1] // self.num_paths, 1, 1)
        return torch.softmax(x, dim=1)


class SelectiveKernel(nn.Module):
    """Selective kernel convolution: one path per entry of ``kernel_size``, each a 3x3 convolution dilated to span
    that kernel (times ``dilation``), at ``stride``, with ``groups`` groups (at most ``out_channels``), norm and
    ReLU; ``attn`` weighs the paths per channel and the output is their weighted sum.

    With ``split_input`` each path sees its own slice of the input channels, else all of them. The attention's
    bottleneck has ``out_channels * rd_ratio`` channels rounded to a multiple of ``rd_divisor`` (at least
    ``rd_divisor``, never more than 10% below).
    """

    def __init__(self, in_channels, out_channels, kernel_size=(3, 5), stride=1, dilation=1, groups=1,
                 rd_ratio=1 / 16, rd_divisor=8, split_input=True):
        super().__init__()
        num_paths = len(kernel_size)
        if any(k < 3 or k % 2 == 0 for k in kernel_size):
            raise ValueError(f"kernel sizes must be odd and at least 3, got {kernel_size}")
        if split_input and in_channels % num_paths:
            raise ValueError(f"split_input needs in_channels ({in_channels}) divisible by the paths ({num_paths})")
        self.split_input = split_input
        self.path_channels = in_channels // num_paths if split_input else in_channels
        groups = min(out_channels, groups)
        self.paths = nn.ModuleList([
            ConvNormAct(self.path_channels, out_channels, 3, stride=stride, padding=dilation * (k - 1) // 2,
                        dilation=dilation * (k - 1) // 2, groups=groups)
            for k in kernel_size
        ])
        attn_channels = _make_divisible(out_channels * rd_ratio, rd_divisor)
        self.attn = SelectiveKernelAttn(out_channels, num_paths, attn_channels)

    def forward(self, x):
        if self.split_input:
            inputs = torch.split(x, self.path_channels, 1)
        else:
            inputs = [x] * len(self.paths)
        x = torch.stack([path(part) for path, part in zip(self.paths, inputs)], dim=1)
        x = x * self.attn(x)
        return x.sum(1)


class SelectiveKernelBasic(nn.Module):
    """A basic block whose first 3x3 convolution (strided) is a selective kernel convolution, then a 3x3
    convolution and norm, drop-path, and the shortcut. ``sk_kwargs`` configure the selective kernel."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, dilation=1,
                 first_dilation=None, sk_kwargs=None, drop_path_rate=0.0):
        super().__init__()
        if cardinality != 1 or base_width != 64:
            raise ValueError("SelectiveKernelBasic supports only cardinality=1 and base_width=64")
        first_dilation = first_dilation or dilation
        outplanes = planes * self.expansion
        self.conv1 = SelectiveKernel(inplanes, planes, stride=stride, dilation=first_dilation, **(sk_kwargs or {}))
        self.conv2 = ConvNormAct(planes, outplanes, 3, padding=dilation, dilation=dilation, apply_act=False)
        self.act = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv2.bn.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act(x)
        return x


class SelectiveKernelBottleneck(nn.Module):
    """A bottleneck whose 3x3 convolution (grouped, strided) is a selective kernel convolution: 1x1 reduce to
    ``floor(planes * base_width / 64) * cardinality`` channels, selective kernel, 1x1 expand and norm, drop-path,
    and the shortcut. ``sk_kwargs`` configure the selective kernel."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, dilation=1,
                 first_dilation=None, sk_kwargs=None, drop_path_rate=0.0):
        super().__init__()
        first_dilation = first_dilation or dilation
        width = int(math.floor(planes * (base_width / 64)) * cardinality)
        outplanes = planes * self.expansion
        self.conv1 = ConvNormAct(inplanes, width, 1)
        self.conv2 = SelectiveKernel(width, width, stride=stride, dilation=first_dilation, groups=cardinality,
                                     **(sk_kwargs or {}))
        self.conv3 = ConvNormAct(width, outplanes, 1, apply_act=False)
        self.act = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv3.bn.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.conv3(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act(x)
        return x


def _create_skresnet(variant, pretrained, block, layers, sk_kwargs, kwargs, **model_args):
    """Build a registered variant (no zeroed last norms, as in timm): its settings overridden by the caller's
    ``kwargs``."""
    model_args = dict(block=block, layers=layers, block_args=dict(sk_kwargs=sk_kwargs), zero_init_last=False,
                      **model_args)
    return build_model(ResNet, variant, pretrained, **dict(model_args, **kwargs))


# timm's lighter selective kernels for the basic-block models: split inputs, a wider attention bottleneck
_SPLIT = dict(rd_ratio=1 / 8, rd_divisor=16, split_input=True)


@register_model
def skresnet18(pretrained=False, **kwargs):
    """SK-ResNet-18: selective kernel basic blocks 2-2-2-2 with split inputs, 7x7 stem."""
    return _create_skresnet("skresnet18", pretrained, SelectiveKernelBasic, (2, 2, 2, 2), _SPLIT, kwargs)


@register_model
def skresnet34(pretrained=False, **kwargs):
    """SK-ResNet-34: selective kernel basic blocks 3-4-6-3 with split inputs, 7x7 stem."""
    return _create_skresnet("skresnet34", pretrained, SelectiveKernelBasic, (3, 4, 6, 3), _SPLIT, kwargs)


@register_model
def skresnet50(pretrained=False, **kwargs):
    """SK-ResNet-50: selective kernel bottlenecks 3-4-6-3 with split inputs (timm's default attention width), 7x7
    stem."""
    return _create_skresnet("skresnet50", pretrained, SelectiveKernelBottleneck, (3, 4, 6, 3),
                            dict(split_input=True), kwargs)


@register_model
def skresnet50d(pretrained=False, **kwargs):
    """SK-ResNet-50-D: selective kernel bottlenecks 3-4-6-3 with split inputs, deep stem (32, 32, 64), average-pool
    shortcuts."""
    return _create_skresnet("skresnet50d", pretrained, SelectiveKernelBottleneck, (3, 4, 6, 3),
                            dict(split_input=True), kwargs, stem_width=32, stem_type="deep", avg_down=True)


@register_model
def skresnext50_32x4d(pretrained=False, **kwargs):
    """SK-ResNeXt-50 32x4d, the paper's SKNet-50: selective kernel bottlenecks 3-4-6-3 in 32 groups of 4 channels
    (per 64), every path on all inputs, 7x7 stem."""
    return _create_skresnet("skresnext50_32x4d", pretrained, SelectiveKernelBottleneck, (3, 4, 6, 3),
                            dict(rd_ratio=1 / 16, rd_divisor=32, split_input=False), kwargs, cardinality=32,
                            base_width=4)
