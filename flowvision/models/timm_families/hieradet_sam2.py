"""HieraDet, the image encoder of SAM 2 (Ravi et al. 2024, "SAM 2: Segment Anything in Images and Videos"), built on
Hiera (Ryali et al. 2023, "Hiera: A Hierarchical Vision Transformer without the Bells-and-Whistles"):
sam2_hiera_tiny, sam2_hiera_small, sam2_hiera_base_plus and sam2_hiera_large, and timm's untrained classifier
hieradet_small (no published weights).

A hierarchical vision transformer that works on plain (N, H, W, C) maps rather than Hiera's unrolled tokens: a
7x7 stride-4 convolution embeds the image, a position embedding is added (a small global table resized bicubically
to the token grid plus one window's table tiled over it, as in "Window Attention is Bugged"), and four stages of
pre-norm blocks follow. Blocks attend within square windows (the map padded to whole windows and cut back after)
or, in a few chosen blocks, globally; the first block of each later stage max-pools its queries and its projected
shortcut by 2x2, doubling width and heads, and keeps the previous stage's window size (halved by the pooling). The
head pools the last map, normalises it and classifies; SAM 2's weights have no classifier. Model names, module
names, ``state_dict`` keys and (seeded) initialisation follow timm's ``hieradet_sam2`` module, so its checkpoints
load directly.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHeadApi, Mlp, drop_path_module, get_act_layer, pair
from ._norm import LayerNorm
from .hiera import _init_layers, _stage_features
from .mambaout import ClNormMlpClassifierHead
from .vision_transformer import LayerScale

__all__ = []

_NORM_LAYERS = {"layernorm": LayerNorm}


def _norm_layer(norm_layer):
    """A norm class from timm's name for it ('LayerNorm': eps 1e-6) or the class itself."""
    return _NORM_LAYERS[norm_layer.lower()] if isinstance(norm_layer, str) else norm_layer


def _act_layer(act_layer):
    """An activation class from timm's name for it ('GELU', 'gelu_tanh'...) or the class itself."""
    return get_act_layer(act_layer.lower()) if isinstance(act_layer, str) else act_layer


def _padded_size(height, width, window_size):
    """The map's (height, width) rounded up to whole windows."""
    return (math.ceil(height / window_size[0]) * window_size[0],
            math.ceil(width / window_size[1]) * window_size[1])


def window_partition(x, window_size):
    """An (N, H, W, C) map whose sides are whole windows -> its windows, (N * windows, wh, ww, C), row by row."""
    batch, height, width, channels = x.shape
    wh, ww = window_size
    x = x.view(batch, height // wh, wh, width // ww, ww, channels)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, wh, ww, channels)


def window_unpartition(windows, window_size, size):
    """``window_partition`` undone: (N * windows, wh, ww, C) windows -> the (N, H, W, C) map of ``size``."""
    height, width = size
    wh, ww = window_size
    batch = windows.shape[0] // ((height // wh) * (width // ww))
    x = windows.view(batch, height // wh, width // ww, wh, ww, -1)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(batch, height, width, -1)


class MultiScaleAttention(nn.Module):
    """Multi-head self-attention over an (N, H, W, C) map (a batch of windows, or whole maps): ``qkv`` projects from
    ``dim`` to ``dim_out`` wide queries, keys and values; ``q_pool`` (a max pooling, or None) shrinks the queries'
    grid, and so the output's; ``proj`` mixes the heads."""

    def __init__(self, dim, dim_out, num_heads, q_pool=None):
        super().__init__()
        self.dim = dim
        self.dim_out = dim_out
        self.num_heads = num_heads
        self.q_pool = q_pool
        self.qkv = nn.Linear(dim, dim_out * 3)
        self.proj = nn.Linear(dim_out, dim_out)

    def forward(self, x):
        batch, height, width, _ = x.shape
        qkv = self.qkv(x).reshape(batch, height * width, 3, self.num_heads, -1)
        q, k, v = qkv.unbind(2)
        if self.q_pool is not None:
            q = self.q_pool(q.reshape(batch, height, width, -1).permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
            height, width = q.shape[1:3]
            q = q.reshape(batch, height * width, self.num_heads, -1)
        x = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x.transpose(1, 2).reshape(batch, height, width, -1)
        x = self.proj(x)
        return x


class MultiScaleBlock(nn.Module):
    """HieraDet's pre-norm block on (N, H, W, C) maps: x + drop_path1(ls1(attn(norm1(x)))), then
    x + drop_path2(ls2(mlp(norm2(x)))).

    Attention runs within ``window_size`` windows (the map padded at the bottom and right to whole windows, the
    padding cut off after) or, with ``window_size`` 0, over the whole map. A block widening from ``dim`` to
    ``dim_out`` takes its shortcut from the normed input through ``proj``; with ``q_stride`` it max-pools the
    shortcut (``pool``) and, inside each window, the queries (the attention's own copy, ``attn.q_pool``).
    ``init_values`` switches on layer scale (``ls1``, ``ls2``), ``drop_path`` is both branches' stochastic depth.
    """

    def __init__(self, dim, dim_out, num_heads, mlp_ratio=4.0, q_stride=None, norm_layer="LayerNorm",
                 act_layer="GELU", window_size=0, init_values=None, drop_path=0.0):
        super().__init__()
        norm_layer = _norm_layer(norm_layer)
        self.window_size = pair(window_size)
        self.is_windowed = any(self.window_size)
        self.dim = dim
        self.dim_out = dim_out
        self.q_stride = q_stride
        self.proj = nn.Linear(dim, dim_out) if dim != dim_out else nn.Identity()
        self.pool = nn.MaxPool2d(kernel_size=q_stride, stride=q_stride, ceil_mode=False) if q_stride else None
        self.norm1 = norm_layer(dim)
        q_pool = nn.MaxPool2d(kernel_size=q_stride, stride=q_stride, ceil_mode=False) if q_stride else None
        self.attn = MultiScaleAttention(dim, dim_out, num_heads=num_heads, q_pool=q_pool)
        self.ls1 = LayerScale(dim_out, init_values) if init_values is not None else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim_out)
        self.mlp = Mlp(dim_out, int(dim_out * mlp_ratio), act_layer=_act_layer(act_layer))
        self.ls2 = LayerScale(dim_out, init_values) if init_values is not None else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def _shortcut(self, x, x_norm):
        """The residual path: the input, or (widening) the projected normed input, pooled where queries are."""
        if self.dim == self.dim_out:
            return x
        shortcut = self.proj(x_norm)
        if self.pool is not None:
            shortcut = self.pool(shortcut.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return shortcut

    def _attend(self, x, out_size):
        """Attention over the normed map ``x``, windowed where the block is; ``out_size`` is the output's (pooled)
        height and width."""
        if not self.is_windowed:
            return self.attn(x)
        height, width = x.shape[1:3]
        padded = _padded_size(height, width, self.window_size)
        x = F.pad(x, (0, 0, 0, padded[1] - width, 0, padded[0] - height))
        x = self.attn(window_partition(x, self.window_size))
        window_size = self.window_size
        if self.q_stride is not None:
            window_size = (window_size[0] // self.q_stride[0], window_size[1] // self.q_stride[1])
        x = window_unpartition(x, window_size, _padded_size(*out_size, window_size))
        return x[:, :out_size[0], :out_size[1], :]

    def forward(self, x):
        x_norm = self.norm1(x)
        shortcut = self._shortcut(x, x_norm)
        x = self._attend(x_norm, shortcut.shape[1:3])
        x = shortcut + self.drop_path1(self.ls1(x))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class HieraPatchEmbed(nn.Module):
    """Patch embedding by one convolution (``proj``), giving a channels-last (N, H, W, C) map."""

    def __init__(self, kernel_size=(7, 7), stride=(4, 4), padding=(3, 3), in_chans=3, embed_dim=768):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.proj(x).permute(0, 2, 3, 1)


class HieraDet(ClassifierHeadApi, nn.Module):
    """HieraDet: ``patch_embed`` (a ``patch_kernel`` convolution of stride ``patch_stride``), the position tables
    (``pos_embed``, ``global_pos_size``, resized to the token grid; ``pos_embed_window``, one first-stage window,
    tiled), the blocks of ``stages`` (``blocks``) and the head (pooling ``global_pool``, norm, dropout
    ``drop_rate``, ``fc``).

    Each stage after the first multiplies the width by ``dim_mul`` and the heads by ``head_mul``; the first
    ``q_pool`` of them pool by ``q_stride`` in their first block. ``window_spec`` is each stage's window size; a
    stage's first block keeps the previous stage's; the blocks in ``global_att_blocks`` attend globally. The token
    grid must be a whole number of first-stage windows, and the pooled blocks' windows must tile their maps.
    Initialisation: truncated-normal position tables, then timm's ViT scheme (``weight_init=''``) or its JAX one
    (``'jax'``; ``'skip'`` for none), ``fix_init`` rescaling each block's output layers by depth, and the classifier
    scaled by ``head_init_scale``. timm's ViT-style patch embedding (``patch_size``) is not ported: no variant
    uses it.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = staticmethod(_stage_features)

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96, num_heads=1,
                 patch_kernel=(7, 7), patch_stride=(4, 4), patch_padding=(3, 3), patch_size=None, q_pool=3,
                 q_stride=(2, 2), stages=(2, 3, 16, 3), dim_mul=2.0, head_mul=2.0, global_pos_size=(7, 7),
                 window_spec=(8, 4, 14, 7), global_att_blocks=(12, 16, 20), init_values=None, weight_init="",
                 fix_init=True, head_init_scale=0.001, drop_rate=0.0, drop_path_rate=0.0, norm_layer="LayerNorm",
                 act_layer="GELU"):
        super().__init__()
        if patch_size is not None:
            raise NotImplementedError("the ViT-style patch embedding (patch_size) is not ported")
        if len(stages) != len(window_spec):
            raise ValueError(f"window_spec needs one window size per stage ({len(stages)}), got {window_spec}")
        if not 0 <= q_pool < len(stages):
            raise ValueError(f"q_pool ({q_pool}) must be between 0 and the number of stages less one")
        norm_layer = _norm_layer(norm_layer)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.window_spec = window_spec
        self.output_fmt = "NHWC"
        self.q_stride = q_stride
        self.stage_ends = [sum(stages[:i]) - 1 for i in range(1, len(stages) + 1)]
        self.q_pool_blocks = [end + 1 for end in self.stage_ends[:-1]][:q_pool]
        self.patch_embed = HieraPatchEmbed(patch_kernel, patch_stride, patch_padding, in_chans, embed_dim)
        self.global_att_blocks = global_att_blocks
        self.global_pos_size = global_pos_size
        self.pos_embed = nn.Parameter(torch.zeros(1, embed_dim, *global_pos_size))
        self.pos_embed_window = nn.Parameter(torch.zeros(1, embed_dim, window_spec[0], window_spec[0]))
        self.blocks, self.feature_info = self._make_blocks(
            embed_dim, num_heads, stages, dim_mul, head_mul, drop_path_rate,
            dict(norm_layer=norm_layer, act_layer=act_layer, init_values=init_values))
        self.num_features = self.blocks[-1].dim_out
        self.head = ClNormMlpClassifierHead(self.num_features, num_classes, pool_type=global_pool,
                                            drop_rate=drop_rate, norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        self._init_weights(weight_init, fix_init, head_init_scale)

    def _make_blocks(self, dim, num_heads, stages, dim_mul, head_mul, drop_path_rate, block_args):
        """The blocks (timm's linear stochastic depth over all of them; a stage's first block widens, pools and
        keeps the previous stage's window) and the stage ends' feature_info."""
        blocks = nn.Sequential()
        feature_info = []
        stage = 0
        for block_idx, drop_path in enumerate(torch.linspace(0, drop_path_rate, sum(stages)).tolist()):
            dim_out = dim
            window_size = self.window_spec[stage]
            if self.global_att_blocks is not None and block_idx in self.global_att_blocks:
                window_size = 0
            if block_idx - 1 in self.stage_ends:
                dim_out = int(dim * dim_mul)
                num_heads = int(num_heads * head_mul)
                stage += 1
            q_stride = self.q_stride if block_idx in self.q_pool_blocks else None
            blocks.append(MultiScaleBlock(dim, dim_out, num_heads, q_stride=q_stride, window_size=window_size,
                                          drop_path=drop_path, **block_args))
            dim = dim_out
            if block_idx in self.stage_ends:
                feature_info.append(dict(num_chs=dim_out, reduction=2 ** (stage + 2),
                                         module=f"blocks.{self.stage_ends[stage]}"))
        return blocks, feature_info

    def _init_weights(self, weight_init, fix_init, head_init_scale):
        """timm's init, in its order: truncated-normal position tables; then (unless 'skip') per layer, the
        classifier zeroed and, for 'jax', Xavier-uniform Linear weights (biases N(0, 1e-6 ** 2) in the MLPs, zero
        elsewhere) and a LeCun-normal patch embedding, otherwise truncated-normal (std 0.02) weights and 0.02 Linear
        biases (Hiera's scheme); the blocks' output layers divided by sqrt(2 * depth); the classifier scaled."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.trunc_normal_(self.pos_embed_window, std=0.02)
        _init_layers(self, weight_init, fix_init, head_init_scale)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool``
        if given; ``reset_other`` removes the head's norm too."""
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features

    def _pos_embed(self, x):
        """The (N, H, W, C) tokens plus the global table resized (bicubic) to their grid and the window table tiled
        over it."""
        height, width = x.shape[1:3]
        pos_embed = F.interpolate(self.pos_embed, size=(height, width), mode="bicubic")
        window = self.pos_embed_window
        tiles = (pos_embed.shape[-2] // window.shape[-2], pos_embed.shape[-1] // window.shape[-1])
        pos_embed = pos_embed + window.tile(tiles)
        return x + pos_embed.permute(0, 2, 3, 1)

    def _taken_blocks(self, indices, coarse):
        """The absolute block indices that ``indices`` picks among the stage ends (``coarse``) or all blocks."""
        if coarse:
            return [self.stage_ends[i] for i in take_indices(len(self.stage_ends), indices)]
        return take_indices(len(self.blocks), indices)

    def forward_features(self, x):
        """The last block's (N, H / 32, W / 32, C) map, channels last."""
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.blocks(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=True, output_fmt="NCHW",
                              intermediates_only=False, coarse=True):
        """timm's ``forward_intermediates``: the outputs of the stages (``coarse``) or blocks that ``indices`` picks
        (None: all; n: the last n; or a list), as (N, C, H, W) maps (or NHWC), and the final map unless
        ``intermediates_only``; ``stop_early`` skips the blocks after the last one picked. ``norm`` is not supported
        (as in timm)."""
        if norm:
            raise ValueError("normalisation of the intermediates is not supported")
        if output_fmt not in ("NCHW", "NHWC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NHWC', got {output_fmt!r}")
        taken = self._taken_blocks(indices, coarse)
        blocks = list(self.blocks)[:max(taken) + 1] if stop_early else list(self.blocks)
        x = self._pos_embed(self.patch_embed(x))
        intermediates = []
        for block_idx, block in enumerate(blocks):
            x = block(x)
            if block_idx in taken:
                intermediates.append(x.permute(0, 3, 1, 2) if output_fmt == "NCHW" else x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, coarse=True):
        """Drop the blocks after the last one ``indices`` picks (stages if ``coarse``); the head (its norm too)
        goes where ``prune_head`` or where blocks went, and then the features are those of the last block kept.
        Returns the indices (of stages if ``coarse``)."""
        taken = take_indices(len(self.stage_ends) if coarse else len(self.blocks), indices)
        last_block = self.stage_ends[max(taken)] if coarse else max(taken)
        prune_end = last_block < len(self.blocks) - 1
        self.blocks = self.blocks[:last_block + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.blocks[-1].dim_out
        if prune_head or prune_end:
            self.reset_classifier(0, reset_other=True)
        return taken


def _create_hiera_det(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives the four stages' maps (or those of ``out_indices``), as timm's feature getter."""
    return build_model(HieraDet, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def sam2_hiera_tiny(pretrained=False, progress=True, **kwargs):
    """SAM 2 Hiera-T encoder (stages of 1, 2, 7 and 2 blocks, 96 wide; global attention in blocks 5, 7 and 9)."""
    return _create_hiera_det("sam2_hiera_tiny", pretrained, progress, kwargs, stages=(1, 2, 7, 2),
                             global_att_blocks=(5, 7, 9))


@register_model
def sam2_hiera_small(pretrained=False, progress=True, **kwargs):
    """SAM 2 Hiera-S encoder (stages of 1, 2, 11 and 2 blocks, 96 wide; global attention in blocks 7, 10, 13)."""
    return _create_hiera_det("sam2_hiera_small", pretrained, progress, kwargs, stages=(1, 2, 11, 2),
                             global_att_blocks=(7, 10, 13))


@register_model
def sam2_hiera_base_plus(pretrained=False, progress=True, **kwargs):
    """SAM 2 Hiera-B+ encoder (stages of 2, 3, 16 and 3 blocks, 112 wide, 2 heads, a 14x14 position table)."""
    return _create_hiera_det("sam2_hiera_base_plus", pretrained, progress, kwargs, embed_dim=112, num_heads=2,
                             global_pos_size=(14, 14))


@register_model
def sam2_hiera_large(pretrained=False, progress=True, **kwargs):
    """SAM 2 Hiera-L encoder (stages of 2, 6, 36 and 4 blocks, 144 wide, 2 heads, windows of 8, 4, 16 and 8)."""
    return _create_hiera_det("sam2_hiera_large", pretrained, progress, kwargs, embed_dim=144, num_heads=2,
                             stages=(2, 6, 36, 4), global_att_blocks=(23, 33, 43), window_spec=(8, 4, 16, 8))


@register_model
def hieradet_small(pretrained=False, progress=True, **kwargs):
    """HieraDet-S classifier (no published weights): SAM 2's Hiera-S with windows of 8, 4, 16 and 8 and layer scale."""
    return _create_hiera_det("hieradet_small", pretrained, progress, kwargs, stages=(1, 2, 11, 2),
                             global_att_blocks=(7, 10, 13), window_spec=(8, 4, 16, 8), init_values=1e-5)
