"""TResNet (Ridnik et al. 2021, "TResNet: High Performance GPU-Dedicated Architecture"; the v2 model from Ridnik et
al. 2021, "ImageNet-21K Pretraining for the Masses"): tresnet_m, tresnet_l, tresnet_xl and tresnet_v2_l.

A ResNet redesigned for GPU throughput. The stem is a lossless space-to-depth rearrangement (every 4x4 patch of
pixels becomes 16 times the channels) followed by one 3x3 convolution, instead of a strided convolution and a max
pool. The first two stages use basic blocks (two 3x3 convolutions; v2: bottlenecks), the last two bottlenecks; every
block but those of the last stage ends in squeeze-and-excitation. Each downsampling convolution runs at stride 1 and
is followed by an anti-aliasing blur pool that subsamples; the projection shortcut averages 2x2 windows before its
1x1 convolution. The original's in-place activated BatchNorm is a BatchNorm followed by a leaky ReLU (slope 1e-2 in
the stem, 1e-3 in the blocks). Model names, module names, ``state_dict`` keys and initialisation follow timm's
``tresnet`` module, so its checkpoints load directly.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import SEModule
from ._layers import BatchNormAct2d, BlurPool2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module

__all__ = []

# timm's ConvNormAct as TResNet builds it: BatchNorm with its activation in place
_conv_norm_act = partial(ConvNormAct, norm_layer=partial(BatchNormAct2d, inplace=True))
# the blocks' activation: the original's in-place activated BatchNorm uses a leaky ReLU of slope 1e-3
_block_act = partial(nn.LeakyReLU, negative_slope=1e-3)

# timm's "fast" global pooling names (a mean or max over the spatial axes) and the pooling that computes the same
_FAST_POOLS = {"fast": "avg", "fastavg": "avg", "fastmax": "max", "fastavgmax": "avgmax",
               "fastcatavgmax": "catavgmax"}


def _pool_type(global_pool):
    """The head's pooling for a timm pooling name: timm's "fast" poolings are the plain ones (the same results)."""
    if global_pool is None:
        return None
    return _FAST_POOLS.get(global_pool.lower(), global_pool)


class SpaceToDepth(nn.Module):
    """Every 4x4 block of pixels folded into the channels: (N, C, H, W) to (N, 16 C, H / 4, W / 4), the channels
    ordered by row offset, then column offset, then input channel (timm's order). A stem that downsamples by 4
    without losing any pixel; the height and width must be multiples of 4."""

    block_size = 4

    def forward(self, x):
        batch, channels, height, width = x.shape
        size = self.block_size
        if height % size or width % size:
            raise ValueError(f"SpaceToDepth needs a height and width divisible by {size}, got {height}x{width}")
        x = x.view(batch, channels, height // size, size, width // size, size)
        x = x.permute(0, 3, 5, 1, 2, 4).contiguous()
        x = x.view(batch, channels * size * size, height // size, width // size)
        return x


class BasicBlock(nn.Module):
    """Two 3x3 convolutions (``conv1`` with a leaky ReLU, anti-aliased where it strides; ``conv2`` linear),
    squeeze-and-excitation (``se``, reducing to a quarter of the width but at least 64 channels) where ``use_se``,
    stochastic depth, the shortcut (``downsample`` where it projects) added, then ReLU (``act``)."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, use_se=True, aa_layer=None, drop_path_rate=0.0):
        super().__init__()
        self.downsample = downsample
        self.stride = stride
        self.conv1 = _conv_norm_act(inplanes, planes, 3, stride=stride, act_layer=_block_act, aa_layer=aa_layer)
        self.conv2 = _conv_norm_act(planes, planes, 3, apply_act=False)
        self.act = nn.ReLU(inplace=True)
        rd_channels = max(planes * self.expansion // 4, 64)
        self.se = SEModule(planes * self.expansion, rd_channels=rd_channels) if use_se else None
        self.drop_path = drop_path_module(drop_path_rate)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.conv1(x)
        out = self.conv2(out)
        if self.se is not None:
            out = self.se(out)
        out = self.drop_path(out) + shortcut
        out = self.act(out)
        return out


class Bottleneck(nn.Module):
    """A 1x1 reduction to ``planes`` (``conv1``), a 3x3 convolution (``conv2``, anti-aliased where it strides), both
    with a leaky ReLU, squeeze-and-excitation on the narrow map (``se``, to half the output width over 4 but at
    least 64 channels) where ``use_se``, a linear 1x1 expansion to ``4 * planes`` (``conv3``), stochastic depth,
    the shortcut (``downsample`` where it projects) added, then ReLU (``act``)."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, use_se=True, act_layer=None, aa_layer=None,
                 drop_path_rate=0.0):
        super().__init__()
        self.downsample = downsample
        self.stride = stride
        act_layer = act_layer or _block_act
        self.conv1 = _conv_norm_act(inplanes, planes, 1, act_layer=act_layer)
        self.conv2 = _conv_norm_act(planes, planes, 3, stride=stride, act_layer=act_layer, aa_layer=aa_layer)
        rd_channels = max(planes * self.expansion // 8, 64)
        self.se = SEModule(planes, rd_channels=rd_channels) if use_se else None
        self.conv3 = _conv_norm_act(planes, planes * self.expansion, 1, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.conv1(x)
        out = self.conv2(out)
        if self.se is not None:
            out = self.se(out)
        out = self.conv3(out)
        out = self.drop_path(out) + shortcut
        out = self.act(out)
        return out


class TResNet(ClassifierHeadApi, nn.Module):
    """TResNet: space-to-depth and a 3x3 convolution (``body.s2d``, ``body.conv1``), four stages of ``layers``
    blocks (``body.layer1`` to ``body.layer4``: basic blocks in the first two, bottlenecks after; v2: bottlenecks
    throughout; no squeeze-and-excitation in the last) at ``64 * width_factor`` times 1, 2, 4 and 8 channels
    (before the bottlenecks' expansion), then the classifier head (``head``).

    ``v2`` rounds the width down to a multiple of 8. ``global_pool`` takes timm's names, the "fast" ones ('fast':
    the spatial mean) included. ``drop_path_rate`` is the stochastic depth of the last block, rising linearly from
    0 at the first. Inputs need a height and width divisible by 4 (the space-to-depth stem).
    """

    default_cfg = {"first_conv": "body.conv1.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, layers, in_chans=3, num_classes=1000, width_factor=1.0, v2=False, global_pool="fast",
                 drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.inplanes = int(64 * width_factor)
        self.planes = int(64 * width_factor)
        if v2:
            self.inplanes = self.inplanes // 8 * 8
            self.planes = self.planes // 8 * 8
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(layers)).split(list(layers))]
        first_block = Bottleneck if v2 else BasicBlock
        conv1 = _conv_norm_act(in_chans * 16, self.planes, 3, act_layer=nn.LeakyReLU)
        layer1 = self._make_layer(first_block, self.planes, layers[0], 1, True, rates[0])
        layer2 = self._make_layer(first_block, self.planes * 2, layers[1], 2, True, rates[1])
        layer3 = self._make_layer(Bottleneck, self.planes * 4, layers[2], 2, True, rates[2])
        layer4 = self._make_layer(Bottleneck, self.planes * 8, layers[3], 2, False, rates[3])
        self.body = nn.Sequential(OrderedDict([
            ("s2d", SpaceToDepth()),
            ("conv1", conv1),
            ("layer1", layer1),
            ("layer2", layer2),
            ("layer3", layer3),
            ("layer4", layer4),
        ]))
        first_expansion = first_block.expansion
        # timm's first entry stands for the stem convolution (which in fact runs at stride 4) and names no module
        self.feature_info = [
            dict(num_chs=self.planes, reduction=2, module=""),
            dict(num_chs=self.planes * first_expansion, reduction=4, module="body.layer1"),
            dict(num_chs=self.planes * 2 * first_expansion, reduction=8, module="body.layer2"),
            dict(num_chs=self.planes * 4 * Bottleneck.expansion, reduction=16, module="body.layer3"),
            dict(num_chs=self.planes * 8 * Bottleneck.expansion, reduction=32, module="body.layer4"),
        ]
        self.num_features = self.planes * 8 * Bottleneck.expansion
        self.head = ClassifierHead(self.num_features, num_classes, _pool_type(global_pool), drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights()

    def _make_layer(self, block, planes, blocks, stride, use_se, drop_path_rates):
        """A stage of ``blocks`` blocks; the first strides and, where the stride or width changes, projects its
        shortcut (a 2x2 average pool where it strides, then a linear 1x1 convolution)."""
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            layers = []
            if stride == 2:
                layers.append(nn.AvgPool2d(kernel_size=2, stride=2, ceil_mode=True, count_include_pad=False))
            layers.append(_conv_norm_act(self.inplanes, planes * block.expansion, 1, apply_act=False))
            downsample = nn.Sequential(*layers)
        stage = []
        for i in range(blocks):
            stage.append(block(self.inplanes, planes, stride=stride if i == 0 else 1,
                               downsample=downsample if i == 0 else None, use_se=use_se, aa_layer=BlurPool2d,
                               drop_path_rate=drop_path_rates[i]))
            self.inplanes = planes * block.expansion
        return nn.Sequential(*stage)

    def _init_weights(self):
        """timm's initialisation, in module order: convolutions He-normal (fan-out, leaky-ReLU gain with slope 0),
        the classifier's weight N(0, 0.01^2); then the last BatchNorm scale of every block 0, so that each block
        starts as its shortcut."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="leaky_relu")
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.01)
        for module in self.modules():
            if isinstance(module, BasicBlock):
                nn.init.zeros_(module.conv2.bn.weight)
            if isinstance(module, Bottleneck):
                nn.init.zeros_(module.conv3.bn.weight)

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier on the ``num_features`` channels (fewer after pruning) for ``num_classes`` (0: the
        pooled features), after another pooling ``global_pool`` (timm's names, the "fast" ones included) if
        given."""
        self.head.in_features = self.num_features
        super().reset_classifier(num_classes, _pool_type(global_pool))

    def forward_features(self, x):
        """The map after the last stage (N, num_features, H / 32, W / 32)."""
        return self.body(x)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stem convolution and the four stages picked by ``indices`` (None: all five, n: the
        last n, or a list), and (unless ``intermediates_only``) the last output; ``stop_early`` skips what follows
        the last one picked. ``norm`` changes nothing: there is no final norm (timm's argument)."""
        take, stages = intermediate_stages(list(self.body)[1:], indices, stop_early, output_fmt)
        x = self.body[0](x)
        x, intermediates = run_stages(x, stages, take)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last output ``indices`` picks (see ``forward_intermediates``) and, with
        ``prune_head`` or when stages go, the classifier and pooling; returns the absolute indices."""
        take = take_indices(len(self.body) - 1, indices)
        last = max(take)
        prune_end = last < len(self.body) - 2
        self.body = self.body[:last + 2]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_tresnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless
    ``out_indices`` says otherwise, under timm's flattened names (``body_layer1``...)."""
    if kwargs.get("features_only") and kwargs.get("out_indices") is None:
        kwargs["out_indices"] = (1, 2, 3, 4)
    return build_model(TResNet, variant, pretrained, progress=progress, **kwargs)


@register_model
def tresnet_m(pretrained=False, progress=True, **kwargs):
    """TResNet-M: stages of 3, 4, 11 and 3 blocks."""
    model_args = dict(layers=[3, 4, 11, 3])
    return _create_tresnet("tresnet_m", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def tresnet_l(pretrained=False, progress=True, **kwargs):
    """TResNet-L: stages of 4, 5, 18 and 3 blocks, 1.2 times wider."""
    model_args = dict(layers=[4, 5, 18, 3], width_factor=1.2)
    return _create_tresnet("tresnet_l", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def tresnet_xl(pretrained=False, progress=True, **kwargs):
    """TResNet-XL: stages of 4, 5, 24 and 3 blocks, 1.3 times wider."""
    model_args = dict(layers=[4, 5, 24, 3], width_factor=1.3)
    return _create_tresnet("tresnet_xl", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def tresnet_v2_l(pretrained=False, progress=True, **kwargs):
    """TResNet-v2-L: bottlenecks throughout, stages of 3, 4, 23 and 3 blocks."""
    model_args = dict(layers=[3, 4, 23, 3], width_factor=1.0, v2=True)
    return _create_tresnet("tresnet_v2_l", pretrained, progress, **dict(model_args, **kwargs))
