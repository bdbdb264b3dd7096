"""ConViT (d'Ascoli et al. 2021, "ConViT: Improving Vision Transformers with Soft Convolutional Inductive Biases"):
timm's ``convit`` models, convit_tiny, convit_small and convit_base.

A Vision Transformer whose first blocks use gated positional self-attention (GPSA): each head mixes the usual
content attention with a positional attention that depends only on the relative offset between patches, through a
learnt sigmoid gate. The positional part is initialised so that the heads attend to the neighbouring patches of a
small kernel around each patch, like a convolution; training may then open the gate towards content attention. The
patch tokens (with absolute position embeddings) go through the GPSA blocks without a class token, which joins
before the remaining ordinary self-attention blocks; the final class token (or the patch tokens' average) is
classified.

This is timm's ``ConVit``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm,
so timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was built
for (``img_size``). ``features_only=True`` returns the outputs of the last blocks (timm's default: three) as
(N, C, H/16, W/16) maps.
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import (Mlp, PatchEmbed, TokenPoolHeadApi, check_token_pool, drop_path_module, init_linear_layers,
                      trunc_normal_)
from ._norm import LayerNorm

__all__ = []


def _relative_indices(num_patches, dtype, device=None):
    """The (1, P, P, 3) relative offsets between the patches of a square grid of ``num_patches`` (row-major): the
    column offset, the row offset and the squared distance from each query patch to each key patch."""
    side = int(num_patches ** 0.5)
    coords = torch.arange(side, dtype=torch.float32, device=device)
    offsets = coords.view(1, -1) - coords.view(-1, 1)
    dx = offsets.repeat(side, side)
    dy = offsets.repeat_interleave(side, dim=0).repeat_interleave(side, dim=1)
    indices = torch.stack([dx, dy, dx ** 2 + dy ** 2], dim=-1).unsqueeze(0)
    return indices.to(dtype)


class GPSA(nn.Module):
    """Gated positional self-attention: per head, softmax content attention (queries and keys from ``qk``) and
    softmax positional attention (``pos_proj`` of each pair of patches' relative offset and squared distance) mixed
    as (1 - sigmoid(g)) content + sigmoid(g) positional with the learnt ``gating_param`` g, renormalised, then
    applied to the values ``v`` and projected by ``proj``.

    ``local_init`` makes the values the identity and points each head at one offset of a sqrt(heads)-wide kernel
    with a sharpness ``locality_strength``, so that the layer starts as a convolution. ``rel_indices`` caches the
    relative offsets for the token count last seen (a buffer outside the state_dict, as in timm).
    """

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0, locality_strength=1.0):
        super().__init__()
        self.num_heads = num_heads
        self.dim = dim
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.locality_strength = locality_strength
        self.qk = nn.Linear(dim, dim * 2, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.pos_proj = nn.Linear(3, num_heads)
        self.proj_drop = nn.Dropout(proj_drop)
        self.gating_param = nn.Parameter(torch.ones(num_heads))
        self.register_buffer("rel_indices", torch.zeros(1, 1, 1, 3), persistent=False)

    def local_init(self):
        """The convolution-like start (timm's ``local_init``): identity values; head h1 + k h2 of a k x k kernel
        (k = int(sqrt(heads))) scores a key by -|offset - its kernel offset|^2 (up to a constant), times
        ``locality_strength``; the other heads' positional weights keep their draw."""
        kernel_size = int(self.num_heads ** 0.5)
        center = (kernel_size - 1) / 2 if kernel_size % 2 == 0 else kernel_size // 2
        with torch.no_grad():
            self.v.weight.copy_(torch.eye(self.dim))
            weight = self.pos_proj.weight
            for h1 in range(kernel_size):
                for h2 in range(kernel_size):
                    position = h1 + kernel_size * h2
                    weight[position, 2] = -1
                    weight[position, 1] = 2 * (h1 - center)
                    weight[position, 0] = 2 * (h2 - center)
            weight.mul_(self.locality_strength)

    def get_attention(self, x):
        """The gated attention weights (N, heads, tokens, tokens), after attention dropout."""
        batch, tokens, dim = x.shape
        qk = self.qk(x).reshape(batch, tokens, 2, self.num_heads, dim // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k = qk[0], qk[1]
        pos_score = self.rel_indices.expand(batch, -1, -1, -1)
        pos_score = self.pos_proj(pos_score).permute(0, 3, 1, 2)
        patch_score = (q @ k.transpose(-2, -1)) * self.scale
        patch_score = patch_score.softmax(dim=-1)
        pos_score = pos_score.softmax(dim=-1)
        gate = torch.sigmoid(self.gating_param.view(1, -1, 1, 1))
        attn = (1.0 - gate) * patch_score + gate * pos_score
        attn = attn / attn.sum(dim=-1).unsqueeze(-1)
        attn = self.attn_drop(attn)
        return attn

    def get_attention_map(self, x, return_map=False):
        """Each head's mean attention distance in patches, over the batch's average attention map (and that map
        with ``return_map``)."""
        self._update_rel_indices(x.shape[1])
        attn_map = self.get_attention(x).mean(0)
        distances = self.rel_indices.squeeze()[:, :, -1] ** 0.5
        dist = torch.einsum("nm,hnm->h", distances, attn_map) / distances.shape[0]
        return (dist, attn_map) if return_map else dist

    def _update_rel_indices(self, tokens):
        """Recompute ``rel_indices`` when the token count changed, and while an nn.Graph build or an ONNX export
        records the forward (so that each recording holds the same ops, whatever ran before)."""
        if self.rel_indices.shape[1] != tokens or torch.jit.is_tracing():
            self.rel_indices = _relative_indices(tokens, self.qk.weight.dtype, self.qk.weight.device)

    def forward(self, x):
        batch, tokens, dim = x.shape
        self._update_rel_indices(tokens)
        attn = self.get_attention(x)
        v = self.v(x).reshape(batch, tokens, self.num_heads, dim // self.num_heads).permute(0, 2, 1, 3)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class MHSA(nn.Module):
    """Plain multi-head self-attention of ConViT's later blocks (timm's ``MHSA``): one ``qkv`` projection, softmax
    attention per head, attention dropout, ``proj``."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _attention(self, x):
        """Softmax attention weights (N, heads, tokens, tokens) and values (N, heads, tokens, head_dim)."""
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, dim // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        return attn.softmax(dim=-1), v

    def get_attention_map(self, x, return_map=False):
        """Each head's mean attention distance in patches (the tokens taken as a square grid), over the batch's
        average attention map (and that map with ``return_map``)."""
        attn_map = self._attention(x)[0].mean(0)
        tokens = x.shape[1]
        distances = _relative_indices(tokens, attn_map.dtype, attn_map.device)[0, :, :, -1] ** 0.5
        dist = torch.einsum("nm,hnm->h", distances, attn_map) / tokens
        return (dist, attn_map) if return_map else dist

    def forward(self, x):
        batch, tokens, dim = x.shape
        attn, v = self._attention(x)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    """ConViT's pre-norm block: x + drop_path(attn(norm1(x))), then x + drop_path(mlp(norm2(x))), the attention
    gated positional (``GPSA``) with ``use_gpsa``, else plain (``MHSA``). One ``drop_path`` module serves both
    branches, as in timm."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=LayerNorm, use_gpsa=True, locality_strength=1.0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.use_gpsa = use_gpsa
        if use_gpsa:
            self.attn = GPSA(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop,
                             locality_strength=locality_strength)
        else:
            self.attn = MHSA(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)

    def forward(self, x):
        x = x + self.drop_path(self.attn(self.norm1(x)))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


class ConVit(TokenPoolHeadApi, nn.Module):
    """Patch embedding with position embeddings, ``local_up_to_layer`` GPSA blocks on the patch tokens, then the
    class token and ``depth - local_up_to_layer`` plain self-attention blocks, a norm and a linear head (timm's
    ``ConVit``, its arguments and defaults).

    ``embed_dim`` is the width of one head: the model is ``embed_dim * num_heads`` wide. ``locality_strength``
    sharpens the GPSA heads' initial kernels; ``use_pos_embed=False`` drops the position embeddings.
    ``global_pool``: 'token' classifies the class token, 'avg' the patch tokens' average, '' returns the whole
    sequence. Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate`` on attention weights,
    ``proj_drop_rate`` in the blocks, ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of
    the last block, rising linearly from 0 at the first. ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=False, drop_rate=0.0, pos_drop_rate=0.0,
                 proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=LayerNorm,
                 local_up_to_layer=3, locality_strength=1.0, use_pos_embed=True):
        super().__init__()
        check_token_pool(global_pool)
        embed_dim *= num_heads
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.local_up_to_layer = local_up_to_layer
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.locality_strength = locality_strength
        self.use_pos_embed = use_pos_embed

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.num_prefix_tokens = 1
        self.pos_drop = nn.Dropout(pos_drop_rate)
        if use_pos_embed:
            self.pos_embed = nn.Parameter(torch.zeros(1, self.num_patches, embed_dim))
            trunc_normal_(self.pos_embed, std=0.02)
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList([
            Block(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop_rate,
                  attn_drop=attn_drop_rate, drop_path=drop_path_rates[i], norm_layer=norm_layer,
                  use_gpsa=i < local_up_to_layer, locality_strength=locality_strength)
            for i in range(depth)])
        self.norm = norm_layer(embed_dim)
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(num_chs=embed_dim, reduction=reduction, module=f"blocks.{i}") for i in range(depth)]
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        """timm's scheme, after the position embeddings' truncated normal (std 0.02) drawn at construction: the class
        token and every Linear weight truncated-normal (std 0.02), zero Linear biases, then each GPSA's
        ``local_init``; the patch projection keeps the convolution's default."""
        trunc_normal_(self.cls_token, std=0.02)
        init_linear_layers(self)
        for module in self.modules():
            if isinstance(module, GPSA):
                module.local_init()

    def _embed(self, x):
        """Images -> patch tokens with position embeddings, after ``pos_drop``. The tokens are laid out in memory
        as torch lays them out (channel by channel, as the convolution's map), as dropout draws its mask in memory
        order: so the same seed drops timm's elements."""
        x = self.patch_embed(x)
        if self.use_pos_embed:
            x = x + self.pos_embed
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
        x = self.pos_drop(x)
        return x

    def _run_blocks(self, x, blocks, take=(), norm=False):
        """``x`` through ``blocks``, the class token put first before block ``local_up_to_layer``; returns the
        output and the patch tokens output by the blocks in ``take`` (through the final norm if ``norm``)."""
        intermediates = []
        for i, block in enumerate(blocks):
            if i == self.local_up_to_layer and self.cls_token is not None:
                x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
            x = block(x)
            if i in take:
                y = self.norm(x) if norm else x
                intermediates.append(y[:, 1:] if i >= self.local_up_to_layer else y)
        return x, intermediates

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised sequence (N, 1 + patches, width), class token first (once
        the plain blocks have run)."""
        x = self._embed(x)
        x, _ = self._run_blocks(x, self.blocks)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The patch tokens output by the blocks picked by ``indices`` (None: all, n: the last n, or a list) as
        (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), and (unless ``intermediates_only``) the final
        normalised sequence. ``norm`` applies the final norm to each; ``stop_early`` skips the blocks after the
        last one picked."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        batch = x.shape[0]
        x = self._embed(x)
        x, intermediates = self._run_blocks(x, blocks, take, norm)
        if output_fmt == "NCHW":
            rows, cols = self.patch_embed.grid_size
            intermediates = [y.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2).contiguous() for y in intermediates]
        if intermediates_only:
            return intermediates
        return self.norm(x), intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks (and the final norm when asked, the head); where
        no plain block is left, the class token goes too, and with it a token-pooled head. Returns the absolute
        indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.ModuleList(list(self.blocks)[:max(take) + 1])
        if max(take) < self.local_up_to_layer:
            self.cls_token = None
            self.num_prefix_tokens = 0
            prune_head = prune_head or self.global_pool == "token"
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.reset_classifier(0, "")
        return take


def _convit(variant, pretrained, progress, kwargs, **model_args):
    """A ConViT entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by
    the caller's ``kwargs``."""
    return build_model(ConVit, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def convit_tiny(pretrained=False, progress=True, **kwargs):
    """ConViT-Ti: 4 heads of 48 channels (width 192), 10 GPSA + 2 plain blocks."""
    return _convit("convit_tiny", pretrained, progress, kwargs, img_size=224, local_up_to_layer=10,
                   locality_strength=1.0, embed_dim=48, num_heads=4)


@register_model
def convit_small(pretrained=False, progress=True, **kwargs):
    """ConViT-S: 9 heads of 48 channels (width 432), 10 GPSA + 2 plain blocks."""
    return _convit("convit_small", pretrained, progress, kwargs, img_size=224, local_up_to_layer=10,
                   locality_strength=1.0, embed_dim=48, num_heads=9)


@register_model
def convit_base(pretrained=False, progress=True, **kwargs):
    """ConViT-B: 16 heads of 48 channels (width 768), 10 GPSA + 2 plain blocks."""
    return _convit("convit_base", pretrained, progress, kwargs, img_size=224, local_up_to_layer=10,
                   locality_strength=1.0, embed_dim=48, num_heads=16)
