"""EfficientNet (Tan & Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks"),
EfficientNetV2 (Tan & Le 2021, "EfficientNetV2: Smaller Models and Faster Training"), MobileNetV2 (Sandler et al.
2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks"), MnasNet (Tan et al. 2019, "MnasNet:
Platform-Aware Neural Architecture Search for Mobile") and MixNet (Tan & Le 2019, "MixConv: Mixed Depthwise
Convolutional Kernels"), as timm builds them: tf_efficientnet_b0 .. b7, efficientnetv2_rw_s / rw_t,
tf_efficientnetv2_s / m / l / b0 .. b3, mobilenetv2_100 / 110d / 120d / 140, mnasnet_100, semnasnet_100,
spnasnet_100, fbnetc_100, mixnet_s / m / l / xl and tf_mixnet_s / m / l.

One generic network, a stem convolution, stages of blocks and a 1x1 head convolution before global pooling, is
built from stage definitions written as strings ('ir_r2_k3_s2_e6_c24_se0.25': two inverted-residual blocks, 3x3
depthwise, first stride 2, expansion 6, 24 channels, squeeze-and-excitation 0.25), scaled in width and depth by
the compound coefficients. MixNet's strings list several kernels ('k3.5.7': the channels split in three groups
with 3x3, 5x5 and 7x7 kernels; 'a1.1' / 'p1.1': pointwise convolutions in two groups). The ``tf_`` variants are
ports of TensorFlow checkpoints: BatchNorm epsilon 1e-3 and TensorFlow's "same" padding (asymmetric for strided
convolutions). Model names, module names, ``state_dict`` keys and the model API follow timm, so timm's weights for
these models load as they are.
"""
from functools import partial

import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from .._utils import _make_divisible
from ._efficientnet_blocks import (SqueezeExcite, build_stages, create_conv2d, decode_arch_def, init_weights_goog,
                                   round_channels)
from ._layers import BatchNormAct2d, create_classifier

__all__ = []


class EfficientNet(nn.Module):
    """A strided stem convolution (``conv_stem``, ``bn1``), the stages of ``block_args`` (``blocks``, one
    Sequential per stage), a 1x1 head convolution to ``num_features`` channels (``conv_head``, ``bn2``), global
    pooling, dropout and the classifier.

    ``block_args``: the decoded stages (``decode_arch_def``). Channel counts pass through ``channel_multiplier``,
    rounded to multiples of 8 (``round_limit``: how far rounding may go down); ``fix_stem`` keeps the stem width
    as given. ``pad_type`` '' pads PyTorch style, 'same' as TensorFlow. ``act_layer`` is the blocks' default
    activation, ``bn_eps`` the BatchNorm epsilon. Squeeze-and-excitation ratios count the block's input channels.
    ``output_stride`` (8, 16 or 32) turns the strides beyond it into dilation. ``drop_path_rate`` grows linearly
    over the blocks (from 0 at the first); ``drop_rate`` is the dropout before the classifier. The stages end where
    the next stage strides (``feature_info``).
    """

    default_cfg = {"first_conv": "conv_stem", "classifier": "classifier"}

    def __init__(self, block_args, num_classes=1000, num_features=1280, in_chans=3, stem_size=32, fix_stem=False,
                 channel_multiplier=1.0, round_limit=0.9, output_stride=32, pad_type="", act_layer=nn.SiLU,
                 bn_eps=1e-5, drop_rate=0.0, drop_path_rate=0.0, global_pool="avg"):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        round_chs = partial(round_channels, multiplier=channel_multiplier, round_limit=round_limit)
        if not fix_stem:
            stem_size = round_chs(stem_size)
        self.conv_stem = create_conv2d(in_chans, stem_size, 3, stride=2, pad_type=pad_type)
        self.bn1 = BatchNormAct2d(stem_size, bn_eps, act_layer)
        self.blocks, self.feature_info, head_chs = build_stages(
            block_args, stem_size, round_chs, output_stride, pad_type, act_layer, bn_eps, SqueezeExcite,
            drop_path_rate=drop_path_rate)
        self.num_features = num_features
        self.conv_head = create_conv2d(head_chs, num_features, 1, pad_type=pad_type)
        self.bn2 = BatchNormAct2d(num_features, bn_eps, act_layer)
        self.global_pool, self.classifier = create_classifier(num_features, num_classes, global_pool)
        self.head_hidden_size = num_features * self.global_pool.feat_mult()
        init_weights_goog(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), optionally with another pooling."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.classifier = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()

    def forward_features(self, x):
        """The head convolution's map: (N, num_features, H / 32, W / 32) at the default output stride."""
        x = self.conv_stem(x)
        x = self.bn1(x)
        x = self.blocks(x)
        x = self.conv_head(x)
        x = self.bn2(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pool and drop out; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        if pre_logits:
            return x
        return self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create(variant, pretrained, progress, arch_def, depth_multiplier=1.0, depth_trunc="ceil", fix_first_last=False,
            tf_port=False, **kwargs):
    """Build a registered variant from its stage strings; ``tf_port`` sets TensorFlow's BatchNorm epsilon and
    padding (``kwargs`` may override them and any other ``EfficientNet`` argument)."""
    if tf_port:
        kwargs = {"bn_eps": 1e-3, "pad_type": "same", **kwargs}
    block_args = decode_arch_def(arch_def, depth_multiplier, depth_trunc, fix_first_last)
    return build_model(EfficientNet, variant, pretrained, progress=progress, block_args=block_args, **kwargs)


_EFFICIENTNET = [
    ["ds_r1_k3_s1_e1_c16_se0.25"],
    ["ir_r2_k3_s2_e6_c24_se0.25"],
    ["ir_r2_k5_s2_e6_c40_se0.25"],
    ["ir_r3_k3_s2_e6_c80_se0.25"],
    ["ir_r3_k5_s1_e6_c112_se0.25"],
    ["ir_r4_k5_s2_e6_c192_se0.25"],
    ["ir_r1_k3_s1_e6_c320_se0.25"],
]


def _efficientnet(variant, pretrained, progress, channel_multiplier, depth_multiplier, **kwargs):
    """EfficientNet-B0 scaled by the compound coefficients, head width 1280 scaled with the channels."""
    num_features = _make_divisible(1280 * channel_multiplier, 8)
    return _create(variant, pretrained, progress, _EFFICIENTNET, depth_multiplier, tf_port=True,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features, **kwargs})


@register_model
def tf_efficientnet_b0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0, ported from TensorFlow (5.3M parameters, 224 px)."""
    return _efficientnet("tf_efficientnet_b0", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def tf_efficientnet_b1(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B1, ported from TensorFlow (7.8M parameters, 240 px)."""
    return _efficientnet("tf_efficientnet_b1", pretrained, progress, 1.0, 1.1, **kwargs)


@register_model
def tf_efficientnet_b2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B2, ported from TensorFlow (9.1M parameters, 260 px)."""
    return _efficientnet("tf_efficientnet_b2", pretrained, progress, 1.1, 1.2, **kwargs)


@register_model
def tf_efficientnet_b3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3, ported from TensorFlow (12.2M parameters, 300 px)."""
    return _efficientnet("tf_efficientnet_b3", pretrained, progress, 1.2, 1.4, **kwargs)


@register_model
def tf_efficientnet_b4(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B4, ported from TensorFlow (19.3M parameters, 380 px)."""
    return _efficientnet("tf_efficientnet_b4", pretrained, progress, 1.4, 1.8, **kwargs)


@register_model
def tf_efficientnet_b5(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B5, ported from TensorFlow (30.4M parameters, 456 px)."""
    return _efficientnet("tf_efficientnet_b5", pretrained, progress, 1.6, 2.2, **kwargs)


@register_model
def tf_efficientnet_b6(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B6, ported from TensorFlow (43.0M parameters, 528 px)."""
    return _efficientnet("tf_efficientnet_b6", pretrained, progress, 1.8, 2.6, **kwargs)


@register_model
def tf_efficientnet_b7(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B7, ported from TensorFlow (66.3M parameters, 600 px)."""
    return _efficientnet("tf_efficientnet_b7", pretrained, progress, 2.0, 3.1, **kwargs)


def _efficientnetv2_base(variant, pretrained, progress, channel_multiplier, depth_multiplier, **kwargs):
    """EfficientNetV2-B0 scaled by the compound coefficients (channels rounded up, never down), a TensorFlow
    port."""
    arch_def = [
        ["cn_r1_k3_s1_e1_c16_skip"],
        ["er_r2_k3_s2_e4_c32"],
        ["er_r2_k3_s2_e4_c48"],
        ["ir_r3_k3_s2_e4_c96_se0.25"],
        ["ir_r5_k3_s1_e6_c112_se0.25"],
        ["ir_r8_k3_s2_e6_c192_se0.25"],
    ]
    num_features = _make_divisible(1280 * channel_multiplier, 8, round_limit=0.0)
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, tf_port=True,
                   **{"channel_multiplier": channel_multiplier, "round_limit": 0.0, "num_features": num_features,
                      **kwargs})


def _efficientnetv2_s(variant, pretrained, progress, channel_multiplier=1.0, depth_multiplier=1.0, rw=False,
                      tf_port=False, **kwargs):
    """EfficientNetV2-S; ``rw``: timm's own first version (a fused first stage without skip, 272 channels in the
    last stage, a 1792-channel head)."""
    arch_def = [
        ["er_r2_k3_s1_e1_c24"] if rw else ["cn_r2_k3_s1_e1_c24_skip"],
        ["er_r4_k3_s2_e4_c48"],
        ["er_r4_k3_s2_e4_c64"],
        ["ir_r6_k3_s2_e4_c128_se0.25"],
        ["ir_r9_k3_s1_e6_c160_se0.25"],
        ["ir_r15_k3_s2_e6_c272_se0.25"] if rw else ["ir_r15_k3_s2_e6_c256_se0.25"],
    ]
    num_features = _make_divisible((1792 if rw else 1280) * channel_multiplier, 8)
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, tf_port=tf_port,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features, "stem_size": 24,
                      **kwargs})


@register_model
def efficientnetv2_rw_s(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-S as timm first trained it, before the official release (23.9M parameters)."""
    return _efficientnetv2_s("efficientnetv2_rw_s", pretrained, progress, rw=True, **kwargs)


@register_model
def efficientnetv2_rw_t(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-T, timm's tiny EfficientNetV2-S: widths x0.8, depths x0.9 (13.6M parameters)."""
    return _efficientnetv2_s("efficientnetv2_rw_t", pretrained, progress, 0.8, 0.9, **kwargs)


@register_model
def tf_efficientnetv2_s(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-S, ported from TensorFlow (21.5M parameters)."""
    return _efficientnetv2_s("tf_efficientnetv2_s", pretrained, progress, tf_port=True, **kwargs)


@register_model
def tf_efficientnetv2_m(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-M, ported from TensorFlow (54.1M parameters)."""
    arch_def = [
        ["cn_r3_k3_s1_e1_c24_skip"],
        ["er_r5_k3_s2_e4_c48"],
        ["er_r5_k3_s2_e4_c80"],
        ["ir_r7_k3_s2_e4_c160_se0.25"],
        ["ir_r14_k3_s1_e6_c176_se0.25"],
        ["ir_r18_k3_s2_e6_c304_se0.25"],
        ["ir_r5_k3_s1_e6_c512_se0.25"],
    ]
    return _create("tf_efficientnetv2_m", pretrained, progress, arch_def, tf_port=True, **{"stem_size": 24, **kwargs})


@register_model
def tf_efficientnetv2_l(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-L, ported from TensorFlow (118.5M parameters)."""
    arch_def = [
        ["cn_r4_k3_s1_e1_c32_skip"],
        ["er_r7_k3_s2_e4_c64"],
        ["er_r7_k3_s2_e4_c96"],
        ["ir_r10_k3_s2_e4_c192_se0.25"],
        ["ir_r19_k3_s1_e6_c224_se0.25"],
        ["ir_r25_k3_s2_e6_c384_se0.25"],
        ["ir_r7_k3_s1_e6_c640_se0.25"],
    ]
    return _create("tf_efficientnetv2_l", pretrained, progress, arch_def, tf_port=True, **kwargs)


@register_model
def tf_efficientnetv2_b0(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-B0, ported from TensorFlow (7.1M parameters)."""
    return _efficientnetv2_base("tf_efficientnetv2_b0", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def tf_efficientnetv2_b1(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-B1, ported from TensorFlow (8.1M parameters)."""
    return _efficientnetv2_base("tf_efficientnetv2_b1", pretrained, progress, 1.0, 1.1, **kwargs)


@register_model
def tf_efficientnetv2_b2(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-B2, ported from TensorFlow (10.1M parameters)."""
    return _efficientnetv2_base("tf_efficientnetv2_b2", pretrained, progress, 1.1, 1.2, **kwargs)


@register_model
def tf_efficientnetv2_b3(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-B3, ported from TensorFlow (14.4M parameters)."""
    return _efficientnetv2_base("tf_efficientnetv2_b3", pretrained, progress, 1.2, 1.4, **kwargs)


def _mobilenetv2(variant, pretrained, progress, channel_multiplier, depth_multiplier=1.0, fix_stem_head=False,
                 **kwargs):
    """MobileNetV2 (Sandler et al. 2018) with ReLU6, scaled; ``fix_stem_head`` keeps the stem, the first and last
    stages' depths and the 1280-channel head unscaled."""
    arch_def = [
        ["ds_r1_k3_s1_c16"],
        ["ir_r2_k3_s2_e6_c24"],
        ["ir_r3_k3_s2_e6_c32"],
        ["ir_r4_k3_s2_e6_c64"],
        ["ir_r3_k3_s1_e6_c96"],
        ["ir_r3_k3_s2_e6_c160"],
        ["ir_r1_k3_s1_e6_c320"],
    ]
    num_features = 1280 if fix_stem_head else max(1280, _make_divisible(1280 * channel_multiplier, 8))
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, fix_first_last=fix_stem_head,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features,
                      "fix_stem": fix_stem_head, "act_layer": nn.ReLU6, **kwargs})


@register_model
def mobilenetv2_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 1.0 as timm trained it (3.5M parameters)."""
    return _mobilenetv2("mobilenetv2_100", pretrained, progress, 1.0, **kwargs)


@register_model
def mobilenetv2_110d(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 with widths x1.1 and depths x1.2, stem and head fixed (4.5M parameters)."""
    return _mobilenetv2("mobilenetv2_110d", pretrained, progress, 1.1, 1.2, fix_stem_head=True, **kwargs)


@register_model
def mobilenetv2_120d(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 with widths x1.2 and depths x1.4, stem and head fixed (5.8M parameters)."""
    return _mobilenetv2("mobilenetv2_120d", pretrained, progress, 1.2, 1.4, fix_stem_head=True, **kwargs)


@register_model
def mobilenetv2_140(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 1.4 (6.1M parameters)."""
    return _mobilenetv2("mobilenetv2_140", pretrained, progress, 1.4, **kwargs)


@register_model
def mnasnet_100(pretrained=False, progress=True, **kwargs):
    """MnasNet-B1 1.0 (Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile"), ReLU
    and no squeeze-and-excitation, as timm trained it (4.4M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_c16_noskip"],
        ["ir_r3_k3_s2_e3_c24"],
        ["ir_r3_k5_s2_e3_c40"],
        ["ir_r3_k5_s2_e6_c80"],
        ["ir_r2_k3_s1_e6_c96"],
        ["ir_r4_k5_s2_e6_c192"],
        ["ir_r1_k3_s1_e6_c320_noskip"],
    ]
    return _create("mnasnet_100", pretrained, progress, arch_def, **{"act_layer": nn.ReLU, **kwargs})


@register_model
def semnasnet_100(pretrained=False, progress=True, **kwargs):
    """MnasNet-A1 1.0, MnasNet with squeeze-and-excitation in some stages, ReLU (3.9M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_noskip"],
        ["ir_r2_k3_s2_e6_c24"],
        ["ir_r3_k5_s2_e3_c40_se0.25"],
        ["ir_r4_k3_s2_e6_c80"],
        ["ir_r2_k3_s1_e6_c112_se0.25"],
        ["ir_r3_k5_s2_e6_c160_se0.25"],
        ["ir_r1_k3_s1_e6_c320"],
    ]
    return _create("semnasnet_100", pretrained, progress, arch_def, **{"act_layer": nn.ReLU, **kwargs})


@register_model
def spnasnet_100(pretrained=False, progress=True, **kwargs):
    """Single-Path NAS 1.0 (Stamoulis et al. 2019), an MnasNet-like search result with ReLU (4.4M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_c16_noskip"],
        ["ir_r3_k3_s2_e3_c24"],
        ["ir_r1_k5_s2_e6_c40", "ir_r3_k3_s1_e3_c40"],
        ["ir_r1_k5_s2_e6_c80", "ir_r3_k3_s1_e3_c80"],
        ["ir_r1_k5_s1_e6_c96", "ir_r3_k5_s1_e3_c96"],
        ["ir_r4_k5_s2_e6_c192"],
        ["ir_r1_k3_s1_e6_c320_noskip"],
    ]
    return _create("spnasnet_100", pretrained, progress, arch_def, **{"act_layer": nn.ReLU, **kwargs})


@register_model
def fbnetc_100(pretrained=False, progress=True, **kwargs):
    """FBNet-C 1.0 (Wu et al. 2019), a 16-channel stem and a 1984-channel head, ReLU (5.6M parameters)."""
    arch_def = [
        ["ir_r1_k3_s1_e1_c16"],
        ["ir_r1_k3_s2_e6_c24", "ir_r2_k3_s1_e1_c24"],
        ["ir_r1_k5_s2_e6_c32", "ir_r1_k5_s1_e3_c32", "ir_r1_k5_s1_e6_c32", "ir_r1_k3_s1_e6_c32"],
        ["ir_r1_k5_s2_e6_c64", "ir_r1_k5_s1_e3_c64", "ir_r2_k5_s1_e6_c64"],
        ["ir_r3_k5_s1_e6_c112", "ir_r1_k5_s1_e3_c112"],
        ["ir_r4_k5_s2_e6_c184"],
        ["ir_r1_k3_s1_e6_c352"],
    ]
    return _create("fbnetc_100", pretrained, progress, arch_def,
                   **{"stem_size": 16, "num_features": 1984, "act_layer": nn.ReLU, **kwargs})


def _mixnet_s(variant, pretrained, progress, tf_port=False, **kwargs):
    """MixNet-S: mixed depthwise kernels (up to 11x11), grouped pointwise convolutions, ReLU in the first stages and
    SiLU with squeeze-and-excitation after them, a 1536-channel head."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16"],
        ["ir_r1_k3_a1.1_p1.1_s2_e6_c24", "ir_r1_k3_a1.1_p1.1_s1_e3_c24"],
        ["ir_r1_k3.5.7_s2_e6_c40_se0.5_nsw", "ir_r3_k3.5_a1.1_p1.1_s1_e6_c40_se0.5_nsw"],
        ["ir_r1_k3.5.7_p1.1_s2_e6_c80_se0.25_nsw", "ir_r2_k3.5_p1.1_s1_e6_c80_se0.25_nsw"],
        ["ir_r1_k3.5.7_a1.1_p1.1_s1_e6_c120_se0.5_nsw", "ir_r2_k3.5.7.9_a1.1_p1.1_s1_e3_c120_se0.5_nsw"],
        ["ir_r1_k3.5.7.9.11_s2_e6_c200_se0.5_nsw", "ir_r2_k3.5.7.9_p1.1_s1_e6_c200_se0.5_nsw"],
    ]
    return _create(variant, pretrained, progress, arch_def, tf_port=tf_port,
                   **{"num_features": 1536, "stem_size": 16, "act_layer": nn.ReLU, **kwargs})


def _mixnet_m(variant, pretrained, progress, channel_multiplier=1.0, depth_multiplier=1.0, tf_port=False,
              **kwargs):
    """MixNet-M, scaled in width (and depth, rounded to the nearest block count): MixNet-L is x1.3 wide, timm's
    MixNet-XL x1.6 wide and x1.2 deep."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c24"],
        ["ir_r1_k3.5.7_a1.1_p1.1_s2_e6_c32", "ir_r1_k3_a1.1_p1.1_s1_e3_c32"],
        ["ir_r1_k3.5.7.9_s2_e6_c40_se0.5_nsw", "ir_r3_k3.5_a1.1_p1.1_s1_e6_c40_se0.5_nsw"],
        ["ir_r1_k3.5.7_s2_e6_c80_se0.25_nsw", "ir_r3_k3.5.7.9_a1.1_p1.1_s1_e6_c80_se0.25_nsw"],
        ["ir_r1_k3_s1_e6_c120_se0.5_nsw", "ir_r3_k3.5.7.9_a1.1_p1.1_s1_e3_c120_se0.5_nsw"],
        ["ir_r1_k3.5.7.9_s2_e6_c200_se0.5_nsw", "ir_r3_k3.5.7.9_p1.1_s1_e6_c200_se0.5_nsw"],
    ]
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, "round", tf_port=tf_port,
                   **{"num_features": 1536, "stem_size": 24, "channel_multiplier": channel_multiplier,
                      "act_layer": nn.ReLU, **kwargs})


@register_model
def mixnet_s(pretrained=False, progress=True, **kwargs):
    """MixNet-S as timm trained it (4.1M parameters)."""
    return _mixnet_s("mixnet_s", pretrained, progress, **kwargs)


@register_model
def mixnet_m(pretrained=False, progress=True, **kwargs):
    """MixNet-M as timm trained it (5.0M parameters)."""
    return _mixnet_m("mixnet_m", pretrained, progress, **kwargs)


@register_model
def mixnet_l(pretrained=False, progress=True, **kwargs):
    """MixNet-L (MixNet-M x1.3 wide) as timm trained it (7.3M parameters)."""
    return _mixnet_m("mixnet_l", pretrained, progress, 1.3, **kwargs)


@register_model
def mixnet_xl(pretrained=False, progress=True, **kwargs):
    """MixNet-XL, timm's MixNet-M x1.6 wide and x1.2 deep (11.9M parameters)."""
    return _mixnet_m("mixnet_xl", pretrained, progress, 1.6, 1.2, **kwargs)


@register_model
def tf_mixnet_s(pretrained=False, progress=True, **kwargs):
    """MixNet-S, ported from TensorFlow (4.1M parameters)."""
    return _mixnet_s("tf_mixnet_s", pretrained, progress, tf_port=True, **kwargs)


@register_model
def tf_mixnet_m(pretrained=False, progress=True, **kwargs):
    """MixNet-M, ported from TensorFlow (5.0M parameters)."""
    return _mixnet_m("tf_mixnet_m", pretrained, progress, tf_port=True, **kwargs)


@register_model
def tf_mixnet_l(pretrained=False, progress=True, **kwargs):
    """MixNet-L, ported from TensorFlow (7.3M parameters)."""
    return _mixnet_m("tf_mixnet_l", pretrained, progress, 1.3, tf_port=True, **kwargs)
