"""XCiT (El-Nouby et al. 2021, "XCiT: Cross-Covariance Image Transformers"): timm's XCiT models, nano to large,
12 or 24 blocks, 16- or 8-pixel patches.

A transformer whose self-attention runs across channels instead of tokens. A stack of stride-2 3x3 convolutions
with BatchNorm and GELU embeds 16- or 8-pixel patches; a Fourier positional encoding (the sines and cosines of each
patch's row and column, projected by a 1x1 convolution) is added. Each XCiT block then does three residual steps,
each scaled by a learnt per-channel factor (layer scale, initialised to ``eta``): cross-covariance attention (XCA:
per head, the L2-normalised queries and keys give a channels x channels attention map, sharpened by a learnt
temperature, which mixes the value channels, so the cost grows linearly with the number of patches), local patch
interaction (LPI: two depthwise 3x3 convolutions with GELU and BatchNorm between, so neighbouring patches
communicate) and an MLP. Finally a class token joins and two class-attention blocks (CaiT's) update it from the
patch tokens; the normalised class token is classified. The convolutions make the model work at any image size.

This is timm's ``Xcit``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm, so
timm's checkpoints load with ``strict=True`` and give timm's outputs. ``features_only=True`` returns the outputs of
the last XCiT blocks (timm's default: three) as (N, C, H / patch, W / patch) maps.
"""
import math

import engine as torch
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import (Mlp, TokenPoolHeadApi, check_token_pool, drop_path_module, init_linear_layers, pair,
                      trunc_normal_)
from .cait import ClassAttn

__all__ = []


def _layer_norm(dim):
    """XCiT's default token norm: LayerNorm with eps 1e-6."""
    return nn.LayerNorm(dim, eps=1e-6)


class PositionalEncodingFourier(nn.Module):
    """The Fourier positional encoding of an H x W grid of patches, as a (N, dim, H, W) map.

    The row and column coordinates of each patch, scaled to (0, 2 pi), are divided by ``hidden_dim`` wavelengths
    (powers of ``temperature``, shared by sine and cosine pairs) and give ``hidden_dim`` sines and cosines each, as
    in "Attention is all you need"; ``token_projection`` (a 1x1 convolution) maps these 2 * ``hidden_dim`` features
    to ``dim`` channels.
    """

    def __init__(self, hidden_dim=32, dim=768, temperature=10000):
        super().__init__()
        self.token_projection = nn.Conv2d(hidden_dim * 2, dim, kernel_size=1)
        self.scale = 2 * math.pi
        self.temperature = temperature
        self.hidden_dim = hidden_dim
        self.dim = dim
        self.eps = 1e-6

    def _waves(self, count, device):
        """(count, hidden_dim) features of the coordinates 1..count: sine and cosine interleaved, in float32 (the
        wavelengths raised in float64 and rounded: the engine's float32 power is an ulp off torch's at times), made
        on ``device`` (a copy there would stop nn.Graph capturing a CUDA graph)."""
        coords = torch.arange(1, count + 1, dtype=torch.float32, device=device)
        coords = coords / (coords[-1:] + self.eps) * self.scale
        steps = torch.arange(self.hidden_dim, device=device)
        exponents = 2 * torch.div(steps, 2, rounding_mode="floor").float() / self.hidden_dim
        wavelengths = (self.temperature ** exponents.double()).float()
        angles = coords[:, None] / wavelengths
        return torch.stack([angles[:, 0::2].sin(), angles[:, 1::2].cos()], dim=2).flatten(1)

    def fourier_features(self, height, width, device=None):
        """The (1, 2 * hidden_dim, height, width) float32 map: each patch's row features, then its column's."""
        rows = self._waves(height, device)[:, None, :].expand(height, width, self.hidden_dim)
        cols = self._waves(width, device)[None, :, :].expand(height, width, self.hidden_dim)
        return torch.cat((rows, cols), dim=2).permute(2, 0, 1).unsqueeze(0)

    def forward(self, batch, height, width):
        weight = self.token_projection.weight
        features = self.fourier_features(height, width, weight.device).to(weight.dtype)
        pos = self.token_projection(features)
        return pos.repeat(batch, 1, 1, 1)


def conv3x3(in_planes, out_planes, stride=1):
    """A bias-free 3x3 convolution (padding 1) and its BatchNorm."""
    return nn.Sequential(
        nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(out_planes),
    )


class ConvPatchEmbed(nn.Module):
    """Patch embedding by stride-2 3x3 convolutions with BatchNorm, an activation between consecutive ones: four
    (16-pixel patches, widths embed_dim / 8, / 4, / 2, embed_dim) or three (8-pixel patches). Returns the (N, patches,
    embed_dim) tokens in row-major order and the (rows, columns) of the patch grid; the image may have any size (each
    convolution rounds its size up)."""

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768, act_layer=nn.GELU):
        super().__init__()
        img_size = pair(img_size)
        self.img_size = img_size
        self.patch_size = patch_size
        self.num_patches = (img_size[1] // patch_size) * (img_size[0] // patch_size)
        if patch_size == 16:
            widths = [embed_dim // 8, embed_dim // 4, embed_dim // 2, embed_dim]
        elif patch_size == 8:
            widths = [embed_dim // 4, embed_dim // 2, embed_dim]
        else:
            raise ValueError(f"XCiT's convolutional patch embedding takes patch_size 8 or 16, got {patch_size}")
        layers = [conv3x3(in_chans, widths[0], 2)]
        for in_width, out_width in zip(widths[:-1], widths[1:]):
            layers.append(act_layer())
            layers.append(conv3x3(in_width, out_width, 2))
        self.proj = nn.Sequential(*layers)

    def forward(self, x):
        x = self.proj(x)
        height, width = x.shape[2], x.shape[3]
        x = x.flatten(2).transpose(1, 2)
        return x, (height, width)


class LPI(nn.Module):
    """Local patch interaction: the tokens as a (N, C, H, W) map through a depthwise 3x3 convolution, the activation,
    BatchNorm and a second depthwise 3x3 convolution, so that each patch mixes with its 3x3 neighbourhood (which the
    attention across channels does not do)."""

    def __init__(self, in_features, act_layer=nn.GELU):
        super().__init__()
        self.conv1 = nn.Conv2d(in_features, in_features, kernel_size=3, padding=1, groups=in_features)
        self.act = act_layer()
        self.bn = nn.BatchNorm2d(in_features)
        self.conv2 = nn.Conv2d(in_features, in_features, kernel_size=3, padding=1, groups=in_features)

    def forward(self, x, height, width):
        batch, tokens, channels = x.shape
        x = x.permute(0, 2, 1).reshape(batch, channels, height, width)
        x = self.conv1(x)
        x = self.act(x)
        x = self.bn(x)
        x = self.conv2(x)
        x = x.reshape(batch, channels, tokens).permute(0, 2, 1)
        return x


class ClassAttentionBlock(nn.Module):
    """A class-attention block (CaiT's), over the whole sequence, class token first.

    The class token attends to all tokens (``attn``, queries from it alone); the patch tokens pass on their
    ``norm1`` output, so the first residual step adds gamma1 * [attn(norm1(x)), norm1(x)[1:]]. Then ``norm2``
    normalises the class token (every token with ``tokens_norm``) and the class token gets
    gamma2 * mlp(class token) added: the sum of the normalised sequence and the sequence with the updated class
    token, which doubles the patch tokens. Both quirks are the official model's, which its weights were trained
    with. ``drop_path1`` and ``drop_path2`` are timm's identities: these blocks have no stochastic depth.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, eta=1.0, tokens_norm=False):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = ClassAttn(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path1 = nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.drop_path2 = nn.Identity()
        self.gamma1 = nn.Parameter(torch.full((dim,), float(eta)))
        self.gamma2 = nn.Parameter(torch.full((dim,), float(eta)))
        self.tokens_norm = tokens_norm

    def forward(self, x):
        x_norm1 = self.norm1(x)
        x_attn = torch.cat([self.attn(x_norm1), x_norm1[:, 1:]], dim=1)
        x = x + self.drop_path1(self.gamma1 * x_attn)
        if self.tokens_norm:
            x = self.norm2(x)
        else:
            x = torch.cat([self.norm2(x[:, 0:1]), x[:, 1:]], dim=1)
        x_res = x
        cls_token = self.gamma2 * self.mlp(x[:, 0:1])
        x = torch.cat([cls_token, x[:, 1:]], dim=1)
        x = x_res + self.drop_path2(x)
        return x


class XCA(nn.Module):
    """Cross-covariance attention: per head, queries and keys (head_dim x tokens) are L2-normalised along the tokens;
    their product, times the head's learnt ``temperature``, is a head_dim x head_dim attention map (softmax over its
    rows) that mixes the value channels. ``qkv`` projects in, ``proj`` out."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.temperature = nn.Parameter(torch.ones(num_heads, 1, 1))
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, dim // self.num_heads).permute(2, 0, 3, 4, 1)
        q, k, v = qkv.unbind(0)
        q = nn.functional.normalize(q, dim=-1)
        k = nn.functional.normalize(k, dim=-1)
        attn = (q @ k.transpose(-2, -1)) * self.temperature
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.permute(0, 3, 1, 2).reshape(batch, tokens, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class XCABlock(nn.Module):
    """An XCiT block on the patch tokens of an H x W grid, three residual steps each scaled by a layer scale and
    under stochastic depth: x + gamma1 * attn(norm1(x)) (XCA), then x + gamma3 * local_mp(norm3(x)) (LPI), then
    x + gamma2 * mlp(norm2(x)) (the numbering is the official model's)."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, eta=1.0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = XCA(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm3 = norm_layer(dim)
        self.local_mp = LPI(dim, act_layer=act_layer)
        self.drop_path3 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.drop_path2 = drop_path_module(drop_path)
        self.gamma1 = nn.Parameter(torch.full((dim,), float(eta)))
        self.gamma3 = nn.Parameter(torch.full((dim,), float(eta)))
        self.gamma2 = nn.Parameter(torch.full((dim,), float(eta)))

    def forward(self, x, height, width):
        x = x + self.drop_path1(self.gamma1 * self.attn(self.norm1(x)))
        x = x + self.drop_path3(self.gamma3 * self.local_mp(self.norm3(x), height, width))
        x = x + self.drop_path2(self.gamma2 * self.mlp(self.norm2(x)))
        return x


class Xcit(TokenPoolHeadApi, nn.Module):
    """Convolutional patch embedding with the Fourier positional encoding, ``depth`` XCiT blocks on the patch tokens,
    ``cls_attn_layers`` class-attention blocks that bring in the class token, a norm and a linear head (timm's
    ``Xcit``, its arguments and defaults).

    ``eta`` is the layer scales' initial value; ``tokens_norm`` normalises every token (not only the class token)
    in the class-attention blocks; ``use_pos_embed=False`` leaves the positional encoding out. ``img_size`` is only
    recorded: the model takes any image size. ``global_pool``: 'token' classifies the class token, 'avg' the patch
    tokens' average, '' returns the whole sequence. Dropout: ``pos_drop_rate`` after the positional encoding,
    ``attn_drop_rate`` on attention weights and ``proj_drop_rate`` after projections and MLPs (all blocks),
    ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of every XCiT block (the same for all,
    as in timm). ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj.0.0", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "avg", "token")

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, drop_rate=0.0, pos_drop_rate=0.0,
                 proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, act_layer=nn.GELU, norm_layer=None,
                 cls_attn_layers=2, use_pos_embed=True, eta=1.0, tokens_norm=False):
        super().__init__()
        check_token_pool(global_pool, pools=self.global_pools)
        img_size = pair(img_size)
        if img_size[0] % patch_size or img_size[1] % patch_size:
            raise ValueError(f"patch_size {patch_size} should divide img_size {img_size}")
        norm_layer = norm_layer or _layer_norm
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.global_pool = global_pool

        self.patch_embed = ConvPatchEmbed(img_size, patch_size, in_chans, embed_dim, act_layer=act_layer)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.num_prefix_tokens = 1
        self.pos_embed = PositionalEncodingFourier(dim=embed_dim) if use_pos_embed else None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.blocks = nn.ModuleList([
            XCABlock(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop_rate,
                     attn_drop=attn_drop_rate, drop_path=drop_path_rate, act_layer=act_layer, norm_layer=norm_layer,
                     eta=eta)
            for _ in range(depth)])
        self.feature_info = [dict(num_chs=embed_dim, reduction=patch_size, module=f"blocks.{i}") for i in range(depth)]
        self.cls_attn_blocks = nn.ModuleList([
            ClassAttentionBlock(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                                proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, act_layer=act_layer,
                                norm_layer=norm_layer, eta=eta, tokens_norm=tokens_norm)
            for _ in range(cls_attn_layers)])
        self.norm = norm_layer(embed_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        """timm's scheme: a truncated-normal class token and Linear weights (std 0.02), zero Linear biases; the
        convolutions keep their default initialisation, the layer scales ``eta``."""
        trunc_normal_(self.cls_token, std=0.02)
        init_linear_layers(self)

    def _embed(self, x):
        """Images -> patch tokens with the positional encoding, after ``pos_drop``, and the patch grid's size."""
        batch = x.shape[0]
        x, (height, width) = self.patch_embed(x)
        if self.pos_embed is not None:
            pos = self.pos_embed(batch, height, width)
            x = x + pos.flatten(2).transpose(1, 2)
        x = self.pos_drop(x)
        return x, (height, width)

    def forward_cls(self, x):
        """The class token prepended to the patch tokens ``x``, through the class-attention blocks."""
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        for block in self.cls_attn_blocks:
            x = block(x)
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised sequence (N, 1 + patches, embed_dim), class token first."""
        x, (height, width) = self._embed(x)
        for block in self.blocks:
            x = block(x, height, width)
        if self.cls_attn_blocks is not None:
            x = self.forward_cls(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the XCiT blocks picked by ``indices`` (None: all, n: the last n, or a list) as
        (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), and (unless ``intermediates_only``) the final
        normalised sequence with the class token. ``norm`` applies the final norm to each; ``stop_early`` skips the
        blocks after the last one picked."""
        if output_fmt not in ("NCHW", "NLC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NLC', got {output_fmt!r}")
        take = take_indices(len(self.blocks), indices)
        batch = x.shape[0]
        x, (height, width) = self._embed(x)
        blocks = self.blocks[:max(take) + 1] if stop_early else self.blocks
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x, height, width)
            if i in take:
                intermediates.append(self.norm(x) if norm else x)
        if output_fmt == "NCHW":
            intermediates = [y.reshape(batch, height, width, y.shape[-1]).permute(0, 3, 1, 2).contiguous()
                             for y in intermediates]
        if intermediates_only:
            return intermediates
        if self.cls_attn_blocks is not None:
            x = self.forward_cls(x)
        x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks, the final norm when asked, and with the head the
        class token and the class-attention blocks; returns the absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = self.blocks[:max(take) + 1]
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.cls_attn_blocks = None
            self.cls_token = None
            self.num_prefix_tokens = 0
            self.reset_classifier(0, "")
        return take


def _xcit(variant, pretrained, progress, kwargs, **model_args):
    """An XCiT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(Xcit, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def xcit_nano_12_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-N12/16 (224 weights): width 128, 12 blocks, 4 heads, 16-pixel patches, layer scale 1, class-token-only
    norm in the class-attention blocks."""
    return _xcit("xcit_nano_12_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=128, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=False)


@register_model
def xcit_nano_12_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-N12/16 (384 weights): width 128, 12 blocks, 4 heads, 16-pixel patches, layer scale 1, class-token-only
    norm in the class-attention blocks."""
    return _xcit("xcit_nano_12_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=128, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=False, img_size=384)


@register_model
def xcit_tiny_12_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-T12/16 (224 weights): width 192, 12 blocks, 4 heads, 16-pixel patches, layer scale 1."""
    return _xcit("xcit_tiny_12_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=192, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=True)


@register_model
def xcit_tiny_12_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-T12/16 (384 weights): width 192, 12 blocks, 4 heads, 16-pixel patches, layer scale 1."""
    return _xcit("xcit_tiny_12_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=192, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=True)


@register_model
def xcit_small_12_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-S12/16 (224 weights): width 384, 12 blocks, 8 heads, 16-pixel patches, layer scale 1."""
    return _xcit("xcit_small_12_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=12,
                 num_heads=8, eta=1.0, tokens_norm=True)


@register_model
def xcit_small_12_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-S12/16 (384 weights): width 384, 12 blocks, 8 heads, 16-pixel patches, layer scale 1."""
    return _xcit("xcit_small_12_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=12,
                 num_heads=8, eta=1.0, tokens_norm=True)


@register_model
def xcit_tiny_24_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-T24/16 (224 weights): width 192, 24 blocks, 4 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_tiny_24_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=192, depth=24,
                 num_heads=4, eta=1e-5, tokens_norm=True)


@register_model
def xcit_tiny_24_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-T24/16 (384 weights): width 192, 24 blocks, 4 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_tiny_24_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=192, depth=24,
                 num_heads=4, eta=1e-5, tokens_norm=True)


@register_model
def xcit_small_24_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-S24/16 (224 weights): width 384, 24 blocks, 8 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_small_24_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_small_24_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-S24/16 (384 weights): width 384, 24 blocks, 8 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_small_24_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_medium_24_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-M24/16 (224 weights): width 512, 24 blocks, 8 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_medium_24_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=512, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_medium_24_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-M24/16 (384 weights): width 512, 24 blocks, 8 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_medium_24_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=512, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_large_24_p16_224(pretrained=False, progress=True, **kwargs):
    """XCiT-L24/16 (224 weights): width 768, 24 blocks, 16 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_large_24_p16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=24,
                 num_heads=16, eta=1e-5, tokens_norm=True)


@register_model
def xcit_large_24_p16_384(pretrained=False, progress=True, **kwargs):
    """XCiT-L24/16 (384 weights): width 768, 24 blocks, 16 heads, 16-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_large_24_p16_384", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=24,
                 num_heads=16, eta=1e-5, tokens_norm=True)


@register_model
def xcit_nano_12_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-N12/8 (224 weights): width 128, 12 blocks, 4 heads, 8-pixel patches, layer scale 1, class-token-only
    norm in the class-attention blocks."""
    return _xcit("xcit_nano_12_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=128, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=False)


@register_model
def xcit_nano_12_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-N12/8 (384 weights): width 128, 12 blocks, 4 heads, 8-pixel patches, layer scale 1, class-token-only
    norm in the class-attention blocks."""
    return _xcit("xcit_nano_12_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=128, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=False)


@register_model
def xcit_tiny_12_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-T12/8 (224 weights): width 192, 12 blocks, 4 heads, 8-pixel patches, layer scale 1."""
    return _xcit("xcit_tiny_12_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=192, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=True)


@register_model
def xcit_tiny_12_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-T12/8 (384 weights): width 192, 12 blocks, 4 heads, 8-pixel patches, layer scale 1."""
    return _xcit("xcit_tiny_12_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=192, depth=12,
                 num_heads=4, eta=1.0, tokens_norm=True)


@register_model
def xcit_small_12_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-S12/8 (224 weights): width 384, 12 blocks, 8 heads, 8-pixel patches, layer scale 1."""
    return _xcit("xcit_small_12_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=384, depth=12,
                 num_heads=8, eta=1.0, tokens_norm=True)


@register_model
def xcit_small_12_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-S12/8 (384 weights): width 384, 12 blocks, 8 heads, 8-pixel patches, layer scale 1."""
    return _xcit("xcit_small_12_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=384, depth=12,
                 num_heads=8, eta=1.0, tokens_norm=True)


@register_model
def xcit_tiny_24_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-T24/8 (224 weights): width 192, 24 blocks, 4 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_tiny_24_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=192, depth=24,
                 num_heads=4, eta=1e-5, tokens_norm=True)


@register_model
def xcit_tiny_24_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-T24/8 (384 weights): width 192, 24 blocks, 4 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_tiny_24_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=192, depth=24,
                 num_heads=4, eta=1e-5, tokens_norm=True)


@register_model
def xcit_small_24_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-S24/8 (224 weights): width 384, 24 blocks, 8 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_small_24_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=384, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_small_24_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-S24/8 (384 weights): width 384, 24 blocks, 8 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_small_24_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=384, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_medium_24_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-M24/8 (224 weights): width 512, 24 blocks, 8 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_medium_24_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=512, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_medium_24_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-M24/8 (384 weights): width 512, 24 blocks, 8 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_medium_24_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=512, depth=24,
                 num_heads=8, eta=1e-5, tokens_norm=True)


@register_model
def xcit_large_24_p8_224(pretrained=False, progress=True, **kwargs):
    """XCiT-L24/8 (224 weights): width 768, 24 blocks, 16 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_large_24_p8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=768, depth=24,
                 num_heads=16, eta=1e-5, tokens_norm=True)


@register_model
def xcit_large_24_p8_384(pretrained=False, progress=True, **kwargs):
    """XCiT-L24/8 (384 weights): width 768, 24 blocks, 16 heads, 8-pixel patches, layer scale 1e-5."""
    return _xcit("xcit_large_24_p8_384", pretrained, progress, kwargs, patch_size=8, embed_dim=768, depth=24,
                 num_heads=16, eta=1e-5, tokens_norm=True)
