"""The blocks and builder shared by timm's EfficientNet and MobileNetV3 modules, with timm's module names.

Layers: EfficientNet's squeeze-and-excitation and layer scale (the convolutions, "same" padded, mixed or CondConv,
come from ``_conv``; BatchNorm with its activation, anti-aliasing and ConvNormAct from ``_layers``; global context
attention from ``_attention``). Every block takes its norm-and-activation layer as ``norm_layer`` (BatchNorm by
default), which ``build_stages`` hands to all of them. Blocks, named as the stage strings name them: ``cn``
(ConvBnAct), ``ds`` / ``dsa`` (DepthwiseSeparableConv), ``ir`` (InvertedResidual, MBConv; CondConvResidual with
``cc``), ``er`` (EdgeResidual, FusedMBConv), ``uir`` (MobileNetV4's UniversalInvertedResidual) and ``mqa``
(MobileNetV4's MobileAttention with multi-query attention). ``decode_arch_def`` reads the stage strings,
``build_stages`` turns them into stages of blocks and ``init_weights_goog`` gives TensorFlow's initialisation.
"""
import math
import re
from functools import partial

import engine as torch
from engine import nn

from .._utils import _make_divisible
from ._conv import CondConv2d, create_conv2d, num_groups
from ._layers import BatchNormAct2d, ConvNormAct, create_aa, drop_path_module, get_act_layer

__all__ = ["decode_arch_def", "round_channels", "build_stages", "init_weights_goog", "SqueezeExcite", "LayerScale2d",
           "ConvBnAct", "DepthwiseSeparableConv", "InvertedResidual", "CondConvResidual", "EdgeResidual",
           "UniversalInvertedResidual", "MultiQueryAttention2d", "MobileAttention"]

# the stage strings' activation codes ('nre', 'nhs'...) and timm's names for them
_ACTIVATIONS = {"re": "relu", "r6": "relu6", "hs": "hard_swish", "sw": "swish"}


# ---- stage strings ----------------------------------------------------------------------------------------------


def _parse_kernel(value):
    """A kernel option: '3' is one kernel size, '3.5.7' a list of them (a mixed convolution)."""
    if value.isdigit():
        return int(value)
    return [int(k) for k in value.split(".")]


def _split_options(ops):
    """A block string's options after its kind: {'k': '3', 'se': '0.25', ...}, 'skip' / 'noskip' as True and the
    activation ('n' + re / r6 / hs / sw) as its class."""
    options = {}
    for op in ops:
        if op in ("skip", "noskip"):
            options[op] = True
        elif op.startswith("n"):
            if op[1:] in _ACTIVATIONS:
                options["act_layer"] = get_act_layer(_ACTIVATIONS[op[1:]])
        else:
            key, value = re.split(r"(\d.*)", op)[:2]
            options[key] = value
    return options


def _decode_block(block_str):
    """One stage string ('ir_r2_k3_s2_e6_c24_se0.25', options in any order after the block kind) as the block's
    keyword arguments, with timm's names, and its repeat count. Besides the kernels, stride, expansion, channels
    and squeeze-and-excitation: 'd1' starts EfficientNet-X's space-to-depth region (``s2d``, ds / ir), 'cc4' makes
    an ir block a CondConv block with 4 experts, 'fc24' sizes an er block's expansion from 24 channels instead of
    its input's, 'gs64' groups a convolution in groups of 64 channels."""
    kind, *ops = block_str.split("_")
    options = _split_options(ops)
    args = dict(block_type=kind, out_chs=int(options["c"]), stride=int(options["s"]))
    if "act_layer" in options:
        args["act_layer"] = options["act_layer"]
    se_ratio = float(options.get("se", 0.0))
    noskip = "noskip" in options
    start_kernel = _parse_kernel(options["a"]) if "a" in options else None
    end_kernel = _parse_kernel(options["p"]) if "p" in options else None
    if kind in ("ds", "dsa"):
        args.update(dw_kernel_size=_parse_kernel(options["k"]), pw_kernel_size=end_kernel or 1, se_ratio=se_ratio,
                    pw_act=kind == "dsa", noskip=kind == "dsa" or noskip)
    elif kind == "ir":
        args.update(dw_kernel_size=_parse_kernel(options["k"]), exp_kernel_size=start_kernel or 1,
                    pw_kernel_size=end_kernel or 1, exp_ratio=float(options["e"]), se_ratio=se_ratio, noskip=noskip)
        if "cc" in options:
            args["num_experts"] = int(options["cc"])
    elif kind == "er":
        args.update(exp_kernel_size=_parse_kernel(options["k"]), pw_kernel_size=end_kernel or 1,
                    exp_ratio=float(options["e"]), se_ratio=se_ratio, noskip=noskip)
        if "fc" in options:
            args["force_in_chs"] = int(options["fc"])
    elif kind == "cn":
        args.update(kernel_size=int(options["k"]), skip="skip" in options)
    elif kind == "uir":
        args.update(dw_kernel_size_start=start_kernel or 0, dw_kernel_size_mid=_parse_kernel(options["k"]),
                    dw_kernel_size_end=end_kernel or 0, exp_ratio=float(options["e"]), se_ratio=se_ratio,
                    noskip=noskip)
    elif kind == "mqa":
        args.update(dw_kernel_size=_parse_kernel(options["k"]), num_heads=int(options["h"]),
                    key_dim=int(options["d"]), value_dim=int(options["d"]), kv_stride=int(options.get("v", 1)),
                    noskip=noskip)
    else:
        raise ValueError(f"unknown block type '{kind}' in '{block_str}'")
    if kind in ("ds", "dsa", "ir") and int(options.get("d", 0)) > 0:
        args["s2d"] = True
    if "gs" in options:
        args["group_size"] = int(options["gs"])
    return args, int(options["r"])


def _scale_depth(stage_args, repeats, depth_multiplier, depth_trunc="ceil"):
    """A stage's block list with its repeats scaled by ``depth_multiplier``: the total rounded up ('ceil') or to
    the nearest ('round', at least one), then shared out from the last block definition backwards, each keeping
    at least one block."""
    remaining = sum(repeats)
    if depth_trunc == "round":
        remaining_scaled = max(1, round(remaining * depth_multiplier))
    else:
        remaining_scaled = int(math.ceil(remaining * depth_multiplier))
    scaled = []
    for repeat in reversed(repeats):
        count = max(1, round(repeat / remaining * remaining_scaled))
        scaled.append(count)
        remaining -= repeat
        remaining_scaled -= count
    blocks = []
    for args, count in zip(stage_args, reversed(scaled)):
        blocks.extend(dict(args) for _ in range(count))
    return blocks


def decode_arch_def(arch_def, depth_multiplier=1.0, depth_trunc="ceil", fix_first_last=False, experts_multiplier=1,
                    group_size=None):
    """Stage strings (a list of lists of block strings) as a list of stages, each a list of block arguments.

    ``depth_multiplier`` scales every stage's depth, or each its own when a tuple (one per stage); ``depth_trunc``
    says how scaled depths round ('ceil' or 'round'), ``fix_first_last`` keeps the first and last stages' depths
    unscaled; ``experts_multiplier`` multiplies CondConv blocks' numbers of experts; ``group_size`` (where given)
    groups the convolutions of every block whose string sets no 'gs' (timm's grouped EfficientNets)."""
    if not isinstance(depth_multiplier, tuple):
        depth_multiplier = (depth_multiplier,) * len(arch_def)
    if len(depth_multiplier) != len(arch_def):
        raise ValueError(f"{len(depth_multiplier)} depth multipliers for {len(arch_def)} stages")
    stages = []
    for i, (block_strings, multiplier) in enumerate(zip(arch_def, depth_multiplier)):
        decoded = [_decode_block(block_str) for block_str in block_strings]
        for args, _ in decoded:
            if "num_experts" in args:
                args["num_experts"] *= experts_multiplier
            if group_size is not None:
                args.setdefault("group_size", group_size)
        fixed = fix_first_last and i in (0, len(arch_def) - 1)
        stages.append(_scale_depth([args for args, _ in decoded], [r for _, r in decoded],
                                   1.0 if fixed else multiplier, depth_trunc))
    return stages


def round_channels(channels, multiplier=1.0, round_limit=0.9, divisor=8):
    """``channels`` scaled by a width ``multiplier``, rounded to a multiple of ``divisor`` (never below
    ``round_limit`` of the scaled value)."""
    return _make_divisible(channels * multiplier, divisor, round_limit=round_limit)


# ---- layers -----------------------------------------------------------------------------------------------------


class SqueezeExcite(nn.Module):
    """Squeeze-and-excitation: the channels' global means through a 1x1 reduction to ``rd_ratio`` of them (rounded
    by ``rd_round_fn``), the activation (``force_act_layer`` where given, else the block's) and a 1x1 expansion
    give a gate (``gate_layer``: sigmoid, or MobileNetV3's hard sigmoid) that scales each channel."""

    def __init__(self, in_chs, rd_ratio=0.25, act_layer=nn.ReLU, gate_layer=nn.Sigmoid, force_act_layer=None,
                 rd_round_fn=round):
        super().__init__()
        rd_channels = rd_round_fn(in_chs * rd_ratio)
        self.conv_reduce = nn.Conv2d(in_chs, rd_channels, 1)
        self.act1 = (force_act_layer or act_layer)()
        self.conv_expand = nn.Conv2d(rd_channels, in_chs, 1)
        self.gate = gate_layer()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.conv_reduce(scale)
        scale = self.act1(scale)
        scale = self.conv_expand(scale)
        return x * self.gate(scale)


def _aa_or_identity(aa_layer, channels, stride):
    """A block's ``aa`` slot: the anti-aliasing layer for a strided block, else an identity."""
    aa = create_aa(aa_layer, channels, stride, enable=stride > 1)
    return aa if aa is not None else nn.Identity()


class LayerScale2d(nn.Module):
    """A learned per-channel scale of an NCHW map (``gamma``), starting at ``init_values``."""

    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x):
        return x * self.gamma.view(1, -1, 1, 1)


# ---- blocks -----------------------------------------------------------------------------------------------------


def _se_or_identity(se_layer, chs, act_layer):
    """Squeeze-and-excitation over ``chs`` channels built by ``se_layer``, or an identity without it."""
    return se_layer(chs, act_layer=act_layer) if se_layer else nn.Identity()


class _Residual(nn.Module):
    """A block whose output is added to its input where shapes allow (``has_skip``), after stochastic depth."""

    def residual(self, x, shortcut):
        """``x`` plus the block's input when the block has a skip connection."""
        if self.has_skip:
            x = self.drop_path(x) + shortcut
        return x


def _space_to_depth(in_chs, act_layer, norm_layer):
    """EfficientNet-X's space-to-depth, at the start of its region: a 2x2 stride-2 convolution ("same" padded) to
    four times the channels, with ``norm_layer``'s norm and activation (``conv_s2d``, ``bn_s2d``)."""
    conv = create_conv2d(in_chs, 4 * in_chs, 2, stride=2, pad_type="same")
    bn = norm_layer(4 * in_chs, act_layer=act_layer)
    return conv, bn


class ConvBnAct(_Residual):
    """A convolution, a norm and activation (``norm_layer``, BatchNorm by default); with ``skip``, added to the
    input where shapes allow. ``group_size`` groups the convolution (0: one group)."""

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, dilation=1, skip=False, pad_type="",
                 act_layer=nn.ReLU, norm_layer=BatchNormAct2d, aa_layer=None, drop_path_rate=0.0, group_size=0):
        super().__init__()
        self.has_skip = skip and stride == 1 and in_chs == out_chs
        use_aa = bool(aa_layer) and stride > 1
        self.conv = create_conv2d(in_chs, out_chs, kernel_size, 1 if use_aa else stride, dilation,
                                  groups=num_groups(group_size, in_chs), pad_type=pad_type)
        self.bn1 = norm_layer(out_chs, act_layer=act_layer)
        self.aa = _aa_or_identity(aa_layer, out_chs, stride)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv(x)
        x = self.bn1(x)
        x = self.aa(x)
        return self.residual(x, shortcut)


class DepthwiseSeparableConv(_Residual):
    """A depthwise convolution with norm and activation, squeeze-and-excitation, then a pointwise convolution
    with norm (and activation with ``pw_act``); residual unless ``noskip`` or the shape changes. ``norm_layer``
    builds the norms with their activations (BatchNorm by default).

    ``s2d=1`` (the first block of EfficientNet-X's space-to-depth region) first folds each 2x2 patch into the
    channels (``conv_s2d``, ``bn_s2d``) and halves the depthwise kernel (rounded up; 'same' padded when 2).
    ``group_size`` > 1 makes the depthwise convolution a grouped one (groups of that many channels)."""

    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, dilation=1, pw_kernel_size=1, pw_act=False,
                 noskip=False, s2d=0, pad_type="", act_layer=nn.ReLU, norm_layer=BatchNormAct2d, aa_layer=None,
                 se_layer=None, drop_path_rate=0.0, group_size=1):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        use_aa = bool(aa_layer) and stride > 1
        self.conv_s2d = None
        dw_pad_type = pad_type
        if s2d == 1:
            self.conv_s2d, self.bn_s2d = _space_to_depth(in_chs, act_layer, norm_layer)
            in_chs *= 4
            dw_kernel_size = (dw_kernel_size + 1) // 2
            dw_pad_type = "same" if dw_kernel_size == 2 else pad_type
            use_aa = False
        self.conv_dw = create_conv2d(in_chs, in_chs, dw_kernel_size, 1 if use_aa else stride, dilation,
                                     groups=num_groups(group_size, in_chs), pad_type=dw_pad_type)
        self.bn1 = norm_layer(in_chs, act_layer=act_layer)
        # timm sizes this layer by the output's channels
        self.aa = _aa_or_identity(aa_layer, out_chs, stride)
        self.se = _se_or_identity(se_layer, in_chs, act_layer)
        self.conv_pw = create_conv2d(in_chs, out_chs, pw_kernel_size, pad_type=pad_type)
        self.bn2 = norm_layer(out_chs, act_layer=act_layer, apply_act=pw_act)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        if self.conv_s2d is not None:
            x = self.conv_s2d(x)
            x = self.bn_s2d(x)
        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pw(x)
        x = self.bn2(x)
        return self.residual(x, shortcut)


class InvertedResidual(_Residual):
    """MobileNetV2's inverted bottleneck (MBConv): a pointwise expansion to ``exp_ratio`` times the channels, a
    depthwise convolution, squeeze-and-excitation, a linear pointwise projection; residual unless ``noskip`` or
    the shape changes. Kernel sizes may be lists (MixNet's mixed convolutions). ``s2d=1``: the space-to-depth
    start of ``DepthwiseSeparableConv``. ``num_experts`` (``CondConvResidual``) makes the three convolutions
    CondConv ones. ``norm_layer`` builds the norms with their activations (BatchNorm by default). ``group_size`` > 1
    makes the depthwise convolution a grouped one (groups of that many channels)."""

    def __init__(self, in_chs, out_chs, dw_kernel_size=3, stride=1, dilation=1, exp_ratio=1.0, exp_kernel_size=1,
                 pw_kernel_size=1, noskip=False, s2d=0, pad_type="", act_layer=nn.ReLU, norm_layer=BatchNormAct2d,
                 aa_layer=None, se_layer=None, drop_path_rate=0.0, num_experts=0, group_size=1):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        use_aa = bool(aa_layer) and stride > 1
        self.conv_s2d = None
        dw_pad_type = pad_type
        if s2d == 1:
            self.conv_s2d, self.bn_s2d = _space_to_depth(in_chs, act_layer, norm_layer)
            in_chs *= 4
            dw_kernel_size = (dw_kernel_size + 1) // 2
            dw_pad_type = "same" if dw_kernel_size == 2 else pad_type
            use_aa = False
        mid_chs = _make_divisible(in_chs * exp_ratio, 8)
        self.conv_pw = create_conv2d(in_chs, mid_chs, exp_kernel_size, pad_type=pad_type, num_experts=num_experts)
        self.bn1 = norm_layer(mid_chs, act_layer=act_layer)
        self.conv_dw = create_conv2d(mid_chs, mid_chs, dw_kernel_size, 1 if use_aa else stride, dilation,
                                     groups=num_groups(group_size, mid_chs), pad_type=dw_pad_type,
                                     num_experts=num_experts)
        self.bn2 = norm_layer(mid_chs, act_layer=act_layer)
        self.aa = _aa_or_identity(aa_layer, mid_chs, stride)
        self.se = _se_or_identity(se_layer, mid_chs, act_layer)
        self.conv_pwl = create_conv2d(mid_chs, out_chs, pw_kernel_size, pad_type=pad_type, num_experts=num_experts)
        self.bn3 = norm_layer(out_chs, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        if self.conv_s2d is not None:
            x = self.conv_s2d(x)
            x = self.bn_s2d(x)
        x = self.conv_pw(x)
        x = self.bn1(x)
        x = self.conv_dw(x)
        x = self.bn2(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pwl(x)
        x = self.bn3(x)
        return self.residual(x, shortcut)


class CondConvResidual(InvertedResidual):
    """EfficientNet-CondConv's inverted bottleneck: ``InvertedResidual`` with CondConv convolutions of
    ``num_experts`` experts, whose routing weights come from the block's input: global average pooling, a linear
    layer (``routing_fn``) and a sigmoid, one weight per expert and example."""

    def __init__(self, in_chs, out_chs, num_experts=4, **kwargs):
        super().__init__(in_chs, out_chs, num_experts=num_experts, **kwargs)
        self.routing_fn = nn.Linear(in_chs, num_experts)

    def forward(self, x):
        shortcut = x
        routing_weights = torch.sigmoid(self.routing_fn(x.mean((2, 3))))
        x = self.conv_pw(x, routing_weights)
        x = self.bn1(x)
        x = self.conv_dw(x, routing_weights)
        x = self.bn2(x)
        x = self.se(x)
        x = self.conv_pwl(x, routing_weights)
        x = self.bn3(x)
        return self.residual(x, shortcut)


class EdgeResidual(_Residual):
    """EfficientNetV2's fused MBConv: one full convolution expands to ``exp_ratio`` times the channels (replacing
    the pointwise expansion and the depthwise convolution), optional squeeze-and-excitation, a linear pointwise
    projection; residual unless ``noskip`` or the shape changes. ``force_in_chs`` sizes the expansion from that
    many channels instead of the input's (EfficientNet-EdgeTPU's first block); ``group_size`` splits the expansion
    into groups of that many output channels (0: one group). ``norm_layer`` builds the norms with their activations
    (BatchNorm by default)."""

    def __init__(self, in_chs, out_chs, exp_kernel_size=3, stride=1, dilation=1, exp_ratio=1.0, pw_kernel_size=1,
                 noskip=False, force_in_chs=0, group_size=0, pad_type="", act_layer=nn.ReLU,
                 norm_layer=BatchNormAct2d, aa_layer=None, se_layer=None, drop_path_rate=0.0):
        super().__init__()
        mid_chs = _make_divisible((force_in_chs or in_chs) * exp_ratio, 8)
        groups = mid_chs // group_size if group_size else 1
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        use_aa = bool(aa_layer) and stride > 1
        self.conv_exp = create_conv2d(in_chs, mid_chs, exp_kernel_size, 1 if use_aa else stride, dilation, groups,
                                      pad_type=pad_type)
        self.bn1 = norm_layer(mid_chs, act_layer=act_layer)
        self.aa = _aa_or_identity(aa_layer, mid_chs, stride)
        self.se = _se_or_identity(se_layer, mid_chs, act_layer)
        self.conv_pwl = create_conv2d(mid_chs, out_chs, pw_kernel_size, pad_type=pad_type)
        self.bn2 = norm_layer(out_chs, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.conv_exp(x)
        x = self.bn1(x)
        x = self.aa(x)
        x = self.se(x)
        x = self.conv_pwl(x)
        x = self.bn2(x)
        return self.residual(x, shortcut)


def _optional(module):
    """``module``, or an identity in its slot when there is none."""
    return module if module is not None else nn.Identity()


class UniversalInvertedResidual(_Residual):
    """MobileNetV4's universal inverted bottleneck: an optional depthwise convolution before the expansion
    (``dw_start``, kernel ``dw_kernel_size_start``), a pointwise expansion to ``exp_ratio`` times the channels, an
    optional depthwise convolution at the expanded width (``dw_mid``), squeeze-and-excitation, a linear pointwise
    projection, an optional depthwise convolution after it (``dw_end``) and a layer scale. A kernel size of 0 leaves
    its convolution out (an identity); the stride goes to the first depthwise convolution present. Its four forms:
    ExtraDW (start and mid), inverted residual (mid), ConvNeXt-like (start) and FFN (none). ``norm_layer`` builds
    each convolution's norm with its activation (BatchNorm by default)."""

    def __init__(self, in_chs, out_chs, dw_kernel_size_start=0, dw_kernel_size_mid=3, dw_kernel_size_end=0,
                 stride=1, dilation=1, exp_ratio=1.0, noskip=False, pad_type="", act_layer=nn.ReLU,
                 norm_layer=BatchNormAct2d, aa_layer=None, se_layer=None, layer_scale_init_value=1e-5,
                 drop_path_rate=0.0):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        # the block's activation bound, as ConvNormAct binds it only into BatchNorm
        norm = dict(padding=pad_type, norm_layer=partial(norm_layer, act_layer=act_layer))
        dw_start = None
        if dw_kernel_size_start:
            start_stride = 1 if dw_kernel_size_mid else stride
            dw_start = ConvNormAct(in_chs, in_chs, dw_kernel_size_start, start_stride, dilation=dilation, groups=in_chs,
                                   apply_act=False, aa_layer=aa_layer, **norm)
        self.dw_start = _optional(dw_start)
        mid_chs = _make_divisible(in_chs * exp_ratio, 8)
        self.pw_exp = ConvNormAct(in_chs, mid_chs, 1, **norm)
        dw_mid = None
        if dw_kernel_size_mid:
            dw_mid = ConvNormAct(mid_chs, mid_chs, dw_kernel_size_mid, stride, dilation=dilation, groups=mid_chs,
                                 aa_layer=aa_layer, **norm)
        self.dw_mid = _optional(dw_mid)
        self.se = _se_or_identity(se_layer, mid_chs, act_layer)
        self.pw_proj = ConvNormAct(mid_chs, out_chs, 1, apply_act=False, **norm)
        dw_end = None
        if dw_kernel_size_end:
            end_stride = 1 if dw_kernel_size_start or dw_kernel_size_mid else stride
            dw_end = ConvNormAct(out_chs, out_chs, dw_kernel_size_end, end_stride, dilation=dilation, groups=out_chs,
                                 apply_act=False, **norm)
        self.dw_end = _optional(dw_end)
        layer_scale = None
        if layer_scale_init_value is not None:
            layer_scale = LayerScale2d(out_chs, layer_scale_init_value)
        self.layer_scale = _optional(layer_scale)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.dw_start(x)
        x = self.pw_exp(x)
        x = self.dw_mid(x)
        x = self.se(x)
        x = self.pw_proj(x)
        x = self.dw_end(x)
        x = self.layer_scale(x)
        return self.residual(x, shortcut)


class MultiQueryAttention2d(nn.Module):
    """Multi-query attention over the pixels of an NCHW map (Shazeer 2019): ``num_heads`` query heads of
    ``key_dim`` channels share one key and one value head, all 1x1 projections (``query``, ``key``, ``value``,
    ``output``, bias-free). With ``kv_stride`` > 1 the keys and values come from a map first downsampled by a
    strided depthwise convolution and a norm without activation (``down_conv``, ``norm``: ``norm_layer``, BatchNorm
    by default), as MobileNetV4 does."""

    def __init__(self, dim, dim_out, num_heads=8, key_dim=64, value_dim=64, kv_stride=1, dw_kernel_size=3,
                 dilation=1, pad_type="", norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim
        self.kv_stride = kv_stride
        self.scale = key_dim ** -0.5
        self.query = nn.Sequential()
        self.query.add_module("proj", create_conv2d(dim, num_heads * key_dim, 1))
        self.key = self._kv_path(dim, key_dim, kv_stride, dw_kernel_size, dilation, pad_type, norm_layer)
        self.value = self._kv_path(dim, value_dim, kv_stride, dw_kernel_size, dilation, pad_type, norm_layer)
        self.attn_drop = nn.Dropout(0.0)
        self.output = nn.Sequential()
        self.output.add_module("proj", create_conv2d(value_dim * num_heads, dim_out, 1))
        self.output.add_module("drop", nn.Dropout(0.0))
        self.init_weights()

    @staticmethod
    def _kv_path(dim, out_dim, kv_stride, dw_kernel_size, dilation, pad_type, norm_layer):
        """The key or value path: the optional strided depthwise downsampling with ``norm_layer``'s norm, then the
        1x1 projection to ``out_dim`` channels."""
        path = nn.Sequential()
        if kv_stride > 1:
            path.add_module("down_conv", create_conv2d(dim, dim, dw_kernel_size, kv_stride, dilation, groups=dim,
                                                       pad_type=pad_type))
            path.add_module("norm", norm_layer(dim))
        path.add_module("proj", create_conv2d(dim, out_dim, 1, pad_type=pad_type))
        return path

    def init_weights(self):
        """Xavier-uniform projections and downsampling convolutions, timm's choice for these layers (run again
        after the model's TensorFlow-style initialisation)."""
        nn.init.xavier_uniform_(self.query.proj.weight)
        nn.init.xavier_uniform_(self.key.proj.weight)
        nn.init.xavier_uniform_(self.value.proj.weight)
        if self.kv_stride > 1:
            nn.init.xavier_uniform_(self.key.down_conv.weight)
            nn.init.xavier_uniform_(self.value.down_conv.weight)
        nn.init.xavier_uniform_(self.output.proj.weight)

    def forward(self, x):
        batch, _, height, width = x.shape
        q = self.query(x).reshape(batch, self.num_heads, self.key_dim, -1).transpose(-1, -2)
        k = self.key(x).flatten(2).unsqueeze(1)
        v = self.value(x).flatten(2).transpose(1, 2).unsqueeze(1)
        attn = (q * self.scale) @ k
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        out = attn @ v
        out = out.transpose(1, 2).reshape(batch, height, width, -1).permute(0, 3, 1, 2)
        return self.output(out)


class MobileAttention(_Residual):
    """MobileNetV4's attention block: a norm without activation (``norm``: ``norm_layer``, BatchNorm by default),
    multi-query attention (``attn``, its keys' and values' downsampling normalised by the plain norm
    ``attn_norm_layer``) and a layer scale, added to the input where shapes allow (``noskip`` turns that off)."""

    def __init__(self, in_chs, out_chs, stride=1, dw_kernel_size=3, dilation=1, num_heads=8, key_dim=64,
                 value_dim=64, kv_stride=1, noskip=False, pad_type="", act_layer=nn.ReLU, norm_layer=BatchNormAct2d,
                 attn_norm_layer=nn.BatchNorm2d, aa_layer=None, layer_scale_init_value=1e-5, drop_path_rate=0.0):
        super().__init__()
        self.has_skip = stride == 1 and in_chs == out_chs and not noskip
        self.norm = norm_layer(in_chs, act_layer=act_layer, apply_act=False)
        self.attn = MultiQueryAttention2d(in_chs, out_chs, num_heads, key_dim, value_dim, kv_stride, dw_kernel_size,
                                          dilation, pad_type, attn_norm_layer)
        layer_scale = None
        if layer_scale_init_value is not None:
            layer_scale = LayerScale2d(out_chs, layer_scale_init_value)
        self.layer_scale = _optional(layer_scale)
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x
        x = self.norm(x)
        x = self.attn(x)
        x = self.layer_scale(x)
        return self.residual(x, shortcut)


# ---- the builder ------------------------------------------------------------------------------------------------


_BLOCKS = {"cn": ConvBnAct, "ds": DepthwiseSeparableConv, "dsa": DepthwiseSeparableConv, "ir": InvertedResidual,
           "er": EdgeResidual, "uir": UniversalInvertedResidual, "mqa": MobileAttention}
_LAYER_SCALED = ("uir", "mqa")


def _block_class(kind, args):
    """The class of a decoded block: its kind's, a ``CondConvResidual`` for an ir block with experts."""
    if kind == "ir" and args.get("num_experts"):
        return CondConvResidual
    return _BLOCKS[kind]


def _block_kwargs(args, se_layer, se_from_exp, aa_layer, layer_scale_init_value, attn_norm_layer, kind):
    """A decoded block's arguments as its class takes them: its squeeze-and-excitation ratio turned into
    ``se_layer`` (relative to the expanded channels with ``se_from_exp``, else to the input's; a quarter of that
    where a space-to-depth region starts, the input's channels being quadrupled), the anti-aliasing layer and the
    layer scale where the model has them, and the attention's plain norm for an attention block."""
    se_ratio = args.pop("se_ratio", 0.0)
    if se_ratio and se_layer is not None:
        if not se_from_exp:
            se_ratio /= args.get("exp_ratio", 1.0)
        if args.get("s2d") == 1:
            se_ratio /= 4
        args["se_layer"] = partial(se_layer, rd_ratio=se_ratio)
    if aa_layer:
        args["aa_layer"] = aa_layer
    if kind in _LAYER_SCALED:
        args["layer_scale_init_value"] = layer_scale_init_value
    if kind == "mqa":
        args["attn_norm_layer"] = attn_norm_layer
    return args


def build_stages(block_args, in_chs, round_chs, output_stride=32, pad_type="", act_layer=nn.ReLU, bn_eps=1e-5,
                 se_layer=SqueezeExcite, se_from_exp=False, aa_layer=None, drop_path_rate=0.0,
                 layer_scale_init_value=None, norm_layer=None, attn_norm_layer=None):
    """The decoded stages ``block_args`` as a Sequential of stages (each a Sequential of blocks) after a stem of
    ``in_chs`` channels; returns it, timm's ``feature_info`` and the last block's channels.

    ``norm_layer`` builds every block's norms with their activations, as ``norm_layer(channels, apply_act=...,
    act_layer=...)``, and ``attn_norm_layer`` the plain norm of the attention blocks' downsampled keys and values,
    as ``attn_norm_layer(channels)``; both BatchNorm with epsilon ``bn_eps`` when not given.

    ``round_chs`` rounds each block's channels (and an er block's ``force_in_chs``). Strides that would take the
    reduction beyond ``output_stride`` become dilation. ``drop_path_rate`` grows linearly over the blocks (from 0
    at the first). A stage ends a feature level where the next stage strides; a first block that strides makes
    the stem (``bn1``) a level.

    EfficientNet-X's space-to-depth region: the block marked ``s2d`` halves the resolution by folding 2x2 patches
    into the channels (``s2d=1``), the blocks after it (``s2d=2``) work on four times their channels, and the next
    strided block ends the region, its stride dropped and its expansion quartered. A stage that ends inside the
    region ends no feature level.

    timm's builder first builds (and drops) an 8-channel squeeze-and-excitation module to probe its arguments;
    building one here too draws the same random numbers, so a seeded model gets timm's initial weights.
    """
    if se_layer is not None:
        se_layer(8, rd_ratio=1.0)
    if norm_layer is None:
        norm_layer = partial(BatchNormAct2d, eps=bn_eps)
    if attn_norm_layer is None:
        attn_norm_layer = partial(nn.BatchNorm2d, eps=bn_eps)
    feature_info = []
    if block_args[0][0]["stride"] > 1 or block_args[0][0].get("s2d"):
        feature_info.append(dict(module="bn1", num_chs=in_chs, stage=0, reduction=2))
    total_blocks = sum(len(stage) for stage in block_args)
    block_idx = 0
    reduction = 2
    dilation = 1
    space2depth = 0
    stages = nn.Sequential()
    for stage_idx, stage in enumerate(block_args):
        blocks = nn.Sequential()
        for i, args in enumerate(stage):
            args = dict(args)
            kind = args.pop("block_type")
            stage_stride = args.pop("stride")
            stride = stage_stride if i == 0 else 1
            if args.pop("s2d", False) and not space2depth:
                space2depth = 1
                reduction *= 2
            if space2depth == 2 and stride == 2:
                stride = 1
                args["exp_ratio"] /= 4
                space2depth = 0
            elif space2depth:
                args["s2d"] = space2depth
            block_dilation = dilation
            if stride > 1 and reduction * stride > output_stride:
                dilation *= stride
                stride = 1
            else:
                reduction *= stride
            args.setdefault("act_layer", act_layer)
            args = _block_kwargs(args, se_layer, se_from_exp, aa_layer, layer_scale_init_value, attn_norm_layer,
                                 kind)
            out_chs = round_chs(args.pop("out_chs"))
            if space2depth:
                out_chs *= 4
            if args.get("force_in_chs"):
                args["force_in_chs"] = round_chs(args["force_in_chs"])
            blocks.add_module(str(i), _block_class(kind, args)(
                in_chs, out_chs, stride=stride, dilation=block_dilation, pad_type=pad_type, norm_layer=norm_layer,
                drop_path_rate=drop_path_rate * block_idx / total_blocks, **args))
            in_chs = out_chs
            block_idx += 1
            if space2depth == 1:
                space2depth = 2
        stages.add_module(str(stage_idx), blocks)
        last_stage = stage_idx + 1 == len(block_args)
        if last_stage or (block_args[stage_idx + 1][0]["stride"] > 1 and not space2depth):
            feature_info.append(dict(stage=stage_idx + 1, reduction=reduction, module=f"blocks.{stage_idx}",
                                     num_chs=in_chs))
    return stages, feature_info, in_chs


def init_weights_goog(model):
    """TensorFlow's initialisation, in module order: convolutions N(0, 2 / fan-out) with fan-out per group (a
    CondConv's experts one by one), zero biases; BatchNorm ones and zeros; linear layers uniform within
    1 / sqrt(out_features), CondConv's routing layers within 1 / sqrt(in_features + out_features). Then, as timm
    does, every layer with its own ``init_weights`` (the attention's projections) initialises itself again."""
    for name, module in model.named_modules():
        if isinstance(module, CondConv2d):
            fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
            for kernel in module.expert_kernels():
                nn.init.normal_(kernel, 0, math.sqrt(2.0 / fan_out))
        elif isinstance(module, nn.Linear) and name.endswith("routing_fn"):
            init_range = 1.0 / math.sqrt(module.weight.shape[0] + module.weight.shape[1])
            nn.init.uniform_(module.weight, -init_range, init_range)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Conv2d):
            fan_out = module.kernel_size[0] * module.kernel_size[1] * module.out_channels // module.groups
            nn.init.normal_(module.weight, 0, math.sqrt(2.0 / fan_out))
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            init_range = 1.0 / math.sqrt(module.weight.shape[0])
            nn.init.uniform_(module.weight, -init_range, init_range)
            nn.init.zeros_(module.bias)
    for module in model.modules():
        if isinstance(module, MultiQueryAttention2d):
            module.init_weights()
