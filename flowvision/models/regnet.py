"""RegNetX and RegNetY (Radosavovic et al. 2020, "Designing Network Design Spaces").

A RegNet is an AnyNet whose per-block widths follow a quantised linear rule: four numbers
(initial width ``w_0``, slope ``w_a``, log-step ``w_m`` and ``depth``) fix every stage's width and
depth; a group width and a bottleneck multiplier shape the residual bottlenecks, and RegNetY adds
squeeze-excitation to them. Module names, state_dict keys and initialisation follow torchvision,
so its checkpoints (including the SWAG ones) load directly; the model API (``forward_features``,
``forward_head``, ``reset_classifier``, ``features_only``, ``in_chans``) follows timm.
"""
import math
from collections import OrderedDict
from functools import partial

import numpy as np

import engine as torch
from engine import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._helpers import build_model
from ._utils import _make_divisible, linear_or_identity
from .registry import register_model

__all__ = ["RegNet"]


class SimpleStemIN(Conv2dNormActivation):
    """The ImageNet stem: a stride-2 3x3 convolution, norm and activation."""

    def __init__(self, width_in, width_out, norm_layer, activation_layer):
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """The residual branch: 1x1 (``a``), grouped 3x3 carrying the stride (``b``), optional SE, 1x1 (``c``).

    The inner width is ``width_out * bottleneck_multiplier`` in groups of ``group_width`` channels; the
    SE squeeze width is ``se_ratio`` times the block's *input* width.
    """

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width,
                 bottleneck_multiplier, se_ratio):
        w_b = int(round(width_out * bottleneck_multiplier))
        groups = w_b // group_width
        layers = OrderedDict()
        layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride, groups=groups,
                                           norm_layer=norm_layer, activation_layer=activation_layer)
        if se_ratio:
            layers["se"] = SqueezeExcitation(w_b, int(round(se_ratio * width_in)), activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """``activation(shortcut + f(x))``; the shortcut is a strided 1x1 projection when the shape changes."""

    def __init__(self, width_in, width_out, stride, norm_layer, activation_layer, group_width=1,
                 bottleneck_multiplier=1.0, se_ratio=None):
        super().__init__()
        self.proj = None
        if width_in != width_out or stride != 1:
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride,
                                             norm_layer=norm_layer, activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer, group_width,
                                     bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=True)

    def forward(self, x):
        shortcut = x if self.proj is None else self.proj(x)
        out = self.f(x)
        out = shortcut + out
        return self.activation(out)


class AnyStage(nn.Sequential):
    """``depth`` blocks of one output width; the first one takes the stage's stride and input width.

    Blocks are named ``block{stage_index}-{i}`` (torchvision's checkpoint keys).
    """

    def __init__(self, width_in, width_out, stride, depth, block_constructor, norm_layer, activation_layer,
                 group_width, bottleneck_multiplier, se_ratio=None, stage_index=0):
        super().__init__()
        for i in range(depth):
            block = block_constructor(width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                                      norm_layer, activation_layer, group_width, bottleneck_multiplier, se_ratio)
            self.add_module(f"block{stage_index}-{i}", block)


def _quantized_block_widths(depth, w_0, w_a, w_m, quant=8):
    """The width of each of ``depth`` blocks: the linear ramp ``w_0 + w_a * j`` snapped, in log base ``w_m``,
    to ``w_0 * w_m**k`` for integer ``k``, then rounded to a multiple of ``quant``.

    Computed in float32 (PyTorch's default dtype), so the rounding matches torchvision's exactly.
    """
    f32 = np.float32
    ramp = np.arange(depth, dtype=f32) * f32(w_a) + f32(w_0)
    steps = np.round(np.log(ramp / f32(w_0)) / f32(math.log(w_m)))
    widths = np.round(f32(w_0) * np.power(f32(w_m), steps) / f32(quant)) * quant
    return [int(w) for w in widths]


class BlockParams:
    """Per-stage settings of a RegNet: depths, output widths, group widths, bottleneck multipliers, strides,
    and the SE ratio shared by all blocks (None for RegNetX)."""

    def __init__(self, depths, widths, group_widths, bottleneck_multipliers, strides, se_ratio=None):
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth, w_0, w_a, w_m, group_width, bottleneck_multiplier=1.0, se_ratio=None):
        """The stages generated by the RegNet rule: consecutive blocks of equal width form a stage.

        Every stage has stride 2; widths are then adjusted so the bottleneck width is a multiple
        of the (possibly reduced) group width.
        """
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        stage_widths, depths = [], []
        for width in _quantized_block_widths(depth, w_0, w_a, w_m):
            if stage_widths and stage_widths[-1] == width:
                depths[-1] += 1
            else:
                stage_widths.append(width)
                depths.append(1)
        num_stages = len(stage_widths)
        bottleneck_multipliers = [bottleneck_multiplier] * num_stages
        stage_widths, group_widths = cls._compatible_widths_and_groups(
            stage_widths, bottleneck_multipliers, [group_width] * num_stages)
        return cls(depths=depths, widths=stage_widths, group_widths=group_widths,
                   bottleneck_multipliers=bottleneck_multipliers, strides=[2] * num_stages, se_ratio=se_ratio)

    def _get_expanded_params(self):
        """(width, stride, depth, group width, bottleneck multiplier) of each stage."""
        return zip(self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers)

    @staticmethod
    def _compatible_widths_and_groups(stage_widths, bottleneck_multipliers, group_widths):
        """Stage widths whose bottleneck widths divide into groups, and group widths no wider than those."""
        bottleneck_widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_multipliers)]
        group_widths = [min(g, w) for g, w in zip(group_widths, bottleneck_widths)]
        bottleneck_widths = [_make_divisible(w, g) for w, g in zip(bottleneck_widths, group_widths)]
        stage_widths = [int(w / b) for w, b in zip(bottleneck_widths, bottleneck_multipliers)]
        return stage_widths, group_widths


class RegNet(nn.Module):
    """A stem, the stages of ``block_params`` in ``trunk_output``, global average pooling and a classifier.

    ``num_classes=0`` replaces the classifier with an identity (pooled features); ``in_chans``
    sets the input channels of the stem.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "fc"}

    def __init__(self, block_params, num_classes=1000, stem_width=32, stem_type=None, block_type=None,
                 norm_layer=None, activation=None, in_chans=3):
        super().__init__()
        if stem_type is None:
            stem_type = SimpleStemIN
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if block_type is None:
            block_type = ResBottleneckBlock
        if activation is None:
            activation = nn.ReLU
        self.num_classes = num_classes
        self.stem = stem_type(in_chans, stem_width, norm_layer, activation)
        self.feature_info = [dict(num_chs=stem_width, reduction=2, module="stem")]
        width, reduction = stem_width, 2
        stages = []
        for i, (width_out, stride, depth, group_width, bottleneck_multiplier) in enumerate(
                block_params._get_expanded_params(), start=1):
            stage = AnyStage(width, width_out, stride, depth, block_type, norm_layer, activation, group_width,
                             bottleneck_multiplier, block_params.se_ratio, stage_index=i)
            stages.append((f"block{i}", stage))
            width, reduction = width_out, reduction * stride
            self.feature_info.append(dict(num_chs=width, reduction=reduction, module=f"trunk_output.block{i}"))
        self.trunk_output = nn.Sequential(OrderedDict(stages))
        self.num_features = width
        self.head_hidden_size = self.num_features
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = linear_or_identity(self.num_features, num_classes)
        self._init_weights()

    def _init_weights(self):
        """ResNet-style: N(0, 2 / fan_out) convolutions, unit/zero norms, N(0, 0.01) linear weights, zero biases."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def _classifier(self, num_classes):
        """The final linear layer (N(0, 0.01) weights, zero bias), or an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        fc = nn.Linear(self.num_features, num_classes)
        nn.init.normal_(fc.weight, mean=0.0, std=0.01)
        nn.init.zeros_(fc.bias)
        return fc

    def get_classifier(self):
        """The classification layer."""
        return self.fc

    def reset_classifier(self, num_classes):
        """Replace the classifier with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.fc = self._classifier(num_classes)

    def forward_features(self, x):
        """The feature map after the last stage (N, num_features, H/32, W/32)."""
        x = self.stem(x)
        x = self.trunk_output(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Global average pool and flatten, then the classifier unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_regnet(variant, block_params, pretrained, progress, **kwargs):
    """Build a registered RegNet variant (BatchNorm eps 1e-5, momentum 0.1 unless ``norm_layer`` is given)."""
    kwargs.setdefault("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return build_model(RegNet, variant, pretrained, progress=progress, block_params=block_params, **kwargs)


@register_model
def regnet_y_400mf(pretrained=False, progress=True, **kwargs):
    """RegNetY-400MF."""
    params = BlockParams.from_init_params(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, se_ratio=0.25)
    return _create_regnet("regnet_y_400mf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_800mf(pretrained=False, progress=True, **kwargs):
    """RegNetY-800MF."""
    params = BlockParams.from_init_params(depth=14, w_0=56, w_a=38.84, w_m=2.4, group_width=16, se_ratio=0.25)
    return _create_regnet("regnet_y_800mf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_1_6gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-1.6GF."""
    params = BlockParams.from_init_params(depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24, se_ratio=0.25)
    return _create_regnet("regnet_y_1_6gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_3_2gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-3.2GF."""
    params = BlockParams.from_init_params(depth=21, w_0=80, w_a=42.63, w_m=2.66, group_width=24, se_ratio=0.25)
    return _create_regnet("regnet_y_3_2gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_8gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-8GF."""
    params = BlockParams.from_init_params(depth=17, w_0=192, w_a=76.82, w_m=2.19, group_width=56, se_ratio=0.25)
    return _create_regnet("regnet_y_8gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_16gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-16GF (also SWAG weights: ``IMAGENET1K_SWAG_E2E_V1`` at 384, ``IMAGENET1K_SWAG_LINEAR_V1`` at 224)."""
    params = BlockParams.from_init_params(depth=18, w_0=200, w_a=106.23, w_m=2.48, group_width=112, se_ratio=0.25)
    return _create_regnet("regnet_y_16gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_32gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-32GF (also SWAG weights: ``IMAGENET1K_SWAG_E2E_V1`` at 384, ``IMAGENET1K_SWAG_LINEAR_V1`` at 224)."""
    params = BlockParams.from_init_params(depth=20, w_0=232, w_a=115.89, w_m=2.53, group_width=232, se_ratio=0.25)
    return _create_regnet("regnet_y_32gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_y_128gf(pretrained=False, progress=True, **kwargs):
    """RegNetY-128GF (~645M parameters). Only SWAG weights exist, so ``pretrained=True`` alone is an error:
    pass ``weights=`` (``IMAGENET1K_SWAG_E2E_V1`` or ``IMAGENET1K_SWAG_LINEAR_V1``)."""
    if pretrained and kwargs.get("weights") is None:
        raise ValueError("No weights available for model regnet_y_128gf")
    params = BlockParams.from_init_params(depth=27, w_0=456, w_a=160.83, w_m=2.52, group_width=264, se_ratio=0.25)
    return _create_regnet("regnet_y_128gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_400mf(pretrained=False, progress=True, **kwargs):
    """RegNetX-400MF."""
    params = BlockParams.from_init_params(depth=22, w_0=24, w_a=24.48, w_m=2.54, group_width=16)
    return _create_regnet("regnet_x_400mf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_800mf(pretrained=False, progress=True, **kwargs):
    """RegNetX-800MF."""
    params = BlockParams.from_init_params(depth=16, w_0=56, w_a=35.73, w_m=2.28, group_width=16)
    return _create_regnet("regnet_x_800mf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_1_6gf(pretrained=False, progress=True, **kwargs):
    """RegNetX-1.6GF."""
    params = BlockParams.from_init_params(depth=18, w_0=80, w_a=34.01, w_m=2.25, group_width=24)
    return _create_regnet("regnet_x_1_6gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_3_2gf(pretrained=False, progress=True, **kwargs):
    """RegNetX-3.2GF."""
    params = BlockParams.from_init_params(depth=25, w_0=88, w_a=26.31, w_m=2.25, group_width=48)
    return _create_regnet("regnet_x_3_2gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_8gf(pretrained=False, progress=True, **kwargs):
    """RegNetX-8GF."""
    params = BlockParams.from_init_params(depth=23, w_0=80, w_a=49.56, w_m=2.88, group_width=120)
    return _create_regnet("regnet_x_8gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_16gf(pretrained=False, progress=True, **kwargs):
    """RegNetX-16GF."""
    params = BlockParams.from_init_params(depth=22, w_0=216, w_a=55.59, w_m=2.1, group_width=128)
    return _create_regnet("regnet_x_16gf", params, pretrained, progress, **kwargs)


@register_model
def regnet_x_32gf(pretrained=False, progress=True, **kwargs):
    """RegNetX-32GF."""
    params = BlockParams.from_init_params(depth=23, w_0=320, w_a=69.86, w_m=2.0, group_width=168)
    return _create_regnet("regnet_x_32gf", params, pretrained, progress, **kwargs)
