"""Pre-activation ResNets (He et al. 2016, "Identity Mappings in Deep Residual Networks") and Big Transfer
(Kolesnikov et al. 2020, "Big Transfer (BiT): General Visual Representation Learning"), as timm builds them:
resnetv2_18 / 18d / 34 / 34d / 50 / 101 (BatchNorm), resnetv2_50d_gn (GroupNorm), resnetv2_50d_evos (EvoNorm-S0),
and the BiT models resnetv2_50x1_bit .. resnetv2_152x4_bit; and timm's variants without published weights:
resnetv2_50d / 50t / 101d / 152 / 152d (BatchNorm) and resnetv2_50d_frn (Singh and Krishnan 2020, "Filter
Response Normalization Layer: Eliminating Batch Dependence in the Training of Deep Neural Networks").

A pre-activation block normalises and activates its input before each convolution; the first norm's output also
feeds the projection shortcut, and nothing follows the addition, so the identity path runs clean from the stem to
the last norm. The stem is one 7x7 convolution ('deep': three 3x3 convolutions, 'tiered': the same with narrower
first layers) and a 3x3 max pool; 'd' models shortcut through 2x2 average pooling and a 1x1 convolution. BiT
widens every layer by ``width_factor``, standardises each convolution filter's weights (zero mean, unit variance)
before use, normalises with GroupNorm (32 groups), pads its stem pool with a fixed zero border as TensorFlow's
"SAME" would, and classifies with a 1x1 convolution over the pooled map. Model names, module names, ``state_dict``
keys, initialisation and the model API follow timm's ``resnetv2`` module, so its checkpoints load directly.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._conv import get_padding
from ._layers import BatchNormAct2d, ClassifierHeadApi, SelectAdaptivePool2d, drop_path_module
from .resnet import AvgPool2dSame

__all__ = []


def create_conv2d(in_chs, out_chs, kernel_size, stride=1, dilation=1, groups=1):
    """A plain bias-free convolution with timm's symmetric padding (the non-BiT models' layer)."""
    return nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=get_padding(kernel_size, stride, dilation),
                     dilation=dilation, groups=groups, bias=False)


class StdConv2d(nn.Conv2d):
    """A bias-free convolution with weight standardisation (Qiao et al. 2019): each output filter's weights are
    shifted to zero mean and scaled to unit variance (``eps`` added to the variance) before every use, so the
    stored weights stay free while the layer sees normalised ones. Padded symmetrically as timm pads."""

    def __init__(self, in_channel, out_channels, kernel_size, stride=1, dilation=1, groups=1, eps=1e-6):
        super().__init__(in_channel, out_channels, kernel_size, stride=stride,
                         padding=get_padding(kernel_size, stride, dilation), dilation=dilation, groups=groups,
                         bias=False)
        self.eps = eps

    def forward(self, x):
        filters = self.weight.reshape(1, self.out_channels, -1)
        weight = F.batch_norm(filters, None, None, training=True, momentum=0.0, eps=self.eps)
        weight = weight.reshape_as(self.weight)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class GroupNormAct(nn.GroupNorm):
    """GroupNorm (``num_groups`` groups) and its activation as one module, timm's layout: the affine parameters
    are the module's own, then ``drop`` (an identity) and ``act`` (``act_layer`` in place; an identity with
    ``apply_act=False``)."""

    def __init__(self, num_channels, num_groups=32, eps=1e-5, apply_act=True, act_layer=nn.ReLU):
        super().__init__(num_groups, num_channels, eps=eps)
        self.drop = nn.Identity()
        self.act = act_layer(inplace=True) if apply_act else nn.Identity()

    def forward(self, x):
        x = super().forward(x)
        x = self.drop(x)
        x = self.act(x)
        return x


def group_std(x, groups, eps):
    """The standard deviation of each (sample, channel group) over the group's channels and all positions (biased
    variance plus ``eps``), broadcast back to ``x``'s shape."""
    batch, channels, height, width = x.shape
    if channels % groups:
        raise ValueError(f"{channels} channels do not split into {groups} groups")
    grouped = x.reshape(batch, groups, channels // groups, height, width)
    std = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True).add(eps).sqrt()
    return std.expand(grouped.shape).reshape(batch, channels, height, width)


class EvoNorm2dS0(nn.Module):
    """EvoNorm-S0 (Liu et al. 2020, "Evolving Normalization-Activation Layers"): a norm with its nonlinearity
    built in, x * sigmoid(v * x) / group_std(x), then a per-channel scale ``weight`` and shift ``bias``. With
    ``apply_act=False`` only the affine part remains (no ``v``). It keeps no running statistics, so training
    and evaluation agree. ``act_layer`` is accepted like the other norm layers' and not used."""

    def __init__(self, num_features, groups=32, group_size=None, apply_act=True, eps=1e-5, act_layer=None):
        super().__init__()
        if group_size:
            if num_features % group_size:
                raise ValueError(f"{num_features} channels do not split into groups of {group_size}")
            groups = num_features // group_size
        self.apply_act = apply_act
        self.groups = groups
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.v = nn.Parameter(torch.ones(num_features)) if apply_act else None

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError(f"EvoNorm2dS0 expects a 4-d (N, C, H, W) input, got {x.dim()} dimensions")
        shape = (1, -1, 1, 1)
        if self.v is not None:
            gate = (x * self.v.view(shape)).sigmoid()
            x = x * gate / group_std(x, self.groups, self.eps)
        return x * self.weight.view(shape) + self.bias.view(shape)


class FilterResponseNormTlu2d(nn.Module):
    """Filter response normalisation with a thresholded linear unit (Singh and Krishnan 2020, "Filter Response
    Normalization Layer"): each sample's channel is divided by its root mean square over the positions (``eps``
    added to the mean square), scaled by ``weight`` and shifted by ``bias``, then floored at a learned per-channel
    threshold ``tau`` (max(x, tau), the TLU; left out with ``apply_act=False``). Like EvoNorm-S0 it keeps no
    running statistics and mixes nothing across the batch. ``act_layer`` is accepted like the other norm layers'
    and not used: the TLU is the nonlinearity."""

    def __init__(self, num_features, apply_act=True, eps=1e-5, act_layer=None):
        super().__init__()
        self.apply_act = apply_act
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.tau = nn.Parameter(torch.zeros(num_features)) if apply_act else None

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError(f"FilterResponseNormTlu2d expects a 4-d (N, C, H, W) input, got {x.dim()} dimensions")
        shape = (1, -1, 1, 1)
        inverse_rms = x.square().mean(dim=(2, 3), keepdim=True).add(self.eps).rsqrt()
        x = x * inverse_rms
        x = x * self.weight.view(shape) + self.bias.view(shape)
        if self.tau is not None:
            x = torch.maximum(x, self.tau.view(shape))
        return x


class DownsampleConv(nn.Module):
    """The projection shortcut: a strided 1x1 convolution (``norm``: an identity, the block being pre-activated)."""

    def __init__(self, in_chs, out_chs, stride=1, conv_layer=create_conv2d):
        super().__init__()
        self.conv = conv_layer(in_chs, out_chs, 1, stride=stride)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        return x


class DownsampleAvg(nn.Module):
    """The 'd' shortcut: 2x2 average pooling (ceil mode, padding not counted; "same" at stride 1 in a dilated
    stage), then a 1x1 convolution, so the shortcut sees every input pixel."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, conv_layer=create_conv2d):
        super().__init__()
        if stride == 1 and dilation == 1:
            self.pool = nn.Identity()
        elif dilation == 1:
            self.pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
        else:
            self.pool = AvgPool2dSame()
        self.conv = conv_layer(in_chs, out_chs, 1, stride=1)
        self.norm = nn.Identity()

    def forward(self, x):
        x = self.pool(x)
        x = self.conv(x)
        x = self.norm(x)
        return x


def _projection(avg_down, in_chs, out_chs, stride, dilation, conv_layer):
    """A stage's first shortcut: average pooling and 1x1 convolution (``avg_down``) or a strided 1x1 convolution."""
    if avg_down:
        return DownsampleAvg(in_chs, out_chs, stride, dilation, conv_layer)
    return DownsampleConv(in_chs, out_chs, stride, conv_layer)


class PreActBasic(nn.Module):
    """The pre-activation basic block: norm, 3x3 convolution (strided or dilated), norm, 3x3 convolution;
    drop-path and the shortcut added. The first norm's output feeds the projection shortcut, which a stage's
    first block has when it changes the shape or the dilation."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, first_dilation=1, bottle_ratio=1.0, project=False,
                 avg_down=False, conv_layer=create_conv2d, norm_layer=GroupNormAct, drop_path_rate=0.0):
        super().__init__()
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        reshapes = stride != 1 or first_dilation != dilation or in_chs != out_chs
        if project and reshapes:
            self.downsample = _projection(avg_down, in_chs, out_chs, stride, dilation, conv_layer)
        else:
            self.downsample = None
        self.norm1 = norm_layer(in_chs)
        self.conv1 = conv_layer(in_chs, mid_chs, 3, stride=stride, dilation=first_dilation)
        self.norm2 = norm_layer(mid_chs)
        self.conv2 = conv_layer(mid_chs, out_chs, 3, dilation=dilation)
        self.drop_path = drop_path_module(drop_path_rate)

    def zero_init_last(self):
        """Zero the last convolution, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv2.weight)

    def forward(self, x):
        preact = self.norm1(x)
        shortcut = x if self.downsample is None else self.downsample(preact)
        x = self.conv1(preact)
        x = self.conv2(self.norm2(x))
        x = self.drop_path(x)
        return x + shortcut


class PreActBottleneck(nn.Module):
    """The pre-activation bottleneck: norm, 1x1 convolution to ``out_chs * bottle_ratio`` channels, norm, 3x3
    convolution (strided or dilated: the stride sits on the 3x3, as in ResNet v1.5), norm, 1x1 convolution to
    ``out_chs``; drop-path and the shortcut added. A stage's first block always projects its shortcut, from the
    first norm's output."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, first_dilation=1, bottle_ratio=0.25, project=False,
                 avg_down=False, conv_layer=create_conv2d, norm_layer=GroupNormAct, drop_path_rate=0.0):
        super().__init__()
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        if project:
            self.downsample = _projection(avg_down, in_chs, out_chs, stride, dilation, conv_layer)
        else:
            self.downsample = None
        self.norm1 = norm_layer(in_chs)
        self.conv1 = conv_layer(in_chs, mid_chs, 1)
        self.norm2 = norm_layer(mid_chs)
        self.conv2 = conv_layer(mid_chs, mid_chs, 3, stride=stride, dilation=first_dilation)
        self.norm3 = norm_layer(mid_chs)
        self.conv3 = conv_layer(mid_chs, out_chs, 1)
        self.drop_path = drop_path_module(drop_path_rate)

    def zero_init_last(self):
        """Zero the last convolution, so the block starts as its shortcut."""
        nn.init.zeros_(self.conv3.weight)

    def forward(self, x):
        preact = self.norm1(x)
        shortcut = x if self.downsample is None else self.downsample(preact)
        x = self.conv1(preact)
        x = self.conv2(self.norm2(x))
        x = self.conv3(self.norm3(x))
        x = self.drop_path(x)
        return x + shortcut


class ResNetStage(nn.Module):
    """``depth`` blocks (``blocks.0``, ``blocks.1``...) of one width; the first strides (or, in a dilated stage,
    moves from the previous dilation to this one) and projects its shortcut. ``drop_path_rates``: one per block."""

    def __init__(self, in_chs, out_chs, stride, dilation, depth, drop_path_rates, block_fn=PreActBottleneck,
                 **block_kwargs):
        super().__init__()
        first_dilation = 1 if dilation in (1, 2) else 2
        self.blocks = nn.Sequential()
        for i in range(depth):
            block = block_fn(in_chs if i == 0 else out_chs, out_chs, stride=stride if i == 0 else 1,
                             dilation=dilation, first_dilation=first_dilation, project=i == 0,
                             drop_path_rate=drop_path_rates[i], **block_kwargs)
            self.blocks.add_module(str(i), block)
            first_dilation = dilation

    def forward(self, x):
        return self.blocks(x)


_STEM_TYPES = ("", "fixed", "deep", "deep_fixed", "tiered")


def _is_deep(stem_type):
    """Whether the stem is three 3x3 convolutions ('deep', 'tiered') rather than one 7x7."""
    return "deep" in stem_type or "tiered" in stem_type


def create_stem(in_chs, out_chs, stem_type, conv_layer, norm_layer):
    """The pre-activation stem (no norm after its last convolution: the first block normalises), then a 3x3/2 max
    pool: one 7x7/2 convolution, or for 'deep' three 3x3 convolutions (the first strided, widths out/2, out/2, out;
    'tiered': 3/8 out, out/2, out) with norms between. 'fixed' pads the pool's input with one zero row and column
    on every side instead of padding inside the pool (BiT's port of TensorFlow's "SAME")."""
    if stem_type not in _STEM_TYPES:
        raise ValueError(f"unknown stem_type '{stem_type}': expected one of {_STEM_TYPES}")
    stem = OrderedDict()
    if _is_deep(stem_type):
        first_chs = 3 * out_chs // 8 if "tiered" in stem_type else out_chs // 2
        stem["conv1"] = conv_layer(in_chs, first_chs, 3, stride=2)
        stem["norm1"] = norm_layer(first_chs)
        stem["conv2"] = conv_layer(first_chs, out_chs // 2, 3, stride=1)
        stem["norm2"] = norm_layer(out_chs // 2)
        stem["conv3"] = conv_layer(out_chs // 2, out_chs, 3, stride=1)
    else:
        stem["conv"] = conv_layer(in_chs, out_chs, 7, stride=2)
    if "fixed" in stem_type:
        stem["pad"] = nn.ConstantPad2d(1, 0.0)
        stem["pool"] = nn.MaxPool2d(kernel_size=3, stride=2, padding=0)
    else:
        stem["pool"] = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
    return nn.Sequential(stem)


class ClassifierHead(nn.Module):
    """timm's head with ``use_conv``: global pooling kept as a (N, C, 1, 1) map, dropout, a 1x1 convolution as the
    classifier (``fc``; an identity for ``num_classes=0``), then ``flatten`` to (N, classes) (an identity when
    ``pool_type`` is '', which leaves the whole map, classified at every position)."""

    def __init__(self, in_features, num_classes, pool_type="avg", drop_rate=0.0):
        super().__init__()
        self.in_features = in_features
        self.global_pool = SelectAdaptivePool2d(pool_type, flatten=False)
        self.num_features = in_features * self.global_pool.feat_mult()
        self.drop = nn.Dropout(drop_rate)
        self.fc = self._classifier(num_classes)
        self.flatten = nn.Flatten(1) if pool_type else nn.Identity()

    def _classifier(self, num_classes):
        """A 1x1 convolution from the pooled width to ``num_classes``, or an identity for 0."""
        if num_classes <= 0:
            return nn.Identity()
        return nn.Conv2d(self.num_features, num_classes, 1, bias=True)

    def reset(self, num_classes, pool_type=None):
        """A fresh classifier for ``num_classes``; with another ``pool_type`` also a new pooling and flatten."""
        if pool_type is not None and pool_type != self.global_pool.pool_type:
            self.global_pool = SelectAdaptivePool2d(pool_type, flatten=False)
            self.global_pool.train(self.training)
            self.num_features = self.in_features * self.global_pool.feat_mult()
            self.flatten = nn.Flatten(1) if pool_type else nn.Identity()
            self.flatten.train(self.training)
        self.fc = self._classifier(num_classes)
        self.fc.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.drop(x)
        if pre_logits:
            return self.flatten(x)
        x = self.fc(x)
        return self.flatten(x)


class ResNetV2(ClassifierHeadApi, nn.Module):
    """timm's pre-activation ResNet: a stem (``stem_type``, ``stem_chs`` wide), four stages of ``layers`` blocks
    of widths ``channels`` (all widths times ``width_factor``, rounded to multiples of 8), the final ``norm`` (with
    its activation) and the classifier ``head``.

    ``basic`` picks basic blocks instead of bottlenecks (``bottle_ratio``: their inner width over the output's);
    ``avg_down`` shortcuts through average pooling; ``conv_layer`` makes every convolution (``create_conv2d``, or
    ``StdConv2d`` for BiT) and ``norm_layer`` every norm (``GroupNormAct``, ``BatchNormAct2d``, ``EvoNorm2dS0`` or
    ``FilterResponseNormTlu2d``; a class or partial, given ``act_layer``); ``output_stride`` 16 or 8 dilates the
    last stages instead of striding them. ``drop_path_rate`` grows linearly from 0 at the first block to this value
    at the last; ``drop_rate`` is the dropout before the classifier; ``zero_init_last`` zeroes each block's last
    convolution. ``num_classes=0`` replaces the classifier with an identity (pooled features).
    """

    feature_wrapper = FlatFeatureListNet

    def __init__(self, layers, channels=(256, 512, 1024, 2048), num_classes=1000, in_chans=3, global_pool="avg",
                 output_stride=32, width_factor=1, stem_chs=64, stem_type="", avg_down=False, basic=False,
                 bottle_ratio=0.25, act_layer=nn.ReLU, norm_layer=GroupNormAct, conv_layer=StdConv2d,
                 drop_rate=0.0, drop_path_rate=0.0, zero_init_last=False):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        if len(layers) != len(channels):
            raise ValueError(f"{len(layers)} stage depths for {len(channels)} stage widths")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.stem_type = stem_type
        norm_layer = partial(norm_layer, act_layer=act_layer)
        stem_chs = _make_divisible(stem_chs * width_factor, 8)
        self.stem = create_stem(in_chans, stem_chs, stem_type, conv_layer, norm_layer)
        stem_feature = "conv3" if _is_deep(stem_type) else "conv"
        self.feature_info = [dict(num_chs=stem_chs, reduction=2, module=f"stem.{stem_feature}")]
        rates = torch.linspace(0, drop_path_rate, sum(layers)).tolist()
        block_fn = PreActBasic if basic else PreActBottleneck
        self.stages = nn.Sequential()
        in_chs = stem_chs
        reduction = 4
        dilation = 1
        for i, (depth, width) in enumerate(zip(layers, channels)):
            out_chs = _make_divisible(width * width_factor, 8)
            stride = 1 if i == 0 else 2
            if reduction >= output_stride:
                dilation *= stride
                stride = 1
            stage = ResNetStage(in_chs, out_chs, stride, dilation, depth, rates[:depth], block_fn=block_fn,
                                bottle_ratio=bottle_ratio, avg_down=avg_down, conv_layer=conv_layer,
                                norm_layer=norm_layer)
            self.stages.add_module(str(i), stage)
            rates = rates[depth:]
            in_chs = out_chs
            reduction *= stride
            self.feature_info.append(dict(num_chs=out_chs, reduction=reduction, module=f"stages.{i}"))
        self.num_features = in_chs
        self.norm = norm_layer(self.num_features)
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(zero_init_last)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution) and ``classifier``."""
        return {"first_conv": "stem.conv1" if _is_deep(self.stem_type) else "stem.conv", "classifier": "head.fc"}

    def _init_weights(self, zero_init_last):
        """timm's initialisation, in module order: the classifier N(0, 0.01^2) with zero bias, other convolutions
        He-normal over their fan-out; then, optionally, each block's last convolution zeroed."""
        for name, module in self.named_modules():
            if isinstance(module, nn.Conv2d) and name.startswith("head.fc"):
                nn.init.normal_(module.weight, 0.0, 0.01)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_last:
            for module in self.modules():
                if hasattr(module, "zero_init_last"):
                    module.zero_init_last()

    def forward_features(self, x):
        """The normalised, activated map after the last stage (N, num_features, H / 32, W / 32 at stride 32)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def _stem_tap_position(self):
        """The position among the stem's children of its feature tap (``feature_info[0]``: the stride 2 convolution,
        before the stem's pooling)."""
        stem_names = [name for name, _ in self.stem.named_children()]
        return stem_names.index(self.feature_info[0]["module"][len("stem."):])

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps picked by ``indices`` (None: all, n: the last n, or a list; 0 is the stem's stride 2
        convolution, before its pooling, 1-4 the stages' outputs) and, unless ``intermediates_only``, the final
        map, through the final norm when the last stage ran. ``norm`` passes the last stage's tap through the final
        norm; ``stop_early`` skips the stages after the last tap picked (the stem always runs whole)."""
        take, taps = intermediate_stages(self.feature_info, indices, stop_early, output_fmt)
        stem_tap = self._stem_tap_position()
        stem_output = x
        for position, module in enumerate(self.stem):
            x = module(x)
            if position == stem_tap:
                stem_output = x
        intermediates = [stem_output] if 0 in take else []
        stages = list(self.stages)
        if stop_early:
            stages = stages[:len(taps) - 1]
        last_tap = len(self.stages)
        tap = 0
        for tap, stage in enumerate(stages, start=1):
            x = stage(x)
            if tap in take:
                intermediates.append(self.norm(x) if norm and tap == last_tap else x)
        if intermediates_only:
            return intermediates
        if tap == last_tap:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last tap ``indices`` picks (for the stem's tap, the stem's pooling too); the
        final norm goes with ``prune_norm`` or when stages go. When taps go, ``num_features`` and
        ``head_hidden_size`` become the last kept tap's width and the head is reset to pooled features (as with
        ``prune_head``). Returns the absolute indices."""
        take = take_indices(len(self.feature_info), indices)
        last = max(take)
        prune_end = last < len(self.stages)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        self.stages = self.stages[:last]
        if last == 0:
            self.stem = self.stem[:self._stem_tap_position() + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
            self._resize_head(self.num_features)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def _resize_head(self, in_features):
        """The head's input width set to ``in_features`` (timm's head reset with ``in_features`` after pruning), so
        that its pooled width and any later classifier follow the pruned features."""
        self.head.in_features = in_features
        self.head.num_features = in_features * self.head.global_pool.feat_mult()


def _create_resnetv2(variant, pretrained, progress, kwargs, **cfg):
    """Build a registered variant: its configuration ``cfg`` overridden by the caller's ``kwargs``."""
    return build_model(ResNetV2, variant, pretrained, progress=progress, **dict(cfg, **kwargs))


# BiT: weight-standardised convolutions (epsilon 1e-8), GroupNorm, the fixed-padding stem
_BIT = dict(stem_type="fixed", conv_layer=partial(StdConv2d, eps=1e-8))
# timm's own trainings: plain convolutions and BatchNorm (ReLU in place)
_BN = dict(conv_layer=create_conv2d, norm_layer=partial(BatchNormAct2d, inplace=True))
_BASIC = dict(_BN, channels=(64, 128, 256, 512), basic=True, bottle_ratio=1.0)
_D = dict(stem_type="deep", avg_down=True)


@register_model
def resnetv2_50x1_bit(pretrained=False, progress=True, **kwargs):
    """BiT-50x1: a pre-activation ResNet-50 with weight standardisation and GroupNorm."""
    return _create_resnetv2("resnetv2_50x1_bit", pretrained, progress, kwargs, layers=(3, 4, 6, 3), width_factor=1,
                            **_BIT)


@register_model
def resnetv2_50x3_bit(pretrained=False, progress=True, **kwargs):
    """BiT-50x3: BiT-50 three times as wide."""
    return _create_resnetv2("resnetv2_50x3_bit", pretrained, progress, kwargs, layers=(3, 4, 6, 3), width_factor=3,
                            **_BIT)


@register_model
def resnetv2_101x1_bit(pretrained=False, progress=True, **kwargs):
    """BiT-101x1: a pre-activation ResNet-101 with weight standardisation and GroupNorm."""
    return _create_resnetv2("resnetv2_101x1_bit", pretrained, progress, kwargs, layers=(3, 4, 23, 3),
                            width_factor=1, **_BIT)


@register_model
def resnetv2_101x3_bit(pretrained=False, progress=True, **kwargs):
    """BiT-101x3: BiT-101 three times as wide."""
    return _create_resnetv2("resnetv2_101x3_bit", pretrained, progress, kwargs, layers=(3, 4, 23, 3),
                            width_factor=3, **_BIT)


@register_model
def resnetv2_152x2_bit(pretrained=False, progress=True, **kwargs):
    """BiT-152x2: a pre-activation ResNet-152 with weight standardisation and GroupNorm, twice as wide."""
    return _create_resnetv2("resnetv2_152x2_bit", pretrained, progress, kwargs, layers=(3, 8, 36, 3),
                            width_factor=2, **_BIT)


@register_model
def resnetv2_152x4_bit(pretrained=False, progress=True, **kwargs):
    """BiT-152x4: BiT-152 four times as wide."""
    return _create_resnetv2("resnetv2_152x4_bit", pretrained, progress, kwargs, layers=(3, 8, 36, 3),
                            width_factor=4, **_BIT)


@register_model
def resnetv2_18(pretrained=False, progress=True, **kwargs):
    """ResNetV2-18: pre-activation basic blocks with BatchNorm."""
    return _create_resnetv2("resnetv2_18", pretrained, progress, kwargs, layers=(2, 2, 2, 2), **_BASIC)


@register_model
def resnetv2_18d(pretrained=False, progress=True, **kwargs):
    """ResNetV2-18d: ResNetV2-18 with the deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_18d", pretrained, progress, kwargs, layers=(2, 2, 2, 2), **_BASIC, **_D)


@register_model
def resnetv2_34(pretrained=False, progress=True, **kwargs):
    """ResNetV2-34: pre-activation basic blocks with BatchNorm."""
    return _create_resnetv2("resnetv2_34", pretrained, progress, kwargs, layers=(3, 4, 6, 3), **_BASIC)


@register_model
def resnetv2_34d(pretrained=False, progress=True, **kwargs):
    """ResNetV2-34d: ResNetV2-34 with the deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_34d", pretrained, progress, kwargs, layers=(3, 4, 6, 3), **_BASIC, **_D)


@register_model
def resnetv2_50(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50: pre-activation bottlenecks with BatchNorm."""
    return _create_resnetv2("resnetv2_50", pretrained, progress, kwargs, layers=(3, 4, 6, 3), **_BN)


@register_model
def resnetv2_101(pretrained=False, progress=True, **kwargs):
    """ResNetV2-101: pre-activation bottlenecks with BatchNorm."""
    return _create_resnetv2("resnetv2_101", pretrained, progress, kwargs, layers=(3, 4, 23, 3), **_BN)


@register_model
def resnetv2_50d_gn(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50d with GroupNorm (32 groups): deep stem, average-pool shortcuts."""
    return _create_resnetv2("resnetv2_50d_gn", pretrained, progress, kwargs, layers=(3, 4, 6, 3),
                            conv_layer=create_conv2d, norm_layer=GroupNormAct, **_D)


@register_model
def resnetv2_50d_evos(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50d with EvoNorm-S0 (32 groups) in place of norm and activation: deep stem, average-pool
    shortcuts."""
    return _create_resnetv2("resnetv2_50d_evos", pretrained, progress, kwargs, layers=(3, 4, 6, 3),
                            conv_layer=create_conv2d, norm_layer=EvoNorm2dS0, **_D)


@register_model
def resnetv2_50d(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50d: ResNetV2-50 with the deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_50d", pretrained, progress, kwargs, layers=(3, 4, 6, 3), **_BN, **_D)


@register_model
def resnetv2_50t(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50t: ResNetV2-50 with the tiered deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_50t", pretrained, progress, kwargs, layers=(3, 4, 6, 3), **_BN,
                            stem_type="tiered", avg_down=True)


@register_model
def resnetv2_101d(pretrained=False, progress=True, **kwargs):
    """ResNetV2-101d: ResNetV2-101 with the deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_101d", pretrained, progress, kwargs, layers=(3, 4, 23, 3), **_BN, **_D)


@register_model
def resnetv2_152(pretrained=False, progress=True, **kwargs):
    """ResNetV2-152: pre-activation bottlenecks 3-8-36-3 with BatchNorm."""
    return _create_resnetv2("resnetv2_152", pretrained, progress, kwargs, layers=(3, 8, 36, 3), **_BN)


@register_model
def resnetv2_152d(pretrained=False, progress=True, **kwargs):
    """ResNetV2-152d: ResNetV2-152 with the deep stem and average-pool shortcuts."""
    return _create_resnetv2("resnetv2_152d", pretrained, progress, kwargs, layers=(3, 8, 36, 3), **_BN, **_D)


@register_model
def resnetv2_50d_frn(pretrained=False, progress=True, **kwargs):
    """ResNetV2-50d with filter response normalisation and its thresholded linear unit in place of norm and
    activation: deep stem, average-pool shortcuts."""
    return _create_resnetv2("resnetv2_50d_frn", pretrained, progress, kwargs, layers=(3, 4, 6, 3),
                            conv_layer=create_conv2d, norm_layer=FilterResponseNormTlu2d, **_D)
