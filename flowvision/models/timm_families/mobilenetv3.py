"""MobileNetV3 (Howard et al. 2019, "Searching for MobileNetV3") and the networks timm builds the same way: FBNetV3
(Dai et al. 2020, "FBNetV3: Joint Architecture-Recipe Search using Predictor Pretraining"), PP-LCNet (Cui et al.
2021, "PP-LCNet: A Lightweight CPU Convolutional Neural Network") and MobileNetV4 (Qin et al. 2024, "MobileNetV4:
Universal Models for the Mobile Ecosystem"): mobilenetv3_large_075 / 100 / 150d, mobilenetv3_small_050 / 075 / 100,
mobilenetv3_rw, the tf_mobilenetv3_* ports, fbnetv3_b / d / g, lcnet_035 / 050 / 075 / 100 / 150 and
mobilenetv4_conv_* / mobilenetv4_hybrid_* (mobilenetv3_large_075, lcnet_035 / 150, mobilenetv4_conv_small_035,
mobilenetv4_conv_aa_medium and mobilenetv4_hybrid_medium_075 / large_075 without published weights).

The trunk is timm's EfficientNet builder's (stage strings decoded into blocks, see ``_efficientnet_blocks``); the
head is MobileNetV3's "efficient head": global pooling first, then a 1x1 convolution to ``head_hidden_size``
channels with an activation (MobileNetV4: BatchNorm and activation) and the classifier, so that the costly head
convolution runs on one pixel. Hard-swish activations and hard-sigmoid squeeze-and-excitation gates replace swish
and sigmoid; MobileNetV4 adds the universal inverted bottleneck and, in its hybrids, multi-query attention. Model
names, module names, ``state_dict`` keys, initialisation and the model API follow timm's ``mobilenetv3`` module,
so timm's weights for these models load as they are. (torchvision's own MobileNetV3, ``mobilenet_v3_large`` /
``_small``, is a different implementation with other names.)
"""
from functools import partial

import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d
from ._efficientnet_blocks import SqueezeExcite, build_stages, decode_arch_def, init_weights_goog, round_channels
from ._layers import BatchNormAct2d, SelectAdaptivePool2d
from .efficientnet import prune_trunk, trunk_intermediates

__all__ = []


class MobileNetV3(nn.Module):
    """A strided stem convolution (``conv_stem``, ``bn1``), the stages of ``block_args`` (``blocks``), then the
    efficient head: global pooling, a 1x1 convolution to ``num_features`` channels (``conv_head``), BatchNorm and
    activation (``norm_head``, with ``head_norm``) or the activation alone (``act2``), flattening, dropout and the
    classifier.

    ``block_args``: the decoded stages (``decode_arch_def``). Channel counts pass through ``channel_multiplier``,
    rounded to multiples of 8 (``round_limit``: how far rounding may go down); ``fix_stem`` keeps the stem width
    as given. ``pad_type`` '' pads PyTorch style, 'same' as TensorFlow. ``act_layer`` is the default activation,
    ``bn_eps`` the BatchNorm epsilon. ``se_layer`` builds the squeeze-and-excitation layers, whose ratios count the
    expanded channels with ``se_from_exp`` (else the block's input channels). ``aa_layer`` ('avg' or 'blurpc') makes
    strided convolutions anti-aliased; ``layer_scale_init_value`` gives MobileNetV4's blocks a layer scale.
    ``head_bias``: whether the head convolution has a bias. ``drop_path_rate`` grows linearly over the blocks;
    ``drop_rate`` is the dropout before the classifier. ``output_stride`` (8, 16 or 32) turns the strides beyond it
    into dilation (timm takes it for ``features_only`` models).

    ``num_features`` is the trunk's width (the last block's channels, ``forward_features``), ``head_hidden_size``
    the head convolution's (the pre-logits features), as in timm.
    """

    default_cfg = {"first_conv": "conv_stem", "classifier": "classifier"}

    def __init__(self, block_args, num_classes=1000, in_chans=3, stem_size=16, fix_stem=False, num_features=1280,
                 head_bias=True, head_norm=False, pad_type="", act_layer=nn.ReLU, bn_eps=1e-5,
                 se_layer=SqueezeExcite, se_from_exp=True, channel_multiplier=1.0, round_limit=0.9, aa_layer=None,
                 drop_rate=0.0, drop_path_rate=0.0, layer_scale_init_value=None, global_pool="avg", output_stride=32):
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
        self.blocks, self.feature_info, self.num_features = build_stages(
            block_args, stem_size, round_chs, output_stride, pad_type, act_layer, bn_eps, se_layer, se_from_exp,
            aa_layer, drop_path_rate, layer_scale_init_value)
        self.head_hidden_size = num_features
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        pooled_chs = self.num_features * self.global_pool.feat_mult()
        if head_norm:
            self.conv_head = create_conv2d(pooled_chs, num_features, 1, pad_type=pad_type)
            self.norm_head = BatchNormAct2d(num_features, bn_eps, act_layer)
            self.act2 = nn.Identity()
        else:
            self.conv_head = create_conv2d(pooled_chs, num_features, 1, pad_type=pad_type, bias=head_bias)
            self.norm_head = nn.Identity()
            self.act2 = act_layer()
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.classifier = nn.Linear(num_features, num_classes) if num_classes > 0 else nn.Identity()
        init_weights_goog(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pre-logits features), optionally after another global
        pooling; the head convolution stays, so the pooling must keep the channel count ('catavgmax' cannot). Once
        ``prune_intermediate_layers`` removed the head convolution, the pre-logits are the pooled features."""
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        pool = SelectAdaptivePool2d(global_pool, flatten=False)
        if isinstance(self.conv_head, nn.Identity):
            self.head_hidden_size = self.num_features * pool.feat_mult()
        elif self.conv_head.in_channels != self.num_features * pool.feat_mult():
            raise ValueError(f"global_pool '{global_pool}' changes the pooled width, which the head convolution "
                             f"({self.conv_head.in_channels} input channels) cannot take")
        self.num_classes = num_classes
        self.global_pool = pool
        self.global_pool.train(self.training)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.flatten.train(self.training)
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        self.classifier.train(self.training)

    def forward_features(self, x):
        """The last stage's map: (N, num_features, H / 32, W / 32)."""
        x = self.conv_stem(x)
        x = self.bn1(x)
        x = self.blocks(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False, extra_blocks=False):
        """timm's intermediate maps: those of the ``feature_info`` levels ``indices`` picks (None: all, n: the last n,
        or a list; the stem's ``bn1`` output where the first stage strides, each level's stage output), or with
        ``extra_blocks`` of every position (0: the stem, i: stage ``i - 1``), in forward order; unless
        ``intermediates_only``, the last stage's map too (``forward_features``: the head convolution runs after
        pooling). ``stop_early`` skips the stages after the last one picked, and needs ``intermediates_only``, as in
        timm. ``norm`` is accepted for timm's signature: no norm follows the stages."""
        if stop_early and not intermediates_only:
            raise ValueError("stop_early needs intermediates_only=True (the final map needs every stage)")
        x, intermediates, _ = trunk_intermediates(self, x, indices, stop_early, output_fmt, extra_blocks)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, extra_blocks=False):
        """Drop the stages after the last level ``indices`` picks (levels counted as ``forward_intermediates``
        counts them), ``num_features`` then the last level's width; when stages go or with ``prune_head``, the
        efficient head too (``conv_head``, ``norm_head``, ``act2``) and the classifier, as timm does, the
        pre-logits then the unpooled map. ``prune_norm`` is accepted for timm's signature: there is no final norm.
        Returns the picked level indices."""
        take, prune_end, last_chs = prune_trunk(self, indices, extra_blocks)
        if prune_end:
            self.num_features = last_chs
        if prune_end or prune_head:
            self.conv_head = nn.Identity()
            self.norm_head = nn.Identity()
            self.act2 = nn.Identity()
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Pool, the head convolution and its activation, flatten, drop out; then the classifier unless
        ``pre_logits``."""
        x = self.global_pool(x)
        x = self.conv_head(x)
        x = self.norm_head(x)
        x = self.act2(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        if pre_logits:
            return x
        return self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create(variant, pretrained, progress, arch_def, depth_multiplier=1.0, tf_port=False, **kwargs):
    """Build a registered variant from its stage strings; ``tf_port`` sets TensorFlow's BatchNorm epsilon and
    padding (``kwargs`` may override them and any other ``MobileNetV3`` argument)."""
    if tf_port:
        kwargs = {"bn_eps": 1e-3, "pad_type": "same", **kwargs}
    block_args = decode_arch_def(arch_def, depth_multiplier)
    return build_model(MobileNetV3, variant, pretrained, progress=progress, block_args=block_args, **kwargs)


# MobileNetV3's squeeze-and-excitation: ReLU inside, a hard-sigmoid gate, reduced widths rounded to multiples of 8
_SE_MNV3 = partial(SqueezeExcite, gate_layer=nn.Hardsigmoid, force_act_layer=nn.ReLU, rd_round_fn=round_channels)

_MNV3_LARGE = [
    ["ds_r1_k3_s1_e1_c16_nre"],
    ["ir_r1_k3_s2_e4_c24_nre", "ir_r1_k3_s1_e3_c24_nre"],
    ["ir_r3_k5_s2_e3_c40_se0.25_nre"],
    ["ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"],
    ["ir_r2_k3_s1_e6_c112_se0.25"],
    ["ir_r3_k5_s2_e6_c160_se0.25"],
    ["cn_r1_k1_s1_c960"],
]
_MNV3_LARGE_MINIMAL = [
    ["ds_r1_k3_s1_e1_c16"],
    ["ir_r1_k3_s2_e4_c24", "ir_r1_k3_s1_e3_c24"],
    ["ir_r3_k3_s2_e3_c40"],
    ["ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"],
    ["ir_r2_k3_s1_e6_c112"],
    ["ir_r3_k3_s2_e6_c160"],
    ["cn_r1_k1_s1_c960"],
]
_MNV3_SMALL = [
    ["ds_r1_k3_s2_e1_c16_se0.25_nre"],
    ["ir_r1_k3_s2_e4.5_c24_nre", "ir_r1_k3_s1_e3.67_c24_nre"],
    ["ir_r1_k5_s2_e4_c40_se0.25", "ir_r2_k5_s1_e6_c40_se0.25"],
    ["ir_r2_k5_s1_e3_c48_se0.25"],
    ["ir_r3_k5_s2_e6_c96_se0.25"],
    ["cn_r1_k1_s1_c576"],
]
_MNV3_SMALL_MINIMAL = [
    ["ds_r1_k3_s2_e1_c16"],
    ["ir_r1_k3_s2_e4.5_c24", "ir_r1_k3_s1_e3.67_c24"],
    ["ir_r1_k3_s2_e4_c40", "ir_r2_k3_s1_e6_c40"],
    ["ir_r2_k3_s1_e3_c48"],
    ["ir_r3_k3_s2_e6_c96"],
    ["cn_r1_k1_s1_c576"],
]


def _mobilenetv3(variant, pretrained, progress, channel_multiplier, depth_multiplier=1.0, small=False,
                 minimal=False, tf_port=False, **kwargs):
    """MobileNetV3-Large (a 1280-channel head) or -Small (1024), scaled; the "minimal" versions have ReLU, 3x3
    kernels and no squeeze-and-excitation, the others hard-swish after the first stages. Widths below x0.75 keep
    the 16-channel stem."""
    if small:
        arch_def = _MNV3_SMALL_MINIMAL if minimal else _MNV3_SMALL
    else:
        arch_def = _MNV3_LARGE_MINIMAL if minimal else _MNV3_LARGE
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, tf_port=tf_port,
                   **{"num_features": 1024 if small else 1280, "stem_size": 16,
                      "fix_stem": channel_multiplier < 0.75, "channel_multiplier": channel_multiplier,
                      "act_layer": nn.ReLU if minimal else nn.Hardswish, "se_layer": _SE_MNV3, **kwargs})


@register_model
def mobilenetv3_large_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large 0.75, PyTorch's padding, without weights (4.0M parameters)."""
    return _mobilenetv3("mobilenetv3_large_075", pretrained, progress, 0.75, **kwargs)


@register_model
def mobilenetv3_large_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large 1.0 as timm trained it (5.5M parameters)."""
    return _mobilenetv3("mobilenetv3_large_100", pretrained, progress, 1.0, **kwargs)


@register_model
def mobilenetv3_large_150d(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large with widths x1.5 and depths x1.2, timm's (14.6M parameters)."""
    return _mobilenetv3("mobilenetv3_large_150d", pretrained, progress, 1.5, 1.2, **kwargs)


@register_model
def mobilenetv3_small_050(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small 0.5 as timm trained it (1.6M parameters)."""
    return _mobilenetv3("mobilenetv3_small_050", pretrained, progress, 0.5, small=True, **kwargs)


@register_model
def mobilenetv3_small_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small 0.75 as timm trained it (2.0M parameters)."""
    return _mobilenetv3("mobilenetv3_small_075", pretrained, progress, 0.75, small=True, **kwargs)


@register_model
def mobilenetv3_small_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small 1.0 as timm trained it (2.5M parameters)."""
    return _mobilenetv3("mobilenetv3_small_100", pretrained, progress, 1.0, small=True, **kwargs)


@register_model
def mobilenetv3_rw(pretrained=False, progress=True, **kwargs):
    """timm's first MobileNetV3-Large, trained before the official weights: squeeze-and-excitation with the
    block's activation and unrounded widths, no head bias, BatchNorm epsilon 1e-3 (5.5M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre_noskip"],
        ["ir_r1_k3_s2_e4_c24_nre", "ir_r1_k3_s1_e3_c24_nre"],
        ["ir_r3_k5_s2_e3_c40_se0.25_nre"],
        ["ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"],
        ["ir_r2_k3_s1_e6_c112_se0.25"],
        ["ir_r3_k5_s2_e6_c160_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    se_layer = partial(SqueezeExcite, gate_layer=nn.Hardsigmoid)
    return _create("mobilenetv3_rw", pretrained, progress, arch_def,
                   **{"head_bias": False, "bn_eps": 1e-3, "act_layer": nn.Hardswish, "se_layer": se_layer,
                      **kwargs})


@register_model
def tf_mobilenetv3_large_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large 0.75, ported from TensorFlow (4.0M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_large_075", pretrained, progress, 0.75, tf_port=True, **kwargs)


@register_model
def tf_mobilenetv3_large_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large 1.0, ported from TensorFlow (5.5M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_large_100", pretrained, progress, 1.0, tf_port=True, **kwargs)


@register_model
def tf_mobilenetv3_large_minimal_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Large minimal 1.0, ported from TensorFlow (3.9M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_large_minimal_100", pretrained, progress, 1.0, minimal=True, tf_port=True,
                        **kwargs)


@register_model
def tf_mobilenetv3_small_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small 0.75, ported from TensorFlow (2.0M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_small_075", pretrained, progress, 0.75, small=True, tf_port=True, **kwargs)


@register_model
def tf_mobilenetv3_small_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small 1.0, ported from TensorFlow (2.5M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_small_100", pretrained, progress, 1.0, small=True, tf_port=True, **kwargs)


@register_model
def tf_mobilenetv3_small_minimal_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV3-Small minimal 1.0, ported from TensorFlow (2.0M parameters)."""
    return _mobilenetv3("tf_mobilenetv3_small_minimal_100", pretrained, progress, 1.0, small=True, minimal=True,
                        tf_port=True, **kwargs)


def _fbnetv3(variant, pretrained, progress, arch_def, stem_size, **kwargs):
    """FBNetV3: hard-swish, hard-sigmoid squeeze-and-excitation sized from the block's input, widths rounded
    never below 95%, a bias-free 1984-channel head."""
    se_layer = partial(SqueezeExcite, gate_layer=nn.Hardsigmoid,
                       rd_round_fn=partial(round_channels, round_limit=0.95))
    return _create(variant, pretrained, progress, arch_def,
                   **{"num_features": 1984, "head_bias": False, "stem_size": stem_size, "round_limit": 0.95,
                      "se_from_exp": False, "act_layer": nn.Hardswish, "se_layer": se_layer, **kwargs})


@register_model
def fbnetv3_b(pretrained=False, progress=True, **kwargs):
    """FBNetV3-B as timm trained it (8.6M parameters)."""
    arch_def = [
        ["ds_r2_k3_s1_e1_c16"],
        ["ir_r1_k5_s2_e4_c24", "ir_r3_k5_s1_e2_c24"],
        ["ir_r1_k5_s2_e5_c40_se0.25", "ir_r4_k5_s1_e3_c40_se0.25"],
        ["ir_r1_k5_s2_e5_c72", "ir_r4_k3_s1_e3_c72"],
        ["ir_r1_k3_s1_e5_c120_se0.25", "ir_r5_k5_s1_e3_c120_se0.25"],
        ["ir_r1_k3_s2_e6_c184_se0.25", "ir_r5_k5_s1_e4_c184_se0.25", "ir_r1_k5_s1_e6_c224_se0.25"],
        ["cn_r1_k1_s1_c1344"],
    ]
    return _fbnetv3("fbnetv3_b", pretrained, progress, arch_def, 16, **kwargs)


@register_model
def fbnetv3_d(pretrained=False, progress=True, **kwargs):
    """FBNetV3-D as timm trained it (10.3M parameters)."""
    arch_def = [
        ["ds_r2_k3_s1_e1_c16"],
        ["ir_r1_k3_s2_e5_c24", "ir_r5_k3_s1_e2_c24"],
        ["ir_r1_k5_s2_e4_c40_se0.25", "ir_r4_k3_s1_e3_c40_se0.25"],
        ["ir_r1_k3_s2_e5_c72", "ir_r4_k3_s1_e3_c72"],
        ["ir_r1_k3_s1_e5_c128_se0.25", "ir_r6_k5_s1_e3_c128_se0.25"],
        ["ir_r1_k3_s2_e6_c208_se0.25", "ir_r5_k5_s1_e5_c208_se0.25", "ir_r1_k5_s1_e6_c240_se0.25"],
        ["cn_r1_k1_s1_c1440"],
    ]
    return _fbnetv3("fbnetv3_d", pretrained, progress, arch_def, 24, **kwargs)


@register_model
def fbnetv3_g(pretrained=False, progress=True, **kwargs):
    """FBNetV3-G as timm trained it (16.6M parameters)."""
    arch_def = [
        ["ds_r3_k3_s1_e1_c24"],
        ["ir_r1_k5_s2_e4_c40", "ir_r4_k5_s1_e2_c40"],
        ["ir_r1_k5_s2_e4_c56_se0.25", "ir_r4_k5_s1_e3_c56_se0.25"],
        ["ir_r1_k5_s2_e5_c104", "ir_r4_k3_s1_e3_c104"],
        ["ir_r1_k3_s1_e5_c160_se0.25", "ir_r8_k5_s1_e3_c160_se0.25"],
        ["ir_r1_k3_s2_e6_c264_se0.25", "ir_r6_k5_s1_e5_c264_se0.25", "ir_r2_k5_s1_e6_c288_se0.25"],
        ["cn_r1_k1_s1_c1728"],
    ]
    return _fbnetv3("fbnetv3_g", pretrained, progress, arch_def, 32, **kwargs)


def _lcnet(variant, pretrained, progress, channel_multiplier, **kwargs):
    """PP-LCNet: MobileNetV1-like depthwise-separable blocks with hard-swish after both convolutions, larger
    kernels and squeeze-and-excitation only at the end, MobileNetV3's head (1280 channels)."""
    arch_def = [
        ["dsa_r1_k3_s1_c32"],
        ["dsa_r2_k3_s2_c64"],
        ["dsa_r2_k3_s2_c128"],
        ["dsa_r1_k3_s2_c256", "dsa_r1_k5_s1_c256"],
        ["dsa_r4_k5_s1_c256"],
        ["dsa_r2_k5_s2_c512_se0.25"],
    ]
    se_layer = partial(SqueezeExcite, gate_layer=nn.Hardsigmoid, force_act_layer=nn.ReLU)
    return _create(variant, pretrained, progress, arch_def,
                   **{"stem_size": 16, "channel_multiplier": channel_multiplier, "act_layer": nn.Hardswish,
                      "se_layer": se_layer, "num_features": 1280, **kwargs})


@register_model
def lcnet_035(pretrained=False, progress=True, **kwargs):
    """PP-LCNet 0.35, without weights (1.6M parameters)."""
    return _lcnet("lcnet_035", pretrained, progress, 0.35, **kwargs)


@register_model
def lcnet_050(pretrained=False, progress=True, **kwargs):
    """PP-LCNet 0.5 as timm trained it (1.9M parameters)."""
    return _lcnet("lcnet_050", pretrained, progress, 0.5, **kwargs)


@register_model
def lcnet_075(pretrained=False, progress=True, **kwargs):
    """PP-LCNet 0.75 as timm trained it (2.4M parameters)."""
    return _lcnet("lcnet_075", pretrained, progress, 0.75, **kwargs)


@register_model
def lcnet_100(pretrained=False, progress=True, **kwargs):
    """PP-LCNet 1.0 as timm trained it (3.0M parameters)."""
    return _lcnet("lcnet_100", pretrained, progress, 1.0, **kwargs)


@register_model
def lcnet_150(pretrained=False, progress=True, **kwargs):
    """PP-LCNet 1.5, without weights (4.5M parameters)."""
    return _lcnet("lcnet_150", pretrained, progress, 1.5, **kwargs)


_MNV4_CONV_SMALL = [
    ["cn_r1_k3_s2_e1_c32", "cn_r1_k1_s1_e1_c32"],
    ["cn_r1_k3_s2_e1_c96", "cn_r1_k1_s1_e1_c64"],
    ["uir_r1_a5_k5_s2_e3_c96", "uir_r4_a0_k3_s1_e2_c96", "uir_r1_a3_k0_s1_e4_c96"],
    ["uir_r1_a3_k3_s2_e6_c128", "uir_r1_a5_k5_s1_e4_c128", "uir_r1_a0_k5_s1_e4_c128", "uir_r1_a0_k5_s1_e3_c128",
     "uir_r2_a0_k3_s1_e4_c128"],
    ["cn_r1_k1_s1_c960"],
]
_MNV4_CONV_MEDIUM = [
    ["er_r1_k3_s2_e4_c48"],
    ["uir_r1_a3_k5_s2_e4_c80", "uir_r1_a3_k3_s1_e2_c80"],
    ["uir_r1_a3_k5_s2_e6_c160", "uir_r2_a3_k3_s1_e4_c160", "uir_r1_a3_k5_s1_e4_c160", "uir_r1_a3_k3_s1_e4_c160",
     "uir_r1_a3_k0_s1_e4_c160", "uir_r1_a0_k0_s1_e2_c160", "uir_r1_a3_k0_s1_e4_c160"],
    ["uir_r1_a5_k5_s2_e6_c256", "uir_r1_a5_k5_s1_e4_c256", "uir_r2_a3_k5_s1_e4_c256", "uir_r1_a0_k0_s1_e4_c256",
     "uir_r1_a3_k0_s1_e4_c256", "uir_r1_a3_k5_s1_e2_c256", "uir_r1_a5_k5_s1_e4_c256", "uir_r2_a0_k0_s1_e4_c256",
     "uir_r1_a5_k0_s1_e2_c256"],
    ["cn_r1_k1_s1_c960"],
]
_MNV4_CONV_LARGE = [
    ["er_r1_k3_s2_e4_c48"],
    ["uir_r1_a3_k5_s2_e4_c96", "uir_r1_a3_k3_s1_e4_c96"],
    ["uir_r1_a3_k5_s2_e4_c192", "uir_r3_a3_k3_s1_e4_c192", "uir_r1_a3_k5_s1_e4_c192", "uir_r5_a5_k3_s1_e4_c192",
     "uir_r1_a3_k0_s1_e4_c192"],
    ["uir_r4_a5_k5_s2_e4_c512", "uir_r1_a5_k0_s1_e4_c512", "uir_r1_a5_k3_s1_e4_c512", "uir_r2_a5_k0_s1_e4_c512",
     "uir_r1_a5_k3_s1_e4_c512", "uir_r1_a5_k5_s1_e4_c512", "uir_r3_a5_k0_s1_e4_c512"],
    ["cn_r1_k1_s1_c960"],
]
_MNV4_HYBRID_MEDIUM = [
    ["er_r1_k3_s2_e4_c48"],
    ["uir_r1_a3_k5_s2_e4_c80", "uir_r1_a3_k3_s1_e2_c80"],
    ["uir_r1_a3_k5_s2_e6_c160", "uir_r1_a0_k0_s1_e2_c160", "uir_r1_a3_k3_s1_e4_c160", "uir_r1_a3_k5_s1_e4_c160",
     "mqa_r1_k3_h4_s1_v2_d64_c160", "uir_r1_a3_k3_s1_e4_c160", "mqa_r1_k3_h4_s1_v2_d64_c160",
     "uir_r1_a3_k0_s1_e4_c160", "mqa_r1_k3_h4_s1_v2_d64_c160", "uir_r1_a3_k3_s1_e4_c160",
     "mqa_r1_k3_h4_s1_v2_d64_c160", "uir_r1_a3_k0_s1_e4_c160"],
    ["uir_r1_a5_k5_s2_e6_c256", "uir_r1_a5_k5_s1_e4_c256", "uir_r2_a3_k5_s1_e4_c256", "uir_r1_a0_k0_s1_e2_c256",
     "uir_r1_a3_k5_s1_e2_c256", "uir_r1_a0_k0_s1_e2_c256", "uir_r1_a0_k0_s1_e4_c256", "mqa_r1_k3_h4_s1_d64_c256",
     "uir_r1_a3_k0_s1_e4_c256", "mqa_r1_k3_h4_s1_d64_c256", "uir_r1_a5_k5_s1_e4_c256", "mqa_r1_k3_h4_s1_d64_c256",
     "uir_r1_a5_k0_s1_e4_c256", "mqa_r1_k3_h4_s1_d64_c256", "uir_r1_a5_k0_s1_e4_c256"],
    ["cn_r1_k1_s1_c960"],
]
_MNV4_HYBRID_LARGE = [
    ["er_r1_k3_s2_e4_c48"],
    ["uir_r1_a3_k5_s2_e4_c96", "uir_r1_a3_k3_s1_e4_c96"],
    ["uir_r1_a3_k5_s2_e4_c192", "uir_r3_a3_k3_s1_e4_c192", "uir_r1_a3_k5_s1_e4_c192", "uir_r2_a5_k3_s1_e4_c192",
     "mqa_r1_k3_h8_s1_v2_d48_c192", "uir_r1_a5_k3_s1_e4_c192", "mqa_r1_k3_h8_s1_v2_d48_c192",
     "uir_r1_a5_k3_s1_e4_c192", "mqa_r1_k3_h8_s1_v2_d48_c192", "uir_r1_a5_k3_s1_e4_c192",
     "mqa_r1_k3_h8_s1_v2_d48_c192", "uir_r1_a3_k0_s1_e4_c192"],
    ["uir_r4_a5_k5_s2_e4_c512", "uir_r1_a5_k0_s1_e4_c512", "uir_r1_a5_k3_s1_e4_c512", "uir_r2_a5_k0_s1_e4_c512",
     "uir_r1_a5_k3_s1_e4_c512", "uir_r1_a5_k5_s1_e4_c512", "mqa_r1_k3_h8_s1_d64_c512", "uir_r1_a5_k0_s1_e4_c512",
     "mqa_r1_k3_h8_s1_d64_c512", "uir_r1_a5_k0_s1_e4_c512", "mqa_r1_k3_h8_s1_d64_c512", "uir_r1_a5_k0_s1_e4_c512",
     "mqa_r1_k3_h8_s1_d64_c512", "uir_r1_a5_k0_s1_e4_c512"],
    ["cn_r1_k1_s1_c960"],
]


def _mobilenetv4(variant, pretrained, progress, arch_def, stem_size, channel_multiplier=1.0, act_layer=nn.ReLU,
                 hybrid=False, **kwargs):
    """MobileNetV4: universal inverted bottlenecks (and, in the hybrids, multi-query attention with 1e-5 layer
    scales), a bias-free 1280-channel head convolution with BatchNorm; widths below x1.0 keep the stem as given."""
    return _create(variant, pretrained, progress, arch_def,
                   **{"head_bias": False, "head_norm": True, "num_features": 1280, "stem_size": stem_size,
                      "fix_stem": channel_multiplier < 1.0, "channel_multiplier": channel_multiplier,
                      "act_layer": act_layer, "layer_scale_init_value": 1e-5 if hybrid else None, **kwargs})


@register_model
def mobilenetv4_conv_small_035(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Small 0.35, without weights (1.9M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_small_035", pretrained, progress, _MNV4_CONV_SMALL, 32, 0.35, **kwargs)


@register_model
def mobilenetv4_conv_small_050(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Small 0.5 (2.2M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_small_050", pretrained, progress, _MNV4_CONV_SMALL, 32, 0.5, **kwargs)


@register_model
def mobilenetv4_conv_small(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Small (3.8M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_small", pretrained, progress, _MNV4_CONV_SMALL, 32, **kwargs)


@register_model
def mobilenetv4_conv_medium(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Medium (9.7M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_medium", pretrained, progress, _MNV4_CONV_MEDIUM, 32, **kwargs)


@register_model
def mobilenetv4_conv_large(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Large (32.6M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_large", pretrained, progress, _MNV4_CONV_LARGE, 24, **kwargs)


@register_model
def mobilenetv4_conv_blur_medium(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Medium with blur-pool anti-aliasing in its strided blocks (9.7M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_blur_medium", pretrained, progress, _MNV4_CONV_MEDIUM, 32,
                        **{"aa_layer": "blurpc", **kwargs})


@register_model
def mobilenetv4_conv_aa_medium(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Medium with average-pool anti-aliasing, without weights (9.7M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_aa_medium", pretrained, progress, _MNV4_CONV_MEDIUM, 32,
                        **{"aa_layer": "avg", **kwargs})


@register_model
def mobilenetv4_conv_aa_large(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Conv-Large with average-pool anti-aliasing in its strided blocks (32.6M parameters)."""
    return _mobilenetv4("mobilenetv4_conv_aa_large", pretrained, progress, _MNV4_CONV_LARGE, 24,
                        **{"aa_layer": "avg", **kwargs})


@register_model
def mobilenetv4_hybrid_medium(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Hybrid-Medium: MobileNetV4-Conv-Medium with multi-query attention in its last stages (11.1M
    parameters)."""
    return _mobilenetv4("mobilenetv4_hybrid_medium", pretrained, progress, _MNV4_HYBRID_MEDIUM, 32, hybrid=True,
                        **kwargs)


@register_model
def mobilenetv4_hybrid_large(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Hybrid-Large: MobileNetV4-Conv-Large with multi-query attention in its last stages and GELU
    (37.8M parameters)."""
    return _mobilenetv4("mobilenetv4_hybrid_large", pretrained, progress, _MNV4_HYBRID_LARGE, 24, act_layer=nn.GELU,
                        hybrid=True, **kwargs)


@register_model
def mobilenetv4_hybrid_medium_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Hybrid-Medium 0.75, without weights (7.3M parameters)."""
    return _mobilenetv4("mobilenetv4_hybrid_medium_075", pretrained, progress, _MNV4_HYBRID_MEDIUM, 32, 0.75,
                        hybrid=True, **kwargs)


@register_model
def mobilenetv4_hybrid_large_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV4-Hybrid-Large 0.75 with GELU, without weights (22.8M parameters)."""
    return _mobilenetv4("mobilenetv4_hybrid_large_075", pretrained, progress, _MNV4_HYBRID_LARGE, 24, 0.75,
                        act_layer=nn.GELU, hybrid=True, **kwargs)
