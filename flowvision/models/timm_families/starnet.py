"""StarNet (Ma et al. 2024, "Rewrite the Stars"): starnet_s1, starnet_s2, starnet_s3 and starnet_s4, and the
smaller starnet_s050, starnet_s100 and starnet_s150 (no published weights: built to train from scratch).

A deliberately plain convolutional network built to show what the "star operation", the element-wise product of
two linear branches, brings: it maps its input implicitly into a very high-dimensional space of feature products,
as a polynomial kernel would, at the cost of one multiplication. A 3x3 stride-2 stem and four stages, each opening
with a 3x3 stride-2 convolution that doubles the width; a block is a 7x7 depthwise convolution, two 1x1 expansions
(one through ReLU6) multiplied together, a 1x1 projection back and a second 7x7 depthwise convolution, added to
its input. No layer scale, no attention. Model names, module names, ``state_dict`` keys and (seeded)
initialisation follow timm's ``starnet`` module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d, drop_path_module, trunc_normal_

__all__ = []


class ConvBN(nn.Sequential):
    """A convolution (``conv``), followed by a BatchNorm (``bn``) when ``with_bn``: StarNet's only layer pair,
    kept as a Sequential so that its keys are timm's (``f1.conv.weight``, ``g.bn.running_mean``)."""

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=0, groups=1, with_bn=True):
        super().__init__()
        self.add_module("conv", nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                          groups=groups))
        if with_bn:
            self.add_module("bn", nn.BatchNorm2d(out_channels))


class Block(nn.Module):
    """StarNet's block: a 7x7 depthwise convolution with BatchNorm (``dwconv``); two 1x1 expansions to
    ``mlp_ratio`` times the width (``f1``, ``f2``) whose product, ``act(f1) * f2``, is the star operation; a 1x1
    projection back with BatchNorm (``g``) and a plain 7x7 depthwise convolution (``dwconv2``), added to the input
    after stochastic depth (``drop_path``)."""

    def __init__(self, dim, mlp_ratio=3, drop_path=0.0, act_layer=nn.ReLU6):
        super().__init__()
        hidden = mlp_ratio * dim
        self.dwconv = ConvBN(dim, dim, 7, 1, 3, groups=dim, with_bn=True)
        self.f1 = ConvBN(dim, hidden, 1, with_bn=False)
        self.f2 = ConvBN(dim, hidden, 1, with_bn=False)
        self.g = ConvBN(hidden, dim, 1, with_bn=True)
        self.dwconv2 = ConvBN(dim, dim, 7, 1, 3, groups=dim, with_bn=False)
        self.act = act_layer()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = self.act(self.f1(x)) * self.f2(x)
        x = self.dwconv2(self.g(x))
        return shortcut + self.drop_path(x)


class StarNet(nn.Module):
    """StarNet: a 3x3 stride-2 convolution to 32 channels with BatchNorm and ``act_layer`` (``stem``), four stages
    (``stages``: a 3x3 stride-2 ConvBN to ``base_dim * 2**i`` channels, then ``depths[i]`` blocks), a final
    BatchNorm (``norm``), global pooling (``global_pool``, ``flatten``), dropout and the classifier (``head``).

    ``drop_path_rate`` is the last block's stochastic depth, rising linearly from 0 at the first; ``drop_rate``
    the dropout before the classifier. ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or '' (no pooling: the
    classifier then needs ``num_classes=0``). Only ``output_stride=32`` exists, as in timm.
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, base_dim=32, depths=(3, 3, 12, 5), mlp_ratio=4, drop_rate=0.0, drop_path_rate=0.0,
                 act_layer=nn.ReLU6, num_classes=1000, in_chans=3, global_pool="avg", output_stride=32):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"StarNet only has output_stride 32, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.feature_info = []
        stem_chs = 32
        self.stem = nn.Sequential(ConvBN(in_chans, stem_chs, kernel_size=3, stride=2, padding=1), act_layer())
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        stages = []
        prev_chs = stem_chs
        first_block = 0
        for stage_idx, depth in enumerate(depths):
            dim = base_dim * 2 ** stage_idx
            downsample = ConvBN(prev_chs, dim, 3, stride=2, padding=1)
            blocks = [Block(dim, mlp_ratio, rates[first_block + i], act_layer) for i in range(depth)]
            stages.append(nn.Sequential(downsample, *blocks))
            first_block += depth
            prev_chs = dim
            self.feature_info.append(dict(num_chs=dim, reduction=2 ** (stage_idx + 2), module=f"stages.{stage_idx}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = prev_chs
        self.norm = nn.BatchNorm2d(self.num_features)
        self._set_classifier(num_classes, global_pool)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """timm's scheme: truncated-normal weights (std 0.02) for convolutions and linear layers, zero linear biases
        (convolution biases keep their default draws); BatchNorms start at the identity."""
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            trunc_normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def _set_classifier(self, num_classes, global_pool):
        """The pooling ``global_pool`` (flattened unless there is none) and a fresh ``head`` on its width."""
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self._set_head(num_classes)

    def _set_head(self, num_classes):
        """A fresh linear classifier for ``num_classes`` (0: an identity) on the pooled width."""
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool``
        if given; the new layers take the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = SelectAdaptivePool2d(global_pool, flatten=False).train(self.training)
            self.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.training)
        self._set_head(num_classes)
        self.head.train(self.training)

    def forward_features(self, x):
        """The normalised last-stage map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, flattening and dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the final map, normalised if the last stage ran. ``norm`` applies the final norm to
        the last stage's output; ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        last = len(self.stages) - 1
        x = self.stem(x)
        intermediates = []
        stage_idx = 0
        for stage_idx, stage in enumerate(stages):
            x = stage(x)
            if stage_idx in take:
                intermediates.append(self.norm(x) if norm and stage_idx == last else x)
        if intermediates_only:
            return intermediates
        if stage_idx == last:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (and the final norm when asked or when stages go,
        the pooling and classifier when asked or when stages go); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_starnet(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise, under
    timm's flattened names (``stem_0``, ``stages_2``...)."""
    return build_model(StarNet, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def starnet_s1(pretrained=False, progress=True, **kwargs):
    """StarNet-S1: base width 24, depths (2, 2, 8, 3)."""
    return _create_starnet("starnet_s1", pretrained, progress, kwargs, base_dim=24, depths=[2, 2, 8, 3])


@register_model
def starnet_s2(pretrained=False, progress=True, **kwargs):
    """StarNet-S2: base width 32, depths (1, 2, 6, 2)."""
    return _create_starnet("starnet_s2", pretrained, progress, kwargs, base_dim=32, depths=[1, 2, 6, 2])


@register_model
def starnet_s3(pretrained=False, progress=True, **kwargs):
    """StarNet-S3: base width 32, depths (2, 2, 8, 4)."""
    return _create_starnet("starnet_s3", pretrained, progress, kwargs, base_dim=32, depths=[2, 2, 8, 4])


@register_model
def starnet_s4(pretrained=False, progress=True, **kwargs):
    """StarNet-S4: base width 32, depths (3, 3, 12, 5)."""
    return _create_starnet("starnet_s4", pretrained, progress, kwargs, base_dim=32, depths=[3, 3, 12, 5])


@register_model
def starnet_s050(pretrained=False, progress=True, **kwargs):
    """StarNet-S050: base width 16, depths (1, 1, 3, 1), MLP ratio 3."""
    return _create_starnet("starnet_s050", pretrained, progress, kwargs, base_dim=16, depths=[1, 1, 3, 1],
                           mlp_ratio=3)


@register_model
def starnet_s100(pretrained=False, progress=True, **kwargs):
    """StarNet-S100: base width 20, depths (1, 2, 4, 1), MLP ratio 4."""
    return _create_starnet("starnet_s100", pretrained, progress, kwargs, base_dim=20, depths=[1, 2, 4, 1],
                           mlp_ratio=4)


@register_model
def starnet_s150(pretrained=False, progress=True, **kwargs):
    """StarNet-S150: base width 24, depths (1, 2, 4, 2), MLP ratio 3."""
    return _create_starnet("starnet_s150", pretrained, progress, kwargs, base_dim=24, depths=[1, 2, 4, 2],
                           mlp_ratio=3)
