"""Video Swin Transformer (Liu et al., "Video Swin Transformer", 2022): the Swin Transformer carried from images
to clips, with self-attention inside local 3-d windows of space-time; tiny, small and base.

A clip (N, C, T, H, W) is cut into 2 x 4 x 4 patches, each embedded by a strided 3-d convolution into a
channels-last token map (N, T/2, H/4, W/4, C). Every block attends within 8 x 7 x 7 windows of that map, adding a
learned bias per relative (t, y, x) offset; every second block first rolls the map by half a window along all
three axes, so that information crosses window borders, and masks the pairs of tokens the roll brought together
from opposite edges. A window no smaller than the map along an axis shrinks to the map there, and is not shifted
along it. Between stages, 2 x 2 patch merging halves height and width (time keeps its length). Maps that are not
a multiple of the patch or the window are zero-padded. Module names, buffers, state_dict keys and initialisation
follow torchvision, so its Kinetics-400 checkpoints load directly; the model API (``forward_features``,
``forward_head``, ``reset_classifier``, ``in_chans``, ``feature_info``) follows timm.
"""
from functools import lru_cache, partial

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from .._helpers import build_model
from ..registry import register_model
from ..swin_transformer import PatchMerging, SwinTransformerBlock, _head, _shift_regions
from .video_resnet import kinetics_weights

__all__ = ["SwinTransformer3d", "ShiftedWindowAttention3d", "PatchEmbed3d"]


def _pad_to_multiple(size, multiple):
    """The zeros to add after each of the three axes of ``size`` to reach a multiple of ``multiple``."""
    return [(m - s % m) % m for s, m in zip(size, multiple)]


def _window_and_shift_size(size, window_size, shift_size):
    """The window and shift used on a (T, H, W) map of ``size``: along an axis where the map is no longer than
    the window, the window shrinks to the map and the shift is dropped (one window holds the whole axis)."""
    fits = [s <= w for s, w in zip(size, window_size)]
    window = [s if fit else w for s, w, fit in zip(size, window_size, fits)]
    shift = [0 if fit else sh for sh, fit in zip(shift_size, fits)]
    return window, shift


def _relative_position_index_3d(window_size):
    """(N, N) int64, N = wt * wh * ww: for tokens i and j of a window, the bias table row of their offset.

    Offsets (dt, dy, dx) range over (2wt - 1) x (2wh - 1) x (2ww - 1) values, numbered row-major from
    (-(wt-1), -(wh-1), -(ww-1)).
    """
    wt, wh, ww = window_size
    frames, rows, cols = (c.ravel() for c in np.meshgrid(np.arange(wt), np.arange(wh), np.arange(ww), indexing="ij"))
    dt = frames[:, None] - frames[None, :] + (wt - 1)
    dy = rows[:, None] - rows[None, :] + (wh - 1)
    dx = cols[:, None] - cols[None, :] + (ww - 1)
    return ((dt * (2 * wh - 1) + dy) * (2 * ww - 1) + dx).astype(np.int64)


def _relative_position_bias_3d(table, index, window_size):
    """(1, heads, N, N) bias for windows of ``window_size`` from the (offsets, heads) ``table``.

    The rows come from the top-left N x N block of the full window's ``index``: for a window shrunk to a small
    map, as the reference implementation does (its checkpoints were trained so).
    """
    n = window_size[0] * window_size[1] * window_size[2]
    bias = table[index[:n, :n].flatten()].view(n, n, -1)
    return bias.permute(2, 0, 1).contiguous().unsqueeze(0)


def _window_partition_3d(x, window_size):
    """(B, T, H, W, C) -> (B * windows, wt * wh * ww, C), windows in row-major (t, y, x) order."""
    batch, frames, height, width, channels = x.shape
    wt, wh, ww = window_size
    x = x.view(batch, frames // wt, wt, height // wh, wh, width // ww, ww, channels)
    x = x.permute(0, 1, 3, 5, 2, 4, 6, 7)
    return x.reshape(-1, wt * wh * ww, channels)


def _window_reverse_3d(windows, window_size, size):
    """Inverse of ``_window_partition_3d``: (B * windows, wt * wh * ww, C) -> (B, T, H, W, C) of ``size`` (T, H, W)."""
    frames, height, width = size
    wt, wh, ww = window_size
    channels = windows.shape[-1]
    x = windows.view(-1, frames // wt, height // wh, width // ww, wt, wh, ww, channels)
    x = x.permute(0, 1, 4, 2, 5, 3, 6, 7)
    return x.reshape(-1, frames, height, width, channels)


def _shifted_window_mask_3d(size, window_size, shift_size):
    """(windows, N, N) float32: -100 between two tokens of a window that come from different regions of the
    rolled (T, H, W) map (they are not neighbours in the clip), 0 elsewhere."""
    frames, rows, cols = (_shift_regions(n, window, shift) for n, window, shift in zip(size, window_size, shift_size))
    regions = frames[:, None, None] * 9 + rows[None, :, None] * 3 + cols[None, None, :]
    (t, h, w), (wt, wh, ww) = size, window_size
    windows = regions.reshape(t // wt, wt, h // wh, wh, w // ww, ww).transpose(0, 2, 4, 1, 3, 5)
    windows = windows.reshape(-1, wt * wh * ww)
    different = windows[:, None, :] != windows[:, :, None]
    return np.where(different, -100.0, 0.0).astype(np.float32)


@lru_cache(maxsize=32)
def _shifted_window_mask_3d_tensor(size, window_size, shift_size, device, dtype):
    """``_shifted_window_mask_3d`` as a tensor on ``device``, made once per geometry: each block's call then copies
    nothing from the host."""
    return torch.tensor(_shifted_window_mask_3d(size, window_size, shift_size), dtype=dtype, device=device)


def shifted_window_attention_3d(input, qkv_weight, proj_weight, relative_position_bias, window_size, num_heads,
                                shift_size, attention_dropout=0.0, dropout=0.0, qkv_bias=None, proj_bias=None,
                                training=True):
    """Multi-head self-attention within (shifted) 3-d windows of ``input`` (B, T, H, W, C); returns (B, T, H, W, C).

    The map is padded to window multiples, rolled by ``-shift_size``, split into windows, attended with
    ``relative_position_bias`` added (and the shift mask), merged, rolled back and cropped.
    """
    batch, frames, height, width, channels = input.shape
    pad = _pad_to_multiple((frames, height, width), window_size)
    x = F.pad(input, (0, 0, 0, pad[2], 0, pad[1], 0, pad[0]))
    padded_size = tuple(x.shape[1:4])
    shifted = sum(shift_size) > 0
    if shifted:
        x = torch.roll(x, shifts=tuple(-s for s in shift_size), dims=(1, 2, 3))
    x = _window_partition_3d(x, window_size)
    windows, tokens = x.shape[0], x.shape[1]
    head_dim = channels // num_heads

    qkv = F.linear(x, qkv_weight, qkv_bias)
    qkv = qkv.reshape(windows, tokens, 3, num_heads, head_dim).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    attn = (q * head_dim ** -0.5).matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias

    if shifted:
        mask = _shifted_window_mask_3d_tensor(padded_size, tuple(window_size), tuple(shift_size), attn.device,
                                              attn.dtype)
        attn = attn.view(batch, mask.shape[0], num_heads, tokens, tokens) + mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(windows, num_heads, tokens, tokens)
    attn = F.softmax(attn, dim=-1)
    attn = F.dropout(attn, p=attention_dropout, training=training)

    x = attn.matmul(v).transpose(1, 2).reshape(windows, tokens, channels)
    x = F.linear(x, proj_weight, proj_bias)
    x = F.dropout(x, p=dropout, training=training)
    x = _window_reverse_3d(x, window_size, padded_size)
    if shifted:
        x = torch.roll(x, shifts=tuple(shift_size), dims=(1, 2, 3))
    return x[:, :frames, :height, :width, :].contiguous()


class ShiftedWindowAttention3d(nn.Module):
    """3-d window attention with a learned bias per relative (t, y, x) offset, see
    :func:`shifted_window_attention_3d`; the window and shift adapt to maps smaller than the window."""

    def __init__(self, dim, window_size, shift_size, num_heads, qkv_bias=True, proj_bias=True,
                 attention_dropout=0.0, dropout=0.0):
        super().__init__()
        if len(window_size) != 3 or len(shift_size) != 3:
            raise ValueError("window_size and shift_size must be of length 3")
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
        """The (2wt - 1)(2wh - 1)(2ww - 1) x heads table of biases, truncated N(0, 0.02)."""
        wt, wh, ww = self.window_size
        offsets = (2 * wt - 1) * (2 * wh - 1) * (2 * ww - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(offsets, self.num_heads))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def define_relative_position_index(self):
        """The (N, N) buffer of table rows for each pair of window tokens (saved in the state_dict)."""
        index = _relative_position_index_3d(self.window_size)
        self.register_buffer("relative_position_index", torch.from_numpy(index))

    def get_relative_position_bias(self, window_size):
        """The (1, heads, N, N) bias added to the attention logits of windows of ``window_size``."""
        return _relative_position_bias_3d(self.relative_position_bias_table, self.relative_position_index,
                                          window_size)

    def forward(self, x):
        window_size, shift_size = _window_and_shift_size(x.shape[1:4], self.window_size, self.shift_size)
        return shifted_window_attention_3d(x, self.qkv.weight, self.proj.weight,
                                           self.get_relative_position_bias(window_size), window_size,
                                           self.num_heads, shift_size=shift_size,
                                           attention_dropout=self.attention_dropout, dropout=self.dropout,
                                           qkv_bias=self.qkv.bias, proj_bias=self.proj.bias, training=self.training)


class PatchEmbed3d(nn.Module):
    """Clip to patch tokens: zero-pad (T, H, W) to patch multiples, a strided 3-d convolution to ``embed_dim``,
    channels last, then the norm (if any): (N, C, T, H, W) -> (N, T/pt, H/ph, W/pw, embed_dim)."""

    def __init__(self, patch_size, in_channels=3, embed_dim=96, norm_layer=None):
        super().__init__()
        self.tuple_patch_size = tuple(patch_size)
        self.proj = nn.Conv3d(in_channels, embed_dim, kernel_size=self.tuple_patch_size,
                              stride=self.tuple_patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer is not None else nn.Identity()

    def forward(self, x):
        pad = _pad_to_multiple(x.shape[2:], self.tuple_patch_size)
        x = F.pad(x, (0, pad[2], 0, pad[1], 0, pad[0]))
        x = self.proj(x)
        x = x.permute(0, 2, 3, 4, 1)
        return self.norm(x)


class SwinTransformer3d(nn.Module):
    """Patch embedding, stages of Swin blocks with 3-d window attention and alternating shifts joined by
    spatial patch merging, a final norm, average pooling over space-time and a linear head; ``num_classes=0``
    leaves the pooled features.

    ``features`` holds the stages at even and the mergings at odd positions; the stochastic depth probability
    grows linearly from 0 over all blocks to ``stochastic_depth_prob``.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}

    def __init__(self, patch_size, embed_dim, depths, num_heads, window_size, mlp_ratio=4.0, dropout=0.0,
                 attention_dropout=0.0, stochastic_depth_prob=0.1, num_classes=400, norm_layer=None, block=None,
                 downsample_layer=PatchMerging, patch_embed=None, in_chans=3):
        super().__init__()
        self.num_classes = num_classes
        if block is None:
            block = SwinTransformerBlock
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-5)
        if patch_embed is None:
            patch_embed = PatchEmbed3d
        self.patch_embed = patch_embed(patch_size=patch_size, in_channels=in_chans, embed_dim=embed_dim,
                                       norm_layer=norm_layer)
        self.pos_drop = nn.Dropout(p=dropout)
        layers = []
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
                                   norm_layer=norm_layer, attn_layer=ShiftedWindowAttention3d))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            self.feature_info.append(dict(num_chs=dim, reduction=patch_size[1] * 2 ** i_stage,
                                          module=f"features.{len(layers) - 1}"))
            if i_stage < len(depths) - 1:
                layers.append(downsample_layer(dim, norm_layer))
        self.features = nn.Sequential(*layers)
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.head_hidden_size = self.num_features
        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool3d(1)
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
        """The normalized last-stage tokens, channels-last (N, T/2, H/32, W/32, num_features)."""
        x = self.patch_embed(x)
        x = self.pos_drop(x)
        x = self.features(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits=False):
        """Average the tokens over space-time; then the head unless ``pre_logits``."""
        x = x.permute(0, 4, 1, 2, 3)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        if pre_logits:
            return x
        return self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


_TINY = dict(embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24])
_SMALL = dict(embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24])
_BASE = dict(embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32])


def _create_swin3d(variant, config, pretrained, progress, **kwargs):
    """Build a registered variant: 2 x 4 x 4 patches, 8 x 7 x 7 windows, stochastic depth up to 0.1 (``kwargs``
    may override any of it)."""
    kwargs["weights"] = kinetics_weights(pretrained, kwargs.get("weights"))
    options = dict(patch_size=[2, 4, 4], window_size=[8, 7, 7], stochastic_depth_prob=0.1, **config)
    options.update(kwargs)
    return build_model(SwinTransformer3d, variant, progress=progress, **options)


@register_model
def swin3d_t(pretrained=False, progress=True, **kwargs):
    """Swin3D-T: embedding 96, depths (2, 2, 6, 2), heads (3, 6, 12, 24)."""
    return _create_swin3d("swin3d_t", _TINY, pretrained, progress, **kwargs)


@register_model
def swin3d_s(pretrained=False, progress=True, **kwargs):
    """Swin3D-S: embedding 96, depths (2, 2, 18, 2), heads (3, 6, 12, 24)."""
    return _create_swin3d("swin3d_s", _SMALL, pretrained, progress, **kwargs)


@register_model
def swin3d_b(pretrained=False, progress=True, **kwargs):
    """Swin3D-B: embedding 128, depths (2, 2, 18, 2), heads (4, 8, 16, 32)."""
    return _create_swin3d("swin3d_b", _BASE, pretrained, progress, **kwargs)
