"""EdgeNeXt (Maaz et al. 2022, "EdgeNeXt: Efficiently Amalgamated CNN-Transformer Architecture for Mobile Vision
Applications"): timm's edgenext_xx_small, edgenext_x_small, edgenext_small, edgenext_base and Ross Wightman's
edgenext_small_rw.

A ConvNeXt-like hierarchy for mobile devices: a 4x4 patch stem, four stages at strides 4, 8, 16 and 32, each after
the first opening with a LayerNorm and a 2x2 stride-2 convolution. Most blocks are convolutional encoders (a
depthwise convolution whose kernel grows from stage to stage, then a LayerNorm and an inverted MLP on the
channels, scaled by a layer scale in a residual connection). The last block of the later stages is a split
depth-wise transpose attention (SDTA) encoder: the channels are split into groups, each group after the first has
the previous group's output added and passes a depthwise 3x3 convolution (a hierarchy of growing receptive
fields); then cross-covariance attention across channels (XCiT's), with a Fourier positional encoding added first
in the second stage, and an inverted MLP, each in a residual connection with a layer scale. The head pools,
normalises and classifies. ``edgenext_small_rw`` strides inside its first blocks instead of separate downsampling
layers, has bias-free convolutions and an overlapping 9x9 stem.

This is timm's ``EdgeNeXt``: model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation
follow timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. The model takes any image size
of 32 pixels or more. ``features_only=True`` returns the four stages' (N, C, H, W) outputs as timm's feature model
does, under its flattened names (``stem_0``, ``stages_2``).
"""
import math
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet
from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d
from ._layers import ClassifierHead, Mlp, drop_path_module, trunc_normal_tf_
from ._norm import LayerNorm2d
from .convnext import NormMlpClassifierHead, NormPreStagesApi
from .xcit import XCA, PositionalEncodingFourier

__all__ = []


def _layer_scale(dim, init_value):
    """A learned per-channel scale starting at ``init_value``, or None (no scale) when that is not positive."""
    return nn.Parameter(init_value * torch.ones(dim)) if init_value > 0 else None


class ConvBlock(nn.Module):
    """EdgeNeXt's convolutional encoder: x + drop_path(gamma * mlp(norm(conv_dw(x)))), the norm and the inverted
    MLP (``expand_ratio`` wide) on the channels-last map.

    ``conv_dw`` is a depthwise ``kernel_size`` convolution from ``dim`` to ``dim_out`` channels (each input channel
    giving ``dim_out / dim``) with ``stride``; where it strides or widens, the shortcut is its output instead of the
    block's input. ``gamma`` is the layer scale (``ls_init_value`` at first; none when that is 0).
    """

    def __init__(self, dim, dim_out=None, kernel_size=7, stride=1, conv_bias=True, expand_ratio=4,
                 ls_init_value=1e-6, norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU, drop_path=0.0):
        super().__init__()
        dim_out = dim_out or dim
        self.shortcut_after_dw = stride > 1 or dim != dim_out
        self.conv_dw = create_conv2d(dim, dim_out, kernel_size, stride=stride, groups=dim, bias=conv_bias)
        self.norm = norm_layer(dim_out)
        self.mlp = Mlp(dim_out, int(expand_ratio * dim_out), act_layer=act_layer)
        self.gamma = _layer_scale(dim_out, ls_init_value)
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        if self.shortcut_after_dw:
            shortcut = x
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.mlp(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        x = shortcut + self.drop_path(x)
        return x


class CrossCovarianceAttn(XCA):
    """XCiT's cross-covariance attention under timm's EdgeNeXt name: per head, a channels x channels attention map
    from the L2-normalised queries and keys (times a learnt ``temperature``) mixes the value channels, so the cost
    grows linearly with the number of pixels. Works on (N, tokens, dim) sequences."""


class SplitTransposeBlock(nn.Module):
    """EdgeNeXt's split depth-wise transpose attention (SDTA) encoder on an (N, dim, H, W) map.

    The channels are cut into ``num_scales`` groups (``chunk``'s sizes; ``width`` is the first's): each group but
    the last, from the second on with the previous group's output added, passes a depthwise 3x3 convolution
    (``convs``); the last group passes as it is. The map then becomes a token sequence: the Fourier positional
    encoding (``pos_embd``, with ``use_pos_emb``) is added, then x + drop_path(gamma_xca * xca(norm_xca(x))) with
    cross-covariance attention (``num_heads`` heads), then the channels-last map's norm, inverted MLP and layer scale
    ``gamma`` form the residual branch of the block's input (the same ``drop_path``, drawn again). A layer scale
    whose ``ls_init_value`` is 0 is left out.
    """

    def __init__(self, dim, num_scales=1, num_heads=8, expand_ratio=4, use_pos_emb=True, conv_bias=True,
                 qkv_bias=True, ls_init_value=1e-6, norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU,
                 drop_path=0.0, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        width = max(int(math.ceil(dim / num_scales)), int(math.floor(dim // num_scales)))
        self.width = width
        self.num_scales = max(1, num_scales - 1)
        self.convs = nn.ModuleList([
            create_conv2d(width, width, 3, groups=width, bias=conv_bias) for _ in range(self.num_scales)])
        self.pos_embd = PositionalEncodingFourier(dim=dim) if use_pos_emb else None
        self.norm_xca = norm_layer(dim)
        self.gamma_xca = _layer_scale(dim, ls_init_value)
        self.xca = CrossCovarianceAttn(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                       proj_drop=proj_drop)
        self.norm = norm_layer(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(expand_ratio * dim), act_layer=act_layer)
        self.gamma = _layer_scale(dim, ls_init_value)
        self.drop_path = drop_path_module(drop_path)

    def _multi_scale(self, x):
        """The channel groups through the chained depthwise convolutions, concatenated back."""
        groups = x.chunk(len(self.convs) + 1, dim=1)
        outputs = []
        group = groups[0]
        for i, conv in enumerate(self.convs):
            if i > 0:
                group = group + groups[i]
            group = conv(group)
            outputs.append(group)
        outputs.append(groups[-1])
        return torch.cat(outputs, 1)

    def forward(self, x):
        shortcut = x
        x = self._multi_scale(x)
        batch, channels, height, width = x.shape
        x = x.reshape(batch, channels, height * width).permute(0, 2, 1)
        if self.pos_embd is not None:
            pos_encoding = self.pos_embd(batch, height, width).reshape(batch, -1, x.shape[1]).permute(0, 2, 1)
            x = x + pos_encoding
        attn = self.xca(self.norm_xca(x))
        if self.gamma_xca is not None:
            attn = self.gamma_xca * attn
        x = x + self.drop_path(attn)
        x = x.reshape(batch, height, width, channels)
        x = self.norm(x)
        x = self.mlp(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        x = shortcut + self.drop_path(x)
        return x


class EdgeNeXtStage(nn.Module):
    """One stage: ``downsample`` (a channel LayerNorm and a 2x2 stride-2 convolution to ``out_chs``; an identity
    when the stage keeps the resolution or, with ``downsample_block``, when its first block strides instead), then
    ``depth`` blocks, the last ``num_global_blocks`` of them SDTA encoders, the others convolutional encoders with
    ``kernel_size`` kernels. ``drop_path_rates`` holds one stochastic-depth rate per block."""

    def __init__(self, in_chs, out_chs, stride=2, depth=2, num_global_blocks=1, num_heads=4, scales=2,
                 kernel_size=7, expand_ratio=4, use_pos_emb=False, downsample_block=False, conv_bias=True,
                 ls_init_value=1.0, drop_path_rates=None, norm_layer=LayerNorm2d,
                 norm_layer_cl=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU):
        super().__init__()
        drop_path_rates = drop_path_rates or [0.0] * depth
        if downsample_block or stride == 1:
            self.downsample = nn.Identity()
        else:
            self.downsample = nn.Sequential(
                norm_layer(in_chs),
                nn.Conv2d(in_chs, out_chs, kernel_size=2, stride=2, bias=conv_bias),
            )
            in_chs = out_chs
        blocks = []
        for i in range(depth):
            if i < depth - num_global_blocks:
                blocks.append(ConvBlock(
                    in_chs, out_chs, kernel_size=kernel_size, stride=stride if downsample_block and i == 0 else 1,
                    conv_bias=conv_bias, expand_ratio=expand_ratio, ls_init_value=ls_init_value,
                    norm_layer=norm_layer_cl, act_layer=act_layer, drop_path=drop_path_rates[i]))
            else:
                blocks.append(SplitTransposeBlock(
                    in_chs, num_scales=scales, num_heads=num_heads, expand_ratio=expand_ratio,
                    use_pos_emb=use_pos_emb, conv_bias=conv_bias, ls_init_value=ls_init_value,
                    norm_layer=norm_layer_cl, act_layer=act_layer, drop_path=drop_path_rates[i]))
            in_chs = out_chs
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class EdgeNeXt(NormPreStagesApi, nn.Module):
    """The stem (``stem``: a 4x4 patch convolution, or with ``stem_type='overlap'`` a padded 9x9 stride-4 one, then
    a channel LayerNorm), four stages of widths ``dims`` and ``depths`` blocks (``stages``) and the head, as timm's
    ``EdgeNeXt`` with its arguments and defaults.

    Per stage: ``global_block_counts`` SDTA encoders at the end, ``kernel_sizes`` of the convolutional encoders,
    ``heads`` of the attention, ``d2_scales`` channel groups of the SDTA encoders, ``use_pos_emb`` (the positional
    encoding). ``downsample_block`` strides in each stage's first block instead of a downsampling layer;
    ``conv_bias=False`` drops the convolutions' biases. The head pools, normalises and classifies
    (``NormMlpClassifierHead``), or with ``head_norm_first`` the map is normalised first (``norm_pre``) and the head
    pools and classifies. ``ls_init_value`` starts the layer scales; ``drop_path_rate`` rises stage by stage (0 in
    the first, the rate in the last, timm's linear rule), ``drop_rate`` drops before the classifier. Weights start as
    timm's: truncated normals (std 0.02, cut at two standard deviations) for convolutions and linear layers, zero
    biases, the head's linear layers scaled by ``head_init_scale``.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", dims=(24, 48, 88, 168), depths=(3, 3, 9, 3),
                 global_block_counts=(0, 1, 1, 1), kernel_sizes=(3, 5, 7, 9), heads=(8, 8, 8, 8),
                 d2_scales=(2, 2, 3, 4), use_pos_emb=(False, True, False, False), ls_init_value=1e-6,
                 head_init_scale=1.0, expand_ratio=4, downsample_block=False, conv_bias=True, stem_type="patch",
                 head_norm_first=False, act_layer=nn.GELU, drop_path_rate=0.0, drop_rate=0.0):
        super().__init__()
        if stem_type not in ("patch", "overlap"):
            raise ValueError(f"stem_type must be 'patch' or 'overlap', got {stem_type!r}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.drop_rate = drop_rate
        norm_layer = partial(LayerNorm2d, eps=1e-6)
        norm_layer_cl = partial(nn.LayerNorm, eps=1e-6)
        self.feature_info = []
        if stem_type == "patch":
            stem_conv = nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4, bias=conv_bias)
        else:
            stem_conv = nn.Conv2d(in_chans, dims[0], kernel_size=9, stride=4, padding=9 // 2, bias=conv_bias)
        self.stem = nn.Sequential(stem_conv, norm_layer(dims[0]))

        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))]
        stages = []
        curr_stride = 4
        in_chs = dims[0]
        for i in range(4):
            stride = 2 if curr_stride == 2 or i > 0 else 1
            curr_stride *= stride
            stages.append(EdgeNeXtStage(
                in_chs, dims[i], stride=stride, depth=depths[i], num_global_blocks=global_block_counts[i],
                num_heads=heads[i], drop_path_rates=rates[i], scales=d2_scales[i], expand_ratio=expand_ratio,
                kernel_size=kernel_sizes[i], use_pos_emb=use_pos_emb[i], ls_init_value=ls_init_value,
                downsample_block=downsample_block, conv_bias=conv_bias, norm_layer=norm_layer,
                norm_layer_cl=norm_layer_cl, act_layer=act_layer))
            in_chs = dims[i]
            self.feature_info.append(dict(num_chs=in_chs, reduction=curr_stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)

        self.num_features = dims[-1]
        if head_norm_first:
            self.norm_pre = norm_layer(self.num_features)
            self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        else:
            self.norm_pre = nn.Identity()
            self.head = NormMlpClassifierHead(self.num_features, num_classes, pool_type=global_pool,
                                              drop_rate=drop_rate, norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        self._init_weights(head_init_scale)

    def _init_weights(self, head_init_scale):
        """timm's init, in module order: truncated normal (std 0.02, cut at +-0.04) weights and zero biases for
        every convolution and linear layer; the head's linear layers scaled by ``head_init_scale``."""
        for name, module in self.named_modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                trunc_normal_tf_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            if isinstance(module, nn.Linear) and "head." in name:
                with torch.no_grad():
                    module.weight.mul_(head_init_scale)
                    module.bias.mul_(head_init_scale)


def _create_edgenext(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (the four stages unless ``out_indices`` says
    otherwise) under its flattened names."""
    return build_model(EdgeNeXt, variant, pretrained, progress=progress, **kwargs)


@register_model
def edgenext_xx_small(pretrained=False, progress=True, **kwargs):
    """EdgeNeXt-XXS: widths 24-168, depths (2, 2, 6, 2), 4 attention heads."""
    config = dict(depths=(2, 2, 6, 2), dims=(24, 48, 88, 168), heads=(4, 4, 4, 4))
    return _create_edgenext("edgenext_xx_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def edgenext_x_small(pretrained=False, progress=True, **kwargs):
    """EdgeNeXt-XS: widths 32-192, depths (3, 3, 9, 3), 4 attention heads."""
    config = dict(depths=(3, 3, 9, 3), dims=(32, 64, 100, 192), heads=(4, 4, 4, 4))
    return _create_edgenext("edgenext_x_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def edgenext_small(pretrained=False, progress=True, **kwargs):
    """EdgeNeXt-S: widths 48-304, depths (3, 3, 9, 3), 8 attention heads."""
    config = dict(depths=(3, 3, 9, 3), dims=(48, 96, 160, 304))
    return _create_edgenext("edgenext_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def edgenext_base(pretrained=False, progress=True, **kwargs):
    """EdgeNeXt-B: widths 80-584, depths (3, 3, 9, 3), 8 attention heads."""
    config = dict(depths=[3, 3, 9, 3], dims=[80, 160, 288, 584])
    return _create_edgenext("edgenext_base", pretrained, progress, **dict(config, **kwargs))


@register_model
def edgenext_small_rw(pretrained=False, progress=True, **kwargs):
    """EdgeNeXt-S as Ross Wightman trained it: widths 48-384, depths (3, 3, 9, 3), strided first blocks instead of
    downsampling layers, bias-free convolutions, a 9x9 overlapping stem."""
    config = dict(depths=(3, 3, 9, 3), dims=(48, 96, 192, 384), downsample_block=True, conv_bias=False,
                  stem_type="overlap")
    return _create_edgenext("edgenext_small_rw", pretrained, progress, **dict(config, **kwargs))
