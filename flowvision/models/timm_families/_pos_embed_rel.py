"""Relative position biases for attention over a grid of patches (timm's ``pos_embed_rel`` layers), shared by the BEiT,
relative-position ViT, Swin and MaxViT families.

Instead of adding absolute position embeddings to the tokens, these add to every attention score a learnt bias that
depends only on the offset between the query's and the key's patch (dy, dx), per head:

- ``RelPosBias``: one learnt entry per offset and head, a table of (2H - 1)(2W - 1) rows looked up through
  ``relative_position_index`` (Shaw et al. 2018; Swin, BEiT). With a class token, three more rows hold the biases
  class-to-patch, patch-to-class and class-to-class;
- ``RelPosMlp``: a small MLP maps each offset's log-spaced coordinates to the heads' biases (Liu et al. 2022, "Swin
  Transformer V2"), so the bias extends to other grid sizes. timm's 'cr' coordinates are sign(d) log(1 + |d|), the
  'swin' ones Swin V2's (offsets scaled to [-8, 8], log2, a sigmoid and a gain of 16 on the output);
- ``RelPosBiasTf``: the TensorFlow MaxViT's table per head over the offsets, spread by one-hot lookups.

The index and the log coordinates are fixed buffers, not saved in the state_dict (as in timm).
"""
import math

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from ._layers import Mlp, pair, trunc_normal_

__all__ = ["gen_relative_position_index", "gen_relative_log_coords", "lookup_rel_pos_bias", "RelPosBias", "RelPosMlp",
           "RelPosBiasTf"]


def gen_relative_position_index(window_size, class_token=False):
    """The (area, area) int64 index of the offset between every query patch and key patch of a ``window_size``
    (rows, cols) grid, patches in row-major order: (dy + rows - 1) * (2 cols - 1) + dx + cols - 1, which numbers the
    (2 rows - 1)(2 cols - 1) offsets. With ``class_token``, a first row and column are added for the class token:
    class-to-patch gets the next free number, patch-to-class the one after, class-to-class the last."""
    rows, cols = pair(window_size)
    coords = np.stack(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")).reshape(2, -1)
    offsets = coords[:, :, None] - coords[:, None, :]
    index = (offsets[0] + rows - 1) * (2 * cols - 1) + offsets[1] + cols - 1
    if class_token:
        num_offsets = (2 * rows - 1) * (2 * cols - 1)
        index = np.pad(index, ((1, 0), (1, 0)))
        index[0, :] = num_offsets
        index[:, 0] = num_offsets + 1
        index[0, 0] = num_offsets + 2
    return torch.from_numpy(index.astype(np.int64))


def gen_relative_log_coords(window_size, pretrained_window_size=(0, 0), mode="swin"):
    """The (2 rows - 1, 2 cols - 1, 2) float32 coordinates (dy, dx) of every offset of a ``window_size`` grid, log
    spaced. 'cr': sign(d) log(1 + |d|). 'swin': each axis scaled so that the largest offset of the grid (of
    ``pretrained_window_size`` when given) is 8, then sign(d) log2(1 + |d|) / 3."""
    if mode not in ("swin", "cr"):
        raise ValueError(f"mode must be 'swin' or 'cr', got {mode!r}")
    rows, cols = pair(window_size)
    dy = torch.arange(-(rows - 1), rows).float()
    dx = torch.arange(-(cols - 1), cols).float()
    coords = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), dim=-1)
    if mode == "cr":
        return torch.sign(coords) * torch.log(1.0 + coords.abs())
    reference = pretrained_window_size if pretrained_window_size[0] > 0 else (rows, cols)
    coords = coords / torch.tensor([reference[0] - 1.0, reference[1] - 1.0]) * 8.0
    return torch.sign(coords) * torch.log2(1.0 + coords.abs()) / math.log2(8)


def lookup_rel_pos_bias(table, index, tokens):
    """The rows of ``table`` (offsets, heads) that ``index`` (``tokens`` x ``tokens`` entries, any shape) picks for
    every (query, key) pair, as a (heads, tokens, tokens) attention bias."""
    return table[index.reshape(-1)].reshape(tokens, tokens, -1).permute(2, 0, 1)


class RelPosBias(nn.Module):
    """A learnt bias per head and relative offset of a ``window_size`` grid (with ``prefix_tokens`` = 1, a class
    token's three extra entries), drawn truncated-normal (std 0.02). ``get_bias`` gives the (1, heads, tokens,
    tokens) attention bias."""

    def __init__(self, window_size, num_heads, prefix_tokens=0):
        super().__init__()
        if prefix_tokens > 1:
            raise ValueError(f"RelPosBias supports at most one prefix token, got {prefix_tokens}")
        self.window_size = pair(window_size)
        self.window_area = self.window_size[0] * self.window_size[1]
        self.prefix_tokens = prefix_tokens
        num_offsets = (2 * self.window_size[0] - 1) * (2 * self.window_size[1] - 1) + 3 * prefix_tokens
        self.relative_position_bias_table = nn.Parameter(torch.zeros(num_offsets, num_heads))
        index = gen_relative_position_index(self.window_size, class_token=prefix_tokens > 0)
        self.register_buffer("relative_position_index", index.reshape(-1), persistent=False)
        trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_bias(self):
        """The table looked up at every (query, key) pair: (1, heads, tokens, tokens)."""
        bias = lookup_rel_pos_bias(self.relative_position_bias_table, self.relative_position_index,
                                   self.window_area + self.prefix_tokens)
        return bias.unsqueeze(0).contiguous()

    def forward(self, attn, shared_rel_pos=None):
        return attn + self.get_bias()


class RelPosMlp(nn.Module):
    """Attention biases computed by an MLP from the log-spaced coordinates of each relative offset of a
    ``window_size`` grid (Swin V2's continuous position bias; timm's ``RelPosMlp``).

    ``mode`` 'cr' (timm's default): ``gen_relative_log_coords``' 'cr' coordinates and the MLP's output as it is; 'swin':
    Swin V2's coordinates (scaled by ``pretrained_window_size`` when given), no output bias, 16 sigmoid(output). The
    MLP (``mlp``, ``hidden_dim`` ReLU units) drops 1/8 of its hidden units in training, as timm's. ``prefix_tokens``
    leading tokens (a class token) get zero bias. ``placeholders=False`` leaves timm's no-op slots out (the MLP's
    ``norm``, 'cr''s ``bias_act``), for the ports whose module tree omits them.
    """

    def __init__(self, window_size, num_heads=8, hidden_dim=128, prefix_tokens=0, mode="cr",
                 pretrained_window_size=(0, 0), placeholders=True):
        super().__init__()
        self.window_size = pair(window_size)
        self.window_area = self.window_size[0] * self.window_size[1]
        self.prefix_tokens = prefix_tokens
        self.num_heads = num_heads
        self.mode = mode
        self.pretrained_window_size = pretrained_window_size
        if mode == "swin":
            self.bias_act = nn.Sigmoid()
            self.bias_gain = 16
            mlp_bias = (True, False)
        else:
            self.bias_act = nn.Identity() if placeholders else None
            self.bias_gain = None
            mlp_bias = (True, True)
        self.mlp = Mlp(2, hidden_dim, num_heads, act_layer=nn.ReLU, bias=mlp_bias, drop=(0.125, 0.0),
                       norm_placeholder=placeholders)
        index = gen_relative_position_index(self.window_size)
        self.register_buffer("relative_position_index", index.reshape(-1), persistent=False)
        coords = gen_relative_log_coords(self.window_size, pretrained_window_size, mode=mode)
        self.register_buffer("rel_coords_log", coords, persistent=False)

    def get_bias(self):
        """The MLP's biases at every (query, key) pair: (1, heads, tokens, tokens), zero for the prefix tokens."""
        table = self.mlp(self.rel_coords_log).reshape(-1, self.num_heads)
        bias = lookup_rel_pos_bias(table, self.relative_position_index, self.window_area)
        if self.bias_act is not None:
            bias = self.bias_act(bias)
        if self.bias_gain is not None:
            bias = self.bias_gain * bias
        if self.prefix_tokens:
            bias = F.pad(bias, [self.prefix_tokens, 0, self.prefix_tokens, 0])
        return bias.unsqueeze(0).contiguous()

    def forward(self, attn, shared_rel_pos=None):
        return attn + self.get_bias()


def _offset_lookup(length):
    """The one-hot lookup from the official MaxViT: (length, length, 2 * length - 1), 1 at [i, j, j - i + length - 1]
    (the offset of key j from query i)."""
    lookup = torch.zeros(length, length, 2 * length - 1)
    for i in range(length):
        for j in range(length):
            lookup[i, j, j - i + length - 1] = 1.0
    return lookup


class RelPosBiasTf(nn.Module):
    """The TensorFlow MaxViT's relative position bias (timm's ``RelPosBiasTf``): a table per head over the (2 * h - 1,
    2 * w - 1) offsets of a ``window_size`` window (``relative_position_bias_table``, N(0, 0.02^2) at first), spread
    to every (query, key) pair through one-hot lookups along the height and the width (the non-persistent
    ``height_lookup``, ``width_lookup``). ``get_bias`` gives the (heads, area, area) attention bias."""

    def __init__(self, window_size, num_heads):
        super().__init__()
        self.window_size = window_size
        self.window_area = window_size[0] * window_size[1]
        self.num_heads = num_heads
        self.bias_shape = (num_heads, 2 * window_size[0] - 1, 2 * window_size[1] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(self.bias_shape))
        self.register_buffer("height_lookup", _offset_lookup(window_size[0]), persistent=False)
        self.register_buffer("width_lookup", _offset_lookup(window_size[1]), persistent=False)
        nn.init.normal_(self.relative_position_bias_table, std=0.02)

    def get_bias(self):
        """The table spread to every (query, key) pair: (heads, area, area)."""
        bias = torch.einsum("nhw,ixh->nixw", self.relative_position_bias_table, self.height_lookup)
        bias = torch.einsum("nixw,jyw->nijxy", bias, self.width_lookup)
        return bias.reshape(self.num_heads, self.window_area, self.window_area)
