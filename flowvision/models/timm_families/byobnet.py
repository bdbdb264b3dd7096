"""Bring-your-own-blocks networks (timm's ``byobnet``): GPU-Efficient networks (Lin et al. 2020, "Neural
Architecture Design for GPU-Efficient Networks"), RepVGG (Ding et al. 2021, "RepVGG: Making VGG-style ConvNets
Great Again"), MobileOne (Vasu et al. 2023, "MobileOne: An Improved One millisecond Mobile Backbone"), timm's
RegNetZ sizes (Dollar et al. 2021, "Fast and Accurate Model Scaling"; the ``_evos`` ones, regnetz_b16_evos among
them, with EvoNorm-S0a, Liu et al. 2020) and timm's ResNe(X)t-26/33/50 "ts" models with squeeze-and-excitation,
efficient channel attention, global context (Cao et al. 2019, "GCNet") or bilinear attention (Chi et al. 2020,
"Non-Local Neural Networks With Grouped Bilinear Attentional Transforms"), CLIP's modified ResNets (Radford et al.
2021, "Learning Transferable Visual Models From Natural Language Supervision": resnet50_clip, resnet101_clip,
resnet50x4_clip, resnet50x16_clip, resnet50x64_clip, and their ``_gap`` forms with average pooling), timm's
resnet50_mlp (CLIP's ResNet-50 body with a pool, norm and MLP head) and timm's tiny test network (test_byobnet).

One network, ``ByobNet``, is assembled from a configuration (``ByoModelCfg``): a stem (one convolution, a stack of
three or four, or a RepVGG / MobileOne block), stages of blocks (``ByoBlockCfg``: block type, count, width, stride,
group size, bottleneck ratio), an optional 1x1 convolution to ``num_features`` and the classifier. The block types
are the ResNet basic block ('basic'), the bottleneck ('bottle'), the 1x1-then-kxk 'dark' and kxk-then-1x1 'edge'
blocks, RepVGG's three-branch block ('rep'), MobileOne's multi-branch block ('one') and a bottleneck around a
self-attention layer ('self_attn', for the attention networks built on this one); each may carry a channel attention
layer ('se', 'eca', 'gc', 'gca', 'bat'). RepVGG and MobileOne blocks fold their branches into one convolution with
``reparameterize()`` for inference. CLIP's ResNets (``ByoHeadModelCfg``) have a three-convolution stem with 2x2
average pooling, bottlenecks whose strided 3x3 convolutions leave the subsampling to a 2x2 average pool after their
norm (anti-aliasing), average-pool shortcuts and, as head, attention pooling over the last map (``AttentionPool2d``,
a fixed ``img_size``) projecting to the CLIP embedding; the ``_gap`` forms average-pool, resnet50_mlp pools, normalises
the pooled features and passes them through a hidden layer (``NormMlpClassifierHead``). Model names, module names,
``state_dict`` keys, initialisation and the model API follow timm's ``byobnet`` module, so its checkpoints load as
they are.
"""
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Optional, Union

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import EcaModule, GlobalContext, SEModule
from ._attention_pool import AttentionPool2d
from ._conv import create_conv2d, get_padding, num_groups
from ._layers import (BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module, get_act_layer,
                      pair)
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel, pad_kernel, sum_branches
from .convnext import NormMlpClassifierHead
from .resnet import AvgPool2dSame
from .resnetv2 import EvoNorm2dS0, group_std

__all__ = []


@dataclass
class ByoBlockCfg:
    """A run of ``d`` blocks of ``type`` with ``c`` output channels; the first strides by ``s``.

    ``gs`` is the group size of the grouped convolutions (0 or None: dense, 1: depthwise; or a function of the
    block's width and its index in the stage), ``br`` the bottleneck ratio. The attention, self-attention and
    block arguments, when set, replace the model's for these blocks (an empty ``attn_layer`` removes attention).
    """
    type: Union[str, Callable]
    d: int
    c: int
    s: int = 2
    gs: Optional[Union[int, Callable]] = None
    br: float = 1.0
    attn_layer: Optional[str] = None
    attn_kwargs: Optional[dict] = None
    self_attn_layer: Optional[str] = None
    self_attn_kwargs: Optional[dict] = None
    block_kwargs: Optional[dict] = None


@dataclass
class ByoModelCfg:
    """A whole network: its stages (``blocks``: per stage one ``ByoBlockCfg`` or a sequence of them), the shortcut
    projection ('conv1x1', 'avg', or '' for none), the stem ('3x3', '7x7', 'tiered', 'deep', 'quad', 'quad2', 'rep',
    'one'; a sequence ``stem_chs`` gives a stack of that many 3x3 convolutions) and its pooling, a ``width_factor``
    on every width, a final 1x1 convolution to ``num_features`` (0: none), the activation and norm (names or
    classes), and the attention layers and extra block arguments every block gets unless its own config says
    otherwise. ``fixed_input_size`` models need ``img_size`` (their self-attention layers are sized by it)."""
    blocks: tuple
    downsample: str = "conv1x1"
    stem_type: str = "3x3"
    stem_pool: Optional[str] = "maxpool"
    stem_chs: Union[int, Sequence] = 32
    width_factor: float = 1.0
    num_features: int = 0
    fixed_input_size: bool = False
    act_layer: Union[str, Callable] = "relu"
    norm_layer: Union[str, Callable] = "batchnorm"
    attn_layer: Optional[str] = None
    attn_kwargs: dict = field(default_factory=dict)
    self_attn_layer: Optional[str] = None
    self_attn_kwargs: dict = field(default_factory=dict)
    block_kwargs: dict = field(default_factory=dict)

    # timm's anti-aliasing and head fields, fixed here (class attributes, not fields) for every config but the
    # ``ByoHeadModelCfg`` ones: no anti-aliasing, the pooling classifier
    aa_layer = ""
    head_hidden_size = None
    head_type = "classifier"


@dataclass
class ByoHeadModelCfg(ByoModelCfg):
    """A ``ByoModelCfg`` with timm's anti-aliasing and head fields: ``aa_layer`` ('avg': a 2x2 average pool after
    the norm takes over the stride of each strided convolution of the stages, not of the stem), ``head_type``
    ('classifier' or '': pooling and a linear layer; 'attn_abs': ``AttentionPool2d``; 'mlp': pooling, the model's
    norm, a hidden linear layer with the model's activation, and the classifier) and ``head_hidden_size`` (the
    attention pool's or the hidden layer's width; None: the features' width)."""
    aa_layer: str = ""
    head_hidden_size: Optional[int] = None
    head_type: str = "classifier"


def interleave_blocks(types, d, every=1, first=False, **kwargs):
    """``d`` single blocks of ``types[0]`` with ``types[1]`` at the positions ``every`` lists, or, for an int, at
    every ``every + 1``-th position (from the first if ``first``; the last block if that leaves none)."""
    if isinstance(every, int):
        every = list(range(0 if first else every, d, every + 1)) or [d - 1]
    return tuple(ByoBlockCfg(type=types[1] if i in every else types[0], d=1, **kwargs) for i in range(d))


def expand_blocks_cfg(stage_blocks_cfg):
    """A stage's block configs repeated to one config (``d=1``) per block."""
    if not isinstance(stage_blocks_cfg, Sequence):
        stage_blocks_cfg = (stage_blocks_cfg,)
    return [replace(cfg, d=1) for cfg in stage_blocks_cfg for _ in range(cfg.d)]


# BatchNorm with its activation in place, as timm's BatchNormAct2d builds it, and timm's ConvNormAct around it
_bn_act = partial(BatchNormAct2d, inplace=True)
_conv_norm_act = partial(ConvNormAct, norm_layer=_bn_act)


def get_norm_layer(norm_layer):
    """The plain norm of ``norm_layer`` (for the MLP head, on the pooled map): 'batchnorm' gives ``nn.BatchNorm2d``;
    a class or partial is used as it is."""
    if norm_layer == "batchnorm":
        return nn.BatchNorm2d
    if isinstance(norm_layer, str):
        raise ValueError(f"unknown norm_layer '{norm_layer}': expected 'batchnorm' or a norm class")
    return norm_layer


def get_norm_act_layer(norm_layer, act_layer):
    """A norm-and-activation factory ``(num_features, apply_act=True)``: 'batchnorm' gives BatchNorm followed by
    ``act_layer`` (in place); a class or partial (EvoNorm, whose nonlinearity is its own) is used as it is."""
    if norm_layer == "batchnorm":
        return partial(BatchNormAct2d, act_layer=act_layer, inplace=True)
    if isinstance(norm_layer, str):
        raise ValueError(f"unknown norm_layer '{norm_layer}': expected 'batchnorm' or a norm-act class")
    return norm_layer


class EvoNorm2dS0a(EvoNorm2dS0):
    """EvoNorm-S0a: x * sigmoid(v * x) / group_std(x) as EvoNorm-S0, but without the gate (``apply_act=False``)
    still divided by the group standard deviation where S0 keeps only the affine part; eps 1e-3."""

    def __init__(self, num_features, groups=32, group_size=None, apply_act=True, eps=1e-3):
        super().__init__(num_features, groups=groups, group_size=group_size, apply_act=apply_act, eps=eps)

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError(f"EvoNorm2dS0a expects a 4-d (N, C, H, W) input, got {x.dim()} dimensions")
        shape = (1, -1, 1, 1)
        std = group_std(x, self.groups, self.eps)
        if self.v is not None:
            x = x * (x * self.v.view(shape)).sigmoid()
        x = x / std
        return x * self.weight.view(shape) + self.bias.view(shape)


class BilinearAttnTransform(nn.Module):
    """The bilinear attentional transform: the map is split into a ``block_size`` x ``block_size`` grid of cells;
    from max-pooled row and column profiles of a reduction to ``groups`` channels, strip convolutions predict one
    row-mixing and one column-mixing ``block_size`` x ``block_size`` matrix per group (sigmoid, normalised), which,
    widened to act on whole cells, transform each channel as P @ x @ Q, followed by a 1x1 convolution. The map's
    height and width must be multiples of ``block_size``."""

    def __init__(self, in_channels, block_size, groups):
        super().__init__()
        self.conv1 = _conv_norm_act(in_channels, groups, 1)
        self.conv_p = nn.Conv2d(groups, block_size * block_size * groups, kernel_size=(block_size, 1))
        self.conv_q = nn.Conv2d(groups, block_size * block_size * groups, kernel_size=(1, block_size))
        self.conv2 = _conv_norm_act(in_channels, in_channels, 1)
        self.block_size = block_size
        self.groups = groups

    def _per_channel(self, mixing, channels):
        """(N, groups, b, b) matrices repeated for each channel of their group: (N, channels, b, b)."""
        batch = mixing.shape[0]
        shape = (batch, self.groups, channels // self.groups, self.block_size, self.block_size)
        mixing = mixing.view(batch, self.groups, 1, self.block_size, self.block_size).expand(shape)
        return mixing.reshape(batch, channels, self.block_size, self.block_size)

    @staticmethod
    def _widen(mixing, cell):
        """Each b x b matrix acting on cells of ``cell`` pixels: its Kronecker product with the identity."""
        if cell <= 1:
            return mixing
        batch, channels, size, _ = mixing.shape
        eye = torch.eye(cell, dtype=mixing.dtype, device=mixing.device)
        widened = mixing.view(batch, channels, size, 1, size, 1) * eye.view(1, 1, 1, cell, 1, cell)
        return widened.reshape(batch, channels, size * cell, size * cell)

    def forward(self, x):
        batch, channels, height, width = x.shape
        if height % self.block_size or width % self.block_size:
            raise ValueError(f"bilinear attention needs a map whose sides are multiples of {self.block_size}, "
                             f"got {height}x{width}")
        out = self.conv1(x)
        rows = F.adaptive_max_pool2d(out, (self.block_size, 1))
        cols = F.adaptive_max_pool2d(out, (1, self.block_size))
        p = self.conv_p(rows).view(batch, self.groups, self.block_size, self.block_size).sigmoid()
        q = self.conv_q(cols).view(batch, self.groups, self.block_size, self.block_size).sigmoid()
        p = p / p.sum(dim=3, keepdim=True)
        q = q / q.sum(dim=2, keepdim=True)
        p = self._widen(self._per_channel(p, channels), height // self.block_size)
        q = self._widen(self._per_channel(q, channels), width // self.block_size)
        y = p.matmul(x)
        y = y.matmul(q)
        y = self.conv2(y)
        return y


class BatNonLocalAttn(nn.Module):
    """Bilinear attention (BAT) as a residual non-local block: a 1x1 reduction to ``rd_ratio`` of the channels,
    the bilinear transform, a 1x1 expansion and channel dropout (``drop_rate``), added to the input."""

    def __init__(self, in_channels, block_size=7, groups=2, rd_ratio=0.25, rd_divisor=8, drop_rate=0.2):
        super().__init__()
        rd_channels = _make_divisible(in_channels * rd_ratio, rd_divisor)
        self.conv1 = _conv_norm_act(in_channels, rd_channels, 1)
        self.ba = BilinearAttnTransform(rd_channels, block_size, groups)
        self.conv2 = _conv_norm_act(rd_channels, in_channels, 1)
        self.dropout = nn.Dropout2d(p=drop_rate)

    def forward(self, x):
        y = self.conv1(x)
        y = self.ba(y)
        y = self.conv2(y)
        y = self.dropout(y)
        return y + x


_ATTN_LAYERS = {"se": SEModule, "eca": EcaModule, "gc": GlobalContext,
                "gca": partial(GlobalContext, fuse_add=True, fuse_scale=False), "bat": BatNonLocalAttn}


def register_attn(name, attn_layer):
    """Make ``attn_layer`` (a class built as ``attn_layer(channels, **kwargs)``) available to configs as ``name``
    (the attention networks register their self-attention layers here)."""
    _ATTN_LAYERS[name] = attn_layer


def get_attn(attn_layer):
    """An attention class from its name ('se', 'eca', 'gc', 'gca', 'bat' or a registered one), or the class."""
    if not isinstance(attn_layer, str):
        return attn_layer
    if attn_layer not in _ATTN_LAYERS:
        raise ValueError(f"unknown attention layer '{attn_layer}': expected one of {sorted(_ATTN_LAYERS)}")
    return _ATTN_LAYERS[attn_layer]


@dataclass
class LayerFn:
    """The layer factories a network's blocks are built with: convolution + norm + activation, norm +
    activation, the activation, and the attention and self-attention layers (None: none)."""
    conv_norm_act: Callable = _conv_norm_act
    norm_act: Callable = _bn_act
    act: Callable = nn.ReLU
    attn: Optional[Callable] = None
    self_attn: Optional[Callable] = None


def get_layer_fns(cfg, allow_aa=True):
    """The layer factories of a model config; the convolutions anti-aliased as ``cfg.aa_layer`` says where
    ``allow_aa`` (the stages', not the stem's)."""
    act = get_act_layer(cfg.act_layer)
    norm_act = get_norm_act_layer(cfg.norm_layer, act)
    if cfg.aa_layer and allow_aa:
        conv_norm_act = partial(ConvNormAct, norm_layer=norm_act, aa_layer=cfg.aa_layer)
    else:
        conv_norm_act = partial(ConvNormAct, norm_layer=norm_act)
    attn = partial(get_attn(cfg.attn_layer), **cfg.attn_kwargs) if cfg.attn_layer else None
    self_attn = partial(get_attn(cfg.self_attn_layer), **cfg.self_attn_kwargs) if cfg.self_attn_layer else None
    return LayerFn(conv_norm_act=conv_norm_act, norm_act=norm_act, act=act, attn=attn, self_attn=self_attn)


class DownsampleAvg(nn.Module):
    """The 'avg' projection shortcut: 2x2 average pooling (ceil mode, padding not counted; "same" at stride 1 in a
    dilated stage, none where nothing shrinks) before a 1x1 convolution and norm, so every input pixel counts."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, apply_act=False, layers=None):
        super().__init__()
        layers = layers or LayerFn()
        if dilation > 1:
            self.pool = AvgPool2dSame()
        elif stride > 1:
            self.pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
        else:
            self.pool = nn.Identity()
        self.conv = layers.conv_norm_act(in_chs, out_chs, 1, apply_act=apply_act)

    def forward(self, x):
        return self.conv(self.pool(x))


def create_shortcut(downsample_type, in_chs, out_chs, stride, dilation, layers, apply_act=False):
    """A block's shortcut: an identity where the block keeps the shape (and dilation); otherwise the ``downsample``
    projection, 'avg' pooling + 1x1 or a strided 'conv1x1' with its norm, or None ('': no residual)."""
    if downsample_type not in ("avg", "conv1x1", ""):
        raise ValueError(f"unknown downsample '{downsample_type}': expected 'avg', 'conv1x1' or ''")
    if in_chs == out_chs and stride == 1 and dilation[0] == dilation[1]:
        return nn.Identity()
    if not downsample_type:
        return None
    if downsample_type == "avg":
        return DownsampleAvg(in_chs, out_chs, stride=stride, dilation=dilation[0], apply_act=apply_act,
                             layers=layers)
    return layers.conv_norm_act(in_chs, out_chs, kernel_size=1, stride=stride, dilation=dilation[0],
                                apply_act=apply_act)


def _attn_or_identity(layers, channels, enabled=True):
    """The configured attention over ``channels``, or an identity where there is none or it sits elsewhere."""
    return layers.attn(channels) if enabled and layers.attn is not None else nn.Identity()


class _ResidualBlock(nn.Module):
    """What the basic, bottleneck, dark, edge and self-attention blocks share: drop-path on the residual branch,
    the shortcut added (unless there is none), the activation; at init, the last norm's scale zeroed
    (``zero_init_last``, only where there is a shortcut) and the attention layers reset."""

    last_conv = ""

    def init_weights(self, zero_init_last=False):
        """Zero the last norm's scale (so the block starts as its shortcut) and reset the attention layers."""
        norm = getattr(self, self.last_conv).bn
        if zero_init_last and self.shortcut is not None and getattr(norm, "weight", None) is not None:
            nn.init.zeros_(norm.weight)
        for attn in self._attention_layers():
            if hasattr(attn, "reset_parameters"):
                attn.reset_parameters()

    def _attention_layers(self):
        """The attention layers that ``init_weights`` resets."""
        return self.attn, self.attn_last

    def _residual(self, x, shortcut):
        """Drop-path, shortcut, activation."""
        x = self.drop_path(x)
        if self.shortcut is not None:
            x = x + self.shortcut(shortcut)
        return self.act(x)


class BasicBlock(_ResidualBlock):
    """The ResNet basic block: kxk (strided) to ``out_chs * bottle_ratio``, kxk (grouped) to ``out_chs``;
    attention after the first convolution, or after the second with ``attn_last``."""

    last_conv = "conv2_kxk"

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), group_size=None, bottle_ratio=1.0,
                 downsample="avg", attn_last=True, linear_out=False, layers=None, drop_path_rate=0.0):
        super().__init__()
        layers = layers or LayerFn()
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        groups = num_groups(group_size, mid_chs)
        self.shortcut = create_shortcut(downsample, in_chs, out_chs, stride, dilation, layers)
        self.conv1_kxk = layers.conv_norm_act(in_chs, mid_chs, kernel_size, stride=stride, dilation=dilation[0])
        self.attn = _attn_or_identity(layers, mid_chs, not attn_last)
        self.conv2_kxk = layers.conv_norm_act(mid_chs, out_chs, kernel_size, dilation=dilation[1], groups=groups,
                                              apply_act=False)
        self.attn_last = _attn_or_identity(layers, out_chs, attn_last)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.Identity() if linear_out else layers.act(inplace=True)

    def forward(self, x):
        shortcut = x
        x = self.conv1_kxk(x)
        x = self.attn(x)
        x = self.conv2_kxk(x)
        x = self.attn_last(x)
        return self._residual(x, shortcut)


class BottleneckBlock(_ResidualBlock):
    """The ResNet bottleneck: 1x1 to ``bottle_ratio`` of the output width (of the input width with ``bottle_in``,
    an inverted bottleneck), kxk (grouped, strided), an optional second kxk (``extra_conv``), attention (or after
    the last convolution with ``attn_last``), 1x1 to ``out_chs``."""

    last_conv = "conv3_1x1"

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="avg", attn_last=False, linear_out=False, extra_conv=False, bottle_in=False, layers=None,
                 drop_path_rate=0.0):
        super().__init__()
        layers = layers or LayerFn()
        mid_chs = _make_divisible((in_chs if bottle_in else out_chs) * bottle_ratio, 8)
        groups = num_groups(group_size, mid_chs)
        self.shortcut = create_shortcut(downsample, in_chs, out_chs, stride, dilation, layers)
        self.conv1_1x1 = layers.conv_norm_act(in_chs, mid_chs, 1)
        self.conv2_kxk = layers.conv_norm_act(mid_chs, mid_chs, kernel_size, stride=stride, dilation=dilation[0],
                                              groups=groups)
        if extra_conv:
            self.conv2b_kxk = layers.conv_norm_act(mid_chs, mid_chs, kernel_size, dilation=dilation[1],
                                                   groups=groups)
        else:
            self.conv2b_kxk = nn.Identity()
        self.attn = _attn_or_identity(layers, mid_chs, not attn_last)
        self.conv3_1x1 = layers.conv_norm_act(mid_chs, out_chs, 1, apply_act=False)
        self.attn_last = _attn_or_identity(layers, out_chs, attn_last)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.Identity() if linear_out else layers.act(inplace=True)

    def forward(self, x):
        shortcut = x
        x = self.conv1_1x1(x)
        x = self.conv2_kxk(x)
        x = self.conv2b_kxk(x)
        x = self.attn(x)
        x = self.conv3_1x1(x)
        x = self.attn_last(x)
        return self._residual(x, shortcut)


class DarkBlock(_ResidualBlock):
    """The DarkNet-like block: 1x1 to ``out_chs * bottle_ratio``, then a (grouped, strided) kxk to ``out_chs``;
    attention after the 1x1, or after the kxk with ``attn_last``."""

    last_conv = "conv2_kxk"

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="avg", attn_last=True, linear_out=False, layers=None, drop_path_rate=0.0):
        super().__init__()
        layers = layers or LayerFn()
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        groups = num_groups(group_size, mid_chs)
        self.shortcut = create_shortcut(downsample, in_chs, out_chs, stride, dilation, layers)
        self.conv1_1x1 = layers.conv_norm_act(in_chs, mid_chs, 1)
        self.attn = _attn_or_identity(layers, mid_chs, not attn_last)
        self.conv2_kxk = layers.conv_norm_act(mid_chs, out_chs, kernel_size, stride=stride, dilation=dilation[0],
                                              groups=groups, apply_act=False)
        self.attn_last = _attn_or_identity(layers, out_chs, attn_last)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.Identity() if linear_out else layers.act(inplace=True)

    def forward(self, x):
        shortcut = x
        x = self.conv1_1x1(x)
        x = self.attn(x)
        x = self.conv2_kxk(x)
        x = self.attn_last(x)
        return self._residual(x, shortcut)


class EdgeBlock(_ResidualBlock):
    """The edge-residual-like block: a (grouped, strided) kxk to ``out_chs * bottle_ratio``, then 1x1 to
    ``out_chs``; attention between them, or after the 1x1 with ``attn_last``."""

    last_conv = "conv2_1x1"

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="avg", attn_last=False, linear_out=False, layers=None, drop_path_rate=0.0):
        super().__init__()
        layers = layers or LayerFn()
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        groups = num_groups(group_size, mid_chs)
        self.shortcut = create_shortcut(downsample, in_chs, out_chs, stride, dilation, layers)
        self.conv1_kxk = layers.conv_norm_act(in_chs, mid_chs, kernel_size, stride=stride, dilation=dilation[0],
                                              groups=groups)
        self.attn = _attn_or_identity(layers, mid_chs, not attn_last)
        self.conv2_1x1 = layers.conv_norm_act(mid_chs, out_chs, 1, apply_act=False)
        self.attn_last = _attn_or_identity(layers, out_chs, attn_last)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.Identity() if linear_out else layers.act(inplace=True)

    def forward(self, x):
        shortcut = x
        x = self.conv1_kxk(x)
        x = self.attn(x)
        x = self.conv2_1x1(x)
        x = self.attn_last(x)
        return self._residual(x, shortcut)


class SelfAttnBlock(_ResidualBlock):
    """A bottleneck whose middle layer is the configured self-attention layer (``layers.self_attn``, which strides
    unless the optional kxk convolution ``extra_conv`` does), followed by a norm and activation (``post_attn_na``);
    ``feat_size`` is the map size the attention sees (for layers that need it, in fixed-size models)."""

    last_conv = "conv3_1x1"

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="avg", extra_conv=False, linear_out=False, bottle_in=False, post_attn_na=True,
                 feat_size=None, layers=None, drop_path_rate=0.0):
        super().__init__()
        if layers is None or layers.self_attn is None:
            raise ValueError("a self_attn block needs a self_attn_layer in its model or block config")
        mid_chs = _make_divisible((in_chs if bottle_in else out_chs) * bottle_ratio, 8)
        groups = num_groups(group_size, mid_chs)
        self.shortcut = create_shortcut(downsample, in_chs, out_chs, stride, dilation, layers)
        self.conv1_1x1 = layers.conv_norm_act(in_chs, mid_chs, 1)
        if extra_conv:
            self.conv2_kxk = layers.conv_norm_act(mid_chs, mid_chs, kernel_size, stride=stride, dilation=dilation[0],
                                                  groups=groups)
            stride = 1
        else:
            self.conv2_kxk = nn.Identity()
        size_kwargs = {} if feat_size is None else dict(feat_size=feat_size)
        self.self_attn = layers.self_attn(mid_chs, stride=stride, **size_kwargs)
        self.post_attn = layers.norm_act(mid_chs) if post_attn_na else nn.Identity()
        self.conv3_1x1 = layers.conv_norm_act(mid_chs, out_chs, 1, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.Identity() if linear_out else layers.act(inplace=True)

    def _attention_layers(self):
        return (self.self_attn,)

    def forward(self, x):
        shortcut = x
        x = self.conv1_1x1(x)
        x = self.conv2_kxk(x)
        x = self.self_attn(x)
        x = self.post_attn(x)
        x = self.conv3_1x1(x)
        return self._residual(x, shortcut)


class _Reparameterizable(nn.Module):
    """What RepVGG's and MobileOne's blocks share: the training form's parallel branches (convolution + BatchNorm
    each, and a BatchNorm ``identity`` branch where the shape is kept), or the inference form, a single biased
    convolution ``reparam_conv`` (``inference_mode``, or after ``reparameterize()``, which gives the same outputs
    in eval mode); both followed by attention and the activation.

    A block names its main convolution (``_kernel_template``, whose geometry the fused one takes), its branches'
    (kernel, bias) pairs with the BatchNorms folded in, in the order they are summed (``_branches``), and the
    training form's modules that ``reparameterize`` removes (``_branch_names``). Like every block it takes the
    stage's ``bottle_ratio`` and ``downsample`` arguments, which it has no use for.
    """

    def _inference_conv(self, in_chs, out_chs, kernel_size, stride, dilation, groups):
        """The fused convolution of the inference form (padded like the branches it replaces)."""
        padding = get_padding(kernel_size, stride, dilation)
        return nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=True)

    def _identity_branch(self):
        """The identity branch's (kernel, bias): its BatchNorm applied to the pass-through kernel."""
        template = self._kernel_template().weight
        kernel = identity_kernel(template.shape[0], template.shape[1], tuple(template.shape[2:]), template.dtype)
        return fold_batchnorm(kernel, self.identity)

    def reparameterize(self):
        """Fold the branches (BatchNorms with their running statistics) into one biased convolution
        ``reparam_conv`` and remove them: the inference form, with the same eval-mode outputs."""
        if self.reparam_conv is not None:
            return
        with torch.no_grad():
            kernel, bias = sum_branches(self._branches())
        self.reparam_conv = biased_conv_like(self._kernel_template(), kernel, bias)
        for name in self._branch_names():
            delattr(self, name)

    def _inference_forward(self, x):
        """The inference form: fused convolution, attention, activation."""
        return self.act(self.attn(self.reparam_conv(x)))


class RepVggBlock(_Reparameterizable):
    """RepVGG's block: a kxk convolution, a 1x1 convolution (both strided, grouped by ``group_size`` of the
    input) and, where the shape is kept, an identity, each with its own BatchNorm, summed (drop-path on the
    convolutions' sum), then attention (an addition to the paper) and the activation."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="", layers=None, drop_path_rate=0.0, inference_mode=False):
        super().__init__()
        groups = num_groups(group_size, in_chs)
        layers = layers or LayerFn()
        if inference_mode:
            self.reparam_conv = self._inference_conv(in_chs, out_chs, kernel_size, stride, dilation[0], groups)
        else:
            self.reparam_conv = None
            use_ident = in_chs == out_chs and stride == 1 and dilation[0] == dilation[1]
            self.identity = layers.norm_act(out_chs, apply_act=False) if use_ident else None
            self.conv_kxk = layers.conv_norm_act(in_chs, out_chs, kernel_size, stride=stride, dilation=dilation[0],
                                                 groups=groups, apply_act=False)
            self.conv_1x1 = layers.conv_norm_act(in_chs, out_chs, 1, stride=stride, groups=groups, apply_act=False)
            self.drop_path = drop_path_module(drop_path_rate if use_ident else 0.0)
        self.attn = _attn_or_identity(layers, out_chs)
        self.act = layers.act(inplace=True)

    def init_weights(self, zero_init_last=False):
        """RepVGG's init: every BatchNorm's scale N(0.1, 0.1^2) and shift N(0, 0.1^2); the attention reset."""
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                nn.init.normal_(module.weight, 0.1, 0.1)
                nn.init.normal_(module.bias, 0, 0.1)
        if hasattr(self.attn, "reset_parameters"):
            self.attn.reset_parameters()

    def _kernel_template(self):
        return self.conv_kxk.conv

    def _branches(self):
        size = self.conv_kxk.conv.kernel_size[0]
        kernel, bias = fold_batchnorm(self.conv_kxk.conv.weight, self.conv_kxk.bn)
        branches = [(kernel, bias)]
        kernel, bias = fold_batchnorm(self.conv_1x1.conv.weight, self.conv_1x1.bn)
        branches.append((pad_kernel(kernel, size), bias))
        if self.identity is not None:
            branches.append(self._identity_branch())
        return branches

    def _branch_names(self):
        return "conv_kxk", "conv_1x1", "identity", "drop_path"

    def forward(self, x):
        if self.reparam_conv is not None:
            return self._inference_forward(x)
        if self.identity is None:
            x = self.conv_1x1(x) + self.conv_kxk(x)
        else:
            identity = self.identity(x)
            x = self.conv_1x1(x) + self.conv_kxk(x)
            x = self.drop_path(x)
            x = x + identity
        x = self.attn(x)
        return self.act(x)


class MobileOneBlock(_Reparameterizable):
    """MobileOne's block: ``num_conv_branches`` parallel kxk convolutions, a 1x1 "scale" convolution (for k > 1;
    all strided, grouped by ``group_size`` of the input) and, where the shape is kept, an identity, each with its
    own BatchNorm, summed (drop-path before the identity is added), then attention and the activation."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=None,
                 downsample="", inference_mode=False, num_conv_branches=1, layers=None, drop_path_rate=0.0):
        super().__init__()
        groups = num_groups(group_size, in_chs)
        layers = layers or LayerFn()
        if inference_mode:
            self.reparam_conv = self._inference_conv(in_chs, out_chs, kernel_size, stride, 1, groups)
        else:
            self.reparam_conv = None
            use_ident = in_chs == out_chs and stride == 1 and dilation[0] == dilation[1]
            self.identity = layers.norm_act(out_chs, apply_act=False) if use_ident else None
            self.conv_kxk = nn.ModuleList([
                layers.conv_norm_act(in_chs, out_chs, kernel_size=kernel_size, stride=stride, groups=groups,
                                     apply_act=False)
                for _ in range(num_conv_branches)
            ])
            self.conv_scale = None
            if kernel_size > 1:
                self.conv_scale = layers.conv_norm_act(in_chs, out_chs, kernel_size=1, stride=stride, groups=groups,
                                                       apply_act=False)
            self.drop_path = drop_path_module(drop_path_rate if use_ident else 0.0)
        self.attn = _attn_or_identity(layers, out_chs)
        self.act = layers.act(inplace=True)

    def _kernel_template(self):
        return self.conv_kxk[0].conv

    def _branches(self):
        size = self.conv_kxk[0].conv.kernel_size[0]
        branches = [fold_batchnorm(branch.conv.weight, branch.bn) for branch in self.conv_kxk]
        if self.conv_scale is not None:
            kernel, bias = fold_batchnorm(self.conv_scale.conv.weight, self.conv_scale.bn)
            branches.append((pad_kernel(kernel, size), bias))
        if self.identity is not None:
            branches.append(self._identity_branch())
        return branches

    def _branch_names(self):
        return "conv_kxk", "conv_scale", "identity", "drop_path"

    def forward(self, x):
        if self.reparam_conv is not None:
            return self._inference_forward(x)
        out = 0
        if self.conv_scale is not None:
            out = self.conv_scale(x)
        for branch in self.conv_kxk:
            out = out + branch(x)
        out = self.drop_path(out)
        if self.identity is not None:
            out = out + self.identity(x)
        return self.act(self.attn(out))


_BLOCKS = {"basic": BasicBlock, "bottle": BottleneckBlock, "dark": DarkBlock, "edge": EdgeBlock,
           "rep": RepVggBlock, "one": MobileOneBlock, "self_attn": SelfAttnBlock}


def register_block(block_type, block_fn):
    """Make the block class ``block_fn`` available to configs as ``block_type``."""
    _BLOCKS[block_type] = block_fn


def create_block(block, **kwargs):
    """A block from its type name (or class) and the stage's block arguments."""
    if not isinstance(block, str):
        return block(**kwargs)
    if block not in _BLOCKS:
        raise ValueError(f"unknown block type '{block}': expected one of {sorted(_BLOCKS)}")
    return _BLOCKS[block](**kwargs)


_STEM_POOLS = {
    "max": lambda: nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
    "maxpool": lambda: nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
    "avg": lambda: nn.AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    "avgpool": lambda: nn.AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    "max2": lambda: nn.MaxPool2d(2),
    "avg2": lambda: nn.AvgPool2d(2),
}


class Stem(nn.Sequential):
    """A stack of kxk convolutions ``conv1``, ``conv2``... (widths ``out_chs``, or ``num_rep`` widths growing by
    ``1 / chs_decay`` up to ``out_chs``; the first ``num_rep - num_act`` without norm and activation), the first
    strided by 2, then a ``pool`` ('max', 'avg': 3x3/2; 'max2', 'avg2': 2x2/2), or, for a total ``stride`` of 4
    without pooling, a strided last convolution. ``feature_info`` lists the map before each later reduction and
    the output."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=4, pool="maxpool", num_rep=3, num_act=None,
                 chs_decay=0.5, layers=None):
        super().__init__()
        if stride not in (2, 4):
            raise ValueError(f"a stem reduces by 2 or 4, got stride {stride}")
        layers = layers or LayerFn()
        if isinstance(out_chs, (list, tuple)):
            num_rep = len(out_chs)
            stem_chs = list(out_chs)
        else:
            stem_chs = [round(out_chs * chs_decay ** i) for i in range(num_rep)][::-1]
        strides = [2] + [1] * (num_rep - 1)
        if stride == 4 and not pool:
            strides[-1] = 2
        num_act = num_rep if num_act is None else num_act
        norm_acts = [False] * (num_rep - num_act) + [True] * num_act
        self.feature_info = []
        prev_chs = in_chs
        prev_feat = ""
        reduction = 1
        for i, (chs, s, norm_act) in enumerate(zip(stem_chs, strides, norm_acts)):
            if i > 0 and s > 1:
                self.feature_info.append(dict(num_chs=prev_chs, reduction=reduction, module=prev_feat, stage=0))
            layer_fn = layers.conv_norm_act if norm_act else create_conv2d
            self.add_module(f"conv{i + 1}", layer_fn(prev_chs, chs, kernel_size=kernel_size, stride=s))
            prev_chs = chs
            reduction *= s
            prev_feat = f"conv{i + 1}"
        if pool:
            pool = pool.lower()
            if pool not in _STEM_POOLS:
                raise ValueError(f"unknown stem pool '{pool}': expected one of {sorted(_STEM_POOLS)}")
            self.feature_info.append(dict(num_chs=prev_chs, reduction=reduction, module=prev_feat, stage=0))
            self.add_module("pool", _STEM_POOLS[pool]())
            reduction *= 2
            prev_feat = "pool"
        self.feature_info.append(dict(num_chs=prev_chs, reduction=reduction, module=prev_feat, stage=0))
        if reduction != stride:
            raise ValueError(f"the stem reduces by {reduction}, not {stride}")

    @property
    def tap_index(self):
        """Position of the child whose output is the stem's feature map (``feature_info``'s entry before the
        output's: the map before the last reduction), or None for a stem with a single reduction."""
        if len(self.feature_info) < 2:
            return None
        names = [name for name, _ in self.named_children()]
        return names.index(self.feature_info[-2]["module"])

    def forward_with_tap(self, x):
        """The stem's output and its feature map (the tapped child's output; the output itself without a tap)."""
        tap_index = self.tap_index
        tapped = None
        for i, child in enumerate(self):
            x = child(x)
            if i == tap_index:
                tapped = x
        return x, x if tapped is None else tapped

    def prune_to_tap(self):
        """Turn the children after the tapped one into identities, so that the stem outputs its feature map (timm's
        pruning keeps their names, the tapped child's weights and those before)."""
        tap_index = self.tap_index
        if tap_index is None:
            return
        for name in [name for name, _ in self.named_children()][tap_index + 1:]:
            setattr(self, name, nn.Identity())


_STEM_TYPES = ("", "quad", "quad2", "tiered", "deep", "rep", "one", "7x7", "3x3")


def create_byob_stem(in_chs, out_chs, stem_type="", pool_type="", feat_prefix="stem", layers=None):
    """The stem of ``stem_type`` and its ``feature_info`` (module names under ``feat_prefix``).

    'quad' / 'quad2': four 3x3 convolutions (widths out/8, out/4, out/2, out; 'quad2' without norm and activation
    on the first two); 'tiered': three (3/8, 1/2, 1 of ``out_chs``); 'deep': three of ``out_chs``; 'rep' / 'one': a
    strided RepVGG / MobileOne block; '7x7': one 7x7 convolution; '3x3' or '': one 3x3 convolution (a stack of 3x3
    convolutions when ``out_chs`` is a sequence). Without a pool the stacks reduce by 4 themselves, single
    convolutions and blocks by 2.
    """
    layers = layers or LayerFn()
    if stem_type not in _STEM_TYPES:
        raise ValueError(f"unknown stem_type '{stem_type}': expected one of {_STEM_TYPES}")
    if "quad" in stem_type:
        stem = Stem(in_chs, out_chs, num_rep=4, num_act=2 if stem_type == "quad2" else None, pool=pool_type,
                    layers=layers)
    elif stem_type == "tiered":
        stem = Stem(in_chs, (3 * out_chs // 8, out_chs // 2, out_chs), pool=pool_type, layers=layers)
    elif stem_type == "deep":
        stem = Stem(in_chs, out_chs, num_rep=3, chs_decay=1.0, pool=pool_type, layers=layers)
    elif stem_type == "rep":
        stem = RepVggBlock(in_chs, out_chs, stride=2, layers=layers)
    elif stem_type == "one":
        stem = MobileOneBlock(in_chs, out_chs, kernel_size=3, stride=2, layers=layers)
    elif stem_type == "7x7":
        if pool_type:
            stem = Stem(in_chs, out_chs, 7, num_rep=1, pool=pool_type, layers=layers)
        else:
            stem = layers.conv_norm_act(in_chs, out_chs, 7, stride=2)
    elif isinstance(out_chs, (tuple, list)):
        stem = Stem(in_chs, out_chs, 3, pool=pool_type, layers=layers)
    elif pool_type:
        stem = Stem(in_chs, out_chs, 3, num_rep=1, pool=pool_type, layers=layers)
    else:
        stem = layers.conv_norm_act(in_chs, out_chs, 3, stride=2)
    if isinstance(stem, Stem):
        feature_info = [dict(f, module=f"{feat_prefix}.{f['module']}") for f in stem.feature_info]
    else:
        feature_info = [dict(num_chs=out_chs, reduction=2, module=feat_prefix, stage=0)]
    return stem, feature_info


def reduce_feat_size(feat_size, stride=2):
    """The map size after a reduction by ``stride`` (None stays None)."""
    return None if feat_size is None else tuple(s // stride for s in feat_size)


def _override_kwargs(block_kwargs, model_kwargs):
    """A block's own arguments if it sets any (even empty: they replace, not merge), else the model's."""
    return (block_kwargs if block_kwargs is not None else model_kwargs) or {}


def update_block_kwargs(block_kwargs, block_cfg, model_cfg):
    """Lay a block config's attention, self-attention and extra block arguments over the model's."""
    layers = block_kwargs["layers"]
    if block_cfg.attn_layer is not None or block_cfg.attn_kwargs is not None:
        attn_layer = None
        if block_cfg.attn_layer is None or block_cfg.attn_layer:
            attn_kwargs = _override_kwargs(block_cfg.attn_kwargs, model_cfg.attn_kwargs)
            attn_name = block_cfg.attn_layer or model_cfg.attn_layer
            attn_layer = partial(get_attn(attn_name), **attn_kwargs) if attn_name is not None else None
        layers = replace(layers, attn=attn_layer)
    if block_cfg.self_attn_layer is not None or block_cfg.self_attn_kwargs is not None:
        self_attn_layer = None
        if block_cfg.self_attn_layer is None or block_cfg.self_attn_layer:
            self_attn_kwargs = _override_kwargs(block_cfg.self_attn_kwargs, model_cfg.self_attn_kwargs)
            self_attn_name = block_cfg.self_attn_layer or model_cfg.self_attn_layer
            if self_attn_name is not None:
                self_attn_layer = partial(get_attn(self_attn_name), **self_attn_kwargs)
        layers = replace(layers, self_attn=self_attn_layer)
    block_kwargs["layers"] = layers
    block_kwargs.update(_override_kwargs(block_cfg.block_kwargs, model_cfg.block_kwargs))


def create_byob_stages(cfg, drop_path_rate, output_stride, stem_feat, feat_size=None, layers=None):
    """The stages (an ``nn.Sequential`` of per-stage ``nn.Sequential`` blocks), their ``feature_info`` (the map
    before each reduction, then the last stage's output) and the final ``feat_size``.

    Widths are ``c * width_factor`` rounded to multiples of 8. Once the network reaches ``output_stride``, stages
    dilate instead of striding. Drop-path rates grow linearly from 0 at the first block to ``drop_path_rate`` at
    the last.
    """
    layers = layers or LayerFn()
    block_cfgs = [expand_blocks_cfg(s) for s in cfg.blocks]
    depths = [len(stage) for stage in block_cfgs]
    rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
    feature_info = []
    dilation = 1
    net_stride = stem_feat["reduction"]
    prev_chs = stem_feat["num_chs"]
    prev_feat = stem_feat
    stages = []
    for stage_idx, stage_block_cfgs in enumerate(block_cfgs):
        stride = stage_block_cfgs[0].s
        if stride != 1 and prev_feat:
            feature_info.append(prev_feat)
        if net_stride >= output_stride and stride > 1:
            dilation *= stride
            stride = 1
        net_stride *= stride
        first_dilation = 1 if dilation in (1, 2) else 2
        blocks = []
        for block_idx, block_cfg in enumerate(stage_block_cfgs):
            out_chs = _make_divisible(block_cfg.c * cfg.width_factor, 8)
            group_size = block_cfg.gs
            if callable(group_size):
                group_size = group_size(out_chs, block_idx)
            block_kwargs = dict(in_chs=prev_chs, out_chs=out_chs, stride=stride if block_idx == 0 else 1,
                                dilation=(first_dilation, dilation), group_size=group_size,
                                bottle_ratio=block_cfg.br, downsample=cfg.downsample,
                                drop_path_rate=rates[sum(depths[:stage_idx]) + block_idx], layers=layers)
            if block_cfg.type == "self_attn":
                block_kwargs["feat_size"] = feat_size
            update_block_kwargs(block_kwargs, block_cfg, cfg)
            blocks.append(create_block(block_cfg.type, **block_kwargs))
            first_dilation = dilation
            prev_chs = out_chs
            if stride > 1 and block_idx == 0:
                feat_size = reduce_feat_size(feat_size, stride)
        stages.append(nn.Sequential(*blocks))
        prev_feat = dict(num_chs=prev_chs, reduction=net_stride, module=f"stages.{stage_idx}", stage=stage_idx + 1)
    feature_info.append(prev_feat)
    return nn.Sequential(*stages), feature_info, feat_size


def _modules_children_first(module):
    """The descendants of ``module`` (not itself), each after its own children, in definition order."""
    for child in module.children():
        yield from _modules_children_first(child)
        yield child


def _init_weights(module, zero_init_last=False):
    """timm's init of one module: convolutions N(0, 2 / fan-out) with fan-out per group and zero biases, linear
    layers N(0, 0.01^2) with zero biases, BatchNorms ones and zeros; blocks their own ``init_weights``."""
    if isinstance(module, nn.Conv2d):
        fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
        nn.init.normal_(module.weight, 0, math.sqrt(2.0 / fan_out))
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, 0, 0.01)
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif hasattr(module, "init_weights"):
        module.init_weights(zero_init_last=zero_init_last)


class ByobNet(ClassifierHeadApi, nn.Module):
    """The bring-your-own-blocks network of ``cfg`` (a ``ByoModelCfg``; extra keyword arguments replace its
    fields): ``stem``, ``stages``, ``final_conv`` (1x1 convolution, norm, activation to ``num_features``, or an
    identity) and the ``head``: the classifier (global pooling, dropout, linear layer); for ``head_type`` 'mlp',
    global pooling, the model's norm, a ``head_hidden_size`` linear layer with the model's activation, dropout and
    the classifier; or, for 'attn_abs', attention pooling (dropout, then the projection ``head.proj`` to
    ``num_classes``; its position embeddings are sized for the map of an ``img_size`` image).

    ``output_stride`` 8 or 16 dilates the last stages instead of striding them; ``img_size`` is required by
    fixed-input-size configs and attention-pool heads; ``drop_path_rate`` grows linearly over the blocks;
    ``drop_rate`` is the dropout before the classifier; ``zero_init_last`` zeroes each residual block's last norm
    scale; ``num_classes=0`` replaces the classifier with an identity (pooled features); ``global_pool`` picks the
    pooling ('' leaves the map; None: 'avg', or 'token' for attention pooling, which takes only those two).
    """

    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfg, num_classes=1000, in_chans=3, global_pool=None, output_stride=32, img_size=None,
                 drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True, **kwargs):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        cfg = replace(cfg, **kwargs)
        if cfg.head_type not in ("", "classifier", "mlp", "attn_abs"):
            raise ValueError(f"unknown head_type '{cfg.head_type}': expected 'classifier', '', 'mlp' or 'attn_abs'")
        layers = get_layer_fns(cfg)
        if (cfg.fixed_input_size or cfg.head_type == "attn_abs") and img_size is None:
            raise ValueError("this model is built for a fixed input size: give img_size")
        feat_size = None if img_size is None else pair(img_size)
        if isinstance(cfg.stem_chs, (list, tuple)):
            stem_chs = [int(round(c * cfg.width_factor)) for c in cfg.stem_chs]
        else:
            stem_chs = int(round((cfg.stem_chs or cfg.blocks[0].c) * cfg.width_factor))
        self.stem, stem_feat = create_byob_stem(in_chans, stem_chs, cfg.stem_type, cfg.stem_pool,
                                                layers=get_layer_fns(cfg, allow_aa=False))
        self.feature_info = stem_feat[:-1]
        feat_size = reduce_feat_size(feat_size, stride=stem_feat[-1]["reduction"])
        self.stages, stage_feat, feat_size = create_byob_stages(cfg, drop_path_rate, output_stride, stem_feat[-1],
                                                                feat_size=feat_size, layers=layers)
        self.feature_info.extend(stage_feat[:-1])
        prev_chs = stage_feat[-1]["num_chs"]
        if cfg.num_features:
            self.num_features = int(round(cfg.width_factor * cfg.num_features))
            self.final_conv = layers.conv_norm_act(prev_chs, self.num_features, 1)
        else:
            self.num_features = prev_chs
            self.final_conv = nn.Identity()
        self.feature_info.append(dict(num_chs=self.num_features, reduction=stage_feat[-1]["reduction"],
                                      module="final_conv", stage=len(self.stages)))
        if cfg.head_type == "attn_abs":
            global_pool = "token" if global_pool is None else global_pool
            self.head = AttentionPool2d(self.num_features, feat_size=feat_size, out_features=num_classes,
                                        embed_dim=cfg.head_hidden_size, pool_type=global_pool, drop_rate=drop_rate,
                                        qkv_separate=True)
            self.head_hidden_size = self.head.embed_dim
        elif cfg.head_type == "mlp":
            global_pool = "avg" if global_pool is None else global_pool
            self.head = NormMlpClassifierHead(self.num_features, num_classes, hidden_size=cfg.head_hidden_size,
                                              pool_type=global_pool, drop_rate=drop_rate,
                                              norm_layer=get_norm_layer(cfg.norm_layer),
                                              act_layer=get_act_layer(cfg.act_layer))
            self.head_hidden_size = self.head.num_features
        else:
            global_pool = "avg" if global_pool is None else global_pool
            self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
            self.head_hidden_size = self.head.num_features
        self.global_pool = global_pool
        for module in _modules_children_first(self):
            _init_weights(module, zero_init_last=zero_init_last)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution(s): RepVGG and MobileOne stems name both of their
        branches) and ``classifier``."""
        if isinstance(self.stem, RepVggBlock):
            first_conv = ("stem.conv_kxk.conv", "stem.conv_1x1.conv")
        elif isinstance(self.stem, MobileOneBlock):
            first_conv = ("stem.conv_kxk.0.conv", "stem.conv_scale.conv")
        elif isinstance(self.stem, Stem):
            first_conv = "stem.conv1.conv" if isinstance(self.stem.conv1, ConvNormAct) else "stem.conv1"
        else:
            first_conv = "stem.conv"
        classifier = "head.proj" if isinstance(self.head, AttentionPool2d) else "head.fc"
        return {"first_conv": first_conv, "classifier": classifier}

    def get_classifier(self):
        """The final linear layer: the attention pool's projection, or the classifier's."""
        if isinstance(self.head, AttentionPool2d):
            return self.head.proj
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the pooled features) after another pooling ``global_pool``
        if given; an MLP head also drops its norm and hidden layer with ``reset_other``; an attention-pool head
        keeps its attention (and ``head_hidden_size``) and takes only 'token' or ''."""
        if isinstance(self.head, NormMlpClassifierHead):
            super().reset_classifier(num_classes, global_pool, reset_other=reset_other)
            return
        if not isinstance(self.head, AttentionPool2d):
            super().reset_classifier(num_classes, global_pool)
            return
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool)
        if global_pool is not None:
            self.global_pool = global_pool

    def forward_features(self, x):
        """The map after the stem, the stages and ``final_conv``."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.final_conv(x)
        return x

    @property
    def stage_ends(self):
        """For each ``feature_info`` entry, the number of stages run before its map is taken (0: inside or at the
        end of the stem; ``len(stages)`` for the last entry, after ``final_conv``): timm's feature positions."""
        return [info["stage"] for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False, exclude_final_conv=False):
        """The maps of the ``feature_info`` entries picked by ``indices`` (None: all, n: the last n, or a list) and,
        unless ``intermediates_only``, the final map. As in timm, a feature is taken where its stage ends: the
        stem's (before its last reduction where the stem has one), each stage's, and the last after ``final_conv``
        (before it with ``exclude_final_conv``; the final map is still through it when the last stage ran).
        ``stop_early`` skips the stages after the last one picked; ``norm`` does nothing (no final norm)."""
        take, ends = intermediate_stages(self.stage_ends, indices, stop_early, output_fmt)
        picked = {self.stage_ends[i] for i in take}
        last = self.stage_ends[-1]
        x, stem_map = self._stem_and_map(x)
        intermediates = [stem_map] if 0 in picked else []
        position = 0
        for position, stage in enumerate(self.stages[:ends[-1]], start=1):
            x = stage(x)
            if position == last and not exclude_final_conv:
                x = self.final_conv(x)
            if position in picked:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        if exclude_final_conv and position == last:
            x = self.final_conv(x)
        return x, intermediates

    def _stem_and_map(self, x):
        """The stem's output and its feature map: a ``Stem``'s map before its last reduction, any other stem's
        output."""
        if isinstance(self.stem, Stem):
            return self.stem.forward_with_tap(x)
        x = self.stem(x)
        return x, x

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last ``feature_info`` entry ``indices`` picks (and the stem's layers after its
        tap when that entry is the stem's); when stages go, also ``final_conv`` and the head, ``num_features`` then
        the picked entry's width. ``prune_head`` drops the head anyway; ``prune_norm`` does nothing (no final norm).
        Returns the absolute indices."""
        take = take_indices(len(self.stage_ends), indices)
        last_pick = max(take)
        kept_stages = self.stage_ends[last_pick]
        prune_end = kept_stages < self.stage_ends[-1]
        self.stages = self.stages[:kept_stages]
        if prune_end:
            self.final_conv = nn.Identity()
            self.num_features = self.head_hidden_size = self.feature_info[last_pick]["num_chs"]
        if kept_stages == 0 and isinstance(self.stem, Stem):
            self.stem.prune_to_tap()
        if prune_head or prune_end:
            self._drop_head()
        return take

    def _drop_head(self):
        """A head that passes the final map through: an attention pool (the whole head) replaced by a pooling-free
        classifier without weights, any other head reset to no pooling, no classifier and (MLP head) no norm or
        hidden layer, on ``num_features`` channels."""
        if isinstance(self.head, AttentionPool2d):
            self.head = ClassifierHead(self.num_features, 0, "").train(self.training)
            self.num_classes = 0
            self.global_pool = ""
            self.head_hidden_size = self.num_features
            return
        self.head.in_features = self.num_features
        self.reset_classifier(0, "", reset_other=True)


def _alternate_groups(groups):
    """RepVGG's grouping: the 2nd, 4th... block of a stage has ``groups`` groups, the others are dense."""
    def group_size(channels, block_idx):
        return channels // groups if (block_idx + 1) % 2 == 0 else 0

    return group_size


def _rep_vgg_blocks(d=(4, 6, 16, 1), wf=(1.0, 1.0, 1.0, 1.0), groups=0):
    """RepVGG's four stages: ``d`` blocks of widths 64, 128, 256, 512 times ``wf``, every second one grouped when
    ``groups``."""
    group_size = _alternate_groups(groups) if groups > 0 else 0
    return tuple(ByoBlockCfg(type="rep", d=depth, c=c * f, gs=group_size)
                 for depth, c, f in zip(d, (64, 128, 256, 512), wf))


def _mobileone_blocks(d=(2, 8, 10, 1), wf=(1.0, 1.0, 1.0, 1.0), se_blocks=(), num_conv_branches=1):
    """MobileOne's four stages: ``d`` pairs of a depthwise 3x3 block and a pointwise 1x1 block (widths 64, 128,
    256, 512 times ``wf``), the last ``se_blocks`` pairs of each stage with squeeze-and-excitation."""
    se_blocks = se_blocks or (0,) * len(d)
    prev_c = min(64, 64 * wf[0])
    stages = []
    for depth, c, f, se in zip(d, (64, 128, 256, 512), wf, se_blocks):
        stage = []
        for i in range(depth):
            out_c = c * f
            attn = dict(attn_layer="se") if i >= depth - se else {}
            branches = dict(num_conv_branches=num_conv_branches)
            stage.append(ByoBlockCfg(type="one", d=1, c=prev_c, gs=1, block_kwargs=branches, **attn))
            stage.append(ByoBlockCfg(type="one", d=1, c=out_c, gs=0, block_kwargs=dict(kernel_size=1, **branches),
                                     **attn))
            prev_c = out_c
        stages.append(stage)
    return stages


def _bottle_stages(depths, widths, group_sizes, ratios=(0.25, 0.25, 0.25, 0.25), first_stride=1):
    """Four stages of bottlenecks (``depths`` blocks of ``widths``, ``group_sizes``, bottleneck ``ratios``), the
    first strided by ``first_stride``, the others by 2."""
    strides = (first_stride, 2, 2, 2)
    return tuple(ByoBlockCfg(type="bottle", d=d, c=c, s=s, gs=gs, br=br)
                 for d, c, s, gs, br in zip(depths, widths, strides, group_sizes, ratios))


def _gernet_blocks(depths, widths):
    """GENet's five stages: two of basic blocks, one of bottlenecks (ratio 1/4), two of depthwise inverted
    bottlenecks (ratio 3), the last not strided."""
    types = ("basic", "basic", "bottle", "bottle", "bottle")
    strides = (2, 2, 2, 2, 1)
    group_sizes = (0, 0, 0, 1, 1)
    ratios = (1.0, 1.0, 1 / 4, 3.0, 3.0)
    return tuple(ByoBlockCfg(type=t, d=d, c=c, s=s, gs=gs, br=br)
                 for t, d, c, s, gs, br in zip(types, depths, widths, strides, group_sizes, ratios))


_RESNEXT26 = _bottle_stages((2, 2, 2, 2), (256, 512, 1024, 2048), (32, 32, 32, 32))
_RESNET33 = _bottle_stages((2, 3, 3, 2), (256, 512, 1536, 1536), (0, 0, 0, 0))
# ResNet-51/61-Q: groups of 32 channels, then a depthwise last stage without bottleneck
_Q_STAGES = _bottle_stages((2, 4, 6, 4), (256, 512, 1536, 1536), (32, 32, 32, 1), (0.25, 0.25, 0.25, 1.0))
_TS = dict(stem_chs=64, stem_type="tiered", act_layer="silu")
_REGNETZ = dict(downsample="", act_layer="silu", attn_layer="se", attn_kwargs=dict(rd_ratio=0.25),
                block_kwargs=dict(bottle_in=True, linear_out=True))
_EVOS = partial(EvoNorm2dS0a, group_size=16)


def _clip_resnet(depths, width_factor=1.0, head_type="attn_abs"):
    """CLIP's modified ResNet: bottlenecks (ratio 1/4) of ``depths`` in four stages, a stem of three 3x3
    convolutions (32, 32, 64 wide) with 2x2 average pooling, average-pool shortcuts, anti-aliased strides, widths
    times ``width_factor``, and attention pooling (``head_type`` 'attn_abs') or the average-pooling classifier."""
    blocks = _bottle_stages(depths, (256, 512, 1024, 2048), (None,) * 4)
    return ByoHeadModelCfg(blocks=blocks, width_factor=width_factor, stem_chs=(32, 32, 64), stem_type="",
                           stem_pool="avg2", downsample="avg", aa_layer="avg", head_type=head_type)


# (stage depths, width factor, image size of the released weights) of CLIP's ResNets
_CLIP_RESNETS = {
    "resnet50_clip": ((3, 4, 6, 3), 1.0, 224),
    "resnet101_clip": ((3, 4, 23, 3), 1.0, 224),
    "resnet50x4_clip": ((4, 6, 10, 6), 1.25, 288),
    "resnet50x16_clip": ((6, 8, 18, 8), 1.5, 384),
    "resnet50x64_clip": ((3, 15, 36, 10), 2.0, 448),
}


def _regnetz_blocks(depths, widths, group_size, ratio, first_stride):
    """RegNetZ's four stages of inverted bottlenecks (expansion ``ratio`` of the input width)."""
    return _bottle_stages(depths, widths, (group_size,) * 4, (ratio,) * 4, first_stride)


model_cfgs = dict(
    gernet_l=ByoModelCfg(blocks=_gernet_blocks((1, 2, 6, 5, 4), (128, 192, 640, 640, 640)), stem_chs=32,
                         stem_pool=None, num_features=2560),
    gernet_m=ByoModelCfg(blocks=_gernet_blocks((1, 2, 6, 4, 1), (128, 192, 640, 640, 640)), stem_chs=32,
                         stem_pool=None, num_features=2560),
    gernet_s=ByoModelCfg(blocks=_gernet_blocks((1, 3, 7, 2, 1), (48, 48, 384, 560, 256)), stem_chs=13,
                         stem_pool=None, num_features=1920),
    repvgg_a0=ByoModelCfg(blocks=_rep_vgg_blocks(d=(2, 4, 14, 1), wf=(0.75, 0.75, 0.75, 2.5)), stem_type="rep",
                          stem_chs=48),
    repvgg_a1=ByoModelCfg(blocks=_rep_vgg_blocks(d=(2, 4, 14, 1), wf=(1, 1, 1, 2.5)), stem_type="rep",
                          stem_chs=64),
    repvgg_a2=ByoModelCfg(blocks=_rep_vgg_blocks(d=(2, 4, 14, 1), wf=(1.5, 1.5, 1.5, 2.75)), stem_type="rep",
                          stem_chs=64),
    repvgg_b0=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(1.0, 1.0, 1.0, 2.5)), stem_type="rep", stem_chs=64),
    repvgg_b1=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(2.0, 2.0, 2.0, 4.0)), stem_type="rep", stem_chs=64),
    repvgg_b1g4=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(2.0, 2.0, 2.0, 4.0), groups=4), stem_type="rep",
                            stem_chs=64),
    repvgg_b2=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(2.5, 2.5, 2.5, 5.0)), stem_type="rep", stem_chs=64),
    repvgg_b2g4=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(2.5, 2.5, 2.5, 5.0), groups=4), stem_type="rep",
                            stem_chs=64),
    repvgg_b3=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(3.0, 3.0, 3.0, 5.0)), stem_type="rep", stem_chs=64),
    repvgg_b3g4=ByoModelCfg(blocks=_rep_vgg_blocks(wf=(3.0, 3.0, 3.0, 5.0), groups=4), stem_type="rep",
                            stem_chs=64),
    repvgg_d2se=ByoModelCfg(blocks=_rep_vgg_blocks(d=(8, 14, 24, 1), wf=(2.5, 2.5, 2.5, 5.0)), stem_type="rep",
                            stem_chs=64, attn_layer="se", attn_kwargs=dict(rd_ratio=0.0625, rd_divisor=1)),
    resnet51q=ByoModelCfg(blocks=_Q_STAGES, stem_chs=128, stem_type="quad2", stem_pool=None, num_features=2048,
                          act_layer="silu"),
    resnet61q=ByoModelCfg(blocks=(ByoBlockCfg(type="edge", d=1, c=256, s=1, gs=0, br=1.0, block_kwargs={}),)
                          + _Q_STAGES[1:],
                          stem_chs=128, stem_type="quad", stem_pool=None, num_features=2048, act_layer="silu",
                          block_kwargs=dict(extra_conv=True)),
    resnext26ts=ByoModelCfg(blocks=_RESNEXT26, **_TS),
    gcresnext26ts=ByoModelCfg(blocks=_RESNEXT26, attn_layer="gca", **_TS),
    seresnext26ts=ByoModelCfg(blocks=_RESNEXT26, attn_layer="se", **_TS),
    eca_resnext26ts=ByoModelCfg(blocks=_RESNEXT26, attn_layer="eca", **_TS),
    bat_resnext26ts=ByoModelCfg(blocks=_RESNEXT26, attn_layer="bat", attn_kwargs=dict(block_size=8), **_TS),
    resnet32ts=ByoModelCfg(blocks=_RESNET33, stem_pool="", **_TS),
    resnet33ts=ByoModelCfg(blocks=_RESNET33, stem_pool="", num_features=1280, **_TS),
    gcresnet33ts=ByoModelCfg(blocks=_RESNET33, stem_pool="", num_features=1280, attn_layer="gca", **_TS),
    seresnet33ts=ByoModelCfg(blocks=_RESNET33, stem_pool="", num_features=1280, attn_layer="se", **_TS),
    eca_resnet33ts=ByoModelCfg(blocks=_RESNET33, stem_pool="", num_features=1280, attn_layer="eca", **_TS),
    gcresnet50t=ByoModelCfg(blocks=_bottle_stages((3, 4, 6, 3), (256, 512, 1024, 2048), (None,) * 4), stem_chs=64,
                            stem_type="tiered", stem_pool="", attn_layer="gca"),
    gcresnext50ts=ByoModelCfg(blocks=_bottle_stages((3, 4, 6, 3), (256, 512, 1024, 2048), (32,) * 4), attn_layer="gca",
                              **_TS),
    regnetz_b16=ByoModelCfg(blocks=_regnetz_blocks((2, 6, 12, 2), (48, 96, 192, 288), 16, 3, 2), stem_chs=32,
                            stem_pool="", num_features=1536, **_REGNETZ),
    regnetz_c16=ByoModelCfg(blocks=_regnetz_blocks((2, 6, 12, 2), (48, 96, 192, 288), 16, 4, 2), stem_chs=32,
                            stem_pool="", num_features=1536, **_REGNETZ),
    regnetz_d32=ByoModelCfg(blocks=_regnetz_blocks((3, 6, 12, 3), (64, 128, 256, 384), 32, 4, 1), stem_chs=64,
                            stem_type="tiered", stem_pool="", num_features=1792, **_REGNETZ),
    regnetz_d8=ByoModelCfg(blocks=_regnetz_blocks((3, 6, 12, 3), (64, 128, 256, 384), 8, 4, 1), stem_chs=64,
                           stem_type="tiered", stem_pool="", num_features=1792, **_REGNETZ),
    regnetz_e8=ByoModelCfg(blocks=_regnetz_blocks((3, 8, 16, 3), (96, 192, 384, 512), 8, 4, 1), stem_chs=64,
                           stem_type="tiered", stem_pool="", num_features=2048, **_REGNETZ),
    regnetz_b16_evos=ByoModelCfg(blocks=_regnetz_blocks((2, 6, 12, 2), (48, 96, 192, 288), 16, 3, 2), stem_chs=32,
                                 stem_pool="", num_features=1536, norm_layer=_EVOS, **_REGNETZ),
    regnetz_c16_evos=ByoModelCfg(blocks=_regnetz_blocks((2, 6, 12, 2), (48, 96, 192, 288), 16, 4, 2), stem_chs=32,
                                 stem_pool="", num_features=1536, norm_layer=_EVOS, **_REGNETZ),
    regnetz_d8_evos=ByoModelCfg(blocks=_regnetz_blocks((3, 6, 12, 3), (64, 128, 256, 384), 8, 4, 1), stem_chs=64,
                                stem_type="deep", stem_pool="", num_features=1792, norm_layer=_EVOS, **_REGNETZ),
    mobileone_s0=ByoModelCfg(blocks=_mobileone_blocks(wf=(0.75, 1.0, 1.0, 2.0), num_conv_branches=4),
                             stem_type="one", stem_chs=48),
    mobileone_s1=ByoModelCfg(blocks=_mobileone_blocks(wf=(1.5, 1.5, 2.0, 2.5)), stem_type="one", stem_chs=64),
    mobileone_s2=ByoModelCfg(blocks=_mobileone_blocks(wf=(1.5, 2.0, 2.5, 4.0)), stem_type="one", stem_chs=64),
    mobileone_s3=ByoModelCfg(blocks=_mobileone_blocks(wf=(2.0, 2.5, 3.0, 4.0)), stem_type="one", stem_chs=64),
    mobileone_s4=ByoModelCfg(blocks=_mobileone_blocks(wf=(3.0, 3.5, 3.5, 4.0), se_blocks=(0, 0, 5, 1)),
                             stem_type="one", stem_chs=64),
    test_byobnet=ByoModelCfg(blocks=(ByoBlockCfg(type="edge", d=1, c=32, s=2, gs=0, br=0.5),
                                     ByoBlockCfg(type="dark", d=1, c=64, s=2, gs=0, br=0.5),
                                     ByoBlockCfg(type="basic", d=1, c=128, s=2, gs=32, br=0.25),
                                     ByoBlockCfg(type="bottle", d=1, c=256, s=2, gs=64, br=0.25)),
                             stem_chs=24, downsample="avg", stem_pool="", act_layer="relu", attn_layer="se",
                             attn_kwargs=dict(rd_ratio=0.25)),
)
for _name, (_depths, _width_factor, _) in _CLIP_RESNETS.items():
    model_cfgs[_name] = _clip_resnet(_depths, _width_factor)
    model_cfgs[f"{_name}_gap"] = _clip_resnet(_depths, _width_factor, head_type="classifier")
# CLIP's ResNet-50 body with a pool, BatchNorm and MLP (1024 wide, ReLU) head
model_cfgs["resnet50_mlp"] = replace(_clip_resnet((3, 4, 6, 3), head_type="mlp"), head_hidden_size=1024)


def _create_byobnet(variant, pretrained, progress, kwargs):
    """Build a registered variant from its config (extra keyword arguments replace config fields, as in timm);
    ``features_only`` gives timm's five maps unless ``out_indices`` says otherwise, under timm's flattened names
    (``stem_conv2``, ``stages_0``...)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2, 3, 4))
    return build_model(ByobNet, variant, pretrained, progress=progress, cfg=model_cfgs[variant], **kwargs)


def _create_clip_resnet(variant, pretrained, progress, kwargs):
    """A CLIP ResNet with attention pooling, sized for its weights' image size unless ``img_size`` is given."""
    kwargs.setdefault("img_size", _CLIP_RESNETS[variant][2])
    return _create_byobnet(variant, pretrained, progress, kwargs)


@register_model
def bat_resnext26ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-26-TS with bilinear attention (8 x 8 cells: inputs of 256 pixels or more)."""
    return _create_byobnet("bat_resnext26ts", pretrained, progress, kwargs)


@register_model
def eca_resnet33ts(pretrained=False, progress=True, **kwargs):
    """ResNet-33-TS with efficient channel attention."""
    return _create_byobnet("eca_resnet33ts", pretrained, progress, kwargs)


@register_model
def eca_resnext26ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-26-TS with efficient channel attention."""
    return _create_byobnet("eca_resnext26ts", pretrained, progress, kwargs)


@register_model
def gcresnet33ts(pretrained=False, progress=True, **kwargs):
    """ResNet-33-TS with global context attention."""
    return _create_byobnet("gcresnet33ts", pretrained, progress, kwargs)


@register_model
def gcresnet50t(pretrained=False, progress=True, **kwargs):
    """ResNet-50-T (tiered stem, ReLU) with global context attention."""
    return _create_byobnet("gcresnet50t", pretrained, progress, kwargs)


@register_model
def gcresnext26ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-26-TS with global context attention."""
    return _create_byobnet("gcresnext26ts", pretrained, progress, kwargs)


@register_model
def gcresnext50ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-50-TS (tiered stem with max pooling, groups of 32, SiLU) with global context attention."""
    return _create_byobnet("gcresnext50ts", pretrained, progress, kwargs)


@register_model
def gernet_l(pretrained=False, progress=True, **kwargs):
    """GENet-Large (GPU-Efficient network): basic blocks, then bottlenecks, then depthwise inverted bottlenecks."""
    return _create_byobnet("gernet_l", pretrained, progress, kwargs)


@register_model
def gernet_m(pretrained=False, progress=True, **kwargs):
    """GENet-Normal (GPU-Efficient network), timm's GERNet-M."""
    return _create_byobnet("gernet_m", pretrained, progress, kwargs)


@register_model
def gernet_s(pretrained=False, progress=True, **kwargs):
    """GENet-Small (GPU-Efficient network), timm's GERNet-S."""
    return _create_byobnet("gernet_s", pretrained, progress, kwargs)


@register_model
def mobileone_s0(pretrained=False, progress=True, **kwargs):
    """MobileOne-S0: depthwise / pointwise block pairs with four kxk branches each."""
    return _create_byobnet("mobileone_s0", pretrained, progress, kwargs)


@register_model
def mobileone_s1(pretrained=False, progress=True, **kwargs):
    """MobileOne-S1."""
    return _create_byobnet("mobileone_s1", pretrained, progress, kwargs)


@register_model
def mobileone_s2(pretrained=False, progress=True, **kwargs):
    """MobileOne-S2."""
    return _create_byobnet("mobileone_s2", pretrained, progress, kwargs)


@register_model
def mobileone_s3(pretrained=False, progress=True, **kwargs):
    """MobileOne-S3."""
    return _create_byobnet("mobileone_s3", pretrained, progress, kwargs)


@register_model
def mobileone_s4(pretrained=False, progress=True, **kwargs):
    """MobileOne-S4: with squeeze-and-excitation in the last blocks."""
    return _create_byobnet("mobileone_s4", pretrained, progress, kwargs)


@register_model
def regnetz_b16(pretrained=False, progress=True, **kwargs):
    """RegNetZ-B16: inverted bottlenecks (expansion 3, groups of 16) with SE, linear outputs, no residual where
    the shape changes."""
    return _create_byobnet("regnetz_b16", pretrained, progress, kwargs)


@register_model
def regnetz_c16(pretrained=False, progress=True, **kwargs):
    """RegNetZ-C16: inverted bottlenecks (expansion 4, groups of 16) with SE."""
    return _create_byobnet("regnetz_c16", pretrained, progress, kwargs)


@register_model
def regnetz_b16_evos(pretrained=False, progress=True, **kwargs):
    """RegNetZ-B16 with EvoNorm-S0a instead of BatchNorm and activation."""
    return _create_byobnet("regnetz_b16_evos", pretrained, progress, kwargs)


@register_model
def regnetz_c16_evos(pretrained=False, progress=True, **kwargs):
    """RegNetZ-C16 with EvoNorm-S0a instead of BatchNorm and activation."""
    return _create_byobnet("regnetz_c16_evos", pretrained, progress, kwargs)


@register_model
def regnetz_d32(pretrained=False, progress=True, **kwargs):
    """RegNetZ-D32: tiered stem, inverted bottlenecks (expansion 4, groups of 32) with SE."""
    return _create_byobnet("regnetz_d32", pretrained, progress, kwargs)


@register_model
def regnetz_d8(pretrained=False, progress=True, **kwargs):
    """RegNetZ-D8: tiered stem, inverted bottlenecks (expansion 4, groups of 8) with SE."""
    return _create_byobnet("regnetz_d8", pretrained, progress, kwargs)


@register_model
def regnetz_d8_evos(pretrained=False, progress=True, **kwargs):
    """RegNetZ-D8 with a deep stem and EvoNorm-S0a instead of BatchNorm and activation."""
    return _create_byobnet("regnetz_d8_evos", pretrained, progress, kwargs)


@register_model
def regnetz_e8(pretrained=False, progress=True, **kwargs):
    """RegNetZ-E8: tiered stem, wider and deeper inverted bottlenecks (groups of 8) with SE."""
    return _create_byobnet("regnetz_e8", pretrained, progress, kwargs)


@register_model
def repvgg_a0(pretrained=False, progress=True, **kwargs):
    """RepVGG-A0: 2, 4, 14, 1 three-branch blocks, widths 0.75x / 2.5x."""
    return _create_byobnet("repvgg_a0", pretrained, progress, kwargs)


@register_model
def repvgg_a1(pretrained=False, progress=True, **kwargs):
    """RepVGG-A1: 2, 4, 14, 1 three-branch blocks, widths 1x / 2.5x."""
    return _create_byobnet("repvgg_a1", pretrained, progress, kwargs)


@register_model
def repvgg_a2(pretrained=False, progress=True, **kwargs):
    """RepVGG-A2: 2, 4, 14, 1 three-branch blocks, widths 1.5x / 2.75x."""
    return _create_byobnet("repvgg_a2", pretrained, progress, kwargs)


@register_model
def repvgg_b0(pretrained=False, progress=True, **kwargs):
    """RepVGG-B0: 4, 6, 16, 1 three-branch blocks, widths 1x / 2.5x."""
    return _create_byobnet("repvgg_b0", pretrained, progress, kwargs)


@register_model
def repvgg_b1(pretrained=False, progress=True, **kwargs):
    """RepVGG-B1: 4, 6, 16, 1 three-branch blocks, widths 2x / 4x."""
    return _create_byobnet("repvgg_b1", pretrained, progress, kwargs)


@register_model
def repvgg_b1g4(pretrained=False, progress=True, **kwargs):
    """RepVGG-B1g4: RepVGG-B1 with every second block in 4 groups."""
    return _create_byobnet("repvgg_b1g4", pretrained, progress, kwargs)


@register_model
def repvgg_b2(pretrained=False, progress=True, **kwargs):
    """RepVGG-B2: 4, 6, 16, 1 three-branch blocks, widths 2.5x / 5x."""
    return _create_byobnet("repvgg_b2", pretrained, progress, kwargs)


@register_model
def repvgg_b2g4(pretrained=False, progress=True, **kwargs):
    """RepVGG-B2g4: RepVGG-B2 with every second block in 4 groups."""
    return _create_byobnet("repvgg_b2g4", pretrained, progress, kwargs)


@register_model
def repvgg_b3(pretrained=False, progress=True, **kwargs):
    """RepVGG-B3: 4, 6, 16, 1 three-branch blocks, widths 3x / 5x."""
    return _create_byobnet("repvgg_b3", pretrained, progress, kwargs)


@register_model
def repvgg_b3g4(pretrained=False, progress=True, **kwargs):
    """RepVGG-B3g4: RepVGG-B3 with every second block in 4 groups."""
    return _create_byobnet("repvgg_b3g4", pretrained, progress, kwargs)


@register_model
def repvgg_d2se(pretrained=False, progress=True, **kwargs):
    """RepVGG-D2se: 8, 14, 24, 1 three-branch blocks, widths 2.5x / 5x, squeeze-and-excitation."""
    return _create_byobnet("repvgg_d2se", pretrained, progress, kwargs)


@register_model
def resnet50_mlp(pretrained=False, progress=True, **kwargs):
    """ResNet-50 with CLIP's stem, average-pool shortcuts and anti-aliased strides, and an MLP head (pooling,
    BatchNorm, a 1024-wide ReLU layer, the classifier)."""
    return _create_byobnet("resnet50_mlp", pretrained, progress, kwargs)


@register_model
def resnet32ts(pretrained=False, progress=True, **kwargs):
    """ResNet-32-TS: tiered stem without pooling, 2, 3, 3, 2 bottlenecks, SiLU."""
    return _create_byobnet("resnet32ts", pretrained, progress, kwargs)


@register_model
def resnet33ts(pretrained=False, progress=True, **kwargs):
    """ResNet-33-TS: ResNet-32-TS with a 1x1 convolution to 1280 features before the head."""
    return _create_byobnet("resnet33ts", pretrained, progress, kwargs)


@register_model
def resnet51q(pretrained=False, progress=True, **kwargs):
    """ResNet-51-Q: a four-convolution stem, grouped bottlenecks, a depthwise last stage, SiLU."""
    return _create_byobnet("resnet51q", pretrained, progress, kwargs)


@register_model
def resnet61q(pretrained=False, progress=True, **kwargs):
    """ResNet-61-Q: a four-convolution stem, an edge block, then bottlenecks with two kxk convolutions each."""
    return _create_byobnet("resnet61q", pretrained, progress, kwargs)


@register_model
def resnext26ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-26-TS: tiered stem with max pooling, bottlenecks in groups of 32 channels, SiLU."""
    return _create_byobnet("resnext26ts", pretrained, progress, kwargs)


@register_model
def seresnet33ts(pretrained=False, progress=True, **kwargs):
    """ResNet-33-TS with squeeze-and-excitation."""
    return _create_byobnet("seresnet33ts", pretrained, progress, kwargs)


@register_model
def seresnext26ts(pretrained=False, progress=True, **kwargs):
    """ResNeXt-26-TS with squeeze-and-excitation."""
    return _create_byobnet("seresnext26ts", pretrained, progress, kwargs)


@register_model
def test_byobnet(pretrained=False, progress=True, **kwargs):
    """timm's tiny test network: one edge, dark, basic and bottleneck block (32 to 256 wide) with SE, ReLU."""
    return _create_byobnet("test_byobnet", pretrained, progress, kwargs)


@register_model
def resnet50_clip(pretrained=False, progress=True, **kwargs):
    """CLIP's modified ResNet-50 image tower: attention pooling at 224 pixels to the 1024-wide embedding."""
    return _create_clip_resnet("resnet50_clip", pretrained, progress, kwargs)


@register_model
def resnet101_clip(pretrained=False, progress=True, **kwargs):
    """CLIP's modified ResNet-101 image tower: attention pooling at 224 pixels to the 512-wide embedding."""
    return _create_clip_resnet("resnet101_clip", pretrained, progress, kwargs)


@register_model
def resnet50x4_clip(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x4 image tower (1.25x wider, deeper): attention pooling at 288 pixels to 640 wide."""
    return _create_clip_resnet("resnet50x4_clip", pretrained, progress, kwargs)


@register_model
def resnet50x16_clip(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x16 image tower (1.5x wider, deeper): attention pooling at 384 pixels to 768 wide."""
    return _create_clip_resnet("resnet50x16_clip", pretrained, progress, kwargs)


@register_model
def resnet50x64_clip(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x64 image tower (2x wider, deeper): attention pooling at 448 pixels to 1024 wide."""
    return _create_clip_resnet("resnet50x64_clip", pretrained, progress, kwargs)


@register_model
def resnet50_clip_gap(pretrained=False, progress=True, **kwargs):
    """CLIP's modified ResNet-50 trunk with average pooling instead of the attention pool."""
    return _create_byobnet("resnet50_clip_gap", pretrained, progress, kwargs)


@register_model
def resnet101_clip_gap(pretrained=False, progress=True, **kwargs):
    """CLIP's modified ResNet-101 trunk with average pooling instead of the attention pool."""
    return _create_byobnet("resnet101_clip_gap", pretrained, progress, kwargs)


@register_model
def resnet50x4_clip_gap(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x4 trunk with average pooling instead of the attention pool."""
    return _create_byobnet("resnet50x4_clip_gap", pretrained, progress, kwargs)


@register_model
def resnet50x16_clip_gap(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x16 trunk with average pooling instead of the attention pool."""
    return _create_byobnet("resnet50x16_clip_gap", pretrained, progress, kwargs)


@register_model
def resnet50x64_clip_gap(pretrained=False, progress=True, **kwargs):
    """CLIP's RN50x64 trunk with average pooling instead of the attention pool."""
    return _create_byobnet("resnet50x64_clip_gap", pretrained, progress, kwargs)
