"""ResNeSt (Zhang et al. 2020, "ResNeSt: Split-Attention Networks").

A ResNet-D (deep stem, average-pool shortcuts) whose bottleneck 3x3 convolution is a split-attention convolution:
it computes ``radix`` groups of feature maps (within each of ``cardinality`` groups), sums them, derives from the
pooled sum one attention weight per channel and split with a softmax across the splits, and returns the weighted
sum of the splits. Strided blocks move the stride out of the convolution into a 3x3 average pool ("avd"), after it
or (``avd_first``) before it. The models are timm's ResNet (``flowvision.models.timm_families.resnet``) built with
this block; model names, module names, ``state_dict`` keys, initialisation and the published weights follow timm's
``resnest`` module, so its checkpoints load with ``strict=True``.
"""
import engine as torch
from engine import nn

from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._layers import drop_path_module
from .resnet import ResNet

# The classes are reached through this module; the registry adds the model entrypoints.
__all__ = []


class RadixSoftmax(nn.Module):
    """The split weights from the attention logits (N, radix * channels, 1, 1): a softmax across the ``radix``
    splits of each channel in each of the ``cardinality`` groups, or a sigmoid gate when there is one split.

    The logits come grouped by cardinal group, then split; the weights leave ordered by split, then cardinal group,
    as (N, radix * channels), the order of the convolution's output maps.
    """

    def __init__(self, radix, cardinality):
        super().__init__()
        self.radix = radix
        self.cardinality = cardinality

    def forward(self, x):
        batch, channels = x.shape[:2]
        if self.radix == 1:
            return torch.sigmoid(x).reshape(batch, channels)
        x = x.reshape(batch, self.cardinality, self.radix, channels // (self.cardinality * self.radix))
        x = x.transpose(1, 2)
        x = torch.softmax(x, dim=1)
        return x.reshape(batch, channels)


class SplitAttn(nn.Module):
    """Split-attention convolution: a grouped convolution ``conv`` (``groups * radix`` groups) with norm and ReLU
    gives ``radix`` splits of ``out_channels`` maps; their sum, averaged over space, goes through a grouped 1x1
    bottleneck ``fc1`` (norm, ReLU) and ``fc2`` to one logit per split and channel; ``rsoftmax`` turns them into
    weights and the output is the weighted sum of the splits.

    The bottleneck has ``in_channels * radix * rd_ratio`` channels rounded to a multiple of ``rd_divisor``
    (at least 32, never more than 10% below).
    """

    def __init__(self, in_channels, out_channels, stride=1, dilation=1, groups=1, radix=2, rd_ratio=0.25,
                 rd_divisor=8):
        super().__init__()
        self.radix = radix
        mid_channels = out_channels * radix
        attn_channels = _make_divisible(in_channels * radix * rd_ratio, rd_divisor, min_value=32)
        self.conv = nn.Conv2d(in_channels, mid_channels, kernel_size=3, stride=stride, padding=dilation,
                              dilation=dilation, groups=groups * radix, bias=False)
        self.bn0 = nn.BatchNorm2d(mid_channels)
        self.act0 = nn.ReLU(inplace=True)
        self.fc1 = nn.Conv2d(out_channels, attn_channels, kernel_size=1, groups=groups)
        self.bn1 = nn.BatchNorm2d(attn_channels)
        self.act1 = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(attn_channels, mid_channels, kernel_size=1, groups=groups)
        self.rsoftmax = RadixSoftmax(radix, groups)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn0(x)
        x = self.act0(x)
        batch, channels, height, width = x.shape
        splits = x.reshape(batch, self.radix, channels // self.radix, height, width)
        attn = splits.sum(1).mean((2, 3), keepdim=True)
        attn = self.fc1(attn)
        attn = self.bn1(attn)
        attn = self.act1(attn)
        attn = self.fc2(attn)
        attn = self.rsoftmax(attn)
        attn = attn.reshape(batch, self.radix, channels // self.radix, 1, 1)
        return (splits * attn).sum(1)


class ResNestBottleneck(nn.Module):
    """1x1 reduce, a 3x3 split-attention convolution and a 1x1 expand, with the shortcut. The inner width is
    ``floor(planes * base_width / 64) * cardinality``. With ``avd``, a strided block convolves at full size and
    average-pools (3x3, padding counted) before (``avd_first``) or after the split attention instead.

    Stochastic depth follows timm's ResNeSt block: it drops the block's input on its way into a projection shortcut,
    not the residual branch, so it changes only blocks that have one (all still draw their random numbers).
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, dilation=1,
                 first_dilation=None, radix=2, avd=False, avd_first=False, drop_path_rate=0.0):
        super().__init__()
        first_dilation = first_dilation or dilation
        width = int(planes * (base_width / 64)) * cardinality
        outplanes = planes * self.expansion
        avd_stride = stride if avd and stride > 1 else 0
        if avd_stride:
            stride = 1
        self.conv1 = nn.Conv2d(inplanes, width, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.act1 = nn.ReLU(inplace=True)
        self.avd_first = nn.AvgPool2d(3, avd_stride, padding=1) if avd_stride and avd_first else None
        self.conv2 = SplitAttn(width, width, stride=stride, dilation=first_dilation, groups=cardinality, radix=radix)
        self.avd_last = nn.AvgPool2d(3, avd_stride, padding=1) if avd_stride and not avd_first else None
        self.conv3 = nn.Conv2d(width, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.act3 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn3.weight)

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.act1(out)
        if self.avd_first is not None:
            out = self.avd_first(out)
        out = self.conv2(out)
        if self.avd_last is not None:
            out = self.avd_last(out)
        out = self.conv3(out)
        out = self.bn3(out)
        shortcut = x
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.downsample is not None:
            shortcut = self.downsample(x)
        out = out + shortcut
        out = self.act3(out)
        return out


def _create_resnest(variant, pretrained, layers, kwargs, stem_width=32, cardinality=1, base_width=64, radix=2,
                    avd_first=False):
    """Build a registered variant (deep stem, average-pool shortcuts, avd): its settings overridden by the caller's
    ``kwargs``."""
    model_args = dict(block=ResNestBottleneck, layers=layers, stem_type="deep", stem_width=stem_width, avg_down=True,
                      cardinality=cardinality, base_width=base_width,
                      block_args=dict(radix=radix, avd=True, avd_first=avd_first))
    return build_model(ResNet, variant, pretrained, **dict(model_args, **kwargs))


@register_model
def resnest14d(pretrained=False, **kwargs):
    """ResNeSt-14-D: split-attention bottlenecks 1-1-1-1 (radix 2), deep stem (32, 32, 64)."""
    return _create_resnest("resnest14d", pretrained, (1, 1, 1, 1), kwargs)


@register_model
def resnest26d(pretrained=False, **kwargs):
    """ResNeSt-26-D: split-attention bottlenecks 2-2-2-2 (radix 2), deep stem (32, 32, 64)."""
    return _create_resnest("resnest26d", pretrained, (2, 2, 2, 2), kwargs)


@register_model
def resnest50d(pretrained=False, **kwargs):
    """ResNeSt-50-D, the paper's ResNeSt-50: split-attention bottlenecks 3-4-6-3 (radix 2), deep stem (32, 32, 64)."""
    return _create_resnest("resnest50d", pretrained, (3, 4, 6, 3), kwargs)


@register_model
def resnest101e(pretrained=False, **kwargs):
    """ResNeSt-101-E, the paper's ResNeSt-101: split-attention bottlenecks 3-4-23-3 (radix 2), deep stem
    (64, 64, 128)."""
    return _create_resnest("resnest101e", pretrained, (3, 4, 23, 3), kwargs, stem_width=64)


@register_model
def resnest200e(pretrained=False, **kwargs):
    """ResNeSt-200-E, the paper's ResNeSt-200: split-attention bottlenecks 3-24-36-3 (radix 2), deep stem
    (64, 64, 128)."""
    return _create_resnest("resnest200e", pretrained, (3, 24, 36, 3), kwargs, stem_width=64)


@register_model
def resnest269e(pretrained=False, **kwargs):
    """ResNeSt-269-E, the paper's ResNeSt-269: split-attention bottlenecks 3-30-48-8 (radix 2), deep stem
    (64, 64, 128)."""
    return _create_resnest("resnest269e", pretrained, (3, 30, 48, 8), kwargs, stem_width=64)


@register_model
def resnest50d_4s2x40d(pretrained=False, **kwargs):
    """ResNeSt-50-D 4s2x40d (the paper's ablation): radix 4, cardinality 2, base width 40, pooling before the split
    attention."""
    return _create_resnest("resnest50d_4s2x40d", pretrained, (3, 4, 6, 3), kwargs, cardinality=2, base_width=40,
                           radix=4, avd_first=True)


@register_model
def resnest50d_1s4x24d(pretrained=False, **kwargs):
    """ResNeSt-50-D 1s4x24d (the paper's ablation): radix 1 (a sigmoid gate), cardinality 4, base width 24, pooling
    before the split attention."""
    return _create_resnest("resnest50d_1s4x24d", pretrained, (3, 4, 6, 3), kwargs, cardinality=4, base_width=24,
                           radix=1, avd_first=True)
