"""EVA (Fang et al. 2022, "EVA: Exploring the Limits of Masked Visual Representation Learning at Scale"), EVA-02
(Fang et al. 2023, "EVA-02: A Visual Representation for Neon Genesis"), EVA-CLIP (Sun et al. 2023, "EVA-CLIP:
Improved Training Techniques for CLIP at Scale") and the other rotary-position ViTs in timm's ``eva`` module: RoPE-ViT
(Heo et al. 2024, "Rotary Position Embedding for Vision Transformer"), timm's ViTs with register tokens and RoPE,
the Perception Encoder (Bolya et al. 2025, "Perception Encoder: The best visual embeddings are not at the output of
the network"), DINOv3 (Simeoni et al. 2025, "DINOv3"), LingBot-Vision (Fu et al. 2026, "Vision Pretraining for
Dense Spatial Perception") and Sapiens2 (Khirodkar et al. 2026, "Sapiens2"). Models: eva_giant_patch14_* and
eva02_*_patch14_* (MIM and ImageNet fine-tuned), eva_giant_patch14_clip_224 and eva02_*_clip_* (CLIP image
towers), vit_*_patch16_rope_* (RoPE-ViT and timm's), vit_pe_{core,lang,spatial}_* (Perception Encoder),
vit_*_patch16_dinov3[_qkvb] (DINOv3), vit_*_patch16_lingbot (LingBot-Vision) and vit_*_patch16_sapiens2 (Sapiens2).

All are vision transformers over non-overlapping patches (pre-norm blocks, or residual post-norm ones in EVA-02-E)
whose blocks may add:

- rotary position embeddings (RoPE): before attention, each head's queries and keys (of the patch tokens; the class
  and register tokens are left alone) are rotated pair of channels by pair of channels, by angles proportional to the
  patch's position, so that the attention scores depend on relative positions. EVA-02's axial RoPE gives half the
  frequencies to the row and half to the column (``rope_type='cat'``); RoPE-Mixed learns, per block and head, a pair
  of frequencies for every channel pair, mixing both axes (``rope_type='mixed'``); DINOv3's RoPE uses patch centres
  normalised to [-1, 1], so any image size spans the same range, and may jitter them in training
  (``rope_type='dinov3'``). The channel pairs are neighbours, or with ``rope_rotate_half`` channel i and i + D/2;
- a SwiGLU MLP (SiLU-gated), with a LayerNorm before its output projection (``scale_mlp``, EVA-02 B/L);
- EVA's query / value biases without a key bias (the key's would cancel in the softmax), or a fused bias; normalised
  queries and keys and fewer key / value heads than query heads (grouped-query attention, Sapiens2);
- register tokens (extra learnt tokens beside or instead of the class token), layer scale (on both branches or the
  attention's only), learnt absolute position embeddings or none, attention pooling by a learnt query ('map').

Model names, module names, ``state_dict`` keys, defaults and initialisation follow timm's ``eva`` module, so timm's
checkpoints load directly. A model runs at the image size it was built for (``img_size``), or with
``dynamic_img_size`` (DINOv3, LingBot, Sapiens2) at any multiple of the patch size; ``features_only=True`` returns
the last blocks' outputs (timm's default: three) as (N, C, H/p, W/p) maps.
"""
import math
from functools import partial

import engine as torch
from engine import nn
from engine.nn import functional as F

from .._features import FeatureGetterNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, PatchEmbed, QkvBias, drop_path_module, init_linear_layers, pair, trunc_normal_
from .vision_transformer import AttentionPoolLatent, RmsNorm, SwiGLU, SwiGLUPacked, ViTApi, resample_abs_pos_embed

__all__ = []

_layer_norm = partial(nn.LayerNorm, eps=1e-6)
# the Perception Encoder's, DINOv3's and LingBot's norm; Sapiens2's is RmsNorm (eps 1e-6)
_layer_norm_eps5 = partial(nn.LayerNorm, eps=1e-5)
_rms_norm = partial(RmsNorm, eps=1e-6)


# ---- rotary position embeddings ---------------------------------------------------------------------------------


def _rotate_pairs(x):
    """Each consecutive pair of channels turned by 90 degrees: (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)."""
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)


def _rotate_halves(x):
    """Channel i paired with channel i + D/2 and the pair turned by 90 degrees: (a, b) -> (-b, a) by halves."""
    first, second = x.chunk(2, dim=-1)
    return torch.cat([-second, first], dim=-1)


def apply_rot_embed_cat(x, embed, half=False):
    """``x`` (..., N, D) with each pair of channels rotated by its angle; ``embed`` (..., N, 2 * D) holds the angles'
    sines then their cosines in the pairs' layout (see ``_rope_layout``): neighbours, or with ``half`` channels i
    and i + D/2."""
    sin, cos = embed.chunk(2, -1)
    rotated = _rotate_halves(x) if half else _rotate_pairs(x)
    return x * cos + rotated * sin


def _rope_layout(x, rotate_half=False):
    """Per-pair values (..., D / 2) laid out on the D channels: each repeated for both neighbours of its pair
    (f0, f0, f1, f1, ...), or with ``rotate_half`` the whole set repeated (f0, f1, ..., f0, f1, ...)."""
    if rotate_half:
        return torch.cat([x, x], dim=-1)
    return x.repeat_interleave(2, -1)


def _grid_coordinates(feat_shape, grid_indexing="ij", ref_feat_shape=None, grid_offset=0.0, centered=False,
                      device=None):
    """The patches' float32 coordinates on the (rows, cols) grid ``feat_shape``, as (rows, cols, 2): the row index
    first with ``grid_indexing='ij'``, the column index first with 'xy'. ``grid_offset`` shifts both; with
    ``ref_feat_shape`` they are rescaled to span that (pretraining) grid instead (EVA-02's resolution change).
    ``centered`` (DINOv3) takes the patch centres (index + 0.5 + offset) over the grid's side, mapped from [0, 1]
    to [-1, 1]. The coordinates are made on ``device`` (the frequencies')."""
    if grid_indexing == "xy":
        feat_shape = feat_shape[::-1]
        ref_feat_shape = ref_feat_shape[::-1] if ref_feat_shape is not None else None
    if centered:
        axes = [(torch.arange(0.5, size, dtype=torch.float32, device=device) + grid_offset) / float(size)
                for size in feat_shape]
    else:
        axes = [torch.arange(size, dtype=torch.float32, device=device) + grid_offset for size in feat_shape]
    if ref_feat_shape is not None:
        axes = [t / size * ref for t, size, ref in zip(axes, feat_shape, ref_feat_shape)]
    grid = torch.stack(torch.meshgrid(axes, indexing=grid_indexing), dim=-1)
    return 2.0 * grid - 1.0 if centered else grid


class RotaryEmbeddingCat(nn.Module):
    """EVA-02's axial RoPE of one head of width ``dim``: the first half of the channel pairs turn with the first
    coordinate (see ``_grid_coordinates``), the second half with the second, at frequencies
    temperature^(-i / (dim / 4)), i = 0 .. dim / 4 - 1; ``rotate_half`` picks the pairs' layout.

    The frequencies (``bands``) and, on the fixed patch grid ``feat_shape``, the table (patches, 2 * dim) of sines
    and cosines (``pos_embed``) are float32 buffers computed once, not saved in the state_dict; without
    ``feat_shape`` (dynamic image size) the table is computed for each image size.
    """

    def __init__(self, dim, feat_shape=None, temperature=10000.0, ref_feat_shape=None, grid_offset=0.0,
                 grid_indexing="ij", rotate_half=False):
        super().__init__()
        if dim % 4:
            raise ValueError(f"axial RoPE needs a head width divisible by 4, got {dim}")
        self.ref_feat_shape = ref_feat_shape
        self.grid_offset = grid_offset
        self.grid_indexing = grid_indexing
        self.rotate_half = rotate_half
        num_bands = dim // 4
        bands = 1.0 / temperature ** (torch.arange(num_bands, dtype=torch.float32) / num_bands)
        self.register_buffer("bands", bands, persistent=False)
        self.feat_shape = tuple(feat_shape) if feat_shape is not None else None
        if self.feat_shape is None:
            self.pos_embed = None
        else:
            self.register_buffer("pos_embed", self._table(self.feat_shape), persistent=False)

    def _table(self, feat_shape):
        """The (patches, 2 * dim) sines then cosines on a ``feat_shape`` grid."""
        grid = _grid_coordinates(tuple(feat_shape), self.grid_indexing, self.ref_feat_shape, self.grid_offset,
                                 device=self.bands.device)
        angles = (grid.unsqueeze(-1) * self.bands).flatten(-2).flatten(0, -2)
        return torch.cat([_rope_layout(angles.sin(), self.rotate_half), _rope_layout(angles.cos(), self.rotate_half)],
                         -1)

    def get_embed(self, shape=None):
        """The table that ``apply_rot_embed_cat`` takes: the cached one, or for a (rows, cols) ``shape`` without a
        cache."""
        if self.pos_embed is not None:
            return self.pos_embed
        return self._table(shape)


class RotaryEmbeddingMixed(nn.Module):
    """RoPE-Mixed on the fixed patch grid ``feat_shape``: learnt frequencies ``freqs`` (2, depth, num_heads,
    head_dim / 2), a pair (f_x, f_y) for every channel pair of every head of every block; the pair turns by
    f_x * x + f_y * y at the patch (x, y) (with ``grid_indexing='xy'``, x is the column).

    The initial frequencies of a head have magnitudes temperature^(-4i / head_dim), i = 0 .. head_dim / 4 - 1, along
    a random direction (one per block and head) for the first half of its pairs and the perpendicular one for the
    second half. The coordinates are float32 buffers (``t_x``, ``t_y``), not saved in the state_dict.
    """

    def __init__(self, dim, depth, num_heads, feat_shape, temperature=10.0, grid_indexing="xy"):
        super().__init__()
        head_dim = dim // num_heads
        if head_dim % 4:
            raise ValueError(f"mixed RoPE needs a head width divisible by 4, got {head_dim}")
        magnitudes = 1.0 / temperature ** (torch.arange(0, head_dim, 4) / head_dim)
        directions = torch.rand(depth, num_heads, 1) * 2 * math.pi
        fx = torch.cat([magnitudes * directions.cos(), magnitudes * (directions + math.pi / 2).cos()], -1)
        fy = torch.cat([magnitudes * directions.sin(), magnitudes * (directions + math.pi / 2).sin()], -1)
        self.freqs = nn.Parameter(torch.stack([fx, fy]))
        grid = _grid_coordinates(tuple(feat_shape), grid_indexing).reshape(-1, 2)
        self.register_buffer("t_x", grid[:, 0].clone(), persistent=False)
        self.register_buffer("t_y", grid[:, 1].clone(), persistent=False)

    def get_embed(self):
        """The (depth, num_heads, patches, 2 * head_dim) tables of sines and cosines, computed in float32 (as timm
        does, whatever the frequencies' dtype) and returned in the frequencies' dtype."""
        freqs = self.freqs.float()
        t_x, t_y = self.t_x.float(), self.t_y.float()
        angles = t_x.unsqueeze(-1) * freqs[0].unsqueeze(-2) + t_y.unsqueeze(-1) * freqs[1].unsqueeze(-2)
        embed = torch.cat([_rope_layout(angles.sin()), _rope_layout(angles.cos())], -1)
        return embed.to(self.freqs.dtype)


class RotaryEmbeddingDinoV3(nn.Module):
    """DINOv3's RoPE of one head of width ``dim``: each patch centre's coordinates, normalised to [-1, 1] on its
    grid (so every image size spans the same range), turn the channel pairs by 2 pi c / period, with periods
    temperature^(2i / (dim / 2)), i = 0 .. dim / 4 - 1, for each coordinate; ``rotate_half`` picks the pairs' layout.

    In training, the coordinates may be augmented (one draw per table, in timm's order): shifted by U(-s, s) per axis
    (``shift_coords``), scaled by exp(U(-log j, log j)) per axis (``jitter_coords``) and by exp(U(-log r, log r))
    together (``rescale_coords``). The periods (``periods``, in the model's dtype) and, on a fixed ``feat_shape``,
    the unaugmented table (``pos_embed_cached``) are buffers not saved in the state_dict.
    """

    def __init__(self, dim, temperature=100.0, feat_shape=None, grid_offset=0.0, grid_indexing="ij",
                 rotate_half=True, shift_coords=None, jitter_coords=None, rescale_coords=None):
        super().__init__()
        for name, value, minimum in (("shift_coords", shift_coords, 0.0), ("jitter_coords", jitter_coords, 1.0),
                                     ("rescale_coords", rescale_coords, 1.0)):
            if value is not None and value < minimum:
                raise ValueError(f"{name} must be at least {minimum}, got {value}")
        self.grid_offset = grid_offset
        self.grid_indexing = grid_indexing
        self.rotate_half = rotate_half
        self.shift_coords = shift_coords
        self.jitter_coords = jitter_coords
        self.rescale_coords = rescale_coords
        self.aug_active = any(v is not None for v in (shift_coords, jitter_coords, rescale_coords))
        exponents = 2.0 * torch.arange(dim // 4, dtype=torch.float32) / (dim // 2)
        self.register_buffer("periods", float(temperature) ** exponents, persistent=False)
        self.feat_shape = tuple(feat_shape) if feat_shape is not None else None
        if self.feat_shape is None:
            self.pos_embed_cached = None
        else:
            self.register_buffer("pos_embed_cached", self._table(self.feat_shape, augment=False), persistent=False)

    def _augment(self, coords):
        """The (patches, 2) float32 coordinates shifted, jittered and rescaled as configured (timm's draws)."""
        if self.shift_coords is not None:
            shift = torch.empty(coords.shape[-1], device=coords.device).uniform_(-self.shift_coords, self.shift_coords)
            coords = coords + shift[None, :]
        if self.jitter_coords is not None:
            bound = math.log(self.jitter_coords)
            jitter = torch.empty(coords.shape[-1], device=coords.device).uniform_(-bound, bound).exp()
            coords = coords * jitter[None, :]
        if self.rescale_coords is not None:
            bound = math.log(self.rescale_coords)
            coords = coords * torch.empty(1, device=coords.device).uniform_(-bound, bound).exp()
        return coords

    def _table(self, feat_shape, augment):
        """The (patches, 2 * dim) sines then cosines on a ``feat_shape`` grid, in the periods' dtype."""
        coords = _grid_coordinates(tuple(feat_shape), self.grid_indexing, grid_offset=self.grid_offset, centered=True,
                                   device=self.periods.device)
        coords = coords.flatten(0, -2)
        if augment:
            coords = self._augment(coords)
        coords = coords[:, :, None].to(self.periods.dtype)
        angles = (2 * math.pi * coords / self.periods[None, None, :]).flatten(1)
        return torch.cat([_rope_layout(angles.sin(), self.rotate_half), _rope_layout(angles.cos(), self.rotate_half)],
                         -1)

    def get_embed(self, shape=None):
        """The table that ``apply_rot_embed_cat`` takes: for a (rows, cols) ``shape`` (augmented in training), or on
        the fixed grid (the cached one, unless augmenting in training)."""
        augment = self.training and self.aug_active
        if shape is not None:
            return self._table(shape, augment)
        if augment or self.pos_embed_cached is None:
            return self._table(self.feat_shape, augment)
        return self.pos_embed_cached


# ---- blocks -----------------------------------------------------------------------------------------------------


class _RopeSelfAttention(nn.Module):
    """Multi-head self-attention with RoPE on the patch tokens; subclasses make the queries, keys and values, then
    add the output layers (``_add_output_layers``).

    The first ``num_prefix_tokens`` tokens (class, registers) are not rotated. ``num_kv_heads`` (fewer than
    ``num_heads``, grouped-query attention) shares each key / value head among num_heads / num_kv_heads query heads;
    ``rotate_half`` pairs channel i with i + head_dim / 2 for the rotation instead of neighbours.
    """

    def __init__(self, dim, num_heads, num_prefix_tokens, rotate_half=False, num_kv_heads=None):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        num_kv_heads = num_kv_heads or num_heads
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads ({num_heads}) should be divisible by num_kv_heads ({num_kv_heads})")
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.num_prefix_tokens = num_prefix_tokens
        self.rotate_half = rotate_half

    def _add_output_layers(self, dim, attn_drop, proj_drop, norm_layer, qk_norm, scale_norm):
        """The layers after the input projections, in timm's order: ``q_norm`` and ``k_norm`` (per head, only with
        ``qk_norm``), ``attn_drop`` (of the attention weights, in training), ``norm`` (of the concatenated heads with
        ``scale_norm``, else an identity), ``proj`` and ``proj_drop``."""
        if qk_norm:
            self.q_norm = norm_layer(self.head_dim)
            self.k_norm = norm_layer(self.head_dim)
        else:
            self.q_norm = self.k_norm = None
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = norm_layer(dim) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _project_separately(self, x):
        """Queries (N, heads, tokens, head_dim), keys and values (N, kv heads, tokens, head_dim) from the separate
        ``q_proj``, ``k_proj`` and ``v_proj`` layers."""
        batch, tokens, _ = x.shape
        q = self.q_proj(x).reshape(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).reshape(batch, tokens, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).reshape(batch, tokens, self.num_kv_heads, self.head_dim).transpose(1, 2)
        return q, k, v

    def _rotate(self, t, rope):
        """The patch tokens of ``t`` (N, heads, tokens, head_dim) rotated by ``rope``, the prefix tokens as they are."""
        n = self.num_prefix_tokens
        return torch.cat([t[:, :, :n], apply_rot_embed_cat(t[:, :, n:], rope, self.rotate_half)], dim=2)

    def _attend(self, q, k, v, rope):
        """Attention of the queries over keys and values (normalised, rotated, then shared among their query heads),
        heads concatenated, then the output layers."""
        batch, _, tokens, _ = q.shape
        if self.q_norm is not None:
            q = self.q_norm(q)
            k = self.k_norm(k)
        if rope is not None:
            q = self._rotate(q, rope)
            k = self._rotate(k, rope)
        if self.num_kv_heads != self.num_heads:
            k = k.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)
            v = v.repeat_interleave(self.num_heads // self.num_kv_heads, dim=1)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, self.num_heads * self.head_dim)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class EvaAttention(QkvBias, _RopeSelfAttention):
    """EVA's attention: a bias-free ``qkv`` projection plus learnt query and value biases (``q_bias``, ``v_bias``)
    and a fixed zero key bias (``k_bias``, a buffer: a key bias cancels in the softmax); or, with
    ``qkv_fused=False``, separate ``q_proj``, ``k_proj`` (no bias) and ``v_proj`` layers. ``qkv_bias=False``
    drops the biases."""

    def __init__(self, dim, num_heads=8, qkv_bias=True, qkv_fused=True, num_prefix_tokens=1, attn_drop=0.0,
                 proj_drop=0.0, norm_layer=None, qk_norm=False, scale_norm=False, rotate_half=False):
        super().__init__(dim, num_heads, num_prefix_tokens, rotate_half)
        if qkv_fused:
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            self.q_proj = self.k_proj = self.v_proj = None
            self._add_qkv_bias(dim, qkv_bias)
        else:
            self.qkv = None
            self.q_bias = self.k_bias = self.v_bias = None
            self.q_proj = nn.Linear(dim, dim, bias=qkv_bias)
            self.k_proj = nn.Linear(dim, dim, bias=False)
            self.v_proj = nn.Linear(dim, dim, bias=qkv_bias)
        self._add_output_layers(dim, attn_drop, proj_drop, norm_layer, qk_norm, scale_norm)

    def forward(self, x, rope=None):
        if self.qkv is None:
            q, k, v = self._project_separately(x)
        else:
            batch, tokens, _ = x.shape
            qkv = F.linear(x, self.qkv.weight, self._qkv_bias())
            qkv = qkv.reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        return self._attend(q, k, v, rope)


class AttentionRope(_RopeSelfAttention):
    """RoPE-ViT's attention (timm's ``AttentionRope``): one ``qkv`` projection with its bias (``qkv_bias``), or
    separate ``q_proj``, ``k_proj`` and ``v_proj`` layers with ``qkv_fused=False`` (needed for grouped-query
    attention: ``num_kv_heads`` key / value heads)."""

    def __init__(self, dim, num_heads=8, qkv_bias=True, qkv_fused=True, num_prefix_tokens=1, attn_drop=0.0,
                 proj_drop=0.0, norm_layer=None, qk_norm=False, scale_norm=False, rotate_half=False,
                 num_kv_heads=None):
        super().__init__(dim, num_heads, num_prefix_tokens, rotate_half, num_kv_heads)
        kv_dim = self.head_dim * self.num_kv_heads
        if qkv_fused:
            if self.num_kv_heads != num_heads:
                raise ValueError("grouped-query attention (num_kv_heads) needs qkv_fused=False")
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_proj = self.k_proj = self.v_proj = None
        else:
            self.qkv = None
            self.q_proj = nn.Linear(dim, dim, bias=qkv_bias)
            self.k_proj = nn.Linear(dim, kv_dim, bias=qkv_bias)
            self.v_proj = nn.Linear(dim, kv_dim, bias=qkv_bias)
        self._add_output_layers(dim, attn_drop, proj_drop, norm_layer, qk_norm, scale_norm)

    def forward(self, x, rope=None):
        if self.qkv is None:
            q, k, v = self._project_separately(x)
        else:
            batch, tokens, _ = x.shape
            qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        return self._attend(q, k, v, rope)


def _make_mlp(dim, hidden_features, swiglu_mlp, split_swiglu, scale_mlp, align_to, act_layer, norm_layer, drop):
    """timm's choice of MLP: a SwiGLU (separate input layers where ``split_swiglu``, with the sub-layer norm if
    ``scale_mlp`` and the hidden width rounded up to ``align_to``; else packed ones) or the plain ``act_layer`` MLP
    (with the sub-layer norm if ``scale_mlp``)."""
    if swiglu_mlp and split_swiglu:
        return SwiGLU(dim, hidden_features, norm_layer=norm_layer if scale_mlp else None, drop=drop,
                      align_to=align_to)
    if swiglu_mlp:
        return SwiGLUPacked(dim, hidden_features * 2, drop=drop)
    return Mlp(dim, hidden_features, act_layer=act_layer, norm_layer=norm_layer if scale_mlp else None, drop=drop)


def _make_attention(dim, num_heads, attn_type, num_kv_heads, **kwargs):
    """EVA's attention ('eva') or RoPE-ViT's ('rope', the only one with grouped-query attention)."""
    if attn_type == "rope":
        return AttentionRope(dim, num_heads=num_heads, num_kv_heads=num_kv_heads, **kwargs)
    if num_kv_heads not in (None, num_heads):
        raise ValueError("grouped-query attention (num_kv_heads) needs attn_type='rope'")
    return EvaAttention(dim, num_heads=num_heads, **kwargs)


class EvaBlock(nn.Module):
    """Pre-norm transformer block: x + drop_path(gamma_1 * attn(norm1(x), rope)), then
    x + drop_path(gamma_2 * mlp(norm2(x))).

    ``attn_type`` picks EVA's attention ('eva') or RoPE-ViT's ('rope', with ``num_kv_heads``). ``init_values``
    enables the layer scales ``gamma_1`` and ``gamma_2`` (learnt per-channel factors starting at that value; the
    attention's only with ``attn_only_layer_scale``). The MLP's hidden width is int(dim * mlp_ratio) (see
    ``_make_mlp``: a SwiGLU has separate input layers with ``scale_mlp`` or ``swiglu_align_to``). ``drop_path`` is
    the probability of dropping a residual branch for a sample in training.
    """

    def __init__(self, dim, num_heads, qkv_bias=True, qkv_fused=True, mlp_ratio=4.0, swiglu_mlp=False,
                 swiglu_align_to=0, scale_mlp=False, scale_attn_inner=False, num_prefix_tokens=1, attn_type="eva",
                 rotate_half=False, qk_norm=False, num_kv_heads=None, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 init_values=None, attn_only_layer_scale=False, act_layer=nn.GELU, norm_layer=_layer_norm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = _make_attention(dim, num_heads, attn_type, num_kv_heads, qkv_bias=qkv_bias, qkv_fused=qkv_fused,
                                    num_prefix_tokens=num_prefix_tokens, attn_drop=attn_drop, proj_drop=proj_drop,
                                    norm_layer=norm_layer, qk_norm=qk_norm, scale_norm=scale_attn_inner,
                                    rotate_half=rotate_half)
        self.gamma_1 = nn.Parameter(torch.full((dim,), float(init_values))) if init_values is not None else None
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = _make_mlp(dim, int(dim * mlp_ratio), swiglu_mlp, scale_mlp or bool(swiglu_align_to), scale_mlp,
                             swiglu_align_to, act_layer, norm_layer, proj_drop)
        mlp_layer_scale = init_values is not None and not attn_only_layer_scale
        self.gamma_2 = nn.Parameter(torch.full((dim,), float(init_values))) if mlp_layer_scale else None
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, rope=None):
        x_attn = self.attn(self.norm1(x), rope=rope)
        if self.gamma_1 is not None:
            x_attn = self.gamma_1 * x_attn
        x = x + self.drop_path1(x_attn)
        x_mlp = self.mlp(self.norm2(x))
        if self.gamma_2 is not None:
            x_mlp = self.gamma_2 * x_mlp
        x = x + self.drop_path2(x_mlp)
        return x


class EvaBlockPostNorm(nn.Module):
    """Residual post-norm block (EVA-02-E's): x + drop_path(norm1(attn(x, rope))), then
    x + drop_path(norm2(mlp(x))), without layer scale (``init_values`` is ignored, as in timm). A SwiGLU MLP has
    separate input layers only with ``scale_mlp``."""

    def __init__(self, dim, num_heads, qkv_bias=True, qkv_fused=True, mlp_ratio=4.0, attn_type="eva",
                 rotate_half=False, swiglu_mlp=False, swiglu_align_to=0, scale_mlp=False, scale_attn_inner=False,
                 num_prefix_tokens=1, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, init_values=None,
                 act_layer=nn.GELU, norm_layer=_layer_norm):
        super().__init__()
        self.attn = _make_attention(dim, num_heads, attn_type, None, qkv_bias=qkv_bias, qkv_fused=qkv_fused,
                                    num_prefix_tokens=num_prefix_tokens, attn_drop=attn_drop, proj_drop=proj_drop,
                                    norm_layer=norm_layer, scale_norm=scale_attn_inner, rotate_half=rotate_half)
        self.norm1 = norm_layer(dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = _make_mlp(dim, int(dim * mlp_ratio), swiglu_mlp, scale_mlp, scale_mlp, swiglu_align_to, act_layer,
                             norm_layer, proj_drop)
        self.norm2 = norm_layer(dim)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, rope=None):
        x = x + self.drop_path1(self.norm1(self.attn(x, rope=rope)))
        x = x + self.drop_path2(self.norm2(self.mlp(x)))
        return x


# ---- the model --------------------------------------------------------------------------------------------------


class Eva(ViTApi, nn.Module):
    """A vision transformer with EVA's options: patch embedding, class and register tokens, absolute position
    embeddings and / or rotary ones, ``depth`` EvaBlocks (EvaBlockPostNorm with ``use_post_norm``), a final norm,
    pooling and a linear head.

    ``img_size`` is the only image size the model takes, unless ``dynamic_img_size`` (any multiple of the patch
    size: absolute position embeddings are resampled, the rotary tables computed for the image's grid).
    ``class_token`` and ``num_reg_tokens`` set the prefix tokens; ``use_abs_pos_emb`` adds learnt position
    embeddings (to the patch tokens only when ``no_embed_class``); ``use_rot_pos_emb`` adds RoPE of ``rope_type``
    'cat' (axial; ``rope_temperature``, ``rope_grid_indexing``, ``rope_grid_offset``, ``ref_feat_shape``), 'mixed'
    (learnt, per block) or 'dinov3' (normalised patch centres, with the training augmentations
    ``rope_shift_coords``, ``rope_jitter_coords``, ``rope_rescale_coords``); ``rope_rotate_half`` pairs channel i
    with i + D/2. Attention: ``qk_norm`` normalises queries and keys per head, ``num_kv_heads`` (an int, or one per
    block) sets the key / value heads of RoPE-ViT's attention. ``attn_only_layer_scale`` keeps the layer scale on
    the attention branch only. ``global_pool``: 'token' (the class token), 'avg', 'max', 'avgmax' (over the patch
    tokens), 'map' (a learnt query attends to every token: ``attn_pool``, with ``attn_pool_num_heads`` and
    ``attn_pool_mlp_ratio``) or '' (the whole sequence). The final norm is ``norm`` before pooling, or ``fc_norm``
    after it (the default for 'avg'), as ``use_post_transformer_norm`` and ``use_fc_norm`` say;
    ``use_pre_transformer_norm`` adds ``norm_pre`` (and drops the patch projection's bias). ``drop_rate`` is the
    dropout before the head, ``drop_path_rate`` the stochastic depth of the last block (rising linearly from 0 at
    the first). ``head_init_scale`` scales the head's initial weights. ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "avg", "avgmax", "max", "token", "map")

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=768,
                 depth=12, num_heads=12, num_kv_heads=None, qkv_bias=True, qkv_fused=True, qk_norm=False,
                 mlp_ratio=4.0, swiglu_mlp=False, swiglu_align_to=0, scale_mlp=False, scale_attn_inner=False,
                 attn_type="eva", drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0, norm_layer=None, init_values=None, attn_only_layer_scale=False, class_token=True,
                 num_reg_tokens=0, no_embed_class=False, use_abs_pos_emb=True, use_rot_pos_emb=False, rope_type="cat",
                 rope_grid_offset=0.0, rope_grid_indexing="ij", rope_temperature=10000.0, rope_rotate_half=False,
                 rope_shift_coords=None, rope_jitter_coords=None, rope_rescale_coords=None, use_post_norm=False,
                 use_pre_transformer_norm=False, use_post_transformer_norm=None, use_fc_norm=None,
                 attn_pool_num_heads=None, attn_pool_mlp_ratio=None, dynamic_img_size=False, ref_feat_shape=None,
                 head_init_scale=0.001):
        super().__init__()
        self._check_global_pool(global_pool, class_token)
        if attn_type not in ("eva", "rope"):
            raise ValueError(f"attn_type must be 'eva' or 'rope', got {attn_type!r}")
        if use_rot_pos_emb and rope_type not in ("cat", "mixed", "dinov3"):
            raise ValueError(f"rope_type must be 'cat', 'mixed' or 'dinov3', got {rope_type!r}")
        if use_rot_pos_emb and rope_type == "mixed" and (rope_rotate_half or dynamic_img_size):
            raise ValueError("rope_type='mixed' takes neither rope_rotate_half nor dynamic_img_size")
        if num_kv_heads is None or isinstance(num_kv_heads, int):
            num_kv_heads = (num_kv_heads,) * depth
        if len(num_kv_heads) != depth:
            raise ValueError(f"num_kv_heads needs one entry per block ({depth}), got {len(num_kv_heads)}")
        if use_post_norm and (qk_norm or attn_only_layer_scale or any(h is not None for h in num_kv_heads)):
            raise ValueError("qk_norm, num_kv_heads and attn_only_layer_scale need pre-norm blocks")
        norm_layer = norm_layer or _layer_norm
        fc_norm = global_pool == "avg" if use_fc_norm is None else use_fc_norm
        post_norm = not fc_norm if use_post_transformer_norm is None else use_post_transformer_norm
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = (1 if class_token else 0) + num_reg_tokens
        self.no_embed_class = no_embed_class
        self.dynamic_img_size = dynamic_img_size

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, bias=not use_pre_transformer_norm)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, num_reg_tokens, embed_dim)) if num_reg_tokens else None
        num_pos_tokens = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.pos_embed = nn.Parameter(torch.zeros(1, num_pos_tokens, embed_dim)) if use_abs_pos_emb else None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.rope_mixed = use_rot_pos_emb and rope_type == "mixed"
        feat_shape = None if dynamic_img_size else self.patch_embed.grid_size
        if not use_rot_pos_emb:
            self.rope = None
        elif self.rope_mixed:
            self.rope = RotaryEmbeddingMixed(embed_dim, depth, num_heads, feat_shape, temperature=rope_temperature,
                                             grid_indexing=rope_grid_indexing)
        elif rope_type == "dinov3":
            self.rope = RotaryEmbeddingDinoV3(embed_dim // num_heads, temperature=rope_temperature,
                                              feat_shape=feat_shape, grid_offset=rope_grid_offset,
                                              grid_indexing=rope_grid_indexing, rotate_half=rope_rotate_half,
                                              shift_coords=rope_shift_coords, jitter_coords=rope_jitter_coords,
                                              rescale_coords=rope_rescale_coords)
        else:
            ref_feat_shape = pair(ref_feat_shape) if ref_feat_shape is not None else None
            self.rope = RotaryEmbeddingCat(embed_dim // num_heads, feat_shape, temperature=rope_temperature,
                                           ref_feat_shape=ref_feat_shape, grid_offset=rope_grid_offset,
                                           grid_indexing=rope_grid_indexing, rotate_half=rope_rotate_half)
        self.norm_pre = norm_layer(embed_dim) if use_pre_transformer_norm else nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        shared = dict(qkv_bias=qkv_bias, qkv_fused=qkv_fused, mlp_ratio=mlp_ratio, swiglu_mlp=swiglu_mlp,
                      swiglu_align_to=swiglu_align_to, scale_mlp=scale_mlp, scale_attn_inner=scale_attn_inner,
                      num_prefix_tokens=self.num_prefix_tokens, attn_type=attn_type,
                      rotate_half=rope_rotate_half, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                      init_values=init_values, norm_layer=norm_layer)
        if use_post_norm:
            self.blocks = nn.ModuleList([EvaBlockPostNorm(embed_dim, num_heads, drop_path=drop_path_rates[i], **shared)
                                         for i in range(depth)])
        else:
            self.blocks = nn.ModuleList([
                EvaBlock(embed_dim, num_heads, qk_norm=qk_norm, num_kv_heads=num_kv_heads[i],
                         drop_path=drop_path_rates[i], attn_only_layer_scale=attn_only_layer_scale, **shared)
                for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim) if post_norm else nn.Identity()
        if global_pool == "map":
            self.attn_pool = AttentionPoolLatent(embed_dim, num_heads=attn_pool_num_heads or num_heads,
                                                 mlp_ratio=attn_pool_mlp_ratio or mlp_ratio, norm_layer=norm_layer)
        else:
            self.attn_pool = None
        self.fc_norm = norm_layer(embed_dim) if fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_init_scale = head_init_scale
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal (std 0.02) Linear weights with zero biases, then position embeddings,
        class and register tokens; each block's attention and MLP output weights divided by sqrt(2 * block number)
        (so the residual stream grows slowly with depth); the head's weights drawn again and scaled, with its bias,
        by ``head_init_scale``. The patch projection keeps the convolution's default initialisation, the attention
        pool's latent query its own draw."""
        init_linear_layers(self)
        for token in (self.pos_embed, self.cls_token, self.reg_token):
            if token is not None:
                trunc_normal_(token, std=0.02)
        self._fix_init_weight()
        self._init_head_scaled(self.head_init_scale)

    def _pos_embed(self, x, grid):
        """Patch tokens of a ``grid`` of patches -> (the sequence with prefix tokens and absolute position
        embeddings, after ``pos_drop``; the rotary embedding tables, or None). The tables come first, as in timm:
        in training, DINOv3's augmentation draws before the dropout."""
        if self.rope is None:
            rope = None
        elif self.dynamic_img_size:
            rope = self.rope.get_embed(shape=grid)
        else:
            rope = self.rope.get_embed()
        pos_embed = self.pos_embed
        if pos_embed is not None and self.dynamic_img_size:
            prefix_tokens = 0 if self.no_embed_class else self.num_prefix_tokens
            pos_embed = resample_abs_pos_embed(pos_embed, grid, self.patch_embed.grid_size, prefix_tokens,
                                               antialias=True)
        prefix = []
        if self.cls_token is not None:
            prefix.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            prefix.append(self.reg_token.expand(x.shape[0], -1, -1))
        if self.no_embed_class:
            if pos_embed is not None:
                x = x + pos_embed
            if prefix:
                x = torch.cat(prefix + [x], dim=1)
        else:
            if prefix:
                x = torch.cat(prefix + [x], dim=1)
            if pos_embed is not None:
                x = x + pos_embed
        x = self.pos_drop(x)
        return x, rope

    def _embed(self, x):
        """Images -> the token sequence the blocks take, and the rotary embedding tables (or None)."""
        grid = self._patch_grid(x)
        x = self._embed_patches(x)
        x, rope = self._pos_embed(x, grid)
        x = self.norm_pre(x)
        return x, rope

    def _block(self, block, index, x, rope):
        """Block ``index`` on the token sequence ``x`` (with its own RoPE tables in mixed mode)."""
        return block(x, rope=rope[index] if self.rope_mixed else rope)

    def pool(self, x, pool_type=None):
        """The attention pool's output ('map'), or the token sequence pooled as ``ViTApi.pool`` does."""
        if self.attn_pool is not None:
            return self.attn_pool(x)
        return super().pool(x, pool_type)

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) head for ``num_classes`` (0: an identity); ``global_pool`` changes the pooling
        too (the norms stay where they were built): 'map' keeps the attention pool (it cannot be added), any other
        drops it."""
        if global_pool is not None:
            if global_pool == "map" and self.attn_pool is None:
                raise ValueError("global_pool='map' cannot be added by reset_classifier: build the model with it")
            if global_pool != "map":
                self.attn_pool = None
        super().reset_classifier(num_classes, global_pool)


# ---- entrypoints ------------------------------------------------------------------------------------------------


def _eva(variant, pretrained, progress, kwargs, **model_args):
    """An entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(Eva, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_EVA_GIANT = dict(patch_size=14, embed_dim=1408, depth=40, num_heads=16, mlp_ratio=6144 / 1408)
# EVA-02: SwiGLU MLPs (2/3 of the usual width, so the same parameters), axial RoPE from a 224-pixel pretraining grid
_EVA02 = dict(patch_size=14, mlp_ratio=4 * 2 / 3, swiglu_mlp=True, use_rot_pos_emb=True, ref_feat_shape=(16, 16))
# timm's ViTs with register tokens, average pooling, layer scale and axial RoPE, no absolute position embeddings
_SBB_ROPE = dict(img_size=256, patch_size=16, qkv_fused=True, init_values=1e-5, class_token=False,
                 use_rot_pos_emb=True, use_abs_pos_emb=False, ref_feat_shape=(16, 16))
# RoPE-ViT (Naver): class-token pooling, layer scale; axial RoPE (temperature 100) or mixed (learnt, temperature 10)
_NAVER_ROPE = dict(patch_size=16, mlp_ratio=4, attn_type="rope", qkv_bias=True, init_values=1e-5, class_token=True,
                   global_pool="token", use_rot_pos_emb=True, rope_grid_indexing="xy")
_AXIAL = dict(use_abs_pos_emb=False, rope_temperature=100.0)
_AXIAL_APE = dict(no_embed_class=True, use_abs_pos_emb=True, rope_temperature=100.0)
_MIXED = dict(use_abs_pos_emb=False, rope_temperature=10.0, rope_type="mixed")
_MIXED_APE = dict(no_embed_class=True, use_abs_pos_emb=True, rope_temperature=10.0, rope_type="mixed")
_SMALL = dict(embed_dim=384, depth=12, num_heads=6)
_BASE = dict(embed_dim=768, depth=12, num_heads=12)
_LARGE = dict(embed_dim=1024, depth=24, num_heads=16)


@register_model
def eva_giant_patch14_224(pretrained=False, progress=True, **kwargs):
    """EVA-g/14 at 224 (CLIP-pretrained): width 1408, 40 blocks, 16 heads, absolute position embeddings only."""
    return _eva("eva_giant_patch14_224", pretrained, progress, kwargs, **_EVA_GIANT)


@register_model
def eva_giant_patch14_336(pretrained=False, progress=True, **kwargs):
    """EVA-g/14 at 336: width 1408, 40 blocks, 16 heads, absolute position embeddings only."""
    return _eva("eva_giant_patch14_336", pretrained, progress, kwargs, img_size=336, **_EVA_GIANT)


@register_model
def eva_giant_patch14_560(pretrained=False, progress=True, **kwargs):
    """EVA-g/14 at 560: width 1408, 40 blocks, 16 heads, absolute position embeddings only."""
    return _eva("eva_giant_patch14_560", pretrained, progress, kwargs, img_size=560, **_EVA_GIANT)


@register_model
def eva02_tiny_patch14_336(pretrained=False, progress=True, **kwargs):
    """EVA-02-Ti/14 at 336: width 192, 12 blocks, 3 heads, packed SwiGLU MLPs, axial RoPE."""
    return _eva("eva02_tiny_patch14_336", pretrained, progress, kwargs, img_size=336, embed_dim=192, depth=12,
                num_heads=3, **_EVA02)


@register_model
def eva02_small_patch14_336(pretrained=False, progress=True, **kwargs):
    """EVA-02-S/14 at 336: width 384, 12 blocks, 6 heads, packed SwiGLU MLPs, axial RoPE."""
    return _eva("eva02_small_patch14_336", pretrained, progress, kwargs, img_size=336, embed_dim=384, depth=12,
                num_heads=6, **_EVA02)


@register_model
def eva02_base_patch14_448(pretrained=False, progress=True, **kwargs):
    """EVA-02-B/14 at 448: width 768, 12 blocks, 12 heads, separate q/k/v projections, SwiGLU MLPs with a
    sub-layer norm, axial RoPE."""
    return _eva("eva02_base_patch14_448", pretrained, progress, kwargs, img_size=448, embed_dim=768, depth=12,
                num_heads=12, qkv_fused=False, scale_mlp=True, **_EVA02)


@register_model
def eva02_large_patch14_448(pretrained=False, progress=True, **kwargs):
    """EVA-02-L/14 at 448: width 1024, 24 blocks, 16 heads, separate q/k/v projections, SwiGLU MLPs with a
    sub-layer norm, axial RoPE."""
    return _eva("eva02_large_patch14_448", pretrained, progress, kwargs, img_size=448, embed_dim=1024, depth=24,
                num_heads=16, qkv_fused=False, scale_mlp=True, **_EVA02)


@register_model
def vit_medium_patch16_rope_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """timm's ViT-M/16 at 256 with one register token, average pooling and axial RoPE: width 512, 12 blocks,
    8 heads."""
    return _eva("vit_medium_patch16_rope_reg1_gap_256", pretrained, progress, kwargs, embed_dim=512, depth=12,
                num_heads=8, qkv_bias=True, num_reg_tokens=1, **_SBB_ROPE)


@register_model
def vit_mediumd_patch16_rope_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """timm's deeper ViT-M/16 at 256 with one register token, average pooling and axial RoPE: width 512,
    20 blocks, 8 heads, no qkv biases."""
    return _eva("vit_mediumd_patch16_rope_reg1_gap_256", pretrained, progress, kwargs, embed_dim=512, depth=20,
                num_heads=8, qkv_bias=False, num_reg_tokens=1, **_SBB_ROPE)


@register_model
def vit_betwixt_patch16_rope_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """timm's ViT-Betwixt/16 at 256 with four register tokens, average pooling and axial RoPE: width 640,
    12 blocks, 10 heads."""
    return _eva("vit_betwixt_patch16_rope_reg4_gap_256", pretrained, progress, kwargs, embed_dim=640, depth=12,
                num_heads=10, qkv_bias=True, num_reg_tokens=4, **_SBB_ROPE)


@register_model
def vit_base_patch16_rope_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """timm's ViT-B/16 at 256 with one register token, average pooling and axial RoPE: width 768, 12 blocks,
    12 heads."""
    return _eva("vit_base_patch16_rope_reg1_gap_256", pretrained, progress, kwargs, embed_dim=768, depth=12,
                num_heads=12, qkv_bias=True, num_reg_tokens=1, **_SBB_ROPE)


@register_model
def vit_small_patch16_rope_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-S/16 at 224: width 384, 12 blocks, 6 heads."""
    return _eva("vit_small_patch16_rope_224", pretrained, progress, kwargs, **_SMALL, **_NAVER_ROPE, **_AXIAL)


@register_model
def vit_base_patch16_rope_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-B/16 at 224: width 768, 12 blocks, 12 heads."""
    return _eva("vit_base_patch16_rope_224", pretrained, progress, kwargs, use_fc_norm=False, **_BASE,
                **_NAVER_ROPE, **_AXIAL)


@register_model
def vit_large_patch16_rope_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-L/16 at 224: width 1024, 24 blocks, 16 heads."""
    return _eva("vit_large_patch16_rope_224", pretrained, progress, kwargs, **_LARGE, **_NAVER_ROPE, **_AXIAL)


@register_model
def vit_small_patch16_rope_mixed_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-S/16 at 224: width 384, 12 blocks, 6 heads."""
    return _eva("vit_small_patch16_rope_mixed_224", pretrained, progress, kwargs, **_SMALL, **_NAVER_ROPE, **_MIXED)


@register_model
def vit_base_patch16_rope_mixed_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-B/16 at 224: width 768, 12 blocks, 12 heads."""
    return _eva("vit_base_patch16_rope_mixed_224", pretrained, progress, kwargs, **_BASE, **_NAVER_ROPE, **_MIXED)


@register_model
def vit_large_patch16_rope_mixed_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-L/16 at 224: width 1024, 24 blocks, 16 heads."""
    return _eva("vit_large_patch16_rope_mixed_224", pretrained, progress, kwargs, **_LARGE, **_NAVER_ROPE, **_MIXED)


@register_model
def vit_small_patch16_rope_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-S/16 at 224 with absolute position embeddings (on the patch tokens): width 384, 12 blocks,
    6 heads."""
    return _eva("vit_small_patch16_rope_ape_224", pretrained, progress, kwargs, **_SMALL, **_NAVER_ROPE,
                **_AXIAL_APE)


@register_model
def vit_base_patch16_rope_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-B/16 at 224 with absolute position embeddings (on the patch tokens): width 768, 12 blocks,
    12 heads."""
    return _eva("vit_base_patch16_rope_ape_224", pretrained, progress, kwargs, **_BASE, **_NAVER_ROPE, **_AXIAL_APE)


@register_model
def vit_large_patch16_rope_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Axial ViT-L/16 at 224 with absolute position embeddings (on the patch tokens): width 1024, 24 blocks,
    16 heads."""
    return _eva("vit_large_patch16_rope_ape_224", pretrained, progress, kwargs, **_LARGE, **_NAVER_ROPE,
                **_AXIAL_APE)


@register_model
def vit_small_patch16_rope_mixed_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-S/16 at 224 with absolute position embeddings (on the patch tokens): width 384, 12 blocks,
    6 heads."""
    return _eva("vit_small_patch16_rope_mixed_ape_224", pretrained, progress, kwargs, **_SMALL, **_NAVER_ROPE,
                **_MIXED_APE)


@register_model
def vit_base_patch16_rope_mixed_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-B/16 at 224 with absolute position embeddings (on the patch tokens): width 768, 12 blocks,
    12 heads."""
    return _eva("vit_base_patch16_rope_mixed_ape_224", pretrained, progress, kwargs, **_BASE, **_NAVER_ROPE,
                **_MIXED_APE)


@register_model
def vit_large_patch16_rope_mixed_ape_224(pretrained=False, progress=True, **kwargs):
    """RoPE-Mixed ViT-L/16 at 224 with absolute position embeddings (on the patch tokens): width 1024, 24 blocks,
    16 heads."""
    return _eva("vit_large_patch16_rope_mixed_ape_224", pretrained, progress, kwargs, **_LARGE, **_NAVER_ROPE,
                **_MIXED_APE)


# ---- EVA-02 at 224 (MIM-pretrained encoders) and the EVA / EVA-02 CLIP image towers -------------------------------

# EVA-02 B/L: separate q / k / v projections, SwiGLU with its sub-layer norm; the CLIP towers add the attention's
_EVA02_SPLIT = dict(qkv_fused=False, scale_mlp=True)
_CLIP_POOL = dict(global_pool="token")


@register_model
def eva02_tiny_patch14_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-Ti/14 at 224 (MIM encoder): width 192, 12 blocks, 3 heads, packed SwiGLU MLPs, axial RoPE."""
    return _eva("eva02_tiny_patch14_224", pretrained, progress, kwargs, img_size=224, embed_dim=192, depth=12,
                num_heads=3, **_EVA02)


@register_model
def eva02_small_patch14_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-S/14 at 224 (MIM encoder): width 384, 12 blocks, 6 heads, packed SwiGLU MLPs, axial RoPE."""
    return _eva("eva02_small_patch14_224", pretrained, progress, kwargs, img_size=224, embed_dim=384, depth=12,
                num_heads=6, **_EVA02)


@register_model
def eva02_base_patch14_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-B/14 at 224 (MIM encoder): width 768, 12 blocks, 12 heads, split q/k/v and SwiGLU with sub-norm."""
    return _eva("eva02_base_patch14_224", pretrained, progress, kwargs, img_size=224, embed_dim=768, depth=12,
                num_heads=12, **_EVA02_SPLIT, **_EVA02)


@register_model
def eva02_large_patch14_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-L/14 at 224 (MIM encoder): width 1024, 24 blocks, 16 heads, split q/k/v and SwiGLU with sub-norm."""
    return _eva("eva02_large_patch14_224", pretrained, progress, kwargs, img_size=224, embed_dim=1024, depth=24,
                num_heads=16, **_EVA02_SPLIT, **_EVA02)


@register_model
def eva_giant_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """EVA-g/14 CLIP image tower at 224: EVA-g with class-token pooling."""
    return _eva("eva_giant_patch14_clip_224", pretrained, progress, kwargs, img_size=224, **_EVA_GIANT, **_CLIP_POOL)


@register_model
def eva02_base_patch16_clip_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-CLIP-B/16 image tower at 224: EVA-02-B on 16-pixel patches with the attention's sub-layer norm."""
    return _eva("eva02_base_patch16_clip_224", pretrained, progress, kwargs, img_size=224, embed_dim=768, depth=12,
                num_heads=12, scale_attn_inner=True, **_EVA02_SPLIT, **{**_EVA02, "patch_size": 16}, **_CLIP_POOL)


@register_model
def eva02_large_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-CLIP-L/14 image tower at 224: EVA-02-L with the attention's sub-layer norm, class-token pooling."""
    return _eva("eva02_large_patch14_clip_224", pretrained, progress, kwargs, img_size=224, embed_dim=1024, depth=24,
                num_heads=16, scale_attn_inner=True, **_EVA02_SPLIT, **_EVA02, **_CLIP_POOL)


@register_model
def eva02_large_patch14_clip_336(pretrained=False, progress=True, **kwargs):
    """EVA-02-CLIP-L/14 image tower at 336: EVA-02-L with the attention's sub-layer norm, class-token pooling."""
    return _eva("eva02_large_patch14_clip_336", pretrained, progress, kwargs, img_size=336, embed_dim=1024, depth=24,
                num_heads=16, scale_attn_inner=True, **_EVA02_SPLIT, **_EVA02, **_CLIP_POOL)


@register_model
def eva02_enormous_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """EVA-02-CLIP-E/14 image tower at 224: width 1792, 64 residual post-norm blocks, 16 heads, GELU MLPs."""
    return _eva("eva02_enormous_patch14_clip_224", pretrained, progress, kwargs, img_size=224, patch_size=14,
                embed_dim=1792, depth=64, num_heads=16, mlp_ratio=15360 / 1792, use_post_norm=True, **_CLIP_POOL)


# ---- DINOv3 and LingBot-Vision: register tokens, layer scale, DINOv3 RoPE, any image size -------------------------

_DINOV3 = dict(patch_size=16, dynamic_img_size=True, init_values=1e-5, rope_type="dinov3", rope_temperature=100,
               rope_rotate_half=True, use_rot_pos_emb=True, use_abs_pos_emb=False, num_reg_tokens=4,
               use_fc_norm=False, norm_layer=_layer_norm_eps5)
# the "plus" and bigger DINOv3 models: SwiGLU MLPs, hidden width rounded up to a multiple of 8
_DINOV3_SWIGLU = dict(swiglu_mlp=True, swiglu_align_to=8)


def _dinov3(variant, pretrained, progress, kwargs, **model_args):
    """A DINOv3 entrypoint's body: built for 256-pixel images (its weights' size), average pooling."""
    return _eva(variant, pretrained, progress, kwargs, img_size=256, **_DINOV3, **model_args)


@register_model
def vit_tiny_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3-style ViT-T/16 with qkv biases: width 192, 12 blocks, 3 heads."""
    return _dinov3("vit_tiny_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=192, depth=12, num_heads=3,
                   qkv_bias=True)


@register_model
def vit_small_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-S/16: width 384, 12 blocks, 6 heads, no qkv biases."""
    return _dinov3("vit_small_patch16_dinov3", pretrained, progress, kwargs, embed_dim=384, depth=12, num_heads=6,
                   qkv_bias=False)


@register_model
def vit_small_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-S/16 with (zero) qkv biases: width 384, 12 blocks, 6 heads."""
    return _dinov3("vit_small_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=384, depth=12,
                   num_heads=6, qkv_bias=True)


@register_model
def vit_small_plus_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-S+/16: width 384, 12 blocks, 6 heads, SwiGLU MLPs, no qkv biases."""
    return _dinov3("vit_small_plus_patch16_dinov3", pretrained, progress, kwargs, embed_dim=384, depth=12,
                   num_heads=6, qkv_bias=False, **_DINOV3_SWIGLU)


@register_model
def vit_small_plus_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-S+/16 with (zero) qkv biases: width 384, 12 blocks, 6 heads, SwiGLU MLPs."""
    return _dinov3("vit_small_plus_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=384, depth=12,
                   num_heads=6, qkv_bias=True, **_DINOV3_SWIGLU)


@register_model
def vit_base_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-B/16: width 768, 12 blocks, 12 heads, no qkv biases."""
    return _dinov3("vit_base_patch16_dinov3", pretrained, progress, kwargs, embed_dim=768, depth=12, num_heads=12,
                   qkv_bias=False)


@register_model
def vit_base_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-B/16 with (zero) qkv biases: width 768, 12 blocks, 12 heads."""
    return _dinov3("vit_base_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=768, depth=12,
                   num_heads=12, qkv_bias=True)


@register_model
def vit_large_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-L/16: width 1024, 24 blocks, 16 heads, no qkv biases."""
    return _dinov3("vit_large_patch16_dinov3", pretrained, progress, kwargs, embed_dim=1024, depth=24, num_heads=16,
                   qkv_bias=False)


@register_model
def vit_large_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-L/16 with (zero) qkv biases: width 1024, 24 blocks, 16 heads."""
    return _dinov3("vit_large_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=1024, depth=24,
                   num_heads=16, qkv_bias=True)


@register_model
def vit_huge_plus_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-H+/16: width 1280, 32 blocks, 20 heads, SwiGLU MLPs, no qkv biases."""
    return _dinov3("vit_huge_plus_patch16_dinov3", pretrained, progress, kwargs, embed_dim=1280, depth=32,
                   num_heads=20, qkv_bias=False, **_DINOV3_SWIGLU)


@register_model
def vit_huge_plus_patch16_dinov3_qkvb(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-H+/16 with (zero) qkv biases: width 1280, 32 blocks, 20 heads, SwiGLU MLPs."""
    return _dinov3("vit_huge_plus_patch16_dinov3_qkvb", pretrained, progress, kwargs, embed_dim=1280, depth=32,
                   num_heads=20, qkv_bias=True, **_DINOV3_SWIGLU)


@register_model
def vit_7b_patch16_dinov3(pretrained=False, progress=True, **kwargs):
    """DINOv3 ViT-7B/16: width 4096, 40 blocks, 32 heads, SwiGLU MLPs (ratio 2, aligned to 64), no qkv biases."""
    return _dinov3("vit_7b_patch16_dinov3", pretrained, progress, kwargs, embed_dim=4096, depth=40, num_heads=32,
                   qkv_bias=False, mlp_ratio=2, swiglu_mlp=True, swiglu_align_to=64)


def _lingbot(variant, pretrained, progress, kwargs, **model_args):
    """A LingBot-Vision entrypoint's body: DINOv3's architecture built for 512-pixel images, class-token pooling, no
    head (timm's default: an image encoder)."""
    return _eva(variant, pretrained, progress, kwargs, img_size=512, global_pool="token", num_classes=0, **_DINOV3,
                **model_args)


@register_model
def vit_small_patch16_lingbot(pretrained=False, progress=True, **kwargs):
    """LingBot-Vision ViT-S/16: width 384, 12 blocks, 6 heads, qkv biases."""
    return _lingbot("vit_small_patch16_lingbot", pretrained, progress, kwargs, embed_dim=384, depth=12, num_heads=6,
                    qkv_bias=True)


@register_model
def vit_base_patch16_lingbot(pretrained=False, progress=True, **kwargs):
    """LingBot-Vision ViT-B/16: width 768, 12 blocks, 12 heads, qkv biases."""
    return _lingbot("vit_base_patch16_lingbot", pretrained, progress, kwargs, embed_dim=768, depth=12, num_heads=12,
                    qkv_bias=True)


@register_model
def vit_large_patch16_lingbot(pretrained=False, progress=True, **kwargs):
    """LingBot-Vision ViT-L/16: width 1024, 24 blocks, 16 heads, qkv biases."""
    return _lingbot("vit_large_patch16_lingbot", pretrained, progress, kwargs, embed_dim=1024, depth=24,
                    num_heads=16, qkv_bias=True)


@register_model
def vit_giant_patch16_lingbot(pretrained=False, progress=True, **kwargs):
    """LingBot-Vision ViT-g/16: width 1536, 40 blocks, 24 heads, SwiGLU MLPs, no qkv biases."""
    return _lingbot("vit_giant_patch16_lingbot", pretrained, progress, kwargs, embed_dim=1536, depth=40,
                    num_heads=24, qkv_bias=False, mlp_ratio=4 * 2 / 3, **_DINOV3_SWIGLU)


# ---- Perception Encoder: RoPE-ViT attention, a norm before the blocks, LayerNorm eps 1e-5 --------------------------

_PE = dict(attn_type="rope", use_pre_transformer_norm=True, use_rot_pos_emb=True, rope_grid_indexing="xy",
           norm_layer=_layer_norm_eps5)
# PE core (CLIP towers): attention pooling with 8 heads into the projection head
_PE_CORE = dict(mlp_ratio=4.0, global_pool="map", attn_pool_num_heads=8, attn_pool_mlp_ratio=4.0, **_PE)
# PE lang / spatial: the last block's tokens, no final norm
_PE_TOKENS = dict(use_post_transformer_norm=False, use_fc_norm=False, **_PE)
# the gigantic PEs: no class token, RoPE grid from 0
_PE_GIGANTIC = dict(img_size=448, patch_size=14, embed_dim=1536, depth=50, num_heads=16, mlp_ratio=8960 / 1536,
                    class_token=False, ref_feat_shape=(32, 32))


@register_model
def vit_pe_core_tiny_patch16_384(pretrained=False, progress=True, **kwargs):
    """PE-Core-T/16 at 384: width 192, 12 blocks, 3 heads, attention pooling."""
    return _eva("vit_pe_core_tiny_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=192, depth=12, num_heads=3, ref_feat_shape=(24, 24), rope_grid_offset=1.0, **_PE_CORE)


@register_model
def vit_pe_core_small_patch16_384(pretrained=False, progress=True, **kwargs):
    """PE-Core-S/16 at 384: width 384, 12 blocks, 6 heads, attention pooling."""
    return _eva("vit_pe_core_small_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=384, depth=12, num_heads=6, ref_feat_shape=(24, 24), rope_grid_offset=1.0, **_PE_CORE)


@register_model
def vit_pe_core_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """PE-Core-B/16 at 224: width 768, 12 blocks, 12 heads, attention pooling."""
    return _eva("vit_pe_core_base_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, ref_feat_shape=(14, 14), rope_grid_offset=1.0, **_PE_CORE)


@register_model
def vit_pe_core_large_patch14_336(pretrained=False, progress=True, **kwargs):
    """PE-Core-L/14 at 336: width 1024, 24 blocks, 16 heads, attention pooling."""
    return _eva("vit_pe_core_large_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14,
                embed_dim=1024, depth=24, num_heads=16, ref_feat_shape=(24, 24), rope_grid_offset=1.0, **_PE_CORE)


@register_model
def vit_pe_core_gigantic_patch14_448(pretrained=False, progress=True, **kwargs):
    """PE-Core-G/14 at 448: width 1536, 50 blocks, 16 heads, no class token, attention pooling."""
    return _eva("vit_pe_core_gigantic_patch14_448", pretrained, progress, kwargs,
                **{**_PE_CORE, **_PE_GIGANTIC})


@register_model
def vit_pe_lang_large_patch14_448(pretrained=False, progress=True, **kwargs):
    """PE-Lang-L/14 at 448: width 1024, 23 blocks, 16 heads, layer scale, no final norm."""
    return _eva("vit_pe_lang_large_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1024, depth=23, num_heads=16, mlp_ratio=4.0, class_token=True, ref_feat_shape=(32, 32),
                rope_grid_offset=1.0, init_values=0.1, **_PE_TOKENS)


@register_model
def vit_pe_lang_gigantic_patch14_448(pretrained=False, progress=True, **kwargs):
    """PE-Lang-G/14 at 448: width 1536, 47 blocks, 16 heads, no class token, layer scale, no final norm."""
    return _eva("vit_pe_lang_gigantic_patch14_448", pretrained, progress, kwargs, init_values=0.1,
                **{**_PE_GIGANTIC, "depth": 47}, **_PE_TOKENS)


@register_model
def vit_pe_spatial_tiny_patch16_512(pretrained=False, progress=True, **kwargs):
    """PE-Spatial-T/16 at 512: width 192, 12 blocks, 3 heads, no final norm."""
    return _eva("vit_pe_spatial_tiny_patch16_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=192, depth=12, num_heads=3, mlp_ratio=4.0, ref_feat_shape=(32, 32), rope_grid_offset=1.0,
                **_PE_TOKENS)


@register_model
def vit_pe_spatial_small_patch16_512(pretrained=False, progress=True, **kwargs):
    """PE-Spatial-S/16 at 512: width 384, 12 blocks, 6 heads, no final norm."""
    return _eva("vit_pe_spatial_small_patch16_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=384, depth=12, num_heads=6, mlp_ratio=4.0, ref_feat_shape=(32, 32), rope_grid_offset=1.0,
                **_PE_TOKENS)


@register_model
def vit_pe_spatial_base_patch16_512(pretrained=False, progress=True, **kwargs):
    """PE-Spatial-B/16 at 512: width 768, 12 blocks, 12 heads, no final norm."""
    return _eva("vit_pe_spatial_base_patch16_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0, ref_feat_shape=(32, 32), rope_grid_offset=1.0,
                **_PE_TOKENS)


@register_model
def vit_pe_spatial_large_patch14_448(pretrained=False, progress=True, **kwargs):
    """PE-Spatial-L/14 at 448: width 1024, 24 blocks, 16 heads, no final norm."""
    return _eva("vit_pe_spatial_large_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1024, depth=24, num_heads=16, mlp_ratio=4.0, ref_feat_shape=(32, 32), rope_grid_offset=1.0,
                **_PE_TOKENS)


@register_model
def vit_pe_spatial_gigantic_patch14_448(pretrained=False, progress=True, **kwargs):
    """PE-Spatial-G/14 at 448: width 1536, 50 blocks, 16 heads, no class token, layer scale, no final norm."""
    return _eva("vit_pe_spatial_gigantic_patch14_448", pretrained, progress, kwargs, init_values=0.1,
                **_PE_GIGANTIC, **_PE_TOKENS)


# ---- Sapiens2: grouped-query attention in the middle blocks, RMS norms, attention-only layer scale ---------------


def _sapiens2(variant, pretrained, progress, kwargs, embed_dim, depth, num_heads, num_kv_heads,
              num_full_attn_blocks=8):
    """A Sapiens2 entrypoint's body: the first and last ``num_full_attn_blocks`` blocks attend with every head,
    those between with ``num_kv_heads`` key / value heads; built for 1024 x 768 portraits, any size taken."""
    kv_heads = tuple(num_heads if i < num_full_attn_blocks or i >= depth - num_full_attn_blocks else num_kv_heads
                     for i in range(depth))
    return _eva(variant, pretrained, progress, kwargs, img_size=(1024, 768), patch_size=16, dynamic_img_size=True,
                embed_dim=embed_dim, depth=depth, num_heads=num_heads, num_kv_heads=kv_heads, attn_type="rope",
                qkv_fused=False, qkv_bias=True, qk_norm=True, global_pool="token", swiglu_mlp=True, mlp_ratio=4.0,
                init_values=1.0, attn_only_layer_scale=True, rope_type="dinov3", rope_temperature=100,
                rope_rotate_half=True, rope_rescale_coords=2.0, use_rot_pos_emb=True, use_abs_pos_emb=False,
                class_token=True, num_reg_tokens=8, use_fc_norm=False, norm_layer=_rms_norm)


@register_model
def vit_base_patch16_sapiens2(pretrained=False, progress=True, **kwargs):
    """Sapiens2-0.1B (ViT-B/16): width 768, 12 blocks, 12 heads (no grouped-query blocks at this depth)."""
    return _sapiens2("vit_base_patch16_sapiens2", pretrained, progress, kwargs, 768, 12, 12, 6)


@register_model
def vit_large_patch16_sapiens2(pretrained=False, progress=True, **kwargs):
    """Sapiens2-0.4B (ViT-L/16): width 1024, 24 blocks, 16 heads, 8 key / value heads in the middle blocks."""
    return _sapiens2("vit_large_patch16_sapiens2", pretrained, progress, kwargs, 1024, 24, 16, 8)


@register_model
def vit_huge_patch16_sapiens2(pretrained=False, progress=True, **kwargs):
    """Sapiens2-0.8B (ViT-H/16): width 1280, 32 blocks, 16 heads, 8 key / value heads in the middle blocks."""
    return _sapiens2("vit_huge_patch16_sapiens2", pretrained, progress, kwargs, 1280, 32, 16, 8)


@register_model
def vit_giant_patch16_sapiens2(pretrained=False, progress=True, **kwargs):
    """Sapiens2-1B (ViT-g/16): width 1536, 40 blocks, 24 heads, 12 key / value heads in the middle blocks."""
    return _sapiens2("vit_giant_patch16_sapiens2", pretrained, progress, kwargs, 1536, 40, 24, 12)


@register_model
def vit_5b_patch16_sapiens2(pretrained=False, progress=True, **kwargs):
    """Sapiens2-5B: width 2432, 56 blocks, 32 heads, 16 key / value heads in the middle blocks."""
    return _sapiens2("vit_5b_patch16_sapiens2", pretrained, progress, kwargs, 2432, 56, 32, 16)
