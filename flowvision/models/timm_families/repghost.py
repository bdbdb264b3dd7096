"""RepGhostNet (Chen et al. 2022, "RepGhost: A Hardware-Efficient Ghost Module via Re-parameterization"):
repghostnet_050, repghostnet_058, repghostnet_080, repghostnet_100, repghostnet_111, repghostnet_130,
repghostnet_150 and repghostnet_200.

GhostNet's layout (ghost bottlenecks: a ghost module that expands, a depthwise convolution where the block strides,
optional squeeze-and-excitation with a hard-sigmoid gate, a ghost module that projects, plus a shortcut), with
RepGhost's ghost module: instead of concatenating the primary convolution's channels with those the cheap
depthwise convolution derives from them, it adds a BatchNorm of the primary output to the cheap convolution's
(feature reuse by re-parameterisation instead of concatenation), then applies the activation. At inference
``RepGhostNet.convert_to_deploy`` folds that BatchNorm branch into the cheap convolution (one biased depthwise
convolution), as timm's does. Model names, module names, ``state_dict`` keys and (PyTorch's default)
initialisation follow timm's ``repghost`` module, so its checkpoints load directly.
"""
import copy
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._efficientnet_blocks import ConvBnAct
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel, sum_branches
from .ghostnet import GhostNetApi, _GhostBottleneckLayers

__all__ = []


class RepGhostModule(nn.Module):
    """RepGhost's module: a ``kernel_size`` convolution to ``out_chs`` with BatchNorm and (where ``relu``) ReLU
    (``primary_conv``), a cheap ``dw_size`` depthwise convolution of its output with BatchNorm
    (``cheap_operation``) plus, where ``reparam``, a BatchNorm of that output (``fusion_bn``, after the identity
    ``fusion_conv``), summed; then ReLU where ``relu`` (``relu``).

    ``switch_to_deploy`` (also ``reparameterize``) folds the sum into one biased depthwise convolution
    (``cheap_operation``), the inference form, with the same outputs in eval mode.
    """

    def __init__(self, in_chs, out_chs, kernel_size=1, dw_size=3, stride=1, relu=True, reparam=True):
        super().__init__()
        self.out_chs = out_chs
        self.primary_conv = nn.Sequential(
            nn.Conv2d(in_chs, out_chs, kernel_size, stride, kernel_size // 2, bias=False),
            nn.BatchNorm2d(out_chs),
            nn.ReLU(inplace=True) if relu else nn.Identity(),
        )
        if reparam:
            self.fusion_conv = nn.Sequential(nn.Identity())
            self.fusion_bn = nn.Sequential(nn.BatchNorm2d(out_chs))
        else:
            self.fusion_conv = nn.Sequential()
            self.fusion_bn = nn.Sequential()
        self.cheap_operation = nn.Sequential(
            nn.Conv2d(out_chs, out_chs, dw_size, 1, dw_size // 2, groups=out_chs, bias=False),
            nn.BatchNorm2d(out_chs),
        )
        self.relu = nn.ReLU() if relu else nn.Identity()

    def forward(self, x):
        x1 = self.primary_conv(x)
        x2 = self.cheap_operation(x1)
        for conv, bn in zip(self.fusion_conv, self.fusion_bn):
            x2 = x2 + bn(conv(x1))
        return self.relu(x2)

    def get_equivalent_kernel_bias(self):
        """The (kernel, bias) of one depthwise convolution equal to the cheap convolution plus the BatchNorm
        branch in eval mode."""
        conv, bn = self.cheap_operation
        branches = [fold_batchnorm(conv.weight, bn)]
        identity = identity_kernel(self.out_chs, 1, conv.kernel_size, conv.weight.dtype)
        branches.extend(fold_batchnorm(identity, fusion_bn) for fusion_bn in self.fusion_bn)
        return sum_branches(branches)

    def switch_to_deploy(self):
        """Switch to the inference form: the BatchNorm branch folded (with the running statistics) into one
        biased depthwise convolution, the branch removed; nothing to do without one."""
        if len(self.fusion_conv) == 0 and len(self.fusion_bn) == 0:
            return
        with torch.no_grad():
            kernel, bias = self.get_equivalent_kernel_bias()
        self.cheap_operation = biased_conv_like(self.cheap_operation[0], kernel, bias)
        del self.fusion_conv
        del self.fusion_bn
        self.fusion_conv = ()
        self.fusion_bn = ()

    def reparameterize(self):
        """``switch_to_deploy`` under timm's other name for it."""
        self.switch_to_deploy()


class RepGhostBottleneck(_GhostBottleneckLayers):
    """RepGhostNet's bottleneck: a RepGhost module to ``mid_chs`` with ReLU (``ghost1``), a depthwise
    ``dw_kernel_size`` convolution and BatchNorm where ``stride`` > 1 (``conv_dw``, ``bn_dw``),
    squeeze-and-excitation when ``se_ratio`` > 0 (``se``), a linear RepGhost module to ``out_chs`` (``ghost2``),
    plus the input (an empty ``shortcut``) or its projection."""

    def __init__(self, in_chs, mid_chs, out_chs, dw_kernel_size=3, stride=1, se_ratio=0.0, reparam=True):
        super().__init__()
        self._add_layers(lambda: RepGhostModule(in_chs, mid_chs, relu=True, reparam=reparam),
                         lambda: RepGhostModule(mid_chs, out_chs, relu=False, reparam=reparam),
                         in_chs, mid_chs, out_chs, dw_kernel_size, stride, se_ratio)


# (kernel, expansion, out channels, squeeze-and-excitation ratio, stride) of each block, grouped into stages
_REPGHOSTNET_CFGS = [
    [[3, 8, 16, 0, 1]],
    [[3, 24, 24, 0, 2]],
    [[3, 36, 24, 0, 1]],
    [[5, 36, 40, 0.25, 2]],
    [[5, 60, 40, 0.25, 1]],
    [[3, 120, 80, 0, 2]],
    [[3, 100, 80, 0, 1], [3, 120, 80, 0, 1], [3, 120, 80, 0, 1], [3, 240, 112, 0.25, 1], [3, 336, 112, 0.25, 1]],
    [[5, 336, 160, 0.25, 2]],
    [[5, 480, 160, 0, 1], [5, 480, 160, 0.25, 1], [5, 480, 160, 0, 1], [5, 480, 160, 0.25, 1]],
]


class RepGhostNet(GhostNetApi, nn.Module):
    """RepGhostNet: a 3x3 stride-2 stem (``conv_stem``, ``bn1``, ``act1``), stages of RepGhost bottlenecks from
    ``cfgs`` (widths times ``width``, rounded to multiples of 4) and a 1x1 ConvBnAct to twice the last expansion
    width (``blocks``), then global pooling, a 1x1 convolution to 1280 channels with ReLU (``conv_head``,
    ``act2``), dropout and the linear ``classifier``.

    ``reparam`` gives the ghost modules their BatchNorm branch (the training form that ``convert_to_deploy``
    folds). ``num_features`` is the pooled width, ``head_hidden_size`` 1280; ``num_classes=0`` leaves the
    pre-logits. Pooling must keep the width (not 'catavgmax').
    """

    default_cfg = {"first_conv": "conv_stem", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet
    arch_name = "RepGhostNet"

    def __init__(self, cfgs, num_classes=1000, width=1.0, in_chans=3, output_stride=32, global_pool="avg",
                 drop_rate=0.2, reparam=True):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"RepGhostNet supports only output_stride=32 (no dilation), got {output_stride}")
        self.cfgs = cfgs
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.feature_info = []
        stem_chs = self._add_stem(in_chans, width)
        stages, prev_chs, last_exp = self._make_stages(cfgs, stem_chs, width, reparam)
        out_chs = _make_divisible(last_exp * width * 2, 4)
        stages.append(nn.Sequential(ConvBnAct(prev_chs, out_chs, 1, act_layer=partial(nn.ReLU, inplace=True))))
        self.pool_dim = out_chs
        self.blocks = nn.Sequential(*stages)
        self.stage_ends = [-1] + [int(info["module"].split(".")[-1]) for info in self.feature_info[1:]]
        self._add_head(out_chs, global_pool, num_classes)

    def _make_stages(self, cfgs, prev_chs, width, reparam):
        """The bottleneck stages, appending a feature tap at the end of each strided stage; returns them, their
        output width and the last block's (unscaled) expansion width."""
        stages = []
        net_stride = 2
        for stage_idx, cfg in enumerate(cfgs):
            layers = []
            stride = 1
            for kernel_size, exp_size, chs, se_ratio, stride in cfg:
                out_chs = _make_divisible(chs * width, 4)
                mid_chs = _make_divisible(exp_size * width, 4)
                layers.append(RepGhostBottleneck(prev_chs, mid_chs, out_chs, kernel_size, stride, se_ratio=se_ratio,
                                                 reparam=reparam))
                prev_chs = out_chs
            if stride > 1:
                net_stride *= 2
                self.feature_info.append(dict(num_chs=prev_chs, reduction=net_stride, module=f"blocks.{stage_idx}"))
            stages.append(nn.Sequential(*layers))
        return stages, prev_chs, exp_size

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh final layer for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given; the
        1x1 head convolution stays."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = self._make_pool(global_pool)
            self.global_pool.train(self.training)
            self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
            self.flatten.train(self.training)
        if num_classes > 0:
            self.classifier = nn.Linear(self.head_hidden_size, num_classes).to(self.conv_stem.weight.dtype)
        else:
            self.classifier = nn.Identity()
        self.classifier.train(self.training)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps picked by ``indices`` (None: all, n: the last n, or a list; tap 0 is the stem
        convolution's output, the others the ends of the strided stages) and, unless ``intermediates_only``, the
        final map; ``stop_early`` skips the stages after the last tap picked (unless it is the last one).
        ``norm`` changes nothing: there is no final norm (timm's argument)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        taps = take_indices(len(self.stage_ends), indices)
        take = [self.stage_ends[i] + 1 for i in taps]
        last_stage = self.stage_ends[max(taps)]
        x = self.conv_stem(x)
        intermediates = [x] if 0 in take else []
        x = self.bn1(x)
        x = self.act1(x)
        stages = list(self.blocks)
        if stop_early and last_stage != self.stage_ends[-1]:
            stages = stages[:last_stage + 1]
        for position, stage in enumerate(stages, start=1):
            x = stage(x)
            if position in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop what no picked tap (``indices``) needs, as timm's: the stages after the last tap, and with them (or
        with ``prune_norm`` or ``prune_head``) the final 1x1 ConvBnAct stage and the head, the features then ending
        at the last tap kept (after the stem convolution alone, the stem's BatchNorm and ReLU go too). Returns
        the absolute tap indices."""
        taps = take_indices(len(self.stage_ends), indices)
        num_chs = self.feature_info[max(taps)]["num_chs"]
        last_stage = self.stage_ends[max(taps)]
        if not (prune_norm or prune_head or last_stage < self.stage_ends[-1]):
            return taps
        self.blocks = nn.Sequential(*list(self.blocks)[:last_stage + 1])
        if last_stage < 0:
            self.bn1 = nn.Identity()
            self.act1 = nn.Identity()
        self.num_features = self.head_hidden_size = num_chs
        self.conv_head = nn.Identity()
        self.act2 = nn.Identity()
        self.reset_classifier(0, "")
        return taps

    def convert_to_deploy(self):
        """Fold every RepGhost module's BatchNorm branch into its cheap convolution, in place, in module order as
        timm does; the model should then only be run in eval mode."""
        repghost_model_convert(self, do_copy=False)


def repghost_model_convert(model, save_path=None, do_copy=True):
    """``model`` (a copy of it unless ``do_copy`` is False) with every module that has ``switch_to_deploy`` switched
    to its inference form, its state_dict saved to ``save_path`` where given (timm's function of that name).
    Returns the converted model."""
    if do_copy:
        model = copy.deepcopy(model)
    for module in list(model.modules()):
        if hasattr(module, "switch_to_deploy"):
            module.switch_to_deploy()
    if save_path is not None:
        torch.save(model.state_dict(), save_path)
    return model


def _create_repghostnet(variant, width=1.0, pretrained=False, progress=True, **kwargs):
    """Build a registered variant with RepGhostNet's block table; ``features_only`` gives timm's five taps (the
    stem convolution and the end of each strided stage) unless ``out_indices`` says otherwise, under timm's
    flattened names (``blocks_1``...)."""
    return build_model(RepGhostNet, variant, pretrained, progress=progress, cfgs=_REPGHOSTNET_CFGS, width=width,
                       **kwargs)


@register_model
def repghostnet_050(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 0.5x."""
    return _create_repghostnet("repghostnet_050", width=0.5, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_058(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 0.58x."""
    return _create_repghostnet("repghostnet_058", width=0.58, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_080(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 0.8x."""
    return _create_repghostnet("repghostnet_080", width=0.8, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_100(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 1.0x."""
    return _create_repghostnet("repghostnet_100", width=1.0, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_111(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 1.11x."""
    return _create_repghostnet("repghostnet_111", width=1.11, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_130(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 1.3x."""
    return _create_repghostnet("repghostnet_130", width=1.3, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_150(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 1.5x."""
    return _create_repghostnet("repghostnet_150", width=1.5, pretrained=pretrained, progress=progress, **kwargs)


@register_model
def repghostnet_200(pretrained=False, progress=True, **kwargs):
    """RepGhostNet 2.0x."""
    return _create_repghostnet("repghostnet_200", width=2.0, pretrained=pretrained, progress=progress, **kwargs)
