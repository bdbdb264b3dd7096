"""Res2Net and Res2NeXt (Gao et al. 2019, "Res2Net: A New Multi-scale Backbone Architecture").

A ResNet whose bottleneck replaces its 3x3 convolution by hierarchical residual-like connections inside the block:
the reduced map is split into ``scale`` groups of channels; each group but the last goes through its own 3x3
convolution after adding the previous group's output, so later groups see growing receptive fields, and the last
group passes unchanged. The first block of a stage (the 'stage' block: it strides or changes width) convolves every
group on its own and average-pools the last one instead. Res2NeXt groups these convolutions too (cardinality); the
'd' variants take ResNet-D's deep stem and average-pool shortcuts. The models are timm's ResNet
(``flowvision.models.timm_families.resnet``) built with this block; model names, module names, ``state_dict``
keys, initialisation and the published weights follow timm's ``res2net`` module, so its checkpoints load with
``strict=True``.
"""
import math

import engine as torch
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._layers import drop_path_module
from .resnet import ResNet

# The classes are reached through this module; the registry adds the model entrypoints.
__all__ = []


class Bottle2neck(nn.Module):
    """1x1 reduce to ``scale`` groups of ``width = floor(planes * base_width / 64) * cardinality`` channels,
    ``scale - 1`` 3x3 convolutions (``convs``, ``bns``) over the groups, the 1x1 expand, and the shortcut.

    In a normal block group i > 0 is convolved after adding the output of group i - 1 and the last group is kept;
    in a stage's first block (``stride > 1`` or a projection shortcut) each group is convolved alone, strided, and
    the last group goes through ``pool``, a 3x3 average pool at the block's stride (padding counted). One ReLU
    (``relu``) serves every activation.
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=26, dilation=1,
                 first_dilation=None, scale=4, drop_path_rate=0.0):
        super().__init__()
        if scale < 2:
            raise ValueError(f"Bottle2neck needs scale >= 2, got {scale}")
        first_dilation = first_dilation or dilation
        width = int(math.floor(planes * (base_width / 64))) * cardinality
        outplanes = planes * self.expansion
        self.width = width
        self.is_first = stride > 1 or downsample is not None
        self.conv1 = nn.Conv2d(inplanes, width * scale, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width * scale)
        self.convs = nn.ModuleList([
            nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=first_dilation, dilation=first_dilation,
                      groups=cardinality, bias=False)
            for _ in range(scale - 1)
        ])
        self.bns = nn.ModuleList([nn.BatchNorm2d(width) for _ in range(scale - 1)])
        self.pool = nn.AvgPool2d(kernel_size=3, stride=stride, padding=1) if self.is_first else None
        self.conv3 = nn.Conv2d(width * scale, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn3.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        groups = torch.split(out, self.width, 1)
        outputs = []
        group = groups[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            if i > 0:
                group = groups[i] if self.is_first else group + groups[i]
            group = conv(group)
            group = bn(group)
            group = self.relu(group)
            outputs.append(group)
        outputs.append(groups[-1] if self.pool is None else self.pool(groups[-1]))
        out = torch.cat(outputs, 1)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.drop_path is not None:
            out = self.drop_path(out)
        out = out + shortcut
        out = self.relu(out)
        return out


_D = dict(stem_type="deep", stem_width=32, avg_down=True)


def _create_res2net(variant, pretrained, layers, base_width, scale, kwargs, **model_args):
    """Build a registered variant: its settings overridden by the caller's ``kwargs``."""
    model_args = dict(block=Bottle2neck, layers=layers, base_width=base_width, block_args=dict(scale=scale),
                      **model_args)
    return build_model(ResNet, variant, pretrained, **dict(model_args, **kwargs))


@register_model
def res2net50_26w_4s(pretrained=False, **kwargs):
    """Res2Net-50 26w4s: Res2Net bottlenecks 3-4-6-3, 4 groups of 26 channels (at the first stage's width)."""
    return _create_res2net("res2net50_26w_4s", pretrained, (3, 4, 6, 3), 26, 4, kwargs)


@register_model
def res2net101_26w_4s(pretrained=False, **kwargs):
    """Res2Net-101 26w4s: Res2Net bottlenecks 3-4-23-3, 4 groups of 26 channels."""
    return _create_res2net("res2net101_26w_4s", pretrained, (3, 4, 23, 3), 26, 4, kwargs)


@register_model
def res2net50_26w_6s(pretrained=False, **kwargs):
    """Res2Net-50 26w6s: Res2Net bottlenecks 3-4-6-3, 6 groups of 26 channels."""
    return _create_res2net("res2net50_26w_6s", pretrained, (3, 4, 6, 3), 26, 6, kwargs)


@register_model
def res2net50_26w_8s(pretrained=False, **kwargs):
    """Res2Net-50 26w8s: Res2Net bottlenecks 3-4-6-3, 8 groups of 26 channels."""
    return _create_res2net("res2net50_26w_8s", pretrained, (3, 4, 6, 3), 26, 8, kwargs)


@register_model
def res2net50_48w_2s(pretrained=False, **kwargs):
    """Res2Net-50 48w2s: Res2Net bottlenecks 3-4-6-3, 2 groups of 48 channels."""
    return _create_res2net("res2net50_48w_2s", pretrained, (3, 4, 6, 3), 48, 2, kwargs)


@register_model
def res2net50_14w_8s(pretrained=False, **kwargs):
    """Res2Net-50 14w8s: Res2Net bottlenecks 3-4-6-3, 8 groups of 14 channels."""
    return _create_res2net("res2net50_14w_8s", pretrained, (3, 4, 6, 3), 14, 8, kwargs)


@register_model
def res2next50(pretrained=False, **kwargs):
    """Res2NeXt-50 4s: Res2Net bottlenecks 3-4-6-3, 4 groups of 8x4 channels convolved in 8 cardinal groups."""
    return _create_res2net("res2next50", pretrained, (3, 4, 6, 3), 4, 4, kwargs, cardinality=8)


@register_model
def res2net50d(pretrained=False, **kwargs):
    """Res2Net-50-D: Res2Net-50 26w4s with a deep stem (32, 32, 64) and average-pool shortcuts."""
    return _create_res2net("res2net50d", pretrained, (3, 4, 6, 3), 26, 4, kwargs, **_D)


@register_model
def res2net101d(pretrained=False, **kwargs):
    """Res2Net-101-D: Res2Net-101 26w4s with a deep stem (32, 32, 64) and average-pool shortcuts."""
    return _create_res2net("res2net101d", pretrained, (3, 4, 23, 3), 26, 4, kwargs, **_D)
