"""Vision Transformer (Dosovitskiy et al. 2020, "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale"; Steiner et al. 2021, "How to train your ViT? Data, Augmentation, and Regularization in
Vision Transformers"): timm's ViT-Ti/S/B/L variants.

An image is cut into non-overlapping patches by a strided convolution; the patch tokens, a learnt class
token and learnt absolute position embeddings go through pre-norm transformer blocks (multi-head
self-attention and a GELU MLP, each on a residual branch with optional layer scale and stochastic depth),
and the class token's final state (or the patch tokens' average) is classified. This is timm's
``VisionTransformer``: model names, module names, ``state_dict`` keys, defaults and initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. torchvision's ViTs, with
torchvision's keys, are ``flowvision.models.vision_transformer``.

A model runs at the image size it was built for (``img_size``, square or (height, width)); position
embeddings made for another patch grid are resampled with ``resample_abs_pos_embed``. ``features_only=True`` returns
the outputs of the last blocks (timm's default: three) as (N, C, H/p, W/p) maps.
"""
import math
from functools import partial

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, PatchEmbed, drop_path_module, init_linear_layers, pair, trunc_normal_

__all__ = []

_GLOBAL_POOLS = ("", "token", "avg", "max", "avgmax")
_layer_norm = partial(nn.LayerNorm, eps=1e-6)


class Attention(nn.Module):
    """Multi-head self-attention: one ``qkv`` projection, scaled dot-product attention per head, ``proj``.

    ``qk_norm`` normalises queries and keys per head (``q_norm``, ``k_norm``), ``scale_norm`` the
    concatenated heads before ``proj`` (``norm``); both are identities by default. ``attn_drop`` drops
    attention weights and ``proj_drop`` the output, in training.
    """

    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, scale_norm=False, attn_drop=0.0,
                 proj_drop=0.0, norm_layer=None):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        if (qk_norm or scale_norm) and norm_layer is None:
            raise ValueError("qk_norm and scale_norm need a norm_layer")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = norm_layer(dim) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, dim)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class LayerScale(nn.Module):
    """A learnt per-channel scale ``gamma`` of a residual branch, starting at ``init_values`` (Touvron et al.
    2021, "Going deeper with Image Transformers"): small values start each block close to the identity."""

    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.init_values = init_values
        self.gamma = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x):
        return x * self.gamma


class Block(nn.Module):
    """Pre-norm transformer block: x + drop_path(ls1(attn(norm1(x)))), then x + drop_path(ls2(mlp(norm2(x)))).

    ``init_values`` enables layer scale (``ls1``, ``ls2``; identities otherwise), ``drop_path`` is the
    probability of dropping each residual branch for a sample in training.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_drop=0.0, attn_drop=0.0, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, scale_norm=scale_attn_norm,
                              attn_drop=attn_drop, proj_drop=proj_drop, norm_layer=norm_layer)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer,
                       norm_layer=norm_layer if scale_mlp_norm else None, drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class VisionTransformer(nn.Module):
    """Patch embedding, class token and position embeddings, ``depth`` transformer blocks, a norm, pooling
    and a linear head (timm's ``VisionTransformer``, its arguments and defaults).

    ``global_pool``: 'token' classifies the class token, 'avg' / 'max' / 'avgmax' pool the patch tokens,
    '' keeps the whole sequence. ``fc_norm`` moves the final norm after the pooling (default: with the
    patch-token pools). ``class_token=False`` drops the class token; ``no_embed_class`` gives position
    embeddings to the patch tokens only (DeiT III); ``pre_norm`` adds a norm before the blocks (and drops
    the patch projection's bias); ``init_values`` enables layer scale. Dropout: ``pos_drop_rate`` after the
    position embeddings, ``attn_drop_rate`` on attention weights, ``proj_drop_rate`` in the blocks,
    ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of the last block (rising
    linearly from 0 at the first). ``weight_init='skip'`` leaves the layers' default initialisation.
    ``num_classes=0`` gives the pooled features. ``patch_drop`` is timm's patch-dropout slot, an identity.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, init_values=None, class_token=True, no_embed_class=False, pre_norm=False,
                 fc_norm=None, drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0, weight_init="", norm_layer=None, act_layer=None):
        super().__init__()
        if global_pool not in _GLOBAL_POOLS:
            raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
        if global_pool == "token" and not class_token:
            raise ValueError("global_pool='token' needs the class token")
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' (timm's) or 'skip', got {weight_init!r}")
        use_fc_norm = global_pool in ("avg", "max", "avgmax") if fc_norm is None else fc_norm
        norm_layer = norm_layer or _layer_norm
        act_layer = act_layer or nn.GELU
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1 if class_token else 0
        self.has_class_token = class_token
        self.no_embed_class = no_embed_class

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, bias=not pre_norm)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        embed_len = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.pos_embed = nn.Parameter(torch.zeros(1, embed_len, embed_dim))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.patch_drop = nn.Identity()
        self.norm_pre = norm_layer(embed_dim) if pre_norm else nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                  scale_attn_norm=scale_attn_norm, scale_mlp_norm=scale_mlp_norm, proj_drop=proj_drop_rate,
                  attn_drop=attn_drop_rate, init_values=init_values, drop_path=drop_path_rates[i],
                  act_layer=act_layer, norm_layer=norm_layer)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = nn.Identity() if use_fc_norm else norm_layer(embed_dim)
        self.fc_norm = norm_layer(embed_dim) if use_fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        if weight_init != "skip":
            self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal position embeddings and Linear weights (std 0.02), zero Linear
        biases, a class token of N(0, 1e-12); the patch projection keeps the convolution's default."""
        trunc_normal_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        init_linear_layers(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) head for ``num_classes`` (0: an identity); ``global_pool`` changes
        the pooling too (the norm stays where it was built)."""
        if global_pool is not None:
            if global_pool not in _GLOBAL_POOLS:
                raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
            if global_pool == "token" and not self.has_class_token:
                raise ValueError("global_pool='token' needs the class token")
            self.global_pool = global_pool
        self.num_classes = num_classes
        self.head = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.head.train(self.training)

    def _prefix_tokens(self, batch):
        """The learnt tokens put before the patch tokens, expanded to the batch."""
        return [self.cls_token.expand(batch, -1, -1)] if self.cls_token is not None else []

    def _pos_embed(self, x):
        """Patch tokens with the prefix tokens prepended and position embeddings added (to the patches only,
        before prepending, when ``no_embed_class``), then ``pos_drop``."""
        prefix = self._prefix_tokens(x.shape[0])
        if self.no_embed_class:
            x = x + self.pos_embed
            x = torch.cat(prefix + [x], dim=1)
        else:
            x = torch.cat(prefix + [x], dim=1)
            x = x + self.pos_embed
        return self.pos_drop(x)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised token sequence (N, prefix + patches, embed_dim)."""
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        x = self.blocks(x)
        x = self.norm(x)
        return x

    def pool(self, x, pool_type=None):
        """The token sequence pooled by ``pool_type`` (default: ``global_pool``)."""
        pool_type = self.global_pool if pool_type is None else pool_type
        if not pool_type:
            return x
        if pool_type == "token":
            return x[:, 0]
        patches = x[:, self.num_prefix_tokens:]
        if pool_type == "avg":
            return patches.mean(dim=1)
        if pool_type == "max":
            return patches.amax(dim=1)
        return 0.5 * (patches.amax(dim=1) + patches.mean(dim=1))

    def forward_head(self, x, pre_logits=False):
        """Pooling, ``fc_norm``, head dropout, then the classifier unless ``pre_logits``."""
        x = self.pool(x)
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False):
        """The outputs of the blocks picked by ``indices`` (None: all, n: the last n, or a list), without
        prefix tokens, as (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), and (unless
        ``intermediates_only``) the final normalised sequence. ``norm`` applies the final norm to each;
        ``return_prefix_tokens`` pairs each with its prefix tokens; ``stop_early`` skips later blocks."""
        if output_fmt not in ("NCHW", "NLC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NLC', got {output_fmt!r}")
        take = take_indices(len(self.blocks), indices)
        batch, _, height, width = x.shape
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        blocks = list(self.blocks)[:max(take) + 1] if stop_early else list(self.blocks)
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x)
            if i in take:
                intermediates.append(self.norm(x) if norm else x)
        prefixes = [y[:, :self.num_prefix_tokens] for y in intermediates]
        intermediates = [y[:, self.num_prefix_tokens:] for y in intermediates]
        if output_fmt == "NCHW":
            grid = (height // self.patch_embed.patch_size[0], width // self.patch_embed.patch_size[1])
            intermediates = [y.reshape(batch, grid[0], grid[1], -1).permute(0, 3, 1, 2).contiguous()
                             for y in intermediates]
        if return_prefix_tokens and self.num_prefix_tokens:
            intermediates = list(zip(intermediates, prefixes))
        if intermediates_only:
            return intermediates
        return self.norm(x), intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks (and the final norm, the head); returns the
        absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.Sequential(*list(self.blocks)[:max(take) + 1])
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.fc_norm = nn.Identity()
            self.reset_classifier(0, "")
        return take


def resample_abs_pos_embed(posemb, new_size, old_size=None, num_prefix_tokens=1, interpolation="bicubic"):
    """Position embeddings (1, prefix + rows*cols, D) for an ``old_size`` grid (default: square) resampled
    to a ``new_size`` (rows, cols) grid (timm's function without antialiasing): the prefix tokens' entries
    are kept, the grid is interpolated as a (D, rows, cols) image (corners not aligned). Takes a Tensor, or
    a numpy array and returns numpy."""
    is_tensor = isinstance(posemb, torch.Tensor)
    pos = posemb if is_tensor else torch.from_numpy(np.asarray(posemb))
    new_size = pair(new_size)
    if old_size is None:
        side = math.isqrt(pos.shape[1] - num_prefix_tokens)
        old_size = (side, side)
    old_size = pair(old_size)
    if tuple(old_size) == tuple(new_size):
        return posemb
    dim = pos.shape[-1]
    prefix, grid = pos[:, :num_prefix_tokens], pos[:, num_prefix_tokens:]
    grid = grid.reshape(1, old_size[0], old_size[1], dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=new_size, mode=interpolation, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, new_size[0] * new_size[1], dim)
    resampled = torch.cat([prefix, grid], dim=1)
    return resampled if is_tensor else resampled.numpy()


def _vit(variant, pretrained, kwargs, **model_args):
    """A ViT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(VisionTransformer, variant, pretrained, **{**model_args, **kwargs})


@register_model
def vit_tiny_patch16_224(pretrained=False, **kwargs):
    """ViT-Ti/16 at 224: width 192, 12 blocks, 3 heads."""
    return _vit("vit_tiny_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=192, depth=12, num_heads=3)


@register_model
def vit_tiny_patch16_384(pretrained=False, **kwargs):
    """ViT-Ti/16 at 384: width 192, 12 blocks, 3 heads."""
    return _vit("vit_tiny_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=192, depth=12,
                num_heads=3)


@register_model
def vit_small_patch16_224(pretrained=False, **kwargs):
    """ViT-S/16 at 224: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=384, depth=12, num_heads=6)


@register_model
def vit_small_patch16_384(pretrained=False, **kwargs):
    """ViT-S/16 at 384: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=384, depth=12,
                num_heads=6)


@register_model
def vit_small_patch32_224(pretrained=False, **kwargs):
    """ViT-S/32 at 224: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch32_224", pretrained, kwargs, patch_size=32, embed_dim=384, depth=12, num_heads=6)


@register_model
def vit_small_patch32_384(pretrained=False, **kwargs):
    """ViT-S/32 at 384: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch32_384", pretrained, kwargs, img_size=384, patch_size=32, embed_dim=384, depth=12,
                num_heads=6)


@register_model
def vit_base_patch8_224(pretrained=False, **kwargs):
    """ViT-B/8 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch8_224", pretrained, kwargs, patch_size=8, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_patch16_224(pretrained=False, **kwargs):
    """ViT-B/16 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_patch16_384(pretrained=False, **kwargs):
    """ViT-B/16 at 384: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=768, depth=12,
                num_heads=12)


@register_model
def vit_base_patch32_224(pretrained=False, **kwargs):
    """ViT-B/32 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch32_224", pretrained, kwargs, patch_size=32, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_patch32_384(pretrained=False, **kwargs):
    """ViT-B/32 at 384: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch32_384", pretrained, kwargs, img_size=384, patch_size=32, embed_dim=768, depth=12,
                num_heads=12)


@register_model
def vit_large_patch16_224(pretrained=False, **kwargs):
    """ViT-L/16 at 224: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch16_224", pretrained, kwargs, patch_size=16, embed_dim=1024, depth=24, num_heads=16)


@register_model
def vit_large_patch16_384(pretrained=False, **kwargs):
    """ViT-L/16 at 384: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch16_384", pretrained, kwargs, img_size=384, patch_size=16, embed_dim=1024, depth=24,
                num_heads=16)


@register_model
def vit_large_patch32_384(pretrained=False, **kwargs):
    """ViT-L/32 at 384: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch32_384", pretrained, kwargs, img_size=384, patch_size=32, embed_dim=1024, depth=24,
                num_heads=16)


@register_model
def vit_base_patch16_224_miil(pretrained=False, **kwargs):
    """ViT-B/16 at 224 without qkv biases, as trained on ImageNet-21K-P by Alibaba MIIL (Ridnik et al. 2021,
    "ImageNet-21K Pretraining for the Masses"); 11221 classes by default, as timm's first weights."""
    return _vit("vit_base_patch16_224_miil", pretrained, kwargs, num_classes=11221, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, qkv_bias=False)
