"""Multiscale Vision Transformers: MViT (Fan et al. 2021, "Multiscale Vision Transformers") and MViTv2 (Li et al.
2022, "MViTv2: Improved Multiscale Vision Transformers for Classification and Detection").

A transformer for video whose token grid shrinks while its channels grow, stage by stage, as in a convolutional
network. A strided 3x7x7 convolution cuts the clip into space-time patches; a class token joins them. In every
block's pooling attention the queries, keys and values are each pooled over the (T, H, W) grid by a depthwise
3-d convolution and a LayerNorm: strided key/value pooling makes attention cheap, and strided query pooling at the
first block of a stage halves the resolution (the skip connection is max-pooled to match). MViT adds separable
learnt position embeddings (spatial plus temporal); MViTv2 drops them for decomposed relative position embeddings
in the attention logits, adds the pooled queries back to the attention output (residual pooling) and widens
the channels inside the attention of a stage's first block instead of in the MLP of the block before.

Inputs are clips (N, 3, T, H, W), 16 frames of 224 x 224 for the Kinetics-400 weights (``spatial_size`` and
``temporal_size`` set the grid the position embeddings are made for). Module names, state_dict keys and
initialisation follow torchvision, so its checkpoints load directly; the model API (``forward_features``,
``forward_head``, ``reset_classifier``, ``in_chans``) follows timm.
"""
import math
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from ...ops.misc import MLP
from ...ops.stochastic_depth import StochasticDepth
from .._helpers import build_model
from ..registry import register_model
from ..weights import resolve_weights
from .video_resnet import kinetics_weights

__all__ = ["MViT", "MSBlockConfig"]


@dataclass
class MSBlockConfig:
    """One multiscale block: its heads, input and output channels, and the pooling kernels and (T, H, W) strides
    of the queries and of the keys/values (an empty list: no pooling)."""

    num_heads: int
    input_channels: int
    output_channels: int
    kernel_q: list
    kernel_kv: list
    stride_q: list
    stride_kv: list


def _pools(kernel, stride):
    """Whether a kernel and stride pool at all (more than one element, or a step over more than one)."""
    return math.prod(kernel) > 1 or math.prod(stride) > 1


class Pool(nn.Module):
    """Pool the tokens over their (T, H, W) grid, then normalize: the class token (first) is kept aside from
    pooling and joins the pooled tokens before the norm. Works on (B, N, C) or per head on (B, heads, N, C)."""

    def __init__(self, pool, norm=None):
        super().__init__()
        self.pool = pool
        self.norm_act = nn.Sequential(norm) if norm is not None else None

    def forward(self, x, thw):
        """The pooled tokens and their new (T, H, W)."""
        class_token = x[..., :1, :]
        tokens = x[..., 1:, :]
        leading = tuple(tokens.shape[:-2])
        channels = tokens.shape[-1]
        grid = tokens.transpose(-2, -1).reshape((math.prod(leading), channels) + tuple(thw))
        grid = self.pool(grid)
        thw = tuple(grid.shape[2:])
        tokens = grid.reshape(leading + (channels, math.prod(thw))).transpose(-2, -1)
        x = torch.cat((class_token, tokens), dim=-2)
        if self.norm_act is not None:
            x = self.norm_act(x)
        return x, thw


def _depthwise_pool(channels, kernel, stride, norm_layer):
    """Pooling by a depthwise 3-d convolution (padding half the kernel) followed by ``norm_layer``."""
    padding = [k // 2 for k in kernel]
    conv = nn.Conv3d(channels, channels, kernel, stride=stride, padding=padding, groups=channels, bias=False)
    return Pool(conv, norm_layer(channels))


@lru_cache(maxsize=128)
def _relative_distances(q_size, k_size, device):
    """(q_size, k_size) int64 on ``device``: along one axis, the row of the relative position table for query i
    and key j, their offset i - j with both grids stretched to the finer one's spacing (a pooled key sits where
    the queries it covers are), shifted so that the first query's offset to the last key is row 0. Computed in
    float32 and truncated, as torchvision does, so that uneven size ratios give its rows."""
    q_ratio = np.float32(max(k_size / q_size, 1.0))
    k_ratio = np.float32(max(q_size / k_size, 1.0))
    q_coords = np.arange(q_size, dtype=np.float32)[:, None] * q_ratio
    k_coords = (np.arange(k_size, dtype=np.float32)[None, :] + np.float32(1.0 - k_size)) * k_ratio
    return torch.tensor((q_coords - k_coords).astype(np.int64), device=device)


def _relative_embeddings(table, q_size, k_size):
    """(q_size, k_size, C): each query-key pair's embedding along one axis. A table made for another grid size
    is linearly resized to the 2 * max(q_size, k_size) - 1 rows needed."""
    rows = 2 * max(q_size, k_size) - 1
    if table.shape[0] != rows:
        table = F.interpolate(table.permute(1, 0).unsqueeze(0), size=rows, mode="linear").squeeze(0).permute(1, 0)
    return table[_relative_distances(q_size, k_size, table.device)]


def _add_decomposed_rel_pos(attn, q, q_thw, k_thw, rel_pos_h, rel_pos_w, rel_pos_t):
    """MViTv2's relative positions: the logit of query i and key j gains q_i . (R^h + R^w + R^t), the embeddings of
    their offsets along each axis. The class token (first query and key) gets nothing."""
    q_t, q_h, q_w = q_thw
    k_t, k_h, k_w = k_thw
    batch, heads, _, dim = q.shape
    r_q = q[:, :, 1:].reshape(batch, heads, q_t, q_h, q_w, dim)
    rel_h = torch.einsum("bythwc,hkc->bythwk", r_q, _relative_embeddings(rel_pos_h, q_h, k_h))
    rel_w = torch.einsum("bythwc,wkc->bythwk", r_q, _relative_embeddings(rel_pos_w, q_w, k_w))
    rel_t = torch.einsum("bythwc,tkc->bythwk", r_q, _relative_embeddings(rel_pos_t, q_t, k_t))
    rel_pos = rel_h[..., None, :, None] + rel_w[..., None, None, :] + rel_t[..., :, None, None]
    rel_pos = rel_pos.reshape(batch, heads, q_t * q_h * q_w, k_t * k_h * k_w)
    return attn + F.pad(rel_pos, (1, 0, 1, 0))


class MultiscaleAttention(nn.Module):
    """Multi-head pooling attention: Q, K and V are pooled over the token grid (``pool_q``, ``pool_k``, ``pool_v``)
    before attending, so the output has the pooled queries' resolution; optionally with relative positions and
    the pooled queries added back (residual pooling), always followed by a linear projection."""

    def __init__(self, input_size, embed_dim, output_dim, num_heads, kernel_q, kernel_kv, stride_q, stride_kv,
                 residual_pool, residual_with_cls_embed, rel_pos_embed, dropout=0.0, norm_layer=nn.LayerNorm):
        super().__init__()
        self.embed_dim = embed_dim
        self.output_dim = output_dim
        self.num_heads = num_heads
        self.head_dim = output_dim // num_heads
        self.scaler = 1.0 / math.sqrt(self.head_dim)
        self.residual_pool = residual_pool
        self.residual_with_cls_embed = residual_with_cls_embed

        self.qkv = nn.Linear(embed_dim, 3 * output_dim)
        project = [nn.Linear(output_dim, output_dim)]
        if dropout > 0.0:
            project.append(nn.Dropout(dropout, inplace=True))
        self.project = nn.Sequential(*project)

        self.pool_q = None
        if _pools(kernel_q, stride_q):
            self.pool_q = _depthwise_pool(self.head_dim, kernel_q, stride_q, norm_layer)
        self.pool_k = None
        self.pool_v = None
        if _pools(kernel_kv, stride_kv):
            self.pool_k = _depthwise_pool(self.head_dim, kernel_kv, stride_kv, norm_layer)
            self.pool_v = _depthwise_pool(self.head_dim, kernel_kv, stride_kv, norm_layer)

        self.rel_pos_h = None
        self.rel_pos_w = None
        self.rel_pos_t = None
        if rel_pos_embed:
            self._make_rel_pos(input_size, stride_q, stride_kv)

    def _make_rel_pos(self, input_size, stride_q, stride_kv):
        """Tables of one embedding per offset along H, W (for the larger side of the block's input grid) and T,
        truncated N(0, 0.02)."""
        size = max(input_size[1:])
        q_size = size // stride_q[1] if stride_q else size
        kv_size = size // stride_kv[1] if stride_kv else size
        spatial_offsets = 2 * max(q_size, kv_size) - 1
        temporal_offsets = 2 * input_size[0] - 1
        self.rel_pos_h = nn.Parameter(torch.zeros(spatial_offsets, self.head_dim))
        self.rel_pos_w = nn.Parameter(torch.zeros(spatial_offsets, self.head_dim))
        self.rel_pos_t = nn.Parameter(torch.zeros(temporal_offsets, self.head_dim))
        nn.init.trunc_normal_(self.rel_pos_h, std=0.02)
        nn.init.trunc_normal_(self.rel_pos_w, std=0.02)
        nn.init.trunc_normal_(self.rel_pos_t, std=0.02)

    def forward(self, x, thw):
        """(B, N, embed_dim) tokens on a ``thw`` grid -> (B, N', output_dim) tokens and the queries' grid."""
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).transpose(1, 3)
        q, k, v = qkv.unbind(dim=2)

        k_thw = thw
        if self.pool_k is not None:
            k, k_thw = self.pool_k(k, thw)
        if self.pool_v is not None:
            v, _ = self.pool_v(v, thw)
        if self.pool_q is not None:
            q, thw = self.pool_q(q, thw)

        attn = torch.matmul(self.scaler * q, k.transpose(2, 3))
        if self.rel_pos_h is not None:
            attn = _add_decomposed_rel_pos(attn, q, thw, k_thw, self.rel_pos_h, self.rel_pos_w, self.rel_pos_t)
        attn = attn.softmax(dim=-1)

        x = torch.matmul(attn, v)
        if self.residual_pool and self.residual_with_cls_embed:
            x = x + q
        elif self.residual_pool:
            x = torch.cat((x[:, :, :1], x[:, :, 1:] + q[:, :, 1:]), dim=2)
        x = x.transpose(1, 2).reshape(batch, q.shape[2], self.output_dim)
        x = self.project(x)
        return x, thw


class MultiscaleBlock(nn.Module):
    """Pre-norm transformer block around pooling attention: the skip connection is max-pooled where the queries
    are strided, and a linear ``project`` widens it where the channels grow (after the attention in MViTv2,
    after the MLP in MViT). Both residual branches have stochastic depth (per sample)."""

    def __init__(self, input_size, cnf, residual_pool, residual_with_cls_embed, rel_pos_embed, proj_after_attn,
                 dropout=0.0, stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm):
        super().__init__()
        self.proj_after_attn = proj_after_attn

        self.pool_skip = None
        if math.prod(cnf.stride_q) > 1:
            kernel_skip = [s + 1 if s > 1 else s for s in cnf.stride_q]
            padding_skip = [k // 2 for k in kernel_skip]
            self.pool_skip = Pool(nn.MaxPool3d(kernel_skip, stride=cnf.stride_q, padding=padding_skip))

        attn_dim = cnf.output_channels if proj_after_attn else cnf.input_channels
        self.norm1 = norm_layer(cnf.input_channels)
        self.norm2 = norm_layer(attn_dim)
        self.attn = MultiscaleAttention(input_size, cnf.input_channels, attn_dim, cnf.num_heads,
                                        kernel_q=cnf.kernel_q, kernel_kv=cnf.kernel_kv, stride_q=cnf.stride_q,
                                        stride_kv=cnf.stride_kv, rel_pos_embed=rel_pos_embed,
                                        residual_pool=residual_pool, residual_with_cls_embed=residual_with_cls_embed,
                                        dropout=dropout, norm_layer=norm_layer)
        self.mlp = MLP(attn_dim, [4 * attn_dim, cnf.output_channels], activation_layer=nn.GELU, dropout=dropout,
                       inplace=None)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.project = None
        if cnf.input_channels != cnf.output_channels:
            self.project = nn.Linear(cnf.input_channels, cnf.output_channels)

    def forward(self, x, thw):
        """(B, N, input_channels) tokens on a ``thw`` grid -> (B, N', output_channels) tokens and their grid."""
        x_norm1 = self.norm1(x)
        x_attn, thw_new = self.attn(x_norm1, thw)
        if self.project is not None and self.proj_after_attn:
            x = self.project(x_norm1)
        if self.pool_skip is not None:
            x, _ = self.pool_skip(x, thw)
        x = x + self.stochastic_depth(x_attn)

        x_norm2 = self.norm2(x)
        x_mlp = self.stochastic_depth(self.mlp(x_norm2))
        if self.project is not None and not self.proj_after_attn:
            x = self.project(x_norm2)
        return x + x_mlp, thw_new


class PositionalEncoding(nn.Module):
    """Prepend the class token; with absolute positions (MViT), add a learnt embedding to every token: the class
    token's own, the others' the sum of one for their frame and one for their place in the frame."""

    def __init__(self, embed_size, spatial_size, temporal_size, rel_pos_embed):
        super().__init__()
        self.spatial_size = spatial_size
        self.temporal_size = temporal_size
        self.class_token = nn.Parameter(torch.zeros(embed_size))
        self.spatial_pos = None
        self.temporal_pos = None
        self.class_pos = None
        if not rel_pos_embed:
            self.spatial_pos = nn.Parameter(torch.zeros(spatial_size[0] * spatial_size[1], embed_size))
            self.temporal_pos = nn.Parameter(torch.zeros(temporal_size, embed_size))
            self.class_pos = nn.Parameter(torch.zeros(embed_size))

    def forward(self, x, thw):
        """(B, T*H*W, C) patch tokens on a ``thw`` grid -> (B, 1 + T*H*W, C), class token first."""
        class_token = self.class_token.expand(x.shape[0], -1).unsqueeze(1)
        x = torch.cat((class_token, x), dim=1)
        if self.spatial_pos is None:
            return x
        if tuple(thw) != (self.temporal_size,) + tuple(self.spatial_size):
            raise ValueError(f"the position embeddings are for a {self.temporal_size} x {self.spatial_size[0]} x "
                             f"{self.spatial_size[1]} patch grid, the clip gives {thw[0]} x {thw[1]} x {thw[2]}")
        embed_size = self.class_pos.shape[0]
        patch_pos = (self.temporal_pos[:, None, :] + self.spatial_pos[None, :, :]).reshape(-1, embed_size)
        return x + torch.cat((self.class_pos.unsqueeze(0), patch_pos), dim=0)


def _init_weights(module):
    """torchvision's MViT initialisation of one module: truncated N(0, 0.02) linear weights and position
    parameters, zero biases, unit LayerNorm scales; convolutions keep their defaults."""
    if isinstance(module, nn.Linear):
        nn.init.trunc_normal_(module.weight, std=0.02)
        if module.bias is not None:
            nn.init.constant_(module.bias, 0.0)
    elif isinstance(module, nn.LayerNorm):
        if module.weight is not None:
            nn.init.constant_(module.weight, 1.0)
        if module.bias is not None:
            nn.init.constant_(module.bias, 0.0)
    elif isinstance(module, PositionalEncoding):
        for weights in module.parameters():
            nn.init.trunc_normal_(weights, std=0.02)


class MViT(nn.Module):
    """Patch embedding (``conv_proj``), class token and position encoding, the multiscale blocks of
    ``block_setting``, a final norm and a head (dropout, linear) on the class token; ``num_classes=0`` leaves
    its normalized features.

    The stochastic depth probability grows linearly from 0 at the first block to ``stochastic_depth_prob`` at
    the last. ``spatial_size`` and ``temporal_size`` are the clip size the position embeddings (MViT) or the
    relative position tables (MViTv2) are made for; MViTv2 also runs on other sizes, resizing its tables.
    """

    default_cfg = {"first_conv": "conv_proj", "classifier": "head.1"}

    def __init__(self, spatial_size, temporal_size, block_setting, residual_pool, residual_with_cls_embed,
                 rel_pos_embed, proj_after_attn, dropout=0.5, attention_dropout=0.0, stochastic_depth_prob=0.0,
                 num_classes=400, block=None, norm_layer=None, patch_embed_kernel=(3, 7, 7),
                 patch_embed_stride=(2, 4, 4), patch_embed_padding=(1, 3, 3), in_chans=3):
        super().__init__()
        total_stage_blocks = len(block_setting)
        if total_stage_blocks == 0:
            raise ValueError("The configuration parameter can't be empty.")
        if block is None:
            block = MultiscaleBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.num_classes = num_classes
        self.dropout = dropout
        self.num_features = block_setting[-1].output_channels
        self.head_hidden_size = self.num_features

        self.conv_proj = nn.Conv3d(in_chans, block_setting[0].input_channels, kernel_size=patch_embed_kernel,
                                   stride=patch_embed_stride, padding=patch_embed_padding)
        input_size = [size // stride for size, stride in zip((temporal_size,) + tuple(spatial_size),
                                                              self.conv_proj.stride)]
        self.pos_encoding = PositionalEncoding(block_setting[0].input_channels, (input_size[1], input_size[2]),
                                               input_size[0], rel_pos_embed)

        self.blocks = nn.ModuleList()
        for stage_block_id, cnf in enumerate(block_setting):
            sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
            self.blocks.append(block(input_size=input_size, cnf=cnf, residual_pool=residual_pool,
                                     residual_with_cls_embed=residual_with_cls_embed, rel_pos_embed=rel_pos_embed,
                                     proj_after_attn=proj_after_attn, dropout=attention_dropout,
                                     stochastic_depth_prob=sd_prob, norm_layer=norm_layer))
            if cnf.stride_q:
                input_size = [size // stride for size, stride in zip(input_size, cnf.stride_q)]
        self.norm = norm_layer(self.num_features)
        self.head = self._head(num_classes)
        for m in self.modules():
            _init_weights(m)

    def _head(self, num_classes):
        """Dropout and a linear layer to the classes, or an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        return nn.Sequential(nn.Dropout(self.dropout, inplace=True), nn.Linear(self.num_features, num_classes))

    def get_classifier(self):
        return self.head

    def reset_classifier(self, num_classes):
        """Replace the head with a fresh one for ``num_classes`` (0: return the class token's features)."""
        self.num_classes = num_classes
        self.head = self._head(num_classes)
        for m in self.head.modules():
            _init_weights(m)

    def forward_features(self, x):
        """(N, C, T, H, W) clips, or (N, C, H, W) images as one frame, to the normalized tokens
        (N, 1 + T'H'W', num_features) of the last block, class token first."""
        if x.dim() == 4:
            x = x.unsqueeze(2)
        x = self.conv_proj(x)
        thw = tuple(x.shape[2:])
        x = x.flatten(2).transpose(1, 2)
        x = self.pos_encoding(x, thw)
        for block in self.blocks:
            x, thw = block(x, thw)
        return self.norm(x)

    def forward_head(self, x, pre_logits=False):
        """The class token, then the head unless ``pre_logits``."""
        x = x[:, 0]
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


_DEPTHS = (1, 2, 11, 2)
_DIMS = (96, 192, 384, 768)
_HEADS = (1, 2, 4, 8)


def _block_setting(v2):
    """The blocks of MViT-B (16 layers) or MViTv2-S: four stages of (1, 2, 11, 2) blocks with (96, 192, 384, 768)
    channels and (1, 2, 4, 8) heads. Each stage after the first opens with a block whose queries are pooled 2x in
    space; keys and values are pooled 8x in space in the first stage, 4x, 2x and 1x in the next ones. MViT widens
    the channels at a stage's last block and pools queries only where it strides them; MViTv2 widens them at the
    next stage's first block and pools queries (3x3x3) in every block."""
    setting = []
    for stage, depth in enumerate(_DEPTHS):
        kv_stride = 8 >> stage
        for i in range(depth):
            pools_q = stage > 0 and i == 0
            if v2:
                input_channels = _DIMS[stage - 1] if pools_q else _DIMS[stage]
                output_channels = _DIMS[stage]
            else:
                input_channels = _DIMS[stage]
                widens = i == depth - 1 and stage < len(_DEPTHS) - 1
                output_channels = _DIMS[stage + 1] if widens else _DIMS[stage]
            stride_q = [1, 2, 2] if pools_q else ([1, 1, 1] if v2 else [])
            kernel_q = [3, 3, 3] if pools_q or v2 else []
            setting.append(MSBlockConfig(num_heads=_HEADS[stage], input_channels=input_channels,
                                         output_channels=output_channels, kernel_q=kernel_q, kernel_kv=[3, 3, 3],
                                         stride_q=stride_q, stride_kv=[1, kv_stride, kv_stride]))
    return setting


def _create_mvit(variant, pretrained, progress, v2, **kwargs):
    """Build MViT-B or MViTv2-S (stochastic depth 0.2 by default) for clips of ``spatial_size`` (224, 224) and
    ``temporal_size`` 16 frames; weights were made for that size, so another one with weights is an error."""
    kwargs["weights"] = kinetics_weights(pretrained, kwargs.get("weights"))
    weights = resolve_weights(variant, False, kwargs["weights"])
    spatial_size = tuple(kwargs.pop("spatial_size", (224, 224)))
    temporal_size = kwargs.pop("temporal_size", 16)
    if weights is not None:
        trained_spatial = tuple(weights.meta["min_size"])
        trained_temporal = weights.meta["min_temporal_size"]
        if (spatial_size, temporal_size) != (trained_spatial, trained_temporal):
            raise ValueError(f"{variant}'s weights are for clips of {trained_temporal} frames of "
                             f"{trained_spatial[0]} x {trained_spatial[1]}, not {temporal_size} of "
                             f"{spatial_size[0]} x {spatial_size[1]}")
    kwargs.setdefault("stochastic_depth_prob", 0.2)
    return build_model(MViT, variant, progress=progress, spatial_size=spatial_size, temporal_size=temporal_size,
                       block_setting=_block_setting(v2), residual_pool=v2, residual_with_cls_embed=False,
                       rel_pos_embed=v2, proj_after_attn=v2, **kwargs)


@register_model
def mvit_v1_b(pretrained=False, progress=True, **kwargs):
    """MViT-B, 16 layers: absolute separable position embeddings, channels widened in the MLP."""
    return _create_mvit("mvit_v1_b", pretrained, progress, v2=False, **kwargs)


@register_model
def mvit_v2_s(pretrained=False, progress=True, **kwargs):
    """MViTv2-S: relative position embeddings, residual pooling, channels widened in the attention."""
    return _create_mvit("mvit_v2_s", pretrained, progress, v2=True, **kwargs)
