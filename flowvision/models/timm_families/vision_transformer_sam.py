"""Segment Anything's image encoder (Kirillov et al. 2023, "Segment Anything"), the plain-ViT detection backbone of
Li, Mao, Girshick and He (2022, "Exploring Plain Vision Transformer Backbones for Object Detection"): timm's
``vision_transformer_sam`` models samvit_base_patch16, samvit_large_patch16 and samvit_huge_patch16, whose SA-1B
weights are the SAM ViT-B, ViT-L and ViT-H image encoders (no classifier: timm's weights have 0 classes), and
samvit_base_patch16_224, timm's untrained ViT-B classifier of this kind at 224 (relative positions only, a channel
LayerNorm for neck).

A ViT on 1024x1024 images cut into 16x16 patches, kept as a (N, H, W, C) grid of tokens: learnt absolute position
embeddings (resampled for another grid), then pre-norm blocks whose attention runs inside non-overlapping 14x14
windows (the grid padded to whole windows) except in four evenly spaced blocks that attend globally; every
attention adds decomposed relative positions (a learnt embedding per row offset and per column offset, read by the
query: MViTv2's). A neck (1x1 convolution to 256 channels, channel LayerNorm, 3x3 convolution, channel LayerNorm)
makes the 1/16 feature map SAM's mask decoder reads; timm adds global pooling and a linear head. This is timm's
``VisionTransformerSAM``: model names, module names, ``state_dict`` keys, defaults and (seeded, PyTorch's default)
initialisation follow timm's module, so its checkpoints load directly.
"""
from functools import lru_cache

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHead, Mlp, PatchEmbed, drop_path_module
from ._norm import LayerNorm2d
from .vision_transformer import LayerScale

__all__ = []


def get_rel_pos(q_size, k_size, rel_pos):
    """The (q_size, k_size, C) relative position embeddings of every query-key pair along one axis, read from the
    (L, C) table ``rel_pos`` (linearly resized to 2 max(q_size, k_size) - 1 rows where it has another length), the
    coordinates of the shorter side stretched to the longer, in float32 and truncated as timm computes them."""
    max_rel_dist = 2 * max(q_size, k_size) - 1
    if rel_pos.shape[0] != max_rel_dist:
        resized = F.interpolate(rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1), size=max_rel_dist,
                                mode="linear")
        rel_pos = resized.reshape(-1, max_rel_dist).permute(1, 0)
    return rel_pos[_relative_coords(q_size, k_size, str(rel_pos.device))]


@lru_cache(maxsize=256)
def _relative_coords(q_size, k_size, device):
    """The (q_size, k_size) rows of ``get_rel_pos``'s table, as an index tensor made once on ``device`` (nn.Graph
    then captures no copy to it)."""
    q_scale = np.float32(max(k_size / q_size, 1.0))
    k_scale = np.float32(max(q_size / k_size, 1.0))
    q_coords = np.arange(q_size, dtype=np.float32)[:, None] * q_scale
    k_coords = np.arange(k_size, dtype=np.float32)[None, :] * k_scale
    relative_coords = (q_coords - k_coords) + np.float32(k_size - 1) * k_scale
    return torch.tensor(relative_coords.astype(np.int64), device=device)


def get_decomposed_rel_pos_bias(q, rel_pos_h, rel_pos_w, q_size, k_size):
    """The attention bias of decomposed relative positions (MViTv2's): each query (``q``: (N, q_h * q_w, C)) read
    against its row offsets' and its column offsets' embeddings, the two summed over the key grid; (N, q_h * q_w,
    k_h * k_w)."""
    q_h, q_w = q_size
    k_h, k_w = k_size
    rel_h = get_rel_pos(q_h, k_h, rel_pos_h)
    rel_w = get_rel_pos(q_w, k_w, rel_pos_w)
    batch, _, dim = q.shape
    r_q = q.reshape(batch, q_h, q_w, dim)
    bias_h = torch.einsum("bhwc,hkc->bhwk", r_q, rel_h)
    bias_w = torch.einsum("bhwc,wkc->bhwk", r_q, rel_w)
    attn_bias = bias_h[:, :, :, :, None] + bias_w[:, :, :, None, :]
    return attn_bias.reshape(-1, q_h * q_w, k_h * k_w)


def resample_abs_pos_embed_nhwc(posemb, new_size):
    """(1, H, W, C) position embeddings resized to a ``new_size`` grid (bicubic, antialiased, computed in float32
    and put back in their dtype, as timm does); the same tensor when the size is already right."""
    if tuple(new_size) == tuple(posemb.shape[1:3]):
        return posemb
    resized = posemb.float().permute(0, 3, 1, 2)
    resized = F.interpolate(resized, size=tuple(new_size), mode="bicubic", align_corners=False, antialias=True)
    return resized.permute(0, 2, 3, 1).to(posemb.dtype)


def window_partition(x, window_size):
    """(N, H, W, C) tokens padded at the bottom and right to whole windows and cut into (N * windows,
    window_size, window_size, C) windows, row-major; returns them and the padded (height, width)."""
    batch, height, width, channels = x.shape
    pad_h = (window_size - height % window_size) % window_size
    pad_w = (window_size - width % window_size) % window_size
    x = F.pad(x, (0, 0, 0, pad_w, 0, pad_h))
    padded_h, padded_w = height + pad_h, width + pad_w
    x = x.reshape(batch, padded_h // window_size, window_size, padded_w // window_size, window_size, channels)
    windows = x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window_size, window_size, channels)
    return windows, (padded_h, padded_w)


def window_unpartition(windows, window_size, hw, pad_hw):
    """``window_partition`` undone: the windows put back in a (N, padded H, padded W, C) grid, cut to ``hw``."""
    padded_h, padded_w = pad_hw
    height, width = hw
    batch = windows.shape[0] // (padded_h * padded_w // window_size // window_size)
    x = windows.reshape(batch, padded_h // window_size, padded_w // window_size, window_size, window_size, -1)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(batch, padded_h, padded_w, -1)
    return x[:, :height, :width, :].contiguous()


class Attention(nn.Module):
    """Multi-head self-attention over a (N, H, W, C) grid of tokens (a window, or the whole grid): one ``qkv``
    projection, per-head ``q_norm`` / ``k_norm`` with ``qk_norm`` (identities otherwise), scaled dot-product
    attention with the decomposed relative-position bias when ``use_rel_pos`` (tables ``rel_pos_h``,
    ``rel_pos_w`` for an ``input_size`` grid, starting at zero), ``proj``. ``attn_drop`` drops attention weights
    and ``proj_drop`` the output, in training."""

    def __init__(self, dim, num_heads=8, qkv_bias=True, qk_norm=False, attn_drop=0.0, proj_drop=0.0,
                 norm_layer=nn.LayerNorm, use_rel_pos=False, input_size=None):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.use_rel_pos = use_rel_pos
        if use_rel_pos:
            if input_size is None:
                raise ValueError("Input size must be provided if using relative positional encoding.")
            self.rel_pos_h = nn.Parameter(torch.zeros(2 * input_size[0] - 1, self.head_dim))
            self.rel_pos_w = nn.Parameter(torch.zeros(2 * input_size[1] - 1, self.head_dim))

    def forward(self, x):
        batch, height, width, _ = x.shape
        tokens = height * width
        x = x.reshape(batch, tokens, -1)
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, batch * self.num_heads, tokens, -1).unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        attn_bias = None
        if self.use_rel_pos:
            attn_bias = get_decomposed_rel_pos_bias(q, self.rel_pos_h, self.rel_pos_w, (height, width),
                                                    (height, width))
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout_p, scale=self.scale)
        x = x.reshape(batch, self.num_heads, tokens, -1).transpose(1, 2).reshape(batch, tokens, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x.reshape(batch, height, width, -1)


class Block(nn.Module):
    """SAM's pre-norm block on a (N, H, W, C) grid: x + drop_path(ls1(attn(norm1(x)))), the attention inside
    ``window_size`` windows (0: over the whole ``input_size`` grid, its relative-position tables sized for it),
    then x + drop_path(ls2(mlp(norm2(x)))); ``init_values`` enables layer scale."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, proj_drop=0.0, attn_drop=0.0,
                 init_values=None, drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm, use_rel_pos=False,
                 window_size=0, input_size=None):
        super().__init__()
        self.window_size = window_size
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, attn_drop=attn_drop,
                              proj_drop=proj_drop, norm_layer=norm_layer, use_rel_pos=use_rel_pos,
                              input_size=input_size if window_size == 0 else (window_size, window_size))
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        batch, height, width, _ = x.shape
        shortcut = x
        x = self.norm1(x)
        if self.window_size > 0:
            x, pad_hw = window_partition(x, self.window_size)
        x = self.drop_path1(self.ls1(self.attn(x)))
        if self.window_size > 0:
            x = window_unpartition(x, self.window_size, (height, width), pad_hw)
        x = shortcut + x
        x = x.reshape(batch, height * width, -1)
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x.reshape(batch, height, width, -1)


class PatchEmbedGrid(PatchEmbed):
    """``patch_size`` patches projected by ``proj`` and kept as a (N, H / p, W / p, embed_dim) grid (timm's
    ``PatchEmbed`` with NHWC output and no fixed image size): any image whose sides are multiples of the patch
    size."""

    def forward(self, x):
        height, width = x.shape[-2:]
        if height % self.patch_size[0] or width % self.patch_size[1]:
            raise ValueError(f"Input size ({height}x{width}) should be divisible by patch size "
                             f"({self.patch_size[0]}x{self.patch_size[1]}).")
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class VisionTransformerSAM(nn.Module):
    """timm's ``VisionTransformerSAM``, its arguments and defaults (768 classes by default, as timm's class).

    ``use_abs_pos`` adds learnt position embeddings for the ``img_size`` grid (starting at zero, resampled for
    other grids); ``use_rel_pos`` the decomposed relative positions in every attention; ``window_size`` windows
    every block's attention but those in ``global_attn_indexes`` (0: all global). ``neck_chans`` (0 or None: a
    channel LayerNorm instead) is the width of the neck and of ``num_features``; the head pools the neck's map by
    ``global_pool`` ('avg', 'max', 'avgmax', 'catavgmax' or '') and classifies it. ``pre_norm`` adds a norm before
    the blocks and drops the patch projection's bias; ``init_values`` enables layer scale. Dropout:
    ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate``, ``proj_drop_rate``, ``drop_rate`` before
    the head; ``drop_path_rate`` is the last block's stochastic depth (rising linearly from 0). LayerNorm is
    PyTorch's (eps 1e-5) in the blocks, timm's channel norm (eps 1e-6) in the neck. There is no init of timm's own:
    every layer keeps PyTorch's default.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=1024, patch_size=16, in_chans=3, num_classes=768, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, init_values=None, pre_norm=False,
                 drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0,
                 use_abs_pos=True, use_rel_pos=False, window_size=14, global_attn_indexes=(), neck_chans=256,
                 global_pool="avg"):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.embed_dim = embed_dim

        self.patch_embed = PatchEmbedGrid(img_size, patch_size, in_chans, embed_dim, bias=not pre_norm)
        grid_size = self.patch_embed.grid_size
        if use_abs_pos:
            self.pos_embed = nn.Parameter(torch.zeros(1, grid_size[0], grid_size[1], embed_dim))
        else:
            self.pos_embed = None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.LayerNorm(embed_dim) if pre_norm else nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                  proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, init_values=init_values,
                  drop_path=drop_path_rates[i], use_rel_pos=use_rel_pos,
                  window_size=window_size if i not in global_attn_indexes else 0, input_size=grid_size)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, num_chs_norm=neck_chans or embed_dim,
                                  reduction=reduction) for i in range(depth)]
        if neck_chans:
            self.neck = nn.Sequential(
                nn.Conv2d(embed_dim, neck_chans, kernel_size=1, bias=False),
                LayerNorm2d(neck_chans),
                nn.Conv2d(neck_chans, neck_chans, kernel_size=3, padding=1, bias=False),
                LayerNorm2d(neck_chans),
            )
            self.num_features = neck_chans
        else:
            self.neck = LayerNorm2d(embed_dim)
        self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features

    def get_classifier(self):
        """The head (pooling, dropout and the final linear layer ``head.fc``), as timm's."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) final layer for ``num_classes`` (0: an identity) on ``num_features``, after
        another pooling ``global_pool`` if given."""
        self.num_classes = num_classes
        self.head.in_features = self.num_features
        self.head.reset(num_classes, global_pool)
        self.head_hidden_size = self.head.num_features
        if global_pool is not None:
            self.global_pool = global_pool

    def _embed(self, x):
        """Images -> the (N, H / p, W / p, embed_dim) token grid the blocks take: patches, position embeddings
        (resampled to the grid) and their dropout, ``norm_pre``."""
        x = self.patch_embed(x)
        if self.pos_embed is not None:
            pos_embed = resample_abs_pos_embed_nhwc(self.pos_embed, x.shape[1:3])
            # summed as (N, C, H, W) maps and viewed back: torch lays the sum out in the order of the patch grid's
            # memory (channels first), which the engine keeps only this way, and the dropout after it draws its mask
            # in memory order
            x = (x.permute(0, 3, 1, 2) + pos_embed.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        x = self.pos_drop(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the neck's (N, num_features, H / p, W / p) map."""
        x = self._embed(x)
        x = self.blocks(x)
        x = self.neck(x.permute(0, 3, 1, 2))
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
        """The outputs of the blocks ``indices`` picks (None: all, n: the last n, or a list) as (N, embed_dim,
        H / p, W / p) maps (through the neck with ``norm``: the neck is the final norm here) and, unless
        ``intermediates_only``, the neck's map; ``stop_early`` skips the blocks after the last one picked."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt)
        x = self._embed(x)
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x)
            if i in take:
                y = x.permute(0, 3, 1, 2)
                intermediates.append(self.neck(y) if norm else y)
        if intermediates_only:
            return intermediates
        return self.neck(x.permute(0, 3, 1, 2)), intermediates

    def prune_intermediate_layers(self, indices=None, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks; with ``prune_norm`` the neck too (the features then
        end at the last block: ``embed_dim`` wide, the head reset to none where a convolutional neck changed the
        width), with ``prune_head`` the classifier. Returns the absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = self.blocks[:max(take) + 1]
        prune_end = False
        if prune_norm:
            self.neck = nn.Identity()
            for info in self.feature_info:
                info["num_chs_norm"] = self.embed_dim
            prune_end = self.num_features != self.embed_dim
            self.num_features = self.embed_dim
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_sam(variant, pretrained, progress, kwargs, **model_args):
    """A SAM ViT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(VisionTransformerSAM, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def samvit_base_patch16(pretrained=False, progress=True, **kwargs):
    """SAM ViT-B/16 image encoder at 1024: width 768, 12 blocks, 12 heads, global attention in blocks 2, 5, 8, 11."""
    return _create_sam("samvit_base_patch16", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                       num_heads=12, global_attn_indexes=[2, 5, 8, 11], window_size=14, use_rel_pos=True,
                       img_size=1024)


@register_model
def samvit_large_patch16(pretrained=False, progress=True, **kwargs):
    """SAM ViT-L/16 image encoder at 1024: width 1024, 24 blocks, 16 heads, global attention in blocks 5, 11, 17, 23."""
    return _create_sam("samvit_large_patch16", pretrained, progress, kwargs, patch_size=16, embed_dim=1024, depth=24,
                       num_heads=16, global_attn_indexes=[5, 11, 17, 23], window_size=14, use_rel_pos=True,
                       img_size=1024)


@register_model
def samvit_huge_patch16(pretrained=False, progress=True, **kwargs):
    """SAM ViT-H/16 image encoder at 1024: width 1280, 32 blocks, 16 heads, global attention in blocks 7, 15, 23, 31."""
    return _create_sam("samvit_huge_patch16", pretrained, progress, kwargs, patch_size=16, embed_dim=1280, depth=32,
                       num_heads=16, global_attn_indexes=[7, 15, 23, 31], window_size=14, use_rel_pos=True,
                       img_size=1024)


@register_model
def samvit_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """SAM ViT-B/16 at 224 as a classifier: width 768, 12 blocks, 12 heads, 14x14 windows, global attention in
    blocks 2, 5, 8, 11, relative positions only, a channel LayerNorm for neck."""
    return _create_sam("samvit_base_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768,
                       depth=12, num_heads=12, global_attn_indexes=[2, 5, 8, 11], window_size=14, use_rel_pos=True,
                       use_abs_pos=False, img_size=224, neck_chans=None, num_classes=1000)
