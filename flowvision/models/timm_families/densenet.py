"""DenseNet as timm builds it (Huang, Liu, van der Maaten and Weinberger 2017, "Densely Connected Convolutional
Networks"), with the blur-pool anti-aliasing of Zhang 2019 ("Making Convolutional Networks Shift-Invariant Again"):
densenetblur121d, and densenet264d (DenseNet-264 with the deep stem, timm's variant without published weights).

DenseNet-BC: inside a dense block every layer (BatchNorm-ReLU, 1x1 bottleneck convolution, BatchNorm-ReLU, 3x3
convolution) sees the concatenation of the block's input and of every earlier layer's output, and adds
``growth_rate`` new channels; transitions between blocks halve the channels (1x1 convolution) and the resolution
(2x2 average pooling). timm's class adds a deep stem (three 3x3 convolutions instead of one 7x7) and anti-aliasing:
the stem's stride-2 max pooling becomes a stride-1 max pooling followed by a binomial blur subsampled by 2. Its
norms carry their activation (``BatchNormAct2d``), so there are no separate ReLU modules. Model names, module names,
``state_dict`` keys and (seeded) initialisation follow timm's ``densenet`` module, so its checkpoints load
directly; torchvision's DenseNets, which timm serves too, are ``flowvision.models.densenet``'s.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn
from engine.utils.checkpoint import checkpoint

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import BatchNormAct2d, BlurPool2d, create_classifier, get_act_layer

__all__ = []


def _norm_act_layer(norm_layer, act_layer):
    """The family's norm (timm's ``get_norm_act_layer``): 'batchnorm2d' (or ``nn.BatchNorm2d``) is BatchNorm with
    ``act_layer`` (a name or class) applied in place after it; another class is taken as a norm-and-activation layer
    and used as it is."""
    if norm_layer in ("batchnorm2d", nn.BatchNorm2d):
        return partial(BatchNormAct2d, act_layer=get_act_layer(act_layer), inplace=True)
    if isinstance(norm_layer, str):
        raise ValueError(f"unknown norm_layer '{norm_layer}': expected 'batchnorm2d' or a class")
    return norm_layer


class DenseLayer(nn.Module):
    """One layer of a dense block: the concatenated earlier maps through a norm (``norm1``) and a 1x1 bottleneck to
    ``bn_size * growth_rate`` channels (``conv1``), a norm (``norm2``) and a 3x3 convolution to ``growth_rate``
    channels (``conv2``), then dropout ``drop_rate`` in training.

    With ``grad_checkpointing`` the bottleneck, whose input grows with every layer, is recomputed in the backward
    pass instead of kept (DenseNet's memory-efficient mode), with the same results."""

    def __init__(self, num_input_features, growth_rate, bn_size, norm_layer, drop_rate=0.0,
                 grad_checkpointing=False):
        super().__init__()
        bottleneck_chs = bn_size * growth_rate
        self.norm1 = norm_layer(num_input_features)
        self.conv1 = nn.Conv2d(num_input_features, bottleneck_chs, kernel_size=1, stride=1, bias=False)
        self.norm2 = norm_layer(bottleneck_chs)
        self.conv2 = nn.Conv2d(bottleneck_chs, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.grad_checkpointing = grad_checkpointing

    def bottleneck(self, *features):
        """The 1x1 bottleneck of the earlier maps, concatenated along the channels."""
        return self.conv1(self.norm1(torch.cat(features, 1)))

    def forward(self, features):
        """``features``: the earlier maps (a list) or one map; returns the ``growth_rate`` new channels."""
        features = [features] if isinstance(features, torch.Tensor) else features
        if self.grad_checkpointing and any(f.requires_grad for f in features):
            x = checkpoint(self.bottleneck, *features, use_reentrant=False)
        else:
            x = self.bottleneck(*features)
        x = self.conv2(self.norm2(x))
        if self.drop_rate > 0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x


class DenseBlock(nn.ModuleDict):
    """``num_layers`` dense layers (``denselayer1``...), the i-th taking ``num_input_features + (i - 1) *
    growth_rate`` channels; the output concatenates the block's input and every layer's new channels."""

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, norm_layer, drop_rate=0.0,
                 grad_checkpointing=False):
        super().__init__()
        for i in range(num_layers):
            layer = DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size, norm_layer, drop_rate,
                               grad_checkpointing)
            self.add_module(f"denselayer{i + 1}", layer)

    def forward(self, x):
        features = [x]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class DenseTransition(nn.Sequential):
    """Between two dense blocks: a norm (``norm``), a 1x1 convolution to ``num_output_features`` channels
    (``conv``) and the halving of the resolution (``pool``): 2x2 average pooling, or ``aa_layer`` (an
    anti-aliasing class such as ``BlurPool2d``) where given."""

    def __init__(self, num_input_features, num_output_features, norm_layer, aa_layer=None):
        super().__init__()
        self.add_module("norm", norm_layer(num_input_features))
        self.add_module("conv", nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1,
                                          bias=False))
        if aa_layer is not None:
            self.add_module("pool", aa_layer(num_output_features, stride=2))
        else:
            self.add_module("pool", nn.AvgPool2d(kernel_size=2, stride=2))


def _stem(in_chans, num_init_features, growth_rate, stem_type, norm_layer, aa_layer):
    """The stem layers, named as timm's (``conv0``, ``norm0``...): a 7x7 stride-2 convolution, or with a 'deep'
    ``stem_type`` three 3x3 convolutions (the first with stride 2; 'deep_tiered' narrows the first two to 3/4 and
    6/4 of ``growth_rate``, 'deep_tiered_narrow' the second to ``num_init_features``), each with its norm; then a
    3x3 stride-2 max pooling (``pool0``), or a stride-1 one and ``aa_layer`` subsampling by 2."""
    if aa_layer is None:
        stem_pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
    else:
        stem_pool = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1),
                                  aa_layer(channels=num_init_features, stride=2))
    if "deep" not in stem_type:
        return [("conv0", nn.Conv2d(in_chans, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
                ("norm0", norm_layer(num_init_features)),
                ("pool0", stem_pool)]
    stem_chs_1 = stem_chs_2 = growth_rate
    if "tiered" in stem_type:
        stem_chs_1 = 3 * (growth_rate // 4)
        stem_chs_2 = num_init_features if "narrow" in stem_type else 6 * (growth_rate // 4)
    return [("conv0", nn.Conv2d(in_chans, stem_chs_1, 3, stride=2, padding=1, bias=False)),
            ("norm0", norm_layer(stem_chs_1)),
            ("conv1", nn.Conv2d(stem_chs_1, stem_chs_2, 3, stride=1, padding=1, bias=False)),
            ("norm1", norm_layer(stem_chs_2)),
            ("conv2", nn.Conv2d(stem_chs_2, num_init_features, 3, stride=1, padding=1, bias=False)),
            ("norm2", norm_layer(num_init_features)),
            ("pool0", stem_pool)]


class DenseNet(nn.Module):
    """timm's DenseNet-BC: one sequence ``features`` (the stem, dense blocks ``denseblock1``... with transitions
    ``transition1``... between them, and a final norm ``norm5``), then global pooling (``global_pool``), dropout
    (``head_drop``) and the classifier (``classifier``).

    The stem gives ``2 * growth_rate`` channels; block i has ``block_config[i]`` layers with ``bn_size *
    growth_rate`` bottleneck channels. ``stem_type``: '' (7x7), 'deep', 'deep_tiered' or 'deep_tiered_narrow' (see
    ``_stem``). ``aa_layer`` (a class such as ``BlurPool2d``) anti-aliases the stem's pooling, and the transitions'
    too unless ``aa_stem_only``. ``act_layer`` follows every norm ('relu' or a class), ``norm_layer`` is
    'batchnorm2d' or a norm-and-activation class. ``drop_rate`` is the dropout before the classifier,
    ``proj_drop_rate`` that of each dense layer's new channels; ``memory_efficient`` recomputes the bottlenecks in
    the backward pass (see ``set_grad_checkpointing``). ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or ''.
    """

    default_cfg = {"first_conv": "features.conv0", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_classes=1000, in_chans=3,
                 global_pool="avg", bn_size=4, stem_type="", act_layer="relu", norm_layer="batchnorm2d",
                 aa_layer=None, drop_rate=0.0, proj_drop_rate=0.0, memory_efficient=False, aa_stem_only=True):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        norm_layer = _norm_act_layer(norm_layer, act_layer)
        num_features = 2 * growth_rate
        self.features = nn.Sequential(OrderedDict(_stem(in_chans, num_features, growth_rate, stem_type, norm_layer,
                                                        aa_layer)))
        stem_norm = "norm2" if "deep" in stem_type else "norm0"
        self.feature_info = [dict(num_chs=num_features, reduction=2, module=f"features.{stem_norm}")]
        reduction = 4
        for i, num_layers in enumerate(block_config):
            block = DenseBlock(num_layers, num_features, bn_size, growth_rate, norm_layer, proj_drop_rate,
                               memory_efficient)
            self.features.add_module(f"denseblock{i + 1}", block)
            num_features += num_layers * growth_rate
            if i == len(block_config) - 1:
                break
            self.feature_info.append(dict(num_chs=num_features, reduction=reduction,
                                          module=f"features.denseblock{i + 1}"))
            reduction *= 2
            transition = DenseTransition(num_features, num_features // 2, norm_layer,
                                         None if aa_stem_only else aa_layer)
            self.features.add_module(f"transition{i + 1}", transition)
            num_features //= 2
        self.features.add_module("norm5", norm_layer(num_features))
        self.feature_info.append(dict(num_chs=num_features, reduction=reduction, module="features.norm5"))
        names = [name for name, _ in self.features.named_children()]
        self.feature_ends = [names.index(info["module"].split(".", 1)[1]) for info in self.feature_info]
        self.num_features = num_features
        self.global_pool, classifier = create_classifier(num_features, num_classes, global_pool)
        self.head_hidden_size = num_features * self.global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.classifier = classifier
        self._init_weights()

    def _init_weights(self):
        """The original DenseNet init, timm's: He-normal (fan-in) convolutions, BatchNorms at the identity, zero
        classifier bias (its weight keeps the default draw)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)
            elif isinstance(module, nn.Linear):
                nn.init.constant_(module.bias, 0)

    def set_grad_checkpointing(self, enable=True):
        """Recompute (``enable``) or keep every dense layer's bottleneck for the backward pass."""
        for module in self.features.modules():
            if isinstance(module, DenseLayer):
                module.grad_checkpointing = enable

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool``
        if given; the new layers take the model's training mode."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.classifier = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.classifier.train(self.training)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the feature taps picked by ``indices`` (None: all, n: the last n, or a list): 0 the stem's
        last norm (before its pooling), 1-3 the first three dense blocks (before their transitions), 4 the final
        norm; and, unless ``intermediates_only``, the last output. ``stop_early`` skips the layers after the last tap
        picked; ``norm`` changes nothing, the last tap being the final norm's output already (timm's argument)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.feature_ends), indices)
        layers = self.features[:self.feature_ends[max(take)] + 1] if stop_early else self.features
        intermediates = []
        tap = 0
        for i, layer in enumerate(layers):
            x = layer(x)
            if i in self.feature_ends:
                if tap in take:
                    intermediates.append(x)
                tap += 1
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the layers after the last tap ``indices`` picks (see ``forward_intermediates``) and, with
        ``prune_head`` or when layers go, the pooling and classifier; ``prune_norm`` changes nothing (the final norm
        is a tap). Returns the absolute indices."""
        take = take_indices(len(self.feature_ends), indices)
        last = max(take)
        prune_end = last < len(self.feature_ends) - 1
        self.features = self.features[:self.feature_ends[last] + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The map after the final norm and its activation (N, num_features, H / 32, W / 32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Pooling and dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_densenet(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's five taps (strides 2 to 32) unless ``out_indices`` says otherwise, under timm's
    flattened names (``features_norm2``, ``features_denseblock1``...)."""
    return build_model(DenseNet, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def densenetblur121d(pretrained=False, progress=True, **kwargs):
    """DenseNet-121 (k=32, blocks of 6, 12, 24, 16 layers) with a deep 3x3 stem and a blurred stem pooling."""
    return _create_densenet("densenetblur121d", pretrained, progress, kwargs, growth_rate=32,
                            block_config=(6, 12, 24, 16), stem_type="deep", aa_layer=BlurPool2d)


@register_model
def densenet264d(pretrained=False, progress=True, **kwargs):
    """DenseNet-264 (k=48, blocks of 6, 12, 64, 48 layers) with a deep 3x3 stem."""
    return _create_densenet("densenet264d", pretrained, progress, kwargs, growth_rate=48,
                            block_config=(6, 12, 64, 48), stem_type="deep")
