"""MobileNetV5, the image encoder of Google's Gemma 3n (2025), built from the blocks of MobileNetV4 (Qin et al. 2024,
"MobileNetV4: Universal Models for the Mobile Ecosystem"; MobileNetV5 has no paper of its own): mobilenetv5_300m,
mobilenetv5_300m_enc and mobilenetv5_base.

A convolutional trunk of four stages: a 3x3 stride-2 stem, fused inverted bottlenecks (EdgeResidual), universal
inverted bottlenecks and, in the last two stages, multi-query attention blocks (keys and values downsampled in
the third stage), all normalised by RMSNorm over the channels and activated by tanh-approximated GELU, with 1e-5
layer scales. A multi-scale fusion adapter (MSFA) then joins the last two stages: the coarser map upsampled to the
finer one, concatenated, an FFN-form universal inverted bottleneck to ``num_features`` channels, resized to a fixed
grid (16x16) and normalised; that map is ``forward_features``' output (Gemma 3n's image tokens), which the head
pools and classifies; the encoder variant (``MobileNetV5Encoder``) stops there, with no head. Model names, module
names, ``state_dict`` keys and (seeded) initialisation follow timm's ``mobilenetv5`` module, so its checkpoints load
directly; mobilenetv5_300m_enc and mobilenetv5_base, which timm publishes no weights for, are registered too.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d, pair
from ._efficientnet_blocks import (SqueezeExcite, UniversalInvertedResidual, build_stages, decode_arch_def,
                                   init_weights_goog, round_channels)
from ._layers import BatchNormAct2d, SelectAdaptivePool2d, _NormAct
from .convnext import RmsNorm2d

__all__ = []

# timm's activation here: GELU with its tanh approximation
_GELU_TANH = partial(nn.GELU, approximate="tanh")


class RmsNormAct2d(_NormAct, RmsNorm2d):
    """RMSNorm over the channels of an (N, C, H, W) map (eps 1e-6, a learned scale) and its activation as one module,
    timm's ``RmsNormAct2d``: then ``drop`` and ``act`` (an identity with ``apply_act=False``)."""

    def __init__(self, num_channels, eps=1e-6, act_layer=nn.ReLU, apply_act=True, inplace=False):
        super().__init__(num_channels, eps=eps)
        self._add_act(act_layer, apply_act, inplace)


# the norm-and-activation layer of each plain norm this model takes
_NORM_ACT_LAYERS = {RmsNorm2d: RmsNormAct2d, nn.BatchNorm2d: BatchNormAct2d}


def _norm_act_layer(norm_layer, act_layer):
    """The norm-and-activation layer of ``norm_layer`` (RmsNorm2d or BatchNorm2d) with ``act_layer`` bound."""
    if norm_layer not in _NORM_ACT_LAYERS:
        raise ValueError(f"norm_layer must be RmsNorm2d or nn.BatchNorm2d, got {norm_layer}")
    return partial(_NORM_ACT_LAYERS[norm_layer], act_layer=act_layer)


class ConvNormAct(nn.Module):
    """A convolution (``conv``, with a bias when ``bias``) and a norm with its activation (``bn``): the stem.
    ``padding`` is a ``create_conv2d`` padding type ('' PyTorch style, 'same' as TensorFlow)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding="", bias=False,
                 norm_layer=RmsNorm2d, act_layer=_GELU_TANH):
        super().__init__()
        self.conv = create_conv2d(in_channels, out_channels, kernel_size, stride, pad_type=padding, bias=bias)
        self.bn = _norm_act_layer(norm_layer, act_layer)(out_channels)

    @property
    def out_channels(self):
        """The convolution's output channels."""
        return self.conv.out_channels

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x


class MobileNetV5MultiScaleFusionAdapter(nn.Module):
    """The multi-scale fusion adapter (``msfa``): the maps of several stages, the coarser ones upsampled
    (``interpolation_mode``) to the first (finest) one's size and concatenated along the channels (``in_chs`` in
    all), an FFN-form universal inverted bottleneck (``ffn``: 1x1 expansion by ``expansion_ratio``, 1x1 projection to
    ``out_chs``; no skip, no layer scale), then resized to ``output_resolution`` (average pooling where the size is
    a multiple of it, else bilinear interpolation) and normalised (``norm``)."""

    def __init__(self, in_chs, out_chs, output_resolution, expansion_ratio=2.0, interpolation_mode="nearest",
                 act_layer=_GELU_TANH, norm_layer=RmsNorm2d):
        super().__init__()
        self.in_channels = in_chs
        self.out_channels = out_chs
        self.output_resolution = pair(output_resolution)
        self.interpolation_mode = interpolation_mode
        self.ffn = UniversalInvertedResidual(in_chs, out_chs, dw_kernel_size_mid=0, exp_ratio=expansion_ratio,
                                             noskip=True, act_layer=act_layer,
                                             norm_layer=_norm_act_layer(norm_layer, act_layer),
                                             layer_scale_init_value=None)
        self.norm = norm_layer(out_chs)

    def _resize(self, x, size):
        """``x`` brought to the output grid from its ``size``: average pooling by whole factors where it divides,
        else bilinear interpolation."""
        out_h, out_w = self.output_resolution
        if size[0] % out_h or size[1] % out_w:
            return F.interpolate(x, size=self.output_resolution, mode="bilinear")
        kernel = (size[0] // out_h, size[1] // out_w)
        return F.avg_pool2d(x, kernel_size=kernel, stride=kernel)

    def forward(self, inputs):
        size = tuple(inputs[0].shape[-2:])
        resized = []
        for x in inputs:
            if x.shape[-2] < size[0] or x.shape[-1] < size[1]:
                x = F.interpolate(x, size=size, mode=self.interpolation_mode)
            resized.append(x)
        x = self.ffn(torch.cat(resized, dim=1))
        if size != self.output_resolution:
            x = self._resize(x, size)
        x = self.norm(x)
        return x


class _MobileNetV5Trunk(nn.Module):
    """The stem, stages and multi-scale fusion adapter that the classifier and the encoder share, and the forwards
    over them (``forward_features``, ``forward_intermediates``)."""

    def _build_trunk(self, block_args, in_chans, stem_size, stem_bias, fix_stem, pad_type, act_layer, norm_layer,
                     aa_layer, se_layer, se_from_exp, round_chs_fn, drop_path_rate, layer_scale_init_value):
        """``conv_stem`` and ``blocks`` (with ``feature_info`` and ``stage_ends``); returns the last stage's
        channels."""
        norm_act_layer = _norm_act_layer(norm_layer, act_layer)
        self.in_chans = in_chans
        if not fix_stem:
            stem_size = round_chs_fn(stem_size)
        self.conv_stem = ConvNormAct(in_chans, stem_size, 3, stride=2, padding=pad_type, bias=stem_bias,
                                     norm_layer=norm_layer, act_layer=act_layer)
        self.blocks, self.feature_info, trunk_chs = build_stages(
            block_args, stem_size, round_chs_fn, 32, pad_type, act_layer, se_layer=se_layer, se_from_exp=se_from_exp,
            aa_layer=aa_layer, drop_path_rate=drop_path_rate, layer_scale_init_value=layer_scale_init_value,
            norm_layer=norm_act_layer, attn_norm_layer=norm_layer)
        self.stage_ends = [f["stage"] for f in self.feature_info]
        return trunk_chs

    def _build_msfa(self, num_features, msfa_indices, msfa_output_resolution, act_layer, norm_layer):
        """The adapter (``msfa``) over the feature levels ``msfa_indices`` picks, to ``num_features`` channels."""
        self.msfa_indices = take_indices(len(self.feature_info), msfa_indices)
        self.msfa_output_resolution = msfa_output_resolution
        msfa_in_chs = sum(self.feature_info[i]["num_chs"] for i in self.msfa_indices)
        self.msfa = MobileNetV5MultiScaleFusionAdapter(msfa_in_chs, num_features, msfa_output_resolution,
                                                       act_layer=act_layer, norm_layer=norm_layer)

    def forward_features(self, x):
        """The adapter's fused map (N, num_features, msfa_output_resolution, msfa_output_resolution), or without it
        the last stage's map."""
        x = self.conv_stem(x)
        if self.msfa is None:
            return self.blocks(x)
        fused = [x] if 0 in self.msfa_indices else []
        for feat_idx, stage in enumerate(self.blocks, start=1):
            x = stage(x)
            if feat_idx in self.msfa_indices:
                fused.append(x)
        return self.msfa(fused)

    def _taps(self, indices, extra_blocks):
        """The feature positions (0: the stem, i: after stage i; with ``extra_blocks``, after stage i whatever its
        feature levels) that ``indices`` picks, as given and as positions, and the last position."""
        if extra_blocks:
            take = take_indices(len(self.blocks) + 1, indices)
            return take, take, max(take)
        take = take_indices(len(self.stage_ends), indices)
        return take, [self.stage_ends[i] for i in take], self.stage_ends[max(take)]

    def _pruned_channels(self, take, last, extra_blocks):
        """The channels of the last kept feature position."""
        if extra_blocks:
            return _out_channels(self.blocks[last - 1]) if last else self.conv_stem.out_channels
        return self.feature_info[max(take)]["num_chs"]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False, extra_blocks=False):
        """The stem's and stages' outputs picked by ``indices`` (None: all, n: the last n, or a list) among the
        feature levels (``extra_blocks``: among the stem and every stage) and, unless ``intermediates_only``, the
        final map (the adapter's, when present). ``norm`` is accepted and ignored, as in timm; ``stop_early`` (only
        with ``intermediates_only``) skips the stages after the last one picked."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        if stop_early and not intermediates_only:
            raise ValueError("stop_early needs intermediates_only=True")
        _, taps, last = self._taps(indices, extra_blocks)
        stages = list(self.blocks)[:last] if stop_early else list(self.blocks)
        x = self.conv_stem(x)
        intermediates = [x] if 0 in taps else []
        fused = [x] if self.msfa is not None and 0 in self.msfa_indices else []
        for feat_idx, stage in enumerate(stages, start=1):
            x = stage(x)
            if feat_idx in taps:
                intermediates.append(x)
            if self.msfa is not None and feat_idx in self.msfa_indices:
                fused.append(x)
        if intermediates_only:
            return intermediates
        if self.msfa is not None:
            x = self.msfa(fused)
        return x, intermediates


class MobileNetV5(_MobileNetV5Trunk):
    """MobileNetV5: a 3x3 stride-2 stem with a bias, norm and activation (``conv_stem``), the stages of
    ``block_args`` (``blocks``: the shared EfficientNet builder's MobileNetV4 blocks, normalised by ``norm_layer``),
    then either the multi-scale fusion adapter (``msfa``,
    ``use_msfa``) over the stages ``msfa_indices`` picks (of ``feature_info``: the stem is 0), to ``num_features``
    channels on a ``msfa_output_resolution`` grid, or MobileNetV4's head (pooling, then a 1x1 convolution to
    ``num_features`` channels, ``conv_head``, with norm and activation, ``norm_head``); then flattening, dropout
    (``drop_rate``) and the classifier.

    ``block_args``: the decoded stages (``decode_arch_def``: fused 'er', universal 'uir' and attention 'mqa'
    blocks). ``round_chs_fn`` rounds every width (the stem's too unless ``fix_stem``). ``norm_layer``: RmsNorm2d
    (timm's default and the model's) or nn.BatchNorm2d; ``act_layer``: the default activation (tanh GELU).
    ``se_layer`` builds squeeze-and-excitation where a block asks for it, its ratio counting the expanded channels
    with ``se_from_exp``; ``aa_layer`` ('avg' or 'blurpc') anti-aliases strided convolutions;
    ``layer_scale_init_value`` gives the universal and attention blocks a layer scale. ``drop_path_rate`` grows
    linearly over the blocks. ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or '' (no pooling). ``pad_type``
    '' pads PyTorch style, 'same' as TensorFlow.

    ``num_features`` is ``forward_features``' width (the adapter's, else the last stage's) and ``head_hidden_size``
    the pre-logits width, as in timm.
    """

    default_cfg = {"first_conv": "conv_stem.conv", "classifier": "classifier"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, block_args, num_classes=1000, in_chans=3, stem_size=16, stem_bias=True, fix_stem=False,
                 num_features=2048, pad_type="", use_msfa=True, msfa_indices=(-2, -1), msfa_output_resolution=16,
                 act_layer=_GELU_TANH, norm_layer=RmsNorm2d, aa_layer=None, se_layer=SqueezeExcite,
                 se_from_exp=True, round_chs_fn=round_channels, drop_rate=0.0, drop_path_rate=0.0,
                 layer_scale_init_value=None, global_pool="avg"):
        super().__init__()
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        trunk_chs = self._build_trunk(block_args, in_chans, stem_size, stem_bias, fix_stem, pad_type, act_layer,
                                      norm_layer, aa_layer, se_layer, se_from_exp, round_chs_fn, drop_path_rate,
                                      layer_scale_init_value)
        if use_msfa:
            self.num_features = num_features
            self._build_msfa(num_features, msfa_indices, msfa_output_resolution, act_layer, norm_layer)
            self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
            self.head_hidden_size = num_features * self.global_pool.feat_mult()
            self.conv_head = None
            self.norm_head = None
        else:
            self.num_features = trunk_chs
            self.head_hidden_size = num_features
            self.msfa = None
            self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
            pooled_chs = trunk_chs * self.global_pool.feat_mult()
            self.conv_head = create_conv2d(pooled_chs, num_features, 1, pad_type=pad_type)
            self.norm_head = _norm_act_layer(norm_layer, act_layer)(num_features)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        init_weights_goog(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pre-logits features), after another pooling
        ``global_pool`` if given (with the head convolution, only one that keeps its input width); the new layers
        take the model's training mode."""
        if global_pool is not None:
            pool = SelectAdaptivePool2d(global_pool, flatten=False)
            pooled_chs = self.num_features * pool.feat_mult()
            if self.conv_head is not None and self.conv_head.in_channels != pooled_chs:
                raise ValueError(f"global_pool '{global_pool}' changes the pooled width, which the head convolution "
                                 f"({self.conv_head.in_channels} input channels) cannot take")
            if self.conv_head is None:
                self.head_hidden_size = pooled_chs
            self.global_pool = pool.train(self.training)
            self.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.training)
        self.num_classes = num_classes
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        self.classifier.train(self.training)

    def forward_head(self, x, pre_logits=False):
        """Pooling, the head convolution with its norm and activation (without the adapter), flattening and
        dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.conv_head is not None:
            x = self.conv_head(x)
            x = self.norm_head(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, extra_blocks=False):
        """Drop the stages after the last feature level ``indices`` picks (as ``forward_intermediates`` counts
        them); when stages go or ``prune_head``, the adapter, the head convolution and the classifier go too (no
        pooling), the features then being the last kept stage's. ``prune_norm`` is accepted, as timm's (there is no
        final norm). Returns the indices as given, made absolute."""
        take, _, last = self._taps(indices, extra_blocks)
        num_chs = self._pruned_channels(take, last, extra_blocks)
        prune_end = last < len(self.blocks)
        self.blocks = nn.Sequential(*list(self.blocks)[:last])
        if prune_end or (prune_head and self.msfa is not None):
            self.num_features = num_chs
        if prune_end or prune_head:
            self.msfa = None
            self.conv_head = None
            self.norm_head = None
            self.reset_classifier(0, "")
        return take


class MobileNetV5Encoder(_MobileNetV5Trunk):
    """MobileNetV5 as Gemma 3n's image encoder (timm's ``MobileNetV5Encoder``): the stem, the stages and the
    multi-scale fusion adapter (to 2048 channels on a ``msfa_output_resolution`` grid), no head; ``forward`` returns
    the adapter's map. The arguments are ``MobileNetV5``'s (``drop_rate`` is kept and unused, as in timm).

    ``num_classes`` is 0 and ``forward_head`` refuses to run: there is no classifier.
    """

    default_cfg = {"first_conv": "conv_stem.conv", "classifier": "classifier"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, block_args, in_chans=3, stem_size=64, stem_bias=True, fix_stem=False, pad_type="",
                 msfa_indices=(-2, -1), msfa_output_resolution=16, act_layer=_GELU_TANH, norm_layer=RmsNorm2d,
                 aa_layer=None, se_layer=SqueezeExcite, se_from_exp=True, round_chs_fn=round_channels, drop_rate=0.0,
                 drop_path_rate=0.0, layer_scale_init_value=None):
        super().__init__()
        self.num_classes = 0
        self.drop_rate = drop_rate
        self._build_trunk(block_args, in_chans, stem_size, stem_bias, fix_stem, pad_type, act_layer, norm_layer,
                          aa_layer, se_layer, se_from_exp, round_chs_fn, drop_path_rate, layer_scale_init_value)
        self.num_features = self.head_hidden_size = 2048
        self._build_msfa(self.num_features, msfa_indices, msfa_output_resolution, act_layer, norm_layer)
        init_weights_goog(self)

    def forward_head(self, x, pre_logits=False):
        """Refused: the encoder has no classification head."""
        raise NotImplementedError("MobileNetV5Encoder has no classification head")

    def forward(self, x):
        return self.forward_features(x)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, extra_blocks=False):
        """Drop the stages after the last feature level ``indices`` picks (as ``forward_intermediates`` counts
        them); when stages go or ``prune_head``, the adapter goes too, the features then being the last kept
        stage's. ``prune_norm`` is accepted, as timm's. Returns the indices as given, made absolute."""
        take, _, last = self._taps(indices, extra_blocks)
        num_chs = self._pruned_channels(take, last, extra_blocks)
        prune_end = last < len(self.blocks)
        self.blocks = nn.Sequential(*list(self.blocks)[:last])
        if prune_end or prune_head:
            self.msfa = None
            self.num_features = self.head_hidden_size = num_chs
        return take


def _out_channels(stage):
    """A stage's output channels: its last convolution's (the last block's projection)."""
    return [m for m in stage.modules() if isinstance(m, nn.Conv2d)][-1].out_channels


def _create_mobilenetv5(variant, pretrained, progress, kwargs, model_cls=None, **model_args):
    """Build a registered variant of ``model_cls`` (``MobileNetV5`` by default) from timm's architecture arguments,
    which the caller's ``kwargs`` override; ``features_only`` gives the stem's and the four stages' maps (timm's
    getter) unless ``out_indices`` says otherwise."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2, 3, 4))
    return build_model(model_cls or MobileNetV5, variant, pretrained, progress=progress, **{**model_args, **kwargs})


# the head arguments timm's encoder builder drops: the encoder has no head
_ENCODER_DROPPED_KWARGS = ("num_classes", "num_features", "head_conv", "head_bias", "head_norm", "global_pool")


def _mobilenetv5_args(arch_def):
    """The architecture arguments common to every variant: the decoded ``arch_def``, a 64-channel stem, RMSNorm,
    tanh GELU and 1e-5 layer scales."""
    return dict(block_args=decode_arch_def(arch_def), stem_size=64, fix_stem=False,
                round_chs_fn=partial(round_channels, multiplier=1.0), norm_layer=RmsNorm2d, act_layer=_GELU_TANH,
                layer_scale_init_value=1e-5)


# the 300M encoder: fused bottlenecks at 1/4; ExtraDW and ConvNeXt-like bottlenecks at 1/8; at 1/16 bottlenecks,
# then FFN bottlenecks alternating with multi-query attention on keys and values downsampled once more; at 1/32
# the same alternation, without the downsampling
_MNV5_300M = [
    ["er_r1_k3_s2_e4_c128"] + ["er_r1_k3_s1_e4_c128"] * 2,
    ["uir_r1_a3_k5_s2_e6_c256", "uir_r1_a5_k0_s1_e4_c256", "uir_r1_a3_k0_s1_e4_c256", "uir_r1_a5_k0_s1_e4_c256",
     "uir_r1_a3_k0_s1_e4_c256"],
    ["uir_r1_a5_k5_s2_e6_c640"] + ["uir_r1_a5_k0_s1_e4_c640"] * 7 + ["uir_r1_a0_k0_s1_e1_c640"]
    + ["mqa_r1_k3_h12_v2_s1_d64_c640", "uir_r1_a0_k0_s1_e2_c640"] * 14,
    ["uir_r1_a5_k5_s2_e6_c1280"] + ["mqa_r1_k3_h16_s1_d96_c1280", "uir_r1_a0_k0_s1_e2_c1280"] * 19,
]

# timm's smaller classification configuration: the same first two stages; at 1/16 three bottlenecks, then FFN
# bottlenecks alternating with 8-head attention blocks marked stride 2 (which only drops their skip: the queries
# keep the resolution, as in timm); at 1/32 seven 16-head attention blocks alternating with FFN bottlenecks
_MNV5_BASE = [
    _MNV5_300M[0],
    _MNV5_300M[1],
    ["uir_r1_a5_k5_s2_e6_c512"] + ["uir_r1_a5_k0_s1_e4_c512"] * 2 + ["uir_r1_a0_k0_s1_e1_c512"]
    + ["mqa_r1_k3_h8_s2_d64_c512", "uir_r1_a0_k0_s1_e2_c512"] * 6,
    ["uir_r1_a5_k5_s2_e6_c1024"] + ["mqa_r1_k3_h16_s1_d64_c1024", "uir_r1_a0_k0_s1_e2_c1024"] * 7,
]


@register_model
def mobilenetv5_300m_enc(pretrained=False, progress=True, **kwargs):
    """MobileNetV5-300M as Gemma 3n's headless image encoder (TensorFlow 'same' padding unless ``pad_type`` says
    otherwise)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in _ENCODER_DROPPED_KWARGS}
    kwargs.setdefault("pad_type", "same")
    return _create_mobilenetv5("mobilenetv5_300m_enc", pretrained, progress, kwargs, model_cls=MobileNetV5Encoder,
                               **_mobilenetv5_args(_MNV5_300M))


@register_model
def mobilenetv5_300m(pretrained=False, progress=True, **kwargs):
    """MobileNetV5-300M, Gemma 3n's image encoder (294M parameters), with the multi-scale fusion adapter."""
    return _create_mobilenetv5("mobilenetv5_300m", pretrained, progress, kwargs, **_mobilenetv5_args(_MNV5_300M))


@register_model
def mobilenetv5_base(pretrained=False, progress=True, **kwargs):
    """MobileNetV5-Base, timm's smaller classification configuration (512 and 1024 channels in the last two
    stages), with the multi-scale fusion adapter."""
    return _create_mobilenetv5("mobilenetv5_base", pretrained, progress, kwargs, **_mobilenetv5_args(_MNV5_BASE))
