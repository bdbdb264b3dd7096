"""Squeeze-and-Excitation Networks (Hu, Shen, Albanie, Sun and Wu 2018, "Squeeze-and-Excitation Networks"), timm's
legacy ports of the original Caffe models and of Cadene's PyTorch ones: legacy_senet154, legacy_seresnet18 / 34 /
50 / 101 / 152 and legacy_seresnext26_32x4d / 50_32x4d / 101_32x4d.

ResNets and ResNeXts whose every residual branch ends in squeeze-and-excitation: the branch's output is averaged
over space, squeezed by a 1x1 convolution to a sixteenth of its channels, expanded back, and its sigmoid rescales
each channel before the shortcut is added. As in the Caffe models, SE-ResNet bottlenecks stride in their first 1x1
convolution (not the 3x3 one), the stem's max pooling rounds its output size up, and SENet-154 has a three-
convolution stem, wider bottlenecks and 3x3 downsampling shortcuts. Model names, module names, ``state_dict`` keys
and initialisation follow timm's ``senet`` module, so its checkpoints load directly.
"""
import math
from collections import OrderedDict

import engine.nn.functional as F
from engine import nn

from .._features import take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import create_classifier

__all__ = []


class SEModule(nn.Module):
    """Squeeze-and-excitation as these models have it (``fc1``, ``relu``, ``fc2``, ``sigmoid``; the shared
    ``_attention.SEModule`` names its activation and gate otherwise): the channels' means through a biased 1x1
    reduction to ``channels // reduction`` channels, ReLU and a biased 1x1 expansion give a sigmoid gate that
    scales each channel of the input."""

    def __init__(self, channels, reduction):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, channels // reduction, kernel_size=1)
        self.relu = nn.ReLU(inplace=True)
        self.fc2 = nn.Conv2d(channels // reduction, channels, kernel_size=1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.fc1(scale)
        scale = self.relu(scale)
        scale = self.fc2(scale)
        scale = self.sigmoid(scale)
        return x * scale


class Bottleneck(nn.Module):
    """The residual computation shared by the three bottlenecks: 1x1, 3x3 and 1x1 convolutions (``conv1`` to
    ``conv3``), each followed by its BatchNorm (``bn1`` to ``bn3``) and, but the last, by ReLU; then
    squeeze-and-excitation (``se_module``), the shortcut (``downsample`` where the shape changes, else the input)
    added, and ReLU. Subclasses build the layers; they differ in widths and in which convolution strides."""

    expansion = 4

    def forward(self, x):
        shortcut = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        if self.downsample is not None:
            shortcut = self.downsample(x)
        out = self.se_module(out) + shortcut
        out = self.relu(out)
        return out


class SEBottleneck(Bottleneck):
    """SENet-154's bottleneck: 1x1 to ``2 * planes`` channels, a grouped 3x3 convolution (carrying the stride) to
    ``4 * planes``, 1x1 to ``4 * planes``, squeeze-and-excitation. ``downsample``: the shortcut's projection, or
    None for the identity."""

    def __init__(self, inplanes, planes, groups, reduction, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes * 2, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes * 2)
        self.conv2 = nn.Conv2d(planes * 2, planes * 4, kernel_size=3, stride=stride, padding=1, groups=groups,
                               bias=False)
        self.bn2 = nn.BatchNorm2d(planes * 4)
        self.conv3 = nn.Conv2d(planes * 4, planes * 4, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.se_module = SEModule(planes * 4, reduction)
        self.downsample = downsample
        self.stride = stride


class SEResNetBottleneck(Bottleneck):
    """SE-ResNet's bottleneck, Caffe style: the first 1x1 convolution (to ``planes`` channels) carries the stride,
    then a 3x3 (``groups`` groups) and a 1x1 to ``4 * planes`` channels, squeeze-and-excitation. ``downsample``: the
    shortcut's projection, or None for the identity."""

    def __init__(self, inplanes, planes, groups, reduction, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=1, stride=stride, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.se_module = SEModule(planes * 4, reduction)
        self.downsample = downsample
        self.stride = stride


class SEResNeXtBottleneck(Bottleneck):
    """SE-ResNeXt's bottleneck (ResNeXt's form C): 1x1 to ``groups`` times ``planes * base_width / 64`` (rounded
    down) channels, a grouped 3x3 convolution carrying the stride, 1x1 to ``4 * planes``, squeeze-and-excitation.
    ``downsample``: the shortcut's projection, or None for the identity."""

    def __init__(self, inplanes, planes, groups, reduction, stride=1, downsample=None, base_width=4):
        super().__init__()
        width = math.floor(planes * (base_width / 64)) * groups
        self.conv1 = nn.Conv2d(inplanes, width, kernel_size=1, stride=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.se_module = SEModule(planes * 4, reduction)
        self.downsample = downsample
        self.stride = stride


class SEResNetBlock(nn.Module):
    """SE-ResNet-18/34's basic block: two 3x3 convolutions (the first carrying the stride, the second with
    ``groups`` groups) with BatchNorm, ReLU between, squeeze-and-excitation, the shortcut (``downsample``'s
    projection, or the input) added and ReLU."""

    expansion = 1

    def __init__(self, inplanes, planes, groups, reduction, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, padding=1, stride=stride, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.se_module = SEModule(planes, reduction)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        shortcut = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        if self.downsample is not None:
            shortcut = self.downsample(x)
        out = self.se_module(out) + shortcut
        out = self.relu(out)
        return out


class SENet(nn.Module):
    """The stem (``layer0``: a 7x7 stride-2 convolution, or with ``input_3x3`` three 3x3 ones, the first strided, to
    ``inplanes`` channels, each with BatchNorm and ReLU), a 3x3 stride-2 max pooling that rounds up (``pool0``),
    four stages of ``layers`` blocks of type ``block`` at 64, 128, 256 and 512 planes (``layer1`` to ``layer4``, the
    last three halving the resolution), then global pooling, dropout (``drop_rate``, functional as in timm) and the
    classifier ``last_linear``.

    ``groups`` is the 3x3 convolutions' group count, ``reduction`` the squeeze-and-excitation's. A stage's first
    block projects its shortcut (convolution and BatchNorm) when it strides or widens; in the last three stages
    that convolution has ``downsample_kernel_size`` and ``downsample_padding``. Convolutions start He-normal
    (fan-out), BatchNorms at unit scale and zero shift; the classifier keeps its default initialisation.
    """

    default_cfg = {"first_conv": "layer0.conv1", "classifier": "last_linear"}

    def __init__(self, block, layers, groups, reduction, drop_rate=0.2, in_chans=3, inplanes=64, input_3x3=False,
                 downsample_kernel_size=1, downsample_padding=0, num_classes=1000, global_pool="avg"):
        super().__init__()
        self.inplanes = inplanes
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.layer0 = self._make_stem(in_chans, inplanes, input_3x3)
        self.pool0 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.feature_info = [dict(num_chs=inplanes, reduction=2, module="layer0")]
        self.layer1 = self._make_layer(block, 64, layers[0], groups, reduction)
        self.feature_info.append(dict(num_chs=64 * block.expansion, reduction=4, module="layer1"))
        self.layer2 = self._make_layer(block, 128, layers[1], groups, reduction, 2, downsample_kernel_size,
                                       downsample_padding)
        self.feature_info.append(dict(num_chs=128 * block.expansion, reduction=8, module="layer2"))
        self.layer3 = self._make_layer(block, 256, layers[2], groups, reduction, 2, downsample_kernel_size,
                                       downsample_padding)
        self.feature_info.append(dict(num_chs=256 * block.expansion, reduction=16, module="layer3"))
        self.layer4 = self._make_layer(block, 512, layers[3], groups, reduction, 2, downsample_kernel_size,
                                       downsample_padding)
        self.feature_info.append(dict(num_chs=512 * block.expansion, reduction=32, module="layer4"))
        self.num_features = 512 * block.expansion
        self.global_pool, self.last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self._init_weights()

    @staticmethod
    def _make_stem(in_chans, inplanes, input_3x3):
        """``layer0``: the named convolutions, BatchNorms and ReLUs of the stem."""
        if input_3x3:
            widths = [(in_chans, 64, 2), (64, 64, 1), (64, inplanes, 1)]
            kernel_size = 3
        else:
            widths = [(in_chans, inplanes, 2)]
            kernel_size = 7
        layers = OrderedDict()
        for index, (in_chs, out_chs, stride) in enumerate(widths, start=1):
            layers[f"conv{index}"] = nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride,
                                               padding=kernel_size // 2, bias=False)
            layers[f"bn{index}"] = nn.BatchNorm2d(out_chs)
            layers[f"relu{index}"] = nn.ReLU(inplace=True)
        return nn.Sequential(layers)

    def _make_layer(self, block, planes, blocks, groups, reduction, stride=1, downsample_kernel_size=1,
                    downsample_padding=0):
        """One stage of ``blocks`` blocks; the first strides and, where the shape changes, projects its shortcut
        (built before the block, as timm draws its initial weights in that order)."""
        out_chs = planes * block.expansion
        downsample = None
        if stride != 1 or self.inplanes != out_chs:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, out_chs, kernel_size=downsample_kernel_size, stride=stride,
                          padding=downsample_padding, bias=False),
                nn.BatchNorm2d(out_chs),
            )
        stage = [block(self.inplanes, planes, groups, reduction, stride, downsample)]
        self.inplanes = out_chs
        for _ in range(1, blocks):
            stage.append(block(self.inplanes, planes, groups, reduction))
        return nn.Sequential(*stage)

    def _init_weights(self):
        """He-normal (fan-out, ReLU gain) convolution weights, unit BatchNorm scales and zero shifts, in module
        order; biases and the classifier keep their default draws."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1.0)
                nn.init.constant_(m.bias, 0.0)

    def get_classifier(self):
        """The final linear layer."""
        return self.last_linear

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), optionally after another pooling."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.last_linear.train(self.training)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps picked by ``indices`` (None: all five, n: the last n, or a list) among the stem's output
        (before the max pooling: index 0) and the four stages', and, unless ``intermediates_only``, the final map;
        ``stop_early`` skips the stages after the last one picked. ``norm`` changes nothing (there is no final
        norm)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(5, indices)
        stages = [self.layer1, self.layer2, self.layer3, self.layer4]
        if stop_early:
            stages = stages[:max(take)]
        intermediates = []
        x = self.layer0(x)
        if 0 in take:
            intermediates.append(x)
        x = self.pool0(x)
        for index, stage in enumerate(stages, start=1):
            x = stage(x)
            if index in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Replace the stages after the last one ``indices`` picks by identities (the max pooling too when only
        the stem is kept); ``num_features`` becomes that map's width when stages go, and the classifier goes with
        ``prune_head`` or with the stages. ``prune_norm`` changes nothing. Returns the absolute indices."""
        take = take_indices(5, indices)
        last = max(take)
        for name in ("layer1", "layer2", "layer3", "layer4")[last:]:
            setattr(self, name, nn.Identity())
        if last == 0:
            self.pool0 = nn.Identity()
        prune_end = last < 4
        if prune_end:
            self.num_features = self.feature_info[last]["num_chs"]
            self.head_hidden_size = self.num_features
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32, rounded up by the max pooling)."""
        x = self.layer0(x)
        x = self.pool0(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pool and drop out; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        if pre_logits:
            return x
        return self.last_linear(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_senet(variant, pretrained, progress, model_args, kwargs):
    """Build a registered variant from its ``model_args``, which ``kwargs`` may override; ``features_only`` gives
    the stem's and the four stages' maps (strides 2 to 32) unless ``out_indices`` says otherwise."""
    return build_model(SENet, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def legacy_seresnet18(pretrained=False, progress=True, **kwargs):
    """SE-ResNet-18 (11.8M parameters)."""
    return _create_senet("legacy_seresnet18", pretrained, progress,
                         dict(block=SEResNetBlock, layers=[2, 2, 2, 2], groups=1, reduction=16), kwargs)


@register_model
def legacy_seresnet34(pretrained=False, progress=True, **kwargs):
    """SE-ResNet-34 (22.0M parameters)."""
    return _create_senet("legacy_seresnet34", pretrained, progress,
                         dict(block=SEResNetBlock, layers=[3, 4, 6, 3], groups=1, reduction=16), kwargs)


@register_model
def legacy_seresnet50(pretrained=False, progress=True, **kwargs):
    """SE-ResNet-50, Caffe-style strides (28.1M parameters)."""
    return _create_senet("legacy_seresnet50", pretrained, progress,
                         dict(block=SEResNetBottleneck, layers=[3, 4, 6, 3], groups=1, reduction=16), kwargs)


@register_model
def legacy_seresnet101(pretrained=False, progress=True, **kwargs):
    """SE-ResNet-101, Caffe-style strides (49.3M parameters)."""
    return _create_senet("legacy_seresnet101", pretrained, progress,
                         dict(block=SEResNetBottleneck, layers=[3, 4, 23, 3], groups=1, reduction=16), kwargs)


@register_model
def legacy_seresnet152(pretrained=False, progress=True, **kwargs):
    """SE-ResNet-152, Caffe-style strides (66.8M parameters)."""
    return _create_senet("legacy_seresnet152", pretrained, progress,
                         dict(block=SEResNetBottleneck, layers=[3, 8, 36, 3], groups=1, reduction=16), kwargs)


@register_model
def legacy_senet154(pretrained=False, progress=True, **kwargs):
    """SENet-154: a three-convolution stem, 64-group bottlenecks and 3x3 downsampling shortcuts (115.1M
    parameters)."""
    return _create_senet("legacy_senet154", pretrained, progress,
                         dict(block=SEBottleneck, layers=[3, 8, 36, 3], groups=64, reduction=16, inplanes=128,
                              input_3x3=True, downsample_kernel_size=3, downsample_padding=1), kwargs)


@register_model
def legacy_seresnext26_32x4d(pretrained=False, progress=True, **kwargs):
    """SE-ResNeXt-26 32x4d (16.8M parameters)."""
    return _create_senet("legacy_seresnext26_32x4d", pretrained, progress,
                         dict(block=SEResNeXtBottleneck, layers=[2, 2, 2, 2], groups=32, reduction=16), kwargs)


@register_model
def legacy_seresnext50_32x4d(pretrained=False, progress=True, **kwargs):
    """SE-ResNeXt-50 32x4d (27.6M parameters)."""
    return _create_senet("legacy_seresnext50_32x4d", pretrained, progress,
                         dict(block=SEResNeXtBottleneck, layers=[3, 4, 6, 3], groups=32, reduction=16), kwargs)


@register_model
def legacy_seresnext101_32x4d(pretrained=False, progress=True, **kwargs):
    """SE-ResNeXt-101 32x4d (49.0M parameters)."""
    return _create_senet("legacy_seresnext101_32x4d", pretrained, progress,
                         dict(block=SEResNeXtBottleneck, layers=[3, 4, 23, 3], groups=32, reduction=16), kwargs)
