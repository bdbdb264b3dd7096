"""Deep Layer Aggregation (Yu et al. 2018, "Deep Layer Aggregation"), with the Res2Net block (Gao et al. 2019):
dla34, dla46_c, dla46x_c, dla60, dla60x, dla60x_c, dla102, dla102x, dla102x2, dla169, dla60_res2net and
dla60_res2next.

A stem and two plain convolution levels, then four levels that each halve the map and merge their blocks with
hierarchical deep aggregation: a level is a binary tree of residual blocks whose leaves are joined pairwise by
aggregation nodes (``DlaRoot``: a 1x1 convolution over the concatenated inputs), and whose last node also sees the
level's downsampled input and the outputs of the earlier subtrees (iterative deep aggregation). The classifier is
a 1x1 convolution over the pooled map. Model names, module names, ``state_dict`` keys and the initialisation follow
timm's ``dla`` module, so its checkpoints load directly.
"""
import math

import engine as torch
from engine import nn

from .._features import stage_intermediates, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d

__all__ = []


class DlaBasic(nn.Module):
    """Two 3x3 convolutions with BatchNorm and ReLU, the first strided, added to ``shortcut`` (the input unless
    the tree gives a downsampled projection). ``cardinality`` and ``base_width`` are accepted for the blocks' common
    signature; a basic block has no groups."""

    def __init__(self, inplanes, planes, stride=1, dilation=1, cardinality=1, base_width=64):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=dilation, bias=False,
                               dilation=dilation)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=dilation, bias=False,
                               dilation=dilation)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x, shortcut=None):
        shortcut = x if shortcut is None else shortcut
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = out + shortcut
        out = self.relu(out)
        return out


def _mid_planes(outplanes, cardinality, base_width, expansion):
    """The bottleneck width: ``outplanes`` scaled by ``base_width / 64`` and ``cardinality``, over ``expansion``."""
    return int(math.floor(outplanes * (base_width / 64)) * cardinality) // expansion


class DlaBottleneck(nn.Module):
    """1x1 reduce, 3x3 (strided, grouped by ``cardinality`` in the DLA-X models), 1x1 expand to ``outplanes``, each
    with BatchNorm, ReLU after all but the last; added to ``shortcut`` and activated. The reduced width is
    ``outplanes * base_width / 64 * cardinality / 2``."""

    expansion = 2

    def __init__(self, inplanes, outplanes, stride=1, dilation=1, cardinality=1, base_width=64):
        super().__init__()
        mid_planes = _mid_planes(outplanes, cardinality, base_width, self.expansion)
        self.conv1 = nn.Conv2d(inplanes, mid_planes, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid_planes)
        self.conv2 = nn.Conv2d(mid_planes, mid_planes, kernel_size=3, stride=stride, padding=dilation, bias=False,
                               dilation=dilation, groups=cardinality)
        self.bn2 = nn.BatchNorm2d(mid_planes)
        self.conv3 = nn.Conv2d(mid_planes, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, shortcut=None):
        shortcut = x if shortcut is None else shortcut
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        out = out + shortcut
        out = self.relu(out)
        return out


class DlaBottle2neck(nn.Module):
    """The Res2Net bottleneck of DLA: the 1x1 reduction gives ``scale`` groups of ``width`` channels (the
    bottleneck width of ``DlaBottleneck``); groups go through their own 3x3 convolutions (``convs``, ``bns``),
    each after adding the previous group's output, and the last group passes unchanged; 1x1 expand, shortcut.

    A strided block convolves every group alone and average-pools the last one (``pool``) to the new size.
    With ``scale=1`` the single group is convolved.
    """

    expansion = 2

    def __init__(self, inplanes, outplanes, stride=1, dilation=1, scale=4, cardinality=8, base_width=4):
        super().__init__()
        self.is_first = stride > 1
        self.scale = scale
        mid_planes = _mid_planes(outplanes, cardinality, base_width, self.expansion)
        self.width = mid_planes
        self.conv1 = nn.Conv2d(inplanes, mid_planes * scale, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid_planes * scale)
        num_convs = max(1, scale - 1)
        self.convs = nn.ModuleList([
            nn.Conv2d(mid_planes, mid_planes, kernel_size=3, stride=stride, padding=dilation, dilation=dilation,
                      groups=cardinality, bias=False)
            for _ in range(num_convs)
        ])
        self.bns = nn.ModuleList([nn.BatchNorm2d(mid_planes) for _ in range(num_convs)])
        self.pool = nn.AvgPool2d(kernel_size=3, stride=stride, padding=1) if self.is_first else None
        self.conv3 = nn.Conv2d(mid_planes * scale, outplanes, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(outplanes)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x, shortcut=None):
        shortcut = x if shortcut is None else shortcut
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        groups = torch.split(out, self.width, 1)
        outputs = []
        group = groups[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            if i > 0:
                group = groups[i] if self.is_first else group + groups[i]
            group = conv(group)
            group = bn(group)
            group = self.relu(group)
            outputs.append(group)
        if self.scale > 1:
            outputs.append(groups[-1] if self.pool is None else self.pool(groups[-1]))
        out = torch.cat(outputs, 1)
        out = self.conv3(out)
        out = self.bn3(out)
        out = out + shortcut
        out = self.relu(out)
        return out


class DlaRoot(nn.Module):
    """An aggregation node: a 1x1 convolution over its concatenated inputs, BatchNorm, plus the first input when
    ``shortcut`` (the residual aggregation of DLA-102 and DLA-169), ReLU."""

    def __init__(self, in_channels, out_channels, kernel_size, shortcut):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1, stride=1, bias=False, padding=(kernel_size - 1) // 2)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = shortcut

    def forward(self, x_children):
        x = self.conv(torch.cat(x_children, 1))
        x = self.bn(x)
        if self.shortcut:
            x = x + x_children[0]
        x = self.relu(x)
        return x


class DlaTree(nn.Module):
    """A level (or subtree) of hierarchical aggregation, ``levels`` deep.

    At depth 1 it is two blocks (``tree1`` strided, ``tree2``) joined by the node ``root`` with the outputs handed
    down from above; the first block's shortcut is the max-pooled input (``downsample``), projected by a 1x1
    convolution (``project``) when the width changes. Deeper, ``tree1`` and ``tree2`` are subtrees: the output of
    ``tree1`` (and, for a ``level_root``, the level's downsampled input) is handed down to the last node of
    ``tree2``, whose input width ``root_dim`` counts them (0: the two blocks' outputs alone).
    """

    def __init__(self, levels, block, in_channels, out_channels, stride=1, dilation=1, cardinality=1, base_width=64,
                 level_root=False, root_dim=0, root_kernel_size=1, root_shortcut=False):
        super().__init__()
        if root_dim == 0:
            root_dim = 2 * out_channels
        if level_root:
            root_dim += in_channels
        self.downsample = nn.MaxPool2d(stride, stride=stride) if stride > 1 else nn.Identity()
        self.project = nn.Identity()
        block_args = dict(dilation=dilation, cardinality=cardinality, base_width=base_width)
        if levels == 1:
            if in_channels != out_channels:
                self.project = nn.Sequential(
                    nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=False),
                    nn.BatchNorm2d(out_channels),
                )
            self.tree1 = block(in_channels, out_channels, stride, **block_args)
            self.tree2 = block(out_channels, out_channels, 1, **block_args)
            self.root = DlaRoot(root_dim, out_channels, root_kernel_size, root_shortcut)
        else:
            tree_args = dict(block_args, root_kernel_size=root_kernel_size, root_shortcut=root_shortcut)
            self.tree1 = DlaTree(levels - 1, block, in_channels, out_channels, stride, root_dim=0, **tree_args)
            self.tree2 = DlaTree(levels - 1, block, out_channels, out_channels, root_dim=root_dim + out_channels,
                                 **tree_args)
            self.root = None
        self.level_root = level_root
        self.root_dim = root_dim
        self.levels = levels

    def forward(self, x, children=None):
        children = [] if children is None else children
        bottom = self.downsample(x)
        if self.level_root:
            children = children + [bottom]
        if self.root is None:
            x1 = self.tree1(x)
            return self.tree2(x1, children + [x1])
        x1 = self.tree1(x, self.project(bottom))
        x2 = self.tree2(x1)
        return self.root([x2, x1] + children)


class DLA(nn.Module):
    """The stem (``base_layer``: 7x7 convolution, BatchNorm, ReLU at full size), ``level0`` and ``level1`` (plain
    3x3 convolutions, the second level strided), four aggregation trees ``level2``-``level5`` of ``levels[i]``
    depth and ``channels[i]`` width (each halves the map; all but ``level2`` are level roots), then global pooling,
    dropout (``drop_rate``), the 1x1-convolution classifier ``fc`` and flattening.

    ``block`` is the residual block (``cardinality`` groups, ``base_width``); ``shortcut_root`` adds residuals to
    the aggregation nodes. ``global_pool=''`` leaves the map unpooled (the classifier then gives a class map);
    ``num_classes=0`` gives the pooled features. Convolutions start from He-normal weights (fan-out), as in timm.
    """

    default_cfg = {"first_conv": "base_layer.0", "classifier": "fc"}

    def __init__(self, levels, channels, output_stride=32, num_classes=1000, in_chans=3, global_pool="avg",
                 cardinality=1, base_width=64, block=DlaBottle2neck, shortcut_root=False, drop_rate=0.0):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"DLA has a fixed output stride of 32, got {output_stride}")
        self.channels = channels
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.cardinality = cardinality
        self.base_width = base_width
        self.base_layer = nn.Sequential(
            nn.Conv2d(in_chans, channels[0], kernel_size=7, stride=1, padding=3, bias=False),
            nn.BatchNorm2d(channels[0]),
            nn.ReLU(inplace=True),
        )
        self.level0 = self._make_conv_level(channels[0], channels[0], levels[0])
        self.level1 = self._make_conv_level(channels[0], channels[1], levels[1], stride=2)
        tree_args = dict(cardinality=cardinality, base_width=base_width, root_shortcut=shortcut_root)
        self.level2 = DlaTree(levels[2], block, channels[1], channels[2], 2, level_root=False, **tree_args)
        self.level3 = DlaTree(levels[3], block, channels[2], channels[3], 2, level_root=True, **tree_args)
        self.level4 = DlaTree(levels[4], block, channels[3], channels[4], 2, level_root=True, **tree_args)
        self.level5 = DlaTree(levels[5], block, channels[4], channels[5], 2, level_root=True, **tree_args)
        self.feature_info = [dict(num_chs=channels[i], reduction=2 ** i, module=f"level{i}") for i in range(6)]
        self.num_features = channels[-1]
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        self.head_drop = nn.Dropout(drop_rate)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.fc = self._make_classifier(num_classes)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / fan_out))

    @staticmethod
    def _make_conv_level(inplanes, planes, convs, stride=1, dilation=1):
        """``convs`` 3x3 convolutions (the first strided), each with BatchNorm and ReLU, in one Sequential."""
        modules = []
        for i in range(convs):
            modules.extend([
                nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride if i == 0 else 1, padding=dilation,
                          bias=False, dilation=dilation),
                nn.BatchNorm2d(planes),
                nn.ReLU(inplace=True),
            ])
            inplanes = planes
        return nn.Sequential(*modules)

    def _make_classifier(self, num_classes):
        """The 1x1-convolution classifier over the pooled features, an identity for ``num_classes=0``."""
        return nn.Conv2d(self.head_hidden_size, num_classes, 1, bias=True) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The 1x1-convolution classifier."""
        return self.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after new pooling ``global_pool`` if
        given (PyTorch's default init, as timm's reset)."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.fc = self._make_classifier(num_classes)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        for module in (self.global_pool, self.fc, self.flatten):
            module.train(self.training)

    def forward_features(self, x):
        """The map after ``level5`` (N, channels[5], H / 32, W / 32)."""
        x = self.base_layer(x)
        x = self.level0(x)
        x = self.level1(x)
        x = self.level2(x)
        x = self.level3(x)
        x = self.level4(x)
        x = self.level5(x)
        return x

    def _levels(self):
        """``level0``-``level5`` in order: the six feature taps (strides 1 to 32), as in ``feature_info``."""
        return [getattr(self, f"level{i}") for i in range(len(self.feature_info))]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the levels picked by ``indices`` (None: all six, n: the last n, or a list; index i is
        ``level{i}``, stride 2 ** i, timm's taps) and, unless ``intermediates_only``, the final map. ``stop_early``
        skips the levels after the last one picked; ``norm`` is accepted for the API, as there is no final norm."""
        return stage_intermediates(x, self.base_layer, self._levels(), indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Replace the levels after the last one ``indices`` picks by identities (so the module names stay); when
        levels go, ``num_features`` and ``head_hidden_size`` become the last kept level's width and the head is
        reset to pooled features (as with ``prune_head``). ``prune_norm`` is accepted for the API (no final norm).
        Returns the absolute indices."""
        num_levels = len(self.feature_info)
        take = take_indices(num_levels, indices)
        last = max(take)
        prune_end = last < num_levels - 1
        for i in range(last + 1, num_levels):
            setattr(self, f"level{i}", nn.Identity())
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout; then the classifier unless ``pre_logits``; flattened."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        if pre_logits:
            return self.flatten(x)
        x = self.fc(x)
        return self.flatten(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_dla(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant, its settings overridden by the caller's ``kwargs``; ``features_only`` returns
    timm's levels 1-5 unless ``out_indices`` says otherwise (level 0 is index 0)."""
    model_args = dict(model_args, **kwargs)
    if model_args.get("features_only") and model_args.get("out_indices") is None:
        model_args["out_indices"] = (1, 2, 3, 4, 5)
    return build_model(DLA, variant, pretrained, progress=progress, **model_args)


@register_model
def dla60_res2net(pretrained=False, progress=True, **kwargs):
    """DLA-60 with Res2Net blocks: 4 groups of 28-channel (at the 128-wide level) 3x3 convolutions."""
    return _create_dla("dla60_res2net", pretrained, progress, kwargs, levels=(1, 1, 1, 2, 3, 1),
                       channels=(16, 32, 128, 256, 512, 1024), block=DlaBottle2neck, cardinality=1, base_width=28)


@register_model
def dla60_res2next(pretrained=False, progress=True, **kwargs):
    """DLA-60 with Res2NeXt blocks: 4 groups of 3x3 convolutions, each in 8 cardinal groups of 4 channels."""
    return _create_dla("dla60_res2next", pretrained, progress, kwargs, levels=(1, 1, 1, 2, 3, 1),
                       channels=(16, 32, 128, 256, 512, 1024), block=DlaBottle2neck, cardinality=8, base_width=4)


@register_model
def dla34(pretrained=False, progress=True, **kwargs):
    """DLA-34: basic blocks, levels 1-1-1-2-2-1, widths 16 to 512."""
    return _create_dla("dla34", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 2, 1],
                       channels=[16, 32, 64, 128, 256, 512], block=DlaBasic)


@register_model
def dla46_c(pretrained=False, progress=True, **kwargs):
    """DLA-46-C (compact): bottlenecks, levels 1-1-1-2-2-1, widths 16 to 256."""
    return _create_dla("dla46_c", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 2, 1],
                       channels=[16, 32, 64, 64, 128, 256], block=DlaBottleneck)


@register_model
def dla46x_c(pretrained=False, progress=True, **kwargs):
    """DLA-X-46-C: DLA-46-C with ResNeXt bottlenecks (32 groups of 4 channels per 64)."""
    return _create_dla("dla46x_c", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 2, 1],
                       channels=[16, 32, 64, 64, 128, 256], block=DlaBottleneck, cardinality=32, base_width=4)


@register_model
def dla60x_c(pretrained=False, progress=True, **kwargs):
    """DLA-X-60-C: ResNeXt bottlenecks (32 groups), levels 1-1-1-2-3-1, widths 16 to 256."""
    return _create_dla("dla60x_c", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 3, 1],
                       channels=[16, 32, 64, 64, 128, 256], block=DlaBottleneck, cardinality=32, base_width=4)


@register_model
def dla60(pretrained=False, progress=True, **kwargs):
    """DLA-60: bottlenecks, levels 1-1-1-2-3-1, widths 16 to 1024."""
    return _create_dla("dla60", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 3, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck)


@register_model
def dla60x(pretrained=False, progress=True, **kwargs):
    """DLA-X-60: DLA-60 with ResNeXt bottlenecks (32 groups of 4 channels per 64)."""
    return _create_dla("dla60x", pretrained, progress, kwargs, levels=[1, 1, 1, 2, 3, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck, cardinality=32, base_width=4)


@register_model
def dla102(pretrained=False, progress=True, **kwargs):
    """DLA-102: bottlenecks, levels 1-1-1-3-4-1, residual aggregation nodes."""
    return _create_dla("dla102", pretrained, progress, kwargs, levels=[1, 1, 1, 3, 4, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck, shortcut_root=True)


@register_model
def dla102x(pretrained=False, progress=True, **kwargs):
    """DLA-X-102: DLA-102 with ResNeXt bottlenecks (32 groups of 4 channels per 64)."""
    return _create_dla("dla102x", pretrained, progress, kwargs, levels=[1, 1, 1, 3, 4, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck, cardinality=32, base_width=4,
                       shortcut_root=True)


@register_model
def dla102x2(pretrained=False, progress=True, **kwargs):
    """DLA-X-102 64: DLA-102 with ResNeXt bottlenecks of 64 groups of 4 channels per 64."""
    return _create_dla("dla102x2", pretrained, progress, kwargs, levels=[1, 1, 1, 3, 4, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck, cardinality=64, base_width=4,
                       shortcut_root=True)


@register_model
def dla169(pretrained=False, progress=True, **kwargs):
    """DLA-169: bottlenecks, levels 1-1-2-3-5-1, residual aggregation nodes."""
    return _create_dla("dla169", pretrained, progress, kwargs, levels=[1, 1, 2, 3, 5, 1],
                       channels=[16, 32, 128, 256, 512, 1024], block=DlaBottleneck, shortcut_root=True)
