"""PVT v2 (Wang, Xie, Li, Fan, Song, Liang, Lu, Luo and Shao 2021, "PVT v2: Improved Baselines with Pyramid Vision
Transformer"): pvt_v2_b0, pvt_v2_b1, pvt_v2_b2, pvt_v2_b2_li, pvt_v2_b3, pvt_v2_b4 and pvt_v2_b5.

A four-stage pyramid of transformer blocks over overlapping patch embeddings (a 7x7 stride-4 convolution, then a
3x3 stride-2 one at each later stage). Attention keeps full-resolution queries but takes its keys and values from a
map shrunk by a strided convolution (spatial-reduction attention), or, in the linear ``_li`` variant, from a 7x7
average pool of the map, so that its cost grows linearly with the image. The feed-forward block runs a 3x3
depthwise convolution on its hidden map, which gives the tokens their position (there is no position embedding),
so the model takes images of any size. Model names, module names, ``state_dict`` keys and initialisation follow
timm's ``pvt_v2`` module, so its checkpoints load directly.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import LinearHeadApi, drop_path_module, pair, trunc_normal_
from ._norm import LayerNorm

__all__ = []


def _per_stage(value, num_stages):
    """One value per stage: ``value`` repeated if it is a single number, else the sequence as a tuple."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * num_stages


class MlpWithDepthwiseConv(nn.Module):
    """The feed-forward block of PVT v2: ``fc1`` to ``hidden_features``, the tokens viewed as their (H, W) map
    for a 3x3 depthwise convolution (``dwconv``, after a ReLU with ``extra_relu``, as the linear variant has it),
    the activation, dropout, ``fc2`` to ``out_features`` and dropout again. The convolution mixes neighbouring
    tokens, which is how the model learns where each token sits."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0,
                 extra_relu=False):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.relu = nn.ReLU() if extra_relu else nn.Identity()
        self.dwconv = nn.Conv2d(hidden_features, hidden_features, 3, 1, 1, groups=hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x, feat_size):
        x = self.fc1(x)
        batch, _, channels = x.shape
        x = x.transpose(1, 2).reshape(batch, channels, feat_size[0], feat_size[1])
        x = self.relu(x)
        x = self.dwconv(x)
        x = x.flatten(2).transpose(1, 2)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class Attention(nn.Module):
    """Multi-head attention whose keys and values come from a smaller map (spatial-reduction attention).

    Queries are the tokens projected by ``q``; keys and values (``kv``) come from the tokens themselves when
    ``sr_ratio`` is 1, else from the (H, W) map shrunk by a ``sr_ratio`` x ``sr_ratio`` convolution of that stride
    (``sr``) and normalised (``norm``). With ``linear_attn`` the map is instead average-pooled to 7x7 (``pool``),
    projected by a 1x1 convolution (``sr``), normalised and passed through GELU (``act``): a fixed number of keys
    whatever the image size. ``attn_drop`` drops attention weights, ``proj_drop`` the output, in training.
    """

    def __init__(self, dim, num_heads=8, sr_ratio=1, linear_attn=False, qkv_bias=True, attn_drop=0.0,
                 proj_drop=0.0):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim {dim} should be divided by num_heads {num_heads}.")
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.kv = nn.Linear(dim, dim * 2, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.pool = None
        self.sr = None
        self.norm = None
        self.act = None
        if linear_attn:
            self.pool = nn.AdaptiveAvgPool2d(7)
            self.sr = nn.Conv2d(dim, dim, kernel_size=1, stride=1)
            self.norm = nn.LayerNorm(dim)
            self.act = nn.GELU()
        elif sr_ratio > 1:
            self.sr = nn.Conv2d(dim, dim, kernel_size=sr_ratio, stride=sr_ratio)
            self.norm = nn.LayerNorm(dim)

    def _key_value_tokens(self, x, feat_size):
        """The tokens keys and values are projected from: ``x`` itself, or its map reduced and normalised."""
        if self.sr is None:
            return x
        batch, _, channels = x.shape
        x = x.permute(0, 2, 1).reshape(batch, channels, feat_size[0], feat_size[1])
        if self.pool is not None:
            x = self.pool(x)
        x = self.sr(x).reshape(batch, channels, -1).permute(0, 2, 1)
        x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x

    def forward(self, x, feat_size):
        batch, tokens, channels = x.shape
        q = self.q(x).reshape(batch, tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        kv = self.kv(self._key_value_tokens(x, feat_size))
        kv = kv.reshape(batch, -1, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    """A pre-norm transformer block over the tokens of an (H, W) map: x + drop_path1(attn(norm1(x))), then
    x + drop_path2(mlp(norm2(x))), both branches told the map's size (``feat_size``). ``drop_path`` is the
    stochastic depth of both branches; ``proj_drop`` the dropout of the attention output and the MLP."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, sr_ratio=1, linear_attn=False, qkv_bias=False, proj_drop=0.0,
                 attn_drop=0.0, drop_path=0.0, act_layer=nn.GELU, norm_layer=LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, sr_ratio=sr_ratio, linear_attn=linear_attn,
                              qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = MlpWithDepthwiseConv(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop,
                                        extra_relu=linear_attn)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, feat_size):
        x = x + self.drop_path1(self.attn(self.norm1(x), feat_size))
        x = x + self.drop_path2(self.mlp(self.norm2(x), feat_size))
        return x


class OverlapPatchEmbed(nn.Module):
    """Overlapping patches: a ``patch_size`` convolution at ``stride`` (padded by half the patch, so neighbouring
    patches share pixels), then a LayerNorm over the channels; returns the channels-last (N, H, W, C) map."""

    def __init__(self, patch_size=7, stride=4, in_chans=3, embed_dim=768):
        super().__init__()
        patch_size = pair(patch_size)
        if max(patch_size) <= stride:
            raise ValueError(f"patch_size {patch_size} must be larger than the stride {stride}")
        self.patch_size = patch_size
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, stride=stride,
                              padding=(patch_size[0] // 2, patch_size[1] // 2))
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class PyramidVisionTransformerStage(nn.Module):
    """One stage: with ``downsample`` a 3x3 stride-2 overlapping patch embedding from ``dim`` to ``dim_out``
    channels (the first stage has none: the stem embeds it), ``depth`` blocks and a final norm. Takes an (N, C, H,
    W) map (or, without downsampling, the stem's (N, H, W, C) one) and returns (N, dim_out, H', W').
    ``drop_path``: one rate for every block or a list, one a block."""

    def __init__(self, dim, dim_out, depth, downsample=True, num_heads=8, sr_ratio=1, linear_attn=False,
                 mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, norm_layer=LayerNorm):
        super().__init__()
        if downsample:
            self.downsample = OverlapPatchEmbed(patch_size=3, stride=2, in_chans=dim, embed_dim=dim_out)
        elif dim != dim_out:
            raise ValueError(f"a stage without downsampling keeps its width: got dim {dim}, dim_out {dim_out}")
        else:
            self.downsample = None
        rates = drop_path if isinstance(drop_path, list) else [drop_path] * depth
        self.blocks = nn.ModuleList([
            Block(dim_out, num_heads, mlp_ratio=mlp_ratio, sr_ratio=sr_ratio, linear_attn=linear_attn,
                  qkv_bias=qkv_bias, proj_drop=proj_drop, attn_drop=attn_drop, drop_path=rates[i],
                  norm_layer=norm_layer)
            for i in range(depth)])
        self.norm = norm_layer(dim_out)

    def forward(self, x):
        if self.downsample is not None:
            x = self.downsample(x)
        batch, height, width, channels = x.shape
        feat_size = (height, width)
        x = x.reshape(batch, -1, channels)
        for block in self.blocks:
            x = block(x, feat_size)
        x = self.norm(x)
        x = x.reshape(batch, height, width, -1).permute(0, 3, 1, 2).contiguous()
        return x


def _check_pool(global_pool):
    """Refuse a pooling other than 'avg' and '' (none), as timm does."""
    if global_pool not in ("avg", ""):
        raise ValueError(f"Only avg pooling (or none) is supported, got global_pool={global_pool!r}")


class PyramidVisionTransformerV2(LinearHeadApi, nn.Module):
    """PVT v2: the stem's overlapping 7x7 stride-4 patch embedding (``patch_embed``), four stages (``stages``;
    ``depths`` blocks, ``embed_dims`` wide, ``num_heads`` heads, keys and values reduced by ``sr_ratios``, MLPs
    ``mlp_ratios`` wide; the last three are one value or one per stage), then global average pooling, dropout
    (``head_drop``) and the classifier (``head``) (timm's ``PyramidVisionTransformerV2``, its arguments and
    defaults).

    ``linear`` gives every attention the linear (7x7-pooled) reduction. ``global_pool`` is 'avg' or '' (the head
    then classifies every position of the final map). Dropout: ``proj_drop_rate`` in the blocks,
    ``attn_drop_rate`` on attention weights, ``drop_rate`` before the classifier; ``drop_path_rate`` is the
    stochastic depth of the last block, rising linearly from 0 at the first. ``num_classes=0`` gives the pooled
    features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FlatFeatureListNet
    _check_pool = staticmethod(_check_pool)

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", depths=(3, 4, 6, 3),
                 embed_dims=(64, 128, 256, 512), num_heads=(1, 2, 4, 8), sr_ratios=(8, 4, 2, 1),
                 mlp_ratios=(8.0, 8.0, 4.0, 4.0), qkv_bias=True, linear=False, drop_rate=0.0, proj_drop_rate=0.0,
                 attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=LayerNorm):
        super().__init__()
        _check_pool(global_pool)
        num_stages = len(depths)
        if len(embed_dims) != num_stages:
            raise ValueError(f"embed_dims {tuple(embed_dims)} must have one width per stage ({num_stages})")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.depths = depths
        mlp_ratios = _per_stage(mlp_ratios, num_stages)
        num_heads = _per_stage(num_heads, num_stages)
        sr_ratios = _per_stage(sr_ratios, num_stages)
        self.feature_info = []
        self.patch_embed = OverlapPatchEmbed(patch_size=7, stride=4, in_chans=in_chans, embed_dim=embed_dims[0])
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))]
        prev_dim = embed_dims[0]
        stages = []
        for i in range(num_stages):
            stages.append(PyramidVisionTransformerStage(
                prev_dim, embed_dims[i], depths[i], downsample=i > 0, num_heads=num_heads[i],
                sr_ratio=sr_ratios[i], linear_attn=linear, mlp_ratio=mlp_ratios[i], qkv_bias=qkv_bias,
                proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=rates[i], norm_layer=norm_layer))
            prev_dim = embed_dims[i]
            self.feature_info.append(dict(num_chs=prev_dim, reduction=4 * 2 ** i, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = embed_dims[-1]
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dims[-1], num_classes) if num_classes > 0 else nn.Identity()
        self._init_weights()

    def _init_weights(self):
        """timm's init, module by module: linear weights truncated normal (std 0.02), convolution weights normal
        with std sqrt(2 / fan-out), biases zero; the norms keep ones and zeros."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Conv2d):
                fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
                nn.init.normal_(module.weight, 0.0, math.sqrt(2.0 / fan_out))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The (N, C, H, W) outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and
        (unless ``intermediates_only``) the last map run; ``stop_early`` skips the stages after the last one
        picked. ``norm`` changes nothing: each stage ends in its own norm (timm's argument)."""
        return stage_intermediates(x, self.patch_embed, self.stages, indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, and the classifier (for pooled features) when
        asked or when stages go; returns the absolute indices. ``prune_norm`` changes nothing (timm's
        argument)."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Average pooling (unless ``global_pool`` is ''), dropout and, unless ``pre_logits``, the classifier."""
        if self.global_pool:
            x = x.mean(dim=(-1, -2))
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

def _create_pvt2(variant, pretrained, progress, kwargs, **model_args):
    """A PVT v2 entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``;
    ``features_only`` gives the four stages' (N, C, H, W) maps unless ``out_indices`` says otherwise, under timm's
    flattened names (``stages_2``)."""
    return build_model(PyramidVisionTransformerV2, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_WIDTHS = dict(embed_dims=(64, 128, 320, 512), num_heads=(1, 2, 5, 8))


@register_model
def pvt_v2_b0(pretrained=False, progress=True, **kwargs):
    """PVT v2-B0: widths 32, 64, 160, 256, two blocks a stage."""
    return _create_pvt2("pvt_v2_b0", pretrained, progress, kwargs, depths=(2, 2, 2, 2), embed_dims=(32, 64, 160, 256),
                        num_heads=(1, 2, 5, 8))


@register_model
def pvt_v2_b1(pretrained=False, progress=True, **kwargs):
    """PVT v2-B1: widths 64, 128, 320, 512, two blocks a stage."""
    return _create_pvt2("pvt_v2_b1", pretrained, progress, kwargs, depths=(2, 2, 2, 2), **_WIDTHS)


@register_model
def pvt_v2_b2(pretrained=False, progress=True, **kwargs):
    """PVT v2-B2: widths 64, 128, 320, 512, blocks 3, 4, 6, 3."""
    return _create_pvt2("pvt_v2_b2", pretrained, progress, kwargs, depths=(3, 4, 6, 3), **_WIDTHS)


@register_model
def pvt_v2_b3(pretrained=False, progress=True, **kwargs):
    """PVT v2-B3: widths 64, 128, 320, 512, blocks 3, 4, 18, 3."""
    return _create_pvt2("pvt_v2_b3", pretrained, progress, kwargs, depths=(3, 4, 18, 3), **_WIDTHS)


@register_model
def pvt_v2_b4(pretrained=False, progress=True, **kwargs):
    """PVT v2-B4: widths 64, 128, 320, 512, blocks 3, 8, 27, 3."""
    return _create_pvt2("pvt_v2_b4", pretrained, progress, kwargs, depths=(3, 8, 27, 3), **_WIDTHS)


@register_model
def pvt_v2_b5(pretrained=False, progress=True, **kwargs):
    """PVT v2-B5: widths 64, 128, 320, 512, blocks 3, 6, 40, 3, MLPs four times as wide at every stage."""
    return _create_pvt2("pvt_v2_b5", pretrained, progress, kwargs, depths=(3, 6, 40, 3), mlp_ratios=(4, 4, 4, 4),
                        **_WIDTHS)


@register_model
def pvt_v2_b2_li(pretrained=False, progress=True, **kwargs):
    """PVT v2-B2 with linear (7x7-pooled) spatial-reduction attention."""
    return _create_pvt2("pvt_v2_b2_li", pretrained, progress, kwargs, depths=(3, 4, 6, 3), linear=True, **_WIDTHS)
