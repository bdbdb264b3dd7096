"""Dual Path Networks (Chen et al. 2017, "Dual Path Networks"): dpn68, dpn68b, dpn92, dpn98, dpn107 and dpn131, and
dpn48b (timm's variant without published weights, its stem and final norm activated by SiLU).

Each block has a residual path, whose new features are added to its input's (as in ResNeXt), and a densely
connected path, whose new features are concatenated to its input's (as in DenseNet); the two travel together as
one tensor, the residual channels first. Blocks are pre-activation (BatchNorm and ReLU before each convolution):
a 1x1 reduction, a grouped 3x3 convolution and a 1x1 expansion that gives both paths' new channels; the first
block of a stage projects its input to the stage's residual width plus twice its dense increment (with stride 2
after the first stage). The ``b`` variant expands with two separate 1x1 convolutions after a shared BatchNorm.
The classifier is a 1x1 convolution over the pooled map. Model names, module names, ``state_dict`` keys and
(PyTorch's default) initialisation follow timm's ``dpn`` module, so its checkpoints (most ported from the MXNet
originals) load directly.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._conv import get_padding
from ._layers import BatchNormAct2d, ConvNormAct, SelectAdaptivePool2d, get_act_layer

__all__ = []

_EPS = 1e-3  # BatchNorm's epsilon in the MXNet originals


class BnAct(nn.Module):
    """BatchNorm and activation alone (``bn``), wrapped so that the keys of the checkpoints keep their ``.bn``."""

    def __init__(self, in_chs, act_layer=nn.ReLU, inplace=True):
        super().__init__()
        self.bn = BatchNormAct2d(in_chs, _EPS, act_layer, inplace=inplace)

    def forward(self, x):
        return self.bn(x)


class BnActConv2d(nn.Module):
    """A pre-activation convolution: BatchNorm and activation (``bn``), then a bias-free convolution (``conv``)."""

    def __init__(self, in_chs, out_chs, kernel_size, stride, groups=1, act_layer=nn.ReLU):
        super().__init__()
        self.bn = BatchNormAct2d(in_chs, _EPS, act_layer, inplace=True)
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=get_padding(kernel_size, stride),
                              groups=groups, bias=False)

    def forward(self, x):
        x = self.bn(x)
        x = self.conv(x)
        return x


class DualPathBlock(nn.Module):
    """One dual path block over a tensor of ``num_1x1_c`` residual channels followed by the dense channels.

    ``c1x1_a`` reduces to ``num_1x1_a``, ``c3x3_b`` convolves in ``groups`` (strided in a 'down' block), and
    ``c1x1_c`` expands to ``num_1x1_c`` new residual channels plus ``inc`` new dense channels (with ``b``: a shared
    BatchNorm and ReLU, then ``c1x1_c1`` and ``c1x1_c2``). A stage's first block ('proj', or 'down' with stride 2)
    first projects its input to ``num_1x1_c + 2 * inc`` channels (``c1x1_w_s1`` or ``c1x1_w_s2``, the names timm's
    checkpoints use). The output is the residual sum, the input's dense channels and the new dense channels.
    """

    def __init__(self, in_chs, num_1x1_a, num_3x3_b, num_1x1_c, inc, groups, block_type="normal", b=False,
                 act_layer=nn.ReLU):
        super().__init__()
        if block_type not in ("proj", "down", "normal"):
            raise ValueError(f"unknown block_type '{block_type}': expected 'proj', 'down' or 'normal'")
        self.num_1x1_c = num_1x1_c
        self.inc = inc
        self.b = b
        self.key_stride = 2 if block_type == "down" else 1
        self.has_proj = block_type != "normal"
        projection = None
        if self.has_proj:
            projection = BnActConv2d(in_chs, num_1x1_c + 2 * inc, kernel_size=1, stride=self.key_stride,
                                     act_layer=act_layer)
        self.c1x1_w_s1 = projection if self.key_stride == 1 else None
        self.c1x1_w_s2 = projection if self.key_stride == 2 else None
        self.c1x1_a = BnActConv2d(in_chs, num_1x1_a, kernel_size=1, stride=1, act_layer=act_layer)
        self.c3x3_b = BnActConv2d(num_1x1_a, num_3x3_b, kernel_size=3, stride=self.key_stride, groups=groups,
                                  act_layer=act_layer)
        if b:
            self.c1x1_c = BnAct(num_3x3_b, act_layer=act_layer)
            self.c1x1_c1 = nn.Conv2d(num_3x3_b, num_1x1_c, kernel_size=1, bias=False)
            self.c1x1_c2 = nn.Conv2d(num_3x3_b, inc, kernel_size=1, bias=False)
        else:
            self.c1x1_c = BnActConv2d(num_3x3_b, num_1x1_c + inc, kernel_size=1, stride=1, act_layer=act_layer)
            self.c1x1_c1 = None
            self.c1x1_c2 = None

    def forward(self, x):
        if self.c1x1_w_s1 is not None:
            shortcut = self.c1x1_w_s1(x)
        elif self.c1x1_w_s2 is not None:
            shortcut = self.c1x1_w_s2(x)
        else:
            shortcut = x
        residual = shortcut[:, :self.num_1x1_c]
        dense = shortcut[:, self.num_1x1_c:]
        x = self.c1x1_a(x)
        x = self.c3x3_b(x)
        x = self.c1x1_c(x)
        if self.b:
            new_residual = self.c1x1_c1(x)
            new_dense = self.c1x1_c2(x)
        else:
            new_residual = x[:, :self.num_1x1_c]
            new_dense = x[:, self.num_1x1_c:]
        return torch.cat([residual + new_residual, dense, new_dense], 1)


class DPN(nn.Module):
    """The stem (``conv1_1``: a strided 7x7 convolution, 3x3 in the ``small`` models, and ``conv1_pool``, a strided
    max pool), four stages of ``k_sec[i]`` dual path blocks (``conv{i + 2}_{j}``) and the final BatchNorm and
    activation (``conv5_bn_ac``), all in the flat Sequential ``features``; then global pooling, dropout
    (``drop_rate``), the 1x1-convolution ``classifier`` and flattening.

    Stage i's residual width is ``64 * 2 ** i`` (times 4 unless ``small``), its bottleneck width ``k_r * 2 ** i``
    in ``groups`` groups, and each block adds ``inc_sec[i]`` dense channels. ``act_layer`` (a class or timm's name,
    such as 'silu') is the activation of the stem and of the final norm, as in timm, whose dual path blocks keep
    ReLU whatever it is (timm's ``fc_act_layer`` has no effect either, so it is not taken). ``b`` selects the split
    expansion; ``global_pool=''`` leaves the map unpooled (the classifier then gives a class map); ``num_classes=0``
    gives the pooled features.
    """

    feature_wrapper = FlatFeatureListNet  # timm's features_only weight names

    default_cfg = {"first_conv": "features.conv1_1.conv", "classifier": "classifier"}

    def __init__(self, k_sec=(3, 4, 20, 3), inc_sec=(16, 32, 24, 128), k_r=96, groups=32, num_classes=1000,
                 in_chans=3, output_stride=32, global_pool="avg", small=False, num_init_features=64, b=False,
                 drop_rate=0.0, act_layer=nn.ReLU):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"DPN has a fixed output stride of 32, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.b = b
        act_layer = get_act_layer(act_layer)
        bw_factor = 1 if small else 4
        blocks = OrderedDict()
        blocks["conv1_1"] = ConvNormAct(in_chans, num_init_features, kernel_size=3 if small else 7, stride=2,
                                        norm_layer=partial(BatchNormAct2d, eps=_EPS, inplace=True), act_layer=act_layer)
        blocks["conv1_pool"] = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.feature_info = [dict(num_chs=num_init_features, reduction=2, module="features.conv1_1")]
        in_chs = num_init_features
        for i, (bw_base, depth, inc) in enumerate(zip((64, 128, 256, 512), k_sec, inc_sec)):
            bw = bw_base * bw_factor
            r = k_r * bw_base // 64
            name = f"conv{i + 2}"
            block_type = "proj" if i == 0 else "down"
            blocks[f"{name}_1"] = DualPathBlock(in_chs, r, r, bw, inc, groups, block_type, b)
            in_chs = bw + 3 * inc
            for j in range(2, depth + 1):
                blocks[f"{name}_{j}"] = DualPathBlock(in_chs, r, r, bw, inc, groups, "normal", b)
                in_chs += inc
            self.feature_info.append(dict(num_chs=in_chs, reduction=4 * 2 ** i, module=f"features.{name}_{depth}"))
        blocks["conv5_bn_ac"] = BnAct(in_chs, act_layer=act_layer, inplace=False)
        self.features = nn.Sequential(blocks)
        self.num_features = in_chs
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.classifier = self._make_classifier(num_classes)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()

    def _make_classifier(self, num_classes):
        """The 1x1-convolution classifier over the pooled features, an identity for ``num_classes=0``."""
        return nn.Conv2d(self.head_hidden_size, num_classes, 1, bias=True) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The 1x1-convolution classifier."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after new pooling ``global_pool`` if
        given."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.classifier = self._make_classifier(num_classes)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        for module in (self.global_pool, self.classifier, self.flatten):
            module.train(self.training)

    def forward_features(self, x):
        """The map after the final BatchNorm and activation (N, num_features, H / 32, W / 32)."""
        return self.features(x)

    def _feature_ends(self):
        """The positions in ``features`` of the five feature taps (timm's ``feature_ends``): the stem's convolution
        (0), then each stage's last block, behind the stem's convolution and pool and the blocks before it; a
        stage's depth is read off its tap's name, ``features.conv{stage}_{depth}``. Derived from ``feature_info``,
        so they stay the full model's after pruning, as timm's."""
        ends = [0]
        position = 1
        for info in self.feature_info[1:]:
            position += int(info["module"].rsplit("_", 1)[1])
            ends.append(position)
        return ends

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps picked by ``indices`` (None: all, n: the last n, or a list; 0 is the stem's convolution,
        1-4 the stages' last blocks) and, unless ``intermediates_only``, the final map. ``norm`` passes the last
        stage's tap through the final BatchNorm and activation (``conv5_bn_ac``, where pruning left it);
        ``stop_early`` stops after the last tap picked, the final norm then still applied to the output when that
        tap is the last stage's, as timm's."""
        ends = self._feature_ends()
        take, run_ends = intermediate_stages(ends, indices, stop_early, output_fmt)
        layers = list(self.features)
        if stop_early:
            layers = layers[:run_ends[-1] + 1]
        last_tap = len(ends) - 1
        norm_position = ends[-1] + 1
        has_norm = len(self.features) > norm_position
        intermediates = []
        tap = 0
        for position, layer in enumerate(layers):
            x = layer(x)
            if position == ends[tap]:
                if tap in take:
                    normed = norm and has_norm and tap == last_tap
                    intermediates.append(self.features[norm_position](x) if normed else x)
                tap = min(tap + 1, last_tap)
        if intermediates_only:
            return intermediates
        if max(take) == last_tap and has_norm and len(layers) <= norm_position:
            x = self.features[norm_position](x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Cut ``features`` after the last tap ``indices`` picks; the final norm (``conv5_bn_ac``) stays only when
        the last stage is kept and not ``prune_norm``. When taps go, ``num_features`` and ``head_hidden_size``
        become the last kept tap's width and the head is reset to pooled features (as with ``prune_head``).
        Returns the absolute indices."""
        ends = self._feature_ends()
        take = take_indices(len(ends), indices)
        last = max(take)
        prune_end = last < len(ends) - 1
        keep = list(self.features.named_children())[:ends[last] + 1]
        if not prune_end and not prune_norm:
            keep.append(("conv5_bn_ac", self.features[-1]))
        self.features = nn.Sequential(OrderedDict(keep))
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout; then the classifier unless ``pre_logits``; flattened."""
        x = self.global_pool(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        if pre_logits:
            return self.flatten(x)
        x = self.classifier(x)
        return self.flatten(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_dpn(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant, its settings overridden by the caller's ``kwargs``."""
    return build_model(DPN, variant, pretrained, progress=progress, **dict(model_args, **kwargs))


@register_model
def dpn48b(pretrained=False, progress=True, **kwargs):
    """DPN-48b: the small stem and widths with the split 1x1 expansion, blocks 3-4-6-3, 32 groups, SiLU in the stem
    and the final norm."""
    return _create_dpn("dpn48b", pretrained, progress, kwargs, small=True, num_init_features=10, k_r=128, groups=32,
                       b=True, k_sec=(3, 4, 6, 3), inc_sec=(16, 32, 32, 64), act_layer="silu")


@register_model
def dpn68(pretrained=False, progress=True, **kwargs):
    """DPN-68: the small stem and widths, blocks 3-4-12-3, 32 groups."""
    return _create_dpn("dpn68", pretrained, progress, kwargs, small=True, num_init_features=10, k_r=128, groups=32,
                       k_sec=(3, 4, 12, 3), inc_sec=(16, 32, 32, 64))


@register_model
def dpn68b(pretrained=False, progress=True, **kwargs):
    """DPN-68b: DPN-68 with the split 1x1 expansion."""
    return _create_dpn("dpn68b", pretrained, progress, kwargs, small=True, num_init_features=10, k_r=128, groups=32,
                       b=True, k_sec=(3, 4, 12, 3), inc_sec=(16, 32, 32, 64))


@register_model
def dpn92(pretrained=False, progress=True, **kwargs):
    """DPN-92: blocks 3-4-20-3, bottleneck width 96 in 32 groups."""
    return _create_dpn("dpn92", pretrained, progress, kwargs, num_init_features=64, k_r=96, groups=32,
                       k_sec=(3, 4, 20, 3), inc_sec=(16, 32, 24, 128))


@register_model
def dpn98(pretrained=False, progress=True, **kwargs):
    """DPN-98: blocks 3-6-20-3, bottleneck width 160 in 40 groups."""
    return _create_dpn("dpn98", pretrained, progress, kwargs, num_init_features=96, k_r=160, groups=40,
                       k_sec=(3, 6, 20, 3), inc_sec=(16, 32, 32, 128))


@register_model
def dpn131(pretrained=False, progress=True, **kwargs):
    """DPN-131: blocks 4-8-28-3, bottleneck width 160 in 40 groups."""
    return _create_dpn("dpn131", pretrained, progress, kwargs, num_init_features=128, k_r=160, groups=40,
                       k_sec=(4, 8, 28, 3), inc_sec=(16, 32, 32, 128))


@register_model
def dpn107(pretrained=False, progress=True, **kwargs):
    """DPN-107: blocks 4-8-20-3, bottleneck width 200 in 50 groups."""
    return _create_dpn("dpn107", pretrained, progress, kwargs, num_init_features=128, k_r=200, groups=50,
                       k_sec=(4, 8, 20, 3), inc_sec=(20, 64, 64, 128))
