"""NASNet-A (Zoph et al. 2018, "Learning Transferable Architectures for Scalable Image Recognition"):
nasnetalarge.

A network whose cells were found by architecture search on CIFAR-10 and stacked for ImageNet. Every cell takes
the outputs of the two layers before it, brings both to its width (1x1 convolutions, or a factorised reduction
where the older one is twice as large), and sums pairs of branches (separable convolutions applied twice, pools,
identities) in five combinations that it concatenates. Normal cells keep the size; reduction cells halve it.
NASNet-A Large has a 3x3 stem, two reduction stem cells and three stacks of six normal cells (the first of each
stack a ``FirstCell``, which reduces its older input), separated by two reduction cells, widths doubling at each
reduction, up to 4032 channels. Convolutions and pools pad as TensorFlow does ("same"). Model name, module names,
``state_dict`` keys and initialisation (PyTorch's defaults) follow timm's ``nasnet`` module, so its
``nasnetalarge`` weights (ported from TensorFlow; 331x331 images normalised to [-1, 1]) load directly.

The cells' layers (``ActConvBn``, ``SeparableConv2d``, ``BranchSeparables``, ``create_pool2d``) and the API of a
network of two-input cells (``CellNetApi``) serve PNASNet too (``pnasnet``).
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureBodyNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._conv import AvgPool2dSame, MaxPool2dSame, create_conv2d, get_padding
from ._layers import BatchNormAct2d, ConvNormAct, create_classifier

__all__ = []

_BatchNorm = partial(nn.BatchNorm2d, eps=0.001)


def create_pool2d(pool_type, kernel_size, stride, pad_type="", count_include_pad=True):
    """A 'max' or 'avg' pool padded as ``create_conv2d`` pads (timm's ``create_pool2d``): '' pads half the window,
    'same' as TensorFlow (statically where a symmetric padding gives it, else per input, where the padded zeros of
    an average count whatever ``count_include_pad`` says, as in timm)."""
    if pool_type not in ("max", "avg"):
        raise ValueError(f"pool_type must be 'max' or 'avg', got {pool_type!r}")
    if pad_type == "same" and (stride > 1 or kernel_size % 2 == 0):
        if pool_type == "max":
            return MaxPool2dSame(kernel_size, stride)
        return AvgPool2dSame(kernel_size, stride, count_include_pad=count_include_pad)
    padding = get_padding(kernel_size, stride)
    if pool_type == "max":
        return nn.MaxPool2d(kernel_size, stride, padding)
    return nn.AvgPool2d(kernel_size, stride, padding, count_include_pad=count_include_pad)


class ActConvBn(nn.Module):
    """ReLU, a bias-free convolution and BatchNorm (eps 1e-3): how a cell adapts an input's width."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_type=""):
        super().__init__()
        self.act = nn.ReLU()
        self.conv = create_conv2d(in_channels, out_channels, kernel_size, stride, pad_type=pad_type)
        self.bn = _BatchNorm(out_channels)

    def forward(self, x):
        x = self.act(x)
        x = self.conv(x)
        x = self.bn(x)
        return x


class SeparableConv2d(nn.Module):
    """A depthwise ``kernel_size`` convolution (``depthwise_conv2d``, carrying the stride) and a 1x1 convolution
    (``pointwise_conv2d``), both bias-free, nothing between them."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, pad_type=""):
        super().__init__()
        self.depthwise_conv2d = create_conv2d(in_channels, in_channels, kernel_size, stride, groups=in_channels,
                                              pad_type=pad_type)
        self.pointwise_conv2d = create_conv2d(in_channels, out_channels, 1, pad_type=pad_type)

    def forward(self, x):
        x = self.depthwise_conv2d(x)
        x = self.pointwise_conv2d(x)
        return x


class BranchSeparables(nn.Module):
    """The searched cells' separable branch: twice ReLU, separable convolution, BatchNorm (eps 1e-3); the first
    separable convolution carries the stride. In a stem cell (``stem_cell``) the first one already widens to
    ``out_channels``, else the second does. ``inplace_mid_act`` is whether the second ReLU works in place (it does
    in NASNet, not in PNASNet)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_type="", stem_cell=False,
                 inplace_mid_act=True):
        super().__init__()
        middle_channels = out_channels if stem_cell else in_channels
        self.act_1 = nn.ReLU()
        self.separable_1 = SeparableConv2d(in_channels, middle_channels, kernel_size, stride, pad_type)
        self.bn_sep_1 = _BatchNorm(middle_channels)
        self.act_2 = nn.ReLU(inplace=inplace_mid_act)
        self.separable_2 = SeparableConv2d(middle_channels, out_channels, kernel_size, 1, pad_type)
        self.bn_sep_2 = _BatchNorm(out_channels)

    def forward(self, x):
        x = self.act_1(x)
        x = self.separable_1(x)
        x = self.bn_sep_1(x)
        x = self.act_2(x)
        x = self.separable_2(x)
        x = self.bn_sep_2(x)
        return x


def factorized_paths(in_channels, out_channels):
    """A factorised reduction's two paths to ``out_channels`` each (``path_1``, ``path_2``): every second pixel of
    the map, and of the map shifted by one pixel (cropped at the top left, zero-padded at the bottom right), each
    through a bias-free 1x1 convolution. Together they halve the size without dropping any pixel."""
    path_1 = nn.Sequential()
    path_1.add_module("avgpool", nn.AvgPool2d(1, stride=2, count_include_pad=False))
    path_1.add_module("conv", nn.Conv2d(in_channels, out_channels, 1, bias=False))
    path_2 = nn.Sequential()
    path_2.add_module("pad", nn.ZeroPad2d((-1, 1, -1, 1)))
    path_2.add_module("avgpool", nn.AvgPool2d(1, stride=2, count_include_pad=False))
    path_2.add_module("conv", nn.Conv2d(in_channels, out_channels, 1, bias=False))
    return path_1, path_2


class _ReductionCombinations(nn.Module):
    """The five combinations of NASNet-A's reduction cell, on the cell's adapted input (``current``, ``chs``
    wide) and the older input (``other``, ``other_chs`` wide): the branches on the inputs halve the size, those
    on the first combination (a 3x3 average pool, a separable 3x3 convolution) keep it. The cell returns
    combinations 1 to 4, concatenated (4 x ``chs`` channels)."""

    def _add_combinations(self, chs, other_chs, pad_type, stem_cell=False):
        """Register the combinations' branches, in timm's order."""
        other_branch = partial(BranchSeparables, other_chs, chs, pad_type=pad_type, stem_cell=stem_cell)
        self.comb_iter_0_left = BranchSeparables(chs, chs, 5, 2, pad_type)
        self.comb_iter_0_right = other_branch(7, 2)
        self.comb_iter_1_left = create_pool2d("max", 3, 2, pad_type)
        self.comb_iter_1_right = other_branch(7, 2)
        self.comb_iter_2_left = create_pool2d("avg", 3, 2, pad_type, count_include_pad=False)
        self.comb_iter_2_right = other_branch(5, 2)
        self.comb_iter_3_right = create_pool2d("avg", 3, 1, pad_type, count_include_pad=False)
        self.comb_iter_4_left = BranchSeparables(chs, chs, 3, 1, pad_type)
        self.comb_iter_4_right = create_pool2d("max", 3, 2, pad_type)

    def _combine(self, current, other):
        comb_0 = self.comb_iter_0_left(current) + self.comb_iter_0_right(other)
        comb_1 = self.comb_iter_1_left(current) + self.comb_iter_1_right(other)
        comb_2 = self.comb_iter_2_left(current) + self.comb_iter_2_right(other)
        comb_3 = self.comb_iter_3_right(comb_0) + comb_1
        comb_4 = self.comb_iter_4_left(comb_0) + self.comb_iter_4_right(current)
        return torch.cat([comb_1, comb_2, comb_3, comb_4], 1)


class _NormalCombinations(nn.Module):
    """The five combinations of NASNet-A's normal cell, on the cell's adapted input (``current``, ``chs`` wide)
    and the older input (``other``, ``other_chs`` wide), all at the same size. The cell returns the older input
    and the five combinations, concatenated."""

    def _add_combinations(self, chs, other_chs, pad_type):
        """Register the combinations' branches, in timm's order."""
        avg_pool = partial(create_pool2d, "avg", 3, 1, pad_type, count_include_pad=False)
        self.comb_iter_0_left = BranchSeparables(chs, chs, 5, 1, pad_type)
        self.comb_iter_0_right = BranchSeparables(other_chs, other_chs, 3, 1, pad_type)
        self.comb_iter_1_left = BranchSeparables(other_chs, other_chs, 5, 1, pad_type)
        self.comb_iter_1_right = BranchSeparables(other_chs, other_chs, 3, 1, pad_type)
        self.comb_iter_2_left = avg_pool()
        self.comb_iter_3_left = avg_pool()
        self.comb_iter_3_right = avg_pool()
        self.comb_iter_4_left = BranchSeparables(chs, chs, 3, 1, pad_type)

    def _combine(self, current, other):
        comb_0 = self.comb_iter_0_left(current) + self.comb_iter_0_right(other)
        comb_1 = self.comb_iter_1_left(other) + self.comb_iter_1_right(other)
        comb_2 = self.comb_iter_2_left(current) + other
        comb_3 = self.comb_iter_3_left(other) + self.comb_iter_3_right(other)
        comb_4 = self.comb_iter_4_left(current) + current
        return torch.cat([other, comb_0, comb_1, comb_2, comb_3, comb_4], 1)


class FactorizedReductionMixin:
    """A cell (mixin) whose older input is twice its current input's size: ReLU (``act``), the two factorised
    paths (``path_1``, ``path_2``) concatenated, and BatchNorm (``final_path_bn``)."""

    def _add_factorized_reduction(self, in_chs, path_chs):
        """Register the reduction's layers: two paths of ``path_chs`` channels each."""
        self.act = nn.ReLU()
        self.path_1, self.path_2 = factorized_paths(in_chs, path_chs)
        self.final_path_bn = _BatchNorm(2 * path_chs)

    def _reduce(self, x):
        x = self.act(x)
        return self.final_path_bn(torch.cat([self.path_1(x), self.path_2(x)], 1))


class CellStem0(_ReductionCombinations):
    """The first stem cell (one input, the stem's ``stem_size``-channel map): its 1x1-adapted copy
    (``conv_1x1``, ``num_channels`` wide) and the map itself, through the reduction combinations (the map's
    branches widen it in their first separable convolution)."""

    def __init__(self, stem_size, num_channels=42, pad_type=""):
        super().__init__()
        self.num_channels = num_channels
        self.stem_size = stem_size
        self.conv_1x1 = ActConvBn(stem_size, num_channels, 1)
        self._add_combinations(num_channels, stem_size, pad_type, stem_cell=True)

    def forward(self, x):
        return self._combine(self.conv_1x1(x), x)


class CellStem1(FactorizedReductionMixin, _ReductionCombinations):
    """The second stem cell: the first stem cell's output adapted by a 1x1 convolution (``conv_1x1``, from
    2 x ``num_channels``; timm's widths assume the multiplier 2) and the stem's map, twice as large, through a
    factorised reduction, into the reduction combinations."""

    def __init__(self, stem_size, num_channels, pad_type=""):
        super().__init__()
        self.num_channels = num_channels
        self.stem_size = stem_size
        self.conv_1x1 = ActConvBn(2 * num_channels, num_channels, 1)
        self._add_factorized_reduction(stem_size, num_channels // 2)
        self._add_combinations(num_channels, num_channels, pad_type)

    def forward(self, x_conv0, x_stem_0):
        return self._combine(self.conv_1x1(x_stem_0), self._reduce(x_conv0))


class FirstCell(FactorizedReductionMixin, _NormalCombinations):
    """The normal cell after a reduction: its older input, twice as large, goes through a factorised reduction
    (two paths of ``out_chs_left``); the current one through ReLU-1x1 convolution-BatchNorm (``conv_1x1``)."""

    def __init__(self, in_chs_left, out_chs_left, in_chs_right, out_chs_right, pad_type=""):
        super().__init__()
        self.conv_1x1 = ActConvBn(in_chs_right, out_chs_right, 1)
        self._add_factorized_reduction(in_chs_left, out_chs_left)
        self._add_combinations(out_chs_right, out_chs_right, pad_type)

    def forward(self, x, x_prev):
        return self._combine(self.conv_1x1(x), self._reduce(x_prev))


class NormalCell(_NormalCombinations):
    """NASNet-A's normal cell: both inputs adapted by ReLU-1x1 convolution-BatchNorm (``conv_prev_1x1`` for the
    older one, ``conv_1x1`` for the current one), then the normal combinations."""

    def __init__(self, in_chs_left, out_chs_left, in_chs_right, out_chs_right, pad_type=""):
        super().__init__()
        self.conv_prev_1x1 = ActConvBn(in_chs_left, out_chs_left, 1, pad_type=pad_type)
        self.conv_1x1 = ActConvBn(in_chs_right, out_chs_right, 1, pad_type=pad_type)
        self._add_combinations(out_chs_right, out_chs_left, pad_type)

    def forward(self, x, x_prev):
        return self._combine(self.conv_1x1(x), self.conv_prev_1x1(x_prev))


class ReductionCell0(_ReductionCombinations):
    """NASNet-A's reduction cell: both inputs adapted by ReLU-1x1 convolution-BatchNorm (``conv_prev_1x1``,
    ``conv_1x1``), then the reduction combinations, which halve the size."""

    def __init__(self, in_chs_left, out_chs_left, in_chs_right, out_chs_right, pad_type=""):
        super().__init__()
        self.conv_prev_1x1 = ActConvBn(in_chs_left, out_chs_left, 1, pad_type=pad_type)
        self.conv_1x1 = ActConvBn(in_chs_right, out_chs_right, 1, pad_type=pad_type)
        self._add_combinations(out_chs_right, out_chs_right, pad_type)

    def forward(self, x, x_prev):
        return self._combine(self.conv_1x1(x), self.conv_prev_1x1(x_prev))


class ReductionCell1(ReductionCell0):
    """The second reduction cell, the same as the first (timm keeps a class of this name for each)."""


class CellNetApi:
    """timm's API of a network of two-input cells (NASNet, PNASNet; a mixin before ``nn.Module``): the model runs
    the layers named in ``layer_names`` in turn, ``_apply_layer`` wiring each to the outputs before it, and ends in
    a ReLU (``act``), global pooling (``global_pool``), dropout (``head_drop``) and the classifier
    (``last_linear``). ``feature_ends`` gives the layer of each ``feature_info`` tap; a cell's tap is its output
    activated (the ReLU that the next cell's 1x1 convolution opens with)."""

    @property
    def feature_wrapper(self):
        """timm's ``features_only`` model: the whole model under ``body``, its taps' maps as features."""
        return FeatureBodyNet

    def _add_head(self, num_classes, global_pool, drop_rate):
        """Register the head's modules and set its widths."""
        global_pool, last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.global_pool = global_pool
        self.head_drop = nn.Dropout(drop_rate)
        self.last_linear = last_linear
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()

    def get_classifier(self):
        """The final linear layer."""
        return self.last_linear

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: an identity), after ``global_pool`` if given (else the
        current pooling)."""
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.num_classes = num_classes
        self.global_pool, self.last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.last_linear.train(self.training)

    def _run_layers(self, x, num_layers, take=()):
        """``x`` through the first ``num_layers`` layers: the last output (activated where it ends at a tap) and
        the maps of the taps whose indices are in ``take``."""
        intermediates = []
        x_prev = x
        tap = 0
        for i, name in enumerate(self.layer_names[:num_layers]):
            x, x_prev = self._apply_layer(i, getattr(self, name), x, x_prev)
            if i != self.feature_ends[tap]:
                continue
            if tap == len(self.feature_ends) - 1:
                x = self.act(x)
                tapped = x
            elif tap > 0:
                tapped = F.relu(x)
            else:
                tapped = x
            if tap in take:
                intermediates.append(tapped)
            tap += 1
        if 0 < tap - 1 < len(self.feature_ends) - 1:
            x = F.relu(x)
        return x, intermediates

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last cell's activated map (N, num_features, H / 32, W / 32)."""
        x, _ = self._run_layers(x, len(self.layer_names))
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The taps of ``feature_info`` picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the final map. ``stop_early`` runs no further than the last tap picked (the final
        map is then that tap); ``norm`` is accepted for timm's signature (there is no final norm)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.feature_ends), indices)
        num_layers = self.feature_ends[max(take)] + 1 if stop_early else len(self.layer_names)
        x, intermediates = self._run_layers(x, num_layers, take)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the layers after the last tap ``indices`` picks, as timm does: they become None (cells take two
        inputs, so an identity cannot stand in) and leave ``layer_names``, so the model ends at that tap (a cell's
        activated), its width the new ``num_features``; the pooling and classifier go when asked or when layers
        go. ``prune_norm`` is accepted for timm's signature (there is no final norm). Returns the absolute
        indices."""
        take = take_indices(len(self.feature_ends), indices)
        num_layers = self.feature_ends[max(take)] + 1
        prune_end = num_layers < len(self.layer_names)
        for name in self.layer_names[num_layers:]:
            setattr(self, name, None)
        self.layer_names = self.layer_names[:num_layers]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[max(take)]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Global pooling, dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.last_linear(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


class NASNetALarge(CellNetApi, nn.Module):
    """NASNet-A Large ("6 @ 4032"): a 3x3 stride-2 stem of ``stem_size`` channels (``conv0``, unpadded, BatchNorm
    with no activation), two stem cells (``cell_stem_0``, ``cell_stem_1``), then three stacks of six cells
    (``cell_0``... ``cell_17``) separated by ``reduction_cell_0`` and ``reduction_cell_1``, and a final ReLU.

    ``num_features`` is 24 times the first stack's cell width; the stem cells are ``channel_multiplier`` and
    ``channel_multiplier`` squared times narrower (timm's cell widths assume the multiplier 2). ``pad_type``
    'same' pads as TensorFlow; the output stride is 32 only.
    """

    default_cfg = {"first_conv": "conv0.conv", "classifier": "last_linear"}

    def __init__(self, num_classes=1000, in_chans=3, stem_size=96, channel_multiplier=2, num_features=4032,
                 output_stride=32, drop_rate=0.0, global_pool="avg", pad_type="same"):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"NASNet-A has output stride 32 only, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.stem_size = stem_size
        self.num_features = num_features
        self.channel_multiplier = channel_multiplier
        chs = num_features // 24
        self.conv0 = ConvNormAct(in_chans, stem_size, 3, stride=2, padding=0,
                                 norm_layer=partial(BatchNormAct2d, eps=0.001), apply_act=False)
        self.cell_stem_0 = CellStem0(stem_size, chs // channel_multiplier ** 2, pad_type)
        self.cell_stem_1 = CellStem1(stem_size, chs // channel_multiplier, pad_type)
        self.layer_names = ["conv0", "cell_stem_0", "cell_stem_1"]
        self._add_stack(0, chs, chs, 2 * chs, pad_type)
        self.reduction_cell_0 = ReductionCell0(6 * chs, 2 * chs, 6 * chs, 2 * chs, pad_type)
        self.layer_names.append("reduction_cell_0")
        self._add_stack(6, 2 * chs, 6 * chs, 8 * chs, pad_type)
        self.reduction_cell_1 = ReductionCell1(12 * chs, 4 * chs, 12 * chs, 4 * chs, pad_type)
        self.layer_names.append("reduction_cell_1")
        self._add_stack(12, 4 * chs, 12 * chs, 16 * chs, pad_type)
        self.act = nn.ReLU(inplace=True)
        # timm's taps; it writes the full-size widths, which these give for its configuration
        self.feature_info = [
            dict(num_chs=stem_size, reduction=2, module="conv0"),
            dict(num_chs=4 * (chs // channel_multiplier ** 2), reduction=4, module="cell_stem_1.conv_1x1.act"),
            dict(num_chs=6 * chs, reduction=8, module="reduction_cell_0.conv_1x1.act"),
            dict(num_chs=12 * chs, reduction=16, module="reduction_cell_1.conv_1x1.act"),
            dict(num_chs=num_features, reduction=32, module="act"),
        ]
        taps = ("conv0", "cell_stem_0", "cell_5", "cell_11", "cell_17")
        self.feature_ends = [self.layer_names.index(name) for name in taps]
        self._add_head(num_classes, global_pool, drop_rate)

    def _add_stack(self, first, width, prev_chs, in_chs, pad_type):
        """Six cells ``cell_<first>``...: a FirstCell (older input ``prev_chs`` wide and twice as large, current
        input ``in_chs`` wide), then five normal cells of 6 x ``width`` channels."""
        self.add_module(f"cell_{first}", FirstCell(prev_chs, width // 2, in_chs, width, pad_type))
        left_chs = in_chs
        for i in range(first + 1, first + 6):
            self.add_module(f"cell_{i}", NormalCell(left_chs, width, 6 * width, width, pad_type))
            left_chs = 6 * width
        self.layer_names += [f"cell_{i}" for i in range(first, first + 6)]

    def _apply_layer(self, index, layer, x, x_prev):
        """One layer on the outputs before it: the stem and the first stem cell on the last output, the second
        stem cell on the stem's and the first's, every other cell on the last two outputs (current, older). A
        reduction cell's older input is also the next cell's. Returns the new (last, older) outputs."""
        if index < 2:
            return layer(x), x
        if index == 2:
            return layer(x_prev, x), x
        if isinstance(layer, ReductionCell0):
            return layer(x, x_prev), x_prev
        return layer(x, x_prev), x


def _create_nasnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's five taps (strides 2 to 32) unless
    ``out_indices`` says otherwise, the model whole under ``body`` as in timm."""
    return build_model(NASNetALarge, variant, pretrained, progress=progress, **kwargs)


@register_model
def nasnetalarge(pretrained=False, progress=True, **kwargs):
    """NASNet-A Large (331x331 images)."""
    return _create_nasnet("nasnetalarge", pretrained, progress, pad_type="same", **kwargs)
