"""Swin Transformer V2 (Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and Resolution"): timm's
``swin_transformer_v2`` models, the ImageNet-1k classifiers and the ImageNet-22k pre-trained swinv2_base_window12_192
and swinv2_large_window12_192.

The hierarchy is Swin's (4x4 patches, four stages of window attention with every other block's windows shifted by
half a window, patch merging between stages), with V2's three changes for training large models at high resolution:
scaled cosine attention (the cosine similarity of queries and keys times a learnt per-head logit scale, clamped at
100), a continuous relative position bias (a small MLP, ``cpb_mlp``, maps each log-spaced relative offset to a bias
per head, so a model moves to larger windows than it was pre-trained with: ``pretrained_window_sizes`` keeps the
offsets on the pre-training scale) and residual post-norm (each branch is normalised before it is added, its norm
starting at zero). Patch merging normalises after its projection. The maps stay channels-last (N, H, W, C).

This is timm's ``SwinTransformerV2``: model names, module names, ``state_dict`` keys (the relative position indices
and coordinates, the zero key bias and the attention masks are non-persistent buffers, as in timm), defaults
(stochastic depth 0.1) and initialisation follow timm, so timm's checkpoints load with ``strict=True`` and give timm's
outputs. torchvision's Swin V2 models (``swin_v2_t``..., torchvision's keys) are ``flowvision.models.swin_transformer``,
the other timm port of V2 is ``swin_transformer_v2_cr``.

A model runs at the image size it was built for (``img_size``; timm's weights: 192, 256 or 384). ``features_only=True``
returns each stage's output as timm does: channels-last (N, H, W, C) maps.
"""
import math

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, QkvBias, drop_path_module, get_act_layer, init_linear_layers, pair
from ._pos_embed_rel import gen_relative_position_index, lookup_rel_pos_bias
from .swin_transformer import (StageBase, SwinBase, _window_and_shift, add_window_mask, merge_2x2, shift_mask_or_none,
                               shifted_window_attention)

__all__ = []

# The logit scale of cosine attention is clamped at log(1 / 0.01): attention logits at most 100 times the cosine.
_MAX_LOGIT_SCALE = math.log(1.0 / 0.01)


def log_spaced_coords_table(window_size, pretrained_window_size=(0, 0)):
    """V2's input of the position bias MLP: every relative offset (dy, dx) of a window, scaled so the largest offset
    of the pre-training window (``pretrained_window_size``; (0, 0): this window) is 8, then log-spaced as
    sign(t) * log2(1 + |t|) / log2(8). A float32 (1, 2 * win_h - 1, 2 * win_w - 1, 2) tensor, computed in float32 as
    timm does."""
    win_h, win_w = window_size
    span_h, span_w = pretrained_window_size if pretrained_window_size[0] > 0 else window_size
    dy = np.arange(-(win_h - 1), win_h, dtype=np.float32) / np.float32(max(span_h - 1, 1))
    dx = np.arange(-(win_w - 1), win_w, dtype=np.float32) / np.float32(max(span_w - 1, 1))
    table = np.stack(np.meshgrid(dy, dx, indexing="ij"), axis=-1)[None] * np.float32(8)
    table = np.sign(table) * np.log2(np.abs(table) + np.float32(1)) / np.float32(3)
    return torch.from_numpy(table.astype(np.float32))


class WindowAttention(QkvBias, nn.Module):
    """Scaled cosine attention within each window: the cosine similarity of every (query, key) pair times the head's
    learnt ``logit_scale`` (exponentiated, at most 100), plus a bias per head for the pair's relative offset, computed
    by ``cpb_mlp`` from the log-spaced offsets (``relative_coords_table``), looked up through
    ``relative_position_index`` and squashed to (0, 16) by 16 * sigmoid; then an optional additive mask per window.

    The query and value biases are parameters (``q_bias``, ``v_bias``; none without ``qkv_bias``), the key bias a
    zero buffer (``k_bias``): the keys are normalised, a bias would only shift them. ``qkv_bias_separate`` adds the
    biases after the projection instead of inside it (the same values, another rounding).
    """

    def __init__(self, dim, window_size, num_heads, qkv_bias=True, qkv_bias_separate=False, attn_drop=0.0,
                 proj_drop=0.0, pretrained_window_size=(0, 0)):
        super().__init__()
        self.dim = dim
        self.window_size = pair(window_size)
        self.pretrained_window_size = pair(pretrained_window_size)
        self.num_heads = num_heads
        self.qkv_bias_separate = qkv_bias_separate
        self.logit_scale = nn.Parameter(torch.full((num_heads, 1, 1), math.log(10)))
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_heads, bias=False),
        )
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self._add_qkv_bias(dim, qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)
        self.register_buffer("relative_coords_table",
                             log_spaced_coords_table(self.window_size, self.pretrained_window_size), persistent=False)
        index = gen_relative_position_index(self.window_size)
        self.register_buffer("relative_position_index", index, persistent=False)

    def project_qkv(self, x):
        """Queries, keys and values of the tokens, concatenated: (N, tokens, 3 * dim)."""
        if self.q_bias is None:
            return self.qkv(x)
        bias = self._qkv_bias()
        if self.qkv_bias_separate:
            return self.qkv(x) + bias
        return F.linear(x, self.qkv.weight, bias)

    def relative_position_bias(self):
        """The bias of every (query, key) pair of a window, per head: (1, heads, area, area), in (0, 16)."""
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        bias = lookup_rel_pos_bias(table, self.relative_position_index, self.window_size[0] * self.window_size[1])
        bias = 16 * torch.sigmoid(bias)
        return bias.unsqueeze(0)

    def forward(self, x, mask=None):
        """Windows' tokens (N * windows, area, C), with ``mask`` (windows, area, area) or None."""
        batch_windows, tokens, channels = x.shape
        qkv = self.project_qkv(x).reshape(batch_windows, tokens, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn * torch.clamp(self.logit_scale, max=_MAX_LOGIT_SCALE).exp()
        attn = attn + self.relative_position_bias()
        attn = add_window_mask(attn, mask)
        attn = self.softmax(attn)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch_windows, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


def res_post_norm_forward(block, x):
    """A residual post-norm window block (Swin V2's, and its CR port's) on (N, H, W, C) maps: x +
    drop_path1(norm1(shifted-window attention(x))), then x + drop_path2(norm2(mlp(x))), with the ``block``'s
    layers, windows, shifts and mask."""
    batch, height, width, channels = x.shape
    attended = shifted_window_attention(x, block.attn, block.window_size, block.shift_size, block.attn_mask)
    x = x + block.drop_path1(block.norm1(attended))
    x = x.reshape(batch, -1, channels)
    x = x + block.drop_path2(block.norm2(block.mlp(x)))
    return x.reshape(batch, height, width, channels)


class SwinTransformerV2Block(nn.Module):
    """A Swin V2 block on (N, H, W, C) maps, residual post-norm: x + drop_path(norm1(window attention(x))), then
    x + drop_path(norm2(mlp(x))).

    Every ``shift_size`` other than 0 shifts the windows (see ``shifted_window_attention``); the shifted windows'
    mask is the buffer ``attn_mask`` (None without a shift), made for ``input_resolution``. Unless
    ``always_partition``, a map side no longer than the window is one unshifted window.
    """

    def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0, always_partition=False,
                 mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer="gelu",
                 pretrained_window_size=0):
        super().__init__()
        self.dim = dim
        self.input_resolution = pair(input_resolution)
        self.num_heads = num_heads
        self.always_partition = always_partition
        self.window_size, self.shift_size = _window_and_shift(self.input_resolution, pair(window_size),
                                                              pair(shift_size), always_partition)
        self.window_area = self.window_size[0] * self.window_size[1]
        self.mlp_ratio = mlp_ratio
        self.attn = WindowAttention(dim, self.window_size, num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                    proj_drop=proj_drop, pretrained_window_size=pair(pretrained_window_size))
        self.norm1 = nn.LayerNorm(dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=get_act_layer(act_layer), drop=proj_drop)
        self.norm2 = nn.LayerNorm(dim)
        self.drop_path2 = drop_path_module(drop_path)
        mask = shift_mask_or_none(self.input_resolution, self.window_size, self.shift_size)
        self.register_buffer("attn_mask", mask, persistent=False)

    def forward(self, x):
        return res_post_norm_forward(self, x)


class PatchMerging(nn.Module):
    """Halves the resolution of (N, H, W, C) maps: each 2x2 group of positions (``merge_2x2``) projected to
    ``out_dim`` (default 2C) by ``reduction``, then normalised (``norm``; V2 normalises after the projection)."""

    def __init__(self, dim, out_dim=None):
        super().__init__()
        self.dim = dim
        self.out_dim = out_dim or 2 * dim
        self.reduction = nn.Linear(4 * dim, self.out_dim, bias=False)
        self.norm = nn.LayerNorm(self.out_dim)

    def forward(self, x):
        x = merge_2x2(x)
        x = self.reduction(x)
        x = self.norm(x)
        return x


class SwinTransformerV2Stage(StageBase):
    """One stage: ``downsample`` (a patch merging from ``dim`` to ``out_dim`` channels, or an identity in the first
    stage), then ``depth`` blocks alternating regular and half-window-shifted windows. ``drop_path``: one rate, or
    one per block."""

    def __init__(self, dim, out_dim, input_resolution, depth, num_heads, window_size, always_partition=False,
                 downsample=False, mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer="gelu", pretrained_window_size=0):
        super().__init__()
        self._add_downsample(dim, out_dim, input_resolution, depth, downsample, PatchMerging)
        window_size = pair(window_size)
        shift_size = tuple(w // 2 for w in window_size)
        self.blocks = nn.ModuleList([
            SwinTransformerV2Block(out_dim, self.output_resolution, num_heads, window_size=window_size,
                                   shift_size=0 if i % 2 == 0 else shift_size, always_partition=always_partition,
                                   mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop, attn_drop=attn_drop,
                                   drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path,
                                   act_layer=act_layer, pretrained_window_size=pretrained_window_size)
            for i in range(depth)])

    def init_respostnorm(self):
        """Zero the blocks' post-norms (weights and biases): every residual branch starts switched off."""
        for block in self.blocks:
            for norm in (block.norm1, block.norm2):
                nn.init.zeros_(norm.weight)
                nn.init.zeros_(norm.bias)


class SwinTransformerV2(SwinBase):
    """Patch embedding, stages of Swin V2 blocks (``depths`` blocks with ``num_heads`` heads each, the width
    doubling from ``embed_dim`` at every stage after the first), a final norm and timm's classifier head (timm's
    ``SwinTransformerV2``, its arguments and defaults).

    ``window_size``: one size (a number or (h, w)) for all stages or one per stage; ``pretrained_window_sizes``: the
    window each stage was pre-trained with, one per stage (0: its own window), which sets the scale of the position
    bias MLP's offsets. ``always_partition`` keeps the windows and shifts even on maps no larger than a window.
    ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or '' (the head classifies every position of the map).
    Dropout: ``proj_drop_rate`` in the blocks, ``attn_drop_rate`` on attention weights, ``drop_rate`` before the
    classifier; ``drop_path_rate`` is the stochastic depth of the last block (rising linearly from 0 at the first).
    ``act_layer``: the MLPs' activation (a name or a class). ``weight_init='skip'`` leaves the layers' default
    initialisation. ``num_classes=0`` gives the pooled features.
    """

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7, always_partition=False, mlp_ratio=4.0,
                 qkv_bias=True, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.1,
                 act_layer="gelu", pretrained_window_sizes=(0, 0, 0, 0), weight_init=""):
        super().__init__()
        stage_args = [dict(num_heads=num_heads[i], pretrained_window_size=pretrained_window_sizes[i])
                      for i in range(len(depths))]
        self._build(img_size, patch_size, in_chans, num_classes, global_pool, embed_dim, depths, window_size,
                    drop_rate, drop_path_rate, weight_init, SwinTransformerV2Stage, stage_args,
                    always_partition=always_partition, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                    proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, act_layer=act_layer)

    def init_weights(self):
        """timm's scheme: truncated-normal Linear weights (std 0.02, the position bias MLPs' too) and zero Linear
        biases, then zero post-norms in every block; the patch projection and the other norms keep their defaults,
        the logit scales log(10)."""
        init_linear_layers(self)
        for stage in self.layers:
            stage.init_respostnorm()


def _swinv2(variant, pretrained, progress, kwargs, **model_args):
    """A Swin V2 entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by
    the caller's ``kwargs``."""
    return build_model(SwinTransformerV2, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def swinv2_tiny_window16_256(pretrained=False, progress=True, **kwargs):
    """Swin-T V2 at 256: width 96, depths (2, 2, 6, 2), 16x16 windows."""
    return _swinv2("swinv2_tiny_window16_256", pretrained, progress, kwargs, img_size=256, window_size=16,
                   embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_tiny_window8_256(pretrained=False, progress=True, **kwargs):
    """Swin-T V2 at 256: width 96, depths (2, 2, 6, 2), 8x8 windows."""
    return _swinv2("swinv2_tiny_window8_256", pretrained, progress, kwargs, img_size=256, window_size=8,
                   embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_small_window16_256(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 at 256: width 96, depths (2, 2, 18, 2), 16x16 windows."""
    return _swinv2("swinv2_small_window16_256", pretrained, progress, kwargs, img_size=256, window_size=16,
                   embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_small_window8_256(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 at 256: width 96, depths (2, 2, 18, 2), 8x8 windows."""
    return _swinv2("swinv2_small_window8_256", pretrained, progress, kwargs, img_size=256, window_size=8,
                   embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_base_window16_256(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 at 256: width 128, depths (2, 2, 18, 2), 16x16 windows."""
    return _swinv2("swinv2_base_window16_256", pretrained, progress, kwargs, img_size=256, window_size=16,
                   embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swinv2_base_window8_256(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 at 256: width 128, depths (2, 2, 18, 2), 8x8 windows."""
    return _swinv2("swinv2_base_window8_256", pretrained, progress, kwargs, img_size=256, window_size=8,
                   embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swinv2_base_window12_192(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 at 192 with 12x12 windows, as pre-trained on ImageNet-22k: width 128, depths (2, 2, 18, 2)."""
    return _swinv2("swinv2_base_window12_192", pretrained, progress, kwargs, img_size=192, window_size=12,
                   embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swinv2_base_window12to16_192to256(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 pre-trained at 192 with 12x12 windows (ImageNet-22k), fine-tuned at 256 with 16x16 windows."""
    return _swinv2("swinv2_base_window12to16_192to256", pretrained, progress, kwargs, img_size=256, window_size=16,
                   embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32),
                   pretrained_window_sizes=(12, 12, 12, 6))


@register_model
def swinv2_base_window12to24_192to384(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 pre-trained at 192 with 12x12 windows (ImageNet-22k), fine-tuned at 384 with 24x24 windows."""
    return _swinv2("swinv2_base_window12to24_192to384", pretrained, progress, kwargs, img_size=384, window_size=24,
                   embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32),
                   pretrained_window_sizes=(12, 12, 12, 6))


@register_model
def swinv2_large_window12_192(pretrained=False, progress=True, **kwargs):
    """Swin-L V2 at 192 with 12x12 windows, as pre-trained on ImageNet-22k: width 192, depths (2, 2, 18, 2)."""
    return _swinv2("swinv2_large_window12_192", pretrained, progress, kwargs, img_size=192, window_size=12,
                   embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48))


@register_model
def swinv2_large_window12to16_192to256(pretrained=False, progress=True, **kwargs):
    """Swin-L V2 pre-trained at 192 with 12x12 windows (ImageNet-22k), fine-tuned at 256 with 16x16 windows."""
    return _swinv2("swinv2_large_window12to16_192to256", pretrained, progress, kwargs, img_size=256, window_size=16,
                   embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48),
                   pretrained_window_sizes=(12, 12, 12, 6))


@register_model
def swinv2_large_window12to24_192to384(pretrained=False, progress=True, **kwargs):
    """Swin-L V2 pre-trained at 192 with 12x12 windows (ImageNet-22k), fine-tuned at 384 with 24x24 windows."""
    return _swinv2("swinv2_large_window12to24_192to384", pretrained, progress, kwargs, img_size=384, window_size=24,
                   embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48),
                   pretrained_window_sizes=(12, 12, 12, 6))
