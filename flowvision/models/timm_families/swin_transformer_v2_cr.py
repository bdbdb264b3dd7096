"""Swin Transformer V2 (Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and Resolution") as Christoph
Reich re-implemented it: timm's ``swin_transformer_v2_cr`` models, tiny, small, base, large, huge and giant at 224 and
384 pixels (``swinv2_cr_tiny_224`` ... ``swinv2_cr_giant_384``) and with a norm ending every stage
(``swinv2_cr_tiny_ns_224``, ``swinv2_cr_small_ns_224``, ``swinv2_cr_small_ns_256``, ``swinv2_cr_base_ns_224``); timm
publishes weights for ``swinv2_cr_small_224`` and the tiny and small ``_ns_224`` models only.

The same model as ``swin_transformer_v2`` in outline (Swin's shifted windows and patch merging; scaled cosine
attention with a learnt per-head logit scale; a position bias computed by a small MLP, ``meta_mlp``, from log-spaced
relative offsets; residual post-norm), with this port's choices: the offsets are log-spaced as sign(t) * ln(1 + |t|)
on the raw offsets (no rescaling to a pre-training window), the bias MLP has 384 hidden units, drops 12.5% of them
in training and its bias is not squashed; the queries, keys and values share one biased projection; patch merging
normalises before its projection; the windows follow the image (the patch grid divided by ``window_ratio``, 8:
7x7 windows at 224); and the last stage ends with a norm on the main branch instead of a final norm (``_ns``
models: every stage does). Between stages the maps are (N, C, H, W).

This is timm's ``SwinTransformerV2Cr``: model names, module names, ``state_dict`` keys (the relative offsets and the
attention masks are non-persistent buffers, as in timm), defaults and initialisation (the layers' own defaults, the
post-norm weights zero) follow timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs.

A model runs at the image size it was built for (``img_size``). ``features_only=True`` returns each stage's output
as timm does: (N, C, H, W) maps.
"""
import math

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHead, ClassifierHeadApi, Mlp, drop_path_module, pair
from . import swin_transformer as swin
from .swin_transformer import (PatchMerging, _window_and_shift, add_window_mask, shift_mask_or_none,
                               stage_window_sizes)
from .swin_transformer_v2 import _MAX_LOGIT_SCALE, res_post_norm_forward

__all__ = []


def log_spaced_offsets(window_size):
    """The input of the position bias MLP: for every (query, key) pair of a window's tokens (row-major), their
    offset (dy, dx) log-spaced as sign(t) * ln(1 + |t|). A float32 (area * area, 2) tensor."""
    rows, cols = np.meshgrid(np.arange(window_size[0], dtype=np.float32),
                             np.arange(window_size[1], dtype=np.float32), indexing="ij")
    coords = np.stack((rows.reshape(-1), cols.reshape(-1)))
    offsets = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0).reshape(-1, 2)
    offsets = np.sign(offsets) * np.log(np.float32(1) + np.abs(offsets))
    return torch.from_numpy(offsets.astype(np.float32))


def window_sizes_from_ratio(grid_size, window_ratio, num_stages):
    """One (h, w) window per stage: the patch grid divided by the stage's ``window_ratio`` (one number for all
    stages or one per stage), at least 1."""
    ratios = tuple(window_ratio) if isinstance(window_ratio, (tuple, list)) else (window_ratio,) * num_stages
    if len(ratios) != num_stages or not all(r > 0 for r in ratios):
        raise ValueError(f"expected {num_stages} positive window ratios, got {window_ratio}")
    return tuple(tuple(max(1, g // r) for g in grid_size) for r in ratios)


class WindowMultiHeadAttention(nn.Module):
    """Scaled cosine attention within each window: the cosine similarity of every (query, key) pair times the head's
    learnt ``logit_scale`` (exponentiated, at most 100), plus a bias per head for the pair's relative offset that
    ``meta_mlp`` computes from the log-spaced offsets (the buffer ``relative_coordinates_log``), then an optional
    additive mask per window. ``drop_attn`` drops attention weights and ``drop_proj`` the output, in training."""

    def __init__(self, dim, num_heads, window_size, drop_attn=0.0, drop_proj=0.0, meta_hidden_dim=384):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"the width {dim} is not divisible by the number of heads {num_heads}")
        self.in_features = dim
        self.window_size = pair(window_size)
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.attn_drop = nn.Dropout(drop_attn)
        self.proj = nn.Linear(dim, dim, bias=True)
        self.proj_drop = nn.Dropout(drop_proj)
        self.meta_mlp = Mlp(2, meta_hidden_dim, num_heads, act_layer=nn.ReLU, drop=(0.125, 0.0),
                            norm_placeholder=False)
        self.logit_scale = nn.Parameter(torch.full((num_heads,), math.log(10)))
        self.register_buffer("relative_coordinates_log", log_spaced_offsets(self.window_size), persistent=False)

    def relative_positional_encodings(self):
        """The bias of every (query, key) pair of a window, per head: (1, heads, area, area)."""
        area = self.window_size[0] * self.window_size[1]
        bias = self.meta_mlp(self.relative_coordinates_log)
        bias = bias.transpose(1, 0).reshape(self.num_heads, area, area)
        return bias.unsqueeze(0)

    def forward(self, x, mask=None):
        """Windows' tokens (N * windows, area, C), with ``mask`` (windows, area, area) or None."""
        batch_windows, tokens, channels = x.shape
        qkv = self.qkv(x).view(batch_windows, tokens, 3, self.num_heads, channels // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale.reshape(1, self.num_heads, 1, 1), max=_MAX_LOGIT_SCALE).exp()
        attn = attn * logit_scale
        attn = attn + self.relative_positional_encodings()
        attn = add_window_mask(attn, mask)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch_windows, tokens, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class SwinTransformerV2CrBlock(nn.Module):
    """A block on (N, H, W, C) maps, residual post-norm: x + drop_path(norm1(window attention(x))), then
    x + drop_path(norm2(mlp(x))), then ``norm3`` on the main branch (``extra_norm``; an identity otherwise).

    ``init_values`` (None: the default ones) starts the post-norms' weights. Every ``shift_size`` other than 0
    shifts the windows; the shifted windows' mask is the buffer ``attn_mask`` (None without a shift), made for
    ``feat_size``. Unless ``always_partition``, a map side no longer than the window is one unshifted window.
    """

    def __init__(self, dim, num_heads, feat_size, window_size, shift_size=(0, 0), always_partition=False,
                 mlp_ratio=4.0, init_values=0.0, proj_drop=0.0, drop_attn=0.0, drop_path=0.0, extra_norm=False):
        super().__init__()
        self.dim = dim
        self.feat_size = tuple(feat_size)
        self.always_partition = always_partition
        self.window_size, self.shift_size = _window_and_shift(self.feat_size, pair(window_size), pair(shift_size),
                                                              always_partition)
        self.window_area = self.window_size[0] * self.window_size[1]
        self.init_values = init_values
        self.attn = WindowMultiHeadAttention(dim, num_heads, self.window_size, drop_attn=drop_attn,
                                             drop_proj=proj_drop)
        self.norm1 = nn.LayerNorm(dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=proj_drop)
        self.norm2 = nn.LayerNorm(dim)
        self.drop_path2 = drop_path_module(drop_path)
        self.norm3 = nn.LayerNorm(dim) if extra_norm else nn.Identity()
        self.register_buffer("attn_mask", shift_mask_or_none(self.feat_size, self.window_size, self.shift_size),
                             persistent=False)
        if init_values is not None:
            nn.init.constant_(self.norm1.weight, init_values)
            nn.init.constant_(self.norm2.weight, init_values)

    def forward(self, x):
        x = res_post_norm_forward(self, x)
        x = self.norm3(x)
        return x


class PatchEmbed(swin.PatchEmbed):
    """Swin's patch embedding (a strided convolution ``proj``, then ``norm`` over the channels) returning the map as
    (N, embed_dim, rows, cols); images must have the size the model was built for."""

    def forward(self, x):
        return super().forward(x).permute(0, 3, 1, 2)


class SwinTransformerV2CrStage(nn.Module):
    """One stage on (N, C, H, W) maps: ``downsample`` (patch merging to twice ``embed_dim`` channels when
    ``downscale``, else an identity), then ``depth`` blocks alternating regular and half-window-shifted windows,
    computed channels-last. A block ends with an extra norm every ``extra_norm_period`` blocks, and the last block
    does with ``extra_norm_stage``. ``drop_path``: one rate, or one per block."""

    def __init__(self, embed_dim, depth, downscale, num_heads, feat_size, window_size, always_partition=False,
                 mlp_ratio=4.0, init_values=0.0, proj_drop=0.0, drop_attn=0.0, drop_path=0.0, extra_norm_period=0,
                 extra_norm_stage=False):
        super().__init__()
        self.downscale = downscale
        self.feat_size = tuple((s + 1) // 2 for s in feat_size) if downscale else tuple(feat_size)
        if downscale:
            self.downsample = PatchMerging(embed_dim)
            embed_dim = embed_dim * 2
        else:
            self.downsample = nn.Identity()
        window_size = pair(window_size)
        self.blocks = nn.Sequential(*[
            SwinTransformerV2CrBlock(
                embed_dim, num_heads, self.feat_size, window_size,
                shift_size=tuple(0 if i % 2 == 0 else w // 2 for w in window_size),
                always_partition=always_partition, mlp_ratio=mlp_ratio, init_values=init_values, proj_drop=proj_drop,
                drop_attn=drop_attn, drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path,
                extra_norm=self._extra_norm(i, depth, extra_norm_period, extra_norm_stage))
            for i in range(depth)])

    @staticmethod
    def _extra_norm(index, depth, period, stage_end):
        """Whether the block at ``index`` ends with a norm: every ``period``-th block, and the last at a stage end."""
        if period and (index + 1) % period == 0:
            return True
        return stage_end and index + 1 == depth

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = self.downsample(x)
        x = self.blocks(x)
        x = x.permute(0, 3, 1, 2)
        return x


def init_weights_swin(model):
    """timm's optional scheme for this port (any ``weight_init`` but 'reset' or 'skip'), in module order: the
    query/key/value projections uniform within sqrt(6 / (dim + in_features)) (each of the three Glorot-scaled), the
    classifier zero, every other Linear layer Glorot-uniform; zero Linear biases."""
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        if "qkv" in name:
            bound = math.sqrt(6.0 / float(module.weight.shape[0] // 3 + module.weight.shape[1]))
            nn.init.uniform_(module.weight, -bound, bound)
        elif "head" in name:
            nn.init.zeros_(module.weight)
        else:
            nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


class SwinTransformerV2Cr(ClassifierHeadApi, nn.Module):
    """Patch embedding, stages of blocks (``depths`` blocks with ``num_heads`` heads each, the width doubling from
    ``embed_dim`` at every stage after the first; the last stage ends with a norm) and timm's classifier head
    (timm's ``SwinTransformerV2Cr``, its arguments and defaults).

    ``window_size``: one size (a number or (h, w)) for all stages or one per stage; without it the windows are the
    patch grid divided by ``window_ratio`` (one number or one per stage). ``always_partition`` keeps the windows and
    shifts even on maps no larger than a window. ``init_values`` starts the post-norms' weights (None: ones).
    ``extra_norm_period`` ends every so many blocks of a stage with a norm, ``extra_norm_stage`` every stage.
    ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or ''. Dropout: ``proj_drop_rate`` in the blocks,
    ``attn_drop_rate`` on attention weights, ``drop_rate`` before the classifier; ``drop_path_rate`` is the
    stochastic depth of the last block (rising linearly from 0 at the first). ``weight_init``: 'reset' (timm's
    default) and 'skip' keep the layers' own initialisation, anything else applies ``init_weights_swin``.
    ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, img_size=(224, 224), patch_size=4, window_size=None, window_ratio=8, always_partition=False,
                 in_chans=3, num_classes=1000, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24),
                 mlp_ratio=4.0, init_values=0.0, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0, extra_norm_period=0, extra_norm_stage=False, global_pool="avg",
                 weight_init="reset"):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.patch_size = patch_size
        self.img_size = pair(img_size)
        self.num_features = int(embed_dim * 2 ** (len(depths) - 1))
        self.feature_info = []

        self.patch_embed = PatchEmbed(self.img_size, patch_size, in_chans, embed_dim)
        grid = self.patch_embed.grid_size
        if window_size is None:
            window_size = window_sizes_from_ratio(grid, window_ratio, len(depths))
        window_sizes = stage_window_sizes(window_size, len(depths))
        self.window_size = window_sizes[0]
        rates = torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))
        stages = []
        in_dim = embed_dim
        in_scale = 1
        for i, (depth, heads) in enumerate(zip(depths, num_heads)):
            stages.append(SwinTransformerV2CrStage(
                in_dim, depth, i != 0, heads, tuple((g + in_scale - 1) // in_scale for g in grid), window_sizes[i],
                always_partition=always_partition, mlp_ratio=mlp_ratio, init_values=init_values,
                proj_drop=proj_drop_rate, drop_attn=attn_drop_rate, drop_path=rates[i].tolist(),
                extra_norm_period=extra_norm_period, extra_norm_stage=extra_norm_stage or i + 1 == len(depths)))
            if i != 0:
                in_dim *= 2
                in_scale *= 2
            self.feature_info.append(dict(num_chs=in_dim, reduction=max(pair(patch_size)) * in_scale,
                                          module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        if weight_init not in ("reset", "skip"):
            init_weights_swin(self)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's map (N, num_features, H/32, W/32), normalised."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the final map. ``stop_early`` skips the stages after the last one picked; ``norm``
        is accepted for timm's API (the stages' own norms apply)."""
        return stage_intermediates(x, self.patch_embed, self.stages, indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (and the head when asked or when stages go); returns
        the absolute indices. ``prune_norm`` is accepted for timm's API (there is no final norm)."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


def _swinv2_cr(variant, pretrained, progress, kwargs, **model_args):
    """A Swin V2 CR entrypoint's body: timm's architecture arguments at the image size of timm's configuration,
    overridable by the caller's ``kwargs``."""
    return build_model(SwinTransformerV2Cr, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def swinv2_cr_tiny_384(pretrained=False, progress=True, **kwargs):
    """Swin-T V2 CR at 384: width 96, depths (2, 2, 6, 2), 12x12 windows."""
    return _swinv2_cr("swinv2_cr_tiny_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=96,
                      depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_cr_tiny_224(pretrained=False, progress=True, **kwargs):
    """Swin-T V2 CR at 224: width 96, depths (2, 2, 6, 2), 7x7 windows."""
    return _swinv2_cr("swinv2_cr_tiny_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=96,
                      depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_cr_tiny_ns_224(pretrained=False, progress=True, **kwargs):
    """Swin-T V2 CR at 224: width 96, depths (2, 2, 6, 2), 7x7 windows, a norm at the end of every stage."""
    return _swinv2_cr("swinv2_cr_tiny_ns_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=96,
                      depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), extra_norm_stage=True)


@register_model
def swinv2_cr_small_384(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 CR at 384: width 96, depths (2, 2, 18, 2), 12x12 windows."""
    return _swinv2_cr("swinv2_cr_small_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=96,
                      depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_cr_small_224(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 CR at 224: width 96, depths (2, 2, 18, 2), 7x7 windows."""
    return _swinv2_cr("swinv2_cr_small_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=96,
                      depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swinv2_cr_small_ns_224(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 CR at 224: width 96, depths (2, 2, 18, 2), 7x7 windows, a norm at the end of every stage."""
    return _swinv2_cr("swinv2_cr_small_ns_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=96,
                      depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24), extra_norm_stage=True)


@register_model
def swinv2_cr_small_ns_256(pretrained=False, progress=True, **kwargs):
    """Swin-S V2 CR at 256: width 96, depths (2, 2, 18, 2), 8x8 windows, a norm at the end of every stage."""
    return _swinv2_cr("swinv2_cr_small_ns_256", pretrained, progress, kwargs, img_size=(256, 256), embed_dim=96,
                      depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24), extra_norm_stage=True)


@register_model
def swinv2_cr_base_384(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 CR at 384: width 128, depths (2, 2, 18, 2), 12x12 windows."""
    return _swinv2_cr("swinv2_cr_base_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=128,
                      depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swinv2_cr_base_224(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 CR at 224: width 128, depths (2, 2, 18, 2), 7x7 windows."""
    return _swinv2_cr("swinv2_cr_base_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=128,
                      depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swinv2_cr_base_ns_224(pretrained=False, progress=True, **kwargs):
    """Swin-B V2 CR at 224: width 128, depths (2, 2, 18, 2), 7x7 windows, a norm at the end of every stage."""
    return _swinv2_cr("swinv2_cr_base_ns_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=128,
                      depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32), extra_norm_stage=True)


@register_model
def swinv2_cr_large_384(pretrained=False, progress=True, **kwargs):
    """Swin-L V2 CR at 384: width 192, depths (2, 2, 18, 2), 12x12 windows."""
    return _swinv2_cr("swinv2_cr_large_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=192,
                      depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48))


@register_model
def swinv2_cr_large_224(pretrained=False, progress=True, **kwargs):
    """Swin-L V2 CR at 224: width 192, depths (2, 2, 18, 2), 7x7 windows."""
    return _swinv2_cr("swinv2_cr_large_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=192,
                      depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48))


@register_model
def swinv2_cr_huge_384(pretrained=False, progress=True, **kwargs):
    """Swin-H V2 CR at 384: width 352, depths (2, 2, 18, 2), heads 11 to 88, 12x12 windows, a norm every 6 blocks."""
    return _swinv2_cr("swinv2_cr_huge_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=352,
                      depths=(2, 2, 18, 2), num_heads=(11, 22, 44, 88), extra_norm_period=6)


@register_model
def swinv2_cr_huge_224(pretrained=False, progress=True, **kwargs):
    """Swin-H V2 CR at 224: width 352, depths (2, 2, 18, 2), heads 8 to 64, 7x7 windows, a norm every 6 blocks."""
    return _swinv2_cr("swinv2_cr_huge_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=352,
                      depths=(2, 2, 18, 2), num_heads=(8, 16, 32, 64), extra_norm_period=6)


@register_model
def swinv2_cr_giant_384(pretrained=False, progress=True, **kwargs):
    """Swin-G V2 CR at 384: width 512, depths (2, 2, 42, 2), 12x12 windows, a norm every 6 blocks."""
    return _swinv2_cr("swinv2_cr_giant_384", pretrained, progress, kwargs, img_size=(384, 384), embed_dim=512,
                      depths=(2, 2, 42, 2), num_heads=(16, 32, 64, 128), extra_norm_period=6)


@register_model
def swinv2_cr_giant_224(pretrained=False, progress=True, **kwargs):
    """Swin-G V2 CR at 224: width 512, depths (2, 2, 42, 2), 7x7 windows, a norm every 6 blocks."""
    return _swinv2_cr("swinv2_cr_giant_224", pretrained, progress, kwargs, img_size=(224, 224), embed_dim=512,
                      depths=(2, 2, 42, 2), num_heads=(16, 32, 64, 128), extra_norm_period=6)
