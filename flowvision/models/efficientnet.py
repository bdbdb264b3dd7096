"""EfficientNet (Tan & Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks")
and EfficientNetV2 (Tan & Le 2021, "EfficientNetV2: Smaller Models and Faster Training").

B0-B7 scale one baseline of MBConv blocks (inverted residuals with squeeze-excitation and SiLU) in
width and depth; V2 starts with FusedMBConv blocks (the expansion and depthwise convs fused into one
full conv). Residual branches are dropped by stochastic depth in training, more often deeper in the
network. Module names, state_dict keys, initialisation and each variant's dropout and BatchNorm
settings follow torchvision, so its checkpoints load directly; the model API (``forward_features``,
``forward_head``, ``reset_classifier``, ``in_chans``, ``feature_info``) follows timm.
"""
import copy
import math
from collections.abc import Sequence
from functools import partial

import engine as torch
from engine import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ._features import sequential_feature_info
from ._helpers import build_model
from ._utils import _make_divisible, linear_or_identity
from .registry import register_model

__all__ = ["EfficientNet"]


class _MBConvConfig:
    """One stage: ``num_layers`` blocks of ``block``; the first has ``stride`` and maps ``input_channels``
    to ``out_channels``, the others keep ``out_channels`` at stride 1."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block):
        self.expand_ratio = expand_ratio
        self.kernel = kernel
        self.stride = stride
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers
        self.block = block

    @staticmethod
    def adjust_channels(channels, width_mult, min_value=None):
        """``channels * width_mult`` rounded to a multiple of 8."""
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    """An MBConv stage (EfficientNet Table 1, EfficientNetV2 Table 4), widths and depth scaled by the multipliers."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, width_mult=1.0,
                 depth_mult=1.0, block=None):
        input_channels = self.adjust_channels(input_channels, width_mult)
        out_channels = self.adjust_channels(out_channels, width_mult)
        num_layers = self.adjust_depth(num_layers, depth_mult)
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block or MBConv)

    @staticmethod
    def adjust_depth(num_layers, depth_mult):
        """``num_layers * depth_mult`` rounded up."""
        return int(math.ceil(num_layers * depth_mult))


class FusedMBConvConfig(_MBConvConfig):
    """A FusedMBConv stage (EfficientNetV2 Table 4), unscaled."""

    def __init__(self, expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block=None):
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block or FusedMBConv)


class MBConv(nn.Module):
    """Expand (1x1, skipped at ratio 1), depthwise filter (kxk), squeeze-excitation, project (1x1, linear).

    The residual branch, when stride and width allow one, passes through stochastic depth first.
    """

    def __init__(self, cnf, stochastic_depth_prob, norm_layer, se_layer=SqueezeExcitation):
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        layers = []
        if expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded_channels, expanded_channels, kernel_size=cnf.kernel,
                                           stride=cnf.stride, groups=expanded_channels, norm_layer=norm_layer,
                                           activation_layer=nn.SiLU))
        squeeze_channels = max(1, cnf.input_channels // 4)
        layers.append(se_layer(expanded_channels, squeeze_channels, activation=partial(nn.SiLU, inplace=True)))
        layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class FusedMBConv(nn.Module):
    """A full kxk conv that expands (then a linear 1x1 projection), or at ratio 1 maps straight to the output.

    The residual branch, when stride and width allow one, passes through stochastic depth first.
    """

    def __init__(self, cnf, stochastic_depth_prob, norm_layer):
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded_channels != cnf.input_channels:
            layers = [
                Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=cnf.kernel, stride=cnf.stride,
                                     norm_layer=norm_layer, activation_layer=nn.SiLU),
                Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                     activation_layer=None),
            ]
        else:
            layers = [Conv2dNormActivation(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel,
                                           stride=cnf.stride, norm_layer=norm_layer, activation_layer=nn.SiLU)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


def _init_linear(linear):
    """Uniform weights within 1/sqrt(out_features) and a zero bias."""
    init_range = 1.0 / math.sqrt(linear.out_features)
    nn.init.uniform_(linear.weight, -init_range, init_range)
    nn.init.zeros_(linear.bias)


class EfficientNet(nn.Module):
    """A strided 3x3 SiLU stem, one ``nn.Sequential`` per stage config, a 1x1 conv, pooling and a classifier.

    The stochastic depth probability grows linearly from 0 at the first block to
    ``stochastic_depth_prob`` (exclusive) at the last. The last conv has ``last_channel`` outputs
    (default: 4x the last stage's width). ``num_classes=0`` replaces the classifier with an identity.
    """

    default_cfg = {"first_conv": "features.0.0", "classifier": "classifier.1"}

    def __init__(self, inverted_residual_setting, dropout, stochastic_depth_prob=0.2, num_classes=1000,
                 norm_layer=None, last_channel=None, in_chans=3):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, _MBConvConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.num_classes = num_classes
        layers = [Conv2dNormActivation(in_chans, inverted_residual_setting[0].input_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
        stage_block_id = 0
        for cnf in inverted_residual_setting:
            stage = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        self.num_features = last_channel if last_channel is not None else 4 * lastconv_input_channels
        self.head_hidden_size = self.num_features
        layers.append(Conv2dNormActivation(lastconv_input_channels, self.num_features, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.feature_info = sequential_feature_info(self.features, in_chans=in_chans)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        linear_or_identity(self.num_features, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                _init_linear(m)

    def _linear(self, num_classes):
        """A fresh final linear layer, initialised, or an identity for 0 classes."""
        linear = linear_or_identity(self.num_features, num_classes)
        if num_classes > 0:
            _init_linear(linear)
        return linear

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[1]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.classifier[1] = self._linear(num_classes)

    def forward_features(self, x):
        """The feature map after the last 1x1 conv (N, num_features, H/32, W/32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Pool and flatten, then dropout and the classifier unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _efficientnet_conf(arch, width_mult=1.0, depth_mult=1.0):
    """The stage table of ``arch`` and its last conv width (None: 4x the last stage's).

    B0-B7 share the B0 table, scaled by ``width_mult`` and ``depth_mult``; V2 variants have their own.
    """
    if arch.startswith("efficientnet_b"):
        bneck_conf = partial(MBConvConfig, width_mult=width_mult, depth_mult=depth_mult)
        setting = [
            bneck_conf(1, 3, 1, 32, 16, 1),
            bneck_conf(6, 3, 2, 16, 24, 2),
            bneck_conf(6, 5, 2, 24, 40, 2),
            bneck_conf(6, 3, 2, 40, 80, 3),
            bneck_conf(6, 5, 1, 80, 112, 3),
            bneck_conf(6, 5, 2, 112, 192, 4),
            bneck_conf(6, 3, 1, 192, 320, 1),
        ]
        return setting, None
    if arch.startswith("efficientnet_v2_s"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 24, 24, 2),
            FusedMBConvConfig(4, 3, 2, 24, 48, 4),
            FusedMBConvConfig(4, 3, 2, 48, 64, 4),
            MBConvConfig(4, 3, 2, 64, 128, 6),
            MBConvConfig(6, 3, 1, 128, 160, 9),
            MBConvConfig(6, 3, 2, 160, 256, 15),
        ]
    elif arch.startswith("efficientnet_v2_m"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 24, 24, 3),
            FusedMBConvConfig(4, 3, 2, 24, 48, 5),
            FusedMBConvConfig(4, 3, 2, 48, 80, 5),
            MBConvConfig(4, 3, 2, 80, 160, 7),
            MBConvConfig(6, 3, 1, 160, 176, 14),
            MBConvConfig(6, 3, 2, 176, 304, 18),
            MBConvConfig(6, 3, 1, 304, 512, 5),
        ]
    elif arch.startswith("efficientnet_v2_l"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 32, 32, 4),
            FusedMBConvConfig(4, 3, 2, 32, 64, 7),
            FusedMBConvConfig(4, 3, 2, 64, 96, 7),
            MBConvConfig(4, 3, 2, 96, 192, 10),
            MBConvConfig(6, 3, 1, 192, 224, 19),
            MBConvConfig(6, 3, 2, 224, 384, 25),
            MBConvConfig(6, 3, 1, 384, 640, 7),
        ]
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, 1280


def _create_efficientnet(variant, pretrained, progress, default_dropout, width_mult=1.0, depth_mult=1.0, **kwargs):
    """Build a registered variant from its table, with ``default_dropout`` unless ``kwargs`` give a ``dropout``."""
    setting, last_channel = _efficientnet_conf(variant, width_mult, depth_mult)
    return build_model(EfficientNet, variant, pretrained, progress=progress, inverted_residual_setting=setting,
                       dropout=kwargs.pop("dropout", default_dropout), last_channel=last_channel, **kwargs)


# B5-B7 were ported from TensorFlow with its BatchNorm settings; V2 keeps TensorFlow's epsilon only.
_TF_BN = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
_V2_BN = partial(nn.BatchNorm2d, eps=1e-03)


@register_model
def efficientnet_b0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0, the baseline (dropout 0.2)."""
    return _create_efficientnet("efficientnet_b0", pretrained, progress, 0.2, 1.0, 1.0, **kwargs)


@register_model
def efficientnet_b1(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B1: depth x1.1 (dropout 0.2)."""
    return _create_efficientnet("efficientnet_b1", pretrained, progress, 0.2, 1.0, 1.1, **kwargs)


@register_model
def efficientnet_b2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B2: width x1.1, depth x1.2 (dropout 0.3)."""
    return _create_efficientnet("efficientnet_b2", pretrained, progress, 0.3, 1.1, 1.2, **kwargs)


@register_model
def efficientnet_b3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3: width x1.2, depth x1.4 (dropout 0.3)."""
    return _create_efficientnet("efficientnet_b3", pretrained, progress, 0.3, 1.2, 1.4, **kwargs)


@register_model
def efficientnet_b4(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B4: width x1.4, depth x1.8 (dropout 0.4)."""
    return _create_efficientnet("efficientnet_b4", pretrained, progress, 0.4, 1.4, 1.8, **kwargs)


@register_model
def efficientnet_b5(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B5: width x1.6, depth x2.2 (dropout 0.4, BatchNorm eps 1e-3, momentum 0.01)."""
    return _create_efficientnet("efficientnet_b5", pretrained, progress, 0.4, 1.6, 2.2, norm_layer=_TF_BN, **kwargs)


@register_model
def efficientnet_b6(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B6: width x1.8, depth x2.6 (dropout 0.5, BatchNorm eps 1e-3, momentum 0.01)."""
    return _create_efficientnet("efficientnet_b6", pretrained, progress, 0.5, 1.8, 2.6, norm_layer=_TF_BN, **kwargs)


@register_model
def efficientnet_b7(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B7: width x2.0, depth x3.1 (dropout 0.5, BatchNorm eps 1e-3, momentum 0.01)."""
    return _create_efficientnet("efficientnet_b7", pretrained, progress, 0.5, 2.0, 3.1, norm_layer=_TF_BN, **kwargs)


@register_model
def efficientnet_v2_s(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-S (dropout 0.2, BatchNorm eps 1e-3)."""
    return _create_efficientnet("efficientnet_v2_s", pretrained, progress, 0.2, norm_layer=_V2_BN, **kwargs)


@register_model
def efficientnet_v2_m(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-M (dropout 0.3, BatchNorm eps 1e-3)."""
    return _create_efficientnet("efficientnet_v2_m", pretrained, progress, 0.3, norm_layer=_V2_BN, **kwargs)


@register_model
def efficientnet_v2_l(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-L (dropout 0.4, BatchNorm eps 1e-3)."""
    return _create_efficientnet("efficientnet_v2_l", pretrained, progress, 0.4, norm_layer=_V2_BN, **kwargs)
