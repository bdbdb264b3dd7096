"""MobileViT (Mehta & Rastegari 2022, "MobileViT: Light-weight, General-purpose, and Mobile-friendly Vision
Transformer") and MobileViTv2 (Mehta & Rastegari 2022, "Separable Self-attention for Mobile Vision Transformers"):
timm's ``mobilevit`` models with ImageNet-1k weights.

Both are bring-your-own-blocks networks (``byobnet.ByobNet``): a strided 3x3 stem, stages of MobileNetV2 inverted
residuals, and in the last three stages, after the strided inverted residual, one MobileViT block. That block
mixes locally with a kxk convolution, projects to the transformer width with a 1x1 convolution, cuts the map into
``patch_size`` patches and lets the pixels at the same position in every patch attend to each other (global
mixing at a cost that the patch area divides), puts the map back together and projects it back. MobileViT uses
multi-head self-attention over tokens with LayerNorm and fuses the result with the block's input by a kxk
convolution; MobileViTv2 uses separable (linear-cost) self-attention directly on the (N, C, pixels, patches) map,
with GroupNorm over all channels ("LayerNorm" of the whole map), and no fusion. A map whose sides are not multiples
of the patch size is resized (bilinearly) to the next multiples: MobileViT around its transformer and back,
MobileViTv2 at its input and not back, so its output is that larger map, as timm's.

The blocks are registered as byobnet block types 'mobilevit' and 'mobilevit2'. Model names, module names,
``state_dict`` keys, initialisation and the model API follow timm's ``mobilevit`` module, so timm's checkpoints
load as they are.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._conv import num_groups
from ._layers import ConvMlp, PreNormBlock, pair
from ._norm import GroupNorm1
from .byobnet import ByoBlockCfg, ByobNet, ByoModelCfg, LayerFn, register_block
from .vision_transformer import Block

__all__ = []


def _patch_grid(height, width, patch_size):
    """The rows and columns of ``patch_size`` patches that cover a ``height`` x ``width`` map (rounded up)."""
    return math.ceil(height / patch_size[0]), math.ceil(width / patch_size[1])


class MobileVitBlock(nn.Module):
    """MobileViT's block: a kxk convolution (local mixing), a 1x1 projection to ``transformer_dim`` (by default
    ``bottle_ratio`` of the input width), ``transformer_depth`` pre-norm transformer blocks (``num_heads`` heads,
    MLP ``mlp_ratio``, the model's activation, ``transformer_norm_layer``) over the patches' pixels, a final norm,
    a 1x1 projection to ``out_chs`` and, unless ``no_fusion``, a kxk fusion convolution of the block's input and
    that output, concatenated.

    The transformer sees, for each of the patch's pixel positions, the sequence of patches: tokens of shape
    (N * patch area, patches, transformer_dim). Like every byobnet block it takes the stage's ``downsample``
    argument, which it has no use for.
    """

    def __init__(self, in_chs, out_chs=None, kernel_size=3, stride=1, bottle_ratio=1.0, group_size=None,
                 dilation=(1, 1), mlp_ratio=2.0, transformer_dim=None, transformer_depth=2, patch_size=8, num_heads=4,
                 attn_drop=0.0, drop=0.0, no_fusion=False, drop_path_rate=0.0, layers=None,
                 transformer_norm_layer=nn.LayerNorm, downsample=""):
        super().__init__()
        layers = layers or LayerFn()
        groups = num_groups(group_size, in_chs)
        out_chs = out_chs or in_chs
        transformer_dim = transformer_dim or _make_divisible(bottle_ratio * in_chs, 8)
        self.conv_kxk = layers.conv_norm_act(in_chs, in_chs, kernel_size=kernel_size, stride=stride, groups=groups,
                                             dilation=dilation[0])
        self.conv_1x1 = nn.Conv2d(in_chs, transformer_dim, kernel_size=1, bias=False)
        self.transformer = nn.Sequential(*[
            Block(transformer_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=True, proj_drop=drop,
                  attn_drop=attn_drop, drop_path=drop_path_rate, act_layer=layers.act,
                  norm_layer=transformer_norm_layer)
            for _ in range(transformer_depth)
        ])
        self.norm = transformer_norm_layer(transformer_dim)
        self.conv_proj = layers.conv_norm_act(transformer_dim, out_chs, kernel_size=1, stride=1)
        if no_fusion:
            self.conv_fusion = None
        else:
            self.conv_fusion = layers.conv_norm_act(in_chs + out_chs, out_chs, kernel_size=kernel_size, stride=1)
        self.patch_size = pair(patch_size)
        self.patch_area = self.patch_size[0] * self.patch_size[1]

    def _unfold(self, x, rows, cols):
        """(N, C, rows * ph, cols * pw) -> tokens (N * ph * pw, rows * cols, C): one sequence of patches for each
        pixel position in a patch."""
        batch, channels = x.shape[:2]
        patch_h, patch_w = self.patch_size
        x = x.reshape(batch, channels, rows, patch_h, cols, patch_w)
        x = x.permute(0, 3, 5, 2, 4, 1)
        return x.reshape(batch * self.patch_area, rows * cols, channels)

    def _fold(self, x, batch, rows, cols):
        """The inverse of ``_unfold``: tokens back to an (N, C, rows * ph, cols * pw) map (every size explicit, so an
        empty batch folds too)."""
        patch_h, patch_w = self.patch_size
        channels = x.shape[-1]
        x = x.reshape(batch, patch_h, patch_w, rows, cols, channels)
        x = x.permute(0, 5, 3, 1, 4, 2)
        return x.reshape(batch, channels, rows * patch_h, cols * patch_w)

    def forward(self, x):
        shortcut = x
        x = self.conv_kxk(x)
        x = self.conv_1x1(x)
        batch, _, height, width = x.shape
        rows, cols = _patch_grid(height, width, self.patch_size)
        grid_size = (rows * self.patch_size[0], cols * self.patch_size[1])
        resize = grid_size != (height, width)
        if resize:
            x = F.interpolate(x, size=grid_size, mode="bilinear", align_corners=False)
        x = self._unfold(x, rows, cols)
        x = self.transformer(x)
        x = self.norm(x)
        x = self._fold(x, batch, rows, cols)
        if resize:
            x = F.interpolate(x, size=(height, width), mode="bilinear", align_corners=False)
        x = self.conv_proj(x)
        if self.conv_fusion is not None:
            x = self.conv_fusion(torch.cat((shortcut, x), dim=1))
        return x


class LinearSelfAttention(nn.Module):
    """Separable self-attention with a cost linear in the number of patches, on (N, C, pixels, patches) maps: a
    1x1 convolution ``qkv_proj`` gives one query channel and ``embed_dim`` key and value channels; the query's
    softmax over the patches weights the keys into one context vector per pixel position, which scales the
    ReLU of the values; then the 1x1 ``out_proj``. ``attn_drop`` drops context scores and ``proj_drop`` the
    output, in training."""

    def __init__(self, embed_dim, attn_drop=0.0, proj_drop=0.0, bias=True):
        super().__init__()
        self.embed_dim = embed_dim
        self.qkv_proj = nn.Conv2d(embed_dim, 1 + 2 * embed_dim, kernel_size=1, bias=bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.out_proj = nn.Conv2d(embed_dim, embed_dim, kernel_size=1, bias=bias)
        self.out_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        qkv = self.qkv_proj(x)
        query, key, value = qkv.split([1, self.embed_dim, self.embed_dim], dim=1)
        context_scores = F.softmax(query, dim=-1)
        context_scores = self.attn_drop(context_scores)
        context_vector = (key * context_scores).sum(dim=-1, keepdim=True)
        out = F.relu(value) * context_vector
        out = self.out_proj(out)
        out = self.out_drop(out)
        return out


class LinearTransformerBlock(PreNormBlock):
    """MobileViTv2's pre-norm transformer block on (N, C, pixels, patches) maps: x + drop_path(attn(norm1(x))),
    then x + drop_path(mlp(norm2(x))), with separable self-attention and a 1x1-convolution MLP (hidden width
    ``mlp_ratio`` times ``embed_dim``, ``act_layer``); ``norm_layer`` defaults to GroupNorm over all channels."""

    def __init__(self, embed_dim, mlp_ratio=2.0, drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer=nn.SiLU,
                 norm_layer=GroupNorm1):
        super().__init__()
        attn = LinearSelfAttention(embed_dim, attn_drop=attn_drop, proj_drop=drop)
        mlp = ConvMlp(embed_dim, int(embed_dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self._add_branches(embed_dim, attn, mlp, drop_path, norm_layer)


class MobileVitV2Block(nn.Module):
    """MobileViTv2's block: a kxk convolution (depthwise by default, local mixing), a 1x1 projection to
    ``transformer_dim`` (by default ``bottle_ratio`` of the input width), ``transformer_depth`` linear transformer
    blocks over the (N, C, pixels, patches) unfolded map, a final norm and a 1x1 projection to ``out_chs`` with its
    norm but no activation. No fusion with the input and no residual.

    An input whose sides are not multiples of the patch size is first resized (bilinearly, corners aligned) to the
    next multiples, and the output keeps that size. Like every byobnet block it takes the stage's ``stride`` and
    ``downsample`` arguments, which it has no use for: it never strides (as timm's).
    """

    def __init__(self, in_chs, out_chs=None, kernel_size=3, bottle_ratio=1.0, group_size=1, dilation=(1, 1),
                 mlp_ratio=2.0, transformer_dim=None, transformer_depth=2, patch_size=8, attn_drop=0.0, drop=0.0,
                 drop_path_rate=0.0, layers=None, transformer_norm_layer=GroupNorm1, stride=1, downsample=""):
        super().__init__()
        layers = layers or LayerFn()
        groups = num_groups(group_size, in_chs)
        out_chs = out_chs or in_chs
        transformer_dim = transformer_dim or _make_divisible(bottle_ratio * in_chs, 8)
        self.conv_kxk = layers.conv_norm_act(in_chs, in_chs, kernel_size=kernel_size, stride=1, groups=groups,
                                             dilation=dilation[0])
        self.conv_1x1 = nn.Conv2d(in_chs, transformer_dim, kernel_size=1, bias=False)
        self.transformer = nn.Sequential(*[
            LinearTransformerBlock(transformer_dim, mlp_ratio=mlp_ratio, attn_drop=attn_drop, drop=drop,
                                   drop_path=drop_path_rate, act_layer=layers.act, norm_layer=transformer_norm_layer)
            for _ in range(transformer_depth)
        ])
        self.norm = transformer_norm_layer(transformer_dim)
        self.conv_proj = layers.conv_norm_act(transformer_dim, out_chs, kernel_size=1, stride=1, apply_act=False)
        self.patch_size = pair(patch_size)
        self.patch_area = self.patch_size[0] * self.patch_size[1]

    def forward(self, x):
        batch, _, height, width = x.shape
        patch_h, patch_w = self.patch_size
        rows, cols = _patch_grid(height, width, self.patch_size)
        grid_size = (rows * patch_h, cols * patch_w)
        if grid_size != (height, width):
            x = F.interpolate(x, size=grid_size, mode="bilinear", align_corners=True)
        x = self.conv_kxk(x)
        x = self.conv_1x1(x)
        channels = x.shape[1]
        x = x.reshape(batch, channels, rows, patch_h, cols, patch_w)
        x = x.permute(0, 1, 3, 5, 2, 4)
        x = x.reshape(batch, channels, self.patch_area, rows * cols)
        x = self.transformer(x)
        x = self.norm(x)
        x = x.reshape(batch, channels, patch_h, patch_w, rows, cols)
        x = x.permute(0, 1, 4, 2, 5, 3)
        x = x.reshape(batch, channels, rows * patch_h, cols * patch_w)
        x = self.conv_proj(x)
        return x


register_block("mobilevit", MobileVitBlock)
register_block("mobilevit2", MobileVitV2Block)


def _inverted_residual_block(d, c, s, br=4.0):
    """``d`` MobileNetV2 inverted residuals: a bottleneck widened ``br`` times the input width, depthwise kxk,
    linear output."""
    return ByoBlockCfg(type="bottle", d=d, c=c, s=s, gs=1, br=br, block_kwargs=dict(bottle_in=True, linear_out=True))


def _mobilevit_block(d, c, s, transformer_dim, transformer_depth, patch_size=4, br=4.0):
    """A MobileViT stage: ``d`` inverted residuals (the first strided), then one MobileViT block."""
    return (
        _inverted_residual_block(d=d, c=c, s=s, br=br),
        ByoBlockCfg(type="mobilevit", d=1, c=c, s=1, block_kwargs=dict(
            transformer_dim=transformer_dim, transformer_depth=transformer_depth, patch_size=patch_size)),
    )


def _mobilevitv2_block(d, c, s, transformer_depth, patch_size=2, br=2.0, transformer_br=0.5):
    """A MobileViTv2 stage: ``d`` inverted residuals, then one MobileViTv2 block (transformer width
    ``transformer_br`` of the stage width, depthwise local convolution)."""
    return (
        _inverted_residual_block(d=d, c=c, s=s, br=br),
        ByoBlockCfg(type="mobilevit2", d=1, c=c, s=1, br=transformer_br, gs=1, block_kwargs=dict(
            transformer_depth=transformer_depth, patch_size=patch_size)),
    )


def _mobilevit_cfg(widths, transformer_dims, num_features, br=4.0, stem_chs=16):
    """MobileViT: a 3x3 stem, two stages of inverted residuals (expansion ``br``), three stages each ending in a
    MobileViT block (2, 4 and 3 transformer blocks of ``transformer_dims``, 2x2 patches), a 1x1 convolution to
    ``num_features``; SiLU."""
    c1, c2, c3, c4, c5 = widths
    d3, d4, d5 = transformer_dims
    return ByoModelCfg(
        blocks=(
            _inverted_residual_block(d=1, c=c1, s=1, br=br),
            _inverted_residual_block(d=3, c=c2, s=2, br=br),
            _mobilevit_block(d=1, c=c3, s=2, transformer_dim=d3, transformer_depth=2, patch_size=2, br=br),
            _mobilevit_block(d=1, c=c4, s=2, transformer_dim=d4, transformer_depth=4, patch_size=2, br=br),
            _mobilevit_block(d=1, c=c5, s=2, transformer_dim=d5, transformer_depth=3, patch_size=2, br=br),
        ),
        stem_chs=stem_chs, stem_type="3x3", stem_pool="", downsample="", act_layer="silu", num_features=num_features,
    )


def _mobilevitv2_cfg(multiplier=1.0):
    """MobileViTv2 at width ``multiplier``: a 3x3 stem, two stages of inverted residuals (expansion 2), three
    stages each ending in a MobileViTv2 block (2, 4 and 3 linear transformer blocks, 2x2 patches); SiLU, no head
    convolution."""
    widths = (64, 128, 256, 384, 512)
    if multiplier != 1.0:
        widths = tuple(int(c * multiplier) for c in widths)
    return ByoModelCfg(
        blocks=(
            _inverted_residual_block(d=1, c=widths[0], s=1, br=2.0),
            _inverted_residual_block(d=2, c=widths[1], s=2, br=2.0),
            _mobilevitv2_block(d=1, c=widths[2], s=2, transformer_depth=2),
            _mobilevitv2_block(d=1, c=widths[3], s=2, transformer_depth=4),
            _mobilevitv2_block(d=1, c=widths[4], s=2, transformer_depth=3),
        ),
        stem_chs=int(32 * multiplier), stem_type="3x3", stem_pool="", downsample="", act_layer="silu",
    )


model_cfgs = dict(
    mobilevit_xxs=_mobilevit_cfg((16, 24, 48, 64, 80), (64, 80, 96), 320, br=2.0),
    mobilevit_xs=_mobilevit_cfg((32, 48, 64, 80, 96), (96, 120, 144), 384),
    mobilevit_s=_mobilevit_cfg((32, 64, 96, 128, 160), (144, 192, 240), 640),
    mobilevitv2_050=_mobilevitv2_cfg(0.50),
    mobilevitv2_075=_mobilevitv2_cfg(0.75),
    mobilevitv2_100=_mobilevitv2_cfg(1.0),
    mobilevitv2_125=_mobilevitv2_cfg(1.25),
    mobilevitv2_150=_mobilevitv2_cfg(1.5),
    mobilevitv2_175=_mobilevitv2_cfg(1.75),
    mobilevitv2_200=_mobilevitv2_cfg(2.0),
)


def _create_mobilevit(variant, pretrained, progress, kwargs):
    """Build a registered variant from its config (extra keyword arguments replace config fields, as in timm);
    ``features_only`` gives timm's five maps unless ``out_indices`` says otherwise, under timm's flattened names
    (``stages_0``... ``final_conv``)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2, 3, 4))
    return build_model(ByobNet, variant, pretrained, progress=progress, cfg=model_cfgs[variant], **kwargs)


@register_model
def mobilevit_xxs(pretrained=False, progress=True, **kwargs):
    """MobileViT-XXS: widths 16 to 80, transformer widths 64, 80, 96, expansion 2, 320 features (1.3M parameters)."""
    return _create_mobilevit("mobilevit_xxs", pretrained, progress, kwargs)


@register_model
def mobilevit_xs(pretrained=False, progress=True, **kwargs):
    """MobileViT-XS: widths 32 to 96, transformer widths 96, 120, 144, 384 features (2.3M parameters)."""
    return _create_mobilevit("mobilevit_xs", pretrained, progress, kwargs)


@register_model
def mobilevit_s(pretrained=False, progress=True, **kwargs):
    """MobileViT-S: widths 32 to 160, transformer widths 144, 192, 240, 640 features (5.6M parameters)."""
    return _create_mobilevit("mobilevit_s", pretrained, progress, kwargs)


@register_model
def mobilevitv2_050(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 0.5: widths 32 to 256, transformer widths half the stage widths (1.4M parameters)."""
    return _create_mobilevit("mobilevitv2_050", pretrained, progress, kwargs)


@register_model
def mobilevitv2_075(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 0.75: widths 48 to 384, transformer widths half the stage widths (2.9M parameters)."""
    return _create_mobilevit("mobilevitv2_075", pretrained, progress, kwargs)


@register_model
def mobilevitv2_100(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 1.0: widths 64 to 512, transformer widths half the stage widths (4.9M parameters)."""
    return _create_mobilevit("mobilevitv2_100", pretrained, progress, kwargs)


@register_model
def mobilevitv2_125(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 1.25: widths 80 to 640, transformer widths half the stage widths (7.5M parameters)."""
    return _create_mobilevit("mobilevitv2_125", pretrained, progress, kwargs)


@register_model
def mobilevitv2_150(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 1.5: widths 96 to 768, transformer widths half the stage widths (10.6M parameters)."""
    return _create_mobilevit("mobilevitv2_150", pretrained, progress, kwargs)


@register_model
def mobilevitv2_175(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 1.75: widths 112 to 896, transformer widths half the stage widths (14.3M parameters)."""
    return _create_mobilevit("mobilevitv2_175", pretrained, progress, kwargs)


@register_model
def mobilevitv2_200(pretrained=False, progress=True, **kwargs):
    """MobileViTv2 at width 2.0: widths 128 to 1024, transformer widths half the stage widths (18.4M parameters)."""
    return _create_mobilevit("mobilevitv2_200", pretrained, progress, kwargs)
