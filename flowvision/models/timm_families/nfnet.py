"""Normalizer-free networks (Brock et al. 2021, "Characterizing signal propagation to close the performance gap in
unnormalized ResNets"; Brock et al. 2021, "High-Performance Large-Scale Image Recognition Without Normalization"),
as timm builds them: dm_nfnet_f0 .. dm_nfnet_f6 (DeepMind's NFNets), nfnet_f0 .. nfnet_f7 (timm's form of them,
the activation gain in the weights), nfnet_l0 and eca_nfnet_l0 .. l3 (timm's lighter SiLU NFNets, with SE or ECA
attention), nf_regnet_b0 .. b5, nf_resnet26 / 50 / 101 with their SE (nf_seresnet*) and ECA (nf_ecaresnet*) forms,
and timm's tiny test_nfnet.

These networks have no normalisation layers. Each convolution standardises its weights instead (per output filter:
zero mean, unit variance, times a learnt ``gain`` and ``gamma / sqrt(fan_in)``, where ``gamma`` undoes the variance
change of the activation before it), and the residual blocks keep the signal's variance known: a block scales its
pre-activated input by ``beta = 1 / expected_std`` and adds its branch, times ``alpha``, to the shortcut, so the
variance grows by ``alpha^2`` per block and is reset where a stage's first block projects its shortcut. The branch
is a pre-activation bottleneck (1x1, grouped 3x3 (two of them in NFNets), 1x1), with SE or ECA attention scaled by
``attn_gain``; its last convolution's gain starts at zero (or, with ``skipinit``, a scalar gain after it does), so
each block starts as its shortcut. DeepMind's models scale the activations by ``gamma`` rather than the weights and
pad their convolutions as TensorFlow's "SAME". Model names, module names, ``state_dict`` keys, initialisation and the
model API follow timm's ``nfnet`` module, so its checkpoints load as they are.
"""
import math
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import partial
from typing import Optional, Tuple

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import EcaModule, SEModule
from ._conv import get_padding, get_same_padding
from ._layers import ClassifierHead, ClassifierHeadApi, drop_path_module, get_act_layer
from .resnet import AvgPool2dSame

__all__ = []

# The gain that brings each activation's output back to unit variance for a unit Gaussian input (DeepMind's values).
_NONLIN_GAMMA = {"relu": 1.7139588594436646, "silu": 1.7881293296813965, "gelu": 1.7015043497085571}
_ACT_FUNCTIONS = {"relu": F.relu, "silu": F.silu, "gelu": F.gelu}
_ATTENTION = {"se": SEModule, "eca": EcaModule}


class GammaAct(nn.Module):
    """An activation followed by its variance-restoring gain ``gamma`` (DeepMind's models put the gain here rather
    than into the next convolution's weights). ``inplace`` is kept for timm's printout; the result is a new tensor
    either way."""

    def __init__(self, act_type="relu", gamma=1.0, inplace=False):
        super().__init__()
        self.act_fn = _ACT_FUNCTIONS[act_type]
        self.gamma = gamma
        self.inplace = inplace

    def forward(self, x):
        return self.act_fn(x) * self.gamma


class ScaledStdConv2d(nn.Conv2d):
    """A convolution with scaled weight standardisation: before every use each output filter's weights are shifted
    to zero mean and divided by their standard deviation (``eps`` added to the variance), then multiplied by the
    learnt per-filter ``gain`` (initially ``gain_init``) and by ``gamma / sqrt(fan_in)``, so that a unit-variance
    input gives a unit-variance output with no normalisation of the activations. Padded symmetrically by default
    (``padding=None``)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=None, dilation=1, groups=1,
                 bias=True, gamma=1.0, eps=1e-6, gain_init=1.0):
        if padding is None:
            padding = get_padding(kernel_size, stride, dilation)
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias)
        self.scale = gamma * math.prod(self.weight.shape[1:]) ** -0.5
        self.eps = eps
        self.gain_init = gain_init
        self.gain = nn.Parameter(torch.full((self.out_channels, 1, 1, 1), float(gain_init)))

    def standardized_weight(self):
        """The weights the layer convolves with: each filter standardised, then scaled by ``gain * scale``."""
        filters = self.weight.reshape(1, self.out_channels, -1)
        scale = (self.gain * self.scale).view(-1)
        weight = F.batch_norm(filters, None, None, weight=scale, training=True, momentum=0.0, eps=self.eps)
        return weight.reshape_as(self.weight)

    def forward(self, x):
        return F.conv2d(x, self.standardized_weight(), self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class ScaledStdConv2dSame(ScaledStdConv2d):
    """``ScaledStdConv2d`` with TensorFlow's "SAME" padding: fixed and symmetric where that is exact (stride 1, an
    odd dilated kernel), otherwise computed from each input's size with the odd pixel at the end (``same_pad``)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, groups=1, bias=True,
                 gamma=1.0, eps=1e-6, gain_init=1.0):
        static = stride == 1 and dilation * (kernel_size - 1) % 2 == 0
        padding = get_padding(kernel_size, stride, dilation) if static else 0
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, gamma=gamma, eps=eps, gain_init=gain_init)
        self.same_pad = not static

    def forward(self, x):
        if self.same_pad:
            height, width = x.shape[-2:]
            pad_h = get_same_padding(height, self.kernel_size[0], self.stride[0], self.dilation[0])
            pad_w = get_same_padding(width, self.kernel_size[1], self.stride[1], self.dilation[1])
            x = F.pad(x, (pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2))
        return super().forward(x)


class DownsampleAvg(nn.Module):
    """The projection shortcut: 2x2 average pooling (ceil mode, padding not counted; "same" at stride 1 in a dilated
    stage; an identity where nothing shrinks), then a 1x1 convolution to the new width."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, conv_layer=ScaledStdConv2d):
        super().__init__()
        if dilation > 1:
            self.pool = AvgPool2dSame()
        elif stride > 1:
            self.pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
        else:
            self.pool = nn.Identity()
        self.conv = conv_layer(in_chs, out_chs, 1, stride=1)

    def forward(self, x):
        x = self.pool(x)
        x = self.conv(x)
        return x


class NormFreeBlock(nn.Module):
    """The normalizer-free pre-activation bottleneck.

    The input, activated and scaled by ``beta``, feeds the branch and (where the shape or dilation changes) the
    projection shortcut. The branch: 1x1 convolution to the bottleneck width, activation, grouped 3x3 convolution
    (strided; groups of ``group_size`` channels), with ``extra_conv`` a second activation and grouped 3x3, SE/ECA
    attention on the bottleneck (``reg``, RegNet style) times ``attn_gain``, activation, 1x1 convolution to
    ``out_chs`` whose gain starts at zero, attention on the output (not ``reg``) times ``attn_gain``, drop-path. With
    ``skipinit`` the last gain starts at one and a scalar ``skipinit_gain``, zero at first, scales the branch
    instead. The output is ``branch * alpha + shortcut``.

    The bottleneck width is ``bottle_ratio`` of the input width (``reg``) or of the output width, rounded to a
    multiple of ``ch_div`` (and to whole groups where ``group_size`` is a multiple of ``ch_div``).
    """

    def __init__(self, in_chs, out_chs=None, stride=1, dilation=1, first_dilation=None, alpha=1.0, beta=1.0,
                 bottle_ratio=0.25, group_size=None, ch_div=1, reg=True, extra_conv=False, skipinit=False,
                 attn_layer=None, attn_gain=2.0, act_layer=nn.ReLU, conv_layer=ScaledStdConv2d, drop_path_rate=0.0):
        super().__init__()
        first_dilation = first_dilation or dilation
        out_chs = out_chs or in_chs
        mid_chs = _make_divisible((in_chs if reg else out_chs) * bottle_ratio, ch_div)
        groups = mid_chs // group_size if group_size else 1
        if group_size and group_size % ch_div == 0:
            mid_chs = group_size * groups
        self.alpha = alpha
        self.beta = beta
        self.attn_gain = attn_gain
        if in_chs != out_chs or stride != 1 or dilation != first_dilation:
            self.downsample = DownsampleAvg(in_chs, out_chs, stride=stride, dilation=dilation, conv_layer=conv_layer)
        else:
            self.downsample = None
        self.act1 = act_layer()
        self.conv1 = conv_layer(in_chs, mid_chs, 1)
        self.act2 = act_layer(inplace=True)
        self.conv2 = conv_layer(mid_chs, mid_chs, 3, stride=stride, dilation=first_dilation, groups=groups)
        if extra_conv:
            self.act2b = act_layer(inplace=True)
            self.conv2b = conv_layer(mid_chs, mid_chs, 3, stride=1, dilation=dilation, groups=groups)
        else:
            self.act2b = None
            self.conv2b = None
        self.attn = attn_layer(mid_chs) if reg and attn_layer is not None else None
        self.act3 = act_layer()
        self.conv3 = conv_layer(mid_chs, out_chs, 1, gain_init=1.0 if skipinit else 0.0)
        self.attn_last = attn_layer(out_chs) if not reg and attn_layer is not None else None
        self.drop_path = drop_path_module(drop_path_rate)
        self.skipinit_gain = nn.Parameter(torch.tensor(0.0)) if skipinit else None

    def forward(self, x):
        out = self.act1(x) * self.beta
        shortcut = x if self.downsample is None else self.downsample(out)
        out = self.conv1(out)
        out = self.conv2(self.act2(out))
        if self.conv2b is not None:
            out = self.conv2b(self.act2b(out))
        if self.attn is not None:
            out = self.attn_gain * self.attn(out)
        out = self.conv3(self.act3(out))
        if self.attn_last is not None:
            out = self.attn_gain * self.attn_last(out)
        out = self.drop_path(out)
        if self.skipinit_gain is not None:
            out = out * self.skipinit_gain
        return out * self.alpha + shortcut


_STEM_TYPES = ("", "deep", "deep_tiered", "deep_quad", "3x3", "7x7", "deep_pool", "3x3_pool", "7x7_pool")


def create_stem(in_chs, out_chs, stem_type, conv_layer, act_layer):
    """The stem as ``(module, stride, feature_info entry)``.

    'deep' stems stack 3x3 convolutions with activations between them (``conv1``, ``act2``, ``conv2``...): 'deep'
    (widths w/2, w/2, w, the first strided), 'deep_tiered' (3w/8, w/2, w) and 'deep_quad' (NFNet's: w/8, w/4, w/2, w,
    the first and last strided), tapped for features at the penultimate convolution; '3x3' (RegNet) and '7x7' (ResNet;
    also '') are one strided convolution ``conv``. '_pool' adds a 3x3/2 max pool.
    """
    if stem_type not in _STEM_TYPES:
        raise ValueError(f"unknown stem_type '{stem_type}': expected one of {_STEM_TYPES}")
    layers = OrderedDict()
    stride = 2
    feature = dict(num_chs=out_chs, reduction=2, module="stem.conv")
    if "deep" in stem_type:
        if "quad" in stem_type:
            widths = (out_chs // 8, out_chs // 4, out_chs // 2, out_chs)
            strides = (2, 1, 1, 2)
            stride = 4
        elif "tiered" in stem_type:
            widths = (3 * out_chs // 8, out_chs // 2, out_chs)
            strides = (2, 1, 1)
        else:
            widths = (out_chs // 2, out_chs // 2, out_chs)
            strides = (2, 1, 1)
        last = len(widths) - 1
        feature = dict(num_chs=widths[-2], reduction=2, module=f"stem.conv{last}")
        for i, (width, conv_stride) in enumerate(zip(widths, strides)):
            layers[f"conv{i + 1}"] = conv_layer(in_chs, width, kernel_size=3, stride=conv_stride)
            if i < last:
                layers[f"act{i + 2}"] = act_layer(inplace=i < last - 1)
            in_chs = width
    else:
        kernel_size = 3 if "3x3" in stem_type else 7
        layers["conv"] = conv_layer(in_chs, out_chs, kernel_size=kernel_size, stride=2)
    if "pool" in stem_type:
        layers["pool"] = nn.MaxPool2d(3, stride=2, padding=1)
        stride = 4
    return nn.Sequential(layers), stride, feature


@dataclass
class NfCfg:
    """A normalizer-free network's architecture, timm's fields: per-stage ``depths`` and ``channels`` (times
    ``width_factor``, rounded to multiples of ``ch_div``), the residual scale ``alpha``, the stem (``stem_type``,
    ``stem_chs``), the bottleneck (``group_size``, ``bottle_ratio``, ``reg`` (RegNet style: width from the input, the
    first block unsqueezed, attention inside), ``extra_conv``), the attention (``attn_layer`` 'se' / 'eca',
    ``attn_kwargs``, ``attn_gain``), ``num_features`` (a final 1x1 convolution to this width; none if 0), the
    activation (``act_layer`` 'relu' / 'silu' / 'gelu', its gain in the activations with ``gamma_in_act``, otherwise
    in the weights), TensorFlow "SAME" padding (``same_padding``), the standardisation ``std_conv_eps``,
    ``skipinit`` and ``zero_init_fc`` (a zero classifier)."""

    depths: Tuple[int, int, int, int]
    channels: Tuple[int, int, int, int]
    alpha: float = 0.2
    stem_type: str = "3x3"
    stem_chs: Optional[int] = None
    group_size: Optional[int] = None
    attn_layer: Optional[str] = None
    attn_kwargs: Optional[dict] = None
    attn_gain: float = 2.0
    width_factor: float = 1.0
    bottle_ratio: float = 0.5
    num_features: int = 0
    ch_div: int = 8
    reg: bool = False
    extra_conv: bool = False
    gamma_in_act: bool = False
    same_padding: bool = False
    std_conv_eps: float = 1e-5
    skipinit: bool = False
    zero_init_fc: bool = False
    act_layer: str = "silu"


def _layer_factories(cfg):
    """The (activation, convolution, attention) constructors ``cfg`` asks for, with the activation's gain ``gamma``
    in the activations (``gamma_in_act``) or in the convolutions' weight scale."""
    if cfg.act_layer not in _NONLIN_GAMMA:
        raise ValueError(f"unknown act_layer '{cfg.act_layer}': expected one of {sorted(_NONLIN_GAMMA)}")
    if cfg.attn_layer and cfg.attn_layer not in _ATTENTION:
        raise ValueError(f"unknown attn_layer '{cfg.attn_layer}': expected one of {sorted(_ATTENTION)} or None")
    gamma = _NONLIN_GAMMA[cfg.act_layer]
    conv_cls = ScaledStdConv2dSame if cfg.same_padding else ScaledStdConv2d
    if cfg.gamma_in_act:
        act_layer = partial(GammaAct, cfg.act_layer, gamma)
        conv_layer = partial(conv_cls, eps=cfg.std_conv_eps)
    else:
        act_layer = get_act_layer(cfg.act_layer)
        conv_layer = partial(conv_cls, gamma=gamma, eps=cfg.std_conv_eps)
    attn_layer = partial(_ATTENTION[cfg.attn_layer], **(cfg.attn_kwargs or {})) if cfg.attn_layer else None
    return act_layer, conv_layer, attn_layer


class NormFreeNet(ClassifierHeadApi, nn.Module):
    """timm's normalizer-free network: a stem, four stages of ``NormFreeBlock``, an optional 1x1 ``final_conv``,
    the final activation and the classifier ``head`` (global pooling, dropout, linear).

    ``cfg`` (an ``NfCfg``) is the architecture; keyword arguments named as its fields override them.
    ``output_stride`` 16 or 8 dilates the last stages instead of striding them; ``drop_path_rate`` grows linearly
    from 0 at the first block to this value at the last; ``drop_rate`` is the dropout before the classifier;
    ``num_classes=0`` leaves the pooled features. A stage's first block strides (the first stage's only after a
    stride-2 stem) and resets the expected variance, which then grows by ``alpha^2`` per block.
    """

    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfg, num_classes=1000, in_chans=3, global_pool="avg", output_stride=32, drop_rate=0.0,
                 drop_path_rate=0.0, **kwargs):
        super().__init__()
        cfg = replace(cfg, **kwargs)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        act_layer, conv_layer, attn_layer = _layer_factories(cfg)
        stem_chs = _make_divisible((cfg.stem_chs or cfg.channels[0]) * cfg.width_factor, cfg.ch_div)
        self.stem, stem_stride, stem_feature = create_stem(in_chans, stem_chs, cfg.stem_type, conv_layer, act_layer)
        self.feature_info = [stem_feature]
        depths = list(cfg.depths)
        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        in_chs = stem_chs
        net_stride = stem_stride
        dilation = 1
        expected_var = 1.0
        stages = []
        for stage_idx, depth in enumerate(depths):
            stride = 1 if stage_idx == 0 and stem_stride > 2 else 2
            if net_stride >= output_stride and stride > 1:
                dilation *= stride
                stride = 1
            net_stride *= stride
            first_dilation = 1 if dilation in (1, 2) else 2
            out_chs = _make_divisible(cfg.channels[stage_idx] * cfg.width_factor, cfg.ch_div)
            blocks = []
            for block_idx in range(depth):
                unsqueezed = cfg.reg and stage_idx == 0 and block_idx == 0
                blocks.append(NormFreeBlock(
                    in_chs, out_chs, stride=stride if block_idx == 0 else 1, dilation=dilation,
                    first_dilation=first_dilation, alpha=cfg.alpha, beta=1.0 / expected_var ** 0.5,
                    bottle_ratio=1.0 if unsqueezed else cfg.bottle_ratio, group_size=cfg.group_size,
                    ch_div=cfg.ch_div, reg=cfg.reg, extra_conv=cfg.extra_conv, skipinit=cfg.skipinit,
                    attn_layer=attn_layer, attn_gain=cfg.attn_gain, act_layer=act_layer, conv_layer=conv_layer,
                    drop_path_rate=drop_path_rates[stage_idx][block_idx]))
                if block_idx == 0:
                    expected_var = 1.0
                expected_var += cfg.alpha ** 2
                first_dilation = dilation
                in_chs = out_chs
            self.feature_info.append(dict(num_chs=in_chs, reduction=net_stride, module=f"stages.{stage_idx}"))
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        if cfg.num_features:
            self.num_features = _make_divisible(cfg.width_factor * cfg.num_features, cfg.ch_div)
            self.final_conv = conv_layer(in_chs, self.num_features, 1)
            self.feature_info[-1] = dict(num_chs=self.num_features, reduction=net_stride, module="final_conv")
        else:
            self.num_features = in_chs
            self.final_conv = nn.Identity()
        self.final_act = act_layer(inplace=False)
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(cfg.zero_init_fc)

    def _init_weights(self, zero_init_fc):
        """timm's initialisation, in module order: every 2-d convolution (the standardised ones, the SE layers)
        N(0, 1 / fan_in) with zero biases; the classifier N(0, 0.01^2) (zeros with ``zero_init_fc``) with a zero
        bias. ECA's 1-d convolutions keep PyTorch's default."""
        for module in self.modules():
            if isinstance(module, nn.Linear):
                if zero_init_fc:
                    nn.init.zeros_(module.weight)
                else:
                    nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_in", nonlinearity="linear")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution) and ``classifier``."""
        first_conv = next(name for name, _ in self.stem.named_children())
        return {"first_conv": f"stem.{first_conv}", "classifier": "head.fc"}

    def forward_features(self, x):
        """The activated map after the last stage and ``final_conv`` (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.final_conv(x)
        x = self.final_act(x)
        return x

    @property
    def _stem_tap(self):
        """Position, among the stem's children, of the one whose output is the stem's feature map
        (``feature_info[0]``: a deep stem's penultimate convolution, a single convolution before any pooling)."""
        names = [name for name, _ in self.stem.named_children()]
        return names.index(self.feature_info[0]["module"].split(".", 1)[1])

    def _stem_and_map(self, x):
        """The stem's output and its feature map (the tapped child's output)."""
        tap = self._stem_tap
        stem_map = None
        for i, child in enumerate(self.stem):
            x = child(x)
            if i == tap:
                stem_map = x
        return x, stem_map

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature maps picked by ``indices`` (None: all, n: the last n, or a list; 0 is the stem's, inside it,
        then one per stage, the last after ``final_conv`` and before the final activation, as ``feature_info`` lists
        them) and, unless ``intermediates_only``, the final map, activated when the last stage ran. ``stop_early``
        skips the stages after the last one picked; ``norm`` does nothing (no final norm)."""
        take, layers = intermediate_stages([self.stem, *self.stages], indices, stop_early, output_fmt)
        last = len(self.stages)
        x, stem_map = self._stem_and_map(x)
        intermediates = [stem_map] if 0 in take else []
        for position, stage in enumerate(layers[1:], start=1):
            x = stage(x)
            if position == last:
                x = self.final_conv(x)
            if position in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        if len(layers) - 1 == last:
            x = self.final_act(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last feature map ``indices`` picks (and the stem's layers after its tap when
        that map is the stem's); when stages go, also ``final_conv``, the final activation and the head,
        ``num_features`` then the picked map's width. ``prune_head`` drops the head anyway; ``prune_norm`` does
        nothing (no final norm). Returns the absolute indices."""
        take = take_indices(len(self.stages) + 1, indices)
        last_pick = max(take)
        prune_end = last_pick < len(self.stages)
        if prune_end:
            self.final_conv = nn.Identity()
            self.final_act = nn.Identity()
            self.num_features = self.head_hidden_size = self.feature_info[last_pick]["num_chs"]
        if last_pick == 0:
            self.stem = self.stem[:self._stem_tap + 1]
        self.stages = self.stages[:last_pick]
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


def _nf_resnet_cfg(depths, attn_layer=None, attn_kwargs=None):
    """NF-ResNet: a 7x7 stem with max pooling, ResNet bottlenecks (a quarter of the output width), ReLU, and
    optionally attention on each block's output (``attn_layer`` 'se' or 'eca')."""
    return NfCfg(depths=depths, channels=(256, 512, 1024, 2048), stem_type="7x7_pool", stem_chs=64,
                 bottle_ratio=0.25, act_layer="relu", attn_layer=attn_layer, attn_kwargs=attn_kwargs or {})


# NF-SE-ResNet's squeeze-and-excitation: a sixteenth of the width
_SE_RESNET = dict(attn_layer="se", attn_kwargs=dict(rd_ratio=1 / 16))
# NF-ECA-ResNet's efficient channel attention
_ECA_RESNET = dict(attn_layer="eca", attn_kwargs={})


def _nf_regnet_cfg(depths, channels=(48, 104, 208, 440)):
    """NF-RegNet-B: a 3x3 stem, RegNet-style inverted bottlenecks (2.25x the input width, groups of 8) with SE (half
    the bottleneck) inside, widths times 0.75 and a final 1x1 convolution (1280 wide for 440 channels), SiLU."""
    return NfCfg(depths=depths, channels=channels, stem_type="3x3", group_size=8, width_factor=0.75,
                 bottle_ratio=2.25, num_features=1280 * channels[-1] // 440, reg=True, attn_layer="se",
                 attn_kwargs=dict(rd_ratio=0.5))


def _nfnet_cfg(depths, channels=(256, 512, 1536, 1536), feat_mult=2.0, group_size=128, bottle_ratio=0.5,
               act_layer="gelu", attn_layer="se", attn_kwargs=None):
    """NFNet: the four-convolution stem (128 wide), stage widths ``channels`` (256, 512, 1536, 1536), bottlenecks
    with two grouped 3x3 convolutions and attention at the output, and a final 1x1 convolution to ``feat_mult``
    times the last width."""
    return NfCfg(depths=depths, channels=channels, stem_type="deep_quad", stem_chs=128, group_size=group_size,
                 bottle_ratio=bottle_ratio, extra_conv=True, num_features=int(channels[-1] * feat_mult),
                 act_layer=act_layer, attn_layer=attn_layer,
                 attn_kwargs=dict(rd_ratio=0.5) if attn_kwargs is None else attn_kwargs)


def _dm_nfnet_cfg(depths):
    """DeepMind's NFNet-F: GELU with its gain in the activations, TensorFlow padding, SE and skipinit."""
    return replace(_nfnet_cfg(depths), gamma_in_act=True, same_padding=True, skipinit=True)


def _light_nfnet_cfg(depths, feat_mult, attn_layer, attn_kwargs):
    """timm's light NFNet-L: NFNet's repeats, SiLU, groups of 64 and a quarter-width bottleneck."""
    return _nfnet_cfg(depths, feat_mult=feat_mult, group_size=64, bottle_ratio=0.25, act_layer="silu",
                      attn_layer=attn_layer, attn_kwargs=attn_kwargs)


def _create_normfreenet(variant, pretrained, progress, cfg, kwargs):
    """Build a registered variant (``features_only``: timm's five taps, the stem's and each stage's)."""
    return build_model(NormFreeNet, variant, pretrained, progress=progress, cfg=cfg, **kwargs)


@register_model
def dm_nfnet_f0(pretrained=False, progress=True, **kwargs):
    """NFNet-F0 (DeepMind's weights): depths 1, 2, 6, 3."""
    return _create_normfreenet("dm_nfnet_f0", pretrained, progress, _dm_nfnet_cfg((1, 2, 6, 3)), kwargs)


@register_model
def dm_nfnet_f1(pretrained=False, progress=True, **kwargs):
    """NFNet-F1 (DeepMind's weights): depths 2, 4, 12, 6."""
    return _create_normfreenet("dm_nfnet_f1", pretrained, progress, _dm_nfnet_cfg((2, 4, 12, 6)), kwargs)


@register_model
def dm_nfnet_f2(pretrained=False, progress=True, **kwargs):
    """NFNet-F2 (DeepMind's weights): depths 3, 6, 18, 9."""
    return _create_normfreenet("dm_nfnet_f2", pretrained, progress, _dm_nfnet_cfg((3, 6, 18, 9)), kwargs)


@register_model
def dm_nfnet_f3(pretrained=False, progress=True, **kwargs):
    """NFNet-F3 (DeepMind's weights): depths 4, 8, 24, 12."""
    return _create_normfreenet("dm_nfnet_f3", pretrained, progress, _dm_nfnet_cfg((4, 8, 24, 12)), kwargs)


@register_model
def dm_nfnet_f4(pretrained=False, progress=True, **kwargs):
    """NFNet-F4 (DeepMind's weights): depths 5, 10, 30, 15."""
    return _create_normfreenet("dm_nfnet_f4", pretrained, progress, _dm_nfnet_cfg((5, 10, 30, 15)), kwargs)


@register_model
def dm_nfnet_f5(pretrained=False, progress=True, **kwargs):
    """NFNet-F5 (DeepMind's weights): depths 6, 12, 36, 18."""
    return _create_normfreenet("dm_nfnet_f5", pretrained, progress, _dm_nfnet_cfg((6, 12, 36, 18)), kwargs)


@register_model
def dm_nfnet_f6(pretrained=False, progress=True, **kwargs):
    """NFNet-F6 (DeepMind's weights): depths 7, 14, 42, 21."""
    return _create_normfreenet("dm_nfnet_f6", pretrained, progress, _dm_nfnet_cfg((7, 14, 42, 21)), kwargs)


@register_model
def nfnet_f0(pretrained=False, progress=True, **kwargs):
    """NFNet-F0, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 1, 2, 6, 3."""
    return _create_normfreenet("nfnet_f0", pretrained, progress, _nfnet_cfg((1, 2, 6, 3)), kwargs)


@register_model
def nfnet_f1(pretrained=False, progress=True, **kwargs):
    """NFNet-F1, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 2, 4, 12, 6."""
    return _create_normfreenet("nfnet_f1", pretrained, progress, _nfnet_cfg((2, 4, 12, 6)), kwargs)


@register_model
def nfnet_f2(pretrained=False, progress=True, **kwargs):
    """NFNet-F2, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 3, 6, 18, 9."""
    return _create_normfreenet("nfnet_f2", pretrained, progress, _nfnet_cfg((3, 6, 18, 9)), kwargs)


@register_model
def nfnet_f3(pretrained=False, progress=True, **kwargs):
    """NFNet-F3, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 4, 8, 24, 12."""
    return _create_normfreenet("nfnet_f3", pretrained, progress, _nfnet_cfg((4, 8, 24, 12)), kwargs)


@register_model
def nfnet_f4(pretrained=False, progress=True, **kwargs):
    """NFNet-F4, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 5, 10, 30, 15."""
    return _create_normfreenet("nfnet_f4", pretrained, progress, _nfnet_cfg((5, 10, 30, 15)), kwargs)


@register_model
def nfnet_f5(pretrained=False, progress=True, **kwargs):
    """NFNet-F5, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 6, 12, 36, 18."""
    return _create_normfreenet("nfnet_f5", pretrained, progress, _nfnet_cfg((6, 12, 36, 18)), kwargs)


@register_model
def nfnet_f6(pretrained=False, progress=True, **kwargs):
    """NFNet-F6, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 7, 14, 42, 21."""
    return _create_normfreenet("nfnet_f6", pretrained, progress, _nfnet_cfg((7, 14, 42, 21)), kwargs)


@register_model
def nfnet_f7(pretrained=False, progress=True, **kwargs):
    """NFNet-F7, timm's form (GELU gain in the weights, no SAME padding or skipinit): depths 8, 16, 48, 24."""
    return _create_normfreenet("nfnet_f7", pretrained, progress, _nfnet_cfg((8, 16, 48, 24)), kwargs)


@register_model
def nfnet_l0(pretrained=False, progress=True, **kwargs):
    """NFNet-L0: F0's depths, SiLU, SE (a quarter of the width), final width 1.5x the last stage's."""
    cfg = _light_nfnet_cfg((1, 2, 6, 3), 1.5, "se", dict(rd_ratio=0.25, rd_divisor=8))
    return _create_normfreenet("nfnet_l0", pretrained, progress, cfg, kwargs)


@register_model
def eca_nfnet_l0(pretrained=False, progress=True, **kwargs):
    """ECA-NFNet-L0: F0's depths, SiLU, ECA attention, final width 1.5x the last stage's."""
    cfg = _light_nfnet_cfg((1, 2, 6, 3), 1.5, "eca", {})
    return _create_normfreenet("eca_nfnet_l0", pretrained, progress, cfg, kwargs)


@register_model
def eca_nfnet_l1(pretrained=False, progress=True, **kwargs):
    """ECA-NFNet-L1: F1's depths, SiLU, ECA attention, final width 2x the last stage's."""
    cfg = _light_nfnet_cfg((2, 4, 12, 6), 2.0, "eca", {})
    return _create_normfreenet("eca_nfnet_l1", pretrained, progress, cfg, kwargs)


@register_model
def eca_nfnet_l2(pretrained=False, progress=True, **kwargs):
    """ECA-NFNet-L2: F2's depths, SiLU, ECA attention, final width 2x the last stage's."""
    cfg = _light_nfnet_cfg((3, 6, 18, 9), 2.0, "eca", {})
    return _create_normfreenet("eca_nfnet_l2", pretrained, progress, cfg, kwargs)


@register_model
def eca_nfnet_l3(pretrained=False, progress=True, **kwargs):
    """ECA-NFNet-L3: F3's depths, SiLU, ECA attention, final width 2x the last stage's."""
    cfg = _light_nfnet_cfg((4, 8, 24, 12), 2.0, "eca", {})
    return _create_normfreenet("eca_nfnet_l3", pretrained, progress, cfg, kwargs)


@register_model
def nf_regnet_b0(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B0: depths 1, 3, 6, 6 (channels rounded to multiples of 8, as timm)."""
    cfg = _nf_regnet_cfg((1, 3, 6, 6))
    return _create_normfreenet("nf_regnet_b0", pretrained, progress, cfg, kwargs)


@register_model
def nf_regnet_b1(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B1: depths 2, 4, 7, 7 (channels rounded to multiples of 8, as timm)."""
    return _create_normfreenet("nf_regnet_b1", pretrained, progress, _nf_regnet_cfg((2, 4, 7, 7)), kwargs)


@register_model
def nf_regnet_b2(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B2: depths 2, 4, 8, 8, stage widths 56, 112, 232, 488 before the 0.75 factor."""
    cfg = _nf_regnet_cfg((2, 4, 8, 8), (56, 112, 232, 488))
    return _create_normfreenet("nf_regnet_b2", pretrained, progress, cfg, kwargs)


@register_model
def nf_regnet_b3(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B3: depths 2, 5, 9, 9, stage widths 56, 128, 248, 528 before the 0.75 factor."""
    cfg = _nf_regnet_cfg((2, 5, 9, 9), (56, 128, 248, 528))
    return _create_normfreenet("nf_regnet_b3", pretrained, progress, cfg, kwargs)


@register_model
def nf_regnet_b4(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B4: depths 2, 6, 11, 11, stage widths 64, 144, 288, 616 before the 0.75 factor."""
    cfg = _nf_regnet_cfg((2, 6, 11, 11), (64, 144, 288, 616))
    return _create_normfreenet("nf_regnet_b4", pretrained, progress, cfg, kwargs)


@register_model
def nf_regnet_b5(pretrained=False, progress=True, **kwargs):
    """NF-RegNet-B5: depths 3, 7, 14, 14, stage widths 80, 168, 336, 704 before the 0.75 factor."""
    cfg = _nf_regnet_cfg((3, 7, 14, 14), (80, 168, 336, 704))
    return _create_normfreenet("nf_regnet_b5", pretrained, progress, cfg, kwargs)


@register_model
def nf_resnet26(pretrained=False, progress=True, **kwargs):
    """NF-ResNet-26: depths 2, 2, 2, 2."""
    return _create_normfreenet("nf_resnet26", pretrained, progress, _nf_resnet_cfg((2, 2, 2, 2)), kwargs)


@register_model
def nf_resnet50(pretrained=False, progress=True, **kwargs):
    """NF-ResNet-50: depths 3, 4, 6, 3."""
    return _create_normfreenet("nf_resnet50", pretrained, progress, _nf_resnet_cfg((3, 4, 6, 3)), kwargs)


@register_model
def nf_resnet101(pretrained=False, progress=True, **kwargs):
    """NF-ResNet-101: depths 3, 4, 23, 3."""
    return _create_normfreenet("nf_resnet101", pretrained, progress, _nf_resnet_cfg((3, 4, 23, 3)), kwargs)


@register_model
def nf_seresnet26(pretrained=False, progress=True, **kwargs):
    """NF-SE-ResNet-26: depths 2, 2, 2, 2, with squeeze-and-excitation (a sixteenth of the width)."""
    cfg = _nf_resnet_cfg((2, 2, 2, 2), **_SE_RESNET)
    return _create_normfreenet("nf_seresnet26", pretrained, progress, cfg, kwargs)


@register_model
def nf_seresnet50(pretrained=False, progress=True, **kwargs):
    """NF-SE-ResNet-50: depths 3, 4, 6, 3, with squeeze-and-excitation (a sixteenth of the width)."""
    cfg = _nf_resnet_cfg((3, 4, 6, 3), **_SE_RESNET)
    return _create_normfreenet("nf_seresnet50", pretrained, progress, cfg, kwargs)


@register_model
def nf_seresnet101(pretrained=False, progress=True, **kwargs):
    """NF-SE-ResNet-101: depths 3, 4, 23, 3, with squeeze-and-excitation (a sixteenth of the width)."""
    cfg = _nf_resnet_cfg((3, 4, 23, 3), **_SE_RESNET)
    return _create_normfreenet("nf_seresnet101", pretrained, progress, cfg, kwargs)


@register_model
def nf_ecaresnet26(pretrained=False, progress=True, **kwargs):
    """NF-ECA-ResNet-26: depths 2, 2, 2, 2, with efficient channel attention."""
    cfg = _nf_resnet_cfg((2, 2, 2, 2), **_ECA_RESNET)
    return _create_normfreenet("nf_ecaresnet26", pretrained, progress, cfg, kwargs)


@register_model
def nf_ecaresnet50(pretrained=False, progress=True, **kwargs):
    """NF-ECA-ResNet-50: depths 3, 4, 6, 3, with efficient channel attention."""
    cfg = _nf_resnet_cfg((3, 4, 6, 3), **_ECA_RESNET)
    return _create_normfreenet("nf_ecaresnet50", pretrained, progress, cfg, kwargs)


@register_model
def nf_ecaresnet101(pretrained=False, progress=True, **kwargs):
    """NF-ECA-ResNet-101: depths 3, 4, 23, 3, with efficient channel attention."""
    cfg = _nf_resnet_cfg((3, 4, 23, 3), **_ECA_RESNET)
    return _create_normfreenet("nf_ecaresnet101", pretrained, progress, cfg, kwargs)


@register_model
def test_nfnet(pretrained=False, progress=True, **kwargs):
    """timm's tiny test NFNet: one block a stage, widths 32-128, SiLU, SE (a quarter of the width), groups of 8."""
    cfg = _nfnet_cfg((1, 1, 1, 1), channels=(32, 64, 96, 128), feat_mult=1.5, group_size=8, bottle_ratio=0.25,
                     act_layer="silu", attn_kwargs=dict(rd_ratio=0.25, rd_divisor=8))
    return _create_normfreenet("test_nfnet", pretrained, progress, cfg, kwargs)
