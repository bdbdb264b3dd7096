"""ReXNet (Han et al. 2021, "Rethinking Channel Dimensions for Efficient Model Design"): rexnet_100, rexnet_130,
rexnet_150, rexnet_200, rexnet_300, rexnetr_200 and rexnetr_300, and rexnetr_100, rexnetr_130 and rexnetr_150 (no
published weights: built to train from scratch).

A MobileNetV2-like chain of linear bottlenecks (1x1 expansion with SiLU, 3x3 depthwise convolution, optional
squeeze-and-excitation with a BatchNorm inside, ReLU6, linear 1x1 projection) whose widths grow by the same step at
every block, so that no layer is a representational bottleneck. Most blocks widen their input, so the shortcut is
partial: the input is added to the first channels of the output and the new channels pass through. The ``rexnetr``
variants round every width to a multiple of 8 (16 for the 3x model). Model names, module names, ``state_dict`` keys
and (TensorFlow-style) initialisation follow timm's ``rexnet`` module, so its checkpoints load directly.
"""
from functools import partial
from math import ceil

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import SEModule
from ._efficientnet_blocks import init_weights_goog
from ._layers import BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module

__all__ = []

# timm's ConvNormAct as timm builds it here: BatchNorm with its activation in place
_conv_norm_act = partial(ConvNormAct, norm_layer=partial(BatchNormAct2d, inplace=True))


class LinearBottleneck(nn.Module):
    """ReXNet's block: an optional 1x1 expansion by ``exp_ratio`` (``conv_exp``, with ``act_layer``), a 3x3
    depthwise convolution (``conv_dw``, carrying the stride), squeeze-and-excitation when ``se_ratio`` > 0,
    ``dw_act_layer``, and a linear 1x1 projection (``conv_pwl``).

    Where the block keeps the resolution and does not narrow the map, its input is added to the output's first
    ``in_chs`` channels (after stochastic depth ``drop_path``, a module or None); the other channels are new.
    ``dilation`` is the (depthwise convolution's, next block's) dilation: a block that changes it has no shortcut.
    """

    def __init__(self, in_chs, out_chs, stride, dilation=(1, 1), exp_ratio=1.0, se_ratio=0.0, ch_div=1,
                 act_layer=nn.SiLU, dw_act_layer=nn.ReLU6, drop_path=None):
        super().__init__()
        self.use_shortcut = stride == 1 and dilation[0] == dilation[1] and in_chs <= out_chs
        self.in_channels = in_chs
        self.out_channels = out_chs
        if exp_ratio != 1.0:
            dw_chs = _make_divisible(round(in_chs * exp_ratio), ch_div)
            self.conv_exp = _conv_norm_act(in_chs, dw_chs, act_layer=act_layer)
        else:
            dw_chs = in_chs
            self.conv_exp = None
        self.conv_dw = _conv_norm_act(dw_chs, dw_chs, 3, stride=stride, dilation=dilation[0], groups=dw_chs,
                                      apply_act=False)
        if se_ratio > 0:
            self.se = SEModule(dw_chs, rd_channels=_make_divisible(int(dw_chs * se_ratio), ch_div),
                               norm_layer=nn.BatchNorm2d)
        else:
            self.se = None
        self.act_dw = dw_act_layer()
        self.conv_pwl = _conv_norm_act(dw_chs, out_chs, 1, apply_act=False)
        self.drop_path = drop_path

    def forward(self, x):
        shortcut = x
        if self.conv_exp is not None:
            x = self.conv_exp(x)
        x = self.conv_dw(x)
        if self.se is not None:
            x = self.se(x)
        x = self.act_dw(x)
        x = self.conv_pwl(x)
        if self.use_shortcut:
            if self.drop_path is not None:
                x = self.drop_path(x)
            x = torch.cat([x[:, :self.in_channels] + shortcut, x[:, self.in_channels:]], dim=1)
        return x


def _block_settings(width_mult, depth_mult, initial_chs, final_chs, se_ratio, ch_div):
    """Each block's (out_chs, exp_ratio, stride, se_ratio): six stages of 1, 2, 2, 3, 3, 5 blocks (times
    ``depth_mult``, rounded up) with strides 1, 2, 2, 2, 1, 2 at their first blocks; the first stage does not expand
    (the others by 6), the first two stages have no squeeze-and-excitation. Widths start at ``initial_chs`` and grow
    by ``final_chs`` spread evenly over the blocks, scaled by ``width_mult`` and rounded to ``ch_div``."""
    repeats = [ceil(n * depth_mult) for n in (1, 2, 2, 3, 3, 5)]
    strides = []
    for stage_stride, n in zip((1, 2, 2, 2, 1, 2), repeats):
        strides += [stage_stride] + [1] * (n - 1)
    num_blocks = sum(repeats)
    exp_ratios = [1] * repeats[0] + [6] * (num_blocks - repeats[0])
    se_ratios = [0.0] * (repeats[0] + repeats[1]) + [se_ratio] * (num_blocks - repeats[0] - repeats[1])
    base_chs = initial_chs / width_mult if width_mult < 1.0 else initial_chs
    out_chs = []
    for _ in range(num_blocks):
        out_chs.append(_make_divisible(round(base_chs * width_mult), ch_div))
        base_chs += final_chs / float(num_blocks)
    return list(zip(out_chs, exp_ratios, strides, se_ratios))


class RexNet(ClassifierHeadApi, nn.Module):
    """ReXNet: a 3x3 stride-2 stem (``stem``), the linear bottlenecks and a final 1x1 convolution to
    ``1280 * width_mult`` channels (``features``), then the classifier head (``head``: pooling, dropout, linear).

    ``output_stride`` 16 or 8 dilates the last stages instead of striding them. ``drop_path_rate`` is the stochastic
    depth of the last block, decreasing linearly to 0 at the first. ``act_layer`` (SiLU) follows the stem, the
    expansions and the final convolution; ``dw_act_layer`` (ReLU6) the depthwise convolutions.
    """

    default_cfg = {"first_conv": "stem.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", output_stride=32, initial_chs=16,
                 final_chs=180, width_mult=1.0, depth_mult=1.0, se_ratio=1 / 12.0, ch_div=1, act_layer=nn.SiLU,
                 dw_act_layer=nn.ReLU6, drop_rate=0.2, drop_path_rate=0.0):
        super().__init__()
        if output_stride not in (32, 16, 8):
            raise ValueError(f"output_stride must be 32, 16 or 8, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        stem_base_chs = 32 / width_mult if width_mult < 1.0 else 32
        stem_chs = _make_divisible(round(stem_base_chs * width_mult), ch_div)
        self.stem = _conv_norm_act(in_chans, stem_chs, 3, stride=2, act_layer=act_layer)
        settings = _block_settings(width_mult, depth_mult, initial_chs, final_chs, se_ratio, ch_div)
        features, self.feature_info = self._make_features(settings, stem_chs, width_mult, ch_div, output_stride,
                                                          act_layer, dw_act_layer, drop_path_rate)
        self.num_features = features[-1].out_channels
        self.features = nn.Sequential(*features)
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        init_weights_goog(self)

    @staticmethod
    def _make_features(settings, prev_chs, width_mult, ch_div, output_stride, act_layer, dw_act_layer,
                       drop_path_rate):
        """The blocks and the final convolution, and timm's feature_info: the stem or block output before each
        downsampling, and the last block's output."""
        feature_info = []
        features = []
        feat_chs = prev_chs
        curr_stride = 2
        dilation = 1
        for block_idx, (chs, exp_ratio, stride, se_ratio) in enumerate(settings):
            next_dilation = dilation
            if stride > 1:
                module = "stem" if block_idx == 0 else f"features.{block_idx - 1}"
                feature_info.append(dict(num_chs=feat_chs, reduction=curr_stride, module=module))
                if curr_stride >= output_stride:
                    next_dilation = dilation * stride
                    stride = 1
            block_dpr = drop_path_rate * block_idx / (len(settings) - 1)
            drop_path = drop_path_module(block_dpr) if block_dpr > 0.0 else None
            features.append(LinearBottleneck(prev_chs, chs, stride, (dilation, next_dilation), exp_ratio, se_ratio,
                                             ch_div, act_layer, dw_act_layer, drop_path))
            curr_stride *= stride
            dilation = next_dilation
            prev_chs = chs
            feat_chs = chs
        feature_info.append(dict(num_chs=feat_chs, reduction=curr_stride, module=f"features.{len(features) - 1}"))
        pen_chs = _make_divisible(1280 * width_mult, ch_div)
        features.append(_conv_norm_act(prev_chs, pen_chs, act_layer=act_layer))
        return features, feature_info

    def forward_features(self, x):
        """The map after the final 1x1 convolution (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.features(x)
        return x

    def _stage_ends(self):
        """The index in ``features`` of the block ending each ``feature_info`` tap, as timm counts the taps."""
        return [int(info["module"].split(".")[-1]) for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's intermediate maps: those of the ``feature_info`` taps ``indices`` picks (None: all, n: the last n,
        or a list; the block outputs before each downsampling and the last block's), in forward order; unless
        ``intermediates_only``, the last map too. ``stop_early`` skips the blocks after the last tap picked, unless
        that is the last tap: the final 1x1 convolution after it makes the final features. ``norm`` is accepted
        for timm's signature: there is no final norm."""
        stage_ends = self._stage_ends()
        take, _ = intermediate_stages(stage_ends, indices, stop_early, output_fmt)
        positions = [stage_ends[i] for i in take]
        blocks = list(self.features)
        if stop_early and max(positions) < stage_ends[-1]:
            blocks = blocks[:max(positions) + 1]
        x, intermediates = run_stages(self.stem(x), blocks, positions)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """As timm does, unless nothing asks for it (the last tap kept, the head and norm too): drop the blocks after
        the last ``feature_info`` tap ``indices`` picks (the final convolution too) and the classifier;
        ``num_features`` and ``head_hidden_size`` become the tap's width, the head an unpooled identity. Returns the
        picked tap indices."""
        stage_ends = self._stage_ends()
        take = take_indices(len(stage_ends), indices)
        last = stage_ends[max(take)]
        if not (prune_norm or prune_head or last < stage_ends[-1]):
            return take
        self.features = nn.Sequential(*list(self.features)[:last + 1])
        self.num_features = self.head_hidden_size = self.feature_info[max(take)]["num_chs"]
        self.head.in_features = self.num_features
        self.reset_classifier(0, "")
        return take


def _create_rexnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's five taps (strides 2 to 32) unless
    ``out_indices`` says otherwise, under timm's flattened names (``features_0``...)."""
    return build_model(RexNet, variant, pretrained, progress=progress, **kwargs)


@register_model
def rexnet_100(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.0x."""
    return _create_rexnet("rexnet_100", pretrained, progress, **kwargs)


@register_model
def rexnet_130(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.3x."""
    return _create_rexnet("rexnet_130", pretrained, progress, width_mult=1.3, **kwargs)


@register_model
def rexnet_150(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.5x."""
    return _create_rexnet("rexnet_150", pretrained, progress, width_mult=1.5, **kwargs)


@register_model
def rexnet_200(pretrained=False, progress=True, **kwargs):
    """ReXNet 2.0x."""
    return _create_rexnet("rexnet_200", pretrained, progress, width_mult=2.0, **kwargs)


@register_model
def rexnet_300(pretrained=False, progress=True, **kwargs):
    """ReXNet 3.0x."""
    return _create_rexnet("rexnet_300", pretrained, progress, width_mult=3.0, **kwargs)


@register_model
def rexnetr_100(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.0x with every width rounded to a multiple of 8."""
    return _create_rexnet("rexnetr_100", pretrained, progress, ch_div=8, **kwargs)


@register_model
def rexnetr_130(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.3x with every width rounded to a multiple of 8."""
    return _create_rexnet("rexnetr_130", pretrained, progress, width_mult=1.3, ch_div=8, **kwargs)


@register_model
def rexnetr_150(pretrained=False, progress=True, **kwargs):
    """ReXNet 1.5x with every width rounded to a multiple of 8."""
    return _create_rexnet("rexnetr_150", pretrained, progress, width_mult=1.5, ch_div=8, **kwargs)


@register_model
def rexnetr_200(pretrained=False, progress=True, **kwargs):
    """ReXNet 2.0x with every width rounded to a multiple of 8."""
    return _create_rexnet("rexnetr_200", pretrained, progress, width_mult=2.0, ch_div=8, **kwargs)


@register_model
def rexnetr_300(pretrained=False, progress=True, **kwargs):
    """ReXNet 3.0x with every width rounded to a multiple of 16."""
    return _create_rexnet("rexnetr_300", pretrained, progress, width_mult=3.0, ch_div=16, **kwargs)
