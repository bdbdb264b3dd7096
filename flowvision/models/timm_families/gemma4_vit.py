"""The vision encoder of Gemma 4 (Gemma Team, Google DeepMind 2026, "Gemma 4 Technical Report"): gemma4_vit_167m,
gemma4_vit_167m_enc, gemma4_vit_570m and gemma4_vit_570m_enc.

A plain ViT without class token whose every part differs a little from the original: patches are flattened
(channel, row, column) and projected by a bias-free linear layer after the pixels are mapped from [0, 1] to
[-1, 1]; absolute positions come from two learnt tables, one per axis, indexed by the patch's column and row and
added; each attention head normalises its queries and keys (RMSNorm with a gain) and its values (without), rotates
queries and keys by a two-dimensional rotary embedding (half the head's channels by the column, half by the row)
and attends unscaled; the MLP is gated (tanh-approximated GELU); and each block is a "sandwich", RMSNorm before and
after both attention and MLP. Patches may come pre-cut with their (row, column) coordinates and validity, as
NaFlex loaders give them (padding patches masked out of attention and pooling). The ``_enc`` models are the VLM
encoders: their output averages each k x k cell of patches into one "soft token", scaled by the square root of the
width (and, for the 570M model, standardised). The other two are classifiers around the same encoder: a mean over
the patch tokens, a gain-free RMSNorm and a linear head. The 167M encoder clamps the inputs and outputs of every
projection to learnt ranges (infinite until weights are loaded). Model names, module names, ``state_dict`` keys and
(seeded) initialisation follow timm's ``gemma4_vit`` module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import drop_path_module, pair, trunc_normal_tf_
from .eva import _rotate_halves
from .naflexvit import batch_patchify

__all__ = []


class RmsNorm(nn.Module):
    """Root-mean-square normalisation over the last axis, x / sqrt(mean(x ** 2) + eps), times a learnt gain
    (``weight``) when ``affine`` (timm's ``RmsNorm``)."""

    def __init__(self, channels, eps=1e-6, affine=True):
        super().__init__()
        self.normalized_shape = (channels,)
        self.eps = eps
        self.elementwise_affine = affine
        if affine:
            self.weight = nn.Parameter(torch.ones(channels))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        x = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        if self.weight is not None:
            x = x * self.weight
        return x


class Gemma4ClippableLinear(nn.Module):
    """A bias-free linear layer (``linear``); with ``use_clipped`` its input is clamped to [``input_min``,
    ``input_max``] and its output to [``output_min``, ``output_max``], scalar buffers that start infinite (no
    clamping) and that the 167M model's weights set."""

    def __init__(self, in_features, out_features, use_clipped=False):
        super().__init__()
        self.use_clipped = use_clipped
        self.linear = nn.Linear(in_features, out_features, bias=False)
        if use_clipped:
            self.register_buffer("input_min", torch.full((), -float("inf")))
            self.register_buffer("input_max", torch.full((), float("inf")))
            self.register_buffer("output_min", torch.full((), -float("inf")))
            self.register_buffer("output_max", torch.full((), float("inf")))

    def forward(self, x):
        if self.use_clipped:
            x = torch.clamp(x, self.input_min, self.input_max)
        x = self.linear(x)
        if self.use_clipped:
            x = torch.clamp(x, self.output_min, self.output_max)
        return x


def apply_2d_rope(x, cos, sin):
    """Rotary embedding of the (N, L, heads, head_dim) queries or keys ``x``: the first half of the channels
    rotated by the column angles, the second by the row angles (``cos``, ``sin``: (N, L, head_dim), the two axes'
    tables side by side); each half rotates its two quarters against each other."""
    part = 2 * (x.shape[-1] // 4)
    cos = cos.unsqueeze(2)
    sin = sin.unsqueeze(2)
    rotated = []
    for start in (0, part):
        x_part = x[..., start:start + part]
        rotated.append(x_part * cos[..., start:start + part] + _rotate_halves(x_part) * sin[..., start:start + part])
    return torch.cat(rotated, dim=-1)


class Gemma4RotaryEmbedding2D(nn.Module):
    """The angles of the two-dimensional rotary embedding: for each axis, head_dim / 4 frequencies
    ``rope_theta ** (-2i / (head_dim / 2))`` (``inv_freq``, float32, not saved) times the patch's coordinate on
    that axis, duplicated; computed in float32 whatever the model's dtype."""

    def __init__(self, head_dim, rope_theta=100.0):
        super().__init__()
        self.head_dim = head_dim
        self.rope_theta = rope_theta
        spatial_dim = head_dim // 2
        exponents = torch.arange(0, spatial_dim, 2, dtype=torch.float32) / spatial_dim
        self.register_buffer("inv_freq", 1.0 / (rope_theta ** exponents), persistent=False)

    def forward(self, x, position_ids):
        """(cos, sin), each (N, L, head_dim) in ``x``'s dtype, for the (N, L, 2) (column, row) coordinates."""
        with torch.no_grad():
            cos, sin = [], []
            for axis in range(2):
                freqs = position_ids[:, :, axis, None].float() * self.inv_freq.float()
                angles = torch.cat((freqs, freqs), dim=-1)
                cos.append(angles.cos())
                sin.append(angles.sin())
            return torch.cat(cos, dim=-1).to(x.dtype), torch.cat(sin, dim=-1).to(x.dtype)


class Gemma4PatchEmbed(nn.Module):
    """Patch embedding: pixels from [0, 1] to [-1, 1], each patch flattened (channel, row, column) and projected by
    ``input_proj`` (no bias), plus the column's and the row's rows of ``position_embedding_table`` (2,
    ``position_embedding_size``, dim); padding patches get no position.

    Takes (N, C, H, W) images (cut into a full grid, H and W multiples of the patch size), or pre-cut patches with
    their (row, column) ``patch_coord`` (N, L, 2): (N, L, ph * pw * C) flattened (row, column, channel), or (N, L,
    ph, pw, C); or a dict of ``patches``, ``patch_coord`` and ``patch_valid``. Padding patches are those
    ``patch_valid`` marks False, or, without it, those at coordinate (-1, -1). Returns the embeddings, the (column,
    row) coordinates and the padding mask (None when every patch is real)."""

    def __init__(self, patch_size=16, in_chans=3, embed_dim=768, position_embedding_size=10240):
        super().__init__()
        self.patch_size = pair(patch_size)
        self.embed_dim = embed_dim
        self.position_embedding_size = position_embedding_size
        ph, pw = self.patch_size
        self.input_proj = nn.Linear(in_chans * ph * pw, embed_dim, bias=False)
        self.position_embedding_table = nn.Parameter(torch.empty(2, position_embedding_size, embed_dim))
        trunc_normal_tf_(self.position_embedding_table, std=0.02)

    @staticmethod
    def _grid_coords(batch, rows, cols, device):
        """The (row, column) coordinates of a full rows x cols grid, row by row, (N, rows * cols, 2)."""
        grid_y, grid_x = torch.meshgrid(torch.arange(rows, device=device), torch.arange(cols, device=device),
                                        indexing="ij")
        coords = torch.stack([grid_y.flatten(), grid_x.flatten()], dim=-1)
        return coords.unsqueeze(0).expand(batch, -1, -1)

    def _flat_patches(self, x, patch_coord):
        """The input as (N, L, C * ph * pw) patches flattened (channel, row, column), and their coordinates."""
        ph, pw = self.patch_size
        if x.ndim == 4:
            patches, (rows, cols) = batch_patchify(x, (ph, pw), pad=False, channels_last=False)
            if patch_coord is None:
                patch_coord = self._grid_coords(x.shape[0], rows, cols, x.device)
            return patches, patch_coord
        if x.ndim == 5:
            patches = x.permute(0, 1, 4, 2, 3).reshape(x.shape[0], x.shape[1], -1)
        elif x.ndim == 3:
            batch, length, flat = x.shape
            patches = x.view(batch, length, ph, pw, flat // (ph * pw)).permute(0, 1, 4, 2, 3).reshape(batch, length,
                                                                                                        flat)
        else:
            raise ValueError(f"expected images (N, C, H, W) or patches (N, L, P) or (N, L, ph, pw, C), got {x.ndim} "
                             "dimensions")
        if patch_coord is None:
            raise ValueError("pre-cut patches need their patch_coord")
        return patches, patch_coord

    def _position_embeddings(self, position_ids, padding_positions):
        """The column table's and the row table's rows for each patch, summed (zero for padding patches)."""
        positions = position_ids.clamp(min=0)
        table = self.position_embedding_table
        embeddings = table[0][positions[..., 0]] + table[1][positions[..., 1]]
        if padding_positions is not None:
            embeddings = torch.where(padding_positions.unsqueeze(-1), 0.0, embeddings)
        return embeddings

    def forward(self, x, patch_coord=None, patch_valid=None):
        if isinstance(x, dict):
            patch_coord = x.get("patch_coord", patch_coord)
            patch_valid = x.get("patch_valid", patch_valid)
            x = x["patches"]
        full_grid = x.ndim == 4 and patch_coord is None
        x, patch_coord = self._flat_patches(x, patch_coord)
        if full_grid:
            patch_valid = None
        elif patch_valid is None:
            sentinel = (patch_coord == -1).all(dim=-1)
            if sentinel.any():
                patch_valid = ~sentinel
        x = self.input_proj(2 * (x - 0.5))
        position_ids = patch_coord.flip(-1)
        padding_positions = ~patch_valid if patch_valid is not None else None
        x = x + self._position_embeddings(position_ids, padding_positions)
        return x, position_ids, padding_positions


class Gemma4Attention(nn.Module):
    """Multi-head attention with separate projections (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``; keys and
    values may have fewer heads, ``num_kv_heads``, shared by groups of query heads), queries and keys RMS-normed with
    gains (``q_norm``, ``k_norm``) and values without (``v_norm``), 2D rotary embedding on queries and keys, and no
    1 / sqrt(head_dim) scale (the norms bound the logits). ``attn_drop`` drops attention weights, ``proj_drop`` the
    output, in training."""

    def __init__(self, dim, num_heads=12, head_dim=64, num_kv_heads=None, attn_drop=0.0, proj_drop=0.0,
                 norm_eps=1e-6, use_clipped_linears=False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.num_kv_heads = num_kv_heads or num_heads
        self.num_kv_groups = num_heads // self.num_kv_heads
        self.q_proj = Gemma4ClippableLinear(dim, num_heads * head_dim, use_clipped_linears)
        self.k_proj = Gemma4ClippableLinear(dim, self.num_kv_heads * head_dim, use_clipped_linears)
        self.v_proj = Gemma4ClippableLinear(dim, self.num_kv_heads * head_dim, use_clipped_linears)
        self.o_proj = Gemma4ClippableLinear(num_heads * head_dim, dim, use_clipped_linears)
        self.q_norm = RmsNorm(head_dim, eps=norm_eps)
        self.k_norm = RmsNorm(head_dim, eps=norm_eps)
        self.v_norm = RmsNorm(head_dim, eps=norm_eps, affine=False)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x, rope_cos, rope_sin, attn_mask=None):
        batch, tokens, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(batch, tokens, self.num_heads, self.head_dim))
        k = self.k_norm(self.k_proj(x).view(batch, tokens, self.num_kv_heads, self.head_dim))
        v = self.v_norm(self.v_proj(x).view(batch, tokens, self.num_kv_heads, self.head_dim))
        q = apply_2d_rope(q, rope_cos, rope_sin).transpose(1, 2)
        k = apply_2d_rope(k, rope_cos, rope_sin).transpose(1, 2)
        v = v.transpose(1, 2)
        if self.num_kv_groups > 1:
            k = k.repeat_interleave(self.num_kv_groups, dim=1)
            v = v.repeat_interleave(self.num_kv_groups, dim=1)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=1.0)
        x = x.transpose(1, 2).reshape(batch, tokens, -1)
        x = self.o_proj(x)
        x = self.proj_drop(x)
        return x


class Gemma4GatedMlp(nn.Module):
    """The gated MLP: ``down_proj(act(gate_proj(x)) * up_proj(x))`` (act: tanh-approximated GELU unless
    ``act_layer``), then dropout."""

    def __init__(self, in_features, hidden_features, act_layer=None, drop=0.0, use_clipped_linears=False):
        super().__init__()
        self.gate_proj = Gemma4ClippableLinear(in_features, hidden_features, use_clipped_linears)
        self.up_proj = Gemma4ClippableLinear(in_features, hidden_features, use_clipped_linears)
        self.down_proj = Gemma4ClippableLinear(hidden_features, in_features, use_clipped_linears)
        self.act = act_layer() if act_layer is not None else nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.down_proj(self.act(self.gate_proj(x)) * self.up_proj(x)))


class Gemma4Block(nn.Module):
    """The sandwich block: x + drop_path(norm2(attn(norm1(x)))), then x + drop_path(norm4(mlp(norm3(x)))), all four
    norms RMSNorms with gains; one stochastic-depth module serves both branches."""

    def __init__(self, dim, num_heads, head_dim, intermediate_size, num_kv_heads=None, norm_eps=1e-6,
                 attn_drop=0.0, proj_drop=0.0, drop_path=0.0, act_layer=None, use_clipped_linears=False):
        super().__init__()
        self.norm1 = RmsNorm(dim, eps=norm_eps)
        self.attn = Gemma4Attention(dim, num_heads, head_dim, num_kv_heads, attn_drop, proj_drop, norm_eps,
                                    use_clipped_linears)
        self.norm2 = RmsNorm(dim, eps=norm_eps)
        self.norm3 = RmsNorm(dim, eps=norm_eps)
        self.mlp = Gemma4GatedMlp(dim, intermediate_size, act_layer, use_clipped_linears=use_clipped_linears)
        self.norm4 = RmsNorm(dim, eps=norm_eps)
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x, rope_cos, rope_sin, attn_mask=None):
        x = x + self.drop_path(self.norm2(self.attn(self.norm1(x), rope_cos, rope_sin, attn_mask=attn_mask)))
        x = x + self.drop_path(self.norm4(self.mlp(self.norm3(x))))
        return x


class Gemma4VisionPooler(nn.Module):
    """The soft-token pool: each patch falls in the k x k cell (k: ``pooling_kernel_size``) of its coordinates,
    cells numbered row by row, and each cell's tokens are averaged (a float32 matrix product; padding patches count
    as zeros), then scaled by sqrt(``hidden_size``). Every image's patch grid must have sides that are multiples of
    k."""

    def __init__(self, hidden_size, pooling_kernel_size=3):
        super().__init__()
        self.hidden_size = hidden_size
        self.root_hidden_size = hidden_size ** 0.5
        self.pooling_kernel_size = pooling_kernel_size

    def _avg_pool_by_positions(self, hidden_states, position_ids):
        """The cells' mean tokens (N, L / k^2, C) and which cells hold a patch (N, L / k^2)."""
        tokens = hidden_states.shape[1]
        k = self.pooling_kernel_size
        if tokens % (k * k):
            raise ValueError(f"cannot pool {tokens} tokens into {k}x{k} cells: both sides of the patch grid must be "
                             f"multiples of {k}")
        positions = position_ids.clamp(min=0)
        grid_size = positions.amax(dim=1) + 1
        if not bool((grid_size % k == 0).all()):
            raise ValueError(f"both sides of the patch grid must be multiples of {k}, got {grid_size.tolist()}")
        cells = torch.div(positions, k, rounding_mode="floor")
        cells = cells[..., 0] + (grid_size[:, :1] // k) * cells[..., 1]
        weights = (cells.long().unsqueeze(-1) == torch.arange(tokens // (k * k), device=cells.device)).float() / (k * k)
        output = weights.transpose(1, 2) @ hidden_states.float()
        mask = torch.logical_not((weights == 0).all(dim=1))
        return output.to(hidden_states.dtype), mask

    def forward(self, hidden_states, position_ids, padding_positions):
        """(pooled tokens times sqrt(hidden_size), cells' validity)."""
        if padding_positions is not None:
            hidden_states = hidden_states.masked_fill(padding_positions.unsqueeze(-1), 0.0)
        hidden_states, mask = self._avg_pool_by_positions(hidden_states, position_ids)
        return hidden_states * self.root_hidden_size, mask


class Gemma4VitEncoder(nn.Module):
    """The Gemma 4 vision encoder: ``patch_embed``, the rotary angles (``rotary_emb``), ``depth`` sandwich blocks
    (``blocks``) and the output pool (``pooler``).

    ``global_pool``: 'soft' (the VLM output: k x k cell means times sqrt(width), then, with ``standardize``,
    ``(x - std_bias) * std_scale`` from the saved buffers), 'avg' (the mean of the real patch tokens, (N, width)),
    or 'none' / '' (the patch tokens). With 'soft', images must be multiples of patch_size * k on each side.
    ``use_clipped_linears`` gives every projection its clamping ranges. Attention heads are ``head_dim`` wide
    (a multiple of 4, for the two rotary halves); ``num_kv_heads`` (fewer key and value heads) defaults to
    ``num_heads``. ``drop_path_rate`` rises linearly over the blocks. Initialisation: the layers' defaults, the
    position tables N(0, 0.02^2) truncated at 2 sigma, then every linear weight so (unless ``weight_init`` is
    'skip'). No classifier: ``forward_head`` refuses.
    """

    default_cfg = {"first_conv": "patch_embed.input_proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=768, patch_size=16, in_chans=3, global_pool="soft", embed_dim=768, depth=16,
                 num_heads=12, head_dim=64, num_kv_heads=None, intermediate_size=3072, norm_eps=1e-6,
                 rope_theta=100.0, position_embedding_size=10240, pooling_kernel_size=3, standardize=False,
                 use_clipped_linears=False, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0,
                 act_layer=None, weight_init=""):
        super().__init__()
        if global_pool not in ("soft", "avg", "none", ""):
            raise ValueError(f"global_pool must be 'soft', 'avg', 'none' or '', got {global_pool!r}")
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' or 'skip', got {weight_init!r}")
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_classes = 0
        self.output_fmt = "NLC"
        self.num_prefix_tokens = 0
        self.patch_size = pair(patch_size)
        self.pooling_kernel_size = pooling_kernel_size
        self.use_clipped_linears = use_clipped_linears
        act_layer = act_layer or (lambda: nn.GELU(approximate="tanh"))
        self.patch_embed = Gemma4PatchEmbed(self.patch_size, in_chans, embed_dim, position_embedding_size)
        self.rotary_emb = Gemma4RotaryEmbedding2D(head_dim, rope_theta)
        self.blocks = nn.ModuleList([
            Gemma4Block(embed_dim, num_heads, head_dim, intermediate_size, num_kv_heads, norm_eps, attn_drop_rate,
                        proj_drop_rate, drop_path, act_layer, use_clipped_linears)
            for drop_path in torch.linspace(0, drop_path_rate, depth).tolist()])
        self.pooler = Gemma4VisionPooler(embed_dim, pooling_kernel_size)
        if standardize:
            self.register_buffer("std_bias", torch.zeros(embed_dim))
            self.register_buffer("std_scale", torch.ones(embed_dim))
        else:
            self.std_bias = None
            self.std_scale = None
        self.feature_info = [dict(num_chs=embed_dim, reduction=max(self.patch_size), module=f"blocks.{i}")
                             for i in range(depth)]
        if weight_init != "skip":
            for module in self.modules():
                if isinstance(module, nn.Linear):
                    trunc_normal_tf_(module.weight, std=0.02)

    def get_patch_size(self):
        """The (height, width) patch size, for NaFlex loaders."""
        return self.patch_size

    def set_clamp_enabled(self, enabled=True):
        """Switch the projections' clamping on or off (the buffers stay, so this can be undone)."""
        for module in self.modules():
            if isinstance(module, Gemma4ClippableLinear):
                module.use_clipped = enabled

    def _check_image_size(self, x):
        """With the soft pool, raw images must cut into whole k x k cells of patches."""
        if isinstance(x, dict):
            x = x["patches"]
        if x.ndim != 4 or self.global_pool != "soft":
            return
        cell = [size * self.pooling_kernel_size for size in self.patch_size]
        if x.shape[-2] % cell[0] or x.shape[-1] % cell[1]:
            raise ValueError(f"image size {tuple(x.shape[-2:])} must be a multiple of patch_size * "
                             f"pooling_kernel_size = {tuple(cell)} with global_pool='soft'")

    def _encode(self, x, position_ids, padding_positions, blocks=None, taken=(), intermediates=None):
        """The blocks (all, or ``blocks``) over embedded tokens, padding keys masked out; the outputs of the
        blocks in ``taken`` go to ``intermediates``."""
        rope_cos, rope_sin = self.rotary_emb(x, position_ids)
        attn_mask = None
        if padding_positions is not None and padding_positions.any():
            attn_mask = torch.zeros(x.shape[0], 1, 1, x.shape[1], dtype=x.dtype, device=x.device)
            attn_mask = attn_mask.masked_fill(padding_positions[:, None, None, :], float("-inf"))
        for block_idx, block in enumerate(self.blocks if blocks is None else blocks):
            x = block(x, rope_cos, rope_sin, attn_mask=attn_mask)
            if block_idx in taken:
                intermediates.append(x)
        return x

    def forward_features(self, x, patch_coord=None, patch_valid=None):
        """The patch tokens after the last block, (N, L, embed_dim)."""
        self._check_image_size(x)
        x, position_ids, padding_positions = self.patch_embed(x, patch_coord, patch_valid)
        return self._encode(x, position_ids, padding_positions)

    def forward_head(self, x, pre_logits=False):
        raise NotImplementedError("Gemma4VitEncoder has no classifier: use Gemma4VitClassifier")

    def forward(self, x, patch_coord=None, patch_valid=None):
        """The encoded patches pooled by ``global_pool``: soft tokens (N, L / k^2, D), their mean (N, D), or the
        tokens themselves (N, L, D)."""
        self._check_image_size(x)
        x, position_ids, padding_positions = self.patch_embed(x, patch_coord, patch_valid)
        x = self._encode(x, position_ids, padding_positions)
        if self.global_pool == "soft":
            x, _ = self.pooler(x, position_ids, padding_positions)
            if self.std_bias is not None:
                x = (x - self.std_bias) * self.std_scale
        elif self.global_pool == "avg":
            if padding_positions is not None and padding_positions.any():
                x = x.masked_fill(padding_positions.unsqueeze(-1), 0.0)
                x = x.sum(dim=1) / (~padding_positions).sum(dim=1, keepdim=True).clamp(min=1)
            else:
                x = x.mean(dim=1)
        return x

    def forward_intermediates(self, x, patch_coord=None, patch_valid=None, indices=None, norm=False,
                              stop_early=False, output_fmt="NCHW", intermediates_only=False, output_dict=False):
        """The outputs of the blocks that ``indices`` picks (None: all; n: the last n; or a list), as (N, D, rows,
        cols) maps (raw images only) or as tokens ('NLC'), and the last block's tokens unless
        ``intermediates_only``; ``stop_early`` skips the blocks after the last one picked; ``norm`` does nothing
        (there is no final norm). ``output_dict``: a dict of ``image_intermediates``, ``image_features`` (unless
        ``intermediates_only``) and ``patch_valid``, NaFlexVit's form."""
        if output_fmt not in ("NCHW", "NLC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NLC', got {output_fmt!r}")
        taken = take_indices(len(self.blocks), indices)
        raw = x["patches"] if isinstance(x, dict) else x
        self._check_image_size(raw)
        x, position_ids, padding_positions = self.patch_embed(x, patch_coord, patch_valid)
        blocks = list(self.blocks)[:max(taken) + 1] if stop_early else None
        intermediates = []
        x = self._encode(x, position_ids, padding_positions, blocks, taken, intermediates)
        if output_fmt == "NCHW":
            if raw.ndim != 4:
                raise ValueError("output_fmt='NCHW' needs raw images (N, C, H, W)")
            cols = int(position_ids[..., 0].max().item()) + 1
            rows = int(position_ids[..., 1].max().item()) + 1
            intermediates = [y.reshape(y.shape[0], rows, cols, -1).permute(0, 3, 1, 2) for y in intermediates]
        if output_dict:
            result = {"image_intermediates": intermediates}
            if not intermediates_only:
                result["image_features"] = x
            if padding_positions is not None:
                valid = ~padding_positions
            else:
                valid = torch.ones(x.shape[:2], dtype=torch.bool, device=x.device)
            result["patch_valid"] = valid
            return result
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks (there is no norm or head to drop); returns the
        absolute indices."""
        taken = take_indices(len(self.blocks), indices)
        self.blocks = nn.ModuleList(list(self.blocks)[:max(taken) + 1])
        return taken


class Gemma4VitClassifier(nn.Module):
    """A classifier around ``Gemma4VitEncoder`` (``encoder``, built with ``encoder_pool`` as its pool: '' for the
    patch tokens, 'soft' for soft tokens): the mean of its tokens (``global_pool='avg'``, padding patches left out;
    'none' or '' keeps them), a gain-free RMSNorm (``norm``, an identity without ``final_norm``), dropout
    (``head_drop``) and the linear classifier (``head``, zero bias, default weights). The other arguments are the
    encoder's."""

    default_cfg = {"first_conv": "encoder.patch_embed.input_proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=768, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg",
                 encoder_pool="", embed_dim=768, depth=16, num_heads=12, head_dim=64, num_kv_heads=None,
                 intermediate_size=3072, norm_eps=1e-6, rope_theta=100.0, position_embedding_size=10240,
                 pooling_kernel_size=3, standardize=False, use_clipped_linears=False, final_norm=True, drop_rate=0.0,
                 proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, act_layer=None, weight_init=""):
        super().__init__()
        self._check_pool(global_pool)
        if encoder_pool not in ("", "none", "soft"):
            raise ValueError(f"encoder_pool must be '', 'none' or 'soft', got {encoder_pool!r}")
        self.in_chans = in_chans
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.encoder_pool = encoder_pool
        self.encoder = Gemma4VitEncoder(
            img_size, patch_size, in_chans, encoder_pool, embed_dim, depth, num_heads, head_dim, num_kv_heads,
            intermediate_size, norm_eps, rope_theta, position_embedding_size, pooling_kernel_size, standardize,
            use_clipped_linears, proj_drop_rate, attn_drop_rate, drop_path_rate, act_layer, weight_init)
        self.norm = RmsNorm(embed_dim, eps=norm_eps, affine=False) if final_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.num_features = self.head_hidden_size = self.encoder.num_features
        self.embed_dim = self.encoder.embed_dim
        self.patch_size = self.encoder.patch_size
        self.feature_info = self.encoder.feature_info
        self._set_head(num_classes)

    @staticmethod
    def _check_pool(global_pool):
        """The classifier's pool is 'avg', 'none' or '' (the soft pool is the encoder's)."""
        if global_pool not in ("avg", "none", ""):
            raise ValueError(f"global_pool must be 'avg', 'none' or '', got {global_pool!r}: build "
                             "Gemma4VitEncoder for the soft pool")

    def _set_head(self, num_classes):
        """A fresh linear classifier for ``num_classes`` (0: an identity), its bias zeroed."""
        self.head = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        if isinstance(self.head, nn.Linear):
            nn.init.zeros_(self.head.bias)

    def get_patch_size(self):
        """The (height, width) patch size, for NaFlex loaders."""
        return self.encoder.get_patch_size()

    def set_clamp_enabled(self, enabled=True):
        """Switch the encoder's clamping on or off."""
        self.encoder.set_clamp_enabled(enabled)

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the normed features), after another pooling ``global_pool``
        if given; the new layer takes the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            self._check_pool(global_pool)
            self.global_pool = global_pool
        self._set_head(num_classes)
        self.head.train(self.training)

    def forward_features(self, x, patch_coord=None, patch_valid=None):
        """The encoder's output: patch tokens (N, L, D), or soft tokens with ``encoder_pool='soft'``."""
        return self.encoder(x, patch_coord=patch_coord, patch_valid=patch_valid)

    def forward_head(self, x, patch_valid=None, pre_logits=False):
        """The mean token (over the real patches where ``patch_valid`` is given and the tokens are patches), the
        norm, dropout; then the classifier unless ``pre_logits``."""
        if self.global_pool == "avg":
            if self.encoder_pool == "soft" or patch_valid is None:
                x = x.mean(dim=1)
            else:
                x = x.masked_fill((~patch_valid).unsqueeze(-1), 0.0)
                x = x.sum(dim=1) / patch_valid.sum(dim=1, keepdim=True).clamp(min=1)
        x = self.norm(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x, patch_coord=None, patch_valid=None):
        if isinstance(x, dict):
            patch_coord = x.get("patch_coord", patch_coord)
            patch_valid = x.get("patch_valid", patch_valid)
            x = x["patches"]
        if patch_valid is None and patch_coord is not None:
            sentinel = (patch_coord == -1).all(dim=-1)
            if sentinel.any():
                patch_valid = ~sentinel
        x = self.forward_features(x, patch_coord=patch_coord, patch_valid=patch_valid)
        return self.forward_head(x, patch_valid=patch_valid)

    def forward_intermediates(self, x, patch_coord=None, patch_valid=None, indices=None, norm=False,
                              stop_early=False, output_fmt="NCHW", intermediates_only=False):
        """The encoder's ``forward_intermediates``."""
        return self.encoder.forward_intermediates(x, patch_coord=patch_coord, patch_valid=patch_valid,
                                                  indices=indices, norm=norm, stop_early=stop_early,
                                                  output_fmt=output_fmt, intermediates_only=intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the encoder's blocks after the last one ``indices`` picks, and the classifier if ``prune_head``;
        returns the absolute indices."""
        taken = self.encoder.prune_intermediate_layers(indices, prune_norm=prune_norm, prune_head=False)
        if prune_head:
            self.reset_classifier(0)
        return taken


def _create_encoder(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered VLM encoder from timm's architecture arguments, which the caller's ``kwargs`` override
    (``num_classes`` dropped: there is no classifier); ``features_only`` gives the last three blocks' maps (or those
    of ``out_indices``)."""
    kwargs = {k: v for k, v in kwargs.items() if k != "num_classes"}
    return build_model(Gemma4VitEncoder, variant, pretrained, progress=progress, **{**model_args, **kwargs})


def _create_classifier(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered classifier from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives the last three blocks' maps (or those of ``out_indices``)."""
    return build_model(Gemma4VitClassifier, variant, pretrained, progress=progress, **{**model_args, **kwargs})


# The towers of Gemma 4's E2B / E4B models (clamped projections) and of its 26B / 31B models (standardised output).
_167M_ARCH = dict(embed_dim=768, depth=16, num_heads=12, head_dim=64, intermediate_size=3072, standardize=False,
                  use_clipped_linears=True)
_570M_ARCH = dict(embed_dim=1152, depth=27, num_heads=16, head_dim=72, intermediate_size=4304, standardize=True)


@register_model
def gemma4_vit_167m(pretrained=False, progress=True, **kwargs):
    """Gemma 4 E2B/E4B vision tower (16 blocks, 768 wide) as a classifier: mean token, norm, linear head."""
    return _create_classifier("gemma4_vit_167m", pretrained, progress, kwargs, **_167M_ARCH, final_norm=True)


@register_model
def gemma4_vit_167m_enc(pretrained=False, progress=True, **kwargs):
    """Gemma 4 E2B/E4B vision tower (16 blocks, 768 wide) as the VLM encoder: 3x3-cell soft tokens."""
    return _create_encoder("gemma4_vit_167m_enc", pretrained, progress, kwargs, **_167M_ARCH, global_pool="soft")


@register_model
def gemma4_vit_570m(pretrained=False, progress=True, **kwargs):
    """Gemma 4 26B/31B vision tower (27 blocks, 1152 wide) as a classifier: mean token, norm, linear head."""
    return _create_classifier("gemma4_vit_570m", pretrained, progress, kwargs, **_570M_ARCH, final_norm=True)


@register_model
def gemma4_vit_570m_enc(pretrained=False, progress=True, **kwargs):
    """Gemma 4 26B/31B vision tower (27 blocks, 1152 wide) as the VLM encoder: standardised 3x3-cell soft tokens."""
    return _create_encoder("gemma4_vit_570m_enc", pretrained, progress, kwargs, **_570M_ARCH, global_pool="soft")
