"""CSPNeXt, the backbone of RTMDet (Lyu, Zhang, Huang, Zhou, Wang, Liu, Zhang and Chen 2022, "RTMDet: An Empirical
Study of Designing Real-Time Object Detectors"), as ImageNet-1k classifiers: cspnext_tiny, cspnext_s, cspnext_m,
cspnext_l and cspnext_x. (The paper describes the backbone without naming it; the name is MMDetection's. It is not
the unrelated "token hybrid" CSPNeXt of 2024.)

A stem of three 3x3 convolutions (the first of stride 2) and four stages. Each stage opens with a 3x3 stride-2
convolution and ends in a cross stage partial layer: two 1x1 convolutions split the map into a shortcut half and a
main half; the main half runs through residual blocks, each a 3x3 convolution followed by a depthwise-separable
convolution with a large (5x5) depthwise kernel; the two halves are concatenated, reweighted per channel by an
effective squeeze-and-excitation and fused by a 1x1 convolution. The last stage puts spatial pyramid pooling in front
of its cross stage layer, and its blocks have no residual connection. Every convolution is followed by BatchNorm and
SiLU. The variants scale timm's base widths (128 to 1024) and depths (3, 6, 6, 3). Model names, module names,
``state_dict`` keys, the (PyTorch default) seeded initialisation and the model API follow timm's ``cspnext`` module,
so its checkpoints load as they are.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import EffectiveSEModule
from ._layers import ClassifierHead, ClassifierHeadApi, drop_path_module, get_act_layer
from .cspnet import _conv_norm_act

__all__ = []


class SPPBottleneck(nn.Module):
    """Spatial pyramid pooling: a 1x1 convolution to half the channels (``conv1``), that map and its stride-1 max
    pools over ``kernel_sizes`` windows (``poolings``) concatenated, and a 1x1 convolution to ``out_channels``
    (``conv2``): one map that sees several receptive fields at once."""

    def __init__(self, in_channels, out_channels, kernel_sizes=(5, 9, 13), act_layer=nn.SiLU):
        super().__init__()
        mid_channels = in_channels // 2
        self.conv1 = _conv_norm_act(in_channels, mid_channels, 1, act_layer=act_layer)
        self.poolings = nn.ModuleList([nn.MaxPool2d(k, stride=1, padding=k // 2) for k in kernel_sizes])
        self.conv2 = _conv_norm_act(mid_channels * (len(kernel_sizes) + 1), out_channels, 1, act_layer=act_layer)

    def forward(self, x):
        x = self.conv1(x)
        x = torch.cat([x] + [pool(x) for pool in self.poolings], 1)
        return self.conv2(x)


class DepthwiseSeparableConv(nn.Module):
    """A depthwise ``kernel_size`` convolution (``depthwise_conv``) and a pointwise 1x1 convolution to
    ``out_channels`` (``pointwise_conv``), each with BatchNorm and the activation."""

    def __init__(self, in_channels, out_channels, kernel_size, padding=0, dilation=1, act_layer=nn.SiLU):
        super().__init__()
        self.depthwise_conv = _conv_norm_act(in_channels, in_channels, kernel_size, padding=padding,
                                             dilation=dilation, groups=in_channels, act_layer=act_layer)
        self.pointwise_conv = _conv_norm_act(in_channels, out_channels, 1, act_layer=act_layer)

    def forward(self, x):
        return self.pointwise_conv(self.depthwise_conv(x))


class CspNextBlock(nn.Module):
    """CSPNeXt's block: a 3x3 convolution (``conv1``) and a depthwise-separable convolution with a ``kernel_size``
    depthwise kernel (``conv2``), both dilated by ``dilation``; the input is added back (after stochastic depth,
    ``drop_path``) when ``add_identity`` and the widths agree."""

    def __init__(self, in_channels, out_channels, add_identity=True, kernel_size=5, dilation=1, drop_path=0.0,
                 act_layer=nn.SiLU):
        super().__init__()
        self.conv1 = _conv_norm_act(in_channels, out_channels, 3, padding=dilation, dilation=dilation,
                                    act_layer=act_layer)
        self.conv2 = DepthwiseSeparableConv(out_channels, out_channels, kernel_size,
                                            padding=dilation * (kernel_size // 2), dilation=dilation,
                                            act_layer=act_layer)
        self.add_identity = add_identity and in_channels == out_channels
        self.drop_path = drop_path_module(drop_path) if self.add_identity else nn.Identity()

    def forward(self, x):
        out = self.conv2(self.conv1(x))
        if self.add_identity:
            out = self.drop_path(out) + x
        return out


class CspNextLayer(nn.Module):
    """The cross stage partial layer: 1x1 convolutions to ``out_channels * expand_ratio`` channels for the shortcut
    half (``short_conv``) and the main half (``main_conv``); ``num_blocks`` blocks on the main half (``blocks``, block
    i with stochastic depth ``drop_path_rates[i]``); the halves concatenated (main first), reweighted by an effective
    squeeze-and-excitation (``attention``, an identity without ``channel_attention``) and fused by a 1x1
    convolution to ``out_channels`` (``final_conv``)."""

    def __init__(self, in_channels, out_channels, expand_ratio=0.5, num_blocks=1, add_identity=True,
                 channel_attention=False, dilation=1, drop_path_rates=None, act_layer=nn.SiLU):
        super().__init__()
        mid_channels = int(out_channels * expand_ratio)
        drop_path_rates = drop_path_rates or [0.0] * num_blocks
        self.short_conv = _conv_norm_act(in_channels, mid_channels, 1, act_layer=act_layer)
        self.main_conv = _conv_norm_act(in_channels, mid_channels, 1, act_layer=act_layer)
        self.blocks = nn.ModuleList([
            CspNextBlock(mid_channels, mid_channels, add_identity=add_identity, dilation=dilation,
                         drop_path=drop_path_rates[i], act_layer=act_layer)
            for i in range(num_blocks)
        ])
        self.attention = EffectiveSEModule(2 * mid_channels) if channel_attention else nn.Identity()
        self.final_conv = _conv_norm_act(2 * mid_channels, out_channels, 1, act_layer=act_layer)

    def forward(self, x):
        short = self.short_conv(x)
        main = self.main_conv(x)
        for block in self.blocks:
            main = block(main)
        x = torch.cat([main, short], 1)
        x = self.attention(x)
        return self.final_conv(x)


def _stage_drop_path_rates(drop_path_rate, depths):
    """Per stage, its blocks' stochastic depth: rising linearly from 0 at the first block to ``drop_path_rate`` at
    the last block of all stages but the last, which has no residual connections and gets None (timm's stagewise
    ``calculate_drop_path_rates`` over the earlier stages)."""
    rates = torch.linspace(0, drop_path_rate, sum(depths[:-1])).tolist()
    per_stage = []
    for depth in depths[:-1]:
        per_stage.append(rates[:depth])
        rates = rates[depth:]
    return per_stage + [None]


def _all_taps(model, out_indices=None):
    """timm's ``features_only`` CSPNeXt: the maps from ``forward_intermediates``, by default every tap (the stem and
    the four stages) unless ``out_indices`` says otherwise; the stages after the last tap and the head go."""
    return FeatureGetterNet(model, tuple(range(len(model.feature_info))) if out_indices is None else out_indices)


class CspNext(ClassifierHeadApi, nn.Module):
    """timm's CspNext: a stem (``stem``: three 3x3 convolutions, the first of stride 2, to half the first stage's
    width), the stages ``stages.0``... and the classifier ``head`` (pooling ``global_pool``, dropout ``drop_rate``,
    ``fc``).

    Stage i has ``channels[i] * widen_factor`` channels and ``round(depths[i] * deepen_factor)`` blocks (at least
    one): a 3x3 stride-2 convolution, in the last stage an SPP bottleneck, then the cross stage layer, whose halves
    are ``expand_ratio`` of its width, with ``channel_attention``. Once the network reaches ``output_stride`` (8, 16
    or 32), a stage doubles the dilation instead of striding (its downsampling convolution keeps the previous
    dilation). ``drop_path_rate`` is the stochastic depth of the last block before the last stage (see
    ``_stage_drop_path_rates``). ``act_layer`` is an activation class or timm's name for it. ``num_classes=0``
    replaces the classifier by an identity (pooled features). Only timm's default norm, BatchNorm with PyTorch's
    epsilon and momentum, is built.
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head.fc"}
    feature_wrapper = staticmethod(_all_taps)

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", output_stride=32, drop_rate=0.0,
                 drop_path_rate=0.0, depths=(3, 6, 6, 3), channels=(128, 256, 512, 1024), deepen_factor=1.0,
                 widen_factor=1.0, expand_ratio=0.5, channel_attention=True, act_layer=nn.SiLU):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        if len(depths) != len(channels):
            raise ValueError(f"{len(depths)} stage depths but {len(channels)} stage widths")
        act_layer = get_act_layer(act_layer)
        conv = partial(_conv_norm_act, act_layer=act_layer)
        self.num_classes = num_classes
        self.in_chans = in_chans
        stage_depths = [max(round(d * deepen_factor), 1) for d in depths]
        stage_channels = [int(c * widen_factor) for c in channels]
        drop_path_rates = _stage_drop_path_rates(drop_path_rate, stage_depths)

        stem_chs = max(stage_channels[0] // 2, 1)
        half_chs = max(stem_chs // 2, 1)
        self.stem = nn.Sequential(
            conv(in_chans, half_chs, 3, stride=2, padding=1),
            conv(half_chs, half_chs, 3, padding=1),
            conv(half_chs, stem_chs, 3, padding=1),
        )
        self.feature_info = [dict(num_chs=stem_chs, reduction=2, module="stem")]

        stages = []
        net_stride = 2
        dilation = 1
        prev_chs = stem_chs
        for i, (chs, num_blocks) in enumerate(zip(stage_channels, stage_depths)):
            is_last = i == len(stage_channels) - 1
            stride = 2
            first_dilation = dilation
            if net_stride * 2 > output_stride:
                stride = 1
                dilation *= 2
            net_stride *= stride
            layers = [conv(prev_chs, chs, 3, stride=stride, padding=first_dilation, dilation=first_dilation)]
            if is_last:
                layers.append(SPPBottleneck(chs, chs, act_layer=act_layer))
            layers.append(CspNextLayer(chs, chs, expand_ratio=expand_ratio, num_blocks=num_blocks,
                                       add_identity=not is_last, channel_attention=channel_attention,
                                       dilation=dilation, drop_path_rates=drop_path_rates[i], act_layer=act_layer))
            stages.append(nn.Sequential(*layers))
            self.feature_info.append(dict(num_chs=chs, reduction=net_stride, module=f"stages.{i}"))
            prev_chs = chs
        self.stages = nn.Sequential(*stages)

        self.num_features = prev_chs
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features

    def forward_features(self, x):
        """The map after the last stage (N, num_features, H / 32, W / 32 at output_stride 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps picked by ``indices`` (None: all, n: the last n, or a list) among the stem's output (index 0)
        and the stages' (1 to 4), and (unless ``intermediates_only``) the final map. ``stop_early`` skips the stages
        after the last one picked; ``norm`` does nothing (there is no final norm), as in timm."""
        take, run = intermediate_stages([self.stem, *self.stages], indices, stop_early, output_fmt)
        x, intermediates = run_stages(x, run, take)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last tap ``indices`` picks (index 0: the stem), and the head (pooling and
        classifier) when asked or when stages go, the features then being the last kept tap's; returns the absolute
        indices. ``prune_norm`` does nothing (there is no final norm)."""
        take = take_indices(len(self.stages) + 1, indices)
        last = max(take)
        prune_end = last < len(self.stages)
        self.stages = nn.Sequential(*list(self.stages)[:last])
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
            self.head.in_features = self.num_features
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_cspnext(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's scaling factors, which the caller's ``kwargs`` override; with
    ``features_only`` the maps of the stem and the four stages, unless ``out_indices`` picks some."""
    return build_model(CspNext, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def cspnext_tiny(pretrained=False, progress=True, **kwargs):
    """CSPNeXt-tiny: widths x0.375 (48 to 384), depths x0.167 (one block a stage)."""
    return _create_cspnext("cspnext_tiny", pretrained, progress, kwargs, deepen_factor=0.167, widen_factor=0.375)


@register_model
def cspnext_s(pretrained=False, progress=True, **kwargs):
    """CSPNeXt-S: widths x0.5 (64 to 512), depths x0.33 (1-2-2-1)."""
    return _create_cspnext("cspnext_s", pretrained, progress, kwargs, deepen_factor=0.33, widen_factor=0.5)


@register_model
def cspnext_m(pretrained=False, progress=True, **kwargs):
    """CSPNeXt-M: widths x0.75 (96 to 768), depths x0.67 (2-4-4-2)."""
    return _create_cspnext("cspnext_m", pretrained, progress, kwargs, deepen_factor=0.67, widen_factor=0.75)


@register_model
def cspnext_l(pretrained=False, progress=True, **kwargs):
    """CSPNeXt-L: widths 128 to 1024, depths 3-6-6-3."""
    return _create_cspnext("cspnext_l", pretrained, progress, kwargs, deepen_factor=1.0, widen_factor=1.0)


@register_model
def cspnext_x(pretrained=False, progress=True, **kwargs):
    """CSPNeXt-X: widths x1.25 (160 to 1280), depths x1.33 (4-8-8-4)."""
    return _create_cspnext("cspnext_x", pretrained, progress, kwargs, deepen_factor=1.33, widen_factor=1.25)
