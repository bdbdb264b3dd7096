"""Swin Transformer (Liu et al. 2021, "Swin Transformer: Hierarchical Vision Transformer using Shifted
Windows") and Swin Transformer V2 (Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and
Resolution"): tiny, small and base.

Self-attention runs inside non-overlapping windows of the (B, H, W, C) token map; every second block
rolls the map by half a window first so that information crosses window borders, masking the pairs of
tokens the roll brought together from opposite edges. Maps that are not a multiple of the window are
zero-padded. V1 adds a learned bias per relative offset (a table indexed by the ``relative_position_index``
buffer); V2 uses scaled cosine attention (``logit_scale``) with the bias computed by a small MLP
(``cpb_mlp``) from log-spaced offsets (the ``relative_coords_table`` buffer), and normalizes after the
attention and MLP instead of before.

Module names, buffers, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``,
``feature_info``) follows timm.
"""
import math
from functools import lru_cache, partial

import numpy as np

import engine as torch
from engine import fx, nn
from engine.nn import functional as F

from ..ops.misc import MLP, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._helpers import build_model
from .registry import register_model

__all__ = ["SwinTransformer"]


def _patch_merging_pad(x):
    """(..., H, W, C) -> (..., ceil(H/2), ceil(W/2), 4C): each 2x2 neighbourhood's tokens side by side.

    An odd map is zero-padded at the bottom or right first. The order along channels is
    (top-left, bottom-left, top-right, bottom-right), the order the checkpoints were trained with.
    """
    height, width = x.shape[-3], x.shape[-2]
    x = F.pad(x, (0, 0, 0, width % 2, 0, height % 2))
    top_left = x[..., 0::2, 0::2, :]
    bottom_left = x[..., 1::2, 0::2, :]
    top_right = x[..., 0::2, 1::2, :]
    bottom_right = x[..., 1::2, 1::2, :]
    return torch.cat([top_left, bottom_left, top_right, bottom_right], -1)


fx.wrap("_patch_merging_pad")  # one node when traced, as torchvision's


class PatchMerging(nn.Module):
    """Halve the token map: concatenate 2x2 neighbours (4C), normalize, project to 2C."""

    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        x = _patch_merging_pad(x)
        x = self.norm(x)
        return self.reduction(x)


class PatchMergingV2(nn.Module):
    """V2's patch merging: project the concatenated 2x2 neighbours to 2C, then normalize."""

    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        x = _patch_merging_pad(x)
        x = self.reduction(x)
        return self.norm(x)


def _relative_position_index(window_size):
    """(N, N) int64, N = wh * ww: for tokens i and j of a window, the bias table row of their offset.

    Offsets (dy, dx) range over (2wh - 1) x (2ww - 1) values, numbered row-major from (-(wh-1), -(ww-1)).
    """
    wh, ww = window_size
    rows, cols = np.meshgrid(np.arange(wh), np.arange(ww), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    dy = rows[:, None] - rows[None, :] + (wh - 1)
    dx = cols[:, None] - cols[None, :] + (ww - 1)
    return (dy * (2 * ww - 1) + dx).astype(np.int64)


def _log_spaced_relative_coords(window_size):
    """(1, 2wh - 1, 2ww - 1, 2) float32: every relative offset scaled to [-8, 8], then sign(t) * log2(1 + |t|) / 3.

    V2's log-spaced coordinates, the input of the bias MLP (small offsets keep resolution, large ones compress).
    """
    wh, ww = window_size
    dy = np.arange(-(wh - 1), wh, dtype=np.float32) / np.float32(wh - 1)
    dx = np.arange(-(ww - 1), ww, dtype=np.float32) / np.float32(ww - 1)
    table = np.stack(np.meshgrid(dy, dx, indexing="ij"), axis=-1)[None] * np.float32(8)
    return (np.sign(table) * np.log2(np.abs(table) + np.float32(1)) / np.float32(3)).astype(np.float32)


def _get_relative_position_bias(table, index, window_size):
    """(1, heads, N, N) bias from a (offsets, heads) ``table`` and the flat (N * N,) ``index``."""
    n = window_size[0] * window_size[1]
    bias = table[index].view(n, n, -1)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)


fx.wrap("_get_relative_position_bias")


def _window_partition(x, window_size):
    """(B, H, W, C) -> (B * windows, wh * ww, C), windows in row-major order (H, W multiples of the window)."""
    batch, height, width, channels = x.shape
    wh, ww = window_size
    x = x.view(batch, height // wh, wh, width // ww, ww, channels)
    x = x.permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, wh * ww, channels)


def _window_reverse(windows, window_size, height, width):
    """Inverse of ``_window_partition``: (B * windows, wh * ww, C) -> (B, H, W, C)."""
    wh, ww = window_size
    channels = windows.shape[-1]
    x = windows.view(-1, height // wh, width // ww, wh, ww, channels)
    x = x.permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, height, width, channels)


def _shift_regions(size, window, shift):
    """Along one axis of the rolled map, the region of each position: 0 before the last window, 1 for the
    last window's positions that came from next to it, 2 for the last ``shift`` positions (rolled in from
    the other edge); all 0 without a shift."""
    regions = np.zeros(size, dtype=np.int64)
    if shift > 0:
        regions[size - window:size - shift] = 1
        regions[size - shift:] = 2
    return regions


@lru_cache(maxsize=32)
def _shifted_window_mask_tensor(height, width, window_size, shift_size, device, dtype):
    """``_shifted_window_mask`` as a tensor on ``device``, made once per geometry: each block's call then copies
    nothing from the host (on a GPU, a copy per call, which a CUDA graph capture refuses)."""
    return torch.tensor(_shifted_window_mask(height, width, window_size, shift_size), dtype=dtype, device=device)


def _shifted_window_mask(height, width, window_size, shift_size):
    """(windows, N, N) float32: -100 between two tokens of a window that come from different regions of the
    rolled map (they are not neighbours in the image), 0 elsewhere."""
    regions = _shift_regions(height, window_size[0], shift_size[0])[:, None] * 3 \
        + _shift_regions(width, window_size[1], shift_size[1])[None, :]
    wh, ww = window_size
    windows = regions.reshape(height // wh, wh, width // ww, ww).transpose(0, 2, 1, 3).reshape(-1, wh * ww)
    different = windows[:, None, :] != windows[:, :, None]
    return np.where(different, -100.0, 0.0).astype(np.float32)


def shifted_window_attention(input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads,
                             shift_size, attention_dropout=0.0, dropout=0.0, qkv_bias=None, proj_bias=None,
                             logit_scale=None, training=True):
    """Multi-head self-attention within (shifted) windows of ``input`` (B, H, W, C); returns (B, H, W, C).

    The map is padded to window multiples, rolled by ``-shift_size`` (no roll along an axis the padded map
    fits in one window), split into windows, attended with ``relative_position_bias`` added (and the shift
    mask), merged, rolled back and cropped. With ``logit_scale`` (V2) the attention is cosine similarity
    times ``exp(min(logit_scale, log 100))`` and the key bias is held at zero.
    """
    batch, height, width, channels = input.shape
    pad_right = (window_size[1] - width % window_size[1]) % window_size[1]
    pad_bottom = (window_size[0] - height % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_right, 0, pad_bottom))
    padded_height, padded_width = x.shape[1], x.shape[2]
    shift_size = [0 if window >= size else shift
                  for window, size, shift in zip(window_size, (padded_height, padded_width), shift_size)]
    shifted = sum(shift_size) > 0
    if shifted:
        x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    x = _window_partition(x, window_size)
    windows, tokens = x.shape[0], x.shape[1]
    head_dim = channels // num_heads

    if logit_scale is not None and qkv_bias is not None:
        q_bias, k_bias, v_bias = qkv_bias.chunk(3)
        qkv_bias = torch.cat([q_bias, torch.zeros_like(k_bias), v_bias])
    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(windows, tokens, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1).matmul(F.normalize(k, dim=-1).transpose(-2, -1))
        attn = attn * torch.clamp(logit_scale, max=math.log(100.0)).exp()
    else:
        attn = (q * head_dim ** -0.5).matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias

    if shifted:
        mask = _shifted_window_mask_tensor(padded_height, padded_width, tuple(window_size), tuple(shift_size),
                                           attn.device, attn.dtype)
        attn = attn.view(batch, mask.shape[0], num_heads, tokens, tokens) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(windows, num_heads, tokens, tokens)
    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)

    x = attn.matmul(v).transpose(1, 2).reshape(windows, tokens, channels)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)
    x = _window_reverse(x, window_size, padded_height, padded_width)
    if shifted:
        x = torch.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    return x[:, :height, :width, :].contiguous()


fx.wrap("shifted_window_attention")  # branches on the input size inside


class ShiftedWindowAttention(nn.Module):
    """Window attention with a learned bias per relative offset (V1), see :func:`shifted_window_attention`."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__()
        if len(window_size) != 2 or len(shift_size) != 2:
            raise ValueError("window_size and shift_size must be of length 2")
        self.window_size = window_size
        self.shift_size = shift_size
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.define_relative_position_bias_table()
        self.define_relative_position_index()

    def define_relative_position_bias_table(self):
        """The (2wh - 1)(2ww - 1) x heads table of biases, truncated N(0, 0.02)."""
        offsets = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(offsets, self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self):
        """The (N * N,) buffer of table rows for each pair of window tokens (saved in the state_dict)."""
        index = _relative_position_index(self.window_size).reshape(-1)
        self.register_buffer("relative_position_index", torch.from_numpy(index))

    def get_relative_position_bias(self):
        """The (1, heads, N, N) bias added to the attention logits."""
        return _get_relative_position_bias(self.relative_position_bias_table, self.relative_position_index,
                                           self.window_size)

    def _attention(self, x):
        relative_position_bias = self.get_relative_position_bias()
        return shifted_window_attention(x, self.qkv.weight, self.proj.weight, relative_position_bias,
                                        self.window_size, self.num_heads, shift_size=self.shift_size,
                                        attention_dropout=self.attention_dropout, dropout=self.dropout,
                                        qkv_bias=self.qkv.bias, proj_bias=self.proj.bias,
                                        logit_scale=self.get_logit_scale(), training=self.training)

    def get_logit_scale(self):
        """None: V1 scales the logits by 1/sqrt(head_dim) (V2 learns a scale; read after the other weights, as
        torchvision's does, so that traced graphs list the same nodes in the same order)."""
        return None

    def forward(self, x):
        return self._attention(x)


class ShiftedWindowAttentionV2(ShiftedWindowAttention):
    """V2's window attention: cosine similarity with a learned per-head temperature (``logit_scale``) and a
    continuous position bias, ``16 * sigmoid(cpb_mlp(log-spaced offsets))``."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__(dim, window_size, shift_size, num_heads, qkv_bias=qkv_bias, proj_bias=proj_bias,
                         attention_dropout=attention_dropout, dropout=dropout)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(num_heads, 1, 1)))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True),
                                     nn.Linear(512, num_heads, bias=False))
        if qkv_bias:
            length = self.qkv.bias.numel() // 3
            with torch.no_grad():
                self.qkv.bias[length:2 * length].zero_()

    def define_relative_position_bias_table(self):
        """No table: the ``relative_coords_table`` buffer of log-spaced offsets feeds ``cpb_mlp`` instead."""
        self.register_buffer("relative_coords_table",
                             torch.from_numpy(_log_spaced_relative_coords(self.window_size)))

    def get_relative_position_bias(self):
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        bias = _get_relative_position_bias(table, self.relative_position_index, self.window_size)
        return 16 * torch.sigmoid(bias)

    def get_logit_scale(self):
        return self.logit_scale


class SwinTransformerBlock(nn.Module):
    """Pre-norm transformer block on (B, H, W, C): window attention, then a GELU MLP, each residual
    with stochastic depth (per sample)."""

    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0,
                 stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttention):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer(dim, window_size, shift_size, num_heads, attention_dropout=attention_dropout,
                               dropout=dropout)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.norm2 = norm_layer(dim)
        self.mlp = MLP(dim, [int(dim * mlp_ratio), dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.mlp.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def forward(self, x):
        x = x + self.stochastic_depth(self.attn(self.norm1(x)))
        x = x + self.stochastic_depth(self.mlp(self.norm2(x)))
        return x


class SwinTransformerBlockV2(SwinTransformerBlock):
    """V2's block: the norms follow the attention and the MLP (res-post-norm), for stable training at scale."""

    def __init__(self, dim, num_heads, window_size, shift_size, mlp_ratio=4.0, dropout=0.0, attention_dropout=0.0,
                 stochastic_depth_prob=0.0, norm_layer=nn.LayerNorm, attn_layer=ShiftedWindowAttentionV2):
        super().__init__(dim, num_heads, window_size, shift_size, mlp_ratio=mlp_ratio, dropout=dropout,
                         attention_dropout=attention_dropout, stochastic_depth_prob=stochastic_depth_prob,
                         norm_layer=norm_layer, attn_layer=attn_layer)

    def forward(self, x):
        x = x + self.stochastic_depth(self.norm1(self.attn(x)))
        x = x + self.stochastic_depth(self.norm2(self.mlp(x)))
        return x


def _head(in_features, num_classes):
    """The classifier: a linear layer with truncated N(0, 0.02) weights, or an identity for ``num_classes=0``."""
    if num_classes <= 0:
        return nn.Identity()
    head = nn.Linear(in_features, num_classes)
    nn.init.trunc_normal_(head.weight, std=0.02)
    nn.init.zeros_(head.bias)
    return head


class SwinTransformer(nn.Module):
    """Patch embedding (strided conv, channels-last, norm), stages of Swin blocks with alternating window
    shifts joined by patch merging, a final norm, average pooling and a linear head.

    ``features`` holds the embedding at 0, the stages at odd and the mergings at even positions; the
    stochastic depth probability grows linearly from 0 over all blocks to ``stochastic_depth_prob``.
    """

    default_cfg = {"first_conv": "features.0.0", "classifier": "head"}

    def __init__(self, patch_size, embed_dim, depths, num_heads, window_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.1, num_classes=1000, norm_layer=None, block=None,
                 downsample_layer=PatchMerging, in_chans=3):
        super().__init__()
        self.num_classes = num_classes
        if block is None:
            block = SwinTransformerBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)
        layers = [nn.Sequential(
            nn.Conv2d(in_chans, embed_dim, kernel_size=(patch_size[0], patch_size[1]),
                      stride=(patch_size[0], patch_size[1])),
            Permute([0, 2, 3, 1]),
            norm_layer(embed_dim),
        )]
        self.feature_info = []
        total_blocks = sum(depths)
        block_id = 0
        for i_stage, depth in enumerate(depths):
            dim = embed_dim * 2 ** i_stage
            stage = []
            for i_layer in range(depth):
                stage.append(block(dim, num_heads[i_stage], window_size=window_size,
                                   shift_size=[0 if i_layer % 2 == 0 else w // 2 for w in window_size],
                                   mlp_ratio=mlp_ratio, dropout=dropout, attention_dropout=attention_dropout,
                                   stochastic_depth_prob=stochastic_depth_prob * float(block_id) / (total_blocks - 1),
                                   norm_layer=norm_layer))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            self.feature_info.append(dict(num_chs=dim, reduction=patch_size[0] * 2 ** i_stage,
                                          module=f"features.{len(layers) - 1}"))
            if i_stage < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.head_hidden_size = self.num_features
        self.norm = norm_layer(self.num_features)
        self.permute = Permute([0, 3, 1, 2])
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten(1)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes):
        """Replace the head with a fresh one for ``num_classes`` (0: return the pooled features)."""
        self.num_classes = num_classes
        self.head = _head(self.num_features, num_classes)

    def forward_features(self, x):
        """The normalized last-stage tokens, channels-last (N, H/32, W/32, num_features)."""
        x = self.features(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits=False):
        """Average the tokens; then the head unless ``pre_logits``."""
        x = self.permute(x)
        x = self.avgpool(x)
        x = self.flatten(x)
        if pre_logits:
            return x
        return self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


_V1 = dict(block=SwinTransformerBlock, downsample_layer=PatchMerging)
_V2 = dict(block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)
_TINY = dict(embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], stochastic_depth_prob=0.2)
_SMALL = dict(embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24], stochastic_depth_prob=0.3)
_BASE = dict(embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32], stochastic_depth_prob=0.5)


def _create_swin(variant, pretrained, progress, config, window, **kwargs):
    """Build a registered variant from its configuration (``kwargs`` may override any of it)."""
    options = dict(patch_size=[4, 4], window_size=[window, window], **config)
    options.update(kwargs)
    return build_model(SwinTransformer, variant, pretrained, progress=progress, **options)


@register_model
def swin_t(pretrained=False, progress=True, **kwargs):
    """Swin-T: embedding 96, depths (2, 2, 6, 2), 7x7 windows."""
    return _create_swin("swin_t", pretrained, progress, {**_TINY, **_V1}, 7, **kwargs)


@register_model
def swin_s(pretrained=False, progress=True, **kwargs):
    """Swin-S: embedding 96, depths (2, 2, 18, 2), 7x7 windows."""
    return _create_swin("swin_s", pretrained, progress, {**_SMALL, **_V1}, 7, **kwargs)


@register_model
def swin_b(pretrained=False, progress=True, **kwargs):
    """Swin-B: embedding 128, depths (2, 2, 18, 2), 7x7 windows."""
    return _create_swin("swin_b", pretrained, progress, {**_BASE, **_V1}, 7, **kwargs)


@register_model
def swin_v2_t(pretrained=False, progress=True, **kwargs):
    """SwinV2-T: embedding 96, depths (2, 2, 6, 2), 8x8 windows."""
    return _create_swin("swin_v2_t", pretrained, progress, {**_TINY, **_V2}, 8, **kwargs)


@register_model
def swin_v2_s(pretrained=False, progress=True, **kwargs):
    """SwinV2-S: embedding 96, depths (2, 2, 18, 2), 8x8 windows."""
    return _create_swin("swin_v2_s", pretrained, progress, {**_SMALL, **_V2}, 8, **kwargs)


@register_model
def swin_v2_b(pretrained=False, progress=True, **kwargs):
    """SwinV2-B: embedding 128, depths (2, 2, 18, 2), 8x8 windows."""
    return _create_swin("swin_v2_b", pretrained, progress, {**_BASE, **_V2}, 8, **kwargs)
