"""RDNet (Kim et al. 2024, "DenseNets Reloaded: Paradigm Shift Beyond ResNets and ViTs"): rdnet_tiny, rdnet_small,
rdnet_base and rdnet_large.

A DenseNet rebuilt with modern parts. Each dense block reads the concatenation of every earlier output of its stage
and adds ``growth_rate`` new channels, made by a ConvNeXt-like mixer (7x7 depthwise convolution, LayerNorm, a 1x1
expansion with GELU, a 1x1 projection; from the third stage on followed by "effective" squeeze-and-excitation, one
1x1 convolution and a hard-sigmoid gate) and a per-channel layer scale. Between stages a transition (LayerNorm and a
1x1 or strided 2x2 convolution) halves the widened map's channels; only some stages downsample. The stem is a 4x4
patch embedding with LayerNorm; the head pools, normalises and classifies. Model names, module names,
``state_dict`` keys, defaults and (He-normal) initialisation follow timm's ``rdnet`` module, so its checkpoints load
directly.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import EffectiveSEModule
from ._layers import ClassifierHead, ClassifierHeadApi, drop_path_module, get_act_layer
from ._norm import LayerNorm2d
from .convnext import NormMlpClassifierHead

__all__ = []

_NORM_LAYERS = {"layernorm2d": LayerNorm2d, "batchnorm2d": nn.BatchNorm2d}
_STEM_TYPES = ("patch", "overlap", "overlap_tiered")


def _get_norm_layer(norm_layer, eps):
    """A norm class from timm's name for it ('layernorm2d', 'batchnorm2d') or the class itself, with epsilon
    ``eps`` bound where given."""
    if isinstance(norm_layer, str):
        if norm_layer not in _NORM_LAYERS:
            raise ValueError(f"unknown norm_layer '{norm_layer}': expected one of {sorted(_NORM_LAYERS)} or a class")
        norm_layer = _NORM_LAYERS[norm_layer]
    return norm_layer if eps is None else partial(norm_layer, eps=eps)


def _mixer_layers(in_chs, inter_chs, out_chs, norm_layer, act_layer):
    """The dense block's mixer: a 7x7 depthwise convolution, the norm, a 1x1 expansion to ``inter_chs`` with
    ``act_layer``, a 1x1 projection to ``out_chs`` (every convolution biased)."""
    return [
        nn.Conv2d(in_chs, in_chs, groups=in_chs, kernel_size=7, stride=1, padding=3),
        norm_layer(in_chs),
        nn.Conv2d(in_chs, inter_chs, kernel_size=1, stride=1, padding=0),
        act_layer(),
        nn.Conv2d(inter_chs, out_chs, kernel_size=1, stride=1, padding=0),
    ]


class Block(nn.Module):
    """The plain mixer (``layers``, see ``_mixer_layers``) of the first stages' dense blocks."""

    def __init__(self, in_chs, inter_chs, out_chs, norm_layer, act_layer):
        super().__init__()
        self.layers = nn.Sequential(*_mixer_layers(in_chs, inter_chs, out_chs, norm_layer, act_layer))

    def forward(self, x):
        return self.layers(x)


class BlockESE(nn.Module):
    """The mixer followed by effective squeeze-and-excitation on its output (``layers``), the later stages'."""

    def __init__(self, in_chs, inter_chs, out_chs, norm_layer, act_layer):
        super().__init__()
        layers = _mixer_layers(in_chs, inter_chs, out_chs, norm_layer, act_layer) + [EffectiveSEModule(out_chs)]
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


_BLOCK_TYPES = {"block": Block, "blockese": BlockESE}


def _get_block_type(block_type):
    """A mixer class by timm's name for it ('Block' or 'BlockESE', any case)."""
    name = block_type.lower().strip()
    if name not in _BLOCK_TYPES:
        raise ValueError(f"unknown block_type '{block_type}': expected 'Block' or 'BlockESE'")
    return _BLOCK_TYPES[name]


class DenseBlock(nn.Module):
    """One dense layer: the concatenated list of its stage's earlier maps through a mixer (``layers``; its hidden
    width ``bottleneck_width_ratio`` times its input, rounded down to a multiple of 8), scaled per channel by
    ``gamma`` (from ``ls_init_value``; none at 0), then stochastic depth (``drop_path``) and dropout
    (``drop_rate``) in training. Returns only the ``growth_rate`` new channels."""

    def __init__(self, num_input_features=64, growth_rate=64, bottleneck_width_ratio=4.0, drop_path_rate=0.0,
                 drop_rate=0.0, block_idx=0, block_type="Block", ls_init_value=1e-6, norm_layer=nn.LayerNorm,
                 act_layer=nn.GELU):
        super().__init__()
        self.drop_rate = drop_rate
        self.drop_path_rate = drop_path_rate
        self.block_idx = block_idx
        self.growth_rate = growth_rate
        self.gamma = nn.Parameter(ls_init_value * torch.ones(growth_rate)) if ls_init_value > 0 else None
        inter_chs = int(num_input_features * bottleneck_width_ratio / 8) * 8
        self.drop_path = drop_path_module(drop_path_rate)
        self.layers = _get_block_type(block_type)(num_input_features, inter_chs, int(growth_rate), norm_layer,
                                                  act_layer)

    def forward(self, features):
        x = torch.cat(features, 1)
        x = self.layers(x)
        if self.gamma is not None:
            x = x * self.gamma.reshape(1, -1, 1, 1)
        x = self.drop_path(x)
        if self.drop_rate > 0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x


class DenseStage(nn.Sequential):
    """``num_block`` dense blocks (``dense_block0``...), each reading all the maps before it; the output is the
    input and every block's new channels concatenated (``num_out_features`` channels)."""

    def __init__(self, num_block, num_input_features, drop_path_rates, growth_rate, **kwargs):
        super().__init__()
        for i in range(num_block):
            layer = DenseBlock(num_input_features=num_input_features, growth_rate=growth_rate,
                               drop_path_rate=drop_path_rates[i], block_idx=i, **kwargs)
            num_input_features += growth_rate
            self.add_module(f"dense_block{i}", layer)
        self.num_out_features = num_input_features

    def forward(self, init_feature):
        features = [init_feature]
        for module in self:
            features.append(module(features))
        return torch.cat(features, 1)


class RDNet(ClassifierHeadApi, nn.Module):
    """RDNet: the stem, then one entry of ``dense_stages`` per stage (from the second on, a transition first: the
    norm and a convolution to ``transition_compression_ratio`` of the channels, rounded down to a multiple of 8,
    2x2 stride 2 where ``is_downsample_block`` says, else 1x1), the optional ``norm_pre`` and the head.

    ``stem_type``: 'patch' (a ``patch_size`` convolution of that stride and the norm), 'overlap' (two 3x3 stride-2
    convolutions and the norm) or 'overlap_tiered' (the same, the first one half as wide). By default the head pools,
    normalises and classifies (``NormMlpClassifierHead``); with ``head_norm_first`` the map is normalised first
    (``norm_pre``) and the head is a plain one. ``drop_rate`` is the head's dropout, ``proj_drop_rate`` each dense
    block's, ``drop_path_rate`` the stochastic depth of the last block, rising linearly from 0 at the first.
    ``feature_info`` taps each stage before a downsampling, and the last.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg",
                 growth_rates=(64, 104, 128, 128, 128, 128, 224), num_blocks_list=(3, 3, 3, 3, 3, 3, 3),
                 block_type=("Block",) * 2 + ("BlockESE",) * 5,
                 is_downsample_block=(None, True, True, False, False, False, True), bottleneck_width_ratio=4.0,
                 transition_compression_ratio=0.5, ls_init_value=1e-6, stem_type="patch", patch_size=4,
                 num_init_features=64, head_init_scale=1.0, head_norm_first=False, conv_bias=True, act_layer="gelu",
                 norm_layer="layernorm2d", norm_eps=None, drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        if not len(growth_rates) == len(num_blocks_list) == len(is_downsample_block):
            raise ValueError("growth_rates, num_blocks_list and is_downsample_block must have the same length")
        if stem_type not in _STEM_TYPES:
            raise ValueError(f"stem_type must be one of {_STEM_TYPES}, got {stem_type!r}")
        act_layer = get_act_layer(act_layer)
        norm_layer = _get_norm_layer(norm_layer, norm_eps)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.stem, curr_stride = self._make_stem(in_chans, num_init_features, stem_type, patch_size, conv_bias,
                                                 norm_layer)
        self.feature_info = []
        self.num_stages = len(growth_rates)
        num_features = num_init_features
        rates = torch.linspace(0, drop_path_rate, sum(num_blocks_list)).split(list(num_blocks_list))
        dense_stages = []
        for i in range(self.num_stages):
            layers = []
            if i != 0:
                compressed = int(num_features * transition_compression_ratio / 8) * 8
                k_size = 2 if is_downsample_block[i] else 1
                curr_stride *= k_size
                layers.append(norm_layer(num_features))
                layers.append(nn.Conv2d(num_features, compressed, kernel_size=k_size, stride=k_size, padding=0))
                num_features = compressed
            layers.append(DenseStage(num_blocks_list[i], num_features, rates[i].tolist(), growth_rates[i],
                                     bottleneck_width_ratio=bottleneck_width_ratio, drop_rate=proj_drop_rate,
                                     ls_init_value=ls_init_value, block_type=block_type[i], norm_layer=norm_layer,
                                     act_layer=act_layer))
            num_features += num_blocks_list[i] * growth_rates[i]
            if i + 1 == self.num_stages or is_downsample_block[i + 1]:
                self.feature_info.append(dict(num_chs=num_features, reduction=curr_stride,
                                              module=f"dense_stages.{i}", growth_rate=growth_rates[i]))
            dense_stages.append(nn.Sequential(*layers))
        self.dense_stages = nn.Sequential(*dense_stages)
        self.stage_ends = [int(info["module"].split(".")[-1]) for info in self.feature_info]
        self.num_features = num_features
        if head_norm_first:
            self.norm_pre = norm_layer(num_features)
            self.head = ClassifierHead(num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        else:
            self.norm_pre = nn.Identity()
            self.head = NormMlpClassifierHead(num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate,
                                              norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        self._init_weights(head_init_scale)

    @staticmethod
    def _make_stem(in_chans, num_init_features, stem_type, patch_size, conv_bias, norm_layer):
        """The stem (see the class) and its stride."""
        if stem_type == "patch":
            stem = nn.Sequential(
                nn.Conv2d(in_chans, num_init_features, kernel_size=patch_size, stride=patch_size, bias=conv_bias),
                norm_layer(num_init_features),
            )
            return stem, patch_size
        mid_chs = _make_divisible(num_init_features // 2, 8) if "tiered" in stem_type else num_init_features
        stem = nn.Sequential(
            nn.Conv2d(in_chans, mid_chs, kernel_size=3, stride=2, padding=1, bias=conv_bias),
            nn.Conv2d(mid_chs, num_init_features, kernel_size=3, stride=2, padding=1, bias=conv_bias),
            norm_layer(num_init_features),
        )
        return stem, 4

    def _init_weights(self, head_init_scale):
        """timm's init, in module order: He-normal (fan-in) convolution weights (their biases keep PyTorch's
        default), zero linear biases, the head's linear layer scaled by ``head_init_scale``."""
        for name, module in self.named_modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
                if name.startswith("head."):
                    with torch.no_grad():
                        module.weight.mul_(head_init_scale)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after pooling ``global_pool`` if
        given; ``reset_other`` also drops the MLP head's norm."""
        head_args = {"reset_other": reset_other} if isinstance(self.head, NormMlpClassifierHead) else {}
        super().reset_classifier(num_classes, global_pool, **head_args)

    def forward_features(self, x):
        """The last stage's map (normalised with ``head_norm_first``), (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.dense_stages(x)
        x = self.norm_pre(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps of the ``feature_info`` taps that ``indices`` picks (None: all, n: the last n, or a list; the
        last one through ``norm_pre`` with ``norm``) and, unless ``intermediates_only``, the final map;
        ``stop_early`` skips the stages after the last tap picked."""
        take, _ = intermediate_stages(self.stage_ends, indices, stop_early, output_fmt)
        take = [self.stage_ends[i] for i in take]
        last_idx = len(self.dense_stages) - 1
        stages = list(self.dense_stages)[:max(take) + 1] if stop_early else list(self.dense_stages)
        x = self.stem(x)
        intermediates = []
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                intermediates.append(self.norm_pre(x) if norm and i == last_idx else x)
        if intermediates_only:
            return intermediates
        if len(stages) == len(self.dense_stages):
            x = self.norm_pre(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last tap ``indices`` picks, ``norm_pre`` with ``prune_norm`` or when stages
        go, and the head (and its norm) with ``prune_head`` or when stages go; returns the tap indices."""
        take = take_indices(len(self.stage_ends), indices)
        last_tap = max(take)
        last_stage = self.stage_ends[last_tap]
        prune_end = last_stage < len(self.dense_stages) - 1
        if prune_norm or prune_end:
            self.norm_pre = nn.Identity()
        self.dense_stages = nn.Sequential(*list(self.dense_stages)[:last_stage + 1])
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last_tap]["num_chs"]
            self.head.in_features = self.num_features
        if prune_head or prune_end:
            self.reset_classifier(0, "", reset_other=True)
        return take


def _create_rdnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (each stage before a downsampling, and the
    last: four in each variant) under timm's flattened names (``dense_stages_1``...), all unless ``out_indices``
    says otherwise."""
    return build_model(RDNet, variant, pretrained, progress=progress, **kwargs)


@register_model
def rdnet_tiny(pretrained=False, progress=True, **kwargs):
    """RDNet-T: seven stages, 64 initial channels."""
    model_args = dict(num_init_features=64, growth_rates=[64, 104, 128, 128, 128, 128, 224],
                      num_blocks_list=[3] * 7, is_downsample_block=(None, True, True, False, False, False, True),
                      transition_compression_ratio=0.5, block_type=["Block", "Block"] + ["BlockESE"] * 5)
    return _create_rdnet("rdnet_tiny", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def rdnet_small(pretrained=False, progress=True, **kwargs):
    """RDNet-S: eleven stages, 72 initial channels."""
    model_args = dict(num_init_features=72, growth_rates=[64, 128] + [128] * 7 + [240] * 2,
                      num_blocks_list=[3] * 11,
                      is_downsample_block=(None, True, True, False, False, False, False, False, False, True, False),
                      transition_compression_ratio=0.5, block_type=["Block", "Block"] + ["BlockESE"] * 9)
    return _create_rdnet("rdnet_small", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def rdnet_base(pretrained=False, progress=True, **kwargs):
    """RDNet-B: eleven stages, 120 initial channels."""
    model_args = dict(num_init_features=120, growth_rates=[96, 128] + [168] * 7 + [336] * 2,
                      num_blocks_list=[3] * 11,
                      is_downsample_block=(None, True, True, False, False, False, False, False, False, True, False),
                      transition_compression_ratio=0.5, block_type=["Block", "Block"] + ["BlockESE"] * 9)
    return _create_rdnet("rdnet_base", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def rdnet_large(pretrained=False, progress=True, **kwargs):
    """RDNet-L: twelve stages, 144 initial channels."""
    model_args = dict(num_init_features=144, growth_rates=[128, 192] + [256] * 8 + [360] * 2,
                      num_blocks_list=[3] * 12,
                      is_downsample_block=(None, True, True, False, False, False, False, False, False, False, True,
                                           False),
                      transition_compression_ratio=0.5, block_type=["Block", "Block"] + ["BlockESE"] * 10)
    return _create_rdnet("rdnet_large", pretrained, progress, **dict(model_args, **kwargs))
