"""Next-ViT (Li et al. 2022, "Next-ViT: Next Generation Vision Transformer for Efficient Deployment in Realistic
Industrial Scenarios"): nextvit_small, nextvit_base and nextvit_large.

A hybrid of convolution and attention blocks laid out for deployment latency. A stem of four 3x3 convolutions
(BatchNorm, ReLU; stride 4 in all) leads to four stages at strides 4 to 32 whose widths are fixed (96; 192 then
256; 384 four times then 512, repeated; 768 then 1024). Most blocks are Next Convolution Blocks: multi-head
convolutional attention (a grouped 3x3 convolution, one group per head, BatchNorm, ReLU, a 1x1 projection) and a
1x1-convolution MLP after BatchNorm, both residual. Each stage after the first ends in a Next Transformer Block:
efficient multi-head self-attention (keys and values from tokens average-pooled ``sr_ratio`` x ``sr_ratio``-fold,
then BatchNorm) on the first three quarters of the channels, convolutional attention on a 1x1 projection of them
for the rest, concatenated, then the MLP. Every BatchNorm that precedes a linear layer folds into it for deployment
(``reparameterize()`` on each block, as timm's). Model names, module names, ``state_dict`` keys, defaults and
(truncated-normal) initialisation follow timm's ``nextvit`` module, so its checkpoints load directly.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._layers import (ClassifierHead, ClassifierHeadApi, ConvMlp, drop_path_module, get_act_layer,
                      init_linear_layers)
from ._reparam import batchnorm_scale_shift

__all__ = []

_NORM_LAYERS = {"batchnorm2d": nn.BatchNorm2d, "batchnorm": nn.BatchNorm2d}


def merge_pre_bn(module, pre_bn_1, pre_bn_2=None):
    """Fold the eval-mode BatchNorm ``pre_bn_1`` (then ``pre_bn_2``, where given) that feeds the linear layer or
    1x1 convolution ``module`` into its weight and bias, in place (timm's ``merge_pre_bn``): the norms' per-channel
    scale multiplies the weight's input columns, their shift through the weight adds to the bias."""
    scale, shift = batchnorm_scale_shift(pre_bn_1)
    if pre_bn_2 is not None:
        scale_2, shift_2 = batchnorm_scale_shift(pre_bn_2)
        scale, shift = scale * scale_2, shift * scale_2 + shift_2
    weight = module.weight.reshape(module.weight.shape[0], module.weight.shape[1])
    with torch.no_grad():
        extra_bias = weight @ shift
        module.weight.copy_((weight * scale.reshape(1, -1)).reshape(module.weight.shape))
        module.bias.add_(extra_bias)


def _get_norm_layer(norm_layer):
    """A norm class from timm's name for it ('batchnorm2d') or the class itself."""
    if isinstance(norm_layer, str):
        if norm_layer not in _NORM_LAYERS:
            raise ValueError(f"unknown norm_layer '{norm_layer}': expected one of {sorted(_NORM_LAYERS)} or a class")
        return _NORM_LAYERS[norm_layer]
    return norm_layer


class ConvNormAct(nn.Module):
    """Next-ViT's stem layer: a bias-free convolution padded by one pixel (``conv``), the norm, the activation."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, groups=1, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.ReLU):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=kernel_size, stride=stride, padding=1, groups=groups,
                              bias=False)
        self.norm = norm_layer(out_chs)
        self.act = act_layer()

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = self.act(x)
        return x


class PatchEmbed(nn.Module):
    """A block's entry: at stride 2, 2x2 average pooling (a partial window at an odd edge averages what it covers)
    then a bias-free 1x1 convolution and the norm; at stride 1 the convolution and norm only where the width
    changes; otherwise identities (``pool``, ``conv``, ``norm`` are always there, as in timm)."""

    def __init__(self, in_chs, out_chs, stride=1, norm_layer=nn.BatchNorm2d):
        super().__init__()
        if stride == 2:
            self.pool = nn.AvgPool2d((2, 2), stride=2, ceil_mode=True, count_include_pad=False)
        else:
            self.pool = nn.Identity()
        if stride == 2 or in_chs != out_chs:
            self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=1, stride=1, bias=False)
            self.norm = norm_layer(out_chs)
        else:
            self.conv = nn.Identity()
            self.norm = nn.Identity()

    def forward(self, x):
        return self.norm(self.conv(self.pool(x)))


class ConvAttention(nn.Module):
    """Multi-head convolutional attention: a bias-free 3x3 convolution with one group per ``head_dim`` channels
    (``group_conv3x3``), the norm, the activation and a bias-free 1x1 ``projection``."""

    def __init__(self, out_chs, head_dim, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        self.group_conv3x3 = nn.Conv2d(out_chs, out_chs, kernel_size=3, stride=1, padding=1,
                                       groups=out_chs // head_dim, bias=False)
        self.norm = norm_layer(out_chs)
        self.act = act_layer()
        self.projection = nn.Conv2d(out_chs, out_chs, kernel_size=1, bias=False)

    def forward(self, x):
        out = self.group_conv3x3(x)
        out = self.norm(out)
        out = self.act(out)
        out = self.projection(out)
        return out


class NextConvBlock(nn.Module):
    """Next Convolution Block: the entry (``patch_embed``), convolutional attention (``mhca``) as a residual,
    then the norm and a 1x1-convolution MLP (``mlp``, ``mlp_ratio`` times wider) as a residual, each branch
    through stochastic depth ``drop_path``. ``reparameterize()`` folds ``norm`` into the MLP's first layer."""

    def __init__(self, in_chs, out_chs, stride=1, drop_path=0.0, drop=0.0, head_dim=32, mlp_ratio=3.0,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        if out_chs % head_dim:
            raise ValueError(f"out_chs ({out_chs}) must be a multiple of head_dim ({head_dim})")
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.patch_embed = PatchEmbed(in_chs, out_chs, stride, norm_layer=norm_layer)
        self.mhca = ConvAttention(out_chs, head_dim, norm_layer=norm_layer, act_layer=act_layer)
        self.attn_drop_path = drop_path_module(drop_path)
        self.norm = norm_layer(out_chs)
        self.mlp = ConvMlp(out_chs, hidden_features=int(out_chs * mlp_ratio), drop=drop, bias=True,
                           act_layer=act_layer)
        self.mlp_drop_path = drop_path_module(drop_path)
        self.is_fused = False

    def reparameterize(self):
        """Fold the eval-mode ``norm`` into ``mlp.fc1`` (once), leaving an identity in its place."""
        if not self.is_fused:
            merge_pre_bn(self.mlp.fc1, self.norm)
            self.norm = nn.Identity()
            self.is_fused = True

    def forward(self, x):
        x = self.patch_embed(x)
        x = x + self.attn_drop_path(self.mhca(x))
        out = self.norm(x)
        x = x + self.mlp_drop_path(self.mlp(out))
        return x


class EfficientAttention(nn.Module):
    """Efficient multi-head self-attention over (N, L, C) tokens, ``dim // head_dim`` heads: queries from every
    token; keys and values (``k``, ``v``) from the tokens average-pooled ``sr_ratio ** 2`` at a time along the
    sequence (``sr``) and normalised (``norm``, BatchNorm1d) when ``sr_ratio`` > 1; ``proj`` to ``out_dim``."""

    def __init__(self, dim, out_dim=None, head_dim=32, qkv_bias=True, attn_drop=0.0, proj_drop=0.0, sr_ratio=1,
                 norm_layer=nn.BatchNorm1d):
        super().__init__()
        self.dim = dim
        self.out_dim = out_dim if out_dim is not None else dim
        self.num_heads = dim // head_dim
        self.head_dim = head_dim
        self.scale = head_dim ** -0.5
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.k = nn.Linear(dim, dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.proj = nn.Linear(dim, self.out_dim)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj_drop = nn.Dropout(proj_drop)
        self.sr_ratio = sr_ratio
        self.N_ratio = sr_ratio ** 2
        if sr_ratio > 1:
            self.sr = nn.AvgPool1d(kernel_size=self.N_ratio, stride=self.N_ratio)
            self.norm = norm_layer(dim)
        else:
            self.sr = None
            self.norm = None

    def forward(self, x):
        batch, tokens, channels = x.shape
        q = self.q(x).reshape(batch, tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        if self.sr is not None:
            x = self.sr(x.transpose(1, 2))
            x = self.norm(x).transpose(1, 2)
        k = self.k(x).reshape(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).reshape(batch, -1, self.num_heads, self.head_dim).transpose(1, 2)
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
        x = x.transpose(1, 2).reshape(batch, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class NextTransformerBlock(nn.Module):
    """Next Transformer Block: the entry (``patch_embed``) to ``mix_block_ratio`` of ``out_chs`` (rounded to a
    multiple of 32), efficient self-attention after ``norm1`` as a residual; a 1x1 ``projection`` of the result to
    the remaining channels with convolutional attention (``mhca``) as a residual, concatenated to it; then
    ``norm2`` and the MLP (``mlp_ratio`` times wider) as a residual. Stochastic depth ``drop_path`` is split
    between the two attentions by ``mix_block_ratio``. ``reparameterize()`` folds ``norm1`` (and the attention's
    own key/value norm) into ``q``, ``k``, ``v`` and ``norm2`` into the MLP's first layer."""

    def __init__(self, in_chs, out_chs, drop_path, stride=1, sr_ratio=1, mlp_ratio=2, head_dim=32,
                 mix_block_ratio=0.75, attn_drop=0.0, drop=0.0, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.mix_block_ratio = mix_block_ratio
        self.mhsa_out_chs = _make_divisible(int(out_chs * mix_block_ratio), 32)
        self.mhca_out_chs = out_chs - self.mhsa_out_chs
        self.patch_embed = PatchEmbed(in_chs, self.mhsa_out_chs, stride)
        self.norm1 = norm_layer(self.mhsa_out_chs)
        self.e_mhsa = EfficientAttention(self.mhsa_out_chs, head_dim=head_dim, sr_ratio=sr_ratio,
                                         attn_drop=attn_drop, proj_drop=drop)
        self.mhsa_drop_path = drop_path_module(drop_path * mix_block_ratio)
        self.projection = PatchEmbed(self.mhsa_out_chs, self.mhca_out_chs, stride=1, norm_layer=norm_layer)
        self.mhca = ConvAttention(self.mhca_out_chs, head_dim=head_dim, norm_layer=norm_layer, act_layer=act_layer)
        self.mhca_drop_path = drop_path_module(drop_path * (1 - mix_block_ratio))
        self.norm2 = norm_layer(out_chs)
        self.mlp = ConvMlp(out_chs, hidden_features=int(out_chs * mlp_ratio), act_layer=act_layer, drop=drop)
        self.mlp_drop_path = drop_path_module(drop_path)
        self.is_fused = False

    def reparameterize(self):
        """Fold the eval-mode ``norm1`` into the attention's ``q``, ``k`` and ``v`` (with its key/value norm for
        ``k`` and ``v``), ``norm2`` into ``mlp.fc1`` (once), leaving identities in their places."""
        if not self.is_fused:
            merge_pre_bn(self.e_mhsa.q, self.norm1)
            kv_norm = self.e_mhsa.norm
            merge_pre_bn(self.e_mhsa.k, self.norm1, kv_norm)
            merge_pre_bn(self.e_mhsa.v, self.norm1, kv_norm)
            if kv_norm is not None:
                self.e_mhsa.norm = nn.Identity()
            self.norm1 = nn.Identity()
            merge_pre_bn(self.mlp.fc1, self.norm2)
            self.norm2 = nn.Identity()
            self.is_fused = True

    def forward(self, x):
        x = self.patch_embed(x)
        batch, channels, height, width = x.shape
        out = self.norm1(x)
        out = out.reshape(batch, channels, -1).transpose(-1, -2)
        out = self.mhsa_drop_path(self.e_mhsa(out))
        x = x + out.transpose(-1, -2).reshape(batch, channels, height, width)
        out = self.projection(x)
        out = out + self.mhca_drop_path(self.mhca(out))
        x = torch.cat([x, out], dim=1)
        out = self.norm2(x)
        x = x + self.mlp_drop_path(self.mlp(out))
        return x


class NextStage(nn.Module):
    """A stage's ``blocks``: one per entry of ``block_types`` (``NextConvBlock`` or ``NextTransformerBlock``), of
    widths ``block_chs``, the first with ``stride``; ``drop_path`` is one rate or one per block."""

    def __init__(self, in_chs, block_chs, block_types, stride=2, sr_ratio=1, mix_block_ratio=1.0, drop=0.0,
                 attn_drop=0.0, drop_path=0.0, head_dim=32, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        blocks = []
        for block_idx, (out_chs, block_type) in enumerate(zip(block_chs, block_types)):
            block_stride = stride if block_idx == 0 else 1
            rate = drop_path[block_idx] if isinstance(drop_path, (list, tuple)) else drop_path
            if block_type is NextConvBlock:
                blocks.append(NextConvBlock(in_chs, out_chs, stride=block_stride, drop_path=rate, drop=drop,
                                            head_dim=head_dim, norm_layer=norm_layer, act_layer=act_layer))
            else:
                blocks.append(NextTransformerBlock(in_chs, out_chs, drop_path=rate, stride=block_stride,
                                                   sr_ratio=sr_ratio, head_dim=head_dim,
                                                   mix_block_ratio=mix_block_ratio, attn_drop=attn_drop, drop=drop,
                                                   norm_layer=norm_layer, act_layer=act_layer))
            in_chs = out_chs
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)


class NextViT(ClassifierHeadApi, nn.Module):
    """Next-ViT: the stem (``stem_chs``: the widths of its first three convolutions, the fourth keeps the last),
    four ``NextStage``s of ``depths`` blocks (the third's depth a multiple of 5) with ``strides`` and key/value
    pooling ``sr_ratios``, a final BatchNorm (``norm``) and the classifier head (pooling, dropout ``drop_rate``,
    linear).

    ``proj_drop_rate`` is the dropout of the MLPs and attention outputs, ``attn_drop_rate`` of the attention
    weights, ``drop_path_rate`` the stochastic depth of the last block, rising linearly from 0 at the first (the
    attentions of a transformer block share theirs by ``mix_block_ratio``). ``act_layer`` defaults to an in-place
    ReLU.
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans, num_classes=1000, global_pool="avg", stem_chs=(64, 32, 64), depths=(3, 4, 10, 3),
                 strides=(1, 2, 2, 2), sr_ratios=(8, 4, 2, 1), drop_path_rate=0.1, attn_drop_rate=0.0, drop_rate=0.0,
                 proj_drop_rate=0.0, head_dim=32, mix_block_ratio=0.75, norm_layer=nn.BatchNorm2d, act_layer=None):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        norm_layer = _get_norm_layer(norm_layer)
        act_layer = partial(nn.ReLU, inplace=True) if act_layer is None else get_act_layer(act_layer)
        self.stage_out_chs = [
            [96] * depths[0],
            [192] * (depths[1] - 1) + [256],
            [384, 384, 384, 384, 512] * (depths[2] // 5),
            [768] * (depths[3] - 1) + [1024],
        ]
        self.feature_info = [dict(num_chs=chs[-1], reduction=2 ** (i + 2), module=f"stages.{i}")
                             for i, chs in enumerate(self.stage_out_chs)]
        self.stage_block_types = [
            [NextConvBlock] * depths[0],
            [NextConvBlock] * (depths[1] - 1) + [NextTransformerBlock],
            [NextConvBlock, NextConvBlock, NextConvBlock, NextConvBlock, NextTransformerBlock] * (depths[2] // 5),
            [NextConvBlock] * (depths[3] - 1) + [NextTransformerBlock],
        ]
        conv = partial(ConvNormAct, kernel_size=3, norm_layer=norm_layer, act_layer=act_layer)
        self.stem = nn.Sequential(
            conv(in_chans, stem_chs[0], stride=2),
            conv(stem_chs[0], stem_chs[1], stride=1),
            conv(stem_chs[1], stem_chs[2], stride=1),
            conv(stem_chs[2], stem_chs[2], stride=2),
        )
        in_chs = stem_chs[-1]
        rates = torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))
        stages = []
        for stage_idx in range(len(depths)):
            stages.append(NextStage(in_chs, self.stage_out_chs[stage_idx], self.stage_block_types[stage_idx],
                                    stride=strides[stage_idx], sr_ratio=sr_ratios[stage_idx],
                                    mix_block_ratio=mix_block_ratio, head_dim=head_dim, drop=proj_drop_rate,
                                    attn_drop=attn_drop_rate, drop_path=rates[stage_idx].tolist(),
                                    norm_layer=norm_layer, act_layer=act_layer))
            in_chs = self.stage_out_chs[stage_idx][-1]
        self.num_features = in_chs
        self.stages = nn.Sequential(*stages)
        self.norm = norm_layer(in_chs)
        self.head = ClassifierHead(in_chs, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        self.stage_out_idx = [sum(depths[:idx + 1]) - 1 for idx in range(len(depths))]
        init_linear_layers(self, types=(nn.Linear, nn.Conv2d))

    def forward_features(self, x):
        """The last stage's map after the final norm, (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages ``indices`` picks (None: all, n: the last n, or a list; the last one through
        the final norm with ``norm``) and, unless ``intermediates_only``, the final map (normed if the last stage
        ran); ``stop_early`` skips the stages after the last one picked."""
        return normed_stage_intermediates(x, self.stem, self.stages, self.norm, indices, norm,
                                          stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm with ``prune_norm`` or when stages
        go, and the classifier with ``prune_head`` or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_end:
            self.head.in_features = self.num_features
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_nextvit(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives the four stages' outputs (strides 4 to 32) under timm's
    flattened names (``stages_0``...) unless ``out_indices`` says otherwise."""
    return build_model(NextViT, variant, pretrained, progress=progress, **kwargs)


@register_model
def nextvit_small(pretrained=False, progress=True, **kwargs):
    """Next-ViT-S: 3, 4, 10 and 3 blocks."""
    model_args = dict(depths=(3, 4, 10, 3), drop_path_rate=0.1)
    return _create_nextvit("nextvit_small", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def nextvit_base(pretrained=False, progress=True, **kwargs):
    """Next-ViT-B: 3, 4, 20 and 3 blocks."""
    model_args = dict(depths=(3, 4, 20, 3), drop_path_rate=0.2)
    return _create_nextvit("nextvit_base", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def nextvit_large(pretrained=False, progress=True, **kwargs):
    """Next-ViT-L: 3, 4, 30 and 3 blocks."""
    model_args = dict(depths=(3, 4, 30, 3), drop_path_rate=0.2)
    return _create_nextvit("nextvit_large", pretrained, progress, **dict(model_args, **kwargs))
