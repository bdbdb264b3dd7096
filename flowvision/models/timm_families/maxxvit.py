"""CoAtNet (Dai et al. 2021, "CoAtNet: Marrying Convolution and Attention for All Data Sizes"), MaxViT (Tu et al.
2022, "MaxViT: Multi-Axis Vision Transformer") and timm's MaxxViT hybrids, as timm's ``maxxvit`` module builds them:
timm's own CoAtNets (``coatnet_*_rw``, with BatchNorm transformers ``bn``, MLP relative positions ``rmlp`` and ConvNeXt
blocks ``coatnext``), its MaxViTs (``maxvit_*_rw``, ``maxvit_rmlp_*``), the MaxViTs ported from TensorFlow
(``maxvit_*_tf``) and the MaxxViTs (ConvNeXt blocks in MaxViT's place of MBConv; V2 without block attention). Most
have ImageNet-1k weights; coatnet_3_rw_224 (ImageNet-12k) and maxvit_xlarge_tf_224 (ImageNet-21k) are pre-trained
classifiers of larger label sets. timm's entrypoints without published weights are registered too: the paper's
CoAtNets (``coatnet_0_224`` to ``coatnet_5_224``), coatnet_nano_cc_224 (stages opening with an MBConv before their
transformer blocks), coatnet_pico_rw_224, coatnet_rmlp_0_rw_224, coatnet_rmlp_3_rw_224, maxvit_pico_rw_256,
maxvit_tiny_rw_256, maxvit_rmlp_small_rw_256, maxvit_tiny_pm_256 (parallel MaxViT blocks: block and grid attention
side by side), maxxvit_rmlp_tiny_rw_256, maxxvitv2_rmlp_large_rw_224 and timm's tiny test_coatnet and test_maxvit.

All are hybrids of convolutions and attention on a four-stage pyramid. A two-convolution stem halves the image; each
stage starts with a stride-2 block. CoAtNet's early stages are MBConv blocks (pre-norm inverted bottlenecks with
squeeze-and-excitation), its late stages transformer blocks attending over the whole map with a learnt relative
position bias. MaxViT stacks one kind of block: an MBConv, then attention within non-overlapping windows ("block"
attention: local), then attention across a grid of pixels spaced a window apart ("grid" attention: sparse and
global), each attention followed by an MLP. The relative position bias is a table indexed by offset ('bias'), the
TensorFlow table with its one-hot lookups ('bias_tf'), or an MLP of log-spaced offsets ('mlp', timm's "rmlp").

Each model is described by a ``MaxxVitCfg`` with a ``MaxxVitConvCfg`` and a ``MaxxVitTransformerCfg`` (timm's
fields); keyword arguments named as their fields (``conv_*``, ``transformer_*`` for the sub-configurations) override
them. Model names, module names, ``state_dict`` keys (the position indices and lookups are non-persistent buffers),
initialisation and the model API follow timm, so timm's checkpoints load as they are.

A model runs at the image size it was built for (``img_size``): the windows and grids are ``img_size / 32`` (or
``transformer_window_size``), and every stage's map must divide into them; the CoAtNet transformers' position bias
covers their whole map.
"""
import math
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Optional, Tuple, Union

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import SEModule
from ._conv import AvgPool2dSame, MaxPool2dSame, create_conv2d, num_groups
from ._efficientnet_blocks import LayerScale2d
from ._layers import (BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvMlp, LayerNormAct2d, Mlp,
                      drop_path_module, get_act_layer, pair, trunc_normal_)
from ._norm import LayerNorm, LayerNorm2d
from ._pos_embed_rel import RelPosBias, RelPosBiasTf, RelPosMlp
from .convnext import NormMlpClassifierHead
from .swin_transformer import window_partition, window_reverse
from .vision_transformer import LayerScale

__all__ = []


# ---- configuration ----------------------------------------------------------------------------------------------


@dataclass
class MaxxVitTransformerCfg:
    """The attention blocks, timm's fields: heads of ``dim_head`` channels (``head_first``: the qkv projection's
    channels grouped per head, else q, k, v each holding all heads); the MLP's ``expand_ratio``; ``expand_first``: a
    CoAtNet block widening the channels in its qkv projection (else in its output projection); biases of the
    downsampling shortcut and of the attention projections; dropout of the attention weights and projections;
    ``pool_type`` of the downsampling; the relative position bias (``rel_pos_type`` 'bias', 'bias_tf', 'mlp' with
    ``rel_pos_dim`` hidden units, or none); the window and grid sizes (by default the image size divided by
    ``partition_ratio``); ``no_block_attn`` (MaxxViT-V2: grid attention only); layer scale ``init_values``; the
    activation; the norms of channels-first and channels-last maps and their epsilon."""

    dim_head: int = 32
    head_first: bool = True
    expand_ratio: float = 4.0
    expand_first: bool = True
    shortcut_bias: bool = True
    attn_bias: bool = True
    attn_drop: float = 0.0
    proj_drop: float = 0.0
    pool_type: str = "avg2"
    rel_pos_type: str = "bias"
    rel_pos_dim: int = 512
    partition_ratio: int = 32
    window_size: Optional[Tuple[int, int]] = None
    grid_size: Optional[Tuple[int, int]] = None
    no_block_attn: bool = False
    init_values: Optional[float] = None
    act_layer: str = "gelu"
    norm_layer: str = "layernorm2d"
    norm_layer_cl: str = "layernorm"
    norm_eps: float = 1e-6

    def __post_init__(self):
        if self.grid_size is not None:
            self.grid_size = pair(self.grid_size)
        if self.window_size is not None:
            self.window_size = pair(self.window_size)
            if self.grid_size is None:
                self.grid_size = self.window_size


@dataclass
class MaxxVitConvCfg:
    """The convolution blocks, timm's fields: ``block_type`` 'mbconv' or 'convnext'; the expansion ratio, applied to
    the output (``expand_output``) or input channels; the depthwise kernel (MBConv) and ``group_size`` (1:
    depthwise); an activation after the pre-norm; biases of the shortcut and last 1x1 convolution; ``stride_mode``:
    where the block strides ('dw': its depthwise convolution, '1x1': its first convolution, 'pool': a pooling
    first, of ``downsample_pool_type``); ``pool_type`` of the shortcut; ``padding`` ('' or TensorFlow's 'same');
    squeeze-and-excitation (``attn_layer`` 'se' or none, ``attn_act_layer``, ``attn_ratio`` of the output channels,
    ``attn_early``: before the second norm); ConvNeXt's layer scale ``init_values``; the activation and the norm
    (BatchNorm for MBConv, LayerNorm for ConvNeXt by default) and its epsilon (1e-5 and 1e-6 by default)."""

    block_type: str = "mbconv"
    expand_ratio: float = 4.0
    expand_output: bool = True
    kernel_size: int = 3
    group_size: int = 1
    pre_norm_act: bool = False
    output_bias: bool = True
    stride_mode: str = "dw"
    pool_type: str = "avg2"
    downsample_pool_type: str = "avg2"
    padding: str = ""
    attn_early: bool = False
    attn_layer: str = "se"
    attn_act_layer: str = "silu"
    attn_ratio: float = 0.25
    init_values: Optional[float] = 1e-6
    act_layer: str = "gelu"
    norm_layer: str = ""
    norm_eps: Optional[float] = None

    def __post_init__(self):
        if self.block_type not in ("mbconv", "convnext"):
            raise ValueError(f"unknown conv block_type '{self.block_type}': expected 'mbconv' or 'convnext'")
        use_mbconv = self.block_type == "mbconv"
        if not self.norm_layer:
            self.norm_layer = "batchnorm2d" if use_mbconv else "layernorm2d"
        if self.norm_eps is None:
            self.norm_eps = 1e-5 if use_mbconv else 1e-6
        self.downsample_pool_type = self.downsample_pool_type or self.pool_type


@dataclass
class MaxxVitCfg:
    """A model, timm's fields: the stages' widths (``embed_dim``) and ``depths``; their blocks (``block_type`` per
    stage: 'C' convolution, 'T' transformer, 'M' MaxViT, 'PM' parallel MaxViT; a tuple for a stage mixing them, its
    last kind repeated); the stem's widths and bias; the block configurations; ``head_hidden_size`` (a head that
    pools, normalises and has a tanh hidden layer, else a final norm and a plain head); ``weight_init`` ('vit_eff',
    'normal', 'trunc_normal', 'xavier_normal', or '' for the layers' defaults)."""

    embed_dim: Tuple[int, ...] = (96, 192, 384, 768)
    depths: Tuple[int, ...] = (2, 3, 5, 2)
    block_type: Tuple[Union[str, Tuple[str, ...]], ...] = ("C", "C", "T", "T")
    stem_width: Union[int, Tuple[int, int]] = 64
    stem_bias: bool = False
    conv_cfg: MaxxVitConvCfg = field(default_factory=MaxxVitConvCfg)
    transformer_cfg: MaxxVitTransformerCfg = field(default_factory=MaxxVitTransformerCfg)
    head_hidden_size: Optional[int] = None
    weight_init: str = "vit_eff"


def _overlay_kwargs(cfg, **kwargs):
    """``cfg`` with fields replaced by keyword arguments: ``transformer_<field>`` and ``conv_<field>`` replace those
    of the block configurations, other names the model configuration's."""
    transformer_kwargs = {}
    conv_kwargs = {}
    base_kwargs = {}
    for key, value in kwargs.items():
        if key.startswith("transformer_"):
            transformer_kwargs[key[len("transformer_"):]] = value
        elif key.startswith("conv_"):
            conv_kwargs[key[len("conv_"):]] = value
        else:
            base_kwargs[key] = value
    transformer_cfg = replace(cfg.transformer_cfg, **transformer_kwargs)
    conv_cfg = replace(cfg.conv_cfg, **conv_kwargs)
    return replace(cfg, transformer_cfg=transformer_cfg, conv_cfg=conv_cfg, **base_kwargs)


def _with_partition_size(cfg, img_size):
    """The transformer configuration with its window and grid sizes: as given, or the image size divided by the
    partition ratio (one window of the last stage's map at the default ratio 32)."""
    if cfg.window_size is not None:
        return cfg
    partition_size = (img_size[0] // cfg.partition_ratio, img_size[1] // cfg.partition_ratio)
    return replace(cfg, window_size=partition_size, grid_size=partition_size)


# ---- layers by name ---------------------------------------------------------------------------------------------


_NORM_LAYERS = {"batchnorm2d": nn.BatchNorm2d, "layernorm2d": LayerNorm2d, "layernorm": LayerNorm}
_NORM_ACT_LAYERS = {"batchnorm2d": BatchNormAct2d, "layernorm2d": LayerNormAct2d}


def _norm_layer(name, eps):
    """A norm class by timm's name ('batchnorm2d', 'layernorm2d' or 'layernorm'), with epsilon ``eps``."""
    if name not in _NORM_LAYERS:
        raise ValueError(f"unknown norm_layer '{name}': expected one of {sorted(_NORM_LAYERS)}")
    return partial(_NORM_LAYERS[name], eps=eps)


def _norm_act_layer(name, act_layer, eps):
    """A norm-and-activation class by the norm's timm name ('batchnorm2d' or 'layernorm2d'), with the activation
    ``act_layer`` (a name; built in place, as timm's) and epsilon ``eps``."""
    if name not in _NORM_ACT_LAYERS:
        raise ValueError(f"unknown conv norm_layer '{name}': expected one of {sorted(_NORM_ACT_LAYERS)}")
    return partial(_NORM_ACT_LAYERS[name], eps=eps, act_layer=get_act_layer(act_layer), inplace=True)


def _create_pool(pool_type, padding):
    """The stride-2 pooling of a downsampling: 'max' / 'avg' (3x3, padded by 1; the average over the pixels inside)
    or 'max2' / 'avg2' (2x2), padded as ``padding`` says ('' or TensorFlow's 'same')."""
    if pool_type not in ("max", "max2", "avg", "avg2"):
        raise ValueError(f"unknown pool_type '{pool_type}': expected 'max', 'max2', 'avg' or 'avg2'")
    if padding not in ("", "same"):
        raise ValueError(f"unknown padding '{padding}': expected '' or 'same'")
    kernel_size = 3 if pool_type in ("max", "avg") else 2
    if padding == "same":
        if pool_type.startswith("max"):
            return MaxPool2dSame(kernel_size, 2)
        return AvgPool2dSame(kernel_size, 2, count_include_pad=pool_type == "avg2")
    if pool_type == "max":
        return nn.MaxPool2d(3, stride=2, padding=1)
    if pool_type == "max2":
        return nn.MaxPool2d(2, stride=2, padding=0)
    if pool_type == "avg":
        return nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)
    return nn.AvgPool2d(2, stride=2, padding=0)


class Downsample2d(nn.Module):
    """Halves the map by pooling (``pool``, of ``pool_type``), then widens it to ``dim_out`` channels with a 1x1
    convolution (``expand``; an identity when the width stays)."""

    def __init__(self, dim, dim_out, pool_type="avg2", padding="", bias=True):
        super().__init__()
        self.pool = _create_pool(pool_type, padding)
        self.expand = nn.Conv2d(dim, dim_out, 1, bias=bias) if dim != dim_out else nn.Identity()

    def forward(self, x):
        x = self.pool(x)
        x = self.expand(x)
        return x


# ---- initialisation ---------------------------------------------------------------------------------------------


_WEIGHT_INITS = ("", "normal", "trunc_normal", "xavier_normal", "vit_eff")


def _init_by_shared_scheme(module, scheme):
    """The weight inits that convolution and attention blocks share: 'normal' (std 0.02), 'trunc_normal'
    (TensorFlow's: a unit normal truncated to [-2, 2], times 0.02), 'xavier_normal'; biases zero. Returns whether
    ``scheme`` was one of them."""
    if scheme == "normal":
        nn.init.normal_(module.weight, std=0.02)
    elif scheme == "trunc_normal":
        trunc_normal_(module.weight, std=1.0)
        with torch.no_grad():
            module.weight.mul_(0.02)
    elif scheme == "xavier_normal":
        nn.init.xavier_normal_(module.weight)
    else:
        return False
    if module.bias is not None:
        nn.init.zeros_(module.bias)
    return True


def _init_conv(module, scheme=""):
    """timm's init of a convolution block's (or the stem's) convolutions, in module order: a shared scheme, else
    EfficientNet's: N(0, 2 / fan_out), zero biases."""
    for m in module.modules():
        if isinstance(m, nn.Conv2d) and not _init_by_shared_scheme(m, scheme):
            fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels // m.groups
            nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_out))
            if m.bias is not None:
                nn.init.zeros_(m.bias)


def _init_transformer(module, scheme=""):
    """timm's init of an attention block's convolutions and linear layers, in module order: a shared scheme, else
    ViT's: Xavier-uniform weights, zero biases but N(0, (1e-6)^2) ones in MLPs (the position bias's too)."""
    for name, m in module.named_modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)) and not _init_by_shared_scheme(m, scheme):
            nn.init.xavier_uniform_(m.weight)
            if m.bias is not None and "mlp" in name:
                nn.init.normal_(m.bias, std=1e-6)
            elif m.bias is not None:
                nn.init.zeros_(m.bias)


def _modules_children_first(module):
    """Every submodule of ``module`` (not itself), each after its own submodules: the order timm initialises in."""
    for child in module.children():
        yield from _modules_children_first(child)
        yield child


# ---- relative position bias -------------------------------------------------------------------------------------


def _rel_pos_layer(cfg, window_size):
    """The relative position bias that ``cfg.rel_pos_type`` names for ``window_size`` windows, as a class taking
    ``num_heads``; None for another type (no bias)."""
    if cfg.rel_pos_type == "mlp":
        return partial(RelPosMlp, window_size, hidden_dim=cfg.rel_pos_dim, placeholders=False)
    if cfg.rel_pos_type == "bias":
        return partial(RelPosBias, window_size)
    if cfg.rel_pos_type == "bias_tf":
        return partial(RelPosBiasTf, window_size)
    return None


# ---- attention --------------------------------------------------------------------------------------------------


def _attend(module, q, k, v):
    """Scaled dot-product attention of (..., tokens, dim_head) heads, with ``module``'s relative position bias and its
    attention dropout in training."""
    bias = module.rel_pos.get_bias() if module.rel_pos is not None else None
    dropout_p = module.attn_drop.p if module.training else 0.0
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p)


class Attention2d(nn.Module):
    """Multi-head self-attention over all positions of an (N, C, H, W) map, with 1x1 convolutions for the qkv
    (``qkv``) and output (``proj``) projections: CoAtNet's attention. The heads are ``dim_head`` wide and span
    ``dim_out`` channels (``expand_first``: the qkv projection widens) or ``dim`` (the output projection widens);
    ``rel_pos_cls`` builds the relative position bias (for the whole map, whose size it fixes)."""

    def __init__(self, dim, dim_out=None, dim_head=32, bias=True, expand_first=True, head_first=True,
                 rel_pos_cls=None, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        dim_out = dim_out or dim
        dim_attn = dim_out if expand_first else dim
        self.num_heads = dim_attn // dim_head
        self.dim_head = dim_head
        self.head_first = head_first
        self.qkv = nn.Conv2d(dim, dim_attn * 3, 1, bias=bias)
        self.rel_pos = rel_pos_cls(num_heads=self.num_heads) if rel_pos_cls else None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Conv2d(dim_attn, dim_out, 1, bias=bias)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, _, height, width = x.shape
        if self.rel_pos is not None and (height, width) != tuple(self.rel_pos.window_size):
            raise ValueError(f"the attention's position bias is for {self.rel_pos.window_size[0]}x"
                             f"{self.rel_pos.window_size[1]} maps, got {height}x{width}: build the model for "
                             f"this image size (img_size)")
        if self.head_first:
            q, k, v = self.qkv(x).view(batch, self.num_heads, self.dim_head * 3, -1).chunk(3, dim=2)
        else:
            q, k, v = self.qkv(x).reshape(batch, 3, self.num_heads, self.dim_head, -1).unbind(1)
        x = _attend(self, q.transpose(-1, -2), k.transpose(-1, -2), v.transpose(-1, -2))
        x = x.transpose(-1, -2).reshape(batch, -1, height, width)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class AttentionCl(nn.Module):
    """Multi-head self-attention over the tokens of channels-last (N, ..., C) inputs (MaxViT's windows and grids),
    with linear qkv (``qkv``) and output (``proj``) projections and ``dim_head`` wide heads; ``head_first``: the qkv
    channels are grouped per head (q, k, v of a head together), else q, k and v each hold all heads (TensorFlow's
    layout). ``rel_pos_cls`` builds the relative position bias."""

    def __init__(self, dim, dim_out=None, dim_head=32, bias=True, expand_first=True, head_first=True,
                 rel_pos_cls=None, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        dim_out = dim_out or dim
        dim_attn = dim_out if expand_first and dim_out > dim else dim
        if dim_attn % dim_head:
            raise ValueError(f"the attention width ({dim_attn}) must be a multiple of dim_head ({dim_head})")
        self.num_heads = dim_attn // dim_head
        self.dim_head = dim_head
        self.head_first = head_first
        self.qkv = nn.Linear(dim, dim_attn * 3, bias=bias)
        self.rel_pos = rel_pos_cls(num_heads=self.num_heads) if rel_pos_cls else None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim_attn, dim_out, bias=bias)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch = x.shape[0]
        token_shape = tuple(x.shape[:-1])
        if self.head_first:
            qkv = self.qkv(x).view(batch, -1, self.num_heads, self.dim_head * 3).transpose(1, 2)
            q, k, v = qkv.chunk(3, dim=3)
        else:
            qkv = self.qkv(x).reshape(batch, -1, 3, self.num_heads, self.dim_head).transpose(1, 3)
            q, k, v = qkv.unbind(2)
        x = _attend(self, q, k, v)
        x = x.transpose(1, 2).reshape(token_shape + (-1,))
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


# ---- blocks -----------------------------------------------------------------------------------------------------


def _stride_mode(stride_mode, allowed):
    """``stride_mode`` checked against the ``allowed`` ones."""
    if stride_mode not in allowed:
        raise ValueError(f"unknown stride_mode '{stride_mode}': expected one of {allowed}")
    return stride_mode


class MbConvBlock(nn.Module):
    """The pre-norm MBConv block: a norm (``pre_norm``, with the activation if ``cfg.pre_norm_act``), a 1x1
    expansion (``conv1_1x1``, ``norm1``), a depthwise (or grouped) kxk convolution (``conv2_kxk``, ``norm2``) with
    squeeze-and-excitation (``se``, or ``se_early`` before ``norm2``) and a 1x1 projection (``conv3_1x1``), added to
    the shortcut (pooled and widened at stride 2) after stochastic depth. ``cfg`` is a ``MaxxVitConvCfg``."""

    def __init__(self, in_chs, out_chs, stride=1, cfg=MaxxVitConvCfg(), drop_path=0.0):
        super().__init__()
        norm_act_layer = _norm_act_layer(cfg.norm_layer, cfg.act_layer, cfg.norm_eps)
        mid_chs = _make_divisible((out_chs if cfg.expand_output else in_chs) * cfg.expand_ratio, 8)
        groups = num_groups(cfg.group_size, mid_chs)
        stride_mode = _stride_mode(cfg.stride_mode, ("pool", "1x1", "dw"))
        stride_pool = stride if stride_mode == "pool" else 1
        stride_1x1 = stride if stride_mode == "1x1" else 1
        stride_dw = stride if stride_mode == "dw" else 1
        if stride == 2:
            self.shortcut = Downsample2d(in_chs, out_chs, cfg.pool_type, cfg.padding, bias=cfg.output_bias)
        else:
            self.shortcut = nn.Identity()
        self.pre_norm = norm_act_layer(in_chs, apply_act=cfg.pre_norm_act)
        if stride_pool > 1:
            self.down = Downsample2d(in_chs, in_chs, cfg.downsample_pool_type, cfg.padding)
        else:
            self.down = nn.Identity()
        self.conv1_1x1 = create_conv2d(in_chs, mid_chs, 1, stride=stride_1x1)
        self.norm1 = norm_act_layer(mid_chs)
        self.conv2_kxk = create_conv2d(mid_chs, mid_chs, cfg.kernel_size, stride=stride_dw, groups=groups,
                                       pad_type=cfg.padding)
        se_channels = int(cfg.attn_ratio * (out_chs if cfg.expand_output else mid_chs))
        if cfg.attn_early:
            self.se_early = self._squeeze_excite(cfg, mid_chs, se_channels)
            self.norm2 = norm_act_layer(mid_chs)
            self.se = None
        else:
            self.se_early = None
            self.norm2 = norm_act_layer(mid_chs)
            self.se = self._squeeze_excite(cfg, mid_chs, se_channels)
        self.conv3_1x1 = create_conv2d(mid_chs, out_chs, 1, bias=cfg.output_bias)
        self.drop_path = drop_path_module(drop_path)

    @staticmethod
    def _squeeze_excite(cfg, channels, rd_channels):
        """Squeeze-and-excitation over ``channels`` through ``rd_channels`` (``cfg.attn_layer`` 'se'), or None."""
        if not cfg.attn_layer:
            return None
        if cfg.attn_layer != "se":
            raise ValueError(f"unknown conv attn_layer '{cfg.attn_layer}': expected 'se' or none")
        return SEModule(channels, rd_channels=rd_channels, act_layer=cfg.attn_act_layer)

    def init_weights(self, scheme=""):
        """timm's init of the block's convolutions (see ``_init_conv``)."""
        _init_conv(self, scheme)

    def forward(self, x):
        shortcut = self.shortcut(x)
        x = self.pre_norm(x)
        x = self.down(x)
        x = self.conv1_1x1(x)
        x = self.norm1(x)
        x = self.conv2_kxk(x)
        if self.se_early is not None:
            x = self.se_early(x)
        x = self.norm2(x)
        if self.se is not None:
            x = self.se(x)
        x = self.conv3_1x1(x)
        x = self.drop_path(x) + shortcut
        return x


class ConvNeXtBlock(nn.Module):
    """The ConvNeXt block of the MaxxViTs: a 7x7 depthwise convolution (``conv_dw``, to ``out_chs``, striding
    unless ``cfg.stride_mode`` is 'pool': then a pooling ``down`` first), a norm, a 1x1-convolution MLP and a layer
    scale (``ls``, from ``cfg.init_values``), added to the shortcut (pooled and widened at stride 2, a 1x1
    convolution where only the width changes) after stochastic depth."""

    def __init__(self, in_chs, out_chs=None, kernel_size=7, stride=1, cfg=MaxxVitConvCfg(), drop_path=0.0):
        super().__init__()
        out_chs = out_chs or in_chs
        act_layer = get_act_layer(cfg.act_layer)
        norm_layer = _norm_layer(cfg.norm_layer, cfg.norm_eps)
        stride_mode = _stride_mode(cfg.stride_mode, ("pool", "dw"))
        if stride == 2:
            self.shortcut = Downsample2d(in_chs, out_chs)
        elif in_chs != out_chs:
            self.shortcut = nn.Conv2d(in_chs, out_chs, kernel_size=1, bias=cfg.output_bias)
        else:
            self.shortcut = nn.Identity()
        stride_pool = stride if stride_mode == "pool" else 1
        stride_dw = stride if stride_mode == "dw" else 1
        if stride_pool == 2:
            self.down = Downsample2d(in_chs, in_chs, pool_type=cfg.downsample_pool_type)
        else:
            self.down = nn.Identity()
        self.conv_dw = create_conv2d(in_chs, out_chs, kernel_size, stride=stride_dw, groups=in_chs,
                                     bias=cfg.output_bias)
        self.norm = norm_layer(out_chs)
        self.mlp = ConvMlp(out_chs, int(cfg.expand_ratio * out_chs), act_layer=act_layer, bias=cfg.output_bias,
                           norm_placeholder=False)
        self.ls = LayerScale2d(out_chs, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = self.shortcut(x)
        x = self.down(x)
        x = self.conv_dw(x)
        x = self.norm(x)
        x = self.mlp(x)
        x = self.ls(x)
        x = self.drop_path(x) + shortcut
        return x


def _conv_block(cfg):
    """The convolution block class ``cfg.block_type`` names."""
    return ConvNeXtBlock if cfg.block_type == "convnext" else MbConvBlock


class TransformerBlock2d(nn.Module):
    """CoAtNet's transformer block on (N, C, H, W) maps: pre-norm attention over the whole map (``norm1``,
    ``attn``) and a pre-norm 1x1-convolution MLP (``norm2``, ``mlp``), each residual with an optional layer scale
    and stochastic depth. At stride 2 the normalised input is pooled before the attention (``norm1.down``) and the
    shortcut pooled and widened. ``cfg`` is a ``MaxxVitTransformerCfg``."""

    def __init__(self, dim, dim_out, stride=1, rel_pos_cls=None, cfg=MaxxVitTransformerCfg(), drop_path=0.0):
        super().__init__()
        norm_layer = _norm_layer(cfg.norm_layer, cfg.norm_eps)
        act_layer = get_act_layer(cfg.act_layer)
        if stride == 2:
            self.shortcut = Downsample2d(dim, dim_out, pool_type=cfg.pool_type, bias=cfg.shortcut_bias)
            self.norm1 = nn.Sequential(OrderedDict([
                ("norm", norm_layer(dim)),
                ("down", Downsample2d(dim, dim, pool_type=cfg.pool_type)),
            ]))
        else:
            if dim != dim_out:
                raise ValueError(f"a stride-1 transformer block keeps its width, got {dim} -> {dim_out}")
            self.shortcut = nn.Identity()
            self.norm1 = norm_layer(dim)
        self.attn = Attention2d(dim, dim_out, dim_head=cfg.dim_head, bias=cfg.attn_bias, expand_first=cfg.expand_first,
                                rel_pos_cls=rel_pos_cls, attn_drop=cfg.attn_drop, proj_drop=cfg.proj_drop)
        self.ls1 = LayerScale2d(dim_out, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim_out)
        self.mlp = ConvMlp(dim_out, int(dim_out * cfg.expand_ratio), act_layer=act_layer, drop=cfg.proj_drop,
                           norm_placeholder=False)
        self.ls2 = LayerScale2d(dim_out, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def init_weights(self, scheme=""):
        """timm's init of the block's convolutions (see ``_init_transformer``)."""
        _init_transformer(self, scheme)

    def forward(self, x):
        x = self.shortcut(x) + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


def _check_partition(height, width, partition_size, kind):
    """Raise unless a ``height`` x ``width`` map divides into ``partition_size`` windows or grids."""
    if height % partition_size[0] or width % partition_size[1]:
        raise ValueError(f"a {height}x{width} map does not divide into a {partition_size[0]}x{partition_size[1]} "
                         f"{kind}: the map sizes must be multiples of the window and grid sizes (img_size / 32)")


def grid_partition(x, grid_size):
    """(N, H, W, C) maps as (N * H / gh * W / gw, gh, gw, C) grids: each grid takes the pixels spaced (H / gh,
    W / gw) apart, so it spans the whole map."""
    batch, height, width, channels = x.shape
    x = x.view(batch, grid_size[0], height // grid_size[0], grid_size[1], width // grid_size[1], channels)
    return x.permute(0, 2, 4, 1, 3, 5).reshape(-1, grid_size[0], grid_size[1], channels)


def grid_reverse(grids, grid_size, height, width):
    """The inverse of ``grid_partition``: grids back to (N, height, width, C) maps."""
    channels = grids.shape[-1]
    x = grids.view(-1, height // grid_size[0], width // grid_size[1], grid_size[0], grid_size[1], channels)
    return x.permute(0, 3, 1, 4, 2, 5).reshape(-1, height, width, channels)


class PartitionAttentionCl(nn.Module):
    """MaxViT's attention on channels-last (N, H, W, C) maps: pre-norm attention within each window
    (``partition_type`` 'block': local) or each grid ('grid': dilated, global), then a pre-norm MLP, each residual
    with an optional layer scale and stochastic depth. ``cfg`` is a ``MaxxVitTransformerCfg`` with its window and
    grid sizes."""

    def __init__(self, dim, partition_type="block", cfg=MaxxVitTransformerCfg(), drop_path=0.0):
        super().__init__()
        norm_layer = _norm_layer(cfg.norm_layer_cl, cfg.norm_eps)
        act_layer = get_act_layer(cfg.act_layer)
        self.partition_block = partition_type == "block"
        self.partition_size = pair(cfg.window_size if self.partition_block else cfg.grid_size)
        if min(self.partition_size) < 1:
            raise ValueError(f"the {partition_type} size must be positive, got {self.partition_size}: a larger "
                             f"img_size or a smaller partition_ratio")
        rel_pos_cls = _rel_pos_layer(cfg, self.partition_size)
        self.norm1 = norm_layer(dim)
        self.attn = AttentionCl(dim, dim, dim_head=cfg.dim_head, bias=cfg.attn_bias, head_first=cfg.head_first,
                                rel_pos_cls=rel_pos_cls, attn_drop=cfg.attn_drop, proj_drop=cfg.proj_drop)
        self.ls1 = LayerScale(dim, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * cfg.expand_ratio), act_layer=act_layer, drop=cfg.proj_drop,
                       norm_placeholder=False)
        self.ls2 = LayerScale(dim, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def _partition_attn(self, x):
        """Attention within each window or grid of the (N, H, W, C) map ``x``."""
        height, width = x.shape[1:3]
        _check_partition(height, width, self.partition_size, "window" if self.partition_block else "grid")
        if self.partition_block:
            partitioned = window_partition(x, self.partition_size)
        else:
            partitioned = grid_partition(x, self.partition_size)
        partitioned = self.attn(partitioned)
        if self.partition_block:
            return window_reverse(partitioned, self.partition_size, height, width)
        return grid_reverse(partitioned, self.partition_size, height, width)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self._partition_attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class MaxxVitBlock(nn.Module):
    """The MaxViT block: a convolution block (``conv``: MBConv, or ConvNeXt in the MaxxViTs), then block attention
    (``attn_block``; none with ``no_block_attn``) and grid attention (``attn_grid``) on the channels-last map."""

    def __init__(self, dim, dim_out, stride=1, conv_cfg=MaxxVitConvCfg(), transformer_cfg=MaxxVitTransformerCfg(),
                 drop_path=0.0):
        super().__init__()
        self.conv = _conv_block(conv_cfg)(dim, dim_out, stride=stride, cfg=conv_cfg, drop_path=drop_path)
        attn_kwargs = dict(cfg=transformer_cfg, drop_path=drop_path)
        if transformer_cfg.no_block_attn:
            self.attn_block = None
        else:
            self.attn_block = PartitionAttentionCl(dim_out, "block", **attn_kwargs)
        self.attn_grid = PartitionAttentionCl(dim_out, "grid", **attn_kwargs)

    def init_weights(self, scheme=""):
        """timm's init: the attention blocks' layers (see ``_init_transformer``), then the convolution block's
        (``_init_conv``)."""
        if self.attn_block is not None:
            _init_transformer(self.attn_block, scheme)
        _init_transformer(self.attn_grid, scheme)
        _init_conv(self.conv, scheme)

    def forward(self, x):
        x = self.conv(x)
        x = x.permute(0, 2, 3, 1)
        if self.attn_block is not None:
            x = self.attn_block(x)
        x = self.attn_grid(x)
        x = x.permute(0, 3, 1, 2)
        return x


class ParallelPartitionAttention(nn.Module):
    """timm's experimental parallel MaxViT attention on channels-last (N, H, W, C) maps: after one pre-norm, block
    attention within windows (``attn_block``) and grid attention across grids (``attn_grid``) each attend over all
    ``dim`` channels and project to half of them; their outputs, concatenated, form the residual (with an optional
    layer scale and stochastic depth), then one pre-norm MLP follows. The window and grid sizes must be equal."""

    def __init__(self, dim, cfg=MaxxVitTransformerCfg(), drop_path=0.0):
        super().__init__()
        if dim % 2:
            raise ValueError(f"parallel attention splits its {dim} channels in halves: the width must be even")
        if cfg.window_size != cfg.grid_size:
            raise ValueError(f"parallel attention needs equal window and grid sizes, got {cfg.window_size} and "
                             f"{cfg.grid_size}")
        norm_layer = _norm_layer(cfg.norm_layer_cl, cfg.norm_eps)
        act_layer = get_act_layer(cfg.act_layer)
        self.partition_size = pair(cfg.window_size)
        if min(self.partition_size) < 1:
            raise ValueError(f"the window and grid size must be positive, got {self.partition_size}: a larger "
                             f"img_size or a smaller partition_ratio")
        rel_pos_cls = _rel_pos_layer(cfg, self.partition_size)
        attn_kwargs = dict(dim_head=cfg.dim_head, bias=cfg.attn_bias, head_first=cfg.head_first,
                           rel_pos_cls=rel_pos_cls, attn_drop=cfg.attn_drop, proj_drop=cfg.proj_drop)
        self.norm1 = norm_layer(dim)
        self.attn_block = AttentionCl(dim, dim // 2, **attn_kwargs)
        self.attn_grid = AttentionCl(dim, dim // 2, **attn_kwargs)
        self.ls1 = LayerScale(dim, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * cfg.expand_ratio), act_layer=act_layer, drop=cfg.proj_drop,
                       norm_placeholder=False)
        self.ls2 = LayerScale(dim, cfg.init_values) if cfg.init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def _partition_attn(self, x):
        """Block and grid attention of the (N, H, W, C) map ``x``, concatenated along the channels."""
        height, width = x.shape[1:3]
        _check_partition(height, width, self.partition_size, "window and grid")
        x_window = self.attn_block(window_partition(x, self.partition_size))
        x_window = window_reverse(x_window, self.partition_size, height, width)
        x_grid = self.attn_grid(grid_partition(x, self.partition_size))
        x_grid = grid_reverse(x_grid, self.partition_size, height, width)
        return torch.cat([x_window, x_grid], dim=-1)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self._partition_attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class ParallelMaxxVitBlock(nn.Module):
    """timm's experimental parallel MaxViT block ('PM'): ``num_conv`` convolution blocks (``conv``; the first
    striding and widening; as in timm, the blocks after the second are the second block repeated, sharing its
    weights), then the parallel block and grid attention (``attn``) on the channels-last map."""

    def __init__(self, dim, dim_out, stride=1, num_conv=2, conv_cfg=MaxxVitConvCfg(),
                 transformer_cfg=MaxxVitTransformerCfg(), drop_path=0.0):
        super().__init__()
        conv_cls = _conv_block(conv_cfg)
        first_conv = conv_cls(dim, dim_out, stride=stride, cfg=conv_cfg, drop_path=drop_path)
        if num_conv > 1:
            later_conv = conv_cls(dim_out, dim_out, cfg=conv_cfg, drop_path=drop_path)
            self.conv = nn.Sequential(first_conv, *[later_conv] * (num_conv - 1))
        else:
            self.conv = first_conv
        self.attn = ParallelPartitionAttention(dim_out, cfg=transformer_cfg, drop_path=drop_path)

    def init_weights(self, scheme=""):
        """timm's init: the attention's layers (see ``_init_transformer``), then the convolution blocks'
        (``_init_conv``)."""
        _init_transformer(self.attn, scheme)
        _init_conv(self.conv, scheme)

    def forward(self, x):
        x = self.conv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.attn(x)
        x = x.permute(0, 3, 1, 2)
        return x


def _extend(block_types, depth):
    """One block type per block: a stage's type (or tuple of types) with its last type repeated up to ``depth``."""
    block_types = tuple(block_types) if isinstance(block_types, (tuple, list)) else (block_types,)
    return block_types[:depth] + block_types[-1:] * (depth - len(block_types))


class MaxxVitStage(nn.Module):
    """A stage: ``depth`` blocks (``blocks``) of ``block_types`` ('C', 'T', 'M' or 'PM', see ``MaxxVitCfg``), the
    first striding by ``stride`` and widening to ``out_chs``. ``feat_size`` is the stage's map size, which the
    transformer blocks' position bias covers; ``drop_path`` the blocks' stochastic depth rates."""

    def __init__(self, in_chs, out_chs, stride=2, depth=4, feat_size=(14, 14), block_types="C",
                 transformer_cfg=MaxxVitTransformerCfg(), conv_cfg=MaxxVitConvCfg(), drop_path=0.0):
        super().__init__()
        drop_path = drop_path if isinstance(drop_path, (tuple, list)) else [drop_path] * depth
        blocks = []
        for i, block_type in enumerate(_extend(block_types, depth)):
            block_stride = stride if i == 0 else 1
            if block_type == "C":
                blocks.append(_conv_block(conv_cfg)(in_chs, out_chs, stride=block_stride, cfg=conv_cfg,
                                                    drop_path=drop_path[i]))
            elif block_type == "T":
                blocks.append(TransformerBlock2d(in_chs, out_chs, stride=block_stride,
                                                 rel_pos_cls=_rel_pos_layer(transformer_cfg, feat_size),
                                                 cfg=transformer_cfg, drop_path=drop_path[i]))
            elif block_type == "M":
                blocks.append(MaxxVitBlock(in_chs, out_chs, stride=block_stride, conv_cfg=conv_cfg,
                                           transformer_cfg=transformer_cfg, drop_path=drop_path[i]))
            elif block_type == "PM":
                blocks.append(ParallelMaxxVitBlock(in_chs, out_chs, stride=block_stride, conv_cfg=conv_cfg,
                                                   transformer_cfg=transformer_cfg, drop_path=drop_path[i]))
            else:
                raise ValueError(f"unknown block type '{block_type}': expected 'C', 'T', 'M' or 'PM'")
            in_chs = out_chs
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)


class Stem(nn.Module):
    """Two kxk convolutions, the first halving the map, with a norm and activation between them: to ``out_chs``
    (one width for both, or a pair)."""

    def __init__(self, in_chs, out_chs, kernel_size=3, padding="", bias=False, act_layer="gelu",
                 norm_layer="batchnorm2d", norm_eps=1e-5):
        super().__init__()
        out_chs = pair(out_chs)
        norm_act_layer = _norm_act_layer(norm_layer, act_layer, norm_eps)
        self.out_chs = out_chs[-1]
        self.stride = 2
        self.conv1 = create_conv2d(in_chs, out_chs[0], kernel_size, stride=2, pad_type=padding, bias=bias)
        self.norm1 = norm_act_layer(out_chs[0])
        self.conv2 = create_conv2d(out_chs[0], out_chs[1], kernel_size, stride=1, pad_type=padding, bias=bias)

    def init_weights(self, scheme=""):
        """timm's init of the stem's convolutions (see ``_init_conv``)."""
        _init_conv(self, scheme)

    def forward(self, x):
        x = self.conv1(x)
        x = self.norm1(x)
        x = self.conv2(x)
        return x


# ---- model ------------------------------------------------------------------------------------------------------


class MaxxVit(ClassifierHeadApi, nn.Module):
    """The CoAtNet / MaxViT / MaxxViT model: a stem, four stages of ``cfg`` (a ``MaxxVitCfg``; keyword arguments
    named as its fields override them, ``conv_<field>`` and ``transformer_<field>`` those of its block
    configurations), a final norm and a head (or, with ``cfg.head_hidden_size``, a head that pools, normalises and
    applies a tanh hidden layer).

    ``img_size`` is the input size the model runs at (it sets the window and grid sizes, and the CoAtNet
    transformers' position bias). ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' (not with the hidden-layer
    head) or '' (no pooling); ``drop_rate`` is the dropout before the classifier; ``drop_path_rate`` the stochastic
    depth of the last block, rising linearly from 0 at the first; ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "stem.conv1", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfg, img_size=224, in_chans=3, num_classes=1000, global_pool="avg", drop_rate=0.0,
                 drop_path_rate=0.0, **kwargs):
        super().__init__()
        img_size = pair(img_size)
        if kwargs:
            cfg = _overlay_kwargs(cfg, **kwargs)
        if len(cfg.depths) != len(cfg.embed_dim):
            raise ValueError(f"depths {cfg.depths} and embed_dim {cfg.embed_dim} must have one value per stage")
        if cfg.weight_init not in _WEIGHT_INITS:
            raise ValueError(f"unknown weight_init '{cfg.weight_init}': expected one of {_WEIGHT_INITS}")
        transformer_cfg = _with_partition_size(cfg.transformer_cfg, img_size)
        self.img_size = img_size
        self.partition_ratio = transformer_cfg.partition_ratio
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.embed_dim = cfg.embed_dim[-1]
        self.drop_rate = drop_rate

        conv_cfg = cfg.conv_cfg
        self.stem = Stem(in_chans, cfg.stem_width, padding=conv_cfg.padding, bias=cfg.stem_bias,
                         act_layer=conv_cfg.act_layer, norm_layer=conv_cfg.norm_layer, norm_eps=conv_cfg.norm_eps)
        stride = self.stem.stride
        self.feature_info = [dict(num_chs=self.stem.out_chs, reduction=stride, module="stem")]
        feat_size = tuple(size // stride for size in img_size)
        depths = list(cfg.depths)
        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        in_chs = self.stem.out_chs
        stages = []
        for i, (out_chs, depth) in enumerate(zip(cfg.embed_dim, depths)):
            feat_size = tuple((size - 1) // 2 + 1 for size in feat_size)
            stages.append(MaxxVitStage(in_chs, out_chs, depth=depth, block_types=cfg.block_type[i],
                                       conv_cfg=conv_cfg, transformer_cfg=transformer_cfg, feat_size=feat_size,
                                       drop_path=drop_path_rates[i]))
            stride *= 2
            in_chs = out_chs
            self.feature_info.append(dict(num_chs=out_chs, reduction=stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)

        final_norm_layer = _norm_layer(cfg.transformer_cfg.norm_layer, cfg.transformer_cfg.norm_eps)
        if cfg.head_hidden_size:
            self.norm = nn.Identity()
            self.head = NormMlpClassifierHead(self.num_features, num_classes, hidden_size=cfg.head_hidden_size,
                                              pool_type=global_pool, drop_rate=drop_rate, norm_layer=final_norm_layer,
                                              act_layer=nn.Tanh)
        else:
            self.norm = final_norm_layer(self.num_features)
            self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        if cfg.weight_init:
            self._init_weights(cfg.weight_init)

    def _init_weights(self, scheme):
        """timm's init: every stem and block that has its own init (``init_weights``) applies it, children before
        parents (a MaxViT block re-initialises its convolution block after the latter did); other layers keep their
        default init."""
        for module in _modules_children_first(self):
            if hasattr(module, "init_weights"):
                module.init_weights(scheme)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given;
        ``reset_other`` also drops the hidden-layer head's norm and hidden layer."""
        head_args = {} if isinstance(self.head, ClassifierHead) else dict(reset_other=reset_other)
        super().reset_classifier(num_classes, global_pool, **head_args)

    def forward_features(self, x):
        """The normalised map after the last stage, at 1/32 of the image."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The (N, C, H, W) maps picked by ``indices`` (None: all, n: the last n, or a list) among the stem's
        output (index 0, as ``feature_info`` counts it) and each stage's, and (unless ``intermediates_only``) the
        final map, through the final norm when the last stage ran. ``norm`` applies the final norm to the last
        stage's map; ``stop_early`` skips the stages after the last one picked."""
        levels = [self.stem, *self.stages]
        return normed_stage_intermediates(x, nn.Identity(), levels, self.norm, indices, norm, stop_early,
                                          output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last feature level ``indices`` picks (the stem is level 0, stage i level
        i + 1), the final norm when asked or when stages go, and the classifier (with the hidden-layer head's norm
        and hidden layer) when asked or when stages go, the features then the last kept level's; returns the
        absolute indices."""
        take = take_indices(len(self.feature_info), indices)
        last = max(take)
        prune_end = last < len(self.stages)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        self.stages = nn.Sequential(*list(self.stages)[:last])
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "", reset_other=True)
        return take


# ---- timm's configurations --------------------------------------------------------------------------------------


def _rw_coat_cfg(stride_mode="pool", pool_type="avg2", conv_output_bias=False, conv_attn_early=False,
                 conv_attn_act_layer="relu", conv_norm_layer="", transformer_shortcut_bias=True,
                 transformer_norm_layer="layernorm2d", transformer_norm_layer_cl="layernorm", init_values=None,
                 rel_pos_type="bias", rel_pos_dim=512):
    """timm's own CoAtNet block settings (trained before the official MaxViT code): SiLU MBConvs with an activated
    pre-norm, expanding from their input width, bias-free shortcut and projection, ReLU squeeze-and-excitation;
    attention that widens in its output projection."""
    return dict(
        conv_cfg=MaxxVitConvCfg(stride_mode=stride_mode, pool_type=pool_type, pre_norm_act=True, expand_output=False,
                                output_bias=conv_output_bias, attn_early=conv_attn_early,
                                attn_act_layer=conv_attn_act_layer, act_layer="silu", norm_layer=conv_norm_layer),
        transformer_cfg=MaxxVitTransformerCfg(expand_first=False, shortcut_bias=transformer_shortcut_bias,
                                              pool_type=pool_type, init_values=init_values,
                                              norm_layer=transformer_norm_layer,
                                              norm_layer_cl=transformer_norm_layer_cl, rel_pos_type=rel_pos_type,
                                              rel_pos_dim=rel_pos_dim),
    )


def _rw_max_cfg(stride_mode="dw", pool_type="avg2", conv_output_bias=False, conv_attn_ratio=1 / 16,
                conv_norm_layer="", transformer_norm_layer="layernorm2d", transformer_norm_layer_cl="layernorm",
                window_size=None, dim_head=32, init_values=None, rel_pos_type="bias", rel_pos_dim=512):
    """timm's own MaxViT block settings: SiLU MBConvs expanding from their input width, bias-free shortcut and
    projection, a sixteenth-width squeeze-and-excitation; attention that widens in its output projection."""
    return dict(
        conv_cfg=MaxxVitConvCfg(stride_mode=stride_mode, pool_type=pool_type, expand_output=False,
                                output_bias=conv_output_bias, attn_ratio=conv_attn_ratio, act_layer="silu",
                                norm_layer=conv_norm_layer),
        transformer_cfg=MaxxVitTransformerCfg(expand_first=False, pool_type=pool_type, dim_head=dim_head,
                                              window_size=window_size, init_values=init_values,
                                              norm_layer=transformer_norm_layer,
                                              norm_layer_cl=transformer_norm_layer_cl, rel_pos_type=rel_pos_type,
                                              rel_pos_dim=rel_pos_dim),
    )


def _next_cfg(stride_mode="dw", pool_type="avg2", conv_norm_layer="layernorm2d",
              transformer_norm_layer="layernorm2d", transformer_norm_layer_cl="layernorm", window_size=None,
              no_block_attn=False, init_values=1e-6, rel_pos_type="mlp", rel_pos_dim=512):
    """timm's MaxxViT block settings: ConvNeXt blocks in MBConv's place, layer scale (``init_values``: one value, or
    one for the convolution and one for the attention blocks), MLP relative positions by default."""
    conv_init_values, transformer_init_values = pair(init_values)
    return dict(
        conv_cfg=MaxxVitConvCfg(block_type="convnext", stride_mode=stride_mode, pool_type=pool_type,
                                expand_output=False, init_values=conv_init_values, norm_layer=conv_norm_layer),
        transformer_cfg=MaxxVitTransformerCfg(expand_first=False, pool_type=pool_type, window_size=window_size,
                                              no_block_attn=no_block_attn, init_values=transformer_init_values,
                                              norm_layer=transformer_norm_layer,
                                              norm_layer_cl=transformer_norm_layer_cl, rel_pos_type=rel_pos_type,
                                              rel_pos_dim=rel_pos_dim),
    )


def _tf_cfg():
    """The TensorFlow MaxViTs' block settings: tanh-approximated GELU, TensorFlow's "same" padding, BatchNorm eps
    1e-3, LayerNorm eps 1e-5, q, k and v each holding all heads, TensorFlow's position bias."""
    return dict(
        conv_cfg=MaxxVitConvCfg(norm_eps=1e-3, act_layer="gelu_tanh", padding="same"),
        transformer_cfg=MaxxVitTransformerCfg(norm_eps=1e-5, act_layer="gelu_tanh", head_first=False,
                                              rel_pos_type="bias_tf"),
    )


_MAXVIT = ("M",) * 4

model_cfgs = dict(
    coatnet_pico_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 3, 5, 2), stem_width=(32, 64),
                               **_rw_max_cfg(conv_output_bias=True, conv_attn_ratio=0.25)),
    coatnet_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(3, 4, 6, 3), stem_width=(32, 64),
                               **_rw_max_cfg(stride_mode="pool", conv_output_bias=True, conv_attn_ratio=0.25)),
    coatnet_0_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 3, 7, 2), stem_width=(32, 64),
                            **_rw_coat_cfg(conv_attn_early=True, transformer_shortcut_bias=False)),
    coatnet_1_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), stem_width=(32, 64),
                            **_rw_coat_cfg(stride_mode="dw", conv_attn_early=True, transformer_shortcut_bias=False)),
    coatnet_2_rw=MaxxVitCfg(embed_dim=(128, 256, 512, 1024), depths=(2, 6, 14, 2), stem_width=(64, 128),
                            **_rw_coat_cfg(stride_mode="dw", conv_attn_act_layer="silu")),
    coatnet_3_rw=MaxxVitCfg(embed_dim=(192, 384, 768, 1536), depths=(2, 6, 14, 2), stem_width=(96, 192),
                            **_rw_coat_cfg(stride_mode="dw", conv_attn_act_layer="silu", init_values=1e-6)),
    coatnet_bn_0_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 3, 7, 2), stem_width=(32, 64),
                               **_rw_coat_cfg(stride_mode="dw", conv_attn_early=True, transformer_shortcut_bias=False,
                                              transformer_norm_layer="batchnorm2d")),
    coatnet_rmlp_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(3, 4, 6, 3), stem_width=(32, 64),
                                    **_rw_max_cfg(conv_output_bias=True, conv_attn_ratio=0.25, rel_pos_type="mlp",
                                                  rel_pos_dim=384)),
    coatnet_rmlp_0_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 3, 7, 2), stem_width=(32, 64),
                                 **_rw_coat_cfg(stride_mode="dw", rel_pos_type="mlp")),
    coatnet_rmlp_1_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), stem_width=(32, 64),
                                 **_rw_coat_cfg(pool_type="max", conv_attn_early=True, transformer_shortcut_bias=False,
                                                rel_pos_type="mlp", rel_pos_dim=384)),
    coatnet_rmlp_1_rw2=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), stem_width=(32, 64),
                                  **_rw_coat_cfg(stride_mode="dw", rel_pos_type="mlp", rel_pos_dim=512)),
    coatnet_rmlp_2_rw=MaxxVitCfg(embed_dim=(128, 256, 512, 1024), depths=(2, 6, 14, 2), stem_width=(64, 128),
                                 **_rw_coat_cfg(stride_mode="dw", conv_attn_act_layer="silu", init_values=1e-6,
                                                rel_pos_type="mlp")),
    coatnet_rmlp_3_rw=MaxxVitCfg(embed_dim=(192, 384, 768, 1536), depths=(2, 6, 14, 2), stem_width=(96, 192),
                                 **_rw_coat_cfg(stride_mode="dw", conv_attn_act_layer="silu", init_values=1e-6,
                                                rel_pos_type="mlp")),
    coatnet_nano_cc=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(3, 4, 6, 3), stem_width=(32, 64),
                               block_type=("C", "C", ("C", "T"), ("C", "T")), **_rw_coat_cfg()),
    coatnext_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(3, 4, 6, 3), stem_width=(32, 64),
                                weight_init="normal", **_next_cfg(rel_pos_type="bias", init_values=(1e-5, None))),
    coatnet_0=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 3, 5, 2), stem_width=64, head_hidden_size=768),
    coatnet_1=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), stem_width=64, head_hidden_size=768),
    coatnet_2=MaxxVitCfg(embed_dim=(128, 256, 512, 1024), depths=(2, 6, 14, 2), stem_width=128,
                         head_hidden_size=1024),
    coatnet_3=MaxxVitCfg(embed_dim=(192, 384, 768, 1536), depths=(2, 6, 14, 2), stem_width=192,
                         head_hidden_size=1536),
    coatnet_4=MaxxVitCfg(embed_dim=(192, 384, 768, 1536), depths=(2, 12, 28, 2), stem_width=192,
                         head_hidden_size=1536),
    coatnet_5=MaxxVitCfg(embed_dim=(256, 512, 1280, 2048), depths=(2, 12, 28, 2), stem_width=192,
                         head_hidden_size=2048),
    maxvit_pico_rw=MaxxVitCfg(embed_dim=(32, 64, 128, 256), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                              stem_width=(24, 32), **_rw_max_cfg()),
    maxvit_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(1, 2, 3, 1), block_type=_MAXVIT,
                              stem_width=(32, 64), **_rw_max_cfg()),
    maxvit_tiny_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                              stem_width=(32, 64), **_rw_max_cfg()),
    maxvit_tiny_pm=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 2, 5, 2), block_type=("PM",) * 4,
                              stem_width=(32, 64), **_rw_max_cfg()),
    maxvit_rmlp_pico_rw=MaxxVitCfg(embed_dim=(32, 64, 128, 256), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                                   stem_width=(24, 32), **_rw_max_cfg(rel_pos_type="mlp")),
    maxvit_rmlp_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(1, 2, 3, 1), block_type=_MAXVIT,
                                   stem_width=(32, 64), **_rw_max_cfg(rel_pos_type="mlp")),
    maxvit_rmlp_tiny_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                                   stem_width=(32, 64), **_rw_max_cfg(rel_pos_type="mlp")),
    maxvit_rmlp_small_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                                    stem_width=(32, 64), **_rw_max_cfg(rel_pos_type="mlp", init_values=1e-6)),
    maxvit_rmlp_base_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), block_type=_MAXVIT,
                                   stem_width=(32, 64), head_hidden_size=768, **_rw_max_cfg(rel_pos_type="mlp")),
    maxxvit_rmlp_nano_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(1, 2, 3, 1), block_type=_MAXVIT,
                                    stem_width=(32, 64), weight_init="normal", **_next_cfg()),
    maxxvit_rmlp_tiny_rw=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                                    stem_width=(32, 64), **_next_cfg()),
    maxxvit_rmlp_small_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 2, 5, 2), block_type=_MAXVIT,
                                     stem_width=(48, 96), **_next_cfg()),
    maxxvitv2_nano_rw=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(1, 2, 3, 1), block_type=_MAXVIT,
                                 stem_width=(48, 96), weight_init="normal",
                                 **_next_cfg(no_block_attn=True, rel_pos_type="bias")),
    maxxvitv2_rmlp_base_rw=MaxxVitCfg(embed_dim=(128, 256, 512, 1024), depths=(2, 6, 12, 2), block_type=_MAXVIT,
                                      stem_width=(64, 128), **_next_cfg(no_block_attn=True)),
    maxxvitv2_rmlp_large_rw=MaxxVitCfg(embed_dim=(160, 320, 640, 1280), depths=(2, 6, 16, 2), block_type=_MAXVIT,
                                       stem_width=(80, 160), head_hidden_size=1280, **_next_cfg(no_block_attn=True)),
    maxvit_tiny_tf=MaxxVitCfg(embed_dim=(64, 128, 256, 512), depths=(2, 2, 5, 2), block_type=_MAXVIT, stem_width=64,
                              stem_bias=True, head_hidden_size=512, **_tf_cfg()),
    maxvit_small_tf=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 2, 5, 2), block_type=_MAXVIT, stem_width=64,
                               stem_bias=True, head_hidden_size=768, **_tf_cfg()),
    maxvit_base_tf=MaxxVitCfg(embed_dim=(96, 192, 384, 768), depths=(2, 6, 14, 2), block_type=_MAXVIT, stem_width=64,
                              stem_bias=True, head_hidden_size=768, **_tf_cfg()),
    maxvit_large_tf=MaxxVitCfg(embed_dim=(128, 256, 512, 1024), depths=(2, 6, 14, 2), block_type=_MAXVIT,
                               stem_width=128, stem_bias=True, head_hidden_size=1024, **_tf_cfg()),
    maxvit_xlarge_tf=MaxxVitCfg(embed_dim=(192, 384, 768, 1536), depths=(2, 6, 14, 2), block_type=_MAXVIT,
                                stem_width=192, stem_bias=True, head_hidden_size=1536, **_tf_cfg()),
    test_maxvit=MaxxVitCfg(embed_dim=(32, 64, 96, 128), depths=(1, 1, 1, 1), block_type=_MAXVIT, stem_width=(16, 32),
                           **_rw_max_cfg()),
    test_coatnet=MaxxVitCfg(embed_dim=(32, 64, 96, 128), depths=(1, 1, 2, 1), stem_width=(16, 32),
                            **_rw_max_cfg(stride_mode="pool", conv_output_bias=True, conv_attn_ratio=0.25)),
)


def _create_maxxvit(variant, pretrained, progress, kwargs, img_size=None):
    """Build a registered variant: ``<config>_<image size>`` names its configuration in ``model_cfgs`` and the image
    size it runs at; a name without a size (timm's test models) is its configuration's, run at ``img_size``
    (``img_size`` in ``kwargs`` overrides either). ``features_only`` gives timm's five maps: the stem's and each
    stage's (``out_indices`` picks some, negative ones counted from the end)."""
    if img_size is None:
        cfg_name, image_size = variant.rsplit("_", 1)
        img_size = int(image_size)
    else:
        cfg_name = variant
    kwargs.setdefault("img_size", img_size)
    return build_model(MaxxVit, variant, pretrained, progress=progress, cfg=model_cfgs[cfg_name], **kwargs)


@register_model
def coatnet_nano_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-Nano (timm): widths 64-512, depths (3, 4, 6, 3), MBConv stages pooling to stride."""
    return _create_maxxvit("coatnet_nano_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_0_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-0 (timm): widths 96-768, depths (2, 3, 7, 2), early squeeze-and-excitation."""
    return _create_maxxvit("coatnet_0_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_1_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-1 (timm): widths 96-768, depths (2, 6, 14, 2), early squeeze-and-excitation."""
    return _create_maxxvit("coatnet_1_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_2_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-2 (timm): widths 128-1024, depths (2, 6, 14, 2), SiLU squeeze-and-excitation."""
    return _create_maxxvit("coatnet_2_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_3_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-3 (timm, ImageNet-12k): widths 192-1536, depths (2, 6, 14, 2), SiLU excitation, layer scales."""
    return _create_maxxvit("coatnet_3_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_bn_0_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-0 (timm) with BatchNorm in its transformer blocks."""
    return _create_maxxvit("coatnet_bn_0_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_nano_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-Nano (timm) with MLP relative positions (384 hidden units)."""
    return _create_maxxvit("coatnet_rmlp_nano_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_1_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-1 (timm) with MLP relative positions (384 hidden units) and max-pooled shortcuts."""
    return _create_maxxvit("coatnet_rmlp_1_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_1_rw2_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-1 (timm, second version) with MLP relative positions (512 hidden units)."""
    return _create_maxxvit("coatnet_rmlp_1_rw2_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_2_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-2 (timm) with MLP relative positions and layer scale."""
    return _create_maxxvit("coatnet_rmlp_2_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_2_rw_384(pretrained=False, progress=True, **kwargs):
    """CoAtNet-2 (timm) with MLP relative positions and layer scale, at 384x384."""
    return _create_maxxvit("coatnet_rmlp_2_rw_384", pretrained, progress, kwargs)


@register_model
def coatnext_nano_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNeXt-Nano (timm): CoAtNet-Nano with ConvNeXt blocks for MBConv."""
    return _create_maxxvit("coatnext_nano_rw_224", pretrained, progress, kwargs)


@register_model
def maxvit_nano_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Nano (timm): widths 64-512, depths (1, 2, 3, 1), at 256x256."""
    return _create_maxxvit("maxvit_nano_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_rw_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-Tiny (timm): widths 64-512, depths (2, 2, 5, 2)."""
    return _create_maxxvit("maxvit_tiny_rw_224", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_pico_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Pico (timm) with MLP relative positions: widths 32-256, depths (2, 2, 5, 2), at 256x256."""
    return _create_maxxvit("maxvit_rmlp_pico_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_nano_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Nano (timm) with MLP relative positions, at 256x256."""
    return _create_maxxvit("maxvit_rmlp_nano_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_tiny_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Tiny (timm) with MLP relative positions, at 256x256."""
    return _create_maxxvit("maxvit_rmlp_tiny_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_small_rw_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-Small (timm) with MLP relative positions and layer scale: widths 96-768, depths (2, 2, 5, 2)."""
    return _create_maxxvit("maxvit_rmlp_small_rw_224", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_base_rw_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-Base (timm) with MLP relative positions: widths 96-768, depths (2, 6, 14, 2), a tanh head layer."""
    return _create_maxxvit("maxvit_rmlp_base_rw_224", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_base_rw_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-Base (timm) with MLP relative positions, at 384x384."""
    return _create_maxxvit("maxvit_rmlp_base_rw_384", pretrained, progress, kwargs)


@register_model
def maxxvit_rmlp_nano_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxxViT-Nano (timm): MaxViT-Nano with ConvNeXt blocks and MLP relative positions, at 256x256."""
    return _create_maxxvit("maxxvit_rmlp_nano_rw_256", pretrained, progress, kwargs)


@register_model
def maxxvit_rmlp_small_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxxViT-Small (timm): widths 96-768, depths (2, 2, 5, 2), ConvNeXt blocks, at 256x256."""
    return _create_maxxvit("maxxvit_rmlp_small_rw_256", pretrained, progress, kwargs)


@register_model
def maxxvitv2_nano_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxxViT-V2-Nano (timm): widths 96-768, depths (1, 2, 3, 1), grid attention only, at 256x256."""
    return _create_maxxvit("maxxvitv2_nano_rw_256", pretrained, progress, kwargs)


@register_model
def maxxvitv2_rmlp_base_rw_224(pretrained=False, progress=True, **kwargs):
    """MaxxViT-V2-Base (timm): widths 128-1024, depths (2, 6, 12, 2), grid attention only, MLP positions."""
    return _create_maxxvit("maxxvitv2_rmlp_base_rw_224", pretrained, progress, kwargs)


@register_model
def maxxvitv2_rmlp_base_rw_384(pretrained=False, progress=True, **kwargs):
    """MaxxViT-V2-Base (timm), at 384x384."""
    return _create_maxxvit("maxxvitv2_rmlp_base_rw_384", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_tf_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-T (the paper's, ported from TensorFlow): widths 64-512, depths (2, 2, 5, 2)."""
    return _create_maxxvit("maxvit_tiny_tf_224", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_tf_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-T (TensorFlow's), at 384x384."""
    return _create_maxxvit("maxvit_tiny_tf_384", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_tf_512(pretrained=False, progress=True, **kwargs):
    """MaxViT-T (TensorFlow's), at 512x512."""
    return _create_maxxvit("maxvit_tiny_tf_512", pretrained, progress, kwargs)


@register_model
def maxvit_small_tf_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-S (the paper's, ported from TensorFlow): widths 96-768, depths (2, 2, 5, 2)."""
    return _create_maxxvit("maxvit_small_tf_224", pretrained, progress, kwargs)


@register_model
def maxvit_small_tf_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-S (TensorFlow's), at 384x384."""
    return _create_maxxvit("maxvit_small_tf_384", pretrained, progress, kwargs)


@register_model
def maxvit_small_tf_512(pretrained=False, progress=True, **kwargs):
    """MaxViT-S (TensorFlow's), at 512x512."""
    return _create_maxxvit("maxvit_small_tf_512", pretrained, progress, kwargs)


@register_model
def maxvit_base_tf_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-B (the paper's, ported from TensorFlow): widths 96-768, depths (2, 6, 14, 2)."""
    return _create_maxxvit("maxvit_base_tf_224", pretrained, progress, kwargs)


@register_model
def maxvit_base_tf_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-B (TensorFlow's), at 384x384."""
    return _create_maxxvit("maxvit_base_tf_384", pretrained, progress, kwargs)


@register_model
def maxvit_base_tf_512(pretrained=False, progress=True, **kwargs):
    """MaxViT-B (TensorFlow's), at 512x512."""
    return _create_maxxvit("maxvit_base_tf_512", pretrained, progress, kwargs)


@register_model
def maxvit_large_tf_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-L (the paper's, ported from TensorFlow): widths 128-1024, depths (2, 6, 14, 2)."""
    return _create_maxxvit("maxvit_large_tf_224", pretrained, progress, kwargs)


@register_model
def maxvit_large_tf_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-L (TensorFlow's), at 384x384."""
    return _create_maxxvit("maxvit_large_tf_384", pretrained, progress, kwargs)


@register_model
def maxvit_large_tf_512(pretrained=False, progress=True, **kwargs):
    """MaxViT-L (TensorFlow's), at 512x512."""
    return _create_maxxvit("maxvit_large_tf_512", pretrained, progress, kwargs)


@register_model
def maxvit_xlarge_tf_224(pretrained=False, progress=True, **kwargs):
    """MaxViT-XL (the paper's ImageNet-21k model, ported from TensorFlow): widths 192-1536, depths (2, 6, 14, 2)."""
    return _create_maxxvit("maxvit_xlarge_tf_224", pretrained, progress, kwargs)


@register_model
def maxvit_xlarge_tf_384(pretrained=False, progress=True, **kwargs):
    """MaxViT-XL (the paper's, ported from TensorFlow): widths 192-1536, depths (2, 6, 14, 2), at 384x384."""
    return _create_maxxvit("maxvit_xlarge_tf_384", pretrained, progress, kwargs)


@register_model
def maxvit_xlarge_tf_512(pretrained=False, progress=True, **kwargs):
    """MaxViT-XL (TensorFlow's), at 512x512."""
    return _create_maxxvit("maxvit_xlarge_tf_512", pretrained, progress, kwargs)


@register_model
def coatnet_pico_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-Pico (timm, no published weights): widths 64-512, depths (2, 3, 5, 2)."""
    return _create_maxxvit("coatnet_pico_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_0_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-0 (timm, no published weights) with MLP relative positions."""
    return _create_maxxvit("coatnet_rmlp_0_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_rmlp_3_rw_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-3 (timm, no published weights) with MLP relative positions and layer scale."""
    return _create_maxxvit("coatnet_rmlp_3_rw_224", pretrained, progress, kwargs)


@register_model
def coatnet_nano_cc_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-Nano (timm, no published weights) opening its last two stages with an MBConv."""
    return _create_maxxvit("coatnet_nano_cc_224", pretrained, progress, kwargs)


@register_model
def coatnet_0_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-0 (the paper's, no published weights): widths 96-768, depths (2, 3, 5, 2)."""
    return _create_maxxvit("coatnet_0_224", pretrained, progress, kwargs)


@register_model
def coatnet_1_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-1 (the paper's, no published weights): widths 96-768, depths (2, 6, 14, 2)."""
    return _create_maxxvit("coatnet_1_224", pretrained, progress, kwargs)


@register_model
def coatnet_2_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-2 (the paper's, no published weights): widths 128-1024, depths (2, 6, 14, 2)."""
    return _create_maxxvit("coatnet_2_224", pretrained, progress, kwargs)


@register_model
def coatnet_3_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-3 (the paper's, no published weights): widths 192-1536, depths (2, 6, 14, 2)."""
    return _create_maxxvit("coatnet_3_224", pretrained, progress, kwargs)


@register_model
def coatnet_4_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-4 (the paper's, no published weights): widths 192-1536, depths (2, 12, 28, 2)."""
    return _create_maxxvit("coatnet_4_224", pretrained, progress, kwargs)


@register_model
def coatnet_5_224(pretrained=False, progress=True, **kwargs):
    """CoAtNet-5 (the paper's, no published weights): widths 256-2048, depths (2, 12, 28, 2)."""
    return _create_maxxvit("coatnet_5_224", pretrained, progress, kwargs)


@register_model
def maxvit_pico_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Pico (timm, no published weights): widths 32-256, depths (2, 2, 5, 2), at 256x256."""
    return _create_maxxvit("maxvit_pico_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Tiny (timm, no published weights), at 256x256."""
    return _create_maxxvit("maxvit_tiny_rw_256", pretrained, progress, kwargs)


@register_model
def maxvit_tiny_pm_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Tiny (timm, no published weights) of parallel MaxViT blocks, at 256x256."""
    return _create_maxxvit("maxvit_tiny_pm_256", pretrained, progress, kwargs)


@register_model
def maxvit_rmlp_small_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxViT-Small (timm, no published weights) with MLP positions and layer scale, at 256x256."""
    return _create_maxxvit("maxvit_rmlp_small_rw_256", pretrained, progress, kwargs)


@register_model
def maxxvit_rmlp_tiny_rw_256(pretrained=False, progress=True, **kwargs):
    """MaxxViT-Tiny (timm, no published weights): widths 64-512, depths (2, 2, 5, 2), at 256x256."""
    return _create_maxxvit("maxxvit_rmlp_tiny_rw_256", pretrained, progress, kwargs)


@register_model
def maxxvitv2_rmlp_large_rw_224(pretrained=False, progress=True, **kwargs):
    """MaxxViT-V2-Large (timm, no published weights): widths 160-1280, depths (2, 6, 16, 2)."""
    return _create_maxxvit("maxxvitv2_rmlp_large_rw_224", pretrained, progress, kwargs)


@register_model
def test_maxvit(pretrained=False, progress=True, **kwargs):
    """timm's tiny MaxViT for unit tests (no published weights): widths 32-128, one block a stage, 160x160."""
    return _create_maxxvit("test_maxvit", pretrained, progress, kwargs, img_size=160)


@register_model
def test_coatnet(pretrained=False, progress=True, **kwargs):
    """timm's tiny CoAtNet for unit tests (no published weights): widths 32-128, at 160x160."""
    return _create_maxxvit("test_coatnet", pretrained, progress, kwargs, img_size=160)
