"""Swin Transformer V2 (Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and Resolution"): timm's
``swin_transformer_v2`` models.

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

A model runs at the image size it was built for (``img_size``; timm's weights: 256 or 384). ``features_only=True``
returns each stage's output as timm does: channels-last (N, H, W, C) maps.
"""
import math

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, drop_path_module, get_act_layer, init_linear_layers, pair
from .swin_transformer import (ClassifierHead, PatchEmbed, _window_and_shift, relative_position_index,
                               shifted_window_mask, stage_window_sizes, window_partition, window_reverse)

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


def shifted_window_attention(x, attn, window_size, shift_size, mask):
    """Window attention ``attn`` over (N, H, W, C) maps: the map cyclically shifted up and left by ``shift_size``,
    padded at the bottom and right to whole windows, cut into windows (attended with the shifted windows' ``mask``,
    or None), put back together, cropped and shifted back."""
    _, height, width, channels = x.shape
    shifted = any(shift_size)
    if shifted:
        x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    pad_h = (window_size[0] - height % window_size[0]) % window_size[0]
    pad_w = (window_size[1] - width % window_size[1]) % window_size[1]
    x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    windows = window_partition(x, window_size).view(-1, window_size[0] * window_size[1], channels)
    windows = attn(windows, mask=mask)
    windows = windows.view(-1, window_size[0], window_size[1], channels)
    x = window_reverse(windows, window_size, height + pad_h, width + pad_w)
    x = x[:, :height, :width, :]
    if shifted:
        x = torch.roll(x, shifts=shift_size, dims=(1, 2))
    return x


def shift_mask_or_none(resolution, window_size, shift_size):
    """The shifted windows' attention mask at ``resolution``, or None for unshifted windows."""
    if not any(shift_size):
        return None
    return shifted_window_mask(resolution, window_size, shift_size)


class WindowAttention(nn.Module):
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
        if qkv_bias:
            self.q_bias = nn.Parameter(torch.zeros(dim))
            self.register_buffer("k_bias", torch.zeros(dim), persistent=False)
            self.v_bias = nn.Parameter(torch.zeros(dim))
        else:
            self.q_bias = self.k_bias = self.v_bias = None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)
        self.register_buffer("relative_coords_table",
                             log_spaced_coords_table(self.window_size, self.pretrained_window_size), persistent=False)
        self.register_buffer("relative_position_index", relative_position_index(*self.window_size), persistent=False)

    def project_qkv(self, x):
        """Queries, keys and values of the tokens, concatenated: (N, tokens, 3 * dim)."""
        if self.q_bias is None:
            return self.qkv(x)
        bias = torch.cat((self.q_bias, self.k_bias, self.v_bias))
        if self.qkv_bias_separate:
            return self.qkv(x) + bias
        return F.linear(x, self.qkv.weight, bias)

    def relative_position_bias(self):
        """The bias of every (query, key) pair of a window, per head: (1, heads, area, area), in (0, 16)."""
        area = self.window_size[0] * self.window_size[1]
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        bias = table[self.relative_position_index.view(-1)].view(area, area, -1).permute(2, 0, 1)
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
        if mask is not None:
            num_windows = mask.shape[0]
            attn = attn.view(-1, num_windows, self.num_heads, tokens, tokens) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, tokens, tokens)
        attn = self.softmax(attn)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch_windows, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


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
        batch, height, width, channels = x.shape
        attended = shifted_window_attention(x, self.attn, self.window_size, self.shift_size, self.attn_mask)
        x = x + self.drop_path1(self.norm1(attended))
        x = x.reshape(batch, -1, channels)
        x = x + self.drop_path2(self.norm2(self.mlp(x)))
        x = x.reshape(batch, height, width, channels)
        return x


class PatchMerging(nn.Module):
    """Halves the resolution of (N, H, W, C) maps: each 2x2 group of positions (odd sides padded with zeros)
    concatenated to 4C channels, projected to ``out_dim`` (default 2C) by ``reduction``, then normalised (``norm``;
    V2 normalises after the projection)."""

    def __init__(self, dim, out_dim=None):
        super().__init__()
        self.dim = dim
        self.out_dim = out_dim or 2 * dim
        self.reduction = nn.Linear(4 * dim, self.out_dim, bias=False)
        self.norm = nn.LayerNorm(self.out_dim)

    def forward(self, x):
        batch, height, width, channels = x.shape
        x = F.pad(x, (0, 0, 0, width % 2, 0, height % 2))
        height, width = x.shape[1], x.shape[2]
        x = x.reshape(batch, height // 2, 2, width // 2, 2, channels).permute(0, 1, 3, 4, 2, 5).flatten(3)
        x = self.reduction(x)
        x = self.norm(x)
        return x


class SwinTransformerV2Stage(nn.Module):
    """One stage: ``downsample`` (a patch merging from ``dim`` to ``out_dim`` channels, or an identity in the first
    stage), then ``depth`` blocks alternating regular and half-window-shifted windows. ``drop_path``: one rate, or
    one per block."""

    def __init__(self, dim, out_dim, input_resolution, depth, num_heads, window_size, always_partition=False,
                 downsample=False, mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer="gelu", pretrained_window_size=0):
        super().__init__()
        if not downsample and dim != out_dim:
            raise ValueError(f"a stage without downsampling keeps its width: dim {dim} != out_dim {out_dim}")
        self.dim = dim
        self.input_resolution = tuple(input_resolution)
        if downsample:
            self.output_resolution = tuple((r + 1) // 2 for r in input_resolution)
        else:
            self.output_resolution = self.input_resolution
        self.depth = depth
        window_size = pair(window_size)
        shift_size = tuple(w // 2 for w in window_size)
        self.downsample = PatchMerging(dim, out_dim) if downsample else nn.Identity()
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

    def forward(self, x):
        x = self.downsample(x)
        for block in self.blocks:
            x = block(x)
        return x


class SwinTransformerV2(nn.Module):
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

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7, always_partition=False, mlp_ratio=4.0,
                 qkv_bias=True, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.1,
                 act_layer="gelu", pretrained_window_sizes=(0, 0, 0, 0), weight_init=""):
        super().__init__()
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' (timm's) or 'skip', got {weight_init!r}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.output_fmt = "NHWC"
        self.num_layers = len(depths)
        self.embed_dim = embed_dim
        self.num_features = int(embed_dim * 2 ** (self.num_layers - 1))
        self.feature_info = []
        widths = [int(embed_dim * 2 ** i) for i in range(self.num_layers)]

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, widths[0])
        grid = self.patch_embed.grid_size
        window_sizes = stage_window_sizes(window_size, self.num_layers)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))
        layers = []
        in_dim = widths[0]
        scale = 1
        for i in range(self.num_layers):
            resolution = ((grid[0] + scale - 1) // scale, (grid[1] + scale - 1) // scale)
            layers.append(SwinTransformerV2Stage(
                in_dim, widths[i], resolution, depths[i], num_heads[i], window_sizes[i],
                always_partition=always_partition, downsample=i > 0, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=rates[i].tolist(), act_layer=act_layer,
                pretrained_window_size=pretrained_window_sizes[i]))
            in_dim = widths[i]
            if i > 0:
                scale *= 2
            self.feature_info.append(dict(num_chs=widths[i], reduction=max(pair(patch_size)) * scale,
                                          module=f"layers.{i}"))
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(self.num_features)
        self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        if weight_init != "skip":
            self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal Linear weights (std 0.02, the position bias MLPs' too) and zero Linear
        biases, then zero post-norms in every block; the patch projection and the other norms keep their defaults,
        the logit scales log(10)."""
        init_linear_layers(self)
        for stage in self.layers:
            stage.init_respostnorm()

    def get_classifier(self):
        """The final linear layer."""
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) classifier for ``num_classes`` (0: an identity), after new pooling when
        ``global_pool`` is given."""
        self.num_classes = num_classes
        self.head.reset(num_classes, pool_type=global_pool, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features
        if global_pool is not None:
            self.global_pool = global_pool

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised last-stage map (N, H/32, W/32, num_features)."""
        x = self.patch_embed(x)
        x = self.layers(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout; then the classifier unless ``pre_logits``."""
        return self.head(x, pre_logits=pre_logits)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map, normalised if the last stage ran. ``norm`` applies
        the final norm to the last stage's output; ``stop_early`` skips the stages after the last one picked."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.layers), indices)
        num_stages = len(self.layers)
        stages = list(self.layers)[:max(take) + 1] if stop_early else list(self.layers)
        x = self.patch_embed(x)
        intermediates = []
        i = 0
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                y = self.norm(x) if norm and i == num_stages - 1 else x
                intermediates.append(y.permute(0, 3, 1, 2).contiguous())
        if intermediates_only:
            return intermediates
        if i == num_stages - 1:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (and the final norm when asked or when stages go,
        the head when asked or when stages go); returns the absolute indices."""
        take = take_indices(len(self.layers), indices)
        last = max(take)
        prune_end = last < len(self.layers) - 1
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        self.layers = nn.Sequential(*list(self.layers)[:last + 1])
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


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
