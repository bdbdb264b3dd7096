"""EfficientNet (Tan & Le 2019, "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks") and its
relatives built by timm's ``efficientnet`` module: EfficientNetV2 (Tan & Le 2021), EfficientNet-Lite,
EfficientNet-EdgeTPU (fused MBConv stages), EfficientNet-CondConv (Yang et al. 2019, per-example expert kernels),
EfficientNet-X / -H (Li et al. 2021, a space-to-depth stem region), pruned EfficientNets (Aflalo et al. 2020,
"Knapsack Pruning with Inner Distillation"), TinyNet (Han et al. 2020), MobileNetV1 / V2, MnasNet, Single-Path NAS,
FBNet, MobileNet-EdgeTPU (V1 and V2) and MixNet (Tan & Le 2019, "MixConv: Mixed Depthwise Convolutional Kernels"),
timm's experimental EfficientNets (efficientnet_b0_gn / b3_gn with GroupNorm, efficientnet_b0_g8_gn / b3_g8_gn and
efficientnet_b0_g16_evos with grouped depthwise convolutions, efficientnet_blur_b0 with blur pools), and timm's tiny
test networks (test_efficientnet with BatchNorm, _gn with GroupNorm, _ln with LayerNorm, _evos with EvoNorm-S0).
Some variants have no published weights (efficientnet_b8 / l2, the efficientnet_cc_*, efficientnet_lite1-4,
efficientnetv2_s / m / l / xl, mixnet_xxl, the experimental ones...): timm's users train them from scratch.

One generic network, a stem convolution, stages of blocks and a 1x1 head convolution before global pooling, is
built from stage definitions written as strings ('ir_r2_k3_s2_e6_c24_se0.25': two inverted-residual blocks, 3x3
depthwise, first stride 2, expansion 6, 24 channels, squeeze-and-excitation 0.25), scaled in width and depth by
the compound coefficients. MixNet's strings list several kernels ('k3.5.7': the channels split in three groups
with 3x3, 5x5 and 7x7 kernels; 'a1.1' / 'p1.1': pointwise convolutions in two groups); 'cc4' makes a block a
CondConv block, 'd1' starts a space-to-depth region, 'gs64' groups a fused convolution. The ``tf_`` variants are
ports of TensorFlow checkpoints: BatchNorm epsilon 1e-3 and TensorFlow's "same" padding (asymmetric for strided
convolutions). The pruned variants are their EfficientNet with each convolution narrowed to the widths pruning
left (``_PRUNED_WIDTHS``). A ``group_size`` groups the depthwise convolutions of every block, ``channel_divisor``
rounds the widths to its multiples, ``aa_layer`` anti-aliases the strided blocks. Model names, module names,
``state_dict`` keys, initialisation and the model API follow timm's ``efficientnet`` module, so timm's weights (or
one's own checkpoints of timm's models) load as they are.
"""
from functools import partial

import engine.nn.functional as F
from engine import nn

from .._features import intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from .._utils import _make_divisible
from ._attention import GlobalContext
from ._conv import create_conv2d
from ._efficientnet_blocks import SqueezeExcite, build_stages, decode_arch_def, init_weights_goog, round_channels
from ._layers import BatchNormAct2d, LayerNormAct2d, create_classifier
from .resnetv2 import EvoNorm2dS0, GroupNormAct

__all__ = []

# the convolution that ends each block kind of the builder: an inverted residual's, a fused or CondConv block's
# projection, a universal inverted bottleneck's projection, attention's output projection, a separable block's
# pointwise convolution, a ConvBnAct's only one (in that order, as an inverted residual has a ``conv_pw`` too)
_BLOCK_OUTPUTS = ("conv_pwl", "pw_proj.conv", "attn.output.proj", "conv_pw", "conv")


def _block_out_chs(block):
    """The channels one of the builder's blocks outputs: those of the convolution that ends it (timm's
    'bottleneck' feature width of the block)."""
    modules = dict(block.named_modules())
    return next(modules[path].out_channels for path in _BLOCK_OUTPUTS if path in modules)


def _trunk_levels(model, extra_blocks):
    """The trunk positions that timm's ``indices`` count in a model built by the EfficientNet builder (0: the stem's
    ``bn1``, i: the output of the stage ``blocks[i - 1]``): every one with ``extra_blocks``, else those of the
    ``feature_info`` levels (their ``stage``)."""
    if extra_blocks:
        return list(range(len(model.blocks) + 1))
    return [info["stage"] for info in model.feature_info]


def _level_chs(model, level, extra_blocks):
    """The channels of the map at the level ``level`` (counted as ``_trunk_levels`` counts them)."""
    if not extra_blocks:
        return model.feature_info[level]["num_chs"]
    if level == 0:
        return model.conv_stem.out_channels
    return _block_out_chs(model.blocks[level - 1][-1])


def trunk_intermediates(model, x, indices, stop_early, output_fmt, extra_blocks):
    """timm's ``forward_intermediates`` walk of an EfficientNet-builder trunk (``conv_stem``, ``bn1``, the stages
    ``blocks``): the maps at the levels ``indices`` picks (``_trunk_levels``; None: all, n: the last n, or a list),
    in forward order. Returns the last map, those maps and how many stages ran (all, or with ``stop_early`` those up
    to the last level picked)."""
    levels = _trunk_levels(model, extra_blocks)
    take, _ = intermediate_stages(levels, indices, stop_early, output_fmt)
    positions = [levels[i] for i in take]
    stages = list(model.blocks)
    if stop_early:
        stages = stages[:max(positions)]
    x = model.bn1(model.conv_stem(x))
    stem = [x] if 0 in positions else []
    x, picked = run_stages(x, stages, [position - 1 for position in positions])
    return x, stem + picked, len(stages)


def prune_trunk(model, indices, extra_blocks):
    """timm's ``prune_intermediate_layers`` cut of an EfficientNet-builder trunk: the stages after the last level
    ``indices`` picks dropped. Returns the picked level indices, whether stages went and the channels of the last
    level kept (the caller resizes the head accordingly)."""
    levels = _trunk_levels(model, extra_blocks)
    take = take_indices(len(levels), indices)
    last_chs = _level_chs(model, max(take), extra_blocks)
    last = levels[max(take)]
    prune_end = last < len(model.blocks)
    model.blocks = nn.Sequential(*list(model.blocks)[:last])
    return take, prune_end, last_chs


class EfficientNet(nn.Module):
    """A strided stem convolution (``conv_stem``, ``bn1``), the stages of ``block_args`` (``blocks``, one
    Sequential per stage), a 1x1 head convolution to ``num_features`` channels (``conv_head``, ``bn2``; none with
    ``num_features=0``, MobileNetV1's head), global pooling, dropout and the classifier.

    ``block_args``: the decoded stages (``decode_arch_def``). Channel counts pass through ``channel_multiplier``,
    rounded to multiples of ``channel_divisor`` (``round_limit``: how far rounding may go down); ``fix_stem`` keeps
    the stem width as given, ``stem_kernel_size`` is its kernel. ``pad_type`` '' pads PyTorch style, 'same' as
    TensorFlow. ``act_layer`` is the blocks' default activation, ``bn_eps`` the BatchNorm epsilon, ``se_layer`` the attention
    in squeeze-and-excitation's slot (``GlobalContext`` for gc_ variants); its ratios count the block's input
    channels. ``output_stride`` (8, 16 or 32) turns the strides beyond it into dilation. ``drop_path_rate`` grows
    linearly over the blocks (from 0 at the first); ``drop_rate`` is the dropout before the classifier. The stages
    end where the next stage strides (``feature_info``). ``pruned_widths``: the output channels of every
    convolution, in module order, of a pruned variant (see ``_prune``). ``norm_layer`` is the norm-and-activation
    layer of the stem, the blocks and the head, built as ``norm_layer(channels, apply_act=..., act_layer=...)``:
    BatchNorm with ``bn_eps`` when not given, another norm in timm's test models (GroupNorm, LayerNorm, EvoNorm-S0)
    and GroupNorm EfficientNets. ``aa_layer`` ('avg' or 'blurpc') anti-aliases the blocks' strided convolutions
    (the stem's stays strided).
    """

    default_cfg = {"first_conv": "conv_stem", "classifier": "classifier"}

    def __init__(self, block_args, num_classes=1000, num_features=1280, in_chans=3, stem_size=32, stem_kernel_size=3,
                 fix_stem=False, channel_multiplier=1.0, round_limit=0.9, output_stride=32, pad_type="",
                 act_layer=nn.SiLU, se_layer=SqueezeExcite, bn_eps=1e-5, drop_rate=0.0, drop_path_rate=0.0,
                 global_pool="avg", pruned_widths=None, norm_layer=None, aa_layer=None, channel_divisor=8):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        if norm_layer is None:
            norm_layer = partial(BatchNormAct2d, eps=bn_eps)
        round_chs = partial(round_channels, multiplier=channel_multiplier, round_limit=round_limit,
                            divisor=channel_divisor)
        if not fix_stem:
            stem_size = round_chs(stem_size)
        self.conv_stem = create_conv2d(in_chans, stem_size, stem_kernel_size, stride=2, pad_type=pad_type)
        self.bn1 = norm_layer(stem_size, act_layer=act_layer)
        self.blocks, self.feature_info, head_chs = build_stages(
            block_args, stem_size, round_chs, output_stride, pad_type, act_layer, bn_eps, se_layer,
            aa_layer=aa_layer, drop_path_rate=drop_path_rate, norm_layer=norm_layer)
        if num_features > 0:
            self.conv_head = create_conv2d(head_chs, num_features, 1, pad_type=pad_type)
            self.bn2 = norm_layer(num_features, act_layer=act_layer)
            self.num_features = num_features
        else:
            self.conv_head = nn.Identity()
            self.bn2 = nn.Identity()
            self.num_features = head_chs
        self.global_pool, self.classifier = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        init_weights_goog(self)
        if pruned_widths is not None:
            self._prune(pruned_widths)

    def _prune(self, widths):
        """Narrow every convolution to its width in ``widths`` (output channels, in module order) as timm adapts a
        model to a pruned checkpoint: each convolution, BatchNorm and the classifier is replaced by a fresh layer
        (default initialisation) of the new width. A convolution's input is the previous convolution's output (the
        stem keeps ``in_chans``; a depthwise one stays depthwise); a BatchNorm takes the previous convolution's
        width, the classifier the head's. ``num_features`` and ``feature_info`` follow."""
        widths = iter(widths)
        width = None
        for name, module in list(self.named_modules()):
            if isinstance(module, nn.Conv2d):
                in_chs = module.in_channels if name == "conv_stem" else width
                width = next(widths)
                groups = width if module.groups > 1 else 1
                layer = type(module)(width if groups > 1 else in_chs, width, module.kernel_size, stride=module.stride,
                                     padding=module.padding, dilation=module.dilation, groups=groups,
                                     bias=module.bias is not None)
            elif isinstance(module, BatchNormAct2d):
                layer = BatchNormAct2d(width, module.eps, apply_act=False)
                layer.act = module.act
            elif isinstance(module, nn.Linear):
                layer = nn.Linear(width * self.global_pool.feat_mult(), module.out_features)
            else:
                continue
            parent, _, leaf = name.rpartition(".")
            setattr(self.get_submodule(parent), leaf, layer)
        self.num_features = width
        self.head_hidden_size = width * self.global_pool.feat_mult()
        for info in self.feature_info:
            norms = [m for m in self.get_submodule(info["module"]).modules() if isinstance(m, nn.BatchNorm2d)]
            info["num_chs"] = norms[-1].num_features

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

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False, extra_blocks=False):
        """timm's intermediate maps: those of the ``feature_info`` levels ``indices`` picks (None: all, n: the last n,
        or a list; the stem's ``bn1`` output where the first stage strides, each level's stage output), or with
        ``extra_blocks`` of every position (0: the stem, i: stage ``i - 1``), in forward order; unless
        ``intermediates_only``, the final map too, through the head convolution (``conv_head``, ``bn2``) when the
        last level's stage ran. ``stop_early`` skips the stages after the last one picked. ``norm`` is accepted for
        timm's signature: no norm follows the stages alone."""
        x, intermediates, ran = trunk_intermediates(self, x, indices, stop_early, output_fmt, extra_blocks)
        if intermediates_only:
            return intermediates
        if ran == self.feature_info[-1]["stage"]:
            x = self.conv_head(x)
            x = self.bn2(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, extra_blocks=False):
        """Drop the stages after the last level ``indices`` picks (levels counted as ``forward_intermediates``
        counts them), and the head convolution and classifier when stages go or with ``prune_norm`` or
        ``prune_head``, as timm does: ``num_features`` and ``head_hidden_size`` become the last level's width.
        Returns the picked level indices."""
        take, prune_end, last_chs = prune_trunk(self, indices, extra_blocks)
        if prune_norm or prune_head or prune_end:
            self.conv_head = nn.Identity()
            self.bn2 = nn.Identity()
            self.num_features = self.head_hidden_size = last_chs
            self.reset_classifier(0, "")
        return take

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
            experts_multiplier=1, group_size=None, tf_port=False, **kwargs):
    """Build a registered variant from its stage strings (decoded by ``decode_arch_def`` with the depth, CondConv
    expert and group size arguments); ``tf_port`` sets TensorFlow's BatchNorm epsilon and padding (``kwargs`` may
    override them and any other ``EfficientNet`` argument)."""
    if tf_port:
        kwargs = {"bn_eps": 1e-3, "pad_type": "same", **kwargs}
    block_args = decode_arch_def(arch_def, depth_multiplier, depth_trunc, fix_first_last, experts_multiplier,
                                 group_size)
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


def _efficientnet(variant, pretrained, progress, channel_multiplier, depth_multiplier, tf_port=False,
                  channel_divisor=8, group_size=None, **kwargs):
    """EfficientNet-B0 scaled by the compound coefficients, head width 1280 scaled with the channels, all widths
    rounded to multiples of ``channel_divisor``; ``group_size`` turns the depthwise convolutions into grouped ones
    (timm's grouped variants); ``tf_port``: a TensorFlow port."""
    num_features = round_channels(1280, channel_multiplier, divisor=channel_divisor)
    return _create(variant, pretrained, progress, _EFFICIENTNET, depth_multiplier, group_size=group_size,
                   tf_port=tf_port, **{"channel_multiplier": channel_multiplier, "channel_divisor": channel_divisor,
                                       "num_features": num_features, **kwargs})


@register_model
def tf_efficientnet_b0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0, ported from TensorFlow (5.3M parameters, 224 px)."""
    return _efficientnet("tf_efficientnet_b0", pretrained, progress, 1.0, 1.0, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b1(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B1, ported from TensorFlow (7.8M parameters, 240 px)."""
    return _efficientnet("tf_efficientnet_b1", pretrained, progress, 1.0, 1.1, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B2, ported from TensorFlow (9.1M parameters, 260 px)."""
    return _efficientnet("tf_efficientnet_b2", pretrained, progress, 1.1, 1.2, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3, ported from TensorFlow (12.2M parameters, 300 px)."""
    return _efficientnet("tf_efficientnet_b3", pretrained, progress, 1.2, 1.4, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b4(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B4, ported from TensorFlow (19.3M parameters, 380 px)."""
    return _efficientnet("tf_efficientnet_b4", pretrained, progress, 1.4, 1.8, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b5(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B5, ported from TensorFlow (30.4M parameters, 456 px)."""
    return _efficientnet("tf_efficientnet_b5", pretrained, progress, 1.6, 2.2, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b6(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B6, ported from TensorFlow (43.0M parameters, 528 px)."""
    return _efficientnet("tf_efficientnet_b6", pretrained, progress, 1.8, 2.6, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b7(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B7, ported from TensorFlow (66.3M parameters, 600 px)."""
    return _efficientnet("tf_efficientnet_b7", pretrained, progress, 2.0, 3.1, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_b8(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B8, ported from TensorFlow (87.4M parameters, 672 px)."""
    return _efficientnet("tf_efficientnet_b8", pretrained, progress, 2.2, 3.6, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_l2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-L2 (Xie et al. 2020, "Self-training with Noisy Student improves ImageNet classification"),
    ported from TensorFlow: widths x4.3, depths x5.3 (480.3M parameters, 800 px)."""
    return _efficientnet("tf_efficientnet_l2", pretrained, progress, 4.3, 5.3, tf_port=True, **kwargs)


@register_model
def efficientnet_b8(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B8 in PyTorch's padding, without weights: widths x2.2, depths x3.6 (87.4M parameters)."""
    return _efficientnet("efficientnet_b8", pretrained, progress, 2.2, 3.6, **kwargs)


@register_model
def efficientnet_l2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-L2 in PyTorch's padding, without weights: widths x4.3, depths x5.3 (480.3M parameters)."""
    return _efficientnet("efficientnet_l2", pretrained, progress, 4.3, 5.3, **kwargs)


def _group_norm_act(num_channels, group_size, **kwargs):
    """GroupNorm in groups of ``group_size`` channels, with its activation."""
    return GroupNormAct(num_channels, num_groups=num_channels // group_size, **kwargs)


@register_model
def efficientnet_b0_gn(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0 with GroupNorm (groups of 8 channels) for BatchNorm (5.3M parameters)."""
    kwargs.setdefault("norm_layer", partial(_group_norm_act, group_size=8))
    return _efficientnet("efficientnet_b0_gn", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def efficientnet_b0_g8_gn(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0, depthwise convolutions in groups of 8 channels, GroupNorm in 8s (6.6M parameters)."""
    kwargs.setdefault("norm_layer", partial(_group_norm_act, group_size=8))
    return _efficientnet("efficientnet_b0_g8_gn", pretrained, progress, 1.0, 1.0, group_size=8, **kwargs)


@register_model
def efficientnet_b0_g16_evos(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0, depthwise convolutions in groups of 16 channels, BatchNorm (timm's EvoNorm is off) (8.1M)."""
    return _efficientnet("efficientnet_b0_g16_evos", pretrained, progress, 1.0, 1.0, channel_divisor=16,
                         group_size=16, **kwargs)


@register_model
def efficientnet_b3_gn(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3 with GroupNorm (groups of 16 channels), widths in multiples of 16 (11.7M parameters)."""
    kwargs.setdefault("norm_layer", partial(_group_norm_act, group_size=16))
    return _efficientnet("efficientnet_b3_gn", pretrained, progress, 1.2, 1.4, channel_divisor=16, **kwargs)


@register_model
def efficientnet_b3_g8_gn(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3, depthwise convolutions in groups of 8 channels, GroupNorm in 16s (14.3M parameters)."""
    kwargs.setdefault("norm_layer", partial(_group_norm_act, group_size=16))
    return _efficientnet("efficientnet_b3_g8_gn", pretrained, progress, 1.2, 1.4, channel_divisor=16, group_size=8,
                         **kwargs)


@register_model
def efficientnet_blur_b0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B0 with blur-pool anti-aliasing in its strided blocks (5.3M parameters)."""
    return _efficientnet("efficientnet_blur_b0", pretrained, progress, 1.0, 1.0, **{"aa_layer": "blurpc", **kwargs})


# the output channels of every convolution, in module order (stem, blocks, head), of the pruned EfficientNets,
# from the checkpoints' shapes as timm records them
_PRUNED_WIDTHS = {
    "efficientnet_b1_pruned": (
        32, 32, 8, 32, 16, 16, 4, 16, 16, 48, 48, 4, 48, 12, 62, 62, 6, 62, 12, 48, 48, 6, 48, 12, 70, 70, 6, 70, 35,
        61, 61, 10, 61, 35, 51, 51, 10, 51, 35, 175, 175, 10, 175, 74, 188, 188, 20, 188, 74, 137, 137, 20, 137, 74,
        164, 164, 20, 164, 74, 399, 399, 20, 399, 67, 201, 201, 28, 201, 67, 160, 160, 28, 160, 67, 213, 213, 28, 213,
        67, 637, 637, 27, 637, 192, 806, 806, 48, 806, 192, 798, 798, 48, 798, 192, 891, 891, 48, 891, 192, 990, 990,
        48, 990, 192, 1152, 1152, 48, 1152, 320, 1912, 1912, 80, 1912, 320, 1280,
    ),
    "efficientnet_b2_pruned": (
        32, 32, 8, 32, 16, 16, 4, 16, 16, 54, 54, 4, 54, 17, 69, 69, 6, 69, 17, 61, 61, 6, 61, 17, 86, 86, 6, 86, 42,
        72, 72, 12, 72, 42, 98, 98, 12, 98, 42, 245, 245, 12, 245, 85, 274, 274, 22, 274, 85, 254, 254, 22, 254, 85,
        292, 292, 22, 292, 85, 502, 502, 22, 502, 116, 315, 315, 30, 315, 116, 354, 354, 30, 354, 116, 443, 443, 30,
        443, 116, 719, 719, 30, 719, 208, 1148, 1148, 52, 1148, 208, 1160, 1160, 52, 1160, 208, 1182, 1182, 52, 1182,
        208, 1228, 1228, 52, 1228, 208, 1248, 1248, 52, 1248, 352, 2112, 2112, 88, 2112, 352, 1408,
    ),
    "efficientnet_b3_pruned": (
        40, 40, 10, 40, 24, 24, 6, 24, 24, 27, 27, 6, 27, 12, 49, 49, 8, 49, 12, 48, 48, 8, 48, 12, 83, 83, 8, 83, 40,
        90, 90, 12, 90, 40, 85, 85, 12, 85, 40, 215, 215, 12, 215, 93, 261, 261, 24, 261, 93, 219, 219, 24, 219, 93,
        254, 254, 24, 254, 93, 236, 236, 24, 236, 93, 480, 480, 24, 480, 120, 235, 235, 34, 235, 120, 217, 217, 34,
        217, 120, 226, 226, 33, 226, 120, 340, 340, 34, 340, 120, 802, 802, 34, 802, 232, 1030, 1030, 58, 1030, 232,
        924, 924, 58, 924, 232, 1016, 1016, 58, 1016, 232, 1130, 1130, 58, 1130, 232, 1266, 1266, 58, 1266, 232, 1392,
        1392, 58, 1392, 384, 2301, 2301, 96, 2301, 384, 1536,
    ),
}

def _pruned_efficientnet(variant, pretrained, progress, channel_multiplier, depth_multiplier, **kwargs):
    """An EfficientNet with TensorFlow's padding and epsilon, its convolutions narrowed to the variant's pruned
    widths."""
    return _efficientnet(variant, pretrained, progress, channel_multiplier, depth_multiplier, tf_port=True,
                         pruned_widths=_PRUNED_WIDTHS[variant], **kwargs)


@register_model
def efficientnet_b1_pruned(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B1 pruned by knapsack pruning (Aflalo et al. 2020) (6.3M parameters, 240 px)."""
    return _pruned_efficientnet("efficientnet_b1_pruned", pretrained, progress, 1.0, 1.1, **kwargs)


@register_model
def efficientnet_b2_pruned(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B2 pruned by knapsack pruning (Aflalo et al. 2020) (8.3M parameters, 260 px)."""
    return _pruned_efficientnet("efficientnet_b2_pruned", pretrained, progress, 1.1, 1.2, **kwargs)


@register_model
def efficientnet_b3_pruned(pretrained=False, progress=True, **kwargs):
    """EfficientNet-B3 pruned by knapsack pruning (Aflalo et al. 2020) (9.9M parameters, 300 px)."""
    return _pruned_efficientnet("efficientnet_b3_pruned", pretrained, progress, 1.2, 1.4, **kwargs)


def _efficientnet_edge(variant, pretrained, progress, channel_multiplier, depth_multiplier, tf_port=False, **kwargs):
    """EfficientNet-EdgeTPU (Gupta & Tan 2019): fused MBConv (EdgeResidual) blocks in the first stages, no
    squeeze-and-excitation, ReLU; the first block's expansion counts 24 input channels (as TensorFlow's
    definition does), whatever the stem's width."""
    arch_def = [
        ["er_r1_k3_s1_e4_c24_fc24_noskip"],
        ["er_r2_k3_s2_e8_c32"],
        ["er_r4_k3_s2_e8_c48"],
        ["ir_r5_k5_s2_e8_c96"],
        ["ir_r4_k5_s1_e8_c144"],
        ["ir_r2_k5_s2_e8_c192"],
    ]
    num_features = _make_divisible(1280 * channel_multiplier, 8)
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, tf_port=tf_port,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features, "act_layer": nn.ReLU,
                      **kwargs})


@register_model
def efficientnet_es(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-S as timm trained it (5.4M parameters, 224 px)."""
    return _efficientnet_edge("efficientnet_es", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def efficientnet_es_pruned(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-S for DeGirum's pruned weights, which keep efficientnet_es's layout (5.4M parameters,
    224 px)."""
    return _efficientnet_edge("efficientnet_es_pruned", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def efficientnet_em(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-M as timm trained it: depths x1.1 (6.9M parameters, 240 px)."""
    return _efficientnet_edge("efficientnet_em", pretrained, progress, 1.0, 1.1, **kwargs)


@register_model
def efficientnet_el(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-L as timm trained it: widths x1.2, depths x1.4 (10.6M parameters, 300 px)."""
    return _efficientnet_edge("efficientnet_el", pretrained, progress, 1.2, 1.4, **kwargs)


@register_model
def efficientnet_el_pruned(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-L for DeGirum's pruned weights, which keep efficientnet_el's layout (10.6M parameters,
    300 px)."""
    return _efficientnet_edge("efficientnet_el_pruned", pretrained, progress, 1.2, 1.4, **kwargs)


@register_model
def tf_efficientnet_es(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-S, ported from TensorFlow (5.4M parameters, 224 px)."""
    return _efficientnet_edge("tf_efficientnet_es", pretrained, progress, 1.0, 1.0, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_em(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-M, ported from TensorFlow (6.9M parameters, 240 px)."""
    return _efficientnet_edge("tf_efficientnet_em", pretrained, progress, 1.0, 1.1, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_el(pretrained=False, progress=True, **kwargs):
    """EfficientNet-EdgeTPU-L, ported from TensorFlow (10.6M parameters, 300 px)."""
    return _efficientnet_edge("tf_efficientnet_el", pretrained, progress, 1.2, 1.4, tf_port=True, **kwargs)


def _efficientnet_condconv(variant, pretrained, progress, depth_multiplier, experts_multiplier, tf_port=False,
                           **kwargs):
    """EfficientNet-CondConv (Yang et al. 2019): EfficientNet-B0's stages, the last three with CondConv convolutions
    of 4 experts times ``experts_multiplier``, routed per example; ``tf_port``: a TensorFlow port."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_se0.25"],
        ["ir_r2_k3_s2_e6_c24_se0.25"],
        ["ir_r2_k5_s2_e6_c40_se0.25"],
        ["ir_r3_k3_s2_e6_c80_se0.25"],
        ["ir_r3_k5_s1_e6_c112_se0.25_cc4"],
        ["ir_r4_k5_s2_e6_c192_se0.25_cc4"],
        ["ir_r1_k3_s1_e6_c320_se0.25_cc4"],
    ]
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, experts_multiplier=experts_multiplier,
                   tf_port=tf_port, **kwargs)


@register_model
def tf_efficientnet_cc_b0_4e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B0 with 4 experts, ported from TensorFlow (13.3M parameters, 224 px)."""
    return _efficientnet_condconv("tf_efficientnet_cc_b0_4e", pretrained, progress, 1.0, 1, tf_port=True,
                                  **kwargs)


@register_model
def tf_efficientnet_cc_b0_8e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B0 with 8 experts, ported from TensorFlow (24.0M parameters, 224 px)."""
    return _efficientnet_condconv("tf_efficientnet_cc_b0_8e", pretrained, progress, 1.0, 2, tf_port=True,
                                  **kwargs)


@register_model
def tf_efficientnet_cc_b1_8e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B1 (depths x1.1) with 8 experts, ported from TensorFlow (39.7M parameters, 240 px)."""
    return _efficientnet_condconv("tf_efficientnet_cc_b1_8e", pretrained, progress, 1.1, 2, tf_port=True,
                                  **kwargs)


@register_model
def efficientnet_cc_b0_4e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B0 with 4 experts, PyTorch's padding (13.3M parameters)."""
    return _efficientnet_condconv("efficientnet_cc_b0_4e", pretrained, progress, 1.0, 1, **kwargs)


@register_model
def efficientnet_cc_b0_8e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B0 with 8 experts, PyTorch's padding (24.0M parameters)."""
    return _efficientnet_condconv("efficientnet_cc_b0_8e", pretrained, progress, 1.0, 2, **kwargs)


@register_model
def efficientnet_cc_b1_8e(pretrained=False, progress=True, **kwargs):
    """EfficientNet-CondConv-B1 (depths x1.1) with 8 experts, PyTorch's padding (39.7M parameters)."""
    return _efficientnet_condconv("efficientnet_cc_b1_8e", pretrained, progress, 1.1, 2, **kwargs)


def _efficientnet_lite(variant, pretrained, progress, channel_multiplier, depth_multiplier, tf_port=False,
                       **kwargs):
    """EfficientNet-Lite: EfficientNet without squeeze-and-excitation, with ReLU6, the stem, the first and last
    stages' depths and the 1280-channel head kept unscaled."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16"],
        ["ir_r2_k3_s2_e6_c24"],
        ["ir_r2_k5_s2_e6_c40"],
        ["ir_r3_k3_s2_e6_c80"],
        ["ir_r3_k5_s1_e6_c112"],
        ["ir_r4_k5_s2_e6_c192"],
        ["ir_r1_k3_s1_e6_c320"],
    ]
    return _create(variant, pretrained, progress, arch_def, depth_multiplier, fix_first_last=True, tf_port=tf_port,
                   **{"channel_multiplier": channel_multiplier, "fix_stem": True, "act_layer": nn.ReLU6, **kwargs})


@register_model
def efficientnet_lite0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite0 as timm trained it (4.7M parameters, 224 px)."""
    return _efficientnet_lite("efficientnet_lite0", pretrained, progress, 1.0, 1.0, **kwargs)


@register_model
def efficientnet_lite1(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite1, PyTorch's padding: depths x1.1 (5.4M parameters)."""
    return _efficientnet_lite("efficientnet_lite1", pretrained, progress, 1.0, 1.1, **kwargs)


@register_model
def efficientnet_lite2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite2, PyTorch's padding: widths x1.1, depths x1.2 (6.1M parameters)."""
    return _efficientnet_lite("efficientnet_lite2", pretrained, progress, 1.1, 1.2, **kwargs)


@register_model
def efficientnet_lite3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite3, PyTorch's padding: widths x1.2, depths x1.4 (8.2M parameters)."""
    return _efficientnet_lite("efficientnet_lite3", pretrained, progress, 1.2, 1.4, **kwargs)


@register_model
def efficientnet_lite4(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite4, PyTorch's padding: widths x1.4, depths x1.8 (13.0M parameters)."""
    return _efficientnet_lite("efficientnet_lite4", pretrained, progress, 1.4, 1.8, **kwargs)


@register_model
def tf_efficientnet_lite0(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite0, ported from TensorFlow (4.7M parameters, 224 px)."""
    return _efficientnet_lite("tf_efficientnet_lite0", pretrained, progress, 1.0, 1.0, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_lite1(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite1, ported from TensorFlow (5.4M parameters, 240 px)."""
    return _efficientnet_lite("tf_efficientnet_lite1", pretrained, progress, 1.0, 1.1, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_lite2(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite2, ported from TensorFlow (6.1M parameters, 260 px)."""
    return _efficientnet_lite("tf_efficientnet_lite2", pretrained, progress, 1.1, 1.2, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_lite3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite3, ported from TensorFlow (8.2M parameters, 300 px)."""
    return _efficientnet_lite("tf_efficientnet_lite3", pretrained, progress, 1.2, 1.4, tf_port=True, **kwargs)


@register_model
def tf_efficientnet_lite4(pretrained=False, progress=True, **kwargs):
    """EfficientNet-Lite4, ported from TensorFlow (13.0M parameters, 380 px)."""
    return _efficientnet_lite("tf_efficientnet_lite4", pretrained, progress, 1.4, 1.8, tf_port=True, **kwargs)


def _efficientnet_x(variant, pretrained, progress, channel_multiplier, depth_multiplier, expansion=6, **kwargs):
    """EfficientNet-X (Li et al. 2021, "Searching for Fast Model Families on Datacenter Accelerators"): a
    space-to-depth first stage (2x2 patches folded into the channels, then blocks at a quarter of the resolution),
    fused MBConv blocks with ReLU in the next two stages, then EfficientNet's stages; the fused stages and the
    first inverted-residual stage expand by ``expansion`` (6 for X, 4 for timm's H variant)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_se0.25_d1"],
        [f"er_r2_k3_s2_e{expansion}_c24_se0.25_nre"],
        [f"er_r2_k5_s2_e{expansion}_c40_se0.25_nre"],
        [f"ir_r3_k3_s2_e{expansion}_c80_se0.25"],
        ["ir_r3_k5_s1_e6_c112_se0.25"],
        ["ir_r4_k5_s2_e6_c192_se0.25"],
        ["ir_r1_k3_s1_e6_c320_se0.25"],
    ]
    num_features = _make_divisible(1280 * channel_multiplier, 8)
    return _create(variant, pretrained, progress, arch_def, depth_multiplier,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features, **kwargs})


@register_model
def efficientnet_x_b3(pretrained=False, progress=True, **kwargs):
    """EfficientNet-X-B3: widths x1.2, depths x1.4 (13.3M parameters)."""
    return _efficientnet_x("efficientnet_x_b3", pretrained, progress, 1.2, 1.4, **kwargs)


@register_model
def efficientnet_x_b5(pretrained=False, progress=True, **kwargs):
    """EfficientNet-X-B5 as timm trained it: widths x1.6, depths x2.2 (33.4M parameters, 448 px)."""
    return _efficientnet_x("efficientnet_x_b5", pretrained, progress, 1.6, 2.2, **kwargs)


@register_model
def efficientnet_h_b5(pretrained=False, progress=True, **kwargs):
    """timm's EfficientNet-H-B5: EfficientNet-X with expansion 4 in its fused stages, widths x1.92, depths x2.2
    (45.9M parameters, 448 px)."""
    return _efficientnet_x("efficientnet_h_b5", pretrained, progress, 1.92, 2.2, expansion=4, **kwargs)


def _tinynet(variant, pretrained, progress, model_width, depth_multiplier, **kwargs):
    """TinyNet (Han et al. 2020, "Model Rubik's Cube: Twisting Resolution, Depth and Width for TinyNets"):
    EfficientNet-B0 shrunk by ``model_width`` and ``depth_multiplier`` (depths rounded to the nearest), the stem
    kept at 32 channels and the head at least 1280."""
    num_features = max(1280, _make_divisible(1280 * model_width, 8))
    return _create(variant, pretrained, progress, _EFFICIENTNET, depth_multiplier, "round",
                   **{"channel_multiplier": model_width, "num_features": num_features, "fix_stem": True, **kwargs})


@register_model
def tinynet_a(pretrained=False, progress=True, **kwargs):
    """TinyNet-A: widths x1.0, depths x1.2 (6.2M parameters, 192 px)."""
    return _tinynet("tinynet_a", pretrained, progress, 1.0, 1.2, **kwargs)


@register_model
def tinynet_b(pretrained=False, progress=True, **kwargs):
    """TinyNet-B: widths x0.75, depths x1.1 (3.7M parameters, 188 px)."""
    return _tinynet("tinynet_b", pretrained, progress, 0.75, 1.1, **kwargs)


@register_model
def tinynet_c(pretrained=False, progress=True, **kwargs):
    """TinyNet-C: widths x0.54, depths x0.85 (2.5M parameters, 184 px)."""
    return _tinynet("tinynet_c", pretrained, progress, 0.54, 0.85, **kwargs)


@register_model
def tinynet_d(pretrained=False, progress=True, **kwargs):
    """TinyNet-D: widths x0.54, depths x0.695 (2.3M parameters, 152 px)."""
    return _tinynet("tinynet_d", pretrained, progress, 0.54, 0.695, **kwargs)


@register_model
def tinynet_e(pretrained=False, progress=True, **kwargs):
    """TinyNet-E: widths x0.51, depths x0.6 (2.0M parameters, 106 px)."""
    return _tinynet("tinynet_e", pretrained, progress, 0.51, 0.6, **kwargs)


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
def gc_efficientnetv2_rw_t(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-T with global context attention in squeeze-and-excitation's place (13.7M parameters)."""
    return _efficientnetv2_s("gc_efficientnetv2_rw_t", pretrained, progress, 0.8, 0.9,
                             **{"se_layer": GlobalContext, **kwargs})


@register_model
def efficientnetv2_rw_m(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-M as timm trained it: timm's first EfficientNetV2-S, widths x1.2, the first four stages
    x1.2 deep and the last two x1.6 (53.2M parameters)."""
    return _efficientnetv2_s("efficientnetv2_rw_m", pretrained, progress, 1.2, (1.2,) * 4 + (1.6,) * 2, rw=True,
                             **kwargs)


@register_model
def tf_efficientnetv2_s(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-S, ported from TensorFlow (21.5M parameters)."""
    return _efficientnetv2_s("tf_efficientnetv2_s", pretrained, progress, tf_port=True, **kwargs)


# EfficientNetV2-M, -L and -XL: a residual conv stage, two fused stages, four inverted-residual stages with
# squeeze-and-excitation; M has a 24-channel stem, L and XL 32
_EFFICIENTNETV2_M = [
    ["cn_r3_k3_s1_e1_c24_skip"],
    ["er_r5_k3_s2_e4_c48"],
    ["er_r5_k3_s2_e4_c80"],
    ["ir_r7_k3_s2_e4_c160_se0.25"],
    ["ir_r14_k3_s1_e6_c176_se0.25"],
    ["ir_r18_k3_s2_e6_c304_se0.25"],
    ["ir_r5_k3_s1_e6_c512_se0.25"],
]
_EFFICIENTNETV2_L = [
    ["cn_r4_k3_s1_e1_c32_skip"],
    ["er_r7_k3_s2_e4_c64"],
    ["er_r7_k3_s2_e4_c96"],
    ["ir_r10_k3_s2_e4_c192_se0.25"],
    ["ir_r19_k3_s1_e6_c224_se0.25"],
    ["ir_r25_k3_s2_e6_c384_se0.25"],
    ["ir_r7_k3_s1_e6_c640_se0.25"],
]
_EFFICIENTNETV2_XL = [
    ["cn_r4_k3_s1_e1_c32_skip"],
    ["er_r8_k3_s2_e4_c64"],
    ["er_r8_k3_s2_e4_c96"],
    ["ir_r16_k3_s2_e4_c192_se0.25"],
    ["ir_r24_k3_s1_e6_c256_se0.25"],
    ["ir_r32_k3_s2_e6_c512_se0.25"],
    ["ir_r8_k3_s1_e6_c640_se0.25"],
]


@register_model
def efficientnetv2_s(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-S in PyTorch's padding, without weights (21.5M parameters)."""
    return _efficientnetv2_s("efficientnetv2_s", pretrained, progress, **kwargs)


@register_model
def efficientnetv2_m(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-M in PyTorch's padding, without weights (54.1M parameters)."""
    return _create("efficientnetv2_m", pretrained, progress, _EFFICIENTNETV2_M, **{"stem_size": 24, **kwargs})


@register_model
def efficientnetv2_l(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-L in PyTorch's padding, without weights (118.5M parameters)."""
    return _create("efficientnetv2_l", pretrained, progress, _EFFICIENTNETV2_L, **kwargs)


@register_model
def efficientnetv2_xl(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-XL in PyTorch's padding, without weights (208.1M parameters)."""
    return _create("efficientnetv2_xl", pretrained, progress, _EFFICIENTNETV2_XL, **kwargs)


@register_model
def tf_efficientnetv2_m(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-M, ported from TensorFlow (54.1M parameters)."""
    return _create("tf_efficientnetv2_m", pretrained, progress, _EFFICIENTNETV2_M, tf_port=True,
                   **{"stem_size": 24, **kwargs})


@register_model
def tf_efficientnetv2_l(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-L, ported from TensorFlow (118.5M parameters)."""
    return _create("tf_efficientnetv2_l", pretrained, progress, _EFFICIENTNETV2_L, tf_port=True, **kwargs)


@register_model
def tf_efficientnetv2_xl(pretrained=False, progress=True, **kwargs):
    """EfficientNetV2-XL, ported from TensorFlow (208.1M parameters)."""
    return _create("tf_efficientnetv2_xl", pretrained, progress, _EFFICIENTNETV2_XL, tf_port=True, **kwargs)


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
def mobilenetv2_035(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 0.35 (1.7M parameters)."""
    return _mobilenetv2("mobilenetv2_035", pretrained, progress, 0.35, **kwargs)


@register_model
def mobilenetv2_050(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 0.5 (2.0M parameters)."""
    return _mobilenetv2("mobilenetv2_050", pretrained, progress, 0.5, **kwargs)


@register_model
def mobilenetv2_075(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 0.75 (2.6M parameters)."""
    return _mobilenetv2("mobilenetv2_075", pretrained, progress, 0.75, **kwargs)


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


def _mnasnet_b1(variant, pretrained, progress, channel_multiplier, **kwargs):
    """MnasNet-B1 (Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile"), ReLU and no
    squeeze-and-excitation, widths scaled (the head stays at 1280 channels)."""
    arch_def = [
        ["ds_r1_k3_s1_c16_noskip"],
        ["ir_r3_k3_s2_e3_c24"],
        ["ir_r3_k5_s2_e3_c40"],
        ["ir_r3_k5_s2_e6_c80"],
        ["ir_r2_k3_s1_e6_c96"],
        ["ir_r4_k5_s2_e6_c192"],
        ["ir_r1_k3_s1_e6_c320_noskip"],
    ]
    return _create(variant, pretrained, progress, arch_def,
                   **{"channel_multiplier": channel_multiplier, "act_layer": nn.ReLU, **kwargs})


@register_model
def mnasnet_050(pretrained=False, progress=True, **kwargs):
    """MnasNet-B1 0.5 (2.2M parameters)."""
    return _mnasnet_b1("mnasnet_050", pretrained, progress, 0.5, **kwargs)


@register_model
def mnasnet_075(pretrained=False, progress=True, **kwargs):
    """MnasNet-B1 0.75 (3.2M parameters)."""
    return _mnasnet_b1("mnasnet_075", pretrained, progress, 0.75, **kwargs)


@register_model
def mnasnet_100(pretrained=False, progress=True, **kwargs):
    """MnasNet-B1 1.0 as timm trained it (4.4M parameters)."""
    return _mnasnet_b1("mnasnet_100", pretrained, progress, 1.0, **kwargs)


@register_model
def mnasnet_140(pretrained=False, progress=True, **kwargs):
    """MnasNet-B1 1.4 (7.1M parameters)."""
    return _mnasnet_b1("mnasnet_140", pretrained, progress, 1.4, **kwargs)


def _mnasnet_a1(variant, pretrained, progress, channel_multiplier, **kwargs):
    """MnasNet-A1, MnasNet with squeeze-and-excitation in some stages, ReLU, widths scaled (the head stays at 1280
    channels)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_noskip"],
        ["ir_r2_k3_s2_e6_c24"],
        ["ir_r3_k5_s2_e3_c40_se0.25"],
        ["ir_r4_k3_s2_e6_c80"],
        ["ir_r2_k3_s1_e6_c112_se0.25"],
        ["ir_r3_k5_s2_e6_c160_se0.25"],
        ["ir_r1_k3_s1_e6_c320"],
    ]
    return _create(variant, pretrained, progress, arch_def,
                   **{"channel_multiplier": channel_multiplier, "act_layer": nn.ReLU, **kwargs})


@register_model
def semnasnet_050(pretrained=False, progress=True, **kwargs):
    """MnasNet-A1 0.5 (2.1M parameters)."""
    return _mnasnet_a1("semnasnet_050", pretrained, progress, 0.5, **kwargs)


@register_model
def semnasnet_075(pretrained=False, progress=True, **kwargs):
    """MnasNet-A1 0.75 (2.9M parameters)."""
    return _mnasnet_a1("semnasnet_075", pretrained, progress, 0.75, **kwargs)


@register_model
def semnasnet_100(pretrained=False, progress=True, **kwargs):
    """MnasNet-A1 1.0 (3.9M parameters)."""
    return _mnasnet_a1("semnasnet_100", pretrained, progress, 1.0, **kwargs)


@register_model
def semnasnet_140(pretrained=False, progress=True, **kwargs):
    """MnasNet-A1 1.4 (6.1M parameters)."""
    return _mnasnet_a1("semnasnet_140", pretrained, progress, 1.4, **kwargs)


@register_model
def mnasnet_small(pretrained=False, progress=True, **kwargs):
    """MnasNet-Small (Tan et al. 2019): an 8-channel stem, squeeze-and-excitation in the middle stages, ReLU
    (2.0M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_c8"],
        ["ir_r1_k3_s2_e3_c16"],
        ["ir_r2_k3_s2_e6_c16"],
        ["ir_r4_k5_s2_e6_c32_se0.25"],
        ["ir_r3_k3_s1_e6_c32_se0.25"],
        ["ir_r3_k5_s2_e6_c88_se0.25"],
        ["ir_r1_k3_s1_e6_c144"],
    ]
    return _create("mnasnet_small", pretrained, progress, arch_def,
                   **{"stem_size": 8, "act_layer": nn.ReLU, **kwargs})


def _mobilenetv1(variant, pretrained, progress, channel_multiplier, head_conv=False, **kwargs):
    """MobileNetV1 (Howard et al. 2017, "MobileNets: Efficient Convolutional Neural Networks for Mobile Vision
    Applications"): depthwise-separable blocks with ReLU6 after both convolutions and no skip; pooled straight
    from the last block, or, with ``head_conv`` (timm's 'h' variant), after a 1x1 head convolution to at least
    1024 channels."""
    arch_def = [
        ["dsa_r1_k3_s1_c64"],
        ["dsa_r2_k3_s2_c128"],
        ["dsa_r2_k3_s2_c256"],
        ["dsa_r6_k3_s2_c512"],
        ["dsa_r2_k3_s2_c1024"],
    ]
    num_features = max(1024, _make_divisible(1024 * channel_multiplier, 8)) if head_conv else 0
    return _create(variant, pretrained, progress, arch_def,
                   **{"channel_multiplier": channel_multiplier, "num_features": num_features, "act_layer": nn.ReLU6,
                      **kwargs})


@register_model
def mobilenetv1_100(pretrained=False, progress=True, **kwargs):
    """MobileNetV1 1.0 as timm trained it (4.2M parameters)."""
    return _mobilenetv1("mobilenetv1_100", pretrained, progress, 1.0, **kwargs)


@register_model
def mobilenetv1_100h(pretrained=False, progress=True, **kwargs):
    """MobileNetV1 1.0 with a 1024-channel head convolution (5.3M parameters)."""
    return _mobilenetv1("mobilenetv1_100h", pretrained, progress, 1.0, head_conv=True, **kwargs)


@register_model
def mobilenetv1_125(pretrained=False, progress=True, **kwargs):
    """MobileNetV1 1.25 (6.3M parameters)."""
    return _mobilenetv1("mobilenetv1_125", pretrained, progress, 1.25, **kwargs)


@register_model
def mobilenet_edgetpu_100(pretrained=False, progress=True, **kwargs):
    """MobileNet-EdgeTPU (V1): fused MBConv stages, then inverted residuals, ReLU (4.1M parameters)."""
    arch_def = [
        ["cn_r1_k1_s1_c16"],
        ["er_r1_k3_s2_e8_c32", "er_r3_k3_s1_e4_c32"],
        ["er_r1_k3_s2_e8_c48", "er_r3_k3_s1_e4_c48"],
        ["ir_r1_k3_s2_e8_c96", "ir_r3_k3_s1_e4_c96"],
        ["ir_r1_k3_s1_e8_c96_noskip", "ir_r3_k3_s1_e4_c96"],
        ["ir_r1_k5_s2_e8_c160", "ir_r3_k5_s1_e4_c160"],
        ["ir_r1_k3_s1_e8_c192"],
    ]
    return _create("mobilenet_edgetpu_100", pretrained, progress, arch_def, **{"act_layer": nn.ReLU, **kwargs})


def _mobilenet_edgetpu_v2(variant, pretrained, progress, channels, stem_size=64, stem_kernel_size=5, group_size=64,
                          num_features=1280, **kwargs):
    """MobileNet-EdgeTPU-V2: a 1x1 convolution block, fused MBConv stages whose alternate blocks group the
    expansion in groups of ``group_size`` channels, then inverted residuals, each stage ``channels`` wide; ReLU,
    no squeeze-and-excitation."""
    arch_def = [
        [f"cn_r1_k1_s1_c{channels[0]}"],
        [f"er_r1_k3_s2_e8_c{channels[1]}", f"er_r1_k3_s1_e4_gs{group_size}_c{channels[1]}"],
        [f"er_r1_k3_s2_e8_c{channels[2]}", f"er_r1_k3_s1_e4_gs{group_size}_c{channels[2]}",
         f"er_r1_k3_s1_e4_c{channels[2]}", f"er_r1_k3_s1_e4_gs{group_size}_c{channels[2]}"],
        [f"er_r1_k3_s2_e8_c{channels[3]}", f"ir_r3_k3_s1_e4_c{channels[3]}"],
        [f"ir_r1_k3_s1_e8_c{channels[4]}", f"ir_r3_k3_s1_e4_c{channels[4]}"],
        [f"ir_r1_k3_s2_e8_c{channels[5]}", f"ir_r3_k3_s1_e4_c{channels[5]}"],
        [f"ir_r1_k3_s1_e8_c{channels[6]}"],
    ]
    return _create(variant, pretrained, progress, arch_def,
                   **{"stem_size": stem_size, "stem_kernel_size": stem_kernel_size, "num_features": num_features,
                      "act_layer": nn.ReLU, **kwargs})


@register_model
def mobilenet_edgetpu_v2_xs(pretrained=False, progress=True, **kwargs):
    """MobileNet-EdgeTPU-V2-XS: a 3x3 stem of 32 channels, 16 to 192 channels (4.5M parameters)."""
    return _mobilenet_edgetpu_v2("mobilenet_edgetpu_v2_xs", pretrained, progress, (16, 32, 48, 96, 144, 160, 192),
                                 stem_size=32, stem_kernel_size=3, **kwargs)


@register_model
def mobilenet_edgetpu_v2_s(pretrained=False, progress=True, **kwargs):
    """MobileNet-EdgeTPU-V2-S: a 5x5 stem of 64 channels, 24 to 256 channels (6.0M parameters)."""
    return _mobilenet_edgetpu_v2("mobilenet_edgetpu_v2_s", pretrained, progress, (24, 48, 64, 128, 160, 192, 256),
                                 **kwargs)


@register_model
def mobilenet_edgetpu_v2_m(pretrained=False, progress=True, **kwargs):
    """MobileNet-EdgeTPU-V2-M: a 5x5 stem of 64 channels, 32 to 320 channels, a 1344-wide head (8.5M)."""
    return _mobilenet_edgetpu_v2("mobilenet_edgetpu_v2_m", pretrained, progress, (32, 64, 80, 160, 192, 240, 320),
                                 num_features=1344, **kwargs)


@register_model
def mobilenet_edgetpu_v2_l(pretrained=False, progress=True, **kwargs):
    """MobileNet-EdgeTPU-V2-L: a 7x7 stem, fused blocks grouped by 128 channels, 32 to 384 channels (10.9M)."""
    return _mobilenet_edgetpu_v2("mobilenet_edgetpu_v2_l", pretrained, progress, (32, 64, 96, 192, 240, 256, 384),
                                 stem_kernel_size=7, group_size=128, num_features=1408, **kwargs)


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
def mixnet_xxl(pretrained=False, progress=True, **kwargs):
    """MixNet-XXL, timm's MixNet-M x2.4 wide and x1.3 deep, without weights (24.0M parameters)."""
    return _mixnet_m("mixnet_xxl", pretrained, progress, 2.4, 1.3, **kwargs)


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


_TEST_EFFICIENTNET = [
    ["cn_r1_k3_s1_e1_c16_skip"],
    ["er_r1_k3_s2_e4_c24"],
    ["er_r1_k3_s2_e4_c32"],
    ["ir_r1_k3_s2_e4_c48_se0.25"],
    ["ir_r1_k3_s2_e4_c64_se0.25"],
]


def _test_efficientnet(variant, pretrained, progress, **kwargs):
    """timm's tiny test EfficientNet: a residual conv block, two fused and two inverted-residual (SE) blocks, 16 to
    64 channels, a 24-wide stem and 256 features, SiLU; channels rounded to multiples of 8 without a floor."""
    return _create(variant, pretrained, progress, _TEST_EFFICIENTNET,
                   **{"num_features": 256, "stem_size": 24, "round_limit": 0.0, "act_layer": nn.SiLU, **kwargs})


@register_model
def test_efficientnet(pretrained=False, progress=True, **kwargs):
    """timm's tiny test EfficientNet with BatchNorm."""
    return _test_efficientnet("test_efficientnet", pretrained, progress, **kwargs)


@register_model
def test_efficientnet_gn(pretrained=False, progress=True, **kwargs):
    """timm's tiny test EfficientNet with GroupNorm (groups of 8 channels)."""
    kwargs.setdefault("norm_layer", partial(_group_norm_act, group_size=8))
    return _test_efficientnet("test_efficientnet_gn", pretrained, progress, **kwargs)


@register_model
def test_efficientnet_ln(pretrained=False, progress=True, **kwargs):
    """timm's tiny test EfficientNet with LayerNorm over the channels (eps 1e-5)."""
    kwargs.setdefault("norm_layer", partial(LayerNormAct2d, eps=1e-5, inplace=True))
    return _test_efficientnet("test_efficientnet_ln", pretrained, progress, **kwargs)


@register_model
def test_efficientnet_evos(pretrained=False, progress=True, **kwargs):
    """timm's tiny test EfficientNet with EvoNorm-S0 (groups of 8 channels) as norm and activation."""
    kwargs.setdefault("norm_layer", partial(EvoNorm2dS0, group_size=8))
    return _test_efficientnet("test_efficientnet_evos", pretrained, progress, **kwargs)
