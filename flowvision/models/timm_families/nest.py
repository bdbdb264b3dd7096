"""NesT (Zhang, Zhang, Liu, Arik, Wan and Pfister 2021, "Nested Hierarchical Transformer: Towards Accurate,
Data-Efficient and Interpretable Visual Understanding"): nest_tiny, nest_small, nest_base, nest_tiny_jx,
nest_small_jx and nest_base_jx.

A transformer on a fixed square image that only attends locally, in a hierarchy of levels. The image is cut into 4x4
patches and the patch grid into square blocks (16 at the first of the three levels); each level adds a learnt
position embedding per block and token and runs transformer layers whose tokens attend only within their own block.
Between levels, a block aggregation (3x3 convolution, LayerNorm, 3x3 stride-2 max pooling) halves the map and
widens it, so the next level has a quarter as many blocks of the same size, down to a single block. The final map is
normalised, averaged and classified. The ``_jx`` models are Google's JAX weights and pad as TensorFlow ("same") does;
nest_tiny, nest_small and nest_base, which timm publishes no weights for, pad as PyTorch does and are registered
too. Model names, module names, ``state_dict`` keys, defaults and (truncated-normal) initialisation follow timm's
``nest`` module, so its checkpoints load directly.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._conv import MaxPool2dSame, create_conv2d
from ._layers import Mlp, PooledHeadApi, PreNormBlock, create_classifier, trunc_normal_
from ._layers import PatchEmbed as TokenPatchEmbed
from ._norm import LayerNorm

__all__ = []


class Attention(nn.Module):
    """Multi-head self-attention within blocks: (N, blocks, tokens, C) inputs, each block's tokens attending only to
    each other; one ``qkv`` projection, attention dropout ``attn_drop``, ``proj`` and its dropout ``proj_drop``."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, blocks, tokens, channels = x.shape
        qkv = self.qkv(x).reshape(batch, blocks, tokens, 3, self.num_heads, channels // self.num_heads)
        q, k, v = qkv.permute(3, 0, 4, 1, 2, 5).unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.permute(0, 2, 3, 4, 1).reshape(batch, blocks, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class TransformerLayer(PreNormBlock):
    """A pre-norm transformer layer on (N, blocks, tokens, C) inputs: block-local ``Attention``, then an ``Mlp``
    (``mlp_ratio`` wide, dropout ``proj_drop``), each residual with stochastic depth ``drop_path``."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm):
        super().__init__()
        attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self._add_branches(dim, attn, mlp, drop_path, norm_layer)


class ConvPool(nn.Module):
    """Block aggregation between levels, on (N, C, H, W) maps with even H and W: a 3x3 convolution to
    ``out_channels`` (``conv``), a LayerNorm over the channels (``norm``) and 3x3 stride-2 max pooling (``pool``),
    both padded as ``pad_type`` says ('' as PyTorch, 'same' as TensorFlow)."""

    def __init__(self, in_channels, out_channels, norm_layer, pad_type=""):
        super().__init__()
        self.conv = create_conv2d(in_channels, out_channels, kernel_size=3, pad_type=pad_type, bias=True)
        self.norm = norm_layer(out_channels)
        if pad_type == "same":
            self.pool = MaxPool2dSame(3, 2)
        else:
            self.pool = nn.MaxPool2d(3, stride=2, padding=1)

    def forward(self, x):
        height, width = x.shape[-2:]
        if height % 2 or width % 2:
            raise ValueError(f"block aggregation needs an even map size, got {height}x{width}")
        x = self.conv(x)
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = self.pool(x)
        return x


def blockify(x, block_size):
    """(N, H, W, C) maps -> (N, blocks, block_size^2, C): the ``block_size`` x ``block_size`` blocks in row-major
    order, each block's tokens row-major."""
    batch, height, width, channels = x.shape
    if height % block_size or width % block_size:
        raise ValueError(f"a {height}x{width} map does not split into {block_size}x{block_size} blocks")
    grid_h = height // block_size
    grid_w = width // block_size
    x = x.reshape(batch, grid_h, block_size, grid_w, block_size, channels)
    return x.transpose(2, 3).reshape(batch, grid_h * grid_w, -1, channels)


def deblockify(x, block_size):
    """The inverse of ``blockify`` for a square grid of blocks: (N, blocks, tokens, C) -> (N, H, W, C)."""
    batch, blocks, _, channels = x.shape
    grid_size = int(math.sqrt(blocks))
    size = grid_size * block_size
    x = x.reshape(batch, grid_size, grid_size, block_size, block_size, channels)
    return x.transpose(2, 3).reshape(batch, size, size, channels)


class NestLevel(nn.Module):
    """One level on (N, C, H, W) maps: block aggregation from ``prev_embed_dim`` channels (``pool``; an identity at
    the first level), then the map cut into ``num_blocks`` blocks of ``block_size`` x ``block_size`` tokens, a learnt
    position embedding per block and token added (``pos_embed``), ``depth`` transformer layers
    (``transformer_encoder``, stochastic depth ``drop_path[i]``) and the blocks put back together."""

    def __init__(self, num_blocks, block_size, seq_length, num_heads, depth, embed_dim, prev_embed_dim=None,
                 mlp_ratio=4.0, qkv_bias=True, proj_drop=0.0, attn_drop=0.0, drop_path=(), norm_layer=None,
                 act_layer=None, pad_type=""):
        super().__init__()
        self.block_size = block_size
        self.pos_embed = nn.Parameter(torch.zeros(1, num_blocks, seq_length, embed_dim))
        if prev_embed_dim is not None:
            self.pool = ConvPool(prev_embed_dim, embed_dim, norm_layer=norm_layer, pad_type=pad_type)
        else:
            self.pool = nn.Identity()
        self.transformer_encoder = nn.Sequential(*[
            TransformerLayer(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop,
                             attn_drop=attn_drop, drop_path=drop_path[i], norm_layer=norm_layer, act_layer=act_layer)
            for i in range(depth)])

    def forward(self, x):
        x = self.pool(x)
        x = blockify(x.permute(0, 2, 3, 1), self.block_size)
        x = x + self.pos_embed
        x = self.transformer_encoder(x)
        x = deblockify(x, self.block_size)
        return x.permute(0, 3, 1, 2)


class PatchEmbed(TokenPatchEmbed):
    """The patch embedding as a map: the shared ``PatchEmbed``'s tokens (images of the built size only) laid back
    out as an (N, embed_dim, H / patch, W / patch) grid (timm's ``PatchEmbed`` with ``flatten=False``)."""

    def forward(self, x):
        x = super().forward(x)
        return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], *self.grid_size)


def _per_level(name, value, num_levels):
    """``value`` once per level: a sequence of ``num_levels`` values as a tuple, a number repeated."""
    if isinstance(value, (tuple, list)):
        if len(value) != num_levels:
            raise ValueError(f"{name} needs one value per level ({num_levels}), got {value}")
        return tuple(value)
    return (value,) * num_levels


class Nest(PooledHeadApi, nn.Module):
    """NesT: the patch embedding (``patch_embed``, ``patch_size`` patches of a square ``img_size`` image),
    ``num_levels`` levels (``levels``: widths ``embed_dims``, ``num_heads`` heads, ``depths`` layers; 4^(levels - 1)
    blocks at the first, a quarter as many at each next one), a LayerNorm over the channels (``norm``), global
    pooling (``global_pool``), dropout (``head_drop``) and the classifier (``head``).

    ``mlp_ratio``: the MLPs' width; ``proj_drop_rate`` and ``attn_drop_rate`` the layers' dropouts, ``drop_rate``
    the one before the classifier; ``drop_path_rate`` the stochastic depth of the last layer, rising linearly from 0
    at the first (0.5 by default, as in timm). ``norm_layer`` defaults to a LayerNorm with epsilon 1e-6,
    ``act_layer`` to GELU; ``pad_type`` 'same' pads the aggregations as TensorFlow. Weights start as timm's:
    truncated normals (std 0.02) for the position embeddings, linear layers and convolutions, zero biases (the
    classifier's -log(num_classes) with ``weight_init='nlhb'``).
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, img_size=224, in_chans=3, patch_size=4, num_levels=3, embed_dims=(128, 256, 512),
                 num_heads=(4, 8, 16), depths=(2, 2, 20), num_classes=1000, mlp_ratio=4.0, qkv_bias=True,
                 drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.5, norm_layer=None,
                 act_layer=None, pad_type="", weight_init="", global_pool="avg"):
        super().__init__()
        if weight_init not in ("nlhb", ""):
            raise ValueError(f"unknown weight_init '{weight_init}': expected '' or 'nlhb'")
        embed_dims = _per_level("embed_dims", embed_dims, num_levels)
        num_heads = _per_level("num_heads", num_heads, num_levels)
        depths = _per_level("depths", depths, num_levels)
        if isinstance(img_size, (tuple, list)):
            if img_size[0] != img_size[1]:
                raise ValueError(f"NesT only takes square images, got img_size {img_size}")
            img_size = img_size[0]
        if img_size % patch_size:
            raise ValueError(f"patch_size ({patch_size}) must divide img_size ({img_size})")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = embed_dims[-1]
        self.feature_info = []
        norm_layer = norm_layer or LayerNorm
        act_layer = act_layer or nn.GELU
        self.drop_rate = drop_rate
        self.num_levels = num_levels
        self.patch_size = patch_size
        self.num_blocks = [4 ** i for i in reversed(range(num_levels))]
        blocks_per_side = 2 ** (num_levels - 1)
        if (img_size // patch_size) % blocks_per_side:
            raise ValueError(f"the {img_size // patch_size}-patch grid does not split into {blocks_per_side} "
                             f"blocks a side: check img_size, patch_size and num_levels")
        self.block_size = img_size // patch_size // blocks_per_side

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dims[0])
        self.num_patches = self.patch_embed.num_patches
        self.seq_length = self.num_patches // self.num_blocks[0]
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        levels = []
        prev_dim = None
        for i, dim in enumerate(embed_dims):
            first = sum(depths[:i])
            levels.append(NestLevel(
                self.num_blocks[i], self.block_size, self.seq_length, num_heads[i], depths[i], dim, prev_dim,
                mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                drop_path=rates[first:first + depths[i]], norm_layer=norm_layer, act_layer=act_layer,
                pad_type=pad_type))
            self.feature_info.append(dict(num_chs=dim, reduction=4 * 2 ** i, module=f"levels.{i}"))
            prev_dim = dim
        self.levels = nn.Sequential(*levels)
        self.norm = norm_layer(embed_dims[-1])
        global_pool, head = create_classifier(self.num_features, num_classes, global_pool)
        self.global_pool = global_pool
        self.head_hidden_size = self.num_features * global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = head
        self._init_weights(-math.log(num_classes) if weight_init == "nlhb" else 0.0)

    def _init_weights(self, head_bias):
        """timm's init: the levels' position embeddings first, then in module order every linear layer's and
        convolution's weight a truncated normal (std 0.02) and its bias zero (the classifier's ``head_bias``)."""
        for level in self.levels:
            trunc_normal_(level.pos_embed, std=0.02)
        for name, module in self.named_modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.constant_(module.bias, head_bias if name == "head" else 0.0)

    def _final_norm(self, x):
        """``norm`` over the channels of an (N, C, H, W) map."""
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

    def forward_features(self, x):
        """Images (N, in_chans, img_size, img_size) -> the normalised last level's map (N, num_features, H / 4 /
        2^(levels - 1), same)."""
        x = self.patch_embed(x)
        x = self.levels(x)
        x = self._final_norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the levels picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map, normalised when the last level ran. ``norm``
        normalises the last level's intermediate; ``stop_early`` skips the levels after the last one picked."""
        return normed_stage_intermediates(x, self.patch_embed, self.levels, self._final_norm, indices, norm,
                                          stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the levels after the last one ``indices`` picks, the final norm when asked or when levels go, and
        the classifier and pooling when asked or when levels go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "levels", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _nest(variant, pretrained, progress, kwargs, **model_args):
    """A NesT entrypoint's body: timm's configuration (224-pixel images; TensorFlow padding for the JAX models),
    overridable by the caller's ``kwargs``; ``features_only`` gives timm's taps (the three levels unless
    ``out_indices`` says otherwise) under its flattened names (``levels_0``...)."""
    return build_model(Nest, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def nest_base(pretrained=False, progress=True, **kwargs):
    """NesT-B: widths 128-512, heads 4-16, depths (2, 2, 20), PyTorch padding."""
    return _nest("nest_base", pretrained, progress, kwargs, img_size=224, embed_dims=(128, 256, 512),
                 num_heads=(4, 8, 16), depths=(2, 2, 20))


@register_model
def nest_small(pretrained=False, progress=True, **kwargs):
    """NesT-S: widths 96-384, heads 3-12, depths (2, 2, 20), PyTorch padding."""
    return _nest("nest_small", pretrained, progress, kwargs, img_size=224, embed_dims=(96, 192, 384),
                 num_heads=(3, 6, 12), depths=(2, 2, 20))


@register_model
def nest_tiny(pretrained=False, progress=True, **kwargs):
    """NesT-T: widths 96-384, heads 3-12, depths (2, 2, 8), PyTorch padding."""
    return _nest("nest_tiny", pretrained, progress, kwargs, img_size=224, embed_dims=(96, 192, 384),
                 num_heads=(3, 6, 12), depths=(2, 2, 8))


@register_model
def nest_base_jx(pretrained=False, progress=True, **kwargs):
    """NesT-B (JAX weights): widths 128-512, heads 4-16, depths (2, 2, 20)."""
    return _nest("nest_base_jx", pretrained, progress, kwargs, img_size=224, embed_dims=(128, 256, 512),
                 num_heads=(4, 8, 16), depths=(2, 2, 20), pad_type="same")


@register_model
def nest_small_jx(pretrained=False, progress=True, **kwargs):
    """NesT-S (JAX weights): widths 96-384, heads 3-12, depths (2, 2, 20)."""
    return _nest("nest_small_jx", pretrained, progress, kwargs, img_size=224, embed_dims=(96, 192, 384),
                 num_heads=(3, 6, 12), depths=(2, 2, 20), pad_type="same")


@register_model
def nest_tiny_jx(pretrained=False, progress=True, **kwargs):
    """NesT-T (JAX weights): widths 96-384, heads 3-12, depths (2, 2, 8)."""
    return _nest("nest_tiny_jx", pretrained, progress, kwargs, img_size=224, embed_dims=(96, 192, 384),
                 num_heads=(3, 6, 12), depths=(2, 2, 8), pad_type="same")
