"""EVA (Fang et al. 2022, "EVA: Exploring the Limits of Masked Visual Representation Learning at Scale"), EVA-02
(Fang et al. 2023, "EVA-02: A Visual Representation for Neon Genesis") and the rotary-position ViTs in timm's ``eva``
module: RoPE-ViT (Heo et al. 2024, "Rotary Position Embedding for Vision Transformer") and timm's ViTs with register
tokens and RoPE.

All are pre-norm vision transformers over non-overlapping patches whose blocks may add:

- rotary position embeddings (RoPE): before attention, each head's queries and keys (of the patch tokens; the class
  and register tokens are left alone) are rotated pair of channels by pair of channels, by angles proportional to the
  patch's position, so that the attention scores depend on relative positions. EVA-02's axial RoPE gives half the
  frequencies to the row and half to the column (``rope_type='cat'``); RoPE-Mixed learns, per block and head, a pair
  of frequencies for every channel pair, mixing both axes (``rope_type='mixed'``);
- a SwiGLU MLP (SiLU-gated), with a LayerNorm before its output projection (``scale_mlp``, EVA-02 B/L);
- EVA's query / value biases without a key bias (the key's would cancel in the softmax), or RoPE-ViT's fused bias;
- register tokens (extra learnt tokens beside or instead of the class token), layer scale, learnt absolute position
  embeddings or none.

Model names, module names, ``state_dict`` keys, defaults and initialisation follow timm's ``eva`` module, so timm's
checkpoints load directly. A model runs at the image size it was built for (``img_size``); ``features_only=True``
returns the last blocks' outputs (timm's default: three) as (N, C, H/p, W/p) maps.
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
from .vision_transformer import ViTApi

__all__ = []

_layer_norm = partial(nn.LayerNorm, eps=1e-6)


# ---- rotary position embeddings ---------------------------------------------------------------------------------


def _rotate_pairs(x):
    """Each consecutive pair of channels turned by 90 degrees: (x0, x1, x2, x3, ...) -> (-x1, x0, -x3, x2, ...)."""
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)


def apply_rot_embed_cat(x, embed):
    """``x`` (..., N, D) with each pair of channels rotated by its angle; ``embed`` (..., N, 2 * D) holds the angles'
    sines then their cosines, each angle repeated for the two channels of its pair."""
    sin, cos = embed.chunk(2, -1)
    return x * cos + _rotate_pairs(x) * sin


def _pair_layout(x):
    """Per-pair values (..., D / 2) repeated for both channels of each pair (..., D)."""
    return x.repeat_interleave(2, -1)


def _patch_grid(feat_shape, grid_indexing="ij", ref_feat_shape=None, grid_offset=0.0):
    """The patches' float32 coordinates on the (rows, cols) grid ``feat_shape``, as (rows, cols, 2): the row index
    first with ``grid_indexing='ij'``, the column index first with 'xy'. ``grid_offset`` shifts both; with
    ``ref_feat_shape`` they are rescaled to span that (pretraining) grid instead (EVA-02's resolution change)."""
    if grid_indexing == "xy":
        feat_shape = feat_shape[::-1]
        ref_feat_shape = ref_feat_shape[::-1] if ref_feat_shape is not None else None
    axes = [torch.arange(size, dtype=torch.float32) + grid_offset for size in feat_shape]
    if ref_feat_shape is not None:
        axes = [t / size * ref for t, size, ref in zip(axes, feat_shape, ref_feat_shape)]
    return torch.stack(torch.meshgrid(axes, indexing=grid_indexing), dim=-1)


class RotaryEmbeddingCat(nn.Module):
    """EVA-02's axial RoPE of one head of width ``dim`` on the fixed patch grid ``feat_shape``: the first half of
    the channel pairs turn with the first coordinate (see ``_patch_grid``), the second half with the second, at
    frequencies temperature^(-i / (dim / 4)), i = 0 .. dim / 4 - 1.

    The table (patches, 2 * dim) of sines and cosines (``pos_embed``) and the frequencies (``bands``) are float32
    buffers computed once; they are not saved in the state_dict.
    """

    def __init__(self, dim, feat_shape, temperature=10000.0, ref_feat_shape=None, grid_offset=0.0,
                 grid_indexing="ij"):
        super().__init__()
        if dim % 4:
            raise ValueError(f"axial RoPE needs a head width divisible by 4, got {dim}")
        num_bands = dim // 4
        bands = 1.0 / temperature ** (torch.arange(num_bands, dtype=torch.float32) / num_bands)
        grid = _patch_grid(tuple(feat_shape), grid_indexing, ref_feat_shape, grid_offset)
        angles = (grid.unsqueeze(-1) * bands).flatten(-2).flatten(0, -2)
        self.register_buffer("bands", bands, persistent=False)
        self.register_buffer("pos_embed", torch.cat([_pair_layout(angles.sin()), _pair_layout(angles.cos())], -1),
                             persistent=False)

    def get_embed(self):
        """The (patches, 2 * dim) table of sines and cosines that ``apply_rot_embed_cat`` takes."""
        return self.pos_embed


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
        grid = _patch_grid(tuple(feat_shape), grid_indexing).reshape(-1, 2)
        self.register_buffer("t_x", grid[:, 0].clone(), persistent=False)
        self.register_buffer("t_y", grid[:, 1].clone(), persistent=False)

    def get_embed(self):
        """The (depth, num_heads, patches, 2 * head_dim) tables of sines and cosines, computed in float32 (as timm
        does, whatever the frequencies' dtype) and returned in the frequencies' dtype."""
        freqs = self.freqs.float()
        t_x, t_y = self.t_x.float(), self.t_y.float()
        angles = t_x.unsqueeze(-1) * freqs[0].unsqueeze(-2) + t_y.unsqueeze(-1) * freqs[1].unsqueeze(-2)
        embed = torch.cat([_pair_layout(angles.sin()), _pair_layout(angles.cos())], -1)
        return embed.to(self.freqs.dtype)


# ---- blocks -----------------------------------------------------------------------------------------------------


class _RopeSelfAttention(nn.Module):
    """Multi-head self-attention with RoPE on the patch tokens; subclasses make the queries, keys and values, then
    add the output layers (``_add_output_layers``).

    The first ``num_prefix_tokens`` tokens (class, registers) are not rotated.
    """

    def __init__(self, dim, num_heads, num_prefix_tokens):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.num_prefix_tokens = num_prefix_tokens

    def _add_output_layers(self, dim, attn_drop, proj_drop, norm_layer, scale_norm):
        """The layers after the input projections, in timm's order: ``attn_drop`` (of the attention weights, in
        training), ``norm`` (of the concatenated heads with ``scale_norm``, else an identity), ``proj`` and
        ``proj_drop``."""
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = norm_layer(dim) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _project_separately(self, x):
        """Queries, keys and values (N, heads, tokens, head_dim) from the separate ``q_proj``, ``k_proj`` and
        ``v_proj`` layers."""
        batch, tokens, _ = x.shape
        q = self.q_proj(x).reshape(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).reshape(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).reshape(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        return q, k, v

    def _rotate(self, t, rope):
        """The patch tokens of ``t`` (N, heads, tokens, head_dim) rotated by ``rope``, the prefix tokens as they are."""
        n = self.num_prefix_tokens
        return torch.cat([t[:, :, :n], apply_rot_embed_cat(t[:, :, n:], rope)], dim=2)

    def _attend(self, q, k, v, rope):
        """Attention of the (N, heads, tokens, head_dim) queries over keys and values, heads concatenated, then the
        output layers."""
        batch, _, tokens, _ = q.shape
        if rope is not None:
            q = self._rotate(q, rope)
            k = self._rotate(k, rope)
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
                 proj_drop=0.0, norm_layer=None, scale_norm=False):
        super().__init__(dim, num_heads, num_prefix_tokens)
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
        self._add_output_layers(dim, attn_drop, proj_drop, norm_layer, scale_norm)

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
    """RoPE-ViT's attention: one ``qkv`` projection with its bias (``qkv_bias``), or separate ``q_proj``,
    ``k_proj`` and ``v_proj`` layers with ``qkv_fused=False``."""

    def __init__(self, dim, num_heads=8, qkv_bias=True, qkv_fused=True, num_prefix_tokens=1, attn_drop=0.0,
                 proj_drop=0.0, norm_layer=None, scale_norm=False):
        super().__init__(dim, num_heads, num_prefix_tokens)
        if qkv_fused:
            self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
            self.q_proj = self.k_proj = self.v_proj = None
        else:
            self.qkv = None
            self.q_proj = nn.Linear(dim, dim, bias=qkv_bias)
            self.k_proj = nn.Linear(dim, dim, bias=qkv_bias)
            self.v_proj = nn.Linear(dim, dim, bias=qkv_bias)
        self._add_output_layers(dim, attn_drop, proj_drop, norm_layer, scale_norm)

    def forward(self, x, rope=None):
        if self.qkv is None:
            q, k, v = self._project_separately(x)
        else:
            batch, tokens, _ = x.shape
            qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        return self._attend(q, k, v, rope)


class GluMlp(nn.Module):
    """SwiGLU with one packed input layer: ``fc1`` gives 2h channels, SiLU of the first h gates the second h, then
    ``fc2`` back to ``in_features`` (``norm`` is timm's slot for a norm between them, an identity here)."""

    def __init__(self, in_features, hidden_features, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.SiLU()
        self.drop1 = nn.Dropout(drop)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        gate, x = x.chunk(2, dim=-1)
        x = self.act(gate) * x
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class SwiGLU(nn.Module):
    """SwiGLU with separate input layers: SiLU(``fc1_g``(x)) * ``fc1_x``(x), ``norm`` (EVA-02's sub-layer
    LayerNorm with ``norm_layer``, else an identity), then ``fc2``."""

    def __init__(self, in_features, hidden_features, norm_layer=None, drop=0.0):
        super().__init__()
        self.fc1_g = nn.Linear(in_features, hidden_features)
        self.fc1_x = nn.Linear(in_features, hidden_features)
        self.act = nn.SiLU()
        self.drop1 = nn.Dropout(drop)
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        gate = self.fc1_g(x)
        x = self.fc1_x(x)
        x = self.act(gate) * x
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


def _make_mlp(dim, hidden_features, swiglu_mlp, scale_mlp, act_layer, norm_layer, drop):
    """timm's choice of MLP: a SwiGLU (split layers when it has the sub-layer norm ``scale_mlp``, packed ones
    otherwise) or the plain ``act_layer`` MLP (with the sub-layer norm if ``scale_mlp``)."""
    if swiglu_mlp and scale_mlp:
        return SwiGLU(dim, hidden_features, norm_layer=norm_layer, drop=drop)
    if swiglu_mlp:
        return GluMlp(dim, hidden_features * 2, drop=drop)
    return Mlp(dim, hidden_features, act_layer=act_layer, norm_layer=norm_layer if scale_mlp else None, drop=drop)


class EvaBlock(nn.Module):
    """Pre-norm transformer block: x + drop_path(gamma_1 * attn(norm1(x), rope)), then
    x + drop_path(gamma_2 * mlp(norm2(x))).

    ``attn_type`` picks EVA's attention ('eva') or RoPE-ViT's ('rope'). ``init_values`` enables the layer scales
    ``gamma_1`` and ``gamma_2`` (learnt per-channel factors starting at that value). The MLP's hidden width is
    int(dim * mlp_ratio) (see ``_make_mlp``). ``drop_path`` is the probability of dropping a residual branch for a
    sample in training.
    """

    def __init__(self, dim, num_heads, qkv_bias=True, qkv_fused=True, mlp_ratio=4.0, swiglu_mlp=False,
                 scale_mlp=False, scale_attn_inner=False, num_prefix_tokens=1, attn_type="eva", proj_drop=0.0,
                 attn_drop=0.0, drop_path=0.0, init_values=None, act_layer=nn.GELU, norm_layer=_layer_norm):
        super().__init__()
        attention = AttentionRope if attn_type == "rope" else EvaAttention
        self.norm1 = norm_layer(dim)
        self.attn = attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qkv_fused=qkv_fused,
                              num_prefix_tokens=num_prefix_tokens, attn_drop=attn_drop, proj_drop=proj_drop,
                              norm_layer=norm_layer, scale_norm=scale_attn_inner)
        self.gamma_1 = nn.Parameter(torch.full((dim,), float(init_values))) if init_values is not None else None
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = _make_mlp(dim, int(dim * mlp_ratio), swiglu_mlp, scale_mlp, act_layer, norm_layer, proj_drop)
        self.gamma_2 = nn.Parameter(torch.full((dim,), float(init_values))) if init_values is not None else None
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


# ---- the model --------------------------------------------------------------------------------------------------


class Eva(ViTApi, nn.Module):
    """A vision transformer with EVA's options: patch embedding, class and register tokens, absolute position
    embeddings and / or rotary ones, ``depth`` EvaBlocks, a final norm, pooling and a linear head.

    ``img_size`` is the only image size the model takes. ``class_token`` and ``num_reg_tokens`` set the prefix
    tokens; ``use_abs_pos_emb`` adds learnt position embeddings (to the patch tokens only when ``no_embed_class``);
    ``use_rot_pos_emb`` adds RoPE of ``rope_type`` 'cat' (axial; ``rope_temperature``, ``rope_grid_indexing``,
    ``rope_grid_offset``, ``ref_feat_shape``) or 'mixed' (learnt, per block). ``global_pool``: 'token' (the class
    token), 'avg', 'max', 'avgmax' (over the patch tokens) or '' (the whole sequence). The final norm is ``norm``
    before pooling, or ``fc_norm`` after it (the default for 'avg'), as ``use_post_transformer_norm`` and
    ``use_fc_norm`` say; ``use_pre_transformer_norm`` adds ``norm_pre`` (and drops the patch projection's bias).
    ``drop_rate`` is the dropout before the head, ``drop_path_rate`` the stochastic depth of the last block (rising
    linearly from 0 at the first). ``head_init_scale`` scales the head's initial weights. ``num_classes=0`` gives
    the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "avg", "avgmax", "max", "token")  # timm's attention pooling 'map' is not implemented here

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=768,
                 depth=12, num_heads=12, qkv_bias=True, qkv_fused=True, mlp_ratio=4.0, swiglu_mlp=False,
                 scale_mlp=False, scale_attn_inner=False, attn_type="eva", drop_rate=0.0, pos_drop_rate=0.0,
                 proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=None, init_values=None,
                 class_token=True, num_reg_tokens=0, no_embed_class=False, use_abs_pos_emb=True,
                 use_rot_pos_emb=False, rope_type="cat", rope_grid_offset=0.0, rope_grid_indexing="ij",
                 rope_temperature=10000.0, use_pre_transformer_norm=False, use_post_transformer_norm=None,
                 use_fc_norm=None, ref_feat_shape=None, head_init_scale=0.001):
        super().__init__()
        self._check_global_pool(global_pool, class_token)
        if attn_type not in ("eva", "rope"):
            raise ValueError(f"attn_type must be 'eva' or 'rope', got {attn_type!r}")
        if use_rot_pos_emb and rope_type not in ("cat", "mixed"):
            raise ValueError(f"rope_type must be 'cat' or 'mixed', got {rope_type!r}")
        norm_layer = norm_layer or _layer_norm
        fc_norm = global_pool == "avg" if use_fc_norm is None else use_fc_norm
        post_norm = not fc_norm if use_post_transformer_norm is None else use_post_transformer_norm
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = (1 if class_token else 0) + num_reg_tokens
        self.no_embed_class = no_embed_class

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, bias=not use_pre_transformer_norm)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, num_reg_tokens, embed_dim)) if num_reg_tokens else None
        num_pos_tokens = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.pos_embed = nn.Parameter(torch.zeros(1, num_pos_tokens, embed_dim)) if use_abs_pos_emb else None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.rope_mixed = use_rot_pos_emb and rope_type == "mixed"
        if not use_rot_pos_emb:
            self.rope = None
        elif self.rope_mixed:
            self.rope = RotaryEmbeddingMixed(embed_dim, depth, num_heads, self.patch_embed.grid_size,
                                             temperature=rope_temperature, grid_indexing=rope_grid_indexing)
        else:
            ref_feat_shape = pair(ref_feat_shape) if ref_feat_shape is not None else None
            self.rope = RotaryEmbeddingCat(embed_dim // num_heads, self.patch_embed.grid_size,
                                           temperature=rope_temperature, ref_feat_shape=ref_feat_shape,
                                           grid_offset=rope_grid_offset, grid_indexing=rope_grid_indexing)
        self.norm_pre = norm_layer(embed_dim) if use_pre_transformer_norm else nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList([
            EvaBlock(embed_dim, num_heads, qkv_bias=qkv_bias, qkv_fused=qkv_fused, mlp_ratio=mlp_ratio,
                     swiglu_mlp=swiglu_mlp, scale_mlp=scale_mlp, scale_attn_inner=scale_attn_inner,
                     num_prefix_tokens=self.num_prefix_tokens, attn_type=attn_type, proj_drop=proj_drop_rate,
                     attn_drop=attn_drop_rate, drop_path=drop_path_rates[i], init_values=init_values,
                     norm_layer=norm_layer)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim) if post_norm else nn.Identity()
        self.fc_norm = norm_layer(embed_dim) if fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_init_scale = head_init_scale
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal (std 0.02) Linear weights with zero biases, then position embeddings,
        class and register tokens; each block's attention and MLP output weights divided by sqrt(2 * block number)
        (so the residual stream grows slowly with depth); the head's weights drawn again and scaled, with its bias,
        by ``head_init_scale``. The patch projection keeps the convolution's default initialisation."""
        init_linear_layers(self)
        for token in (self.pos_embed, self.cls_token, self.reg_token):
            if token is not None:
                trunc_normal_(token, std=0.02)
        self._fix_init_weight()
        self._init_head_scaled(self.head_init_scale)

    def _pos_embed(self, x):
        """Patch tokens -> (the sequence with prefix tokens and absolute position embeddings, after ``pos_drop``;
        the rotary embedding tables, or None)."""
        prefix = []
        if self.cls_token is not None:
            prefix.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            prefix.append(self.reg_token.expand(x.shape[0], -1, -1))
        if self.no_embed_class:
            if self.pos_embed is not None:
                x = x + self.pos_embed
            if prefix:
                x = torch.cat(prefix + [x], dim=1)
        else:
            if prefix:
                x = torch.cat(prefix + [x], dim=1)
            if self.pos_embed is not None:
                x = x + self.pos_embed
        x = self.pos_drop(x)
        rope = self.rope.get_embed() if self.rope is not None else None
        return x, rope

    def _embed(self, x):
        """Images -> the token sequence the blocks take, and the rotary embedding tables (or None)."""
        x = self.patch_embed(x)
        x, rope = self._pos_embed(x)
        x = self.norm_pre(x)
        return x, rope

    def _block(self, block, index, x, rope):
        """Block ``index`` on the token sequence ``x`` (with its own RoPE tables in mixed mode)."""
        return block(x, rope=rope[index] if self.rope_mixed else rope)


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
