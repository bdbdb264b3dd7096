"""Swin Transformer (Liu et al. 2021, "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows";
Chen et al. 2021, "Searching the Search Space of Vision Transformer" for the S3 variants): timm's Swin models.

The image is cut into 4x4 patches, embedded and normalised; four stages follow, each but the first starting with a
patch merging layer that halves the resolution and doubles the width. A block attends within non-overlapping windows
(with a learnt bias per relative position and head), and every other block shifts the windows by half a window, so
information crosses window borders; the shifted windows that wrap around the image are masked. The final map is
normalised, averaged and classified. The maps stay channels-last (N, H, W, C) throughout, as in timm.

This is timm's ``SwinTransformer``: model names, module names, ``state_dict`` keys (the relative position indices and
attention masks are non-persistent buffers, as in timm), defaults (stochastic depth 0.1) and initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. torchvision's Swin models (``swin_t``...,
with torchvision's keys) are ``flowvision.models.swin_transformer``.

A model runs at the image size it was built for (``img_size``). ``features_only=True`` returns each stage's output
as timm does: channels-last (N, H, W, C) maps; ``forward_intermediates`` gives them as (N, C, H, W).
"""

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHeadApi, Mlp, drop_path_module, init_linear_layers, pair, trunc_normal_
from ._pos_embed_rel import gen_relative_position_index, lookup_rel_pos_bias

__all__ = []

_POOL_TYPES = ("", "avg", "max", "avgmax", "catavgmax")
_MASKED = -100.0


def _per_stage(value, num_stages):
    """``value`` once per stage: a sequence as it is, anything else repeated."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * num_stages


def stage_window_sizes(window_size, num_stages):
    """One (height, width) window per stage from timm's spec: a number or an (h, w) pair for every stage, or one
    number or pair per stage (a sequence of two numbers always means one (h, w) pair)."""
    if not isinstance(window_size, (tuple, list)):
        window_size = (window_size,) * num_stages
    elif len(window_size) == 2 and not isinstance(window_size[0], (tuple, list)):
        window_size = (tuple(window_size),) * num_stages
    if len(window_size) != num_stages:
        raise ValueError(f"expected {num_stages} stage window sizes, got {window_size}")
    window_size = tuple(pair(w) for w in window_size)
    if not all(w > 0 for size in window_size for w in size):
        raise ValueError(f"window sizes must be positive, got {window_size}")
    return window_size


def window_partition(x, window_size):
    """(N, H, W, C) maps (H and W multiples of the window) -> (N * windows, window height, window width, C), the
    windows of each image in row-major order."""
    batch, height, width, channels = x.shape
    win_h, win_w = window_size
    x = x.view(batch, height // win_h, win_h, width // win_w, win_w, channels)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, win_h, win_w, channels)


def window_reverse(windows, window_size, height, width):
    """The inverse of ``window_partition``: windows back to (N, height, width, C) maps."""
    channels = windows.shape[-1]
    win_h, win_w = window_size
    x = windows.view(-1, height // win_h, width // win_w, win_h, win_w, channels)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, height, width, channels)


def shifted_window_mask(resolution, window_size, shift_size):
    """The additive attention mask of shifted windows, (windows, area, area): 0 between tokens of the same region of
    the cyclically shifted map, -100 between tokens that were not neighbours before the shift. The map is padded to
    whole windows first, as the block pads it."""
    win_h, win_w = window_size
    height = -(-resolution[0] // win_h) * win_h
    width = -(-resolution[1] // win_w) * win_w
    regions = np.zeros((height, width), dtype=np.float32)
    label = 0
    for rows in (slice(0, -win_h), slice(-win_h, -shift_size[0]), slice(-shift_size[0], None)):
        for cols in (slice(0, -win_w), slice(-win_w, -shift_size[1]), slice(-shift_size[1], None)):
            regions[rows, cols] = label
            label += 1
    windows = regions.reshape(height // win_h, win_h, width // win_w, win_w).transpose(0, 2, 1, 3)
    windows = windows.reshape(-1, win_h * win_w)
    different = windows[:, None, :] != windows[:, :, None]
    return torch.from_numpy(np.where(different, _MASKED, 0.0).astype(np.float32))


def shift_mask_or_none(resolution, window_size, shift_size):
    """The shifted windows' attention mask at ``resolution``, or None for unshifted windows."""
    if not any(shift_size):
        return None
    return shifted_window_mask(resolution, window_size, shift_size)


def add_window_mask(attn, mask):
    """Attention logits (N * windows, heads, area, area) plus each window's additive ``mask`` (windows, area, area),
    or as they are for None."""
    if mask is None:
        return attn
    num_windows, num_heads, tokens = mask.shape[0], attn.shape[1], attn.shape[-1]
    attn = attn.view(-1, num_windows, num_heads, tokens, tokens) + mask.unsqueeze(1).unsqueeze(0)
    return attn.view(-1, num_heads, tokens, tokens)


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


class WindowAttention(nn.Module):
    """Multi-head self-attention within each window, with a learnt bias per head for every relative position of a
    (query, key) pair (``relative_position_bias_table``, (2 * win_h - 1) * (2 * win_w - 1) rows, looked up through the
    fixed buffer ``relative_position_index``), and an optional additive mask per window.

    ``head_dim`` sets the channels of a head (default: dim / num_heads); ``attn_drop`` drops attention weights and
    ``proj_drop`` the output, in training.
    """

    def __init__(self, dim, num_heads, head_dim=None, window_size=7, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.dim = dim
        self.window_size = pair(window_size)
        win_h, win_w = self.window_size
        self.window_area = win_h * win_w
        self.num_heads = num_heads
        head_dim = head_dim or dim // num_heads
        attn_dim = head_dim * num_heads
        self.scale = head_dim ** -0.5
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * win_h - 1) * (2 * win_w - 1), num_heads))
        index = gen_relative_position_index(self.window_size)
        self.register_buffer("relative_position_index", index, persistent=False)
        self.qkv = nn.Linear(dim, attn_dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(attn_dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)
        trunc_normal_(self.relative_position_bias_table, std=0.02)

    def relative_position_bias(self):
        """The bias of every (query, key) pair of a window, per head: (1, heads, area, area)."""
        bias = lookup_rel_pos_bias(self.relative_position_bias_table, self.relative_position_index, self.window_area)
        return bias.unsqueeze(0)

    def forward(self, x, mask=None):
        """Windows' tokens (N * windows, area, C), with ``mask`` (windows, area, area) or None."""
        batch_windows, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch_windows, tokens, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn + self.relative_position_bias()
        attn = add_window_mask(attn, mask)
        attn = self.softmax(attn)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.transpose(1, 2).reshape(batch_windows, tokens, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


def _window_and_shift(resolution, window_size, shift_size, always_partition):
    """The window and shift a block uses at ``resolution``: unless ``always_partition``, a side no longer than the
    window is one whole window, without a shift."""
    if always_partition:
        return window_size, shift_size
    window = tuple(r if r <= w else w for r, w in zip(resolution, window_size))
    shift = tuple(0 if r <= w else s for r, w, s in zip(resolution, window, shift_size))
    return window, shift


class SwinTransformerBlock(nn.Module):
    """A Swin block on (N, H, W, C) maps: x + drop_path(window attention(norm1(x))), then x + drop_path(mlp(norm2(x))).

    The attention runs on the map cyclically shifted up and left by ``shift_size`` (0: regular windows), padded at
    the bottom and right to whole windows, then undoes both; the shifted windows' mask is the buffer ``attn_mask``
    (None without a shift), made for ``input_resolution``.
    """

    def __init__(self, dim, input_resolution, num_heads=4, head_dim=None, window_size=7, shift_size=0,
                 always_partition=False, mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=0.0):
        super().__init__()
        self.dim = dim
        self.input_resolution = tuple(input_resolution)
        self.always_partition = always_partition
        self.window_size, self.shift_size = _window_and_shift(self.input_resolution, pair(window_size),
                                                              pair(shift_size), always_partition)
        self.window_area = self.window_size[0] * self.window_size[1]
        self.mlp_ratio = mlp_ratio
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention(dim, num_heads, head_dim=head_dim, window_size=self.window_size, qkv_bias=qkv_bias,
                                    attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=proj_drop)
        self.drop_path2 = drop_path_module(drop_path)
        mask = shift_mask_or_none(self.input_resolution, self.window_size, self.shift_size)
        self.register_buffer("attn_mask", mask, persistent=False)

    def forward(self, x):
        batch, height, width, channels = x.shape
        attended = shifted_window_attention(self.norm1(x), self.attn, self.window_size, self.shift_size, self.attn_mask)
        x = x + self.drop_path1(attended)
        x = x.reshape(batch, -1, channels)
        x = x + self.drop_path2(self.mlp(self.norm2(x)))
        x = x.reshape(batch, height, width, channels)
        return x


def merge_2x2(x):
    """(N, H, W, C) maps -> (N, H / 2, W / 2, 4C): each 2x2 group of positions (odd sides padded with zeros)
    concatenated, as patch merging gathers them."""
    batch, height, width, channels = x.shape
    x = F.pad(x, (0, 0, 0, width % 2, 0, height % 2))
    height, width = x.shape[1], x.shape[2]
    return x.reshape(batch, height // 2, 2, width // 2, 2, channels).permute(0, 1, 3, 4, 2, 5).flatten(3)


class PatchMerging(nn.Module):
    """Halves the resolution of (N, H, W, C) maps: each 2x2 group of positions (``merge_2x2``) normalised
    (``norm``) and projected to ``out_dim`` (default 2C) by ``reduction``."""

    def __init__(self, dim, out_dim=None):
        super().__init__()
        self.dim = dim
        self.out_dim = out_dim or 2 * dim
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, self.out_dim, bias=False)

    def forward(self, x):
        x = merge_2x2(x)
        x = self.norm(x)
        x = self.reduction(x)
        return x


class StageBase(nn.Module):
    """What the stages of Swin V1 and V2 share before their blocks: the input width ``dim``, the input and output
    resolutions, the ``depth`` and the ``downsample`` layer; ``forward`` runs it, then the blocks."""

    def _add_downsample(self, dim, out_dim, input_resolution, depth, downsample, merging_layer):
        """``downsample``: ``merging_layer`` from ``dim`` to ``out_dim`` channels, halving the resolution, or an
        identity (the first stage, which keeps its width)."""
        if not downsample and dim != out_dim:
            raise ValueError(f"a stage without downsampling keeps its width: dim {dim} != out_dim {out_dim}")
        self.dim = dim
        self.input_resolution = tuple(input_resolution)
        if downsample:
            self.output_resolution = tuple((r + 1) // 2 for r in input_resolution)
        else:
            self.output_resolution = self.input_resolution
        self.depth = depth
        self.downsample = merging_layer(dim, out_dim) if downsample else nn.Identity()

    def forward(self, x):
        x = self.downsample(x)
        for block in self.blocks:
            x = block(x)
        return x


class SwinTransformerStage(StageBase):
    """One stage: ``downsample`` (a patch merging from ``dim`` to ``out_dim`` channels, or an identity in the first
    stage), then ``depth`` blocks alternating regular and half-window-shifted windows. ``drop_path``: one rate, or
    one per block."""

    def __init__(self, dim, out_dim, input_resolution, depth, downsample=True, num_heads=4, head_dim=None,
                 window_size=7, always_partition=False, mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0,
                 drop_path=0.0):
        super().__init__()
        self._add_downsample(dim, out_dim, input_resolution, depth, downsample, PatchMerging)
        window_size = pair(window_size)
        shift_size = tuple(w // 2 for w in window_size)
        self.blocks = nn.Sequential(*[
            SwinTransformerBlock(out_dim, self.output_resolution, num_heads=num_heads, head_dim=head_dim,
                                 window_size=window_size, shift_size=0 if i % 2 == 0 else shift_size,
                                 always_partition=always_partition, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                                 proj_drop=proj_drop, attn_drop=attn_drop,
                                 drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path)
            for i in range(depth)])


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` patches projected to ``embed_dim`` by a strided convolution ``proj`` and
    normalised (``norm``), as an (N, rows, cols, embed_dim) channels-last map. Images must have the size the model
    was built for (timm's strict image size)."""

    def __init__(self, img_size=224, patch_size=4, in_chans=3, embed_dim=96):
        super().__init__()
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.grid_size = (self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x):
        height, width = x.shape[-2:]
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the model's ({self.img_size[0]}x"
                             f"{self.img_size[1]}): build the model with img_size=({height}, {width})")
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class ChannelsLastPool(nn.Module):
    """Global pooling of (N, H, W, C) maps over H and W to (N, C): 'avg', 'max', 'avgmax' (their mean) or
    'catavgmax' (both, concatenated: 2C)."""

    def __init__(self, pool_type):
        super().__init__()
        self.pool_type = pool_type

    def forward(self, x):
        if self.pool_type == "avg":
            return x.mean((1, 2))
        if self.pool_type == "max":
            return x.amax((1, 2))
        if self.pool_type == "avgmax":
            return 0.5 * x.mean((1, 2)) + 0.5 * x.amax((1, 2))
        return torch.cat((x.mean((1, 2)), x.amax((1, 2))), 1)


class SelectAdaptivePool2d(nn.Module):
    """timm's global pooling of channels-last maps chosen by name (``pool``; '' passes the map through), and its
    ``flatten`` slot (an identity: the pooled features are already flat)."""

    def __init__(self, pool_type="avg"):
        super().__init__()
        if pool_type not in _POOL_TYPES:
            raise ValueError(f"unknown global_pool {pool_type!r}: expected one of {_POOL_TYPES}")
        self.pool_type = pool_type
        self.pool = ChannelsLastPool(pool_type) if pool_type else nn.Identity()
        self.flatten = nn.Identity()

    def feat_mult(self):
        """How many times the input's channels the pooled features have (2 for 'catavgmax')."""
        return 2 if self.pool_type == "catavgmax" else 1

    def forward(self, x):
        x = self.pool(x)
        x = self.flatten(x)
        return x

    def __repr__(self):
        return f"{type(self).__name__}(pool_type={self.pool_type}, flatten={self.flatten})"


class ClassifierHead(nn.Module):
    """timm's head on channels-last maps: ``global_pool``, dropout (``drop``), the linear classifier ``fc`` (an
    identity for ``num_classes=0``) and timm's ``flatten`` slot (an identity)."""

    def __init__(self, in_features, num_classes, pool_type="avg", drop_rate=0.0):
        super().__init__()
        self.in_features = in_features
        self.global_pool = SelectAdaptivePool2d(pool_type)
        self.num_features = in_features * self.global_pool.feat_mult()
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.flatten = nn.Identity()

    def reset(self, num_classes, pool_type=None):
        """A fresh classifier for ``num_classes`` (0: an identity) on ``in_features`` channels, after a new pooling
        when ``pool_type`` differs from the current one."""
        if pool_type is not None and pool_type != self.global_pool.pool_type:
            self.global_pool = SelectAdaptivePool2d(pool_type)
            self.global_pool.train(self.training)
        self.num_features = self.in_features * self.global_pool.feat_mult()
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.drop(x)
        if pre_logits:
            return self.flatten(x)
        x = self.fc(x)
        return self.flatten(x)


class SwinBase(ClassifierHeadApi, nn.Module):
    """What Swin V1 and V2 share around their stages: the patch embedding, the stages (``layers``, the width
    doubling from ``embed_dim`` at every stage after the first), the final norm, timm's classifier head on
    channels-last maps and timm's model API."""

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def _build(self, img_size, patch_size, in_chans, num_classes, global_pool, embed_dim, depths, window_size,
               drop_rate, drop_path_rate, weight_init, stage_cls, stage_args, **common_args):
        """Build the model: stage i is ``stage_cls`` from the previous width to its own at its input resolution,
        with its window, its stochastic depth rates, ``stage_args[i]`` and ``common_args``."""
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
            layers.append(stage_cls(in_dim, widths[i], resolution, depths[i], downsample=i > 0,
                                    window_size=window_sizes[i], drop_path=rates[i].tolist(), **stage_args[i],
                                    **common_args))
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
        """timm's scheme: truncated-normal Linear weights (std 0.02) and zero Linear biases; the patch projection
        and the norms keep their defaults, the relative position bias tables their truncated normals (std 0.02)."""
        init_linear_layers(self)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised last-stage map (N, H/32, W/32, num_features)."""
        x = self.patch_embed(x)
        x = self.layers(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map, normalised if the last stage ran. ``norm`` applies
        the final norm to the last stage's output; ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self.layers, indices, stop_early, output_fmt)
        num_stages = len(self.layers)
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
        take, prune_end = prune_stages(self, "layers", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


class SwinTransformer(SwinBase):
    """Patch embedding, stages of Swin blocks (``depths`` blocks with ``num_heads`` heads each, the width doubling
    from ``embed_dim`` at every stage after the first), a final norm and timm's classifier head (timm's
    ``SwinTransformer``, its arguments and defaults).

    ``window_size``: one size (a number or (h, w)) for all stages or one per stage; ``head_dim`` and ``mlp_ratio``:
    one value or one per stage. ``always_partition`` keeps the windows and shifts even on maps no larger than a
    window (by default such a map is one unshifted window). ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or
    '' (the head classifies every position of the map). Dropout: ``proj_drop_rate`` in the blocks,
    ``attn_drop_rate`` on attention weights, ``drop_rate`` before the classifier; ``drop_path_rate`` is the
    stochastic depth of the last block (rising linearly from 0 at the first). ``weight_init='skip'`` leaves the
    layers' default initialisation. ``num_classes=0`` gives the pooled features.
    """

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), head_dim=None, window_size=7, always_partition=False,
                 mlp_ratio=4.0, qkv_bias=True, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.1, weight_init=""):
        super().__init__()
        head_dims = _per_stage(head_dim, len(depths))
        mlp_ratios = _per_stage(mlp_ratio, len(depths))
        stage_args = [dict(num_heads=num_heads[i], head_dim=head_dims[i], mlp_ratio=mlp_ratios[i])
                      for i in range(len(depths))]
        self._build(img_size, patch_size, in_chans, num_classes, global_pool, embed_dim, depths, window_size,
                    drop_rate, drop_path_rate, weight_init, SwinTransformerStage, stage_args,
                    always_partition=always_partition, qkv_bias=qkv_bias, proj_drop=proj_drop_rate,
                    attn_drop=attn_drop_rate)


def _swin(variant, pretrained, progress, kwargs, **model_args):
    """A Swin entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by
    the caller's ``kwargs``."""
    return build_model(SwinTransformer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def swin_tiny_patch4_window7_224(pretrained=False, progress=True, **kwargs):
    """Swin-T at 224: width 96, depths (2, 2, 6, 2), 7x7 windows."""
    return _swin("swin_tiny_patch4_window7_224", pretrained, progress, kwargs, img_size=224, patch_size=4,
                 window_size=7, embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swin_small_patch4_window7_224(pretrained=False, progress=True, **kwargs):
    """Swin-S at 224: width 96, depths (2, 2, 18, 2), 7x7 windows."""
    return _swin("swin_small_patch4_window7_224", pretrained, progress, kwargs, img_size=224, patch_size=4,
                 window_size=7, embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swin_base_patch4_window7_224(pretrained=False, progress=True, **kwargs):
    """Swin-B at 224: width 128, depths (2, 2, 18, 2), 7x7 windows."""
    return _swin("swin_base_patch4_window7_224", pretrained, progress, kwargs, img_size=224, patch_size=4,
                 window_size=7, embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swin_base_patch4_window12_384(pretrained=False, progress=True, **kwargs):
    """Swin-B at 384: width 128, depths (2, 2, 18, 2), 12x12 windows."""
    return _swin("swin_base_patch4_window12_384", pretrained, progress, kwargs, img_size=384, patch_size=4,
                 window_size=12, embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32))


@register_model
def swin_large_patch4_window7_224(pretrained=False, progress=True, **kwargs):
    """Swin-L at 224: width 192, depths (2, 2, 18, 2), 7x7 windows."""
    return _swin("swin_large_patch4_window7_224", pretrained, progress, kwargs, img_size=224, patch_size=4,
                 window_size=7, embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48))


@register_model
def swin_large_patch4_window12_384(pretrained=False, progress=True, **kwargs):
    """Swin-L at 384: width 192, depths (2, 2, 18, 2), 12x12 windows."""
    return _swin("swin_large_patch4_window12_384", pretrained, progress, kwargs, img_size=384, patch_size=4,
                 window_size=12, embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48))


@register_model
def swin_s3_tiny_224(pretrained=False, progress=True, **kwargs):
    """Swin-S3-T at 224 (searched): width 96, depths (2, 2, 6, 2), windows 7, 7, 14, 7."""
    return _swin("swin_s3_tiny_224", pretrained, progress, kwargs, img_size=224, patch_size=4, window_size=(7, 7, 14,
                 7), embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24))


@register_model
def swin_s3_small_224(pretrained=False, progress=True, **kwargs):
    """Swin-S3-S at 224 (searched): width 96, depths (2, 2, 18, 2), windows 14, 14, 14, 7."""
    return _swin("swin_s3_small_224", pretrained, progress, kwargs, img_size=224, patch_size=4, window_size=(14, 14, 14,
                 7), embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24))


@register_model
def swin_s3_base_224(pretrained=False, progress=True, **kwargs):
    """Swin-S3-B at 224 (searched): width 96, depths (2, 2, 30, 2), windows 7, 7, 14, 7."""
    return _swin("swin_s3_base_224", pretrained, progress, kwargs, img_size=224, patch_size=4, window_size=(7, 7, 14,
                 7), embed_dim=96, depths=(2, 2, 30, 2), num_heads=(3, 6, 12, 24))
