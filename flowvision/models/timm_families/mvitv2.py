"""MViTv2 (Li et al. 2022, "MViTv2: Improved Multiscale Vision Transformers for Classification and Detection"),
image models as timm builds them: mvitv2_tiny, mvitv2_small, mvitv2_base and mvitv2_large, the class-token models
pre-trained on ImageNet-21k (winter 2021), mvitv2_base_cls, mvitv2_large_cls and mvitv2_huge_cls, and timm's untrained
class-token mvitv2_small_cls (no published weights).

A hierarchical transformer whose resolution falls and width grows from stage to stage by pooling inside attention: a 7x7
stride-4 convolution embeds the patches, then in every block the queries, keys and values (per head) are pooled by a
depthwise 3x3 convolution and a LayerNorm, the keys and values strongly (stride 4, 2, 1, 1 over the stages, shrinking as
the map does), the queries only in a stage's first block (stride 2, which also max-pools the shortcut). Two changes over
MViT: decomposed relative position embeddings (the logit of query i and key j gains q_i . (R^h + R^w), one table per
axis, looked up by their offsets with the coarser grid stretched to the finer one) and the pooled query added back to
the attention's output ("residual pooling"). The stage's width grows in the attention of its first block (a projected
shortcut), or, without ``expand_attn`` (the large model), in the MLP of its last block. The head averages the tokens, or
(the ``_cls`` models) takes a class token that goes ahead of the patch tokens, is never pooled, and attends with them,
its relative positions left out. Model names, module names, ``state_dict`` keys and (seeded) initialisation follow
timm's ``mvitv2`` module, so its checkpoints load directly; this is not torchvision's video MViT
(``flowvision.models.video.mvit``), whose modules and keys differ.
"""
import math
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Optional, Tuple, Union

import numpy as np

import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, check_token_pool, drop_path_module, pair, trunc_normal_tf_
from ._norm import LayerNorm

__all__ = []


@dataclass
class MultiScaleVitCfg:
    """An MViTv2 architecture, timm's fields and defaults. ``embed_dim`` and ``num_heads`` are those of the first
    stage (doubled at each later one) or one per stage; ``stride_kv`` is derived, when not given, from
    ``stride_kv_adaptive`` divided by the query strides so far. ``act_layer`` and ``pool_type`` are kept for timm's
    configuration only: as in timm, the MLPs always use GELU and ``mode`` picks the pooling. ``pool_first`` and
    ``mode='conv_unshared'`` exist in timm's configuration but fail in its forward; they are refused here."""

    depths: Tuple[int, ...] = (2, 3, 16, 3)
    embed_dim: Union[int, Tuple[int, ...]] = 96
    num_heads: Union[int, Tuple[int, ...]] = 1
    mlp_ratio: float = 4.0
    pool_first: bool = False
    expand_attn: bool = True
    qkv_bias: bool = True
    use_cls_token: bool = False
    use_abs_pos: bool = False
    residual_pooling: bool = True
    mode: str = "conv"
    kernel_qkv: Tuple[int, int] = (3, 3)
    stride_q: Optional[Tuple[Tuple[int, int]]] = ((1, 1), (2, 2), (2, 2), (2, 2))
    stride_kv: Optional[Tuple[Tuple[int, int]]] = None
    stride_kv_adaptive: Optional[Tuple[int, int]] = (4, 4)
    patch_kernel: Tuple[int, int] = (7, 7)
    patch_stride: Tuple[int, int] = (4, 4)
    patch_padding: Tuple[int, int] = (3, 3)
    pool_type: str = "max"
    rel_pos_type: str = "spatial"
    act_layer: Union[str, Tuple[str, str]] = "gelu"
    norm_layer: Union[str, Tuple[str, str]] = "layernorm"
    norm_eps: float = 1e-6

    def __post_init__(self):
        num_stages = len(self.depths)
        if not isinstance(self.embed_dim, (tuple, list)):
            self.embed_dim = tuple(self.embed_dim * 2 ** i for i in range(num_stages))
        if not isinstance(self.num_heads, (tuple, list)):
            self.num_heads = tuple(self.num_heads * 2 ** i for i in range(num_stages))
        if len(self.embed_dim) != num_stages or len(self.num_heads) != num_stages:
            raise ValueError("embed_dim and num_heads need one value per stage")
        if self.stride_kv_adaptive is not None and self.stride_kv is None:
            self.stride_kv = self._adaptive_kv_strides(num_stages)

    def _adaptive_kv_strides(self, num_stages):
        """Key/value strides that keep the pooled key grid fixed: ``stride_kv_adaptive`` divided (never below 1) by
        the query stride at each stage that pools its queries on both axes."""
        stride = self.stride_kv_adaptive
        strides = []
        for stage_idx in range(num_stages):
            if min(self.stride_q[stage_idx]) > 1:
                stride = [max(s // q, 1) for s, q in zip(stride, self.stride_q[stage_idx])]
            strides.append(tuple(stride))
        return tuple(strides)


def _norm_layer(name, eps):
    """The norm class from timm's name for it (only 'layernorm', MViTv2's norm), or the class itself, with ``eps``."""
    if name == "layernorm":
        return partial(LayerNorm, eps=eps)
    if isinstance(name, str):
        raise ValueError(f"unknown norm_layer {name!r}: only 'layernorm' or a class")
    return partial(name, eps=eps)


class PatchEmbed(nn.Module):
    """A strided convolution (``proj``) to patch tokens: (N, C, H, W) -> (N, H' * W', dim_out) in row-major order,
    and the patch grid (H', W')."""

    def __init__(self, dim_in=3, dim_out=768, kernel=(7, 7), stride=(4, 4), padding=(3, 3)):
        super().__init__()
        self.proj = nn.Conv2d(dim_in, dim_out, kernel_size=kernel, stride=stride, padding=padding)

    def forward(self, x):
        x = self.proj(x)
        feat_size = tuple(x.shape[-2:])
        return x.flatten(2).transpose(1, 2), feat_size


def _pool_tokens(x, pool, feat_size, num_heads, has_cls_token):
    """Pool per-head tokens (N, heads, tokens, head_dim) on their ``feat_size`` grid with ``pool`` (a depthwise
    convolution over head_dim channels or a pooling), the class token (first) kept aside and put back in front.
    Returns the pooled tokens and their grid."""
    height, width = feat_size
    cls_token = None
    if has_cls_token:
        cls_token, x = x[:, :, :1], x[:, :, 1:]
    x = x.reshape(-1, height, width, x.shape[-1]).permute(0, 3, 1, 2)
    x = pool(x)
    pooled_size = tuple(x.shape[2:])
    x = x.reshape(-1, num_heads, x.shape[1], pooled_size[0] * pooled_size[1]).transpose(2, 3)
    if cls_token is not None:
        x = torch.cat((cls_token, x), dim=2)
    return x, pooled_size


@lru_cache(maxsize=256)
def _relative_offsets(q_size, k_size):
    """(q_size, k_size) rows of one axis's position table for each query-key pair: the query's coordinate minus
    the key's, both grids stretched to the finer one's spacing, plus the largest key offset so that rows start at
    0; computed in float32 and truncated, as timm does, so that uneven size ratios pick its rows."""
    q_ratio = np.float32(max(k_size / q_size, 1.0))
    k_ratio = np.float32(max(q_size / k_size, 1.0))
    offsets = (np.arange(q_size, dtype=np.float32)[:, None] * q_ratio
               - np.arange(k_size, dtype=np.float32)[None, :] * k_ratio)
    offsets += np.float32((k_size - 1) * max(q_size / k_size, 1.0))
    return offsets.astype(np.int64)


@lru_cache(maxsize=256)
def _relative_offsets_on(q_size, k_size, device):
    """``_relative_offsets`` as an index tensor on ``device``, made once (nn.Graph then captures no copy to it)."""
    return torch.tensor(_relative_offsets(q_size, k_size), device=device)


def _add_rel_pos(attn, q, has_cls_token, q_size, k_size, rel_pos_h, rel_pos_w):
    """MViTv2's decomposed relative positions: the logit of query i and key j (class token aside) gains
    q_i . R^h[offset_h] + q_i . R^w[offset_w]."""
    first = 1 if has_cls_token else 0
    q_h, q_w = q_size
    k_h, k_w = k_size
    batch, heads, _, dim = q.shape
    table_h = rel_pos_h[_relative_offsets_on(q_h, k_h, str(q.device))]
    table_w = rel_pos_w[_relative_offsets_on(q_w, k_w, str(q.device))]
    r_q = q[:, :, first:].reshape(batch, heads, q_h, q_w, dim)
    rel_h = torch.einsum("byhwc,hkc->byhwk", r_q, table_h)
    rel_w = torch.einsum("byhwc,wkc->byhwk", r_q, table_w)
    spatial = attn[:, :, first:, first:].reshape(batch, heads, q_h, q_w, k_h, k_w)
    spatial = spatial + rel_h[..., None] + rel_w[..., None, :]
    spatial = spatial.reshape(batch, heads, q_h * q_w, k_h * k_w)
    if not has_cls_token:
        return spatial
    spatial_rows = torch.cat((attn[:, :, 1:, :1], spatial), dim=-1)
    return torch.cat((attn[:, :, :1], spatial_rows), dim=2)


class MultiScaleAttention(nn.Module):
    """Pooling attention: ``qkv`` projects to ``dim_out``-wide queries, keys and values; each is pooled per head
    (``pool_q``, ``pool_k``, ``pool_v``: depthwise ``kernel`` convolutions at strides ``stride_q`` / ``stride_kv``,
    followed by ``norm_q`` ... in ``mode='conv'``; max or average pooling without norms in 'max' / 'avg'; none
    where kernel and stride are 1). The logits gain the relative positions (``rel_pos_h``, ``rel_pos_w``, sized for
    the ``feat_size`` grid and its pooled versions) with ``rel_pos_type='spatial'``; with ``residual_pooling`` the
    pooled queries are added to the output before ``proj``. ``forward`` returns the tokens on the queries' grid and
    that grid."""

    def __init__(self, dim, dim_out, feat_size, num_heads=8, qkv_bias=True, mode="conv", kernel_q=(1, 1),
                 kernel_kv=(1, 1), stride_q=(1, 1), stride_kv=(1, 1), has_cls_token=True, rel_pos_type="spatial",
                 residual_pooling=True, norm_layer=LayerNorm):
        super().__init__()
        self.num_heads = num_heads
        self.dim_out = dim_out
        self.head_dim = dim_out // num_heads
        self.scale = self.head_dim ** -0.5
        self.has_cls_token = has_cls_token
        self.qkv = nn.Linear(dim, dim_out * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim_out, dim_out)
        if mode not in ("conv", "max", "avg"):
            raise NotImplementedError(f"unsupported pooling mode {mode!r} (timm's 'conv_unshared' fails in its "
                                      "forward): 'conv', 'max' or 'avg'")
        self.mode = mode
        self.norm_q, self.norm_k, self.norm_v = None, None, None
        self.pool_q, self.pool_k, self.pool_v = None, None, None
        if math.prod(kernel_q) > 1 or math.prod(stride_q) > 1:
            self.pool_q, self.norm_q = self._pool(kernel_q, stride_q, norm_layer)
        if math.prod(kernel_kv) > 1 or math.prod(stride_kv) > 1:
            self.pool_k, self.norm_k = self._pool(kernel_kv, stride_kv, norm_layer)
            self.pool_v, self.norm_v = self._pool(kernel_kv, stride_kv, norm_layer)
        self.rel_pos_type = rel_pos_type
        if rel_pos_type == "spatial":
            rows = self._rel_pos_rows(feat_size, stride_q, stride_kv)
            self.rel_pos_h = nn.Parameter(torch.zeros(rows, self.head_dim))
            self.rel_pos_w = nn.Parameter(torch.zeros(rows, self.head_dim))
            trunc_normal_tf_(self.rel_pos_h, std=0.02)
            trunc_normal_tf_(self.rel_pos_w, std=0.02)
        self.residual_pooling = residual_pooling

    def _pool(self, kernel, stride, norm_layer):
        """One pooling and its norm (None outside 'conv' mode): a depthwise convolution over a head's channels,
        padded by half the kernel, or a max / average pooling."""
        padding = tuple(k // 2 for k in kernel)
        if self.mode == "max":
            return nn.MaxPool2d(kernel, stride, padding), None
        if self.mode == "avg":
            return nn.AvgPool2d(kernel, stride, padding), None
        conv = nn.Conv2d(self.head_dim, self.head_dim, kernel, stride=stride, padding=padding, groups=self.head_dim,
                         bias=False)
        return conv, norm_layer(self.head_dim)

    @staticmethod
    def _rel_pos_rows(feat_size, stride_q, stride_kv):
        """The rows of each table: every offset between the pooled query and key grids of a square ``feat_size``."""
        if feat_size[0] != feat_size[1]:
            raise ValueError(f"spatial relative positions need a square patch grid, got {tuple(feat_size)}")
        q_size = feat_size[0] // stride_q[1]
        kv_size = feat_size[0] // stride_kv[1]
        return 2 * max(q_size, kv_size) - 1

    def _pooled(self, x, pool, norm, feat_size):
        """Tokens pooled by ``pool`` (if any) and normed by ``norm`` (if any), with their grid."""
        if pool is not None:
            x, feat_size = _pool_tokens(x, pool, feat_size, self.num_heads, self.has_cls_token)
        if norm is not None:
            x = norm(x)
        return x, feat_size

    def forward(self, x, feat_size):
        batch, num_tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, num_tokens, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(dim=0)
        q, q_size = self._pooled(q, self.pool_q, self.norm_q, feat_size)
        k, k_size = self._pooled(k, self.pool_k, self.norm_k, feat_size)
        v, _ = self._pooled(v, self.pool_v, self.norm_v, feat_size)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        if self.rel_pos_type == "spatial":
            attn = _add_rel_pos(attn, q, self.has_cls_token, q_size, k_size, self.rel_pos_h, self.rel_pos_w)
        attn = attn.softmax(dim=-1)
        x = attn @ v
        if self.residual_pooling:
            x = x + q
        x = x.transpose(1, 2).reshape(batch, -1, self.dim_out)
        x = self.proj(x)
        return x, q_size


class MultiScaleBlock(nn.Module):
    """MViTv2's pre-norm block: pooling attention on ``norm1(x)`` added to the shortcut, then the MLP on
    ``norm2(x)`` added to its shortcut, each branch after stochastic depth (``drop_path1``, ``drop_path2``).

    A block that widens from ``dim`` to ``dim_out`` projects a shortcut from the normed input: the attention's
    (``shortcut_proj_attn``, the attention then widening) with ``expand_attn``, else the MLP's
    (``shortcut_proj_mlp``, the MLP widening); an unprojected shortcut is the raw input, as in the original code.
    With a query stride the attention shortcut is max-pooled (``shortcut_pool_attn``: kernel stride + 1)."""

    def __init__(self, dim, dim_out, num_heads, feat_size, mlp_ratio=4.0, qkv_bias=True, drop_path=0.0,
                 norm_layer=LayerNorm, kernel_q=(1, 1), kernel_kv=(1, 1), stride_q=(1, 1), stride_kv=(1, 1),
                 mode="conv", has_cls_token=True, expand_attn=False, rel_pos_type="spatial", residual_pooling=True):
        super().__init__()
        widens = dim != dim_out
        self.dim = dim
        self.dim_out = dim_out
        self.has_cls_token = has_cls_token
        self.norm1 = norm_layer(dim)
        self.shortcut_proj_attn = nn.Linear(dim, dim_out) if widens and expand_attn else None
        self.shortcut_pool_attn = None
        if math.prod(stride_q) > 1:
            kernel_skip = [s + 1 if s > 1 else s for s in stride_q]
            self.shortcut_pool_attn = nn.MaxPool2d(kernel_skip, stride_q, [k // 2 for k in kernel_skip])
        att_dim = dim_out if expand_attn else dim
        self.attn = MultiScaleAttention(dim, att_dim, feat_size, num_heads=num_heads, qkv_bias=qkv_bias, mode=mode,
                                        kernel_q=kernel_q, kernel_kv=kernel_kv, stride_q=stride_q,
                                        stride_kv=stride_kv, has_cls_token=has_cls_token,
                                        rel_pos_type=rel_pos_type, residual_pooling=residual_pooling,
                                        norm_layer=norm_layer)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(att_dim)
        self.shortcut_proj_mlp = nn.Linear(dim, dim_out) if widens and not expand_attn else None
        self.mlp = Mlp(att_dim, int(att_dim * mlp_ratio), dim_out)
        self.drop_path2 = drop_path_module(drop_path)

    def _shortcut_pool(self, x, feat_size):
        """The attention shortcut (N, tokens, C) max-pooled on its grid as the queries are, class token aside."""
        if self.shortcut_pool_attn is None:
            return x
        cls_token = None
        if self.has_cls_token:
            cls_token, x = x[:, :1], x[:, 1:]
        batch, _, channels = x.shape
        x = x.reshape(batch, feat_size[0], feat_size[1], channels).permute(0, 3, 1, 2)
        x = self.shortcut_pool_attn(x)
        x = x.reshape(batch, channels, -1).transpose(1, 2)
        if cls_token is not None:
            x = torch.cat((cls_token, x), dim=1)
        return x

    def forward(self, x, feat_size):
        x_norm = self.norm1(x)
        shortcut = x if self.shortcut_proj_attn is None else self.shortcut_proj_attn(x_norm)
        shortcut = self._shortcut_pool(shortcut, feat_size)
        x, feat_size = self.attn(x_norm, feat_size)
        x = shortcut + self.drop_path1(x)
        x_norm = self.norm2(x)
        shortcut = x if self.shortcut_proj_mlp is None else self.shortcut_proj_mlp(x_norm)
        x = shortcut + self.drop_path2(self.mlp(x_norm))
        return x, feat_size


class MultiScaleVitStage(nn.Module):
    """``depth`` blocks (``blocks``) on a ``feat_size`` grid: the first pools its queries by ``stride_q``; the
    width goes from ``dim`` to ``dim_out`` in the first block with ``expand_attn``, else in the last. ``drop_path``:
    one rate for all blocks or one per block. ``feat_size`` is the grid after the stage."""

    def __init__(self, dim, dim_out, depth, num_heads, feat_size, mlp_ratio=4.0, qkv_bias=True, kernel_q=(1, 1),
                 kernel_kv=(1, 1), stride_q=(1, 1), stride_kv=(1, 1), mode="conv", has_cls_token=True,
                 expand_attn=False, rel_pos_type="spatial", residual_pooling=True, norm_layer=LayerNorm,
                 drop_path=0.0):
        super().__init__()
        if expand_attn:
            out_dims = (dim_out,) * depth
        else:
            out_dims = (dim,) * (depth - 1) + (dim_out,)
        drop_paths = drop_path if isinstance(drop_path, (list, tuple)) else [drop_path] * depth
        self.blocks = nn.ModuleList()
        for block_idx in range(depth):
            self.blocks.append(MultiScaleBlock(
                dim, out_dims[block_idx], num_heads, feat_size, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                drop_path=drop_paths[block_idx], norm_layer=norm_layer, kernel_q=kernel_q, kernel_kv=kernel_kv,
                stride_q=stride_q if block_idx == 0 else (1, 1), stride_kv=stride_kv, mode=mode,
                has_cls_token=has_cls_token, expand_attn=expand_attn, rel_pos_type=rel_pos_type,
                residual_pooling=residual_pooling))
            dim = out_dims[block_idx]
            if block_idx == 0:
                feat_size = tuple(size // stride for size, stride in zip(feat_size, stride_q))
        self.feat_size = feat_size

    def forward(self, x, feat_size):
        for block in self.blocks:
            x, feat_size = block(x, feat_size)
        return x, feat_size


def _stage_features(model, out_indices=None):
    """timm's ``features_only`` MViTv2: the stages' maps from ``forward_intermediates``, the last four (all of a
    four-stage model) unless ``out_indices`` says otherwise; the final norm and head go."""
    return FeatureGetterNet(model, 4 if out_indices is None else out_indices)


class MultiScaleVit(nn.Module):
    """MViTv2 from a ``MultiScaleVitCfg``: ``patch_embed``, an optional class token (``cls_token``) and absolute
    position embedding (``pos_embed``, for the ``img_size`` patch grid), the stages (``stages``), a final norm
    (``norm``) and the head (``head``: dropout ``drop_rate``, then ``fc``).

    ``img_size`` sizes the relative position tables (and the absolute embedding): other inputs run as long as their
    pooled grids fit the tables, as in timm. ``global_pool``: 'avg' (the tokens' mean, the default without a class
    token), 'token' (the class token, the default with one) or '' (the tokens as they are). ``drop_path_rate`` is
    the last block's stochastic depth, rising linearly from 0 at the first. Initialisation is timm's:
    truncated-normal (std 0.02, cut at two standard deviations of the unit normal) position tables, tokens and
    Linear weights, zero Linear biases, PyTorch's default for the convolutions.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = staticmethod(_stage_features)

    def __init__(self, cfg, img_size=(224, 224), in_chans=3, global_pool=None, num_classes=1000, drop_path_rate=0.0,
                 drop_rate=0.0):
        super().__init__()
        if cfg.pool_first:
            raise NotImplementedError("pool_first is not supported (timm's pool-first attention fails in its forward)")
        img_size = pair(img_size)
        norm_layer = _norm_layer(cfg.norm_layer, cfg.norm_eps)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        if global_pool is None:
            global_pool = "token" if cfg.use_cls_token else "avg"
        check_token_pool(global_pool, cfg.use_cls_token)
        self.global_pool = global_pool
        self.depths = tuple(cfg.depths)
        self.expand_attn = cfg.expand_attn
        embed_dim = cfg.embed_dim[0]
        self.patch_embed = PatchEmbed(in_chans, embed_dim, cfg.patch_kernel, cfg.patch_stride, cfg.patch_padding)
        patch_dims = (img_size[0] // cfg.patch_stride[0], img_size[1] // cfg.patch_stride[1])
        num_tokens = math.prod(patch_dims)
        self.num_prefix_tokens = 1 if cfg.use_cls_token else 0
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if cfg.use_cls_token else None
        self.pos_embed = None
        if cfg.use_abs_pos:
            self.pos_embed = nn.Parameter(torch.zeros(1, self.num_prefix_tokens + num_tokens, embed_dim))
        self.stages, self.feature_info = self._make_stages(cfg, embed_dim, patch_dims, norm_layer, drop_path_rate)
        self.num_features = self.head_hidden_size = self.feature_info[-1]["num_chs"]
        self.norm = norm_layer(self.num_features)
        self.head = self._make_head(num_classes)
        if self.pos_embed is not None:
            trunc_normal_tf_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            trunc_normal_tf_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    @staticmethod
    def _make_stages(cfg, dim, feat_size, norm_layer, drop_path_rate):
        """The stages (timm's per-block linear stochastic depth) and their feature_info (timm's module names,
        ``block.<i>``)."""
        num_stages = len(cfg.embed_dim)
        rates = torch.linspace(0, drop_path_rate, sum(cfg.depths)).split(list(cfg.depths))
        stride = max(cfg.patch_stride)
        stages = nn.ModuleList()
        feature_info = []
        for stage_idx in range(num_stages):
            if cfg.expand_attn:
                dim_out = cfg.embed_dim[stage_idx]
            else:
                dim_out = cfg.embed_dim[min(stage_idx + 1, num_stages - 1)]
            stage = MultiScaleVitStage(
                dim, dim_out, cfg.depths[stage_idx], cfg.num_heads[stage_idx], feat_size, mlp_ratio=cfg.mlp_ratio,
                qkv_bias=cfg.qkv_bias, kernel_q=cfg.kernel_qkv, kernel_kv=cfg.kernel_qkv,
                stride_q=cfg.stride_q[stage_idx], stride_kv=cfg.stride_kv[stage_idx], mode=cfg.mode,
                has_cls_token=cfg.use_cls_token, expand_attn=cfg.expand_attn, rel_pos_type=cfg.rel_pos_type,
                residual_pooling=cfg.residual_pooling, norm_layer=norm_layer, drop_path=rates[stage_idx].tolist())
            stride *= max(cfg.stride_q[stage_idx])
            feature_info.append(dict(module=f"block.{stage_idx}", num_chs=dim_out, reduction=stride))
            dim = dim_out
            feat_size = stage.feat_size
            stages.append(stage)
        return stages, feature_info

    def _make_head(self, num_classes):
        """Dropout (``drop``) and the classifier (``fc``; an identity without classes) on the pooled features."""
        fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        return nn.Sequential(OrderedDict([("drop", nn.Dropout(self.drop_rate)), ("fc", fc)]))

    @staticmethod
    def _init_weights(module):
        """timm's Linear init: truncated-normal weights (std 0.02, cut at +-2 before scaling), zero biases."""
        if isinstance(module, nn.Linear):
            trunc_normal_tf_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.constant_(module.bias, 0.0)

    def get_classifier(self):
        """The final linear layer (an identity without classes)."""
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh head (dropout and classifier) for ``num_classes`` (0: the pooled features), after another pooling
        ``global_pool`` ('avg', 'token' or '') if given; the new head takes the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            check_token_pool(global_pool, self.cls_token is not None)
            self.global_pool = global_pool
        self.head = self._make_head(num_classes)
        self.head.train(self.training)

    def _embed(self, x):
        """Patch tokens, the class token in front and the absolute positions added where the model has them; and
        the patch grid."""
        x, feat_size = self.patch_embed(x)
        if self.cls_token is not None:
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        return x, feat_size

    def forward_features(self, x):
        """The normalised tokens of the last stage (N, prefix + H / 32 * W / 32, num_features)."""
        x, feat_size = self._embed(x)
        for stage in self.stages:
            x, feat_size = stage(x, feat_size)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling (the patch tokens' mean or the class token); then dropout and the classifier unless
        ``pre_logits``."""
        if self.global_pool == "avg":
            x = x[:, self.num_prefix_tokens:].mean(1)
        elif self.global_pool == "token":
            x = x[:, 0]
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), as (N, C, H, W)
        maps without the class token ('NCHW') or as tokens ('NLC'), and (unless ``intermediates_only``) the final
        tokens, normalised if the last stage ran. ``norm`` applies the final norm to the last stage's output;
        ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        last = len(self.stages) - 1
        x, feat_size = self._embed(x)
        batch = x.shape[0]
        intermediates = []
        stage_idx = 0
        for stage_idx, stage in enumerate(stages):
            x, feat_size = stage(x, feat_size)
            if stage_idx not in take:
                continue
            tap = self.norm(x) if norm and stage_idx == last else x
            if output_fmt == "NCHW":
                tap = tap[:, self.num_prefix_tokens:]
                tap = tap.reshape(batch, feat_size[0], feat_size[1], -1).permute(0, 3, 1, 2)
            intermediates.append(tap)
        if intermediates_only:
            return intermediates
        if stage_idx == last:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (and the final norm when asked or when stages go,
        the head when asked or when stages go: ``num_features`` becomes the last kept stage's width); returns the
        absolute indices."""
        take = take_indices(len(self.stages), indices)
        last = max(take)
        prune_end = last < len(self.stages) - 1
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        self.stages = self.stages[:last + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


model_cfgs = dict(
    mvitv2_tiny=MultiScaleVitCfg(depths=(1, 2, 5, 2)),
    mvitv2_small=MultiScaleVitCfg(depths=(1, 2, 11, 2)),
    mvitv2_base=MultiScaleVitCfg(depths=(2, 3, 16, 3)),
    mvitv2_large=MultiScaleVitCfg(depths=(2, 6, 36, 4), embed_dim=144, num_heads=2, expand_attn=False),
    mvitv2_small_cls=MultiScaleVitCfg(depths=(1, 2, 11, 2), use_cls_token=True),
    mvitv2_base_cls=MultiScaleVitCfg(depths=(2, 3, 16, 3), use_cls_token=True),
    mvitv2_large_cls=MultiScaleVitCfg(depths=(2, 6, 36, 4), embed_dim=144, num_heads=2, use_cls_token=True,
                                      expand_attn=True),
    mvitv2_huge_cls=MultiScaleVitCfg(depths=(4, 8, 60, 8), embed_dim=192, num_heads=3, use_cls_token=True,
                                     expand_attn=True),
)


def _create_mvitv2(variant, pretrained, progress, kwargs):
    """Build a registered variant from its configuration; ``features_only`` gives timm's four stage maps (strides
    4 to 32) unless ``out_indices`` says otherwise."""
    return build_model(MultiScaleVit, variant, pretrained, progress=progress, cfg=model_cfgs[variant], **kwargs)


@register_model
def mvitv2_tiny(pretrained=False, progress=True, **kwargs):
    """MViTv2-T: width 96 doubling per stage, depths (1, 2, 5, 2), 224 px."""
    return _create_mvitv2("mvitv2_tiny", pretrained, progress, kwargs)


@register_model
def mvitv2_small(pretrained=False, progress=True, **kwargs):
    """MViTv2-S: width 96 doubling per stage, depths (1, 2, 11, 2), 224 px."""
    return _create_mvitv2("mvitv2_small", pretrained, progress, kwargs)


@register_model
def mvitv2_base(pretrained=False, progress=True, **kwargs):
    """MViTv2-B: width 96 doubling per stage, depths (2, 3, 16, 3), 224 px."""
    return _create_mvitv2("mvitv2_base", pretrained, progress, kwargs)


@register_model
def mvitv2_large(pretrained=False, progress=True, **kwargs):
    """MViTv2-L: width 144 doubling per stage, 2 to 16 heads, depths (2, 6, 36, 4), widening in the MLPs, 224 px."""
    return _create_mvitv2("mvitv2_large", pretrained, progress, kwargs)


@register_model
def mvitv2_small_cls(pretrained=False, progress=True, **kwargs):
    """MViTv2-S with a class token (no published weights): width 96 doubling per stage, depths (1, 2, 11, 2), 224 px."""
    return _create_mvitv2("mvitv2_small_cls", pretrained, progress, kwargs)


@register_model
def mvitv2_base_cls(pretrained=False, progress=True, **kwargs):
    """MViTv2-B with a class token: width 96 doubling per stage, depths (2, 3, 16, 3), 224 px."""
    return _create_mvitv2("mvitv2_base_cls", pretrained, progress, kwargs)


@register_model
def mvitv2_large_cls(pretrained=False, progress=True, **kwargs):
    """MViTv2-L with a class token: width 144 doubling per stage, 2 to 16 heads, depths (2, 6, 36, 4), 224 px."""
    return _create_mvitv2("mvitv2_large_cls", pretrained, progress, kwargs)


@register_model
def mvitv2_huge_cls(pretrained=False, progress=True, **kwargs):
    """MViTv2-H with a class token: width 192 doubling per stage, 3 to 24 heads, depths (4, 8, 60, 8), 224 px."""
    return _create_mvitv2("mvitv2_huge_cls", pretrained, progress, kwargs)
