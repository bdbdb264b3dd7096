"""RegNetX, RegNetY, RegNetV and RegNetZ (Radosavovic et al. 2020, "Designing Network Design Spaces"; Dollar et al.
2021, "Fast and Accurate Model Scaling"), as timm builds them: regnetx_002 .. regnetx_320, regnety_002 ..
regnety_2560 (with the ``_tv`` variants of torchvision's group rounding), regnety_040_sgn (GroupNorm in groups of 16
channels and SiLU instead of BatchNorm and ReLU), the pre-activation regnetv_040 / 064 and regnetz_005 / regnetz_040 /
regnetz_040_h.

A RegNet is a stem (one strided 3x3 convolution), four stages of residual bottlenecks and a classifier. Its widths
are not listed but generated: block j of ``depth`` gets the linear width ``w0 + wa * j``, snapped to the nearest
``w0 * wm^k`` (k an integer) and quantized to a multiple of 8; blocks of equal width form a stage. Each bottleneck
is a 1x1 convolution to ``width * bottle_ratio`` channels, a grouped 3x3 convolution (groups of ``group_size``
channels, strided in a stage's first block), squeeze-and-excitation for the Y family (``se_ratio`` of the block's
input width) and a 1x1 convolution back, plus the shortcut. RegNetV pre-activates its blocks (norm and activation
before each convolution), RegNetZ is an inverted bottleneck (``bottle_ratio`` 4) with linear outputs and no
residual where the width changes. Every norm is BatchNorm unless ``norm_layer`` says otherwise. Model names,
module names, ``state_dict`` keys, initialisation and the model API follow timm's ``regnet`` module, so its
checkpoints load as they are.
"""
import math
from functools import partial

import numpy as np

import engine as torch
from engine import nn

from .._features import intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import SEModule
from ._conv import create_conv2d
from ._layers import BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module, get_act_layer
from .resnet import AvgPool2dSame
from .resnetv2 import GroupNormAct as _GroupNormAct

__all__ = []


class GroupNormAct(_GroupNormAct):
    """GroupNorm and its activation as one module (timm's ``GroupNormAct``), whose groups may be given by their
    width: ``group_size`` channels each (``num_channels`` must split evenly), otherwise ``num_groups`` of them."""

    def __init__(self, num_channels, num_groups=32, eps=1e-5, group_size=None, apply_act=True, act_layer=nn.ReLU):
        if group_size:
            if num_channels % group_size:
                raise ValueError(f"{num_channels} channels do not split into groups of {group_size}")
            num_groups = num_channels // group_size
        super().__init__(num_channels, num_groups=num_groups, eps=eps, apply_act=apply_act, act_layer=act_layer)


def norm_act_layer(norm_layer, act_layer):
    """The norm-and-activation layer of the blocks, taking (channels, apply_act=...): 'batchnorm' (or
    ``nn.BatchNorm2d``) gives ``BatchNormAct2d``; another norm-and-activation class or partial (``GroupNormAct``) is
    given ``act_layer`` unless it binds its own, as timm's ``get_norm_act_layer`` does."""
    if norm_layer in ("batchnorm", nn.BatchNorm2d):
        return partial(BatchNormAct2d, act_layer=act_layer)
    if isinstance(norm_layer, str):
        raise ValueError(f"unknown norm_layer '{norm_layer}': expected 'batchnorm' or a norm-and-activation class")
    if "act_layer" in getattr(norm_layer, "keywords", {}):
        return norm_layer
    return partial(norm_layer, act_layer=act_layer)


def block_widths(wa, w0, wm, depth, quant=8):
    """The width of each of ``depth`` blocks, from RegNet's quantized linear parametrisation (in float32, as timm).

    Block j's linear width u_j = w0 + wa * j is snapped to w0 * wm^s_j with s_j = round(log(u_j / w0) / log(wm)),
    then rounded to a multiple of ``quant``.
    """
    if not (wa >= 0 and w0 > 0 and wm > 1 and w0 % quant == 0):
        raise ValueError(f"need wa >= 0, w0 > 0 and a multiple of {quant}, wm > 1: got wa={wa}, w0={w0}, wm={wm}")
    linear = np.arange(depth, dtype=np.float32) * np.float32(wa) + np.float32(w0)
    exponents = np.round(np.log(linear / np.float32(w0)) / np.float32(math.log(wm)))
    widths = np.round(np.float32(w0) * np.power(np.float32(wm), exponents) / np.float32(quant)) * np.float32(quant)
    return [int(w) for w in widths]


def _quantize(value, divisor):
    """``value`` rounded to the nearest multiple of ``divisor`` (ties to even multiples, as Python rounds)."""
    return int(round(value / divisor) * divisor)


def compatible_widths_groups(widths, bottle_ratios, group_sizes, group_min_ratio=0.0):
    """Stage widths and group sizes adjusted so that each bottleneck width is a multiple of its group size.

    A group is at most the bottleneck width; the bottleneck width is rounded to a multiple of the group size, to
    the nearest one (pycls), or with ``group_min_ratio`` by torchvision's rule (never more than 10% below; timm
    passes the ratio as the rule's lower bound, which a bottleneck never reaches). The stage width follows from
    the rounded bottleneck width.
    """
    bottlenecks = [int(w * b) for w, b in zip(widths, bottle_ratios)]
    group_sizes = [min(g, w) for g, w in zip(group_sizes, bottlenecks)]
    if group_min_ratio:
        bottlenecks = [_make_divisible(w, g, group_min_ratio) for w, g in zip(bottlenecks, group_sizes)]
    else:
        bottlenecks = [_quantize(w, g) for w, g in zip(bottlenecks, group_sizes)]
    widths = [int(w / b) for w, b in zip(bottlenecks, bottle_ratios)]
    return widths, group_sizes


def _squeeze_excite(in_chs, bottleneck_chs, se_ratio, act_layer):
    """SE on the bottleneck, squeezed to ``se_ratio`` of the block's input width (RegNetY), or an identity."""
    if not se_ratio:
        return nn.Identity()
    return SEModule(bottleneck_chs, rd_channels=int(round(in_chs * se_ratio)), act_layer=act_layer)


def _projection(in_chs, out_chs, stride, dilation, downsample, preact, norm_layer):
    """The projection shortcut: a strided 1x1 convolution ('conv1x1'), or 2x2 average pooling (ceil mode, padding
    not counted; "same" at stride 1 in a dilated stage) before a 1x1 convolution ('avg'); each followed by a norm
    (``norm_layer``, without activation) unless the block is pre-activated."""
    if downsample == "avg":
        if stride == 1 and dilation == 1:
            pool = nn.Identity()
        elif stride == 1:
            pool = AvgPool2dSame()
        else:
            pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
        if preact:
            conv = create_conv2d(in_chs, out_chs, 1)
        else:
            conv = ConvNormAct(in_chs, out_chs, 1, apply_act=False, norm_layer=norm_layer)
        return nn.Sequential(pool, conv)
    if preact:
        return create_conv2d(in_chs, out_chs, 1, stride=stride)
    return ConvNormAct(in_chs, out_chs, 1, stride=stride, apply_act=False, norm_layer=norm_layer)


def create_shortcut(downsample, in_chs, out_chs, stride, dilation, preact=False, norm_layer=BatchNormAct2d):
    """A block's shortcut: an identity where the block keeps the shape and dilation, otherwise the ``downsample``
    projection ('conv1x1' or 'avg'), or None (no residual connection at all) when ``downsample`` is None or ''.

    ``dilation`` is the block's (first, stage) dilation pair; a change of dilation also needs a projection;
    ``norm_layer`` is the projection's norm (a norm-and-activation layer, see ``norm_act_layer``).
    """
    if downsample not in ("avg", "conv1x1", "", None):
        raise ValueError(f"unknown downsample '{downsample}': expected 'conv1x1', 'avg', '' or None")
    if in_chs == out_chs and stride == 1 and dilation[0] == dilation[1]:
        return nn.Identity()
    if not downsample:
        return None
    return _projection(in_chs, out_chs, stride, dilation[0], downsample, preact, norm_layer)


class Bottleneck(nn.Module):
    """RegNet's residual bottleneck: 1x1 to ``out_chs * bottle_ratio`` channels, grouped 3x3 (``group_size``
    channels per group, strided or dilated), optional SE, 1x1 to ``out_chs`` without activation; drop-path, the
    shortcut added (unless there is none), and the activation (``act3``, an identity with ``linear_out``). Each
    convolution is followed by ``norm_layer`` (a norm-and-activation layer, see ``norm_act_layer``; BatchNorm with
    ``act_layer`` if None)."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=1, se_ratio=0.25,
                 downsample="conv1x1", linear_out=False, act_layer=nn.ReLU, norm_layer=None, drop_path_rate=0.0):
        super().__init__()
        norm_layer = norm_layer or norm_act_layer("batchnorm", act_layer)
        bottleneck_chs = int(round(out_chs * bottle_ratio))
        groups = bottleneck_chs // group_size
        self.conv1 = ConvNormAct(in_chs, bottleneck_chs, 1, norm_layer=norm_layer)
        self.conv2 = ConvNormAct(bottleneck_chs, bottleneck_chs, 3, stride=stride, dilation=dilation[0],
                                 groups=groups, norm_layer=norm_layer)
        self.se = _squeeze_excite(in_chs, bottleneck_chs, se_ratio, act_layer)
        self.conv3 = ConvNormAct(bottleneck_chs, out_chs, 1, apply_act=False, norm_layer=norm_layer)
        self.act3 = nn.Identity() if linear_out else act_layer()
        self.downsample = create_shortcut(downsample, in_chs, out_chs, stride, dilation, norm_layer=norm_layer)
        self.drop_path = drop_path_module(drop_path_rate)

    def zero_init_last(self):
        """Zero the last norm's scale, so the residual block starts as its shortcut."""
        nn.init.zeros_(self.conv3.bn.weight)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.se(x)
        x = self.conv3(x)
        if self.downsample is not None:
            x = self.drop_path(x) + self.downsample(shortcut)
        x = self.act3(x)
        return x


class PreBottleneck(nn.Module):
    """The pre-activation bottleneck (RegNetV): BatchNorm and activation before each of the three convolutions
    (the first norm's output also feeds the shortcut), SE after the grouped 3x3 one, no activation at the end.
    ``norm_layer`` is the norm-and-activation layer (see ``norm_act_layer``; BatchNorm with ``act_layer`` if None)."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=(1, 1), bottle_ratio=1.0, group_size=1, se_ratio=0.25,
                 downsample="conv1x1", linear_out=False, act_layer=nn.ReLU, norm_layer=None, drop_path_rate=0.0):
        super().__init__()
        norm_layer = norm_layer or norm_act_layer("batchnorm", act_layer)
        bottleneck_chs = int(round(out_chs * bottle_ratio))
        groups = bottleneck_chs // group_size
        self.norm1 = norm_layer(in_chs)
        self.conv1 = create_conv2d(in_chs, bottleneck_chs, 1)
        self.norm2 = norm_layer(bottleneck_chs)
        self.conv2 = create_conv2d(bottleneck_chs, bottleneck_chs, 3, stride=stride, dilation=dilation[0],
                                   groups=groups)
        self.se = _squeeze_excite(in_chs, bottleneck_chs, se_ratio, act_layer)
        self.norm3 = norm_layer(bottleneck_chs)
        self.conv3 = create_conv2d(bottleneck_chs, out_chs, 1)
        self.downsample = create_shortcut(downsample, in_chs, out_chs, stride, dilation, preact=True)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        x = self.norm1(x)
        shortcut = x
        x = self.conv1(x)
        x = self.norm2(x)
        x = self.conv2(x)
        x = self.se(x)
        x = self.norm3(x)
        x = self.conv3(x)
        if self.downsample is not None:
            x = self.drop_path(x) + self.downsample(shortcut)
        return x


class RegStage(nn.Sequential):
    """``depth`` blocks ``b1``, ``b2``... of one width; the first strides (or, in a dilated stage, changes the
    dilation from the previous stage's) and changes the width. ``drop_path_rates`` has one rate per block."""

    def __init__(self, depth, in_chs, out_chs, stride, dilation, drop_path_rates, block_fn=Bottleneck,
                 **block_kwargs):
        super().__init__()
        first_dilation = 1 if dilation in (1, 2) else 2
        for i in range(depth):
            block = block_fn(in_chs if i == 0 else out_chs, out_chs, stride=stride if i == 0 else 1,
                             dilation=(first_dilation, dilation), drop_path_rate=drop_path_rates[i], **block_kwargs)
            self.add_module(f"b{i + 1}", block)
            first_dilation = dilation


class RegNet(ClassifierHeadApi, nn.Module):
    """timm's RegNet: a stem (3x3/2 convolution to ``stem_width``, with norm and activation unless ``preact``),
    four stages ``s1..s4`` whose widths, depths and group sizes come from (``depth``, ``w0``, ``wa``, ``wm``,
    ``group_size``, ``bottle_ratio``), ``final_conv`` and the classifier ``head``.

    ``se_ratio`` adds SE to every block; ``preact`` uses pre-activation blocks and ends in the activation;
    ``linear_out`` leaves the blocks' outputs unactivated and ends in the activation; ``num_features`` > 0 ends in
    a 1x1 convolution (norm, activation) to that width instead; ``downsample`` picks the projection shortcuts
    ('conv1x1', 'avg', or None for no residual where the shape changes); ``group_min_ratio`` switches to
    torchvision's group rounding; ``act_layer`` is 'relu', 'silu' or a class; ``norm_layer`` every norm:
    'batchnorm', or a norm-and-activation class or partial (``partial(GroupNormAct, group_size=16)``, which gets
    ``act_layer``); ``output_stride`` 16 or 8 dilates
    the last stages instead of striding them. ``drop_path_rate`` grows linearly from 0 at the first block to this
    value at the last; ``drop_rate`` is the dropout before the classifier; ``zero_init_last`` zeroes each
    bottleneck's last norm scale. ``num_classes=0`` replaces the classifier with an identity (pooled features).
    """

    def __init__(self, depth=21, w0=80, wa=42.63, wm=2.66, group_size=24, bottle_ratio=1.0, se_ratio=0.0,
                 group_min_ratio=0.0, stem_width=32, downsample="conv1x1", linear_out=False, preact=False,
                 num_features=0, act_layer="relu", norm_layer="batchnorm", in_chans=3, num_classes=1000,
                 output_stride=32, global_pool="avg", drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        act_layer = get_act_layer(act_layer)
        norm_layer = norm_act_layer(norm_layer, act_layer)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.preact = preact
        if preact:
            self.stem = create_conv2d(in_chans, stem_width, 3, stride=2)
        else:
            self.stem = ConvNormAct(in_chans, stem_width, 3, stride=2, norm_layer=norm_layer)
        self.feature_info = [dict(num_chs=stem_width, reduction=2, module="stem")]
        stages = self._stage_args(depth, w0, wa, wm, group_size, bottle_ratio, group_min_ratio, output_stride,
                                  drop_path_rate)
        block_fn = PreBottleneck if preact else Bottleneck
        width = stem_width
        reduction = 2
        for i, stage in enumerate(stages, start=1):
            self.add_module(f"s{i}", RegStage(in_chs=width, block_fn=block_fn, downsample=downsample,
                                              se_ratio=se_ratio, linear_out=linear_out, act_layer=act_layer,
                                              norm_layer=norm_layer, **stage))
            width = stage["out_chs"]
            reduction *= stage["stride"]
            self.feature_info.append(dict(num_chs=width, reduction=reduction, module=f"s{i}"))
        if num_features:
            self.final_conv = ConvNormAct(width, num_features, 1, norm_layer=norm_layer)
            self.num_features = num_features
        else:
            self.final_conv = act_layer() if linear_out or preact else nn.Identity()
            self.num_features = width
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(zero_init_last)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's convolution) and ``classifier``."""
        return {"first_conv": "stem" if self.preact else "stem.conv", "classifier": "head.fc"}

    @staticmethod
    def _stage_args(depth, w0, wa, wm, group_size, bottle_ratio, group_min_ratio, output_stride, drop_path_rate):
        """Per stage: width, depth, stride, dilation, bottleneck ratio, group size and its blocks' drop-path rates.

        Blocks of equal generated width form a stage (there must be four); each stage strides by 2 until the
        network reaches ``output_stride``, after which it dilates instead.
        """
        widths, depths = np.unique(block_widths(wa, w0, wm, depth), return_counts=True)
        if len(widths) != 4:
            raise ValueError(f"the parameters give {len(widths)} stages of distinct width, RegNet needs 4")
        widths, group_sizes = compatible_widths_groups(widths.tolist(), [bottle_ratio] * 4, [group_size] * 4,
                                                       group_min_ratio)
        rates = torch.linspace(0, drop_path_rate, int(depths.sum())).tolist()
        stages = []
        net_stride = 2
        dilation = 1
        for width, stage_depth, stage_group_size in zip(widths, depths.tolist(), group_sizes):
            if net_stride >= output_stride:
                dilation *= 2
                stride = 1
            else:
                stride = 2
                net_stride *= 2
            stages.append(dict(out_chs=width, depth=stage_depth, stride=stride, dilation=dilation,
                               bottle_ratio=bottle_ratio, group_size=stage_group_size,
                               drop_path_rates=rates[:stage_depth]))
            rates = rates[stage_depth:]
        return stages

    def _init_weights(self, zero_init_last):
        """timm's initialisation, in module order: convolutions N(0, 2 / fan-out) with fan-out per group and zero
        biases, linear layers N(0, 0.01^2) with zero biases; optionally the bottlenecks' last norm scales zeroed."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
                nn.init.normal_(module.weight, 0, math.sqrt(2.0 / fan_out))
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.zeros_(module.bias)
            elif zero_init_last and hasattr(module, "zero_init_last"):
                module.zero_init_last()

    def forward_features(self, x):
        """The map after the last stage and ``final_conv`` (N, num_features, H / 32, W / 32 at output_stride 32)."""
        x = self.stem(x)
        x = self.s1(x)
        x = self.s2(x)
        x = self.s3(x)
        x = self.s4(x)
        x = self.final_conv(x)
        return x

    def _feature_layers(self):
        """The layers whose outputs are the five feature maps: the stem and the stages ``s1`` to ``s4``."""
        return [self.stem, self.s1, self.s2, self.s3, self.s4]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature maps picked by ``indices`` (None: all, n: the last n, or a list; 0 is the stem's, 1 to 4 the
        stages', all before ``final_conv``, as ``feature_info`` lists them) and, unless ``intermediates_only``, the
        final map, through ``final_conv`` when the last stage ran. ``stop_early`` skips the stages after the last
        one picked; ``norm`` does nothing (no final norm)."""
        take, layers = intermediate_stages(self._feature_layers(), indices, stop_early, output_fmt)
        x, intermediates = run_stages(x, layers, take)
        if intermediates_only:
            return intermediates
        if len(layers) == len(self.feature_info):
            x = self.final_conv(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Turn the stages after the last feature map ``indices`` picks into identities (timm keeps their names);
        when stages go, or when a ``final_conv`` convolution (which never feeds a feature map) goes with
        ``prune_norm`` or ``prune_head``, ``final_conv`` and the head go, ``num_features`` then the last picked
        map's width. ``prune_head`` drops the head anyway. Returns the absolute indices."""
        take = take_indices(len(self.feature_info), indices)
        last_pick = max(take)
        has_conv_head = isinstance(self.final_conv, ConvNormAct)
        prune_end = last_pick < len(self.feature_info) - 1 or ((prune_norm or prune_head) and has_conv_head)
        for stage in range(last_pick + 1, len(self.feature_info)):
            setattr(self, f"s{stage}", nn.Identity())
        if prune_end:
            self.final_conv = nn.Identity()
            self.num_features = self.head_hidden_size = self.feature_info[last_pick]["num_chs"]
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


def _create_regnet(variant, pretrained, progress, kwargs, **cfg):
    """Build a registered variant: its configuration ``cfg`` overridden by the caller's ``kwargs`` (as timm lays
    extra arguments over its RegNetCfg)."""
    return build_model(RegNet, variant, pretrained, progress=progress, **dict(cfg, **kwargs))


_Y = dict(se_ratio=0.25)
_TV = dict(group_min_ratio=0.9)
_V = dict(se_ratio=0.25, preact=True, act_layer="silu")
_Z = dict(depth=28, w0=48, wa=14.5, wm=2.226, group_size=8, bottle_ratio=4.0, se_ratio=0.25, downsample=None,
          linear_out=True, act_layer="silu", zero_init_last=False)


@register_model
def regnetx_002(pretrained=False, progress=True, **kwargs):
    """RegNetX-200MF."""
    return _create_regnet("regnetx_002", pretrained, progress, kwargs, depth=13, w0=24, wa=36.44, wm=2.49, group_size=8)


@register_model
def regnetx_004(pretrained=False, progress=True, **kwargs):
    """RegNetX-400MF."""
    return _create_regnet("regnetx_004", pretrained, progress, kwargs, depth=22, w0=24, wa=24.48, wm=2.54,
                          group_size=16)


@register_model
def regnetx_004_tv(pretrained=False, progress=True, **kwargs):
    """RegNetX-400MF with torchvision's group rounding."""
    return _create_regnet("regnetx_004_tv", pretrained, progress, kwargs, depth=22, w0=24, wa=24.48, wm=2.54,
                          group_size=16, **_TV)


@register_model
def regnetx_006(pretrained=False, progress=True, **kwargs):
    """RegNetX-600MF."""
    return _create_regnet("regnetx_006", pretrained, progress, kwargs, depth=16, w0=48, wa=36.97, wm=2.24,
                          group_size=24)


@register_model
def regnetx_008(pretrained=False, progress=True, **kwargs):
    """RegNetX-800MF."""
    return _create_regnet("regnetx_008", pretrained, progress, kwargs, depth=16, w0=56, wa=35.73, wm=2.28,
                          group_size=16)


@register_model
def regnetx_016(pretrained=False, progress=True, **kwargs):
    """RegNetX-1.6GF."""
    return _create_regnet("regnetx_016", pretrained, progress, kwargs, depth=18, w0=80, wa=34.01, wm=2.25,
                          group_size=24)


@register_model
def regnetx_032(pretrained=False, progress=True, **kwargs):
    """RegNetX-3.2GF."""
    return _create_regnet("regnetx_032", pretrained, progress, kwargs, depth=25, w0=88, wa=26.31, wm=2.25,
                          group_size=48)


@register_model
def regnetx_040(pretrained=False, progress=True, **kwargs):
    """RegNetX-4.0GF."""
    return _create_regnet("regnetx_040", pretrained, progress, kwargs, depth=23, w0=96, wa=38.65, wm=2.43,
                          group_size=40)


@register_model
def regnetx_064(pretrained=False, progress=True, **kwargs):
    """RegNetX-6.4GF."""
    return _create_regnet("regnetx_064", pretrained, progress, kwargs, depth=17, w0=184, wa=60.83, wm=2.07,
                          group_size=56)


@register_model
def regnetx_080(pretrained=False, progress=True, **kwargs):
    """RegNetX-8.0GF."""
    return _create_regnet("regnetx_080", pretrained, progress, kwargs, depth=23, w0=80, wa=49.56, wm=2.88,
                          group_size=120)


@register_model
def regnetx_120(pretrained=False, progress=True, **kwargs):
    """RegNetX-12GF."""
    return _create_regnet("regnetx_120", pretrained, progress, kwargs, depth=19, w0=168, wa=73.36, wm=2.37,
                          group_size=112)


@register_model
def regnetx_160(pretrained=False, progress=True, **kwargs):
    """RegNetX-16GF."""
    return _create_regnet("regnetx_160", pretrained, progress, kwargs, depth=22, w0=216, wa=55.59, wm=2.1,
                          group_size=128)


@register_model
def regnetx_320(pretrained=False, progress=True, **kwargs):
    """RegNetX-32GF."""
    return _create_regnet("regnetx_320", pretrained, progress, kwargs, depth=23, w0=320, wa=69.86, wm=2.0,
                          group_size=168)


@register_model
def regnety_002(pretrained=False, progress=True, **kwargs):
    """RegNetY-200MF (squeeze-and-excitation)."""
    return _create_regnet("regnety_002", pretrained, progress, kwargs, depth=13, w0=24, wa=36.44, wm=2.49,
                          group_size=8, **_Y)


@register_model
def regnety_004(pretrained=False, progress=True, **kwargs):
    """RegNetY-400MF (squeeze-and-excitation)."""
    return _create_regnet("regnety_004", pretrained, progress, kwargs, depth=16, w0=48, wa=27.89, wm=2.09,
                          group_size=8, **_Y)


@register_model
def regnety_006(pretrained=False, progress=True, **kwargs):
    """RegNetY-600MF (squeeze-and-excitation)."""
    return _create_regnet("regnety_006", pretrained, progress, kwargs, depth=15, w0=48, wa=32.54, wm=2.32,
                          group_size=16, **_Y)


@register_model
def regnety_008(pretrained=False, progress=True, **kwargs):
    """RegNetY-800MF (squeeze-and-excitation)."""
    return _create_regnet("regnety_008", pretrained, progress, kwargs, depth=14, w0=56, wa=38.84, wm=2.4,
                          group_size=16, **_Y)


@register_model
def regnety_008_tv(pretrained=False, progress=True, **kwargs):
    """RegNetY-800MF (squeeze-and-excitation) with torchvision's group rounding."""
    return _create_regnet("regnety_008_tv", pretrained, progress, kwargs, depth=14, w0=56, wa=38.84, wm=2.4,
                          group_size=16, **_Y, **_TV)


@register_model
def regnety_016(pretrained=False, progress=True, **kwargs):
    """RegNetY-1.6GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_016", pretrained, progress, kwargs, depth=27, w0=48, wa=20.71, wm=2.65,
                          group_size=24, **_Y)


@register_model
def regnety_032(pretrained=False, progress=True, **kwargs):
    """RegNetY-3.2GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_032", pretrained, progress, kwargs, depth=21, w0=80, wa=42.63, wm=2.66,
                          group_size=24, **_Y)


@register_model
def regnety_040(pretrained=False, progress=True, **kwargs):
    """RegNetY-4.0GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_040", pretrained, progress, kwargs, depth=22, w0=96, wa=31.41, wm=2.24,
                          group_size=64, **_Y)


@register_model
def regnety_064(pretrained=False, progress=True, **kwargs):
    """RegNetY-6.4GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_064", pretrained, progress, kwargs, depth=25, w0=112, wa=33.22, wm=2.27,
                          group_size=72, **_Y)


@register_model
def regnety_080(pretrained=False, progress=True, **kwargs):
    """RegNetY-8.0GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_080", pretrained, progress, kwargs, depth=17, w0=192, wa=76.82, wm=2.19,
                          group_size=56, **_Y)


@register_model
def regnety_080_tv(pretrained=False, progress=True, **kwargs):
    """RegNetY-8.0GF (squeeze-and-excitation) with torchvision's group rounding."""
    return _create_regnet("regnety_080_tv", pretrained, progress, kwargs, depth=17, w0=192, wa=76.82, wm=2.19,
                          group_size=56, **_Y, **_TV)


@register_model
def regnety_120(pretrained=False, progress=True, **kwargs):
    """RegNetY-12GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_120", pretrained, progress, kwargs, depth=19, w0=168, wa=73.36, wm=2.37,
                          group_size=112, **_Y)


@register_model
def regnety_160(pretrained=False, progress=True, **kwargs):
    """RegNetY-16GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_160", pretrained, progress, kwargs, depth=18, w0=200, wa=106.23, wm=2.48,
                          group_size=112, **_Y)


@register_model
def regnety_320(pretrained=False, progress=True, **kwargs):
    """RegNetY-32GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_320", pretrained, progress, kwargs, depth=20, w0=232, wa=115.89, wm=2.53,
                          group_size=232, **_Y)


@register_model
def regnety_640(pretrained=False, progress=True, **kwargs):
    """RegNetY-64GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_640", pretrained, progress, kwargs, depth=20, w0=352, wa=147.48, wm=2.4,
                          group_size=328, **_Y)


@register_model
def regnety_1280(pretrained=False, progress=True, **kwargs):
    """RegNetY-128GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_1280", pretrained, progress, kwargs, depth=27, w0=456, wa=160.83, wm=2.52,
                          group_size=264, **_Y)


@register_model
def regnety_2560(pretrained=False, progress=True, **kwargs):
    """RegNetY-256GF (squeeze-and-excitation)."""
    return _create_regnet("regnety_2560", pretrained, progress, kwargs, depth=27, w0=640, wa=230.83, wm=2.53,
                          group_size=373, **_Y)


@register_model
def regnety_040_sgn(pretrained=False, progress=True, **kwargs):
    """RegNetY-4.0GF with GroupNorm (groups of 16 channels) and SiLU instead of BatchNorm and ReLU."""
    return _create_regnet("regnety_040_sgn", pretrained, progress, kwargs, depth=22, w0=96, wa=31.41, wm=2.24,
                          group_size=64, **_Y, act_layer="silu", norm_layer=partial(GroupNormAct, group_size=16))


@register_model
def regnetv_040(pretrained=False, progress=True, **kwargs):
    """RegNetV-4.0GF: RegNetY with pre-activation blocks and SiLU."""
    return _create_regnet("regnetv_040", pretrained, progress, kwargs, depth=22, w0=96, wa=31.41, wm=2.24,
                          group_size=64, **_V)


@register_model
def regnetv_064(pretrained=False, progress=True, **kwargs):
    """RegNetV-6.4GF: RegNetY with pre-activation blocks and SiLU, average-pool shortcuts."""
    return _create_regnet("regnetv_064", pretrained, progress, kwargs, depth=25, w0=112, wa=33.22, wm=2.27,
                          group_size=72, **_V, downsample="avg")


@register_model
def regnetz_005(pretrained=False, progress=True, **kwargs):
    """RegNetZ-500MF (ClassyVision's configuration): inverted bottlenecks (ratio 4, groups of 4) with SE and SiLU,
    linear block outputs, no residual where the width changes, and a 1x1 head convolution to 1024 channels."""
    cfg = dict(_Z, depth=21, w0=16, wa=10.7, wm=2.51, group_size=4, num_features=1024)
    return _create_regnet("regnetz_005", pretrained, progress, kwargs, **cfg)


@register_model
def regnetz_040(pretrained=False, progress=True, **kwargs):
    """RegNetZ-4.0GF: inverted bottlenecks (ratio 4) with SE and SiLU, linear block outputs, no residual where
    the width changes."""
    return _create_regnet("regnetz_040", pretrained, progress, kwargs, **_Z)


@register_model
def regnetz_040_h(pretrained=False, progress=True, **kwargs):
    """RegNetZ-4.0GF-H: inverted bottlenecks (ratio 4) with SE and SiLU, linear block outputs, no residual where
    the width changes, and a 1x1 head convolution to 1536 channels."""
    return _create_regnet("regnetz_040_h", pretrained, progress, kwargs, **_Z, num_features=1536)
