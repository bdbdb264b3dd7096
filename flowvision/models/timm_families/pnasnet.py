"""PNASNet (Liu et al. 2018, "Progressive Neural Architecture Search"): pnasnet5large.

A network whose cell was found by a search that grows cells one combination at a time, ranking the candidates
with a learnt predictor instead of training each. Like NASNet's, each cell takes the outputs of the two layers
before it, brings both to its width (1x1 convolutions, or a factorised reduction where the older one is twice as
large), and concatenates five combinations of pairs of branches (separable convolutions applied twice, max pools,
identities); a reduction cell runs them with stride 2. PNASNet-5 Large has a 3x3 stem, a stem cell and a reducing
cell, then three stacks of four cells (the first two after the stem stack, the first of the others, reducing),
widths doubling at each reduction, up to 4320 channels. Convolutions and pools pad as TensorFlow does ("same").
Model name, module names, ``state_dict`` keys and initialisation (PyTorch's defaults) follow timm's ``pnasnet``
module, so its ``pnasnet5large`` weights (ported from TensorFlow; 331x331 images normalised to [-1, 1]) load
directly. The layers and the model API are NASNet's (``nasnet``).
"""
from collections import OrderedDict
from functools import partial

import engine as torch
from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d
from ._layers import BatchNormAct2d, ConvNormAct
from .nasnet import ActConvBn, BranchSeparables, CellNetApi, FactorizedReductionMixin, create_pool2d

__all__ = []

# PNASNet's separable branches: as NASNet's, but the second ReLU is not in place
_branch = partial(BranchSeparables, inplace_mid_act=False)

# (in_chs_left, out_chs_left, in_chs_right, out_chs_right, is_reduction, match_prev_layer_dims) of cell_stem_1 and
# cell_0 to cell_11
_CELLS = [
    (96, 108, 270, 108, True, True),
    (270, 216, 540, 216, False, True),
    (540, 216, 1080, 216, False, False),
    (1080, 216, 1080, 216, False, False),
    (1080, 216, 1080, 216, False, False),
    (1080, 432, 1080, 432, True, False),
    (1080, 432, 2160, 432, False, True),
    (2160, 432, 2160, 432, False, False),
    (2160, 432, 2160, 432, False, False),
    (2160, 864, 2160, 864, True, False),
    (2160, 864, 4320, 864, False, True),
    (4320, 864, 4320, 864, False, False),
    (4320, 864, 4320, 864, False, False),
]


class FactorizedReduction(FactorizedReductionMixin, nn.Module):
    """ReLU and a factorised reduction to ``out_channels`` (two paths of half as many, concatenated, then
    BatchNorm): how a cell adapts an older input twice its current input's size."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self._add_factorized_reduction(in_channels, out_channels // 2)

    def forward(self, x):
        return self._reduce(x)


class CellBase(nn.Module):
    """PNASNet's five combinations on a cell's adapted inputs, ``x_left`` (the older) and ``x_right`` (the
    current): separable 5x5 + max pool of the left; separable 7x7 + max pool, separable 5x5 + separable 3x3 of
    the right; separable 3x3 of the third combination + max pool of the right; separable 3x3 of the left + the
    right (a 1x1 convolution of it, strided, in a reduction cell). They are concatenated."""

    def cell_forward(self, x_left, x_right):
        comb_0 = self.comb_iter_0_left(x_left) + self.comb_iter_0_right(x_left)
        comb_1 = self.comb_iter_1_left(x_right) + self.comb_iter_1_right(x_right)
        comb_2 = self.comb_iter_2_left(x_right) + self.comb_iter_2_right(x_right)
        comb_3 = self.comb_iter_3_left(comb_2) + self.comb_iter_3_right(x_right)
        right = x_right if self.comb_iter_4_right is None else self.comb_iter_4_right(x_right)
        comb_4 = self.comb_iter_4_left(x_left) + right
        return torch.cat([comb_0, comb_1, comb_2, comb_3, comb_4], 1)


class CellStem0(CellBase):
    """The first cell, a reducing one on the stem's map alone: the map itself is the left input (its branches
    widen it to ``out_chs_left`` in their first layer; the max pool's branch has a 1x1 convolution and BatchNorm
    after it), its 1x1-adapted copy (``conv_1x1``, ``out_chs_right`` wide) the right."""

    def __init__(self, in_chs_left, out_chs_left, in_chs_right, out_chs_right, pad_type=""):
        super().__init__()
        self.conv_1x1 = ActConvBn(in_chs_right, out_chs_right, 1, pad_type=pad_type)
        self.comb_iter_0_left = _branch(in_chs_left, out_chs_left, 5, 2, pad_type, stem_cell=True)
        self.comb_iter_0_right = nn.Sequential(OrderedDict([
            ("max_pool", create_pool2d("max", 3, 2, pad_type)),
            ("conv", create_conv2d(in_chs_left, out_chs_left, 1, pad_type=pad_type)),
            ("bn", nn.BatchNorm2d(out_chs_left, eps=0.001)),
        ]))
        self.comb_iter_1_left = _branch(out_chs_right, out_chs_right, 7, 2, pad_type)
        self.comb_iter_1_right = create_pool2d("max", 3, 2, pad_type)
        self.comb_iter_2_left = _branch(out_chs_right, out_chs_right, 5, 2, pad_type)
        self.comb_iter_2_right = _branch(out_chs_right, out_chs_right, 3, 2, pad_type)
        self.comb_iter_3_left = _branch(out_chs_right, out_chs_right, 3, 1, pad_type)
        self.comb_iter_3_right = create_pool2d("max", 3, 2, pad_type)
        self.comb_iter_4_left = _branch(in_chs_right, out_chs_right, 3, 2, pad_type, stem_cell=True)
        self.comb_iter_4_right = ActConvBn(out_chs_right, out_chs_right, 1, stride=2, pad_type=pad_type)

    def forward(self, x_left):
        x_right = self.conv_1x1(x_left)
        return self.cell_forward(x_left, x_right)


class Cell(CellBase):
    """PNASNet's cell: the older input adapted by ReLU-1x1 convolution-BatchNorm (``conv_prev_1x1``), or by a
    factorised reduction where it is twice as large (``match_prev_layer_dims``); the current input by
    ReLU-1x1 convolution-BatchNorm (``conv_1x1``). ``is_reduction`` runs the combinations with stride 2 (and gives
    the last one a strided 1x1 convolution). The third combination's second branch pads as PyTorch, as in timm."""

    def __init__(self, in_chs_left, out_chs_left, in_chs_right, out_chs_right, pad_type="", is_reduction=False,
                 match_prev_layer_dims=False):
        super().__init__()
        stride = 2 if is_reduction else 1
        self.match_prev_layer_dimensions = match_prev_layer_dims
        if match_prev_layer_dims:
            self.conv_prev_1x1 = FactorizedReduction(in_chs_left, out_chs_left)
        else:
            self.conv_prev_1x1 = ActConvBn(in_chs_left, out_chs_left, 1, pad_type=pad_type)
        self.conv_1x1 = ActConvBn(in_chs_right, out_chs_right, 1, pad_type=pad_type)
        self.comb_iter_0_left = _branch(out_chs_left, out_chs_left, 5, stride, pad_type)
        self.comb_iter_0_right = create_pool2d("max", 3, stride, pad_type)
        self.comb_iter_1_left = _branch(out_chs_right, out_chs_right, 7, stride, pad_type)
        self.comb_iter_1_right = create_pool2d("max", 3, stride, pad_type)
        self.comb_iter_2_left = _branch(out_chs_right, out_chs_right, 5, stride, pad_type)
        self.comb_iter_2_right = _branch(out_chs_right, out_chs_right, 3, stride, pad_type)
        self.comb_iter_3_left = _branch(out_chs_right, out_chs_right, 3)
        self.comb_iter_3_right = create_pool2d("max", 3, stride, pad_type)
        self.comb_iter_4_left = _branch(out_chs_left, out_chs_left, 3, stride, pad_type)
        if is_reduction:
            self.comb_iter_4_right = ActConvBn(out_chs_right, out_chs_right, 1, stride=stride, pad_type=pad_type)
        else:
            self.comb_iter_4_right = None

    def forward(self, x_left, x_right):
        x_left = self.conv_prev_1x1(x_left)
        x_right = self.conv_1x1(x_right)
        return self.cell_forward(x_left, x_right)


class PNASNet5Large(CellNetApi, nn.Module):
    """PNASNet-5 Large: a 3x3 stride-2 stem of 96 channels (``conv_0``, unpadded, BatchNorm with no activation),
    ``cell_stem_0``, ``cell_stem_1`` (reducing), ``cell_0`` to ``cell_11`` (``cell_4`` and ``cell_8`` reducing),
    a final ReLU (``act``) and timm's head (see ``CellNetApi``). The widths are fixed, as in timm; ``pad_type``
    'same' (what the entrypoint passes) pads as TensorFlow. The output stride is 32 only.
    """

    default_cfg = {"first_conv": "conv_0.conv", "classifier": "last_linear"}

    def __init__(self, num_classes=1000, in_chans=3, output_stride=32, drop_rate=0.0, global_pool="avg",
                 pad_type=""):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"PNASNet-5 has output stride 32 only, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = 4320
        self.conv_0 = ConvNormAct(in_chans, 96, 3, stride=2, padding=0, norm_layer=partial(BatchNormAct2d, eps=0.001),
                                  apply_act=False)
        self.cell_stem_0 = CellStem0(96, 54, 96, 54, pad_type)
        names = ["cell_stem_1"] + [f"cell_{i}" for i in range(len(_CELLS) - 1)]
        for name, (in_left, out_left, in_right, out_right, is_reduction, match_prev) in zip(names, _CELLS):
            self.add_module(name, Cell(in_left, out_left, in_right, out_right, pad_type, is_reduction, match_prev))
        self.act = nn.ReLU()
        self.feature_info = [
            dict(num_chs=96, reduction=2, module="conv_0"),
            dict(num_chs=270, reduction=4, module="cell_stem_1.conv_1x1.act"),
            dict(num_chs=1080, reduction=8, module="cell_4.conv_1x1.act"),
            dict(num_chs=2160, reduction=16, module="cell_8.conv_1x1.act"),
            dict(num_chs=4320, reduction=32, module="act"),
        ]
        self.layer_names = ["conv_0", "cell_stem_0"] + names
        taps = ("conv_0", "cell_stem_0", "cell_3", "cell_7", "cell_11")
        self.feature_ends = [self.layer_names.index(name) for name in taps]
        self._add_head(num_classes, global_pool, drop_rate)

    def _apply_layer(self, index, layer, x, x_prev):
        """One layer on the outputs before it: the stem and the stem cell on the last output, every other cell on
        the last two (older, current). Returns the new (last, older) outputs."""
        if index < 2:
            return layer(x), x
        return layer(x_prev, x), x


@register_model
def pnasnet5large(pretrained=False, progress=True, **kwargs):
    """PNASNet-5 Large (331x331 images)."""
    return build_model(PNASNet5Large, "pnasnet5large", pretrained, progress=progress, pad_type="same", **kwargs)
