"""ResNet-D/-T, SE-ResNe(X)t and ECA-ResNet (He et al. 2015, "Deep Residual Learning for Image Recognition";
Xie et al. 2017, "Aggregated Residual Transformations for Deep Neural Networks"; He et al. 2019, "Bag of Tricks
for Image Classification with Convolutional Neural Networks"; Hu et al. 2018, "Squeeze-and-Excitation Networks";
Wang et al. 2020, "ECA-Net: Efficient Channel Attention for Deep Convolutional Neural Networks"; Wightman et al.
2021, "ResNet strikes back: An improved training procedure in timm").

timm's generalised ResNet: the torchvision layout (a stem, four stages of basic or bottleneck blocks, global
pooling and a linear classifier) with the "bag of tricks" tweaks. A deep stem replaces the 7x7 convolution by
three 3x3 ones ('deep': widths w, w, 2w; 'deep_tiered': 3w/4, w, 2w); ``avg_down`` makes the projection
shortcuts average-pool before their 1x1 convolution instead of striding it ("D"); blocks may end in
squeeze-and-excitation (two 1x1 convolutions on the pooled map) or efficient channel attention (one 1-d
convolution across the pooled channels, its kernel size growing with log2 of the channel count); stochastic
depth drops whole residual branches. Model names, module names, ``state_dict`` keys, initialisation and the
published weights follow timm's ``resnet`` module, so its checkpoints load with ``strict=True``.
"""
import math

import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d, drop_path_module

# The classes are reached through this module: ResNet, BasicBlock and Bottleneck would shadow torchvision's in
# ``flowvision.models``; the registry adds the model entrypoints.
__all__ = []


def _se_channels(channels, rd_ratio, divisor):
    """The squeeze width: ``channels * rd_ratio`` to the nearest multiple of ``divisor``, at least ``divisor``."""
    return max(divisor, int(channels * rd_ratio + divisor / 2) // divisor * divisor)


class SEModule(nn.Module):
    """Squeeze-and-excitation: scale each channel by a sigmoid gate computed from the spatially averaged map.

    The gate is ``fc2(ReLU(fc1(mean)))`` with biased 1x1 convolutions through a bottleneck of
    ``channels * rd_ratio`` channels, rounded to a multiple of ``rd_divisor`` (timm's ``SEModule``).
    """

    def __init__(self, channels, rd_ratio=1 / 16, rd_divisor=8):
        super().__init__()
        rd_channels = _se_channels(channels, rd_ratio, rd_divisor)
        self.fc1 = nn.Conv2d(channels, rd_channels, kernel_size=1, bias=True)
        self.act = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(rd_channels, channels, kernel_size=1, bias=True)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.fc1(scale)
        scale = self.act(scale)
        scale = self.fc2(scale)
        return x * self.gate(scale)


def _eca_kernel_size(channels, gamma, beta):
    """ECA's adaptive kernel size: ``|log2(channels) + beta| / gamma`` truncated, made odd upwards, at least 3."""
    size = int(abs(math.log(channels, 2) + beta) / gamma)
    return max(size if size % 2 else size + 1, 3)


class EcaModule(nn.Module):
    """Efficient channel attention: a sigmoid gate per channel from a 1-d convolution across the channel means.

    Neighbouring channels interact through one small bias-free kernel instead of SE's two dense layers;
    its size follows the channel count (``gamma``, ``beta`` from the paper's mapping).
    """

    def __init__(self, channels, gamma=2, beta=1):
        super().__init__()
        kernel_size = _eca_kernel_size(channels, gamma, beta)
        self.conv = nn.Conv1d(1, 1, kernel_size=kernel_size, padding=(kernel_size - 1) // 2, bias=False)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3)).view(x.shape[0], 1, -1)
        scale = self.conv(scale)
        scale = self.gate(scale).view(x.shape[0], -1, 1, 1)
        return x * scale


_ATTENTION = {"se": SEModule, "eca": EcaModule}


def _attention(attn_layer, channels):
    """The attention module ending a block: None, 'se', 'eca', or a class built as ``attn_layer(channels)``."""
    if attn_layer is None:
        return None
    if isinstance(attn_layer, str):
        if attn_layer not in _ATTENTION:
            raise ValueError(f"unknown attn_layer '{attn_layer}': expected one of {sorted(_ATTENTION)}")
        attn_layer = _ATTENTION[attn_layer]
    return attn_layer(channels)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions (the first strided), optional channel attention and drop-path, plus the shortcut."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, dilation=1,
                 first_dilation=None, attn_layer=None, drop_path_rate=0.0):
        super().__init__()
        if cardinality != 1 or base_width != 64:
            raise ValueError("BasicBlock supports only cardinality=1 and base_width=64")
        first_dilation = first_dilation or dilation
        outplanes = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=first_dilation,
                               dilation=first_dilation, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, outplanes, kernel_size=3, padding=dilation, dilation=dilation, bias=False)
        self.bn2 = nn.BatchNorm2d(outplanes)
        self.se = _attention(attn_layer, outplanes)
        self.act2 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn2.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.bn2(x)
        if self.se is not None:
            x = self.se(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act2(x)
        return x


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped, strided) and 1x1 expand convolutions, optional attention and drop-path,
    plus the shortcut. The inner width is ``floor(planes * base_width / 64) * cardinality``."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, dilation=1,
                 first_dilation=None, attn_layer=None, drop_path_rate=0.0):
        super().__init__()
        first_dilation = first_dilation or dilation
        width = int(math.floor(planes * (base_width / 64)) * cardinality)
        outplanes = planes * self.expansion
        self.conv1 = nn.Conv2d(inplanes, width, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=first_dilation,
                               dilation=first_dilation, groups=cardinality, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.act2 = nn.ReLU(inplace=True)
        self.conv3 = nn.Conv2d(width, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.se = _attention(attn_layer, outplanes)
        self.act3 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn3.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.act2(x)
        x = self.conv3(x)
        x = self.bn3(x)
        if self.se is not None:
            x = self.se(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act3(x)
        return x


class AvgPool2dSame(nn.Module):
    """A 2x2 average at stride 1 that keeps the size: a zero row and column padded at the end count as inputs.

    The average-pool shortcut of a dilated stage (``output_stride`` 8 or 16), where the stride is gone.
    """

    def forward(self, x):
        x = F.pad(x, (0, 1, 0, 1))
        return F.avg_pool2d(x, 2, stride=1)


def downsample_conv(in_channels, out_channels, stride):
    """The projection shortcut of ResNet-B: a strided 1x1 convolution and a norm."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
        nn.BatchNorm2d(out_channels),
    )


def downsample_avg(in_channels, out_channels, stride, dilation):
    """The projection shortcut of ResNet-D: 2x2 average pooling (ceil mode, padding not counted), then a
    1x1 convolution and a norm, so the shortcut sees every input pixel. Index 0 stays an identity when
    nothing shrinks, so the keys are those of timm."""
    if stride == 1 and dilation == 1:
        pool = nn.Identity()
    elif dilation == 1:
        pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
    else:
        pool = AvgPool2dSame()
    return nn.Sequential(
        pool,
        nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False),
        nn.BatchNorm2d(out_channels),
    )


def _stem(in_chans, stem_type, stem_width):
    """The stem's convolution(s) up to its last norm: a 7x7/2 convolution, or three 3x3 convolutions (the first
    strided) of widths (w, w, 2w) for 'deep' and (3 * (w // 4), w, 2w) for 'deep_tiered'."""
    if not stem_type:
        return nn.Conv2d(in_chans, 64, kernel_size=7, stride=2, padding=3, bias=False)
    first = 3 * (stem_width // 4) if stem_type == "deep_tiered" else stem_width
    return nn.Sequential(
        nn.Conv2d(in_chans, first, kernel_size=3, stride=2, padding=1, bias=False),
        nn.BatchNorm2d(first),
        nn.ReLU(inplace=True),
        nn.Conv2d(first, stem_width, kernel_size=3, stride=1, padding=1, bias=False),
        nn.BatchNorm2d(stem_width),
        nn.ReLU(inplace=True),
        nn.Conv2d(stem_width, stem_width * 2, kernel_size=3, stride=1, padding=1, bias=False),
    )


class ResNet(nn.Module):
    """timm's ResNet: a stem (one 7x7 or three 3x3 convolutions, norm, ReLU, 3x3/2 max pool), four stages
    ``layer1..4`` of residual blocks, ``global_pool``, dropout and the classifier ``fc``.

    ``stem_type`` '' | 'deep' | 'deep_tiered' with ``stem_width``; ``avg_down`` average-pools the projection
    shortcuts; ``cardinality`` and ``base_width`` make ResNeXt bottlenecks; ``block_args`` reach every block
    (``attn_layer`` 'se' or 'eca'); ``output_stride`` 16 or 8 dilates the last stages instead of striding them;
    ``drop_path_rate`` grows linearly from 0 at the first block to this value at the last; ``drop_rate`` is the
    dropout before the classifier; ``zero_init_last`` zeroes each block's last norm scale. ``num_classes=0``
    replaces the classifier with an identity (pooled features).
    """

    def __init__(self, block, layers, num_classes=1000, in_chans=3, output_stride=32, global_pool="avg",
                 cardinality=1, base_width=64, stem_width=64, stem_type="", avg_down=False,
                 channels=(64, 128, 256, 512), drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True,
                 block_args=None):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        if stem_type not in ("", "deep", "deep_tiered"):
            raise ValueError(f"unknown stem_type '{stem_type}': expected '', 'deep' or 'deep_tiered'")
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        self.first_conv = "conv1.0" if stem_type else "conv1"
        self.inplanes = stem_width * 2 if stem_type else 64
        self.conv1 = _stem(in_chans, stem_type, stem_width)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.act1 = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.feature_info = [dict(num_chs=self.inplanes, reduction=2, module="act1")]
        self._reduction = 4
        self._dilation = 1
        rates = [drop_path_rate * i / (sum(layers) - 1) for i in range(sum(layers))]
        settings = dict(cardinality=cardinality, base_width=base_width, **(block_args or {}))
        for index, (planes, depth) in enumerate(zip(channels, layers), start=1):
            stride = 1 if index == 1 else 2
            name = f"layer{index}"
            stage_rates, rates = rates[:depth], rates[depth:]
            stage = self._make_stage(block, planes, stage_rates, stride, output_stride, avg_down, settings)
            self.add_module(name, stage)
            self.feature_info.append(dict(num_chs=self.inplanes, reduction=self._reduction, module=name))
        self.num_features = channels[-1] * block.expansion
        self.global_pool = SelectAdaptivePool2d(global_pool)
        self.fc = self._classifier(num_classes)
        self._init_weights(zero_init_last)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution) and ``classifier``."""
        return {"first_conv": self.first_conv, "classifier": "fc"}

    def _make_stage(self, block, planes, rates, stride, output_stride, avg_down, settings):
        """One stage of ``len(rates)`` blocks (``rates``: their drop-path rates): a first block that strides (or,
        past ``output_stride``, dilates) behind a projection shortcut, then blocks at the stage's width."""
        first_dilation = self._dilation
        if self._reduction >= output_stride and stride > 1:
            self._dilation *= stride
            stride = 1
        else:
            self._reduction *= stride
        outplanes = planes * block.expansion
        downsample = None
        if stride != 1 or self.inplanes != outplanes:
            if avg_down:
                downsample = downsample_avg(self.inplanes, outplanes, stride, self._dilation)
            else:
                downsample = downsample_conv(self.inplanes, outplanes, stride)
        blocks = []
        for i, rate in enumerate(rates):
            blocks.append(block(self.inplanes, planes, stride if i == 0 else 1, downsample if i == 0 else None,
                                dilation=self._dilation, first_dilation=first_dilation, drop_path_rate=rate,
                                **settings))
            first_dilation = self._dilation
            self.inplanes = outplanes
        return nn.Sequential(*blocks)

    def _init_weights(self, zero_init_last):
        """Kaiming-normal (fan_out) 2-d convolutions, the rest as constructed; optionally each block's last
        norm scale zeroed (any block class that has ``zero_init_last``: those of the ResNet-based families too)."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_last:
            for m in self.modules():
                if hasattr(m, "zero_init_last"):
                    m.zero_init_last()

    def _classifier(self, num_classes):
        """The final linear layer on the pooled features, or an identity when ``num_classes`` is 0."""
        if num_classes > 0 and not self.global_pool.pool_type:
            raise ValueError("global_pool='' leaves an unpooled map: it needs num_classes=0")
        features = self.num_features * self.global_pool.feat_mult()
        return nn.Linear(features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The classification layer."""
        return self.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: pooled features), with new pooling if ``global_pool``."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = SelectAdaptivePool2d(global_pool)
        self.fc = self._classifier(num_classes)

    def forward_features(self, x):
        """The feature map after the last stage (N, num_features, H/output_stride, W/output_stride)."""
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout, then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.drop_rate:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_resnet(variant, pretrained, block, layers, kwargs, **model_args):
    """Build a registered variant: its ``model_args`` overridden by the caller's ``kwargs``."""
    return build_model(ResNet, variant, pretrained, **dict(dict(block=block, layers=layers, **model_args), **kwargs))


_D = dict(stem_width=32, stem_type="deep", avg_down=True)
_T = dict(stem_width=32, stem_type="deep_tiered", avg_down=True)
_SE = dict(block_args=dict(attn_layer="se"))
_ECA = dict(block_args=dict(attn_layer="eca"))


@register_model
def resnet10t(pretrained=False, **kwargs):
    """ResNet-10-T: basic blocks 1-1-1-1, tiered deep stem (24, 32, 64), average-pool shortcuts."""
    return _create_resnet("resnet10t", pretrained, BasicBlock, (1, 1, 1, 1), kwargs, **_T)


@register_model
def resnet14t(pretrained=False, **kwargs):
    """ResNet-14-T: bottlenecks 1-1-1-1, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("resnet14t", pretrained, Bottleneck, (1, 1, 1, 1), kwargs, **_T)


@register_model
def resnet18d(pretrained=False, **kwargs):
    """ResNet-18-D: basic blocks 2-2-2-2, deep stem (32, 32, 64), average-pool shortcuts."""
    return _create_resnet("resnet18d", pretrained, BasicBlock, (2, 2, 2, 2), kwargs, **_D)


@register_model
def resnet26(pretrained=False, **kwargs):
    """ResNet-26: bottlenecks 2-2-2-2, 7x7 stem."""
    return _create_resnet("resnet26", pretrained, Bottleneck, (2, 2, 2, 2), kwargs)


@register_model
def resnet26d(pretrained=False, **kwargs):
    """ResNet-26-D: bottlenecks 2-2-2-2, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet26d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_D)


@register_model
def resnet26t(pretrained=False, **kwargs):
    """ResNet-26-T: bottlenecks 2-2-2-2, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("resnet26t", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_T)


@register_model
def resnet34d(pretrained=False, **kwargs):
    """ResNet-34-D: basic blocks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet34d", pretrained, BasicBlock, (3, 4, 6, 3), kwargs, **_D)


@register_model
def resnet50d(pretrained=False, **kwargs):
    """ResNet-50-D: bottlenecks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_D)


@register_model
def resnet101d(pretrained=False, **kwargs):
    """ResNet-101-D: bottlenecks 3-4-23-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_D)


@register_model
def resnet152d(pretrained=False, **kwargs):
    """ResNet-152-D: bottlenecks 3-8-36-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet152d", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_D)


@register_model
def resnet200d(pretrained=False, **kwargs):
    """ResNet-200-D: bottlenecks 3-24-36-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet200d", pretrained, Bottleneck, (3, 24, 36, 3), kwargs, **_D)


@register_model
def seresnet50(pretrained=False, **kwargs):
    """SE-ResNet-50: bottlenecks 3-4-6-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet50", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_SE)


@register_model
def seresnet152d(pretrained=False, **kwargs):
    """SE-ResNet-152-D: bottlenecks 3-8-36-3 with squeeze-and-excitation, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnet152d", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_D, **_SE)


@register_model
def seresnext26d_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-26-D 32x4d: grouped bottlenecks 2-2-2-2 with SE, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext26d_32x4d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs,
                          cardinality=32, base_width=4, **_D, **_SE)


@register_model
def seresnext26t_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-26-T 32x4d: grouped bottlenecks 2-2-2-2 with SE, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext26t_32x4d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs,
                          cardinality=32, base_width=4, **_T, **_SE)


@register_model
def seresnext50_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-50 32x4d: grouped bottlenecks 3-4-6-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext50_32x4d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs,
                          cardinality=32, base_width=4, **_SE)


@register_model
def seresnext101_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 32x4d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_32x4d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=4, **_SE)


@register_model
def seresnext101_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 32x8d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_32x8d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=8, **_SE)


@register_model
def seresnext101d_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-101-D 32x8d: grouped bottlenecks 3-4-23-3 with SE, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext101d_32x8d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=8, **_D, **_SE)


@register_model
def seresnext101_64x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 64x4d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_64x4d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=64, base_width=4, **_SE)


@register_model
def ecaresnet26t(pretrained=False, **kwargs):
    """ECA-ResNet-26-T: bottlenecks 2-2-2-2 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet26t", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_T, **_ECA)


@register_model
def ecaresnet50d(pretrained=False, **kwargs):
    """ECA-ResNet-50-D: bottlenecks 3-4-6-3 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet50t(pretrained=False, **kwargs):
    """ECA-ResNet-50-T: bottlenecks 3-4-6-3 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet50t", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_T, **_ECA)


@register_model
def ecaresnet101d(pretrained=False, **kwargs):
    """ECA-ResNet-101-D: bottlenecks 3-4-23-3 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet269d(pretrained=False, **kwargs):
    """ECA-ResNet-269-D: bottlenecks 3-30-48-8 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet269d", pretrained, Bottleneck, (3, 30, 48, 8), kwargs, **_D, **_ECA)


@register_model
def ecaresnetlight(pretrained=False, **kwargs):
    """ECA-ResNet-Light: bottlenecks 1-1-11-3 with ECA, 7x7 stem, average-pool shortcuts."""
    return _create_resnet("ecaresnetlight", pretrained, Bottleneck, (1, 1, 11, 3), kwargs, avg_down=True, **_ECA)
