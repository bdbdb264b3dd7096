"""GhostNet (Han et al. 2020, "GhostNet: More Features from Cheap Operations"), GhostNetV2 (Tang et al. 2022,
"GhostNetV2: Enhance Cheap Operation with Long-Range Attention") and GhostNetV3 (Liu et al. 2024, "GhostNetV3:
Exploring the Training Strategies for Compact Models"): ghostnet_050, ghostnet_100, ghostnet_130, ghostnetv2_100,
ghostnetv2_130, ghostnetv2_160, ghostnetv3_050, ghostnetv3_100, ghostnetv3_130 and ghostnetv3_160.

A ghost module makes half of its output channels with an ordinary (1x1) convolution and the other half from those
with a cheap 3x3 depthwise convolution, the two halves concatenated. A ghost bottleneck is a ghost module that
expands, a depthwise convolution where the block strides, optional squeeze-and-excitation (hard-sigmoid gate) and a
ghost module that projects, plus a shortcut (a depthwise + pointwise projection where the shape changes). V2 scales
the expanding ghost module's output by DFC attention: a gate computed at half resolution by a 1x1 convolution and
horizontal (1x5) and vertical (5x1) depthwise convolutions, upsampled. V3 trains every convolution as a sum of
re-parameterisable branches (three parallel convolutions, a 1x1 "scale" convolution and a BatchNorm "skip"),
each with its own BatchNorm; ``GhostNet.convert_to_deploy`` folds them into one biased convolution per layer for
inference, as timm's does. Model names, module names, ``state_dict`` keys and (PyTorch's default) initialisation
follow timm's ``ghostnet`` module, so its checkpoints load directly; the widths timm publishes no weights for
(GhostNet 0.5x and 1.3x, GhostNetV3 0.5x, 1.3x and 1.6x) are registered too, to train from scratch.
"""
import math
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._efficientnet_blocks import SqueezeExcite
from ._layers import BatchNormAct2d, SelectAdaptivePool2d
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel, pad_kernel, sum_branches

__all__ = []


def _squeeze_excite(chs, se_ratio):
    """GhostNet's squeeze-and-excitation: reduction to ``se_ratio`` of ``chs`` rounded to a multiple of 4, ReLU,
    hard-sigmoid gate."""
    return SqueezeExcite(chs, rd_ratio=se_ratio, act_layer=partial(nn.ReLU, inplace=True), gate_layer=nn.Hardsigmoid,
                         rd_round_fn=partial(_make_divisible, divisor=4))


class ConvBnAct(nn.Module):
    """A bias-free convolution padded by half its kernel (``conv``), then BatchNorm and ``act_layer`` (``bn1``; no
    activation when ``act_layer`` is None)."""

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, groups=1, act_layer=nn.ReLU):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=kernel_size // 2, groups=groups,
                              bias=False)
        self.bn1 = BatchNormAct2d(out_chs, act_layer=act_layer, apply_act=act_layer is not None, inplace=True)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn1(x)
        return x


def _primary_and_cheap(in_chs, init_chs, new_chs, kernel_size, dw_size, stride, act_layer):
    """A ghost module's two convolutions, each with BatchNorm and ``act_layer``: the primary one (``in_chs`` to
    ``init_chs``) and the cheap depthwise one that derives ``new_chs`` more channels from its output."""
    primary = nn.Sequential(
        nn.Conv2d(in_chs, init_chs, kernel_size, stride, kernel_size // 2, bias=False),
        nn.BatchNorm2d(init_chs),
        act_layer(inplace=True),
    )
    cheap = nn.Sequential(
        nn.Conv2d(init_chs, new_chs, dw_size, 1, dw_size // 2, groups=init_chs, bias=False),
        nn.BatchNorm2d(new_chs),
        act_layer(inplace=True),
    )
    return primary, cheap


def _dfc_attention(in_chs, out_chs, kernel_size, stride):
    """V2's decoupled fully connected attention branch (``short_conv``): a 1x1 convolution, then horizontal (1x5)
    and vertical (5x1) depthwise convolutions, each followed by BatchNorm."""
    return nn.Sequential(
        nn.Conv2d(in_chs, out_chs, kernel_size, stride, kernel_size // 2, bias=False),
        nn.BatchNorm2d(out_chs),
        nn.Conv2d(out_chs, out_chs, kernel_size=(1, 5), stride=1, padding=(0, 2), groups=out_chs, bias=False),
        nn.BatchNorm2d(out_chs),
        nn.Conv2d(out_chs, out_chs, kernel_size=(5, 1), stride=1, padding=(2, 0), groups=out_chs, bias=False),
        nn.BatchNorm2d(out_chs),
    )


def _attention_gate(gate_fn, short_conv, x, out):
    """``out`` scaled by the DFC attention of ``x``: the branch runs on ``x`` average-pooled by 2 and its gate is
    upsampled (nearest) to ``out``'s size."""
    res = short_conv(F.avg_pool2d(x, kernel_size=2, stride=2))
    return out * F.interpolate(gate_fn(res), size=(out.shape[-2], out.shape[-1]), mode="nearest")


class GhostModule(nn.Module):
    """GhostNet's module: ``ceil(out_chs / ratio)`` channels from the primary convolution, the rest from the cheap
    depthwise convolution on them, concatenated and cut to ``out_chs``."""

    def __init__(self, in_chs, out_chs, kernel_size=1, ratio=2, dw_size=3, stride=1, act_layer=nn.ReLU):
        super().__init__()
        self.out_chs = out_chs
        init_chs = math.ceil(out_chs / ratio)
        new_chs = init_chs * (ratio - 1)
        self.primary_conv, self.cheap_operation = _primary_and_cheap(in_chs, init_chs, new_chs, kernel_size,
                                                                     dw_size, stride, act_layer)

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return out[:, :self.out_chs]


class GhostModuleV2(nn.Module):
    """GhostNetV2's module: a ``GhostModule`` whose output is scaled by DFC attention (``short_conv``, sigmoid
    ``gate_fn``)."""

    def __init__(self, in_chs, out_chs, kernel_size=1, ratio=2, dw_size=3, stride=1, act_layer=nn.ReLU):
        super().__init__()
        self.gate_fn = nn.Sigmoid()
        self.out_chs = out_chs
        init_chs = math.ceil(out_chs / ratio)
        new_chs = init_chs * (ratio - 1)
        self.primary_conv, self.cheap_operation = _primary_and_cheap(in_chs, init_chs, new_chs, kernel_size,
                                                                     dw_size, stride, act_layer)
        self.short_conv = _dfc_attention(in_chs, out_chs, kernel_size, stride)

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        out = torch.cat([x1, x2], dim=1)
        return _attention_gate(self.gate_fn, self.short_conv, x, out[:, :self.out_chs])


def _fuse_branches(branches, scale=None, skip=None, kernel_size=1):
    """The (kernel, bias) of parallel ``ConvBnAct`` branches summed, plus a 1x1 ``scale`` branch padded to
    ``kernel_size`` and a BatchNorm ``skip`` branch (an identity depthwise kernel) where given."""
    with torch.no_grad():
        fused = [fold_batchnorm(branch.conv.weight, branch.bn1) for branch in branches]
        if scale is not None:
            kernel, bias = fold_batchnorm(scale.conv.weight, scale.bn1)
            fused.append((pad_kernel(kernel, kernel_size), bias))
        if skip is not None:
            identity = identity_kernel(skip.num_features, 1, kernel_size, skip.weight.dtype)
            fused.append(fold_batchnorm(identity, skip))
        kernel, bias = sum_branches(fused)
    return kernel.detach(), bias.detach()


class GhostModuleV3(nn.Module):
    """GhostNetV3's module in its training form: the primary convolution is three parallel 1x1 branches
    (``primary_rpr_conv``, each a convolution and BatchNorm) summed before the activation; the cheap depthwise
    convolution is three parallel branches (``cheap_rpr_conv``), a 1x1 depthwise branch (``cheap_rpr_scale``) and a
    BatchNorm of its input (``cheap_rpr_skip``), summed before the activation. The halves are concatenated; in
    ``mode='shortcut'`` the result is cut to ``out_chs`` and scaled by DFC attention (``short_conv``, ``gate_fn``).

    ``reparameterize`` folds the branches into one biased convolution each (``primary_conv``, ``cheap_operation``,
    each followed by its activation), the inference form, with the same outputs in eval mode.
    """

    def __init__(self, in_chs, out_chs, kernel_size=1, ratio=2, dw_size=3, stride=1, act_layer=nn.ReLU,
                 mode="original"):
        super().__init__()
        self.gate_fn = nn.Sigmoid()
        self.out_chs = out_chs
        init_chs = math.ceil(out_chs / ratio)
        new_chs = init_chs * (ratio - 1)
        self.mode = mode
        self.num_conv_branches = 3
        self.infer_mode = False
        self.register_module("primary_conv", None)
        self.register_module("cheap_operation", None)
        self.primary_rpr_conv = nn.ModuleList([
            ConvBnAct(in_chs, init_chs, kernel_size, stride, act_layer=None) for _ in range(self.num_conv_branches)
        ])
        self.primary_activation = act_layer(inplace=True)
        self.cheap_rpr_skip = nn.BatchNorm2d(init_chs)
        self.cheap_rpr_conv = nn.ModuleList([
            ConvBnAct(init_chs, new_chs, dw_size, 1, groups=init_chs, act_layer=None)
            for _ in range(self.num_conv_branches)
        ])
        self.cheap_rpr_scale = ConvBnAct(init_chs, new_chs, 1, 1, groups=init_chs, act_layer=None)
        self.cheap_activation = act_layer(inplace=True)
        if mode == "shortcut":
            self.short_conv = _dfc_attention(in_chs, out_chs, kernel_size, stride)
        self.kernel_size = dw_size

    def forward(self, x):
        if self.infer_mode:
            x1 = self.primary_conv(x)
            x2 = self.cheap_operation(x1)
        else:
            x1 = sum(branch(x) for branch in self.primary_rpr_conv)
            x1 = self.primary_activation(x1)
            x2 = self.cheap_rpr_scale(x1) + self.cheap_rpr_skip(x1)
            for branch in self.cheap_rpr_conv:
                x2 = x2 + branch(x1)
            x2 = self.cheap_activation(x2)
        out = torch.cat([x1, x2], dim=1)
        if self.mode != "shortcut":
            return out
        return _attention_gate(self.gate_fn, self.short_conv, x, out[:, :self.out_chs])

    def reparameterize(self):
        """Switch to the inference form: each convolution's branches folded (with their BatchNorms' running
        statistics) into one biased convolution, the branches removed."""
        if self.infer_mode:
            return
        kernel, bias = _fuse_branches(self.primary_rpr_conv)
        self.primary_conv = nn.Sequential(biased_conv_like(self.primary_rpr_conv[0].conv, kernel, bias),
                                          self.primary_activation)
        kernel, bias = _fuse_branches(self.cheap_rpr_conv, self.cheap_rpr_scale, self.cheap_rpr_skip,
                                      self.kernel_size)
        self.cheap_operation = nn.Sequential(biased_conv_like(self.cheap_rpr_conv[0].conv, kernel, bias),
                                             self.cheap_activation)
        del self.primary_rpr_conv
        del self.cheap_rpr_skip
        del self.cheap_rpr_conv
        del self.cheap_rpr_scale
        self.infer_mode = True


def _projection_shortcut(in_chs, out_chs, dw_kernel_size, stride):
    """The shortcut of a block that changes the shape: a depthwise convolution carrying the stride and a 1x1
    convolution to ``out_chs``, each followed by BatchNorm."""
    return nn.Sequential(
        nn.Conv2d(in_chs, in_chs, dw_kernel_size, stride=stride, padding=(dw_kernel_size - 1) // 2, groups=in_chs,
                  bias=False),
        nn.BatchNorm2d(in_chs),
        nn.Conv2d(in_chs, out_chs, 1, stride=1, padding=0, bias=False),
        nn.BatchNorm2d(out_chs),
    )


class _GhostBottleneckLayers(nn.Module):
    """What GhostNet's and RepGhostNet's bottlenecks share: their layers (``_add_layers``) and their forward."""

    def _add_layers(self, expand, project, in_chs, mid_chs, out_chs, dw_kernel_size, stride, se_ratio):
        """``expand()``, the ghost module to ``mid_chs`` (``ghost1``); a depthwise ``dw_kernel_size`` convolution and
        BatchNorm where ``stride`` > 1 (``conv_dw``, ``bn_dw``); squeeze-and-excitation when ``se_ratio`` > 0;
        ``project()``, the linear ghost module to ``out_chs`` (``ghost2``); the input (an empty ``shortcut``) or its
        projection. Built in timm's order, so that seeded weights are timm's."""
        has_se = se_ratio is not None and se_ratio > 0.0
        self.stride = stride
        self.ghost1 = expand()
        if stride > 1:
            self.conv_dw = nn.Conv2d(mid_chs, mid_chs, dw_kernel_size, stride=stride,
                                     padding=(dw_kernel_size - 1) // 2, groups=mid_chs, bias=False)
            self.bn_dw = nn.BatchNorm2d(mid_chs)
        else:
            self.conv_dw = None
            self.bn_dw = None
        self.se = _squeeze_excite(mid_chs, se_ratio) if has_se else None
        self.ghost2 = project()
        if in_chs == out_chs and stride == 1:
            self.shortcut = nn.Sequential()
        else:
            self.shortcut = _projection_shortcut(in_chs, out_chs, dw_kernel_size, stride)

    def forward(self, x):
        shortcut = x
        x = self.ghost1(x)
        if self.conv_dw is not None:
            x = self.conv_dw(x)
            x = self.bn_dw(x)
        if self.se is not None:
            x = self.se(x)
        x = self.ghost2(x)
        return x + self.shortcut(shortcut)


class GhostBottleneck(_GhostBottleneckLayers):
    """GhostNet's (``mode='original'``) and GhostNetV2's (``mode='attn'``: the expanding module has DFC attention)
    bottleneck: ghost module to ``mid_chs`` with ``act_layer``, a depthwise ``dw_kernel_size`` convolution and
    BatchNorm where ``stride`` > 1 (``conv_dw``, ``bn_dw``), squeeze-and-excitation when ``se_ratio`` > 0, a
    linear ghost module to ``out_chs``, plus the input (an empty ``shortcut``) or its projection."""

    def __init__(self, in_chs, mid_chs, out_chs, dw_kernel_size=3, stride=1, act_layer=nn.ReLU, se_ratio=0.0,
                 mode="original"):
        super().__init__()
        expand = GhostModule if mode == "original" else GhostModuleV2
        self._add_layers(lambda: expand(in_chs, mid_chs, act_layer=act_layer),
                         lambda: GhostModule(mid_chs, out_chs, act_layer=nn.Identity),
                         in_chs, mid_chs, out_chs, dw_kernel_size, stride, se_ratio)


class GhostBottleneckV3(nn.Module):
    """GhostNetV3's bottleneck in its training form: ``GhostModuleV3`` modules (the expanding one with DFC attention
    in ``mode='shortcut'``), and where ``stride`` > 1 a depthwise convolution made of three parallel branches
    (``dw_rpr_conv``) and a strided 1x1 depthwise branch (``dw_rpr_scale``), each with BatchNorm, summed;
    squeeze-and-excitation when ``se_ratio`` > 0 (else an identity), plus the input or its projection
    (``shortcut``).

    ``reparameterize`` folds the strided branches into one biased depthwise convolution (``conv_dw``); the ghost
    modules reparameterize themselves.
    """

    def __init__(self, in_chs, mid_chs, out_chs, dw_kernel_size=3, stride=1, act_layer=nn.ReLU, se_ratio=0.0,
                 mode="original"):
        super().__init__()
        has_se = se_ratio is not None and se_ratio > 0.0
        self.stride = stride
        self.num_conv_branches = 3
        self.infer_mode = False
        self.register_module("conv_dw", None)
        self.ghost1 = GhostModuleV3(in_chs, mid_chs, act_layer=act_layer, mode=mode)
        if stride > 1:
            self.dw_rpr_conv = nn.ModuleList([
                ConvBnAct(mid_chs, mid_chs, dw_kernel_size, stride, groups=mid_chs, act_layer=None)
                for _ in range(self.num_conv_branches)
            ])
            self.dw_rpr_scale = ConvBnAct(mid_chs, mid_chs, 1, 2, groups=mid_chs, act_layer=None)
        else:
            self.dw_rpr_conv = nn.ModuleList()
        self.kernel_size = dw_kernel_size
        self.se = _squeeze_excite(mid_chs, se_ratio) if has_se else nn.Identity()
        self.ghost2 = GhostModuleV3(mid_chs, out_chs, act_layer=nn.Identity, mode="original")
        if in_chs == out_chs and stride == 1:
            self.shortcut = nn.Identity()
        else:
            self.shortcut = _projection_shortcut(in_chs, out_chs, dw_kernel_size, stride)

    def forward(self, x):
        shortcut = x
        x = self.ghost1(x)
        if self.stride > 1:
            if self.infer_mode:
                x = self.conv_dw(x)
            else:
                x1 = self.dw_rpr_scale(x)
                for branch in self.dw_rpr_conv:
                    x1 = x1 + branch(x)
                x = x1
        x = self.se(x)
        x = self.ghost2(x)
        return x + self.shortcut(shortcut)

    def reparameterize(self):
        """Switch a strided block to the inference form: its depthwise branches folded into one biased
        convolution, the branches removed (a stride-1 block has none)."""
        if self.infer_mode or self.stride == 1:
            return
        kernel, bias = _fuse_branches(self.dw_rpr_conv, self.dw_rpr_scale, kernel_size=self.kernel_size)
        self.conv_dw = biased_conv_like(self.dw_rpr_conv[0].conv, kernel, bias)
        del self.dw_rpr_conv
        del self.dw_rpr_scale
        self.infer_mode = True


# (kernel, expansion, out channels, squeeze-and-excitation ratio, stride) of each block, grouped into stages
_GHOSTNET_CFGS = [
    [[3, 16, 16, 0, 1]],
    [[3, 48, 24, 0, 2]],
    [[3, 72, 24, 0, 1]],
    [[5, 72, 40, 0.25, 2]],
    [[5, 120, 40, 0.25, 1]],
    [[3, 240, 80, 0, 2]],
    [[3, 200, 80, 0, 1], [3, 184, 80, 0, 1], [3, 184, 80, 0, 1], [3, 480, 112, 0.25, 1], [3, 672, 112, 0.25, 1]],
    [[5, 672, 160, 0.25, 2]],
    [[5, 960, 160, 0, 1], [5, 960, 160, 0.25, 1], [5, 960, 160, 0, 1], [5, 960, 160, 0.25, 1]],
]


class GhostNetApi:
    """What GhostNet and RepGhostNet share (a mixin before ``nn.Module``): the stem (``conv_stem``, ``bn1``,
    ``act1``) and the head (width-keeping ``global_pool``, ``conv_head``, ``act2``, ``flatten``, dropout and the
    linear ``classifier``) around ``blocks``, and timm's forward API over them. ``arch_name`` names the family in
    error messages."""

    arch_name = "GhostNet"

    def _add_stem(self, in_chans, width):
        """Register the 3x3 stride-2 stem (16 channels times ``width``, a multiple of 4) and its feature tap;
        returns its width."""
        stem_chs = _make_divisible(16 * width, 4)
        self.conv_stem = nn.Conv2d(in_chans, stem_chs, 3, 2, 1, bias=False)
        self.feature_info.append(dict(num_chs=stem_chs, reduction=2, module="conv_stem"))
        self.bn1 = nn.BatchNorm2d(stem_chs)
        self.act1 = nn.ReLU(inplace=True)
        return stem_chs

    def _add_head(self, out_chs, global_pool, num_classes):
        """Register the head after ``blocks`` (of width ``out_chs``): pooling, the 1x1 convolution to 1280
        channels with ReLU, flattening and the classifier."""
        self.num_features = out_chs
        self.head_hidden_size = 1280
        self.global_pool = self._make_pool(global_pool)
        self.conv_head = nn.Conv2d(out_chs, self.head_hidden_size, 1, 1, 0, bias=True)
        self.act2 = nn.ReLU(inplace=True)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    @classmethod
    def _make_pool(cls, global_pool):
        """Unflattened global pooling of type ``global_pool``; one that changes the width is refused."""
        pool = SelectAdaptivePool2d(global_pool, flatten=False)
        if pool.feat_mult() != 1:
            raise ValueError(f"{cls.arch_name}'s head needs pooling that keeps the width, not '{global_pool}'")
        return pool

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def forward_features(self, x):
        """The map after the last 1x1 ConvBnAct (N, num_features, H / 32, W / 32)."""
        x = self.conv_stem(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.blocks(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, the 1x1 head convolution with ReLU, flattening and dropout; then the classifier unless
        ``pre_logits``."""
        x = self.global_pool(x)
        x = self.conv_head(x)
        x = self.act2(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


class GhostNet(GhostNetApi, nn.Module):
    """GhostNet: a 3x3 stride-2 stem (``conv_stem``, ``bn1``, ``act1``), stages of ghost bottlenecks from
    ``cfgs`` (widths times ``width``, rounded to multiples of 4) and a 1x1 ConvBnAct to the last expansion width
    (``blocks``), then global pooling, a 1x1 convolution to 1280 channels with ReLU (``conv_head``, ``act2``),
    dropout and the linear ``classifier``.

    ``version`` 'v1', 'v2' (DFC attention in the expanding modules from the third block on) or 'v3' (those, and
    re-parameterisable branches everywhere). ``num_features`` is the pooled width, ``head_hidden_size`` 1280;
    ``num_classes=0`` leaves the pre-logits. Pooling must keep the width (not 'catavgmax').
    """

    default_cfg = {"first_conv": "conv_stem", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfgs, num_classes=1000, width=1.0, in_chans=3, output_stride=32, global_pool="avg",
                 drop_rate=0.2, version="v1"):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"GhostNet supports only output_stride=32 (no dilation), got {output_stride}")
        if version not in ("v1", "v2", "v3"):
            raise ValueError(f"unknown GhostNet version '{version}': expected 'v1', 'v2' or 'v3'")
        self.cfgs = cfgs
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.feature_info = []
        stem_chs = self._add_stem(in_chans, width)
        stages, prev_chs, last_exp = self._make_stages(cfgs, stem_chs, width, version)
        out_chs = _make_divisible(last_exp * width, 4)
        stages.append(nn.Sequential(ConvBnAct(prev_chs, out_chs, 1)))
        self.pool_dim = out_chs
        self.blocks = nn.Sequential(*stages)
        self._add_head(out_chs, global_pool, num_classes)

    def _make_stages(self, cfgs, prev_chs, width, version):
        """The bottleneck stages, appending a feature tap at the end of each strided stage; returns them, their
        output width and the last block's (unscaled) expansion width."""
        block_cls = GhostBottleneckV3 if version == "v3" else GhostBottleneck
        attention_mode = {"v1": "original", "v2": "attn", "v3": "shortcut"}[version]
        stages = []
        layer_idx = 0
        net_stride = 2
        for stage_idx, cfg in enumerate(cfgs):
            layers = []
            for kernel_size, exp_size, chs, se_ratio, stride in cfg:
                out_chs = _make_divisible(chs * width, 4)
                mid_chs = _make_divisible(exp_size * width, 4)
                mode = attention_mode if layer_idx > 1 else "original"
                layers.append(block_cls(prev_chs, mid_chs, out_chs, kernel_size, stride, se_ratio=se_ratio,
                                        mode=mode))
                prev_chs = out_chs
                layer_idx += 1
            if stride > 1:
                net_stride *= 2
                self.feature_info.append(dict(num_chs=prev_chs, reduction=net_stride, module=f"blocks.{stage_idx}"))
            stages.append(nn.Sequential(*layers))
        return stages, prev_chs, exp_size

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh final layer for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given; the
        1x1 head convolution stays."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool = self._make_pool(global_pool)
        self.global_pool.train(self.training)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.flatten.train(self.training)
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        self.classifier.train(self.training)

    def _stage_ends(self):
        """The position of each ``feature_info`` tap, as timm counts them: -1 for the stem convolution, else the
        index of the stage in ``blocks`` that it ends."""
        return [-1 if info["module"] == "conv_stem" else int(info["module"].split(".")[-1])
                for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's intermediate maps: those of the ``feature_info`` taps ``indices`` picks (None: all, n: the last n,
        or a list; the stem convolution's output, before its norm, and each strided stage's), in forward order;
        unless ``intermediates_only``, the last map too. ``stop_early`` skips the stages after the last tap picked,
        unless that is the last tap: the stages after it (the final 1x1 ConvBnAct) make the final features. ``norm``
        is accepted for timm's signature: there is no final norm."""
        stage_ends = self._stage_ends()
        take, _ = intermediate_stages(stage_ends, indices, stop_early, output_fmt)
        positions = [stage_ends[i] for i in take]
        stages = list(self.blocks)
        if stop_early and max(positions) < stage_ends[-1]:
            stages = stages[:max(positions) + 1]
        x = self.conv_stem(x)
        stem = [x] if -1 in positions else []
        x = self.bn1(x)
        x = self.act1(x)
        x, picked = run_stages(x, stages, positions)
        if intermediates_only:
            return stem + picked
        return x, stem + picked

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """As timm does, unless nothing asks for it (the last tap kept, the head and norm too): drop the stages
        after the last ``feature_info`` tap ``indices`` picks (the final ConvBnAct too), the stem's norm and
        activation when that tap is the stem convolution, and the head convolution and classifier;
        ``num_features`` and ``head_hidden_size`` become the tap's width. Returns the picked tap indices."""
        stage_ends = self._stage_ends()
        take = take_indices(len(stage_ends), indices)
        last = stage_ends[max(take)]
        if not (prune_norm or prune_head or last < stage_ends[-1]):
            return take
        self.blocks = nn.Sequential(*list(self.blocks)[:last + 1])
        if last < 0:
            self.bn1 = nn.Identity()
            self.act1 = nn.Identity()
        self.num_features = self.head_hidden_size = self.feature_info[max(take)]["num_chs"]
        self.conv_head = nn.Identity()
        self.act2 = nn.Identity()
        self.reset_classifier(0, "")
        return take

    def convert_to_deploy(self):
        """Fold every re-parameterisable layer (GhostNetV3's branches) into its inference form, in place, in module
        order as timm does; the model should then only be run in eval mode."""
        for module in list(self.modules()):
            if hasattr(module, "reparameterize"):
                module.reparameterize()


def _create_ghostnet(variant, width=1.0, pretrained=False, progress=True, **kwargs):
    """Build a registered variant with GhostNet's block table; ``features_only`` gives timm's five taps (the stem
    convolution and the end of each strided stage) unless ``out_indices`` says otherwise, under timm's flattened
    names (``blocks_1``...)."""
    return build_model(GhostNet, variant, pretrained, progress=progress, cfgs=_GHOSTNET_CFGS, width=width, **kwargs)


@register_model
def ghostnet_050(pretrained=False, progress=True, **kwargs):
    """GhostNet 0.5x."""
    return _create_ghostnet("ghostnet_050", width=0.5, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def ghostnet_100(pretrained=False, progress=True, **kwargs):
    """GhostNet 1.0x."""
    return _create_ghostnet("ghostnet_100", width=1.0, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def ghostnet_130(pretrained=False, progress=True, **kwargs):
    """GhostNet 1.3x."""
    return _create_ghostnet("ghostnet_130", width=1.3, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def ghostnetv2_100(pretrained=False, progress=True, **kwargs):
    """GhostNetV2 1.0x."""
    return _create_ghostnet("ghostnetv2_100", width=1.0, pretrained=pretrained, progress=progress, version="v2",
                            **kwargs)


@register_model
def ghostnetv2_130(pretrained=False, progress=True, **kwargs):
    """GhostNetV2 1.3x."""
    return _create_ghostnet("ghostnetv2_130", width=1.3, pretrained=pretrained, progress=progress, version="v2",
                            **kwargs)


@register_model
def ghostnetv2_160(pretrained=False, progress=True, **kwargs):
    """GhostNetV2 1.6x."""
    return _create_ghostnet("ghostnetv2_160", width=1.6, pretrained=pretrained, progress=progress, version="v2",
                            **kwargs)


@register_model
def ghostnetv3_050(pretrained=False, progress=True, **kwargs):
    """GhostNetV3 0.5x (its training form; ``convert_to_deploy`` folds it for inference)."""
    return _create_ghostnet("ghostnetv3_050", width=0.5, pretrained=pretrained, progress=progress, version="v3",
                            **kwargs)


@register_model
def ghostnetv3_100(pretrained=False, progress=True, **kwargs):
    """GhostNetV3 1.0x (its training form; ``convert_to_deploy`` folds it for inference)."""
    return _create_ghostnet("ghostnetv3_100", width=1.0, pretrained=pretrained, progress=progress, version="v3",
                            **kwargs)


@register_model
def ghostnetv3_130(pretrained=False, progress=True, **kwargs):
    """GhostNetV3 1.3x (its training form; ``convert_to_deploy`` folds it for inference)."""
    return _create_ghostnet("ghostnetv3_130", width=1.3, pretrained=pretrained, progress=progress, version="v3",
                            **kwargs)


@register_model
def ghostnetv3_160(pretrained=False, progress=True, **kwargs):
    """GhostNetV3 1.6x (its training form; ``convert_to_deploy`` folds it for inference)."""
    return _create_ghostnet("ghostnetv3_160", width=1.6, pretrained=pretrained, progress=progress, version="v3",
                            **kwargs)
