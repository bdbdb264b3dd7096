"""Twins (Chu, Tian, Wang, Zhang, Ren, Wei, Xia and Shen 2021, "Twins: Revisiting the Design of Spatial Attention in
Vision Transformers"): twins_pcpvt_small, twins_pcpvt_base, twins_pcpvt_large, twins_svt_small, twins_svt_base and
twins_svt_large.

Four-stage pyramids of transformer blocks over non-overlapping patch embeddings (4x4, then 2x2 at each later
stage). Position comes from a positional encoding generator: a 3x3 depthwise convolution added to the tokens after
each stage's first block, so the models take images of any size. Twins-PCPVT attends globally with keys and values
from a map shrunk by a strided convolution (global sub-sampled attention); Twins-SVT alternates that with attention
inside non-overlapping windows (locally-grouped attention, the map zero-padded to whole windows). Model names,
module names, ``state_dict`` keys and initialisation follow timm's ``twins`` module, so its checkpoints load
directly.
"""
import math
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import MeanTokenHeadApi, Mlp, drop_path_module, pair, trunc_normal_
from .pvt_v2 import Attention, _check_pool

__all__ = []


class LocallyGroupedAttn(nn.Module):
    """Multi-head self-attention inside non-overlapping ``ws`` x ``ws`` windows of the (H, W) token map (one fused
    ``qkv`` projection, then ``proj``). The map is zero-padded at the bottom and right to whole windows, and the
    padding cut off after attention; padded tokens take part in their windows' attention, as in timm. ``attn_drop``
    drops attention weights, ``proj_drop`` the output, in training."""

    def __init__(self, dim, num_heads=8, attn_drop=0.0, proj_drop=0.0, ws=1):
        super().__init__()
        if ws == 1:
            raise ValueError("LocallyGroupedAttn needs windows larger than 1 (ws=1 is global sub-sampled attention)")
        if dim % num_heads != 0:
            raise ValueError(f"dim {dim} should be divided by num_heads {num_heads}.")
        self.dim = dim
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.ws = ws

    def forward(self, x, size):
        batch, tokens, channels = x.shape
        height, width = size
        x = x.reshape(batch, height, width, channels)
        pad_right = (self.ws - width % self.ws) % self.ws
        pad_bottom = (self.ws - height % self.ws) % self.ws
        x = F.pad(x, (0, 0, 0, pad_right, 0, pad_bottom))
        rows = (height + pad_bottom) // self.ws
        cols = (width + pad_right) // self.ws
        x = x.reshape(batch, rows, self.ws, cols, self.ws, channels).transpose(2, 3)
        qkv = self.qkv(x).reshape(batch, rows * cols, self.ws * self.ws, 3, self.num_heads,
                                  channels // self.num_heads).permute(3, 0, 1, 4, 2, 5)
        q, k, v = qkv.unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(2, 3).reshape(batch, rows, cols, self.ws, self.ws, channels)
        x = x.transpose(2, 3).reshape(batch, rows * self.ws, cols * self.ws, channels)
        x = x[:, :height, :width, :]
        x = x.reshape(batch, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class GlobalSubSampleAttn(Attention):
    """Global sub-sampled attention: every token attends to all, keys and values taken from the map shrunk by a
    ``sr_ratio`` x ``sr_ratio`` convolution of that stride (``sr``) and normalised (``norm``), the tokens themselves
    when ``sr_ratio`` is 1. It is PVT v2's spatial-reduction attention with biased projections, under Twins'
    name."""

    def __init__(self, dim, num_heads=8, attn_drop=0.0, proj_drop=0.0, sr_ratio=1):
        super().__init__(dim, num_heads, sr_ratio=sr_ratio, qkv_bias=True, attn_drop=attn_drop, proj_drop=proj_drop)
        self.sr_ratio = sr_ratio


class Block(nn.Module):
    """A pre-norm transformer block over the tokens of an (H, W) map: x + drop_path1(attn(norm1(x))), then
    x + drop_path2(mlp(norm2(x))). The attention is global sub-sampled (``ws`` 1, keys and values reduced by
    ``sr_ratio``) or locally grouped in ``ws`` x ``ws`` windows. ``drop_path`` is the stochastic depth of both
    branches; ``proj_drop`` the dropout of the attention output and the MLP.

    timm's ``ws=None`` (ViT's attention, which no Twins model builds) is not offered: ``ws`` defaults to 1.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, sr_ratio=1, ws=1):
        super().__init__()
        self.norm1 = norm_layer(dim)
        if ws == 1:
            self.attn = GlobalSubSampleAttn(dim, num_heads, attn_drop, proj_drop, sr_ratio)
        else:
            self.attn = LocallyGroupedAttn(dim, num_heads, attn_drop, proj_drop, ws)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, size):
        x = x + self.drop_path1(self.attn(self.norm1(x), size))
        x = x + self.drop_path2(self.mlp(self.norm2(x)))
        return x


class PosConv(nn.Module):
    """The positional encoding generator (Chu et al. 2021, "Conditional Positional Encodings for Vision
    Transformers"): a 3x3 depthwise convolution of the token map (``proj``, a one-layer Sequential), added to the
    tokens when ``stride`` is 1. Each token's encoding depends on its neighbourhood, so any image size works."""

    def __init__(self, in_chans, embed_dim=768, stride=1):
        super().__init__()
        self.proj = nn.Sequential(nn.Conv2d(in_chans, embed_dim, 3, stride, 1, groups=embed_dim))
        self.stride = stride

    def forward(self, x, size):
        batch, _, channels = x.shape
        feature_map = x.transpose(1, 2).reshape(batch, channels, size[0], size[1])
        x = self.proj(feature_map)
        if self.stride == 1:
            x = x + feature_map
        x = x.flatten(2).transpose(1, 2)
        return x


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` patches projected to ``embed_dim`` by a strided convolution (``proj``) and
    normalised (``norm``). Returns the (N, patches, embed_dim) tokens and their (H, W) grid; images of any size are
    taken (cut down to whole patches). ``img_size`` is the size the model is described for; it must be a whole
    number of patches."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768):
        super().__init__()
        img_size = pair(img_size)
        patch_size = pair(patch_size)
        if img_size[0] % patch_size[0] or img_size[1] % patch_size[1]:
            raise ValueError(f"img_size {img_size} should be divided by patch_size {patch_size}.")
        self.img_size = img_size
        self.patch_size = patch_size
        self.H = img_size[0] // patch_size[0]
        self.W = img_size[1] // patch_size[1]
        self.num_patches = self.H * self.W
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        height, width = x.shape[-2:]
        x = self.proj(x).flatten(2).transpose(1, 2)
        x = self.norm(x)
        return x, (height // self.patch_size[0], width // self.patch_size[1])


class Twins(MeanTokenHeadApi, nn.Module):
    """Twins: four stages, each a patch embedding (``patch_embeds``; ``patch_size`` at the first, 2 after),
    dropout (``pos_drops``), ``depths`` blocks (``blocks``; ``embed_dims`` wide, ``num_heads`` heads, MLPs
    ``mlp_ratios`` wide) with the positional encoding generator (``pos_block``) after the first, then the final
    norm over the last stage's tokens (``norm``), their mean, dropout (``head_drop``) and the classifier (``head``)
    (timm's ``Twins``, its arguments and defaults).

    Without ``wss`` every block attends globally, keys and values reduced by the stage's ``sr_ratios`` (PCPVT);
    with ``wss`` the even blocks of a stage attend inside its ``wss`` windows instead (SVT). ``global_pool`` is
    'avg' or '' (the head then classifies every token). Dropout: ``pos_drop_rate`` after each patch embedding,
    ``proj_drop_rate`` in the blocks, ``attn_drop_rate`` on attention weights, ``drop_rate`` before the
    classifier; ``drop_path_rate`` is the stochastic depth of the last block, rising linearly from 0 at the first.
    ``num_classes=0`` gives the pooled features. ``img_size`` (a whole number of patches) describes the model;
    images of any size run where each stage's map is no smaller than its reduction (32 pixels a side for the
    registered models).
    """

    default_cfg = {"first_conv": "patch_embeds.0.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    _check_pool = staticmethod(_check_pool)

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, global_pool="avg",
                 embed_dims=(64, 128, 256, 512), num_heads=(1, 2, 4, 8), mlp_ratios=(4, 4, 4, 4), depths=(3, 4, 6, 3),
                 sr_ratios=(8, 4, 2, 1), wss=None, drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0,
                 attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=partial(nn.LayerNorm, eps=1e-6), block_cls=Block):
        super().__init__()
        _check_pool(global_pool)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.depths = depths
        self.embed_dims = embed_dims
        self.num_features = self.head_hidden_size = embed_dims[-1]
        img_size = pair(img_size)
        prev_chs = in_chans
        self.patch_embeds = nn.ModuleList()
        self.pos_drops = nn.ModuleList()
        for i in range(len(depths)):
            self.patch_embeds.append(PatchEmbed(img_size, patch_size, prev_chs, embed_dims[i]))
            self.pos_drops.append(nn.Dropout(p=pos_drop_rate))
            prev_chs = embed_dims[i]
            img_size = tuple(side // patch_size for side in img_size)
            patch_size = 2
        self.blocks = nn.ModuleList()
        self.feature_info = []
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        first = 0
        for k, depth in enumerate(depths):
            self.blocks.append(nn.ModuleList([
                block_cls(dim=embed_dims[k], num_heads=num_heads[k], mlp_ratio=mlp_ratios[k],
                          proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=rates[first + i],
                          norm_layer=norm_layer, sr_ratio=sr_ratios[k],
                          ws=1 if wss is None or i % 2 == 1 else wss[k])
                for i in range(depth)]))
            self.feature_info.append(dict(module=f"block.{k}", num_chs=embed_dims[k], reduction=2 ** (2 + k)))
            first += depth
        self.pos_block = nn.ModuleList([PosConv(dim, dim) for dim in embed_dims])
        self.norm = norm_layer(self.num_features)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self._init_weights()

    def _init_weights(self):
        """timm's init, module by module: linear weights truncated normal (std 0.02), convolution weights normal
        with std sqrt(2 / fan-out), biases zero, LayerNorms ones and zeros."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Conv2d):
                fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
                nn.init.normal_(module.weight, 0.0, math.sqrt(2.0 / fan_out))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def _stages(self, count=None):
        """The first ``count`` stages (all by default) as (patch embedding, dropout, blocks, position encoding)."""
        stages = list(zip(self.patch_embeds, self.pos_drops, self.blocks, self.pos_block))
        return stages if count is None else stages[:count]

    @staticmethod
    def _run_stage(x, stage):
        """One stage on an image or (N, C, H, W) map: the (N, H * W, C) tokens it gives and their grid (H, W)."""
        embed, drop, blocks, pos_block = stage
        x, size = embed(x)
        x = drop(x)
        for j, block in enumerate(blocks):
            x = block(x, size)
            if j == 0:
                x = pos_block(x, size)
        return x, size

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The (N, C, H, W) outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and
        (unless ``intermediates_only``) the last stage's tokens, normalised if the last stage ran; ``norm`` applies
        the final norm to the last stage's map too; ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self._stages(), indices, stop_early, output_fmt)
        batch = x.shape[0]
        last = len(self.blocks) - 1
        intermediates = []
        i = 0
        for i, stage in enumerate(stages):
            x, size = self._run_stage(x, stage)
            if i < last:
                x = _to_map(x, batch, size)
                if i in take:
                    intermediates.append(x)
            elif i in take:
                intermediates.append(_to_map(self.norm(x) if norm else x, batch, size))
        if intermediates_only:
            return intermediates
        if i == last:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm when asked or when stages go, and
        the classifier (for pooled features) when asked or when stages go; returns the absolute indices."""
        take = take_indices(len(self.blocks), indices)
        kept = max(take) + 1
        prune_end = kept < len(self.blocks)
        for name in ("patch_embeds", "pos_drops", "blocks", "pos_block"):
            setattr(self, name, getattr(self, name)[:kept])
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[kept - 1]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The last stage's normalised tokens (N, H / 32 * W / 32, num_features)."""
        batch = x.shape[0]
        last = len(self.blocks) - 1
        for i, stage in enumerate(self._stages()):
            x, size = self._run_stage(x, stage)
            if i < last:
                x = _to_map(x, batch, size)
        x = self.norm(x)
        return x

def _to_map(x, batch, size):
    """(N, H * W, C) tokens as an (N, C, H, W) map."""
    return x.reshape(batch, size[0], size[1], -1).permute(0, 3, 1, 2).contiguous()


def _create_twins(variant, pretrained, progress, kwargs, **model_args):
    """A Twins entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``;
    ``features_only`` gives the four stages' (N, C, H, W) maps unless ``out_indices`` says otherwise (timm's
    getter: the model kept under ``model.``, pruned after the last stage asked for)."""
    config = {**model_args, **kwargs}
    if config.get("features_only") and config.get("out_indices") is None:
        config["out_indices"] = 4
    return build_model(Twins, variant, pretrained, progress=progress, **config)


_PCPVT = dict(patch_size=4, embed_dims=[64, 128, 320, 512], num_heads=[1, 2, 5, 8], mlp_ratios=[8, 8, 4, 4],
              sr_ratios=[8, 4, 2, 1])


@register_model
def twins_pcpvt_small(pretrained=False, progress=True, **kwargs):
    """Twins-PCPVT-S: widths 64, 128, 320, 512, blocks 3, 4, 6, 3, global sub-sampled attention."""
    return _create_twins("twins_pcpvt_small", pretrained, progress, kwargs, depths=[3, 4, 6, 3], **_PCPVT)


@register_model
def twins_pcpvt_base(pretrained=False, progress=True, **kwargs):
    """Twins-PCPVT-B: widths 64, 128, 320, 512, blocks 3, 4, 18, 3, global sub-sampled attention."""
    return _create_twins("twins_pcpvt_base", pretrained, progress, kwargs, depths=[3, 4, 18, 3], **_PCPVT)


@register_model
def twins_pcpvt_large(pretrained=False, progress=True, **kwargs):
    """Twins-PCPVT-L: widths 64, 128, 320, 512, blocks 3, 8, 27, 3, global sub-sampled attention."""
    return _create_twins("twins_pcpvt_large", pretrained, progress, kwargs, depths=[3, 8, 27, 3], **_PCPVT)


_SVT = dict(patch_size=4, mlp_ratios=[4, 4, 4, 4], wss=[7, 7, 7, 7], sr_ratios=[8, 4, 2, 1])


@register_model
def twins_svt_small(pretrained=False, progress=True, **kwargs):
    """Twins-SVT-S: widths 64, 128, 256, 512, blocks 2, 2, 10, 4, local 7x7 windows alternating with global
    sub-sampled attention."""
    return _create_twins("twins_svt_small", pretrained, progress, kwargs, embed_dims=[64, 128, 256, 512],
                         num_heads=[2, 4, 8, 16], depths=[2, 2, 10, 4], **_SVT)


@register_model
def twins_svt_base(pretrained=False, progress=True, **kwargs):
    """Twins-SVT-B: widths 96, 192, 384, 768, blocks 2, 2, 18, 2, local 7x7 windows alternating with global
    sub-sampled attention."""
    return _create_twins("twins_svt_base", pretrained, progress, kwargs, embed_dims=[96, 192, 384, 768],
                         num_heads=[3, 6, 12, 24], depths=[2, 2, 18, 2], **_SVT)


@register_model
def twins_svt_large(pretrained=False, progress=True, **kwargs):
    """Twins-SVT-L: widths 128, 256, 512, 1024, blocks 2, 2, 18, 2, local 7x7 windows alternating with global
    sub-sampled attention."""
    return _create_twins("twins_svt_large", pretrained, progress, kwargs, embed_dims=[128, 256, 512, 1024],
                         num_heads=[4, 8, 16, 32], depths=[2, 2, 18, 2], **_SVT)
