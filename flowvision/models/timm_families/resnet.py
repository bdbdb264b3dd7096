"""ResNet-D/-T, SE-ResNe(X)t and ECA-ResNet (He et al. 2015, "Deep Residual Learning for Image Recognition";
Xie et al. 2017, "Aggregated Residual Transformations for Deep Neural Networks"; He et al. 2019, "Bag of Tricks
for Image Classification with Convolutional Neural Networks"; Hu et al. 2018, "Squeeze-and-Excitation Networks";
Wang et al. 2020, "ECA-Net: Efficient Channel Attention for Deep Convolutional Neural Networks"; Wightman et al.
2021, "ResNet strikes back: An improved training procedure in timm"; Bello et al. 2021, "Revisiting ResNets: Improved
Training and Scaling Strategies"; Zhang 2019, "Making Convolutional Networks Shift-Invariant Again"; Wu and He 2018,
"Group Normalization"; Aflalo et al. 2020, "Knapsack Pruning with Inner Distillation"; Mahajan et al. 2018,
"Exploring the Limits of Weakly Supervised Pretraining"); and timm's tiny test_resnet.

timm's generalised ResNet: the torchvision layout (a stem, four stages of basic or bottleneck blocks, global
pooling and a linear classifier) with the "bag of tricks" tweaks. A deep stem replaces the 7x7 convolution by
three 3x3 ones ('deep': widths w, w, 2w; 'deep_tiered': 3w/4, w, 2w); ``avg_down`` makes the projection
shortcuts average-pool before their 1x1 convolution instead of striding it ("D"); blocks may end in
squeeze-and-excitation (two 1x1 convolutions on the pooled map) or efficient channel attention (one 1-d
convolution across the pooled channels, its kernel size growing with log2 of the channel count); stochastic
depth drops whole residual branches.

More options: the 'C' (deep stem, strided 1x1 shortcuts) and 'S' (deep stem 64 wide) variants; anti-aliasing, where
each strided 3x3 convolution and the stem's pool work at stride 1 and a 2x2 average pool or a binomial blur then
subsamples; group instead of batch normalisation; ResNet-RS's strided 3x3 convolution in place of the stem's max pool
and its wider SE (a quarter of the channels); SENet-154's halved first bottleneck convolution and 3x3 projection
shortcuts; and networks pruned to per-layer widths (timm's ECA-ResNets pruned by knapsack pruning), built in full and
then narrowed. Model names, module names, ``state_dict`` keys, initialisation and the published weights follow timm's
``resnet`` module, so its checkpoints load with ``strict=True``. timm's variants without published weights are
registered too, to be trained from scratch or to load one's own checkpoints: resnet50t, resnet200, resnetaa34d,
resnetblur18, resnetblur50d, resnetblur101d, seresnet18, seresnet34, seresnet50t, seresnet101, seresnet152,
seresnet200d, seresnet269d, seresnetaa50d, ecaresnet200d, ecaresnext26t_32x4d and ecaresnext50t_32x4d.
"""
import json
import math
import os
from functools import partial

import engine.nn.functional as F
from engine import nn

from .._features import intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import EcaModule, SEModule
from ._conv import get_padding
from ._layers import BlurPool2d, SelectAdaptivePool2d, create_aa, drop_path_module

# The classes are reached through this module: ResNet, BasicBlock and Bottleneck would shadow torchvision's in
# ``flowvision.models``; the registry adds the model entrypoints.
__all__ = []


_ATTENTION = {"se": SEModule, "eca": EcaModule}


def _attention(attn_layer, channels):
    """The attention module ending a block: None, 'se', 'eca', or a class built as ``attn_layer(channels)``."""
    if attn_layer is None:
        return None
    if isinstance(attn_layer, str):
        if attn_layer not in _ATTENTION:
            raise ValueError(f"unknown attn_layer '{attn_layer}': expected one of {sorted(_ATTENTION)}")
        attn_layer = _ATTENTION[attn_layer]
    return attn_layer(channels)


class GroupNorm(nn.GroupNorm):
    """Group normalisation in 32 groups, built from the channel count alone like BatchNorm2d, so that either can be a
    ResNet's ``norm_layer`` (timm's ``GroupNorm``)."""

    def __init__(self, num_channels, num_groups=32, eps=1e-5, affine=True):
        super().__init__(num_groups, num_channels, eps=eps, affine=affine)


_NORMS = {"batchnorm": nn.BatchNorm2d, "groupnorm": GroupNorm}


def _norm_class(norm_layer):
    """The norm class: 'batchnorm', 'groupnorm', or a class built as ``norm_layer(channels)``."""
    if isinstance(norm_layer, str):
        if norm_layer not in _NORMS:
            raise ValueError(f"unknown norm_layer '{norm_layer}': expected one of {sorted(_NORMS)}")
        return _NORMS[norm_layer]
    return norm_layer


class BasicBlock(nn.Module):
    """Two 3x3 convolutions (the first strided), optional channel attention and drop-path, plus the shortcut.

    The first convolution has ``planes // reduce_first`` outputs; with ``aa_layer`` a strided (or newly dilated)
    block convolves at stride 1 and ``aa`` subsamples after the first activation.
    """

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, reduce_first=1,
                 dilation=1, first_dilation=None, norm_layer=nn.BatchNorm2d, attn_layer=None, aa_layer=None,
                 drop_path_rate=0.0):
        super().__init__()
        if cardinality != 1 or base_width != 64:
            raise ValueError("BasicBlock supports only cardinality=1 and base_width=64")
        first_dilation = first_dilation or dilation
        first_planes = planes // reduce_first
        outplanes = planes * self.expansion
        use_aa = aa_layer is not None and (stride == 2 or first_dilation != dilation)
        self.conv1 = nn.Conv2d(inplanes, first_planes, kernel_size=3, stride=1 if use_aa else stride,
                               padding=first_dilation, dilation=first_dilation, bias=False)
        self.bn1 = norm_layer(first_planes)
        self.act1 = nn.ReLU(inplace=True)
        self.aa = create_aa(aa_layer, first_planes, stride, enable=use_aa)
        self.conv2 = nn.Conv2d(first_planes, outplanes, kernel_size=3, padding=dilation, dilation=dilation,
                               bias=False)
        self.bn2 = norm_layer(outplanes)
        self.se = _attention(attn_layer, outplanes)
        self.act2 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn2.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        if self.aa is not None:
            x = self.aa(x)
        x = self.conv2(x)
        x = self.bn2(x)
        if self.se is not None:
            x = self.se(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act2(x)
        return x


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped, strided) and 1x1 expand convolutions, optional attention and drop-path,
    plus the shortcut. The 3x3 convolution is ``floor(planes * base_width / 64) * cardinality`` wide, the 1x1
    reduction ``reduce_first`` times narrower (SENet's 2); with ``aa_layer`` a strided (or newly dilated) block
    convolves at stride 1 and ``aa`` subsamples after the 3x3 convolution's activation."""

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, cardinality=1, base_width=64, reduce_first=1,
                 dilation=1, first_dilation=None, norm_layer=nn.BatchNorm2d, attn_layer=None, aa_layer=None,
                 drop_path_rate=0.0):
        super().__init__()
        first_dilation = first_dilation or dilation
        width = int(math.floor(planes * (base_width / 64)) * cardinality)
        first_planes = width // reduce_first
        outplanes = planes * self.expansion
        use_aa = aa_layer is not None and (stride == 2 or first_dilation != dilation)
        self.conv1 = nn.Conv2d(inplanes, first_planes, kernel_size=1, bias=False)
        self.bn1 = norm_layer(first_planes)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(first_planes, width, kernel_size=3, stride=1 if use_aa else stride,
                               padding=first_dilation, dilation=first_dilation, groups=cardinality, bias=False)
        self.bn2 = norm_layer(width)
        self.act2 = nn.ReLU(inplace=True)
        self.aa = create_aa(aa_layer, width, stride, enable=use_aa)
        self.conv3 = nn.Conv2d(width, outplanes, kernel_size=1, bias=False)
        self.bn3 = norm_layer(outplanes)
        self.se = _attention(attn_layer, outplanes)
        self.act3 = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.drop_path = drop_path_module(drop_path_rate) if drop_path_rate else None  # timm leaves it out at 0

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut."""
        nn.init.zeros_(self.bn3.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.act2(x)
        if self.aa is not None:
            x = self.aa(x)
        x = self.conv3(x)
        x = self.bn3(x)
        if self.se is not None:
            x = self.se(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        x = x + shortcut
        x = self.act3(x)
        return x


class AvgPool2dSame(nn.Module):
    """A 2x2 average at stride 1 that keeps the size: a zero row and column padded at the end count as inputs.

    The average-pool shortcut of a dilated stage (``output_stride`` 8 or 16), where the stride is gone.
    """

    def forward(self, x):
        x = F.pad(x, (0, 1, 0, 1))
        return F.avg_pool2d(x, 2, stride=1)


def downsample_conv(in_channels, out_channels, kernel_size, stride, dilation, first_dilation, norm_layer):
    """The projection shortcut of ResNet-B: a strided convolution and a norm. The convolution is 1x1, or
    ``kernel_size`` (SENet's 3x3, dilated as the stage's first block) where the stage strides or dilates."""
    if stride == 1 and dilation == 1:
        kernel_size = 1
    first_dilation = first_dilation if kernel_size > 1 else 1
    padding = get_padding(kernel_size, stride, first_dilation)
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=first_dilation,
                  bias=False),
        norm_layer(out_channels),
    )


def downsample_avg(in_channels, out_channels, stride, dilation, norm_layer):
    """The projection shortcut of ResNet-D: 2x2 average pooling (ceil mode, padding not counted), then a
    1x1 convolution and a norm, so the shortcut sees every input pixel. Index 0 stays an identity when
    nothing shrinks, so the keys are those of timm."""
    if stride == 1 and dilation == 1:
        pool = nn.Identity()
    elif dilation == 1:
        pool = nn.AvgPool2d(2, stride, ceil_mode=True, count_include_pad=False)
    else:
        pool = AvgPool2dSame()
    return nn.Sequential(
        pool,
        nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False),
        norm_layer(out_channels),
    )


def _shortcut(in_channels, out_channels, stride, dilation, first_dilation, avg_down, kernel_size, norm_layer):
    """The projection shortcut of a stage's first block: average pooling then a 1x1 convolution (``avg_down``,
    'D'), else a strided ``kernel_size`` convolution ('B')."""
    if avg_down:
        return downsample_avg(in_channels, out_channels, stride, dilation, norm_layer)
    return downsample_conv(in_channels, out_channels, kernel_size, stride, dilation, first_dilation, norm_layer)


def _stem(in_chans, stem_type, stem_width, norm_layer):
    """The stem's convolution(s) up to its last norm: a 7x7/2 convolution, or three 3x3 convolutions (the first
    strided) of widths (w, w, 2w) for 'deep' and (3 * (w // 4), w, 2w) for 'deep_tiered'."""
    if not stem_type:
        return nn.Conv2d(in_chans, 64, kernel_size=7, stride=2, padding=3, bias=False)
    first = 3 * (stem_width // 4) if stem_type == "deep_tiered" else stem_width
    return nn.Sequential(
        nn.Conv2d(in_chans, first, kernel_size=3, stride=2, padding=1, bias=False),
        norm_layer(first),
        nn.ReLU(inplace=True),
        nn.Conv2d(first, stem_width, kernel_size=3, stride=1, padding=1, bias=False),
        norm_layer(stem_width),
        nn.ReLU(inplace=True),
        nn.Conv2d(stem_width, stem_width * 2, kernel_size=3, stride=1, padding=1, bias=False),
    )


def _stem_pool(channels, replace_stem_pool, aa_layer, norm_layer):
    """The stem's stride-2 downsampling (``maxpool``, timm's name whatever it holds): a 3x3/2 max pool; with
    ``replace_stem_pool`` (ResNet-RS) a 3x3/2 convolution, norm and ReLU instead. Anti-aliasing makes the
    convolution or max pool stride 1 and subsamples after it (an average-pool ``aa_layer`` replaces the max pool
    outright)."""
    if replace_stem_pool:
        layers = [nn.Conv2d(channels, channels, kernel_size=3, stride=1 if aa_layer else 2, padding=1, bias=False)]
        if aa_layer is not None:
            layers.append(create_aa(aa_layer, channels, 2))
        layers += [norm_layer(channels), nn.ReLU(inplace=True)]
        return nn.Sequential(*layers)
    if aa_layer is None:
        return nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
    if issubclass(aa_layer, nn.AvgPool2d):
        return create_aa(aa_layer, channels, 2)
    return nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1), create_aa(aa_layer, channels, 2))


def _block_options(reduce_first, norm_layer, aa_layer):
    """The block arguments for SENet's reduced first convolution, a norm other than BatchNorm2d and anti-aliasing,
    each only where it is used: the blocks of the families built on this ResNet (ResNeSt, Res2Net, SK-ResNet)
    do not take them."""
    options = {}
    if reduce_first != 1:
        options["reduce_first"] = reduce_first
    if norm_layer is not nn.BatchNorm2d:
        options["norm_layer"] = norm_layer
    if aa_layer is not None:
        options["aa_layer"] = aa_layer
    return options


def _output_width(model, name):
    """The channels leaving the submodule ``name``: those of the last 2-d convolution or BatchNorm inside it, or,
    where it holds none (an activation), the last one before it."""
    width = None
    seen = False
    for path, module in model.named_modules():
        inside = path == name or path.startswith(name + ".")
        if seen and not inside:
            break
        seen = seen or inside
        if isinstance(module, nn.Conv2d):
            width = module.out_channels
        elif isinstance(module, nn.BatchNorm2d):
            width = module.num_features
    return width


# The stages' names, which timm's checkpoints and feature_info use (feature levels 1 to 4).
_STAGE_NAMES = ("layer1", "layer2", "layer3", "layer4")


class ResNet(nn.Module):
    """timm's ResNet: a stem (one 7x7 or three 3x3 convolutions, norm, ReLU, 3x3/2 max pool), four stages
    ``layer1..4`` of residual blocks (``block``: one class for all, or one per stage), ``global_pool``, dropout and
    the classifier ``fc``.

    ``stem_type`` '' | 'deep' | 'deep_tiered' with ``stem_width``; ``replace_stem_pool`` puts a 3x3/2 convolution,
    norm and ReLU in the max pool's place; ``avg_down`` average-pools the projection shortcuts, else they are
    strided ``down_kernel_size`` convolutions where they stride; ``cardinality`` and ``base_width`` make ResNeXt
    bottlenecks, ``block_reduce_first`` divides the blocks' first convolution width; ``norm_layer`` (a class built
    from the channel count, 'batchnorm' or 'groupnorm') normalises everywhere; ``aa_layer`` (``nn.AvgPool2d`` or
    ``BlurPool2d``) anti-aliases every subsampling but the first convolution's and the shortcuts'; ``block_args``
    reach every block (``attn_layer`` 'se', 'eca' or a class); ``output_stride`` 16 or 8 dilates the last stages
    instead of striding them; ``drop_path_rate`` grows linearly from 0 at the first block to this value at the
    last; ``drop_rate`` is the dropout before the classifier; ``zero_init_last`` zeroes each block's last norm
    scale. ``num_classes=0`` replaces the classifier with an identity (pooled features).
    """

    def __init__(self, block, layers, num_classes=1000, in_chans=3, output_stride=32, global_pool="avg",
                 cardinality=1, base_width=64, stem_width=64, stem_type="", replace_stem_pool=False,
                 block_reduce_first=1, down_kernel_size=1, avg_down=False, channels=(64, 128, 256, 512),
                 norm_layer=nn.BatchNorm2d, aa_layer=None, drop_rate=0.0, drop_path_rate=0.0, zero_init_last=True,
                 block_args=None):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        if stem_type not in ("", "deep", "deep_tiered"):
            raise ValueError(f"unknown stem_type '{stem_type}': expected '', 'deep' or 'deep_tiered'")
        norm_layer = _norm_class(norm_layer)
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        self.first_conv = "conv1.0" if stem_type else "conv1"
        self.inplanes = stem_width * 2 if stem_type else 64
        self.conv1 = _stem(in_chans, stem_type, stem_width, norm_layer)
        self.bn1 = norm_layer(self.inplanes)
        self.act1 = nn.ReLU(inplace=True)
        self.maxpool = _stem_pool(self.inplanes, replace_stem_pool, aa_layer, norm_layer)
        self.feature_info = [dict(num_chs=self.inplanes, reduction=2, module="act1")]
        self._reduction = 4
        self._dilation = 1
        rates = [drop_path_rate * i / (sum(layers) - 1) for i in range(sum(layers))]
        shortcut_args = dict(avg_down=avg_down, kernel_size=down_kernel_size, norm_layer=norm_layer)
        settings = dict(cardinality=cardinality, base_width=base_width,
                        **_block_options(block_reduce_first, norm_layer, aa_layer), **(block_args or {}))
        stage_blocks = tuple(block) if isinstance(block, (list, tuple)) else (block,) * len(channels)
        for index, (stage_block, planes, depth) in enumerate(zip(stage_blocks, channels, layers), start=1):
            stride = 1 if index == 1 else 2
            name = f"layer{index}"
            stage_rates, rates = rates[:depth], rates[depth:]
            stage = self._make_stage(stage_block, planes, stage_rates, stride, output_stride, shortcut_args,
                                     settings)
            self.add_module(name, stage)
            self.feature_info.append(dict(num_chs=self.inplanes, reduction=self._reduction, module=name))
        self.num_features = channels[-1] * stage_blocks[-1].expansion
        self.global_pool = SelectAdaptivePool2d(global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.fc = self._classifier(num_classes)
        self._init_weights(zero_init_last)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution) and ``classifier``."""
        return {"first_conv": self.first_conv, "classifier": "fc"}

    def _make_stage(self, block, planes, rates, stride, output_stride, shortcut_args, settings):
        """One stage of ``len(rates)`` blocks (``rates``: their drop-path rates): a first block that strides (or,
        past ``output_stride``, dilates) behind a projection shortcut, then blocks at the stage's width."""
        first_dilation = self._dilation
        if self._reduction >= output_stride and stride > 1:
            self._dilation *= stride
            stride = 1
        else:
            self._reduction *= stride
        outplanes = planes * block.expansion
        downsample = None
        if stride != 1 or self.inplanes != outplanes:
            downsample = _shortcut(self.inplanes, outplanes, stride, self._dilation, first_dilation, **shortcut_args)
        blocks = []
        for i, rate in enumerate(rates):
            blocks.append(block(self.inplanes, planes, stride if i == 0 else 1, downsample if i == 0 else None,
                                dilation=self._dilation, first_dilation=first_dilation, drop_path_rate=rate,
                                **settings))
            first_dilation = self._dilation
            self.inplanes = outplanes
        return nn.Sequential(*blocks)

    def _init_weights(self, zero_init_last):
        """Kaiming-normal (fan_out) 2-d convolutions, the rest as constructed; optionally each block's last
        norm scale zeroed (any block class that has ``zero_init_last``: those of the ResNet-based families too)."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_last:
            for m in self.modules():
                if hasattr(m, "zero_init_last"):
                    m.zero_init_last()

    def prune(self, shapes):
        """Narrow the network to a pruned one's widths, given as the weight shapes of its 2-d convolutions and
        BatchNorms by state_dict key (the first convolution keeps ``in_chans`` inputs); the classifier follows.

        As timm does, every such layer is replaced, in module order, by a new one with PyTorch's default
        initialisation (the last norms are no longer zeroed), which keeps timm's random stream and initial
        weights; the rest (ECA kernels sized for the full widths, pools) stays. ``feature_info``, ``num_features``
        and ``head_hidden_size`` take the new widths.
        """
        for name, module in list(self.named_modules()):
            if isinstance(module, nn.Conv2d):
                if module.groups != 1:
                    raise ValueError(f"cannot prune the grouped convolution '{name}'")
                out_channels, in_channels = shapes[f"{name}.weight"][:2]
                if name == self.first_conv:
                    in_channels = module.in_channels
                layer = nn.Conv2d(in_channels, out_channels, module.kernel_size, stride=module.stride,
                                  padding=module.padding, dilation=module.dilation, bias=module.bias is not None)
            elif isinstance(module, nn.BatchNorm2d):
                layer = nn.BatchNorm2d(shapes[f"{name}.weight"][0], eps=module.eps, momentum=module.momentum)
            else:
                continue
            parent, _, child = name.rpartition(".")
            setattr(self.get_submodule(parent), child, layer)
        for info in self.feature_info:
            info["num_chs"] = _output_width(self, info["module"])
        self.num_features = self.feature_info[-1]["num_chs"]
        self.reset_classifier(self.num_classes)

    def _classifier(self, num_classes):
        """The final linear layer on the pooled features, or an identity when ``num_classes`` is 0."""
        if num_classes > 0 and not self.global_pool.pool_type:
            raise ValueError("global_pool='' leaves an unpooled map: it needs num_classes=0")
        return nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The classification layer."""
        return self.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: pooled features), with new pooling if ``global_pool``."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = SelectAdaptivePool2d(global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.fc = self._classifier(num_classes)

    def _stages(self):
        """The four stages ``layer1..4`` in order: feature levels 1 to 4 (level 0 is the stem's activation)."""
        return [getattr(self, name) for name in _STAGE_NAMES]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's intermediates over the five feature levels of ``feature_info``: the stem's activation (before its
        pool, stride 2) and the outputs of ``layer1..4``. Returns the maps of the levels ``indices`` picks (None:
        all, n: the last n, or a list), in level order, and, unless ``intermediates_only``, the last map computed;
        ``stop_early`` skips the stages after the last level picked (the stem's pool still runs, as in timm).
        ``norm`` changes nothing: there is no final norm (timm's argument). Only 'NCHW' maps."""
        levels = [self.act1] + self._stages()
        take, run = intermediate_stages(levels, indices, stop_early, output_fmt)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        stem_maps = [x] if 0 in take else []
        x = self.maxpool(x)
        stage_taps = [i - 1 for i in take if i > 0]
        x, stage_maps = run_stages(x, run[1:], stage_taps)
        intermediates = stem_maps + stage_maps
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """timm's pruning over the five feature levels (see ``forward_intermediates``): the stages after the last
        level ``indices`` picks become empty ``nn.Sequential``s (the names ``layer1..4`` stay, as in timm), and the
        stem's pool an identity when only the stem's level is kept. When stages go, ``num_features`` and
        ``head_hidden_size`` become the last kept level's width; then, or with ``prune_head``, the classifier and
        the global pool go (``forward`` gives the feature map). ``prune_norm`` changes nothing: there is no final
        norm. Returns the absolute indices."""
        take = take_indices(len(_STAGE_NAMES) + 1, indices)
        last = max(take)
        for name in _STAGE_NAMES[last:]:
            setattr(self, name, nn.Sequential())
        if last == 0:
            self.maxpool = nn.Identity()
        prune_end = last < len(_STAGE_NAMES)
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The feature map after the last stage (N, num_features, H/output_stride, W/output_stride)."""
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout, then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.drop_rate:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_resnet(variant, pretrained, block, layers, kwargs, **model_args):
    """Build a registered variant: its ``model_args`` overridden by the caller's ``kwargs``."""
    return build_model(ResNet, variant, pretrained, **dict(dict(block=block, layers=layers, **model_args), **kwargs))


_ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "assets")


def _pruned_shapes(variant):
    """The weight shapes of timm's pruned ``variant`` by state_dict key, shipped as ``assets/<variant>.json``."""
    with open(os.path.join(_ASSETS, f"{variant}.json")) as f:
        return json.load(f)


def _pruned_resnet(shapes, **kwargs):
    """The ResNet of ``kwargs``, built in full then pruned to ``shapes`` (``build_model``'s model class)."""
    model = ResNet(**kwargs)
    model.prune(shapes)
    return model


def _create_pruned(variant, pretrained, block, layers, kwargs, **model_args):
    """Build a registered pruned variant (its widths in the package's assets), ``model_args`` overridden by the
    caller's ``kwargs``."""
    model_cls = partial(_pruned_resnet, _pruned_shapes(variant))
    return build_model(model_cls, variant, pretrained, **dict(dict(block=block, layers=layers, **model_args), **kwargs))


_D = dict(stem_width=32, stem_type="deep", avg_down=True)
_T = dict(stem_width=32, stem_type="deep_tiered", avg_down=True)
_SE = dict(block_args=dict(attn_layer="se"))
_ECA = dict(block_args=dict(attn_layer="eca"))
_C = dict(stem_width=32, stem_type="deep")
_S = dict(stem_width=64, stem_type="deep")
_RS = dict(stem_width=32, stem_type="deep", replace_stem_pool=True, avg_down=True,
           block_args=dict(attn_layer=partial(SEModule, rd_ratio=0.25)))


@register_model
def resnet10t(pretrained=False, **kwargs):
    """ResNet-10-T: basic blocks 1-1-1-1, tiered deep stem (24, 32, 64), average-pool shortcuts."""
    return _create_resnet("resnet10t", pretrained, BasicBlock, (1, 1, 1, 1), kwargs, **_T)


@register_model
def resnet14t(pretrained=False, **kwargs):
    """ResNet-14-T: bottlenecks 1-1-1-1, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("resnet14t", pretrained, Bottleneck, (1, 1, 1, 1), kwargs, **_T)


@register_model
def resnet18d(pretrained=False, **kwargs):
    """ResNet-18-D: basic blocks 2-2-2-2, deep stem (32, 32, 64), average-pool shortcuts."""
    return _create_resnet("resnet18d", pretrained, BasicBlock, (2, 2, 2, 2), kwargs, **_D)


@register_model
def resnet26(pretrained=False, **kwargs):
    """ResNet-26: bottlenecks 2-2-2-2, 7x7 stem."""
    return _create_resnet("resnet26", pretrained, Bottleneck, (2, 2, 2, 2), kwargs)


@register_model
def resnet26d(pretrained=False, **kwargs):
    """ResNet-26-D: bottlenecks 2-2-2-2, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet26d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_D)


@register_model
def resnet26t(pretrained=False, **kwargs):
    """ResNet-26-T: bottlenecks 2-2-2-2, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("resnet26t", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_T)


@register_model
def resnet50t(pretrained=False, **kwargs):
    """ResNet-50-T: bottlenecks 3-4-6-3, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("resnet50t", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_T)


@register_model
def resnet34d(pretrained=False, **kwargs):
    """ResNet-34-D: basic blocks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet34d", pretrained, BasicBlock, (3, 4, 6, 3), kwargs, **_D)


@register_model
def resnet50d(pretrained=False, **kwargs):
    """ResNet-50-D: bottlenecks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_D)


@register_model
def resnet101d(pretrained=False, **kwargs):
    """ResNet-101-D: bottlenecks 3-4-23-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_D)


@register_model
def resnet152d(pretrained=False, **kwargs):
    """ResNet-152-D: bottlenecks 3-8-36-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet152d", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_D)


@register_model
def resnet200(pretrained=False, **kwargs):
    """ResNet-200: bottlenecks 3-24-36-3, 7x7 stem."""
    return _create_resnet("resnet200", pretrained, Bottleneck, (3, 24, 36, 3), kwargs)


@register_model
def resnet200d(pretrained=False, **kwargs):
    """ResNet-200-D: bottlenecks 3-24-36-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnet200d", pretrained, Bottleneck, (3, 24, 36, 3), kwargs, **_D)


@register_model
def seresnet18(pretrained=False, **kwargs):
    """SE-ResNet-18: basic blocks 2-2-2-2 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet18", pretrained, BasicBlock, (2, 2, 2, 2), kwargs, **_SE)


@register_model
def seresnet34(pretrained=False, **kwargs):
    """SE-ResNet-34: basic blocks 3-4-6-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet34", pretrained, BasicBlock, (3, 4, 6, 3), kwargs, **_SE)


@register_model
def seresnet50(pretrained=False, **kwargs):
    """SE-ResNet-50: bottlenecks 3-4-6-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet50", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_SE)


@register_model
def seresnet50t(pretrained=False, **kwargs):
    """SE-ResNet-50-T: bottlenecks 3-4-6-3 with squeeze-and-excitation, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("seresnet50t", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_T, **_SE)


@register_model
def seresnet101(pretrained=False, **kwargs):
    """SE-ResNet-101: bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet101", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_SE)


@register_model
def seresnet152(pretrained=False, **kwargs):
    """SE-ResNet-152: bottlenecks 3-8-36-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnet152", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_SE)


@register_model
def seresnet152d(pretrained=False, **kwargs):
    """SE-ResNet-152-D: bottlenecks 3-8-36-3 with squeeze-and-excitation, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnet152d", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_D, **_SE)


@register_model
def seresnet200d(pretrained=False, **kwargs):
    """SE-ResNet-200-D: bottlenecks 3-24-36-3 with squeeze-and-excitation, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnet200d", pretrained, Bottleneck, (3, 24, 36, 3), kwargs, **_D, **_SE)


@register_model
def seresnet269d(pretrained=False, **kwargs):
    """SE-ResNet-269-D: bottlenecks 3-30-48-8 with squeeze-and-excitation, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnet269d", pretrained, Bottleneck, (3, 30, 48, 8), kwargs, **_D, **_SE)


@register_model
def seresnext26d_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-26-D 32x4d: grouped bottlenecks 2-2-2-2 with SE, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext26d_32x4d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs,
                          cardinality=32, base_width=4, **_D, **_SE)


@register_model
def seresnext26t_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-26-T 32x4d: grouped bottlenecks 2-2-2-2 with SE, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext26t_32x4d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs,
                          cardinality=32, base_width=4, **_T, **_SE)


@register_model
def seresnext50_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-50 32x4d: grouped bottlenecks 3-4-6-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext50_32x4d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs,
                          cardinality=32, base_width=4, **_SE)


@register_model
def seresnext101_32x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 32x4d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_32x4d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=4, **_SE)


@register_model
def seresnext101_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 32x8d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_32x8d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=8, **_SE)


@register_model
def seresnext101d_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-101-D 32x8d: grouped bottlenecks 3-4-23-3 with SE, deep stem, average-pool shortcuts."""
    return _create_resnet("seresnext101d_32x8d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=8, **_D, **_SE)


@register_model
def seresnext101_64x4d(pretrained=False, **kwargs):
    """SE-ResNeXt-101 64x4d: grouped bottlenecks 3-4-23-3 with squeeze-and-excitation, 7x7 stem."""
    return _create_resnet("seresnext101_64x4d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=64, base_width=4, **_SE)


@register_model
def ecaresnet26t(pretrained=False, **kwargs):
    """ECA-ResNet-26-T: bottlenecks 2-2-2-2 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet26t", pretrained, Bottleneck, (2, 2, 2, 2), kwargs, **_T, **_ECA)


@register_model
def ecaresnet50d(pretrained=False, **kwargs):
    """ECA-ResNet-50-D: bottlenecks 3-4-6-3 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet50t(pretrained=False, **kwargs):
    """ECA-ResNet-50-T: bottlenecks 3-4-6-3 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet50t", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_T, **_ECA)


@register_model
def ecaresnet101d(pretrained=False, **kwargs):
    """ECA-ResNet-101-D: bottlenecks 3-4-23-3 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet200d(pretrained=False, **kwargs):
    """ECA-ResNet-200-D: bottlenecks 3-24-36-3 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet200d", pretrained, Bottleneck, (3, 24, 36, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet269d(pretrained=False, **kwargs):
    """ECA-ResNet-269-D: bottlenecks 3-30-48-8 with ECA, deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnet269d", pretrained, Bottleneck, (3, 30, 48, 8), kwargs, **_D, **_ECA)


@register_model
def ecaresnetlight(pretrained=False, **kwargs):
    """ECA-ResNet-Light: bottlenecks 1-1-11-3 with ECA, 7x7 stem, average-pool shortcuts."""
    return _create_resnet("ecaresnetlight", pretrained, Bottleneck, (1, 1, 11, 3), kwargs, avg_down=True, **_ECA)


@register_model
def ecaresnext26t_32x4d(pretrained=False, **kwargs):
    """ECA-ResNeXt-26-T 32x4d: grouped bottlenecks 2-2-2-2 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnext26t_32x4d", pretrained, Bottleneck, (2, 2, 2, 2), kwargs,
                          cardinality=32, base_width=4, **_T, **_ECA)


@register_model
def ecaresnext50t_32x4d(pretrained=False, **kwargs):
    """ECA-ResNeXt-50-T 32x4d: grouped bottlenecks 3-4-6-3 with ECA, tiered deep stem, average-pool shortcuts."""
    return _create_resnet("ecaresnext50t_32x4d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs,
                          cardinality=32, base_width=4, **_T, **_ECA)


@register_model
def resnet50c(pretrained=False, **kwargs):
    """ResNet-50-C: bottlenecks 3-4-6-3, deep stem (32, 32, 64), strided 1x1 shortcuts."""
    return _create_resnet("resnet50c", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_C)


@register_model
def resnet101c(pretrained=False, **kwargs):
    """ResNet-101-C: bottlenecks 3-4-23-3, deep stem (32, 32, 64), strided 1x1 shortcuts."""
    return _create_resnet("resnet101c", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_C)


@register_model
def resnet152c(pretrained=False, **kwargs):
    """ResNet-152-C: bottlenecks 3-8-36-3, deep stem (32, 32, 64), strided 1x1 shortcuts."""
    return _create_resnet("resnet152c", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_C)


@register_model
def resnet50s(pretrained=False, **kwargs):
    """ResNet-50-S: bottlenecks 3-4-6-3, deep stem (64, 64, 128), strided 1x1 shortcuts."""
    return _create_resnet("resnet50s", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_S)


@register_model
def resnet101s(pretrained=False, **kwargs):
    """ResNet-101-S: bottlenecks 3-4-23-3, deep stem (64, 64, 128), strided 1x1 shortcuts."""
    return _create_resnet("resnet101s", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_S)


@register_model
def resnet152s(pretrained=False, **kwargs):
    """ResNet-152-S: bottlenecks 3-8-36-3, deep stem (64, 64, 128), strided 1x1 shortcuts."""
    return _create_resnet("resnet152s", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_S)


@register_model
def resnet50_gn(pretrained=False, **kwargs):
    """ResNet-50 with group normalisation (32 groups) in place of every BatchNorm: bottlenecks 3-4-6-3, 7x7 stem."""
    return _create_resnet("resnet50_gn", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, norm_layer=GroupNorm)


@register_model
def resnext50d_32x4d(pretrained=False, **kwargs):
    """ResNeXt-50-D 32x4d: grouped bottlenecks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnext50d_32x4d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs,
                          cardinality=32, base_width=4, **_D)


@register_model
def resnext101_32x4d(pretrained=False, **kwargs):
    """ResNeXt-101 32x4d: grouped bottlenecks 3-4-23-3 (32 groups of 4 channels at the first stage), 7x7 stem."""
    return _create_resnet("resnext101_32x4d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=4)


@register_model
def resnext101_32x16d(pretrained=False, **kwargs):
    """ResNeXt-101 32x16d: grouped bottlenecks 3-4-23-3 (32 groups of 16 channels at the first stage), 7x7 stem."""
    return _create_resnet("resnext101_32x16d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=16)


@register_model
def resnext101_32x32d(pretrained=False, **kwargs):
    """ResNeXt-101 32x32d: grouped bottlenecks 3-4-23-3 (32 groups of 32 channels at the first stage), 7x7 stem."""
    return _create_resnet("resnext101_32x32d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs,
                          cardinality=32, base_width=32)


@register_model
def ecaresnet50d_pruned(pretrained=False, **kwargs):
    """ECA-ResNet-50-D pruned by knapsack pruning: ecaresnet50d narrowed to timm's per-layer widths."""
    return _create_pruned("ecaresnet50d_pruned", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_D, **_ECA)


@register_model
def ecaresnet101d_pruned(pretrained=False, **kwargs):
    """ECA-ResNet-101-D pruned by knapsack pruning: ecaresnet101d narrowed to timm's per-layer widths."""
    return _create_pruned("ecaresnet101d_pruned", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_D, **_ECA)


@register_model
def senet154(pretrained=False, **kwargs):
    """SENet-154: grouped bottlenecks 3-8-36-3 (64 groups) with SE and a halved first convolution, deep stem
    (64, 64, 128), strided 3x3 shortcuts."""
    return _create_resnet("senet154", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, cardinality=64, base_width=4,
                          stem_type="deep", down_kernel_size=3, block_reduce_first=2, **_SE)


@register_model
def resnetblur18(pretrained=False, **kwargs):
    """ResNet-18 with blur-pool anti-aliasing: basic blocks 2-2-2-2, 7x7 stem, each subsampling a 3x3 binomial
    blur."""
    return _create_resnet("resnetblur18", pretrained, BasicBlock, (2, 2, 2, 2), kwargs, aa_layer=BlurPool2d)


@register_model
def resnetblur50(pretrained=False, **kwargs):
    """ResNet-50 with blur-pool anti-aliasing: bottlenecks 3-4-6-3, 7x7 stem, each subsampling a 3x3 binomial blur."""
    return _create_resnet("resnetblur50", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, aa_layer=BlurPool2d)


@register_model
def resnetblur50d(pretrained=False, **kwargs):
    """ResNet-50-D with blur-pool anti-aliasing: bottlenecks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnetblur50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, aa_layer=BlurPool2d, **_D)


@register_model
def resnetblur101d(pretrained=False, **kwargs):
    """ResNet-101-D with blur-pool anti-aliasing: bottlenecks 3-4-23-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnetblur101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, aa_layer=BlurPool2d,
                          **_D)


@register_model
def resnetaa34d(pretrained=False, **kwargs):
    """ResNet-34-D with average-pool anti-aliasing: basic blocks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnetaa34d", pretrained, BasicBlock, (3, 4, 6, 3), kwargs, aa_layer=nn.AvgPool2d, **_D)


@register_model
def resnetaa50(pretrained=False, **kwargs):
    """ResNet-50 with average-pool anti-aliasing: bottlenecks 3-4-6-3, 7x7 stem, each subsampling a 2x2 average."""
    return _create_resnet("resnetaa50", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, aa_layer=nn.AvgPool2d)


@register_model
def resnetaa50d(pretrained=False, **kwargs):
    """ResNet-50-D with average-pool anti-aliasing: bottlenecks 3-4-6-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnetaa50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, aa_layer=nn.AvgPool2d, **_D)


@register_model
def seresnetaa50d(pretrained=False, **kwargs):
    """SE-ResNet-50-D with average-pool anti-aliasing: bottlenecks 3-4-6-3 with squeeze-and-excitation, deep stem,
    average-pool shortcuts."""
    return _create_resnet("seresnetaa50d", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, aa_layer=nn.AvgPool2d, **_D,
                          **_SE)


@register_model
def resnetaa101d(pretrained=False, **kwargs):
    """ResNet-101-D with average-pool anti-aliasing: bottlenecks 3-4-23-3, deep stem, average-pool shortcuts."""
    return _create_resnet("resnetaa101d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, aa_layer=nn.AvgPool2d,
                          **_D)


@register_model
def seresnextaa101d_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-101-D 32x8d with average-pool anti-aliasing: grouped bottlenecks 3-4-23-3 with SE, deep stem,
    average-pool shortcuts."""
    return _create_resnet("seresnextaa101d_32x8d", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, cardinality=32,
                          base_width=8, aa_layer=nn.AvgPool2d, **_D, **_SE)


@register_model
def seresnextaa201d_32x8d(pretrained=False, **kwargs):
    """SE-ResNeXt-201-D 32x8d with average-pool anti-aliasing: grouped bottlenecks 3-24-36-4 with SE, deep stem
    (64, 64, 128), average-pool shortcuts."""
    return _create_resnet("seresnextaa201d_32x8d", pretrained, Bottleneck, (3, 24, 36, 4), kwargs, cardinality=32,
                          base_width=8, aa_layer=nn.AvgPool2d, stem_width=64, stem_type="deep", avg_down=True,
                          **_SE)


@register_model
def resnetrs50(pretrained=False, **kwargs):
    """ResNet-RS-50: bottlenecks 3-4-6-3 with SE (a quarter of the channels), deep stem, a strided 3x3 convolution
    for the stem's pool, average-pool shortcuts."""
    return _create_resnet("resnetrs50", pretrained, Bottleneck, (3, 4, 6, 3), kwargs, **_RS)


@register_model
def resnetrs101(pretrained=False, **kwargs):
    """ResNet-RS-101: bottlenecks 3-4-23-3, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs101", pretrained, Bottleneck, (3, 4, 23, 3), kwargs, **_RS)


@register_model
def resnetrs152(pretrained=False, **kwargs):
    """ResNet-RS-152: bottlenecks 3-8-36-3, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs152", pretrained, Bottleneck, (3, 8, 36, 3), kwargs, **_RS)


@register_model
def resnetrs200(pretrained=False, **kwargs):
    """ResNet-RS-200: bottlenecks 3-24-36-3, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs200", pretrained, Bottleneck, (3, 24, 36, 3), kwargs, **_RS)


@register_model
def resnetrs270(pretrained=False, **kwargs):
    """ResNet-RS-270: bottlenecks 4-29-53-4, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs270", pretrained, Bottleneck, (4, 29, 53, 4), kwargs, **_RS)


@register_model
def resnetrs350(pretrained=False, **kwargs):
    """ResNet-RS-350: bottlenecks 4-36-72-4, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs350", pretrained, Bottleneck, (4, 36, 72, 4), kwargs, **_RS)


@register_model
def resnetrs420(pretrained=False, **kwargs):
    """ResNet-RS-420: bottlenecks 4-44-87-4, as ResNet-RS-50 otherwise."""
    return _create_resnet("resnetrs420", pretrained, Bottleneck, (4, 44, 87, 4), kwargs, **_RS)


@register_model
def test_resnet(pretrained=False, **kwargs):
    """timm's tiny test ResNet: basic, basic, bottleneck and basic blocks (one a stage, 32 to 96 wide), deep stem 16
    wide, average-pool shortcuts."""
    return _create_resnet("test_resnet", pretrained, [BasicBlock, BasicBlock, Bottleneck, BasicBlock], (1, 1, 1, 1),
                          kwargs, stem_width=16, stem_type="deep", avg_down=True, channels=(32, 48, 48, 96))
