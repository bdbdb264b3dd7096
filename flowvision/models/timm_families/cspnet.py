"""Cross Stage Partial networks (Wang et al. 2019, "CSPNet: A New Backbone that can Enhance Learning Capability of
CNN") and the DarkNet-53 they extend (Redmon & Farhadi 2018, "YOLOv3: An Incremental Improvement"), as timm builds
them: cspresnet50, cspresnext50, cspdarknet53, darknet53, darknetaa53 and the CS3 models cs3darknet_m/l/x,
cs3darknet_focus_s/m/l, cs3sedarknet_l/x, cs3edgenet_x and cs3se_edgenet_x; and, without published weights (built to
train from scratch), cspresnet50d, cspresnet50w, darknet17, darknet21, sedarknet21, cs3darknet_s,
cs3darknet_focus_x and cs3sedarknet_xdw.

A network is a stem (one to three convolutions, maybe a max pool), stages of residual blocks and a classifier. A
cross stage ('csp') first downsamples, then a 1x1 convolution widens the map and splits it in two: one half runs
through the blocks and a 1x1 transition, the other half bypasses them, and a last 1x1 transition joins the two. The
'cs3' stage of the CS3 models keeps only the joining transition; a 'dark' stage (DarkNet) has no split at all. Blocks
are ResNet bottlenecks ('bottle'), DarkNet's 1x1-then-3x3 residuals ('dark') or their 3x3-then-1x1 mirror ('edge'),
optionally with squeeze-and-excitation. The "focus" stems are one 6x6 convolution of stride 2; darknetaa53
downsamples by average pooling and a 1x1 convolution. Model names, module names, ``state_dict`` keys, the
initialisation and the model API follow timm's ``cspnet`` module, so its checkpoints load as they are.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import SEModule
from ._layers import BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module, get_act_layer

__all__ = []

# timm's ConvNormAct as timm builds it here: BatchNorm with its activation in place
_conv_norm_act = partial(ConvNormAct, norm_layer=partial(BatchNormAct2d, inplace=True))


def _per_stage(value, num_stages):
    """One value per stage: a scalar repeated, a sequence cut to ``num_stages`` or padded with its last value."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return values[:num_stages] + values[-1:] * (num_stages - len(values))


def _squeeze_excite(channels, se_ratio, act_layer):
    """Squeeze-and-excitation over ``channels``, squeezed to ``se_ratio`` of them (a multiple of 8), or an
    identity when ``se_ratio`` is 0."""
    if not se_ratio:
        return nn.Identity()
    return SEModule(channels, rd_ratio=se_ratio, act_layer=act_layer)


class BottleneckBlock(nn.Module):
    """The ResNe(X)t bottleneck: 1x1 to ``out_chs * bottle_ratio`` channels, 3x3 (``groups``, ``dilation``), SE
    (``attn2``, an identity without), 1x1 back to ``out_chs`` without activation; drop-path, the input added, and
    the activation ``act3``."""

    def __init__(self, in_chs, out_chs, dilation=1, bottle_ratio=0.25, groups=1, se_ratio=0.0,
                 act_layer=nn.LeakyReLU, drop_path_rate=0.0):
        super().__init__()
        mid_chs = int(round(out_chs * bottle_ratio))
        self.conv1 = _conv_norm_act(in_chs, mid_chs, 1, act_layer=act_layer)
        self.conv2 = _conv_norm_act(mid_chs, mid_chs, 3, dilation=dilation, groups=groups, act_layer=act_layer)
        self.attn2 = _squeeze_excite(mid_chs, se_ratio, act_layer)
        self.conv3 = _conv_norm_act(mid_chs, out_chs, 1, act_layer=act_layer, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act3 = act_layer()

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv3.bn.weight)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.conv2(x)
        x = self.attn2(x)
        x = self.conv3(x)
        x = self.drop_path(x) + shortcut
        x = self.act3(x)
        return x


class DarkBlock(nn.Module):
    """DarkNet's residual: 1x1 to ``out_chs * bottle_ratio`` channels, SE (``attn``, an identity without), 3x3 back
    to ``out_chs`` (``groups``, ``dilation``), both activated; drop-path and the input added, no activation after."""

    def __init__(self, in_chs, out_chs, dilation=1, bottle_ratio=0.5, groups=1, se_ratio=0.0,
                 act_layer=nn.LeakyReLU, drop_path_rate=0.0):
        super().__init__()
        mid_chs = int(round(out_chs * bottle_ratio))
        self.conv1 = _conv_norm_act(in_chs, mid_chs, 1, act_layer=act_layer)
        self.attn = _squeeze_excite(mid_chs, se_ratio, act_layer)
        self.conv2 = _conv_norm_act(mid_chs, out_chs, 3, dilation=dilation, groups=groups, act_layer=act_layer)
        self.drop_path = drop_path_module(drop_path_rate)

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv2.bn.weight)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.attn(x)
        x = self.conv2(x)
        x = self.drop_path(x) + shortcut
        return x


class EdgeBlock(nn.Module):
    """The mirror of ``DarkBlock`` (a fused-MBConv-like residual): 3x3 to ``out_chs * bottle_ratio`` channels
    (``groups``, ``dilation``), SE (``attn``), 1x1 back to ``out_chs``, both activated; drop-path, the input added."""

    def __init__(self, in_chs, out_chs, dilation=1, bottle_ratio=0.5, groups=1, se_ratio=0.0,
                 act_layer=nn.LeakyReLU, drop_path_rate=0.0):
        super().__init__()
        mid_chs = int(round(out_chs * bottle_ratio))
        self.conv1 = _conv_norm_act(in_chs, mid_chs, 3, dilation=dilation, groups=groups, act_layer=act_layer)
        self.attn = _squeeze_excite(mid_chs, se_ratio, act_layer)
        self.conv2 = _conv_norm_act(mid_chs, out_chs, 1, act_layer=act_layer)
        self.drop_path = drop_path_module(drop_path_rate)

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv2.bn.weight)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.attn(x)
        x = self.conv2(x)
        x = self.drop_path(x) + shortcut
        return x


_BLOCKS = {"bottle": BottleneckBlock, "dark": DarkBlock, "edge": EdgeBlock}


def _downsample(in_chs, out_chs, stride, first_dilation, groups, avg_down, act_layer):
    """A stage's downsampling: a 3x3 convolution of ``stride`` (or of dilation ``first_dilation`` where a dilated
    stage replaces the stride), or with ``avg_down`` 2x2 average pooling (an identity at stride 1) and a 1x1
    convolution."""
    if avg_down:
        return nn.Sequential(
            nn.AvgPool2d(2) if stride == 2 else nn.Identity(),
            _conv_norm_act(in_chs, out_chs, 1, groups=groups, act_layer=act_layer),
        )
    return _conv_norm_act(in_chs, out_chs, 3, stride=stride, dilation=first_dilation, groups=groups,
                          act_layer=act_layer)


def _make_blocks(block_type, depth, in_chs, out_chs, drop_path_rates, **block_kwargs):
    """``depth`` blocks of ``block_type`` in a Sequential ``0``, ``1``...: the first from ``in_chs`` channels, all
    to ``out_chs``, block i with drop-path rate ``drop_path_rates[i]`` (none without rates)."""
    drop_path_rates = drop_path_rates or [0.0] * depth
    blocks = nn.Sequential()
    for i in range(depth):
        blocks.add_module(str(i), _BLOCKS[block_type](in_chs, out_chs, drop_path_rate=drop_path_rates[i],
                                                      **block_kwargs))
        in_chs = out_chs
    return blocks


class CrossStage(nn.Module):
    """CSPNet's cross stage: ``conv_down`` (an identity when the stage neither strides nor changes dilation;
    ``down_growth`` gives it ``out_chs`` channels, else it keeps ``in_chs``), ``conv_exp`` (1x1 to
    ``out_chs * expand_ratio`` channels, unactivated with ``cross_linear``), whose output is split in halves: the
    second half runs through ``depth`` blocks of ``out_chs * block_ratio`` channels and ``conv_transition_b`` (1x1
    back to a half), the first half bypasses them; ``conv_transition`` (1x1 to ``out_chs``) joins the two."""

    def __init__(self, in_chs, out_chs, stride, dilation, first_dilation, depth, block_ratio=1.0, bottle_ratio=1.0,
                 expand_ratio=1.0, groups=1, avg_down=False, down_growth=False, cross_linear=False, se_ratio=0.0,
                 block_type="bottle", act_layer=nn.LeakyReLU, drop_path_rates=None):
        super().__init__()
        self.expand_chs = int(round(out_chs * expand_ratio))
        block_out_chs = int(round(out_chs * block_ratio))
        if stride != 1 or first_dilation != dilation:
            down_chs = out_chs if down_growth else in_chs
            self.conv_down = _downsample(in_chs, down_chs, stride, first_dilation, groups, avg_down, act_layer)
        else:
            down_chs = in_chs
            self.conv_down = nn.Identity()
        self.conv_exp = _conv_norm_act(down_chs, self.expand_chs, 1, act_layer=act_layer, apply_act=not cross_linear)
        self.blocks = _make_blocks(block_type, depth, self.expand_chs // 2, block_out_chs,
                                   drop_path_rates, dilation=dilation, bottle_ratio=bottle_ratio,
                                   groups=groups, se_ratio=se_ratio, act_layer=act_layer)
        self.conv_transition_b = _conv_norm_act(block_out_chs, self.expand_chs // 2, 1, act_layer=act_layer)
        self.conv_transition = _conv_norm_act(self.expand_chs, out_chs, 1, act_layer=act_layer)

    def forward(self, x):
        x = self.conv_down(x)
        x = self.conv_exp(x)
        cross, x = torch.split(x, self.expand_chs // 2, 1)
        x = self.blocks(x)
        x = self.conv_transition_b(x)
        x = self.conv_transition(torch.cat([cross, x], 1))
        return x


class CrossStage3(nn.Module):
    """The CS3 stage: as ``CrossStage``, but the blocks run on the first half, whose output (of the half's width)
    is joined to the second half by the single transition ``conv_transition``. ``conv_down`` is None when the stage
    neither strides nor changes dilation."""

    def __init__(self, in_chs, out_chs, stride, dilation, first_dilation, depth, block_ratio=1.0, bottle_ratio=1.0,
                 expand_ratio=1.0, groups=1, avg_down=False, down_growth=False, cross_linear=False, se_ratio=0.0,
                 block_type="bottle", act_layer=nn.LeakyReLU, drop_path_rates=None):
        super().__init__()
        self.expand_chs = int(round(out_chs * expand_ratio))
        block_out_chs = int(round(out_chs * block_ratio))
        if stride != 1 or first_dilation != dilation:
            down_chs = out_chs if down_growth else in_chs
            self.conv_down = _downsample(in_chs, down_chs, stride, first_dilation, groups, avg_down, act_layer)
        else:
            down_chs = in_chs
            self.conv_down = None
        self.conv_exp = _conv_norm_act(down_chs, self.expand_chs, 1, act_layer=act_layer, apply_act=not cross_linear)
        self.blocks = _make_blocks(block_type, depth, self.expand_chs // 2, block_out_chs,
                                   drop_path_rates, dilation=dilation, bottle_ratio=bottle_ratio,
                                   groups=groups, se_ratio=se_ratio, act_layer=act_layer)
        self.conv_transition = _conv_norm_act(self.expand_chs, out_chs, 1, act_layer=act_layer)

    def forward(self, x):
        if self.conv_down is not None:
            x = self.conv_down(x)
        x = self.conv_exp(x)
        x, cross = torch.split(x, self.expand_chs // 2, 1)
        x = self.blocks(x)
        x = self.conv_transition(torch.cat([x, cross], 1))
        return x


class DarkStage(nn.Module):
    """A DarkNet stage: ``conv_down`` to ``out_chs`` (always present, stride 1 included), then ``depth`` blocks of
    ``out_chs * block_ratio`` channels on the whole map."""

    def __init__(self, in_chs, out_chs, stride, dilation, first_dilation, depth, block_ratio=1.0, bottle_ratio=1.0,
                 groups=1, avg_down=False, se_ratio=0.0, block_type="bottle", act_layer=nn.LeakyReLU,
                 drop_path_rates=None):
        super().__init__()
        self.conv_down = _downsample(in_chs, out_chs, stride, first_dilation, groups, avg_down, act_layer)
        self.blocks = _make_blocks(block_type, depth, out_chs, int(round(out_chs * block_ratio)),
                                   drop_path_rates, dilation=dilation, bottle_ratio=bottle_ratio,
                                   groups=groups, se_ratio=se_ratio, act_layer=act_layer)

    def forward(self, x):
        x = self.conv_down(x)
        x = self.blocks(x)
        return x


_STAGES = {"csp": CrossStage, "cs3": CrossStage3, "dark": DarkStage}


def create_stem(in_chans, out_chs, kernel_size, stride, padding, pool, act_layer):
    """The stem (``conv1``, ``conv2``... and ``pool``) and its feature taps (timm's ``feature_info`` entries).

    One convolution per width in ``out_chs``. A ``stride`` of 2 or 4 strides the first convolution; a ``stride`` of
    4 also strides the last one, or adds a 3x3/2 max pool when ``pool`` is 'max'. ``padding`` (None: half the
    kernel) applies to the first convolution. The taps are the outputs before each later reduction and the stem's
    output (its last entry).
    """
    if stride not in (1, 2, 4):
        raise ValueError(f"stem stride must be 1, 2 or 4, got {stride}")
    if pool and (pool != "max" or stride != 4):
        raise ValueError(f"a stem pool must be 'max' with stem stride 4, got pool={pool!r}, stride={stride}")
    widths = tuple(out_chs) if isinstance(out_chs, (tuple, list)) else (out_chs,)
    stem = nn.Sequential()
    first_padding = "" if padding is None else padding
    feature_info = []
    feature = None
    reduction = 1
    for i, width in enumerate(widths):
        name = f"conv{i + 1}"
        strided = (i == 0 and stride > 1) or (i == len(widths) - 1 and stride > 2 and not pool)
        if strided and feature is not None:
            feature_info.append(feature)
        stem.add_module(name, _conv_norm_act(in_chans, width, kernel_size, stride=2 if strided else 1,
                                             padding=first_padding if i == 0 else "", act_layer=act_layer))
        reduction *= 2 if strided else 1
        in_chans = width
        feature = dict(num_chs=width, reduction=reduction, module=f"stem.{name}")
    if pool:
        feature_info.append(feature)
        stem.add_module("pool", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        reduction *= 2
        feature = dict(num_chs=in_chans, reduction=reduction, module="stem.pool")
    feature_info.append(feature)
    return stem, feature_info


def _stage_args(depths, widths, **settings):
    """Per stage: its depth, width and each of ``settings`` (one value for all stages, or per stage)."""
    num_stages = len(depths)
    if len(widths) != num_stages:
        raise ValueError(f"{num_stages} stage depths but {len(widths)} stage widths")
    per_stage = {key: _per_stage(value, num_stages) for key, value in settings.items()}
    for key, allowed in (("stage_type", _STAGES), ("block_type", _BLOCKS)):
        unknown = set(per_stage[key]) - set(allowed)
        if unknown:
            raise ValueError(f"unknown {key} {sorted(unknown)}: expected one of {sorted(allowed)}")
    return [dict(depth=depths[i], out_chs=widths[i], **{k: v[i] for k, v in per_stage.items()})
            for i in range(num_stages)]


def create_stages(stage_args, stem_feature, output_stride, drop_path_rate, act_layer):
    """The stages (a Sequential ``0``, ``1``...) after a stem whose output is ``stem_feature``, and their feature
    taps: the stem's output where the first stage strides, then every stage's output.

    Once the network reaches ``output_stride``, a stage dilates its convolutions by its stride instead of striding
    (the downsampling keeps the previous dilation, at most 2). Block drop-path rates grow linearly over all blocks
    from 0 to ``drop_path_rate``.
    """
    rates = torch.linspace(0, drop_path_rate, sum(args["depth"] for args in stage_args)).tolist()
    stages = nn.Sequential()
    feature_info = []
    feature = stem_feature
    in_chs = feature["num_chs"]
    net_stride = feature["reduction"]
    dilation = 1
    for i, args in enumerate(stage_args):
        args = dict(args)
        stride = args.pop("stride")
        stage_cls = _STAGES[args.pop("stage_type")]
        if stride != 1:
            feature_info.append(feature)
        if net_stride >= output_stride and stride > 1:
            dilation *= stride
            stride = 1
        net_stride *= stride
        if stage_cls is DarkStage:
            for key in ("expand_ratio", "down_growth", "cross_linear"):
                del args[key]
        stages.add_module(str(i), stage_cls(
            in_chs, stride=stride, dilation=dilation, first_dilation=1 if dilation in (1, 2) else 2,
            act_layer=act_layer, drop_path_rates=rates[:args["depth"]], **args))
        rates = rates[args["depth"]:]
        in_chs = args["out_chs"]
        feature = dict(num_chs=in_chs, reduction=net_stride, module=f"stages.{i}")
    feature_info.append(feature)
    return stages, feature_info


class CspNet(ClassifierHeadApi, nn.Module):
    """timm's CspNet: the stem (see ``create_stem``: ``stem_chs``, ``stem_kernel_size``, ``stem_stride``,
    ``stem_padding``, ``stem_pool``), stages ``stages.0``... and the classifier ``head``.

    Stage i has ``depths[i]`` blocks and ``widths[i]`` output channels; the other stage settings take one value for
    all stages or one per stage (a short sequence is padded with its last value): ``strides``, ``groups`` (of the
    3x3 convolutions), ``block_ratio`` (block width over the stage width), ``bottle_ratio`` (a block's inner width
    over its width), ``expand_ratio`` (the cross stages' widening), ``avg_down`` (pooled downsampling),
    ``se_ratio`` (squeeze-and-excitation inside the blocks, 0 for none), ``stage_type`` ('csp', 'cs3', 'dark'),
    ``block_type`` ('bottle', 'dark', 'edge'), ``cross_linear`` (no activation after the widening convolution),
    ``down_growth`` (a cross stage downsamples straight to its width).

    ``act_layer`` is timm's activation name or a class; ``output_stride`` 16 or 8 dilates the last stages instead of
    striding them. ``drop_path_rate`` grows linearly from 0 at the first block to this value at the last;
    ``drop_rate`` is the dropout before the classifier; ``zero_init_last`` zeroes each block's last norm scale.
    ``num_classes=0`` replaces the classifier by an identity (pooled features).
    """

    default_cfg = {"first_conv": "stem.conv1.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, depths, widths, stem_chs=32, stem_kernel_size=3, stem_stride=2, stem_padding=None,
                 stem_pool="", strides=2, groups=1, block_ratio=1.0, bottle_ratio=1.0, expand_ratio=1.0,
                 avg_down=False, se_ratio=0.0, stage_type="csp", block_type="bottle", cross_linear=False,
                 down_growth=False, act_layer="leaky_relu", in_chans=3, num_classes=1000, output_stride=32,
                 global_pool="avg", drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        act_layer = get_act_layer(act_layer)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.stem, stem_info = create_stem(in_chans, stem_chs, stem_kernel_size, stem_stride, stem_padding,
                                           stem_pool, act_layer)
        stage_args = _stage_args(
            depths, widths, stride=strides, groups=groups, block_ratio=block_ratio, bottle_ratio=bottle_ratio,
            expand_ratio=expand_ratio, avg_down=avg_down, se_ratio=se_ratio, stage_type=stage_type,
            block_type=block_type, cross_linear=cross_linear, down_growth=down_growth)
        self.stages, stage_info = create_stages(stage_args, stem_info[-1], output_stride, drop_path_rate, act_layer)
        self.feature_info = stem_info[:-1] + stage_info
        self.num_features = stage_info[-1]["num_chs"]
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(zero_init_last)

    def _init_weights(self, zero_init_last):
        """timm's initialisation, in module order: convolutions He-normal (fan-out, ReLU gain) with zero biases, the
        classifier N(0, 0.01^2) with zero bias; optionally each block's last norm scale zeroed."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)
            elif zero_init_last and hasattr(module, "zero_init_last"):
                module.zero_init_last()

    def forward_features(self, x):
        """The map after the last stage (N, widths[-1], H / 32, W / 32 at output_stride 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def _stem_taps(self):
        """The names of the stem's children whose outputs are feature taps (the ``feature_info`` entries inside the
        stem: the map before a later reduction, or the stem's output where the first stage strides), in order."""
        return [info["module"][len("stem."):] for info in self.feature_info if info["module"].startswith("stem.")]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the final map. The taps are timm's: the stem's (``_stem_taps``, taken inside the
        stem, before its pool), then each stage's output. ``stop_early`` skips the stages after the last tap
        picked (the stem always runs whole); ``norm`` is accepted for the API, as there is no final norm."""
        stem_taps = self._stem_taps()
        take, taps = intermediate_stages(stem_taps + list(self.stages), indices, stop_early, output_fmt)
        intermediates = []
        for name, module in self.stem.named_children():
            x = module(x)
            if name in stem_taps and stem_taps.index(name) in take:
                intermediates.append(x)
        num_stem_taps = len(stem_taps)
        stage_take = [i - num_stem_taps for i in take]
        x, stage_outputs = run_stages(x, taps[num_stem_taps:], stage_take)
        intermediates.extend(stage_outputs)
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop what comes after the last tap ``indices`` picks: later stages and, for a stem tap, the rest of the
        stem (its pool); when taps go, ``num_features`` and ``head_hidden_size`` become the last kept tap's width and
        the head is reset to pooled features (as with ``prune_head``). ``prune_norm`` is accepted for the API (no
        final norm). Returns the absolute indices."""
        stem_taps = self._stem_taps()
        num_stem_taps = len(stem_taps)
        num_taps = num_stem_taps + len(self.stages)
        take = take_indices(num_taps, indices)
        last = max(take)
        prune_end = last < num_taps - 1
        self.stages = self.stages[:max(0, last - num_stem_taps + 1)]
        if last < num_stem_taps:
            stem_names = [name for name, _ in self.stem.named_children()]
            self.stem = self.stem[:stem_names.index(stem_taps[last]) + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
            self.head.in_features = self.num_features
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_cspnet(variant, pretrained, progress, kwargs, **cfg):
    """Build a registered variant: its configuration ``cfg`` overridden by the caller's ``kwargs``. With
    ``features_only`` the features are timm's: unless ``out_indices`` picks some, the stem's taps and every stage for
    the DarkNets named ``darknet*`` or ``cspdarknet*``, at most the first five taps for the others (as timm, which
    leaves out sedarknet21's last stage)."""
    args = dict(cfg, **kwargs)
    default_taps = args.get("features_only") and args.get("out_indices") is None
    if default_taps and not variant.startswith(("darknet", "cspdarknet")):
        model = build_model(CspNet, variant, pretrained, progress=progress, **dict(args, features_only=False))
        return CspNet.feature_wrapper(model, range(min(5, len(model.feature_info))))
    return build_model(CspNet, variant, pretrained, progress=progress, **args)


def _cs3(width_multiplier=1.0, depth_multiplier=1.0, focus=False, se_ratio=0.0, bottle_ratio=1.0,
         block_type="dark"):
    """A CS3 configuration: SiLU, four 'cs3' stages of stride 2 with widths 128-1024 and depths 3-6-9-3 scaled
    (widths to multiples of 8), blocks at half the stage width; a stem of two 3x3 convolutions (32 and 64 channels,
    scaled; the first strided) or, with ``focus``, one 6x6/2 convolution to 64 (scaled)."""
    if focus:
        stem = dict(stem_chs=_make_divisible(64 * width_multiplier, 8), stem_kernel_size=6, stem_padding=2)
    else:
        stem = dict(stem_chs=tuple(_make_divisible(c * width_multiplier, 8) for c in (32, 64)))
    return dict(
        stem,
        depths=tuple(int(d * depth_multiplier) for d in (3, 6, 9, 3)),
        widths=tuple(_make_divisible(c * width_multiplier, 8) for c in (128, 256, 512, 1024)),
        block_ratio=0.5,
        bottle_ratio=bottle_ratio,
        se_ratio=se_ratio,
        stage_type="cs3",
        block_type=block_type,
        act_layer="silu",
    )


_DARKNET = dict(stem_chs=32, stem_stride=1, depths=(1, 2, 8, 8, 4), widths=(64, 128, 256, 512, 1024))
# the ResNet-D-like stem of cspresnet50d and cspresnet50w: three 3x3 convolutions (the first strided), a max pool
_DEEP_STEM = dict(stem_chs=(32, 32, 64), stem_kernel_size=3, stem_stride=4, stem_pool="max")


@register_model
def cspresnet50(pretrained=False, progress=True, **kwargs):
    """CSPResNet-50: a ResNet-50 stem (7x7/2 and max pool), cross stages of 3-3-5-2 bottlenecks (the first
    stage not strided), widened twice before the split, leaky ReLU."""
    return _create_cspnet("cspresnet50", pretrained, progress, kwargs, stem_chs=64, stem_kernel_size=7,
                          stem_stride=4, stem_pool="max", depths=(3, 3, 5, 2), widths=(128, 256, 512, 1024),
                          strides=(1, 2), expand_ratio=2.0, bottle_ratio=0.5, cross_linear=True)


@register_model
def cspresnet50d(pretrained=False, progress=True, **kwargs):
    """CSPResNet-50-D: CSPResNet-50 with a stem of three 3x3 convolutions (32, 32, 64 channels) and a max pool."""
    return _create_cspnet("cspresnet50d", pretrained, progress, kwargs, **_DEEP_STEM, depths=(3, 3, 5, 2),
                          widths=(128, 256, 512, 1024), strides=(1, 2), expand_ratio=2.0, bottle_ratio=0.5,
                          cross_linear=True)


@register_model
def cspresnet50w(pretrained=False, progress=True, **kwargs):
    """CSPResNet-50-W: the deep stem of CSPResNet-50-D, widths 256-2048 without widening, bottlenecks at half the
    stage width narrowing to a quarter inside."""
    return _create_cspnet("cspresnet50w", pretrained, progress, kwargs, **_DEEP_STEM, depths=(3, 3, 5, 2),
                          widths=(256, 512, 1024, 2048), strides=(1, 2), bottle_ratio=0.25, block_ratio=0.5,
                          cross_linear=True)


@register_model
def cspresnext50(pretrained=False, progress=True, **kwargs):
    """CSPResNeXt-50: CSPResNet-50 with ResNeXt bottlenecks (32 groups) at half the stage width, widths 256-2048."""
    return _create_cspnet("cspresnext50", pretrained, progress, kwargs, stem_chs=64, stem_kernel_size=7,
                          stem_stride=4, stem_pool="max", depths=(3, 3, 5, 2), widths=(256, 512, 1024, 2048),
                          strides=(1, 2), groups=32, block_ratio=0.5, cross_linear=True)


@register_model
def cspdarknet53(pretrained=False, progress=True, **kwargs):
    """CSPDarkNet-53: DarkNet-53's stem and depths in cross stages (downsampling to the stage width); the first
    stage widened twice with half-width DarkNet blocks, the others with blocks at half the stage width."""
    return _create_cspnet("cspdarknet53", pretrained, progress, kwargs, **_DARKNET, expand_ratio=(2.0, 1.0),
                          bottle_ratio=(0.5, 1.0), block_ratio=(1.0, 0.5), down_growth=True, block_type="dark")


@register_model
def darknet17(pretrained=False, progress=True, **kwargs):
    """DarkNet-17: DarkNet-53 with one DarkNet block per stage."""
    return _create_cspnet("darknet17", pretrained, progress, kwargs, **dict(_DARKNET, depths=(1, 1, 1, 1, 1)),
                          bottle_ratio=0.5, stage_type="dark", block_type="dark")


@register_model
def darknet21(pretrained=False, progress=True, **kwargs):
    """DarkNet-21: DarkNet-53 with 1-1-1-2-2 DarkNet blocks."""
    return _create_cspnet("darknet21", pretrained, progress, kwargs, **dict(_DARKNET, depths=(1, 1, 1, 2, 2)),
                          bottle_ratio=0.5, stage_type="dark", block_type="dark")


@register_model
def sedarknet21(pretrained=False, progress=True, **kwargs):
    """SE-DarkNet-21: DarkNet-21 with SE (a sixteenth of the inner width) in every block."""
    return _create_cspnet("sedarknet21", pretrained, progress, kwargs, **dict(_DARKNET, depths=(1, 1, 1, 2, 2)),
                          bottle_ratio=0.5, se_ratio=1 / 16, stage_type="dark", block_type="dark")


@register_model
def darknet53(pretrained=False, progress=True, **kwargs):
    """DarkNet-53 (YOLOv3's backbone): a 3x3 stem at full size, five strided stages of 1-2-8-8-4 DarkNet blocks."""
    return _create_cspnet("darknet53", pretrained, progress, kwargs, **_DARKNET, bottle_ratio=0.5,
                          stage_type="dark", block_type="dark")


@register_model
def darknetaa53(pretrained=False, progress=True, **kwargs):
    """DarkNet-53 downsampling by 2x2 average pooling and a 1x1 convolution."""
    return _create_cspnet("darknetaa53", pretrained, progress, kwargs, **_DARKNET, bottle_ratio=0.5, avg_down=True,
                          stage_type="dark", block_type="dark")


@register_model
def cs3darknet_s(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-S: widths x0.5, depths x0.5."""
    return _create_cspnet("cs3darknet_s", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=0.5, depth_multiplier=0.5))


@register_model
def cs3darknet_m(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-M: widths x0.75, depths x0.67."""
    return _create_cspnet("cs3darknet_m", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=0.75, depth_multiplier=0.67))


@register_model
def cs3darknet_l(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-L: widths 128-1024, depths 3-6-9-3."""
    return _create_cspnet("cs3darknet_l", pretrained, progress, kwargs, **_cs3())


@register_model
def cs3darknet_x(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-X: widths x1.25, depths x1.33."""
    return _create_cspnet("cs3darknet_x", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=1.25, depth_multiplier=1.33))


@register_model
def cs3darknet_focus_s(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-S with a focus stem: widths x0.5, depths x0.5."""
    return _create_cspnet("cs3darknet_focus_s", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=0.5, depth_multiplier=0.5, focus=True))


@register_model
def cs3darknet_focus_m(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-M with a focus stem: widths x0.75, depths x0.67."""
    return _create_cspnet("cs3darknet_focus_m", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=0.75, depth_multiplier=0.67, focus=True))


@register_model
def cs3darknet_focus_l(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-L with a focus stem."""
    return _create_cspnet("cs3darknet_focus_l", pretrained, progress, kwargs, **_cs3(focus=True))


@register_model
def cs3darknet_focus_x(pretrained=False, progress=True, **kwargs):
    """CS3-DarkNet-X with a focus stem: widths x1.25, depths x1.33."""
    return _create_cspnet("cs3darknet_focus_x", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=1.25, depth_multiplier=1.33, focus=True))


@register_model
def cs3sedarknet_l(pretrained=False, progress=True, **kwargs):
    """CS3-SE-DarkNet-L: CS3-DarkNet-L with SE (a quarter of the inner width) in every block."""
    return _create_cspnet("cs3sedarknet_l", pretrained, progress, kwargs, **_cs3(se_ratio=0.25))


@register_model
def cs3sedarknet_x(pretrained=False, progress=True, **kwargs):
    """CS3-SE-DarkNet-X: CS3-DarkNet-X with SE (a sixteenth of the inner width) in every block."""
    return _create_cspnet("cs3sedarknet_x", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=1.25, depth_multiplier=1.33, se_ratio=1 / 16))


@register_model
def cs3sedarknet_xdw(pretrained=False, progress=True, **kwargs):
    """CS3-SE-DarkNet-XDW: a two-convolution stem (32, 64), cross stages of 3-6-12-4 bottlenecks at half the
    stage width (256-2048) with SE (a sixteenth), depthwise 3x3 convolutions in the last two stages, SiLU."""
    return _create_cspnet("cs3sedarknet_xdw", pretrained, progress, kwargs, stem_chs=(32, 64), depths=(3, 6, 12, 4),
                          widths=(256, 512, 1024, 2048), groups=(1, 1, 256, 512), bottle_ratio=0.5,
                          block_ratio=0.5, se_ratio=1 / 16, act_layer="silu")


@register_model
def cs3edgenet_x(pretrained=False, progress=True, **kwargs):
    """CS3-EdgeNet-X: CS3-DarkNet-X's layout with edge blocks 1.5 times as wide inside."""
    return _create_cspnet("cs3edgenet_x", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=1.25, depth_multiplier=1.33, bottle_ratio=1.5, block_type="edge"))


@register_model
def cs3se_edgenet_x(pretrained=False, progress=True, **kwargs):
    """CS3-SE-EdgeNet-X: CS3-EdgeNet-X with SE (a quarter of the inner width) in every block."""
    return _create_cspnet("cs3se_edgenet_x", pretrained, progress, kwargs,
                          **_cs3(width_multiplier=1.25, depth_multiplier=1.33, se_ratio=0.25, bottle_ratio=1.5,
                                 block_type="edge"))
