"""MobileNetV3 (Howard et al. 2019, "Searching for MobileNetV3"), large and small.

Module names, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly; ``dilated=True`` replaces the last stage's stride by dilation (output stride 16) for
segmentation. The model API (``forward_features``, ``forward_head``, ``reset_classifier``,
``in_chans``) follows timm.
"""
from functools import partial

import engine as torch
from engine import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._features import sequential_feature_info
from ._helpers import build_model
from ._utils import _make_divisible, classifier_linear, init_mobilenet_weights, linear_or_identity
from .registry import register_model

__all__ = ["MobileNetV3"]


class InvertedResidualConfig:
    """One bottleneck's settings from the paper's tables, widths scaled by ``width_mult``.

    ``activation`` is ``"RE"`` (ReLU) or ``"HS"`` (hard-swish).
    """

    def __init__(self, input_channels, kernel, expanded_channels, out_channels, use_se, activation, stride,
                 dilation, width_mult):
        self.input_channels = self.adjust_channels(input_channels, width_mult)
        self.kernel = kernel
        self.expanded_channels = self.adjust_channels(expanded_channels, width_mult)
        self.out_channels = self.adjust_channels(out_channels, width_mult)
        self.use_se = use_se
        self.use_hs = activation == "HS"
        self.stride = stride
        self.dilation = dilation

    @staticmethod
    def adjust_channels(channels, width_mult):
        """``channels * width_mult`` rounded to a multiple of 8."""
        return _make_divisible(channels * width_mult, 8)


class InvertedResidual(nn.Module):
    """Expand (1x1), depthwise filter (kxk, strided or dilated), optional squeeze-excitation, project (1x1)."""

    def __init__(self, cnf, norm_layer, se_layer=partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        if not 1 <= cnf.stride <= 2:
            raise ValueError(f"illegal stride value {cnf.stride}")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels
        activation_layer = nn.Hardswish if cnf.use_hs else nn.ReLU
        layers = []
        if cnf.expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        stride = 1 if cnf.dilation > 1 else cnf.stride
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.expanded_channels, kernel_size=cnf.kernel,
                                           stride=stride, dilation=cnf.dilation, groups=cnf.expanded_channels,
                                           norm_layer=norm_layer, activation_layer=activation_layer))
        if cnf.use_se:
            squeeze_channels = _make_divisible(cnf.expanded_channels // 4, 8)
            layers.append(se_layer(cnf.expanded_channels, squeeze_channels))
        layers.append(Conv2dNormActivation(cnf.expanded_channels, cnf.out_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = cnf.out_channels
        self._is_cn = cnf.stride > 1

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


class MobileNetV3(nn.Module):
    """A hard-swish stem, the bottleneck sequence, a 1x1 conv to 6x the last width, pooling and a two-layer head.

    ``num_classes=0`` replaces the final linear layer with an identity (the ``last_channel`` features).
    """

    default_cfg = {"first_conv": "features.0.0", "classifier": "classifier.3"}

    def __init__(self, inverted_residual_setting, last_channel, num_classes=1000, block=None, norm_layer=None,
                 dropout=0.2, in_chans=3):
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not all(isinstance(s, InvertedResidualConfig) for s in inverted_residual_setting):
            raise TypeError("The inverted_residual_setting should be List[InvertedResidualConfig]")
        if block is None:
            block = InvertedResidual
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
        self.num_classes = num_classes
        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers = [Conv2dNormActivation(in_chans, firstconv_output_channels, kernel_size=3, stride=2,
                                       norm_layer=norm_layer, activation_layer=nn.Hardswish)]
        for cnf in inverted_residual_setting:
            layers.append(block(cnf, norm_layer))
        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = 6 * lastconv_input_channels
        layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.feature_info = sequential_feature_info(self.features, in_chans=in_chans)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.num_features = last_channel
        self.head_hidden_size = self.num_features
        self.classifier = nn.Sequential(
            nn.Linear(lastconv_output_channels, last_channel),
            nn.Hardswish(inplace=True),
            nn.Dropout(p=dropout, inplace=True),
            linear_or_identity(self.num_features, num_classes),
        )
        init_mobilenet_weights(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[3]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return the pre-logits)."""
        self.num_classes = num_classes
        self.classifier[3] = classifier_linear(self.num_features, num_classes)

    def forward_features(self, x):
        """The feature map after the last 1x1 conv (N, 6 * last bottleneck width, H/32, W/32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Pool, flatten, the hidden linear layer with hard-swish; then dropout and the classifier unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier[0](x)
        x = self.classifier[1](x)
        if pre_logits:
            return x
        x = self.classifier[2](x)
        return self.classifier[3](x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _mobilenet_v3_conf(arch, width_mult=1.0, reduced_tail=False, dilated=False):
    """The bottleneck table and head width of ``arch`` (paper Tables 1 and 2).

    ``reduced_tail`` halves the last stage's widths; ``dilated`` dilates it instead of striding.
    """
    bneck_conf = partial(InvertedResidualConfig, width_mult=width_mult)
    reduce_divider = 2 if reduced_tail else 1
    dilation = 2 if dilated else 1
    if arch == "mobilenet_v3_large":
        tail = 160 // reduce_divider
        setting = [
            bneck_conf(16, 3, 16, 16, False, "RE", 1, 1),
            bneck_conf(16, 3, 64, 24, False, "RE", 2, 1),  # C1
            bneck_conf(24, 3, 72, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 72, 40, True, "RE", 2, 1),  # C2
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 5, 120, 40, True, "RE", 1, 1),
            bneck_conf(40, 3, 240, 80, False, "HS", 2, 1),  # C3
            bneck_conf(80, 3, 200, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 184, 80, False, "HS", 1, 1),
            bneck_conf(80, 3, 480, 112, True, "HS", 1, 1),
            bneck_conf(112, 3, 672, 112, True, "HS", 1, 1),
            bneck_conf(112, 5, 672, tail, True, "HS", 2, dilation),  # C4
            bneck_conf(tail, 5, 960 // reduce_divider, tail, True, "HS", 1, dilation),
            bneck_conf(tail, 5, 960 // reduce_divider, tail, True, "HS", 1, dilation),
        ]
        last_channel = InvertedResidualConfig.adjust_channels(1280 // reduce_divider, width_mult)
    elif arch == "mobilenet_v3_small":
        tail = 96 // reduce_divider
        setting = [
            bneck_conf(16, 3, 16, 16, True, "RE", 2, 1),  # C1
            bneck_conf(16, 3, 72, 24, False, "RE", 2, 1),  # C2
            bneck_conf(24, 3, 88, 24, False, "RE", 1, 1),
            bneck_conf(24, 5, 96, 40, True, "HS", 2, 1),  # C3
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 240, 40, True, "HS", 1, 1),
            bneck_conf(40, 5, 120, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 144, 48, True, "HS", 1, 1),
            bneck_conf(48, 5, 288, tail, True, "HS", 2, dilation),  # C4
            bneck_conf(tail, 5, 576 // reduce_divider, tail, True, "HS", 1, dilation),
            bneck_conf(tail, 5, 576 // reduce_divider, tail, True, "HS", 1, dilation),
        ]
        last_channel = InvertedResidualConfig.adjust_channels(1024 // reduce_divider, width_mult)
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, last_channel


def _create_mobilenet_v3(variant, pretrained, progress, width_mult=1.0, reduced_tail=False, dilated=False,
                         **kwargs):
    """Build a registered MobileNetV3 variant from its table (architecture options are not passed to the model)."""
    setting, last_channel = _mobilenet_v3_conf(variant, width_mult, reduced_tail, dilated)
    return build_model(MobileNetV3, variant, pretrained, progress=progress, inverted_residual_setting=setting,
                       last_channel=last_channel, **kwargs)


@register_model
def mobilenet_v3_large(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large (``width_mult``, ``reduced_tail``, ``dilated`` shape the table)."""
    return _create_mobilenet_v3("mobilenet_v3_large", pretrained, progress, **kwargs)


@register_model
def mobilenet_v3_small(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small (``width_mult``, ``reduced_tail``, ``dilated`` shape the table)."""
    return _create_mobilenet_v3("mobilenet_v3_small", pretrained, progress, **kwargs)
