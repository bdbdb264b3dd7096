"""NaFlexViT (after Dehghani et al. 2023, "Patch n' Pack: NaViT, a Vision Transformer for any Aspect Ratio and
Resolution", and Tschannen et al. 2025, "SigLIP 2: Multilingual Vision-Language Encoders with Improved Semantic
Understanding, Localization, and Dense Features"): timm's ``naflexvit`` models with ImageNet-1k weights,
naflexvit_base_patch16_gap, naflexvit_base_patch16_par_gap and naflexvit_base_patch16_parfac_gap; SigLIP 2's NaFlex
image encoders, naflexvit_base_patch16_siglip and naflexvit_so400m_patch16_siglip; and the C-RADIO backbones
(Heinrich et al. 2024, "RADIOv2.5: Improved Baselines for Agglomerative Vision Foundation Models", and C-RADIOv4,
arXiv 2601.17237), naflexvit_base/large/huge/giant_patch16_radio_v3 and naflexvit_so400m/huge_patch16_radio_v4; and
timm's variants without published weights, naflexvit_base_patch16_map (one register, attention pooling) and the
shape-optimised naflexvit_so150m2_patch16_reg1_gap / _map (width 832, 21 blocks, one register).

A ViT (the ImageNet-1k models a ViT-Base/16) whose embedding is one module (``embeds``): the image is cut into 16x16
patches flattened as (row, column, channel) and projected by a linear layer, a learnt 16x16 grid of position embeddings
is resampled to the image's patch grid (bicubic, antialiased; ``par``: to a square of the longer side, then cropped, so
the aspect ratio is kept; ``parfac``: factorised into a row table and a column table, resampled linearly), and four
register tokens go before the patch tokens. Pre-norm blocks with layer scale follow, the patch tokens are averaged and
normalised, then classified. Besides (N, C, H, W) images of any size in whole patches (any size at all with
``dynamic_img_pad=True``, which pads them), a model takes NaFlex batches of pre-patchified images of mixed sizes
(``patches`` (N, L, P*P*C), ``patch_coord`` (N, L, 2) row and column of each patch, ``patch_valid`` (N, L) False for
padding), as a dict or as arguments: each image gets the position embeddings of its own grid, attention and pooling skip
the padding. The SigLIP 2 encoders have no registers, tanh-approximated GELU, bilinear position resampling and attention
pooling; the C-RADIO backbones a class token (their output) with 7 or 9 registers (the other teachers' summary tokens),
no final norm, and a 128x128 position grid resampled bilinearly without antialiasing to a square of the longer side,
then cropped. Model names, module names, ``state_dict`` keys, configuration (``NaFlexVitCfg``) and (seeded)
initialisation follow timm's ``naflexvit`` module, so its checkpoints load directly.
"""
import dataclasses
import math
from dataclasses import dataclass
from typing import Optional, Tuple, Union

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages
from .._helpers import build_model
from ..registry import register_model
from . import vision_transformer as vit
from ._layers import get_act_layer, pair

__all__ = ["NaFlexVitCfg", "NaFlexVit"]


@dataclass
class NaFlexVitCfg:
    """The architecture of a ``NaFlexVit``: timm's ``NaFlexVitCfg`` fields for the standard ViT block (timm's
    rotary, EVA-block, patch-interpolation and grid-sample options are not here), with timm's defaults.

    ``pos_embed`` is 'learned' (a (1, rows, cols, dim) table), 'factorized' (row and column tables) or 'none';
    ``pos_embed_grid_size`` its grid (None: ``img_size // patch_size``). ``embed_proj_type`` 'linear' projects
    flattened patches (``patchify_channels_last``: (row, column, channel) order, else (channel, row, column)),
    anything else a strided convolution. ``global_pool`` is '' / 'avg' / 'avgmax' / 'max' / 'token' / 'map';
    ``fc_norm`` moves the final norm after pooling (None: with 'avg'); ``norm_layer`` and ``embed_norm_layer``
    are a class or 'layernorm' / 'rmsnorm', ``act_layer`` a class or timm's name.
    """
    patch_size: Union[int, Tuple[int, int]] = 16
    embed_dim: int = 768
    depth: int = 12
    num_heads: int = 12
    mlp_ratio: float = 4.0
    scale_mlp_norm: bool = False
    qkv_bias: bool = True
    qk_norm: bool = False
    attn_drop_rate: float = 0.0
    scale_attn_inner_norm: bool = False
    use_key_only_attn_mask: bool = False
    init_values: Optional[float] = None
    drop_rate: float = 0.0
    pos_drop_rate: float = 0.0
    patch_drop_rate: float = 0.0
    proj_drop_rate: float = 0.0
    drop_path_rate: float = 0.0
    class_token: bool = False
    reg_tokens: int = 0
    pos_embed: str = "learned"
    pos_embed_grid_size: Optional[Tuple[int, int]] = (16, 16)
    pos_embed_interp_mode: str = "bicubic"
    pos_embed_ar_preserving: bool = False
    pos_embed_antialias: bool = True
    pos_embed_align_corners: bool = False
    dynamic_img_pad: bool = False
    patchify_channels_last: bool = True
    pre_norm: bool = False
    final_norm: bool = True
    fc_norm: Optional[bool] = None
    global_pool: str = "map"
    pool_include_prefix: bool = False
    attn_pool_num_heads: Optional[int] = None
    attn_pool_mlp_ratio: Optional[float] = None
    weight_init: str = ""
    fix_init: bool = True
    embed_proj_type: str = "linear"
    embed_norm_layer: Optional[str] = None
    norm_layer: Optional[str] = None
    act_layer: Optional[str] = None


def batch_patchify(x, patch_size, pad=True, channels_last=True):
    """Images (N, C, H, W) -> patches (N, rows * cols, ph * pw * C) in row-major grid order, and the grid (rows,
    cols). ``pad`` pads the bottom and right to whole patches; ``channels_last`` flattens each patch as (row,
    column, channel), else as (channel, row, column)."""
    batch, channels, height, width = x.shape
    ph, pw = patch_size
    if pad and (height % ph or width % pw):
        x = F.pad(x, (0, (pw - width % pw) % pw, 0, (ph - height % ph) % ph))
        height, width = x.shape[-2:]
    rows, cols = height // ph, width // pw
    x = x.reshape(batch, channels, rows, ph, cols, pw)
    x = x.permute(0, 2, 4, 3, 5, 1) if channels_last else x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(batch, rows * cols, ph * pw * channels), (rows, cols)


def naflex_grid_sizes(patch_coord):
    """Each image's patch grid (rows, cols) from its patches' (row, column) coordinates (N, L, 2)."""
    return [tuple(size) for size in (patch_coord.amax(dim=1) + 1).tolist()]


def create_attention_mask(patch_valid, num_prefix_tokens=0, symmetric=True, q_len=None, dtype=torch.float32):
    """An additive attention mask from the patches' validity (N, L) (None: no mask), the ``num_prefix_tokens``
    tokens before them always valid: 0 where attention is allowed, the dtype's lowest value where not.
    ``symmetric``: (N, 1, S, S), a pair allowed when query and key are valid; else (N, 1, ``q_len``, S), a key
    allowed when valid."""
    if patch_valid is None:
        return None
    valid = patch_valid.bool()
    batch = valid.shape[0]
    if num_prefix_tokens:
        valid = torch.cat([valid.new_ones((batch, num_prefix_tokens)), valid], dim=1)
    tokens = valid.shape[1]
    if symmetric:
        allowed = (valid.unsqueeze(-1) & valid.unsqueeze(1)).unsqueeze(1)
    else:
        allowed = valid[:, None, None, :].expand(batch, 1, q_len or tokens, tokens)
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(~allowed, torch.finfo(dtype).min)


def global_pool_naflex(x, patch_valid=None, pool_type="token", num_prefix_tokens=1, reduce_include_prefix=False):
    """The token sequence (N, S, C) pooled by ``pool_type`` ('' keeps it, 'token' takes the first token, 'avg',
    'max' and 'avgmax' reduce the patch tokens, the prefix tokens too with ``reduce_include_prefix``); with
    ``patch_valid`` (N, patches) the reductions skip padding."""
    if not pool_type:
        return x
    if pool_type == "token":
        return x[:, 0]
    if reduce_include_prefix:
        if patch_valid is not None and num_prefix_tokens:
            prefix_valid = patch_valid.new_ones((x.shape[0], num_prefix_tokens))
            patch_valid = torch.cat([prefix_valid, patch_valid], dim=1)
    else:
        x = x[:, num_prefix_tokens:]
    if pool_type == "avg":
        return _masked_mean(x, patch_valid)
    if pool_type == "max":
        return _masked_max(x, patch_valid)
    return 0.5 * (_masked_max(x, patch_valid) + _masked_mean(x, patch_valid))


def _masked_mean(x, patch_valid):
    """The mean over the tokens (N, S, C) -> (N, C), of the valid ones where ``patch_valid`` (N, S) is given."""
    if patch_valid is None:
        return x.mean(dim=1)
    weights = patch_valid.to(x.dtype)
    return (x * weights.unsqueeze(-1)).sum(dim=1) / weights.sum(dim=1, keepdim=True).clamp(min=1)


def _masked_max(x, patch_valid):
    """The maximum over the tokens (N, S, C) -> (N, C), of the valid ones where ``patch_valid`` (N, S) is
    given."""
    if patch_valid is None:
        return x.amax(dim=1)
    padding = ~patch_valid.bool().unsqueeze(-1)
    return x.masked_fill(padding, torch.finfo(x.dtype).min).amax(dim=1)


class Attention(vit.Attention):
    """The ViT's multi-head self-attention taking an additive ``attn_mask`` (timm's ``Attention``)."""

    def forward(self, x, attn_mask=None):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, dim)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(vit.Block):
    """The ViT's pre-norm block whose attention takes an ``attn_mask`` (timm's ``Block``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, attn_layer=Attention, **kwargs)

    def forward(self, x, attn_mask=None):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x), attn_mask=attn_mask)))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class AttentionPoolLatent(vit.AttentionPoolLatent):
    """The ViT's latent-query attention pooling taking an additive ``attn_mask`` over the keys (timm's
    ``AttentionPoolLatent``)."""

    def forward(self, x, attn_mask=None):
        batch, tokens, dim = x.shape
        q = self.q(self.latent.expand(batch, -1, -1))
        q = q.reshape(batch, 1, self.num_heads, self.head_dim).transpose(1, 2)
        kv = self.kv(x).reshape(batch, tokens, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x.transpose(1, 2).reshape(batch, 1, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        x = x + self.mlp(self.norm(x))
        return x[:, 0]


class PatchDropoutWithIndices(nn.Module):
    """Patch dropout in training (Liu et al. 2022, "PatchDropout"): each image keeps a random ``1 - prob`` share
    of its patch tokens (at least one; the ``num_prefix_tokens`` before them always), in random order. Returns
    the tokens and the kept patches' indices (None outside training)."""

    def __init__(self, prob=0.5, num_prefix_tokens=1):
        super().__init__()
        if not 0.0 <= prob < 1.0:
            raise ValueError(f"patch dropout rate must be in [0, 1), got {prob}")
        self.prob = prob
        self.num_prefix_tokens = num_prefix_tokens

    def forward(self, x):
        if not self.training or self.prob == 0.0:
            return x, None
        prefix, patches = x[:, :self.num_prefix_tokens], x[:, self.num_prefix_tokens:]
        batch, length = patches.shape[:2]
        keep = max(1, int(length * (1.0 - self.prob)))
        keep_indices = torch.argsort(torch.randn(batch, length, device=x.device), dim=-1)[:, :keep]
        patches = patches.gather(1, keep_indices.unsqueeze(-1).expand(-1, -1, patches.shape[-1]))
        return torch.cat((prefix, patches), dim=1), keep_indices


class NaFlexEmbeds(nn.Module):
    """Patch projection, position embeddings and prefix tokens in one module (timm's ``NaFlexEmbeds``).

    ``proj_type`` 'linear': patches flattened by ``batch_patchify`` (or given pre-patchified, in NaFlex mode)
    through a linear layer; otherwise a strided convolution. ``norm`` (``proj_norm_layer``) follows the
    projection. Position embeddings (``pos_embed``: 'learned', 'factorized' or 'none', for a
    ``pos_embed_grid_size`` grid, else ``default_img_size // patch_size``) are resampled to each grid by
    ``pos_embed_interp_mode`` (the factorised tables linearly), to a square of the longer side then cropped with
    ``pos_embed_ar_preserving``, and added to the patch tokens only; the class and register tokens
    (``cls_token``, ``reg_token``) go before them, then ``pos_drop``. ``dynamic_img_pad`` pads images to whole
    patches.
    """

    def __init__(self, patch_size=16, in_chans=3, embed_dim=768, proj_type=None, proj_bias=True, class_token=True,
                 reg_tokens=0, dynamic_img_pad=False, default_img_size=None, pos_embed="learned",
                 pos_embed_grid_size=(14, 14), pos_embed_interp_mode="bicubic", pos_embed_ar_preserving=False,
                 pos_embed_antialias=True, pos_embed_align_corners=False, proj_norm_layer=None, pos_drop_rate=0.0,
                 channels_last=True):
        super().__init__()
        self.has_class_token = class_token
        self.num_reg_tokens = reg_tokens
        self.num_prefix_tokens = (1 if class_token else 0) + reg_tokens
        self.pos_embed_interp_mode = pos_embed_interp_mode
        self.pos_embed_ar_preserving = pos_embed_ar_preserving
        self.pos_embed_antialias = pos_embed_antialias
        self.pos_embed_align_corners = pos_embed_align_corners
        self.patch_size = pair(patch_size)
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.dynamic_img_pad = dynamic_img_pad
        self.channels_last = channels_last
        self.cls_token = nn.Parameter(torch.empty(1, 1, embed_dim)) if class_token else None
        self.reg_token = nn.Parameter(torch.empty(1, reg_tokens, embed_dim)) if reg_tokens else None
        if pos_embed_grid_size is None and default_img_size is not None:
            pos_embed_grid_size = tuple(s // p for s, p in zip(pair(default_img_size), self.patch_size))
        self.pos_embed_grid_size = pos_embed_grid_size
        self.is_linear = proj_type == "linear"
        if self.is_linear:
            self.proj = nn.Linear(self.patch_size[0] * self.patch_size[1] * in_chans, embed_dim, bias=proj_bias)
        else:
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size, bias=proj_bias)
        self.norm = proj_norm_layer(embed_dim) if proj_norm_layer else nn.Identity()
        if pos_embed in ("learned", "factorized") and pos_embed_grid_size is None:
            raise ValueError("position embeddings need a grid: give img_size or pos_embed_grid_size")
        self.pos_embed_type = pos_embed if pos_embed in ("learned", "factorized") else "none"
        self.pos_embed = self.pos_embed_y = self.pos_embed_x = None
        if self.pos_embed_type == "learned":
            self.pos_embed = nn.Parameter(torch.empty(1, *pos_embed_grid_size, embed_dim))
        elif self.pos_embed_type == "factorized":
            self.pos_embed_y = nn.Parameter(torch.empty(1, pos_embed_grid_size[0], embed_dim))
            self.pos_embed_x = nn.Parameter(torch.empty(1, pos_embed_grid_size[1], embed_dim))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.reset_parameters()

    def reset_parameters(self):
        """timm's draws, in order: tokens N(0, 1e-12), position tables N(0, 0.02^2)."""
        for token in (self.cls_token, self.reg_token):
            if token is not None:
                nn.init.normal_(token, std=1e-6)
        for table in (self.pos_embed, self.pos_embed_y, self.pos_embed_x):
            if table is not None:
                nn.init.normal_(table, std=0.02)

    def dynamic_feat_size(self, img_size):
        """The patch grid (rows, cols) of an (H, W) image (partial patches counted with ``dynamic_img_pad``)."""
        if self.dynamic_img_pad:
            return tuple(math.ceil(s / p) for s, p in zip(img_size, self.patch_size))
        return tuple(s // p for s, p in zip(img_size, self.patch_size))

    def _project(self, x, naflex):
        """Images (N, C, H, W) or, in NaFlex mode with the linear projection, patches (N, L, P*P*C) or (N, L, Ph,
        Pw, C) -> patch tokens (N, L, dim) and the images' grid (None for pre-patchified patches)."""
        if self.is_linear and naflex:
            if x.dim() not in (3, 5):
                raise ValueError(f"pre-patchified input must be 3-D or 5-D, got {x.dim()}-D")
            return self.proj(x.flatten(2)), None
        if x.dim() != 4:
            raise ValueError(f"image input must be (N, C, H, W), got {x.dim()}-D")
        if self.is_linear:
            x, grid_size = batch_patchify(x, self.patch_size, pad=self.dynamic_img_pad,
                                          channels_last=self.channels_last)
            return self.proj(x), grid_size
        if self.dynamic_img_pad:
            height, width = x.shape[-2:]
            ph, pw = self.patch_size
            x = F.pad(x, (0, (pw - width % pw) % pw, 0, (ph - height % ph) % ph))
        x = self.proj(x)
        grid_size = tuple(x.shape[-2:])
        return x.flatten(2).transpose(1, 2), grid_size

    def _resample_learned(self, grid_size, dtype):
        """The learnt table for a (rows, cols) grid as (1, rows * cols, dim): resampled in float32 (to a square
        of the longer side, then cropped, with ``pos_embed_ar_preserving``) unless the grid is its own."""
        rows, cols = grid_size
        if tuple(self.pos_embed.shape[1:3]) == (rows, cols):
            return self.pos_embed.reshape(1, rows * cols, -1).to(dtype)
        target = (max(grid_size),) * 2 if self.pos_embed_ar_preserving else grid_size
        table = F.interpolate(self.pos_embed.permute(0, 3, 1, 2).float(), size=target,
                              mode=self.pos_embed_interp_mode, align_corners=self.pos_embed_align_corners,
                              antialias=self.pos_embed_antialias)
        return table[:, :, :rows, :cols].flatten(2).transpose(1, 2).to(dtype)

    @staticmethod
    def _resample_axis(table, length, dtype):
        """A (1, L, dim) factorised table resampled linearly (in float32) to ``length`` entries."""
        if table.shape[1] == length:
            return table.to(dtype)
        table = F.interpolate(table.permute(0, 2, 1).float(), size=length, mode="linear", align_corners=False)
        return table.permute(0, 2, 1).to(dtype)

    def _resample_factorized(self, grid_size, dtype):
        """The row and column tables resampled (to the longer side with ``pos_embed_ar_preserving``), cropped
        and summed over the (rows, cols) grid: (1, rows * cols, dim)."""
        rows, cols = grid_size
        len_y, len_x = (max(grid_size),) * 2 if self.pos_embed_ar_preserving else grid_size
        pe_y = self._resample_axis(self.pos_embed_y, len_y, dtype)[:, :rows]
        pe_x = self._resample_axis(self.pos_embed_x, len_x, dtype)[:, :cols]
        return (pe_y.unsqueeze(2) + pe_x.unsqueeze(1)).flatten(1, 2)

    def _grid_pos_embed(self, grid_size, dtype):
        """Position embeddings (1, rows * cols, dim) of a (rows, cols) grid."""
        if self.pos_embed_type == "learned":
            return self._resample_learned(grid_size, dtype)
        return self._resample_factorized(grid_size, dtype)

    def _naflex_pos_embed(self, x, patch_coord):
        """Each image's own grid's embeddings (from its largest patch coordinates) on its first rows * cols
        tokens, zeros on the rest (padding): (N, L, dim); one resampling per distinct grid."""
        length = x.shape[1]
        tables = {}
        rows = []
        for grid_size in naflex_grid_sizes(patch_coord):
            if grid_size not in tables:
                table = self._grid_pos_embed(grid_size, x.dtype)[:, :length]
                tables[grid_size] = F.pad(table, (0, 0, 0, length - table.shape[1]))
            rows.append(tables[grid_size])
        return torch.cat(rows, dim=0)

    def forward(self, x, patch_coord=None):
        """Images (N, C, H, W), or NaFlex patches with their ``patch_coord`` (N, L, 2) -> the token sequence (N,
        prefix + L, dim) and the images' patch grid (None in NaFlex mode)."""
        batch = x.shape[0]
        x, grid_size = self._project(x, patch_coord is not None)
        x = self.norm(x)
        if self.pos_embed_type != "none":
            if grid_size is not None:
                x = x + self._grid_pos_embed(grid_size, x.dtype)
            else:
                x = x + self._naflex_pos_embed(x, patch_coord)
        prefix = [token.expand(batch, -1, -1) for token in (self.cls_token, self.reg_token) if token is not None]
        if prefix:
            x = torch.cat(prefix + [x], dim=1)
        x = self.pos_drop(x)
        return x, grid_size


class NaFlexVit(vit.ViTApi, nn.Module):
    """Embeddings (``embeds``), an optional pre-norm, ``depth`` pre-norm blocks, the final norm, pooling and a
    linear head (timm's ``NaFlexVit``): ``NaFlexVitCfg`` (``cfg``, its fields overridable by keyword) gives the
    architecture; ``img_size`` only sizes the position grid when ``pos_embed_grid_size`` is None.

    ``forward`` takes images (N, C, H, W) in whole patches (position embeddings resampled to their grid), or a NaFlex
    batch: a dict with ``patches``, ``patch_coord``, ``patch_valid`` (and optionally ``attn_mask``), or the
    patches with those as arguments; padding is masked out of attention and pooling. ``forward_features``
    returns the sequence, in NaFlex mode a dict of ``patches`` and ``patch_valid``. ``num_classes=0`` gives the
    pooled features.
    """

    default_cfg = {"first_conv": "embeds.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "avg", "avgmax", "max", "token", "map")
    _set_global_pool = vit.VisionTransformer._set_global_pool

    def __init__(self, cfg=None, in_chans=3, num_classes=1000, img_size=None, **kwargs):
        super().__init__()
        cfg = dataclasses.replace(cfg or NaFlexVitCfg(), **kwargs)
        self._check_global_pool(cfg.global_pool, cfg.class_token)
        if cfg.pos_embed not in ("", "none", "learned", "factorized"):
            raise ValueError(f"pos_embed must be 'learned', 'factorized' or 'none', got {cfg.pos_embed!r}")
        if cfg.weight_init:
            raise ValueError(f"weight_init must be '' (timm's default scheme), got {cfg.weight_init!r}")
        norm_layer = vit._norm_layer(cfg.norm_layer) or vit._layer_norm
        act_layer = get_act_layer(cfg.act_layer) or nn.GELU
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = cfg.global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = cfg.embed_dim
        self.num_prefix_tokens = (1 if cfg.class_token else 0) + cfg.reg_tokens
        self.num_reg_tokens = cfg.reg_tokens
        self.has_class_token = cfg.class_token
        self.pool_include_prefix = cfg.pool_include_prefix
        self.use_key_only_attn_mask = cfg.use_key_only_attn_mask

        self.embeds = NaFlexEmbeds(
            cfg.patch_size, in_chans, cfg.embed_dim, proj_type=cfg.embed_proj_type, proj_bias=not cfg.pre_norm,
            class_token=cfg.class_token, reg_tokens=cfg.reg_tokens, dynamic_img_pad=cfg.dynamic_img_pad,
            default_img_size=img_size, pos_embed=cfg.pos_embed, pos_embed_grid_size=cfg.pos_embed_grid_size,
            pos_embed_interp_mode=cfg.pos_embed_interp_mode, pos_embed_ar_preserving=cfg.pos_embed_ar_preserving,
            pos_embed_antialias=cfg.pos_embed_antialias, pos_embed_align_corners=cfg.pos_embed_align_corners,
            proj_norm_layer=vit._norm_layer(cfg.embed_norm_layer), pos_drop_rate=cfg.pos_drop_rate,
            channels_last=cfg.patchify_channels_last)
        self.norm_pre = norm_layer(cfg.embed_dim) if cfg.pre_norm else nn.Identity()
        if cfg.patch_drop_rate > 0:
            self.patch_drop = PatchDropoutWithIndices(cfg.patch_drop_rate, num_prefix_tokens=self.num_prefix_tokens)
        else:
            self.patch_drop = None
        drop_path_rates = [p.item() for p in torch.linspace(0, cfg.drop_path_rate, cfg.depth)]
        self.blocks = nn.Sequential(*[
            Block(cfg.embed_dim, cfg.num_heads, mlp_ratio=cfg.mlp_ratio, qkv_bias=cfg.qkv_bias, qk_norm=cfg.qk_norm,
                  scale_attn_norm=cfg.scale_attn_inner_norm, scale_mlp_norm=cfg.scale_mlp_norm,
                  proj_drop=cfg.proj_drop_rate, attn_drop=cfg.attn_drop_rate, init_values=cfg.init_values,
                  drop_path=drop_path_rates[i], act_layer=act_layer, norm_layer=norm_layer, depth=i)
            for i in range(cfg.depth)])
        reduction = max(self.embeds.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=cfg.embed_dim, reduction=reduction)
                             for i in range(cfg.depth)]
        fc_norm = cfg.global_pool == "avg" if cfg.fc_norm is None else cfg.fc_norm
        self.norm = norm_layer(cfg.embed_dim) if cfg.final_norm and not fc_norm else nn.Identity()
        if cfg.global_pool == "map":
            self.attn_pool = AttentionPoolLatent(cfg.embed_dim, cfg.attn_pool_num_heads or cfg.num_heads,
                                                 cfg.attn_pool_mlp_ratio or cfg.mlp_ratio, norm_layer=norm_layer,
                                                 act_layer=act_layer)
        else:
            self.attn_pool = None
        self.fc_norm = norm_layer(cfg.embed_dim) if cfg.final_norm and fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(cfg.drop_rate)
        self.head = self._new_head(num_classes)
        self.fix_init = cfg.fix_init
        self.init_weights()

    def init_weights(self):
        """timm's scheme after the modules' own draws: every submodule's (``_init_module_tree``: truncated-normal
        Linear weights, the patch projection's included, zero biases, the attention pooling's latent), then the
        blocks' output projections scaled down by depth (``fix_init``)."""
        vit._init_module_tree(self)
        if self.fix_init:
            self._fix_init_weight()

    @staticmethod
    def _block(block, index, x, attn_mask):
        """Block ``index`` on the token sequence, with the attention mask (or None)."""
        return block(x, attn_mask=attn_mask)

    def _embed(self, x, patch_coord=None, patch_valid=None, attn_mask=None):
        """Embeddings, patch dropout (in training) and the pre-norm: (tokens, patch_valid of the kept patches,
        attention mask: ``attn_mask`` or the one ``patch_valid`` gives)."""
        x, _ = self.embeds(x, patch_coord=patch_coord)
        if self.training and self.patch_drop is not None:
            x, keep_indices = self.patch_drop(x)
            if patch_valid is not None:
                patch_valid = patch_valid.gather(1, keep_indices)
        if attn_mask is None:
            key_only = self.use_key_only_attn_mask
            attn_mask = create_attention_mask(patch_valid, self.num_prefix_tokens, symmetric=not key_only,
                                              q_len=1 if key_only else None, dtype=x.dtype)
        x = self.norm_pre(x)
        return x, patch_valid, attn_mask

    def forward_features(self, patches, patch_coord=None, patch_valid=None, attn_mask=None):
        """Images (N, C, H, W) -> the normalised token sequence (N, prefix + patches, dim); NaFlex patches (with
        ``patch_coord``) -> a dict of that sequence (``patches``) and the kept patches' ``patch_valid``."""
        x, patch_valid, attn_mask = self._embed(patches, patch_coord, patch_valid, attn_mask)
        x, _ = self._run_blocks(x, attn_mask, self.blocks)
        x = self.norm(x)
        if patch_coord is not None:
            return {"patches": x, "patch_valid": patch_valid}
        return x

    def pool(self, x, pool_type=None, patch_valid=None):
        """The sequence pooled by ``pool_type`` (default ``global_pool``; see ``global_pool_naflex``), padding
        skipped where ``patch_valid`` is given; with attention pooling, ``attn_pool`` on the patch tokens (the
        prefix too with ``pool_include_prefix``), keys masked by validity."""
        if self.attn_pool is not None:
            prefix = self.num_prefix_tokens if self.pool_include_prefix else 0
            attn_mask = create_attention_mask(patch_valid, prefix, symmetric=False, q_len=1, dtype=x.dtype)
            if not self.pool_include_prefix:
                x = x[:, self.num_prefix_tokens:]
            return self.attn_pool(x, attn_mask=attn_mask)
        pool_type = self.global_pool if pool_type is None else pool_type
        return global_pool_naflex(x, patch_valid, pool_type, self.num_prefix_tokens, self.pool_include_prefix)

    def forward_head(self, x, pre_logits=False, patch_valid=None):
        """Pooling (skipping padding per ``patch_valid``), ``fc_norm``, head dropout, then the classifier unless
        ``pre_logits``."""
        x = self.pool(x, patch_valid=patch_valid)
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x, patch_coord=None, patch_valid=None, attn_mask=None):
        if isinstance(x, dict):
            patch_valid = x.get("patch_valid", patch_valid)
            patch_coord = x.get("patch_coord", patch_coord)
            attn_mask = x.get("attn_mask", attn_mask)
            x = x["patches"]
        if patch_coord is None:
            return self.forward_head(self.forward_features(x))
        if patch_valid is None:
            raise ValueError("NaFlex input needs patch_valid")
        features = self.forward_features(x, patch_coord, patch_valid, attn_mask)
        return self.forward_head(features["patches"], patch_valid=features["patch_valid"])

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False, output_dict=False, patch_coord=None,
                              patch_valid=None, attn_mask=None):
        """The outputs of the blocks ``indices`` picks (None: all, n: the last n, or a list), without prefix
        tokens, as (N, C, rows, cols) maps ('NCHW', images only) or sequences ('NLC'), and (unless
        ``intermediates_only``) the final normalised sequence; ``norm`` normalises each, ``return_prefix_tokens``
        pairs each with its prefix tokens, ``stop_early`` skips later blocks. A NaFlex dict input takes 'NLC'.
        ``output_dict``: a dict of ``image_intermediates``, ``image_intermediates_prefix`` (with
        ``return_prefix_tokens``), ``patch_valid`` (NaFlex) and ``image_features`` (unless
        ``intermediates_only``)."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        if isinstance(x, dict):
            if output_fmt == "NCHW":
                raise ValueError("NaFlex (dict) input has a grid per image: use output_fmt='NLC'")
            if not output_dict and self.training and self.patch_drop is not None:
                raise ValueError("NaFlex intermediates under patch dropout need output_dict=True (for the kept "
                                 "patches' patch_valid)")
            patch_coord = x["patch_coord"]
            patch_valid = x.get("patch_valid", patch_valid)
            attn_mask = x.get("attn_mask", attn_mask)
            x = x["patches"]
        else:
            grid_size = self.embeds.dynamic_feat_size(x.shape[-2:])
        x, patch_valid, attn_mask = self._embed(x, patch_coord, patch_valid, attn_mask)
        x, intermediates = self._run_blocks(x, attn_mask, blocks, take, norm)
        prefixes = [y[:, :self.num_prefix_tokens] for y in intermediates] if self.num_prefix_tokens else None
        intermediates = [y[:, self.num_prefix_tokens:] for y in intermediates]
        if output_fmt == "NCHW":
            intermediates = [y.reshape(y.shape[0], *grid_size, -1).permute(0, 3, 1, 2).contiguous()
                             for y in intermediates]
        if output_dict:
            result = {"image_intermediates": intermediates}
            if prefixes is not None and return_prefix_tokens:
                result["image_intermediates_prefix"] = prefixes
            if patch_valid is not None:
                result["patch_valid"] = patch_valid
            if not intermediates_only:
                result["image_features"] = self.norm(x)
            return result
        if return_prefix_tokens and prefixes is not None:
            intermediates = list(zip(intermediates, prefixes))
        if intermediates_only:
            return intermediates
        return self.norm(x), intermediates


def _create_naflexvit(variant, pretrained, progress, kwargs, cfg):
    """Build a registered variant from timm's configuration ``cfg``, whose fields the caller's ``kwargs``
    override (the rest go to the class); ``features_only`` gives the last three blocks' outputs (timm's default)
    unless ``out_indices`` says otherwise."""
    fields = {f.name for f in dataclasses.fields(NaFlexVitCfg)}
    cfg = dataclasses.replace(cfg, **{k: kwargs.pop(k) for k in list(kwargs) if k in fields})
    return build_model(NaFlexVit, variant, pretrained, progress=progress, cfg=cfg, **kwargs)


_BASE = dict(patch_size=16, embed_dim=768, depth=12, num_heads=12, init_values=1e-5, global_pool="avg", reg_tokens=4,
             fc_norm=True)


@register_model
def naflexvit_base_patch16_gap(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-B/16: 4 registers, a learnt 16x16 position grid, average pooling."""
    return _create_naflexvit("naflexvit_base_patch16_gap", pretrained, progress, kwargs, NaFlexVitCfg(**_BASE))


@register_model
def naflexvit_base_patch16_par_gap(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-B/16: 4 registers, a learnt 16x16 position grid resampled keeping the aspect, average pooling."""
    cfg = NaFlexVitCfg(**_BASE, pos_embed_ar_preserving=True)
    return _create_naflexvit("naflexvit_base_patch16_par_gap", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_base_patch16_parfac_gap(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-B/16: 4 registers, factorised 16 + 16 position tables resampled keeping the aspect, average pooling."""
    cfg = NaFlexVitCfg(**_BASE, pos_embed_ar_preserving=True, pos_embed="factorized")
    return _create_naflexvit("naflexvit_base_patch16_parfac_gap", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_base_patch16_map(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-B/16: 1 register, a learnt 16x16 position grid, layer scale, attention pooling."""
    cfg = NaFlexVitCfg(patch_size=16, embed_dim=768, depth=12, num_heads=12, init_values=1e-5, global_pool="map",
                       reg_tokens=1)
    return _create_naflexvit("naflexvit_base_patch16_map", pretrained, progress, kwargs, cfg)


# SO150M v2: the shape-optimised ViT of 832 width, 21 blocks, 13 heads, one register, no qkv biases
_SO150M2 = dict(patch_size=16, embed_dim=832, depth=21, num_heads=13, mlp_ratio=34 / 13, init_values=1e-5,
                qkv_bias=False, reg_tokens=1)


@register_model
def naflexvit_so150m2_patch16_reg1_gap(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-SO150M2/16: width 832, 21 blocks, 13 heads, 1 register, layer scale, average pooling then norm."""
    cfg = NaFlexVitCfg(**_SO150M2, global_pool="avg", fc_norm=True)
    return _create_naflexvit("naflexvit_so150m2_patch16_reg1_gap", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_so150m2_patch16_reg1_map(pretrained=False, progress=True, **kwargs):
    """NaFlexViT-SO150M2/16: width 832, 21 blocks, 13 heads, 1 register, layer scale, attention pooling."""
    cfg = NaFlexVitCfg(**_SO150M2, global_pool="map")
    return _create_naflexvit("naflexvit_so150m2_patch16_reg1_map", pretrained, progress, kwargs, cfg)


_SIGLIP = dict(patch_size=16, act_layer="gelu_tanh", global_pool="map", pos_embed_interp_mode="bilinear")


@register_model
def naflexvit_base_patch16_siglip(pretrained=False, progress=True, **kwargs):
    """SigLIP 2's NaFlex ViT-B/16 image encoder: tanh GELU, bilinear position resampling, attention pooling."""
    cfg = NaFlexVitCfg(**_SIGLIP, embed_dim=768, depth=12, num_heads=12)
    return _create_naflexvit("naflexvit_base_patch16_siglip", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_so400m_patch16_siglip(pretrained=False, progress=True, **kwargs):
    """SigLIP 2's NaFlex ViT-SO400M/16 image encoder: width 1152, 27 blocks, MLP ratio 3.7362, attention pooling."""
    cfg = NaFlexVitCfg(**_SIGLIP, embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362)
    return _create_naflexvit("naflexvit_so400m_patch16_siglip", pretrained, progress, kwargs, cfg)


def _radio_cfg(**kwargs):
    """A C-RADIO backbone's configuration: 16-pixel patches, the class token as output, no final norm, a 128x128
    position grid resampled bilinearly (no antialiasing) to a square of the longer side, then cropped; ``kwargs``
    give the size, registers and (v3 base and huge) corner-aligned resampling."""
    return NaFlexVitCfg(patch_size=16, class_token=True, global_pool="token", final_norm=False,
                        pos_embed_grid_size=(128, 128), pos_embed_interp_mode="bilinear", pos_embed_ar_preserving=True,
                        pos_embed_antialias=False, **kwargs)


@register_model
def naflexvit_base_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3-B: ViT-B/16 with layer scales, 7 registers, corner-aligned position resampling."""
    cfg = _radio_cfg(embed_dim=768, depth=12, num_heads=12, init_values=1e-5, reg_tokens=7,
                     pos_embed_align_corners=True)
    return _create_naflexvit("naflexvit_base_patch16_radio_v3", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_large_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3-L: ViT-L/16 with layer scales, 7 registers."""
    cfg = _radio_cfg(embed_dim=1024, depth=24, num_heads=16, init_values=1e-5, reg_tokens=7)
    return _create_naflexvit("naflexvit_large_patch16_radio_v3", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_huge_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3-H: ViT-H/16 (width 1280, 32 blocks), 7 registers, corner-aligned position resampling."""
    cfg = _radio_cfg(embed_dim=1280, depth=32, num_heads=16, reg_tokens=7, pos_embed_align_corners=True)
    return _create_naflexvit("naflexvit_huge_patch16_radio_v3", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_giant_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3-g: ViT-g/16 (width 1536, 40 blocks, 24 heads), 7 registers."""
    cfg = _radio_cfg(embed_dim=1536, depth=40, num_heads=24, reg_tokens=7)
    return _create_naflexvit("naflexvit_giant_patch16_radio_v3", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_so400m_patch16_radio_v4(pretrained=False, progress=True, **kwargs):
    """C-RADIOv4-SO400M: ViT-SO400M/16 (width 1152, 27 blocks, MLP 4304 wide), 9 registers."""
    cfg = _radio_cfg(embed_dim=1152, depth=27, num_heads=16, mlp_ratio=4304 / 1152, reg_tokens=9)
    return _create_naflexvit("naflexvit_so400m_patch16_radio_v4", pretrained, progress, kwargs, cfg)


@register_model
def naflexvit_huge_patch16_radio_v4(pretrained=False, progress=True, **kwargs):
    """C-RADIOv4-H: ViT-H/16 (width 1280, 32 blocks), 9 registers."""
    cfg = _radio_cfg(embed_dim=1280, depth=32, num_heads=16, reg_tokens=9)
    return _create_naflexvit("naflexvit_huge_patch16_radio_v4", pretrained, progress, kwargs, cfg)
