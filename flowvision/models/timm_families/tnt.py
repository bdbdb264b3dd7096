"""TNT (Han et al. 2021, "Transformer in Transformer"): timm's ``tnt`` models, tnt_s_legacy_patch16_224,
tnt_s_patch16_224 and tnt_b_patch16_224.

A Vision Transformer that also models the inside of each patch. Every 16x16 patch is cut into 4x4 "pixels" (by a
7x7 stride-4 convolution) embedded as small vectors; each block runs an inner transformer layer among the pixels of
each patch, adds their flattened, projected states to the patch's token, then an outer transformer layer among the
patch tokens and a class token. The final class token is classified. The legacy variant convolves the whole image
before cutting it into patches (so pixels see across patch borders) and projects the pixels into the patch tokens
with a bias and a per-pixel norm instead of norms over the whole flattened patch.

This is timm's ``TNT``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm, so
timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was built
for (``img_size``). ``features_only=True`` returns the patch tokens of the last blocks (timm's default: three) as
(N, C, H/16, W/16) maps.
"""
import math

import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import (Mlp, TokenPoolHeadApi, check_token_pool, drop_path_module, init_linear_layers, pair,
                      trunc_normal_)

__all__ = []


class Attention(nn.Module):
    """Multi-head self-attention with queries and keys (``qk``) of ``hidden_dim`` channels and values (``v``) of
    ``dim``: softmax attention per head, attention dropout, ``proj``; both dropouts in place, as in timm."""

    def __init__(self, dim, hidden_dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qk = nn.Linear(dim, hidden_dim * 2, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop, inplace=True)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop, inplace=True)

    def forward(self, x):
        batch, tokens, _ = x.shape
        qk = self.qk(x).reshape(batch, tokens, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = qk.unbind(0)
        v = self.v(x).reshape(batch, tokens, self.num_heads, -1).permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, -1)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    """A TNT block on the pixel embeddings (N * patches, pixels, ``dim``) and the patch tokens (N, 1 + patches,
    ``dim_out``), each pre-norm residual branch under stochastic depth (one ``drop_path`` module for all four, as in
    timm):

    - inner layer: pixels + attn_in(norm_in(pixels)), then + mlp_in(norm_mlp_in(pixels)) (4x wide);
    - each patch token (not the class token) plus its pixels flattened and projected by ``proj``: between
      ``norm1_proj`` over the flattened pixels and ``norm2_proj``, or (``legacy``) after a per-pixel norm, the
      projection with a bias and no norm after (``norm2_proj`` None);
    - outer layer: tokens + attn_out(norm_out(tokens)), then + mlp(norm_mlp(tokens)) (``mlp_ratio`` wide).
    """

    def __init__(self, dim, dim_out, num_pixel, num_heads_in=4, num_heads_out=12, mlp_ratio=4.0, qkv_bias=False,
                 proj_drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm,
                 legacy=False):
        super().__init__()
        self.norm_in = norm_layer(dim)
        self.attn_in = Attention(dim, dim, num_heads=num_heads_in, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                 proj_drop=proj_drop)
        self.norm_mlp_in = norm_layer(dim)
        self.mlp_in = Mlp(dim, dim * 4, dim, act_layer=act_layer, drop=proj_drop)
        self.legacy = legacy
        if legacy:
            self.norm1_proj = norm_layer(dim)
            self.proj = nn.Linear(dim * num_pixel, dim_out, bias=True)
            self.norm2_proj = None
        else:
            self.norm1_proj = norm_layer(dim * num_pixel)
            self.proj = nn.Linear(dim * num_pixel, dim_out, bias=False)
            self.norm2_proj = norm_layer(dim_out)
        self.norm_out = norm_layer(dim_out)
        self.attn_out = Attention(dim_out, dim_out, num_heads=num_heads_out, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                  proj_drop=proj_drop)
        self.drop_path = drop_path_module(drop_path)
        self.norm_mlp = norm_layer(dim_out)
        self.mlp = Mlp(dim_out, int(dim_out * mlp_ratio), dim_out, act_layer=act_layer, drop=proj_drop)

    def _pixels_to_patches(self, pixel_embed, batch, patches):
        """Each patch's pixel embeddings flattened and projected to a patch-token update (N, patches, dim_out)."""
        if self.norm2_proj is None:
            return self.proj(self.norm1_proj(pixel_embed).reshape(batch, patches, -1))
        return self.norm2_proj(self.proj(self.norm1_proj(pixel_embed.reshape(batch, patches, -1))))

    def forward(self, pixel_embed, patch_embed):
        pixel_embed = pixel_embed + self.drop_path(self.attn_in(self.norm_in(pixel_embed)))
        pixel_embed = pixel_embed + self.drop_path(self.mlp_in(self.norm_mlp_in(pixel_embed)))
        batch, tokens, _ = patch_embed.shape
        update = self._pixels_to_patches(pixel_embed, batch, tokens - 1)
        patch_embed = torch.cat([patch_embed[:, 0:1], patch_embed[:, 1:] + update], dim=1)
        patch_embed = patch_embed + self.drop_path(self.attn_out(self.norm_out(patch_embed)))
        patch_embed = patch_embed + self.drop_path(self.mlp(self.norm_mlp(patch_embed)))
        return pixel_embed, patch_embed


class PixelEmbed(nn.Module):
    """Images (N, C, H, W) -> pixel embeddings (N * patches, pixels, ``in_dim``) of the ``patch_size`` patches of
    an ``img_size`` image (patches that do not fit are cut off), with the learnt per-pixel position embeddings
    added: each patch cut out (``unfold``) and convolved by ``proj`` (7x7, stride ``stride``), or (``legacy``) the
    whole image convolved first and the map cut into ``patch_size / stride`` blocks. Images must have the size the
    model was built for."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, in_dim=48, stride=4, legacy=False):
        super().__init__()
        img_size = pair(img_size)
        patch_size = pair(patch_size)
        self.grid_size = (img_size[0] // patch_size[0], img_size[1] // patch_size[1])
        self.img_size = img_size
        self.patch_size = patch_size
        self.legacy = legacy
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.in_dim = in_dim
        self.new_patch_size = [math.ceil(size / stride) for size in patch_size]
        self.proj = nn.Conv2d(in_chans, in_dim, kernel_size=7, padding=3, stride=stride)
        if legacy:
            self.unfold = nn.Unfold(kernel_size=self.new_patch_size, stride=self.new_patch_size)
        else:
            self.unfold = nn.Unfold(kernel_size=patch_size, stride=patch_size)

    def forward(self, x, pixel_pos):
        batch, channels, height, width = x.shape
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the model's ({self.img_size[0]}x"
                             f"{self.img_size[1]}): build the model with img_size=({height}, {width})")
        patches = batch * self.num_patches
        if self.legacy:
            x = self.proj(x)
            x = self.unfold(x)
            x = x.transpose(1, 2).reshape(patches, self.in_dim, self.new_patch_size[0], self.new_patch_size[1])
        else:
            x = self.unfold(x)
            x = x.transpose(1, 2).reshape(patches, channels, self.patch_size[0], self.patch_size[1])
            x = self.proj(x)
        x = x + pixel_pos
        x = x.reshape(patches, self.in_dim, -1).transpose(1, 2)
        return x


class TNT(TokenPoolHeadApi, nn.Module):
    """Pixel embedding, patch tokens made from each patch's flattened pixels (``norm1_proj``, ``proj``,
    ``norm2_proj``), a class token and position embeddings, ``depth`` TNT blocks, a norm and a linear head (timm's
    ``TNT``, its arguments and defaults).

    ``inner_dim`` is the pixels' width, ``num_heads_inner`` their attention heads; ``embed_dim`` and
    ``num_heads_outer`` the patch tokens'. ``first_stride`` is the pixel convolution's stride (pixels per patch:
    (patch_size / first_stride)^2). ``legacy`` selects the original TNT-S layout (see ``PixelEmbed`` and ``Block``).
    ``global_pool``: 'token' classifies the class token, 'avg' the patch tokens' average, '' returns the whole
    sequence. Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate`` on attention weights,
    ``proj_drop_rate`` in the blocks, ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of
    the last block, rising linearly from 0 at the first. ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "pixel_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 inner_dim=48, depth=12, num_heads_inner=4, num_heads_outer=12, mlp_ratio=4.0, qkv_bias=False,
                 drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0,
                 norm_layer=nn.LayerNorm, first_stride=4, legacy=False):
        super().__init__()
        check_token_pool(global_pool)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1

        self.pixel_embed = PixelEmbed(img_size, patch_size, in_chans, inner_dim, first_stride, legacy)
        self.num_patches = self.pixel_embed.num_patches
        new_patch_size = self.pixel_embed.new_patch_size
        num_pixel = new_patch_size[0] * new_patch_size[1]
        self.norm1_proj = norm_layer(num_pixel * inner_dim)
        self.proj = nn.Linear(num_pixel * inner_dim, embed_dim)
        self.norm2_proj = norm_layer(embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.patch_pos = nn.Parameter(torch.zeros(1, self.num_patches + 1, embed_dim))
        self.pixel_pos = nn.Parameter(torch.zeros(1, inner_dim, new_patch_size[0], new_patch_size[1]))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList([
            Block(inner_dim, embed_dim, num_pixel, num_heads_in=num_heads_inner, num_heads_out=num_heads_outer,
                  mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                  drop_path=drop_path_rates[i], norm_layer=norm_layer, legacy=legacy)
            for i in range(depth)])
        reduction = max(self.pixel_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal class token, patch and pixel position embeddings and Linear weights (std
        0.02), zero Linear biases; the pixel convolution keeps its default."""
        trunc_normal_(self.cls_token, std=0.02)
        trunc_normal_(self.patch_pos, std=0.02)
        trunc_normal_(self.pixel_pos, std=0.02)
        init_linear_layers(self)

    def _embed(self, x):
        """Images -> (pixel embeddings, patch tokens with the class token first and position embeddings, after
        ``pos_drop``)."""
        batch = x.shape[0]
        pixel_embed = self.pixel_embed(x, self.pixel_pos)
        patch_embed = self.norm2_proj(self.proj(self.norm1_proj(pixel_embed.reshape(batch, self.num_patches, -1))))
        patch_embed = torch.cat((self.cls_token.expand(batch, -1, -1), patch_embed), dim=1)
        patch_embed = patch_embed + self.patch_pos
        patch_embed = self.pos_drop(patch_embed)
        return pixel_embed, patch_embed

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised patch tokens (N, 1 + patches, embed_dim), class token
        first."""
        pixel_embed, patch_embed = self._embed(x)
        for block in self.blocks:
            pixel_embed, patch_embed = block(pixel_embed, patch_embed)
        patch_embed = self.norm(patch_embed)
        return patch_embed

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False):
        """The patch tokens output by the blocks picked by ``indices`` (None: all, n: the last n, or a list) as
        (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), each paired with its class token with
        ``return_prefix_tokens``, and (unless ``intermediates_only``) the final normalised sequence. ``norm`` applies
        the final norm to each; ``stop_early`` skips the blocks after the last one picked."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        batch = x.shape[0]
        pixel_embed, patch_embed = self._embed(x)
        intermediates = []
        for i, block in enumerate(blocks):
            pixel_embed, patch_embed = block(pixel_embed, patch_embed)
            if i in take:
                intermediates.append(self.norm(patch_embed) if norm else patch_embed)
        prefixes = [y[:, :self.num_prefix_tokens] for y in intermediates]
        intermediates = [y[:, self.num_prefix_tokens:] for y in intermediates]
        if output_fmt == "NCHW":
            rows, cols = self.pixel_embed.grid_size
            intermediates = [y.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2).contiguous() for y in intermediates]
        if return_prefix_tokens:
            intermediates = list(zip(intermediates, prefixes))
        if intermediates_only:
            return intermediates
        return self.norm(patch_embed), intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks (and the final norm when asked, the head); returns
        the absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.ModuleList(list(self.blocks)[:max(take) + 1])
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.reset_classifier(0, "")
        return take


def _tnt(variant, pretrained, progress, kwargs, **model_args):
    """A TNT entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by the
    caller's ``kwargs``."""
    return build_model(TNT, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def tnt_s_legacy_patch16_224(pretrained=False, progress=True, **kwargs):
    """TNT-S in its original layout: width 384 (pixels 24), 12 blocks, 6 outer heads."""
    return _tnt("tnt_s_legacy_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=384,
                inner_dim=24, depth=12, num_heads_outer=6, qkv_bias=False, legacy=True)


@register_model
def tnt_s_patch16_224(pretrained=False, progress=True, **kwargs):
    """TNT-S: width 384 (pixels 24), 12 blocks, 6 outer heads."""
    return _tnt("tnt_s_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=384,
                inner_dim=24, depth=12, num_heads_outer=6, qkv_bias=False)


@register_model
def tnt_b_patch16_224(pretrained=False, progress=True, **kwargs):
    """TNT-B: width 640 (pixels 40), 12 blocks, 10 outer heads."""
    return _tnt("tnt_b_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=640,
                inner_dim=40, depth=12, num_heads_outer=10, qkv_bias=False)
