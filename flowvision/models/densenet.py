"""DenseNet-BC (Huang et al. 2016, "Densely Connected Convolutional Networks"): 121, 161, 169 and 201 layers.

Inside a dense block every layer sees the concatenation of all earlier feature maps and adds
``growth_rate`` new channels; transitions between blocks halve the channels and the resolution.
Module names, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly, including the published ones whose keys predate torchvision's layer names
(``denselayer1.norm.1.weight`` for ``denselayer1.norm1.weight``): they are renamed while loading.
The model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``features_only``,
``in_chans``) follows timm.
"""
import re
from collections import OrderedDict

import engine as torch
import engine.nn.functional as F
from engine import nn

from ._features import intermediate_stages, take_indices
from ._helpers import build_model
from .registry import register_model

__all__ = ["DenseNet"]

# a parameter or buffer key of a dense layer as written by the old (Lua-converted) checkpoints
_LEGACY_KEY = re.compile(r"^(norm|relu|conv)\.([12])\.(weight|bias|running_mean|running_var)$")


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv to ``bn_size * growth_rate`` channels, then BN-ReLU-3x3 conv to ``growth_rate``, dropout."""

    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rename the old checkpoints' ``norm.1.weight`` style keys to ``norm1.weight``."""
        for key in list(state_dict):
            match = _LEGACY_KEY.match(key[len(prefix):]) if key.startswith(prefix) else None
            if match:
                name, index, field = match.groups()
                state_dict[f"{prefix}{name}{index}.{field}"] = state_dict.pop(key)

    def forward(self, input):
        """``input``: the earlier feature maps (a list) or a single map; returns the ``growth_rate`` new channels."""
        prev_features = [input] if isinstance(input, torch.Tensor) else input
        concated_features = torch.cat(prev_features, 1)
        bottleneck_output = self.conv1(self.relu1(self.norm1(concated_features)))
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    """``num_layers`` dense layers; the output concatenates the input and every layer's new channels."""

    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate, bn_size=bn_size,
                                drop_rate=drop_rate)
            self.add_module(f"denselayer{i + 1}", layer)

    def forward(self, init_features):
        features = [init_features]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    """BN-ReLU-1x1 conv to ``num_output_features`` channels, then 2x2 average pooling."""

    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """A 7x7 stem with max pooling, four dense blocks with transitions between, a final norm, pooling, a linear layer.

    ``growth_rate`` (k in the paper) channels per layer, ``block_config`` layers per block,
    ``num_init_features`` stem channels, ``bn_size * k`` bottleneck channels, dropout ``drop_rate``
    after each layer. ``memory_efficient`` is accepted for torchvision compatibility: there it
    recomputes the bottlenecks in the backward pass to save memory; here the layers always keep them,
    with the same results. ``num_classes=0`` replaces the classifier with an identity.
    """

    default_cfg = {"first_conv": "features.conv0", "classifier": "classifier"}

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, drop_rate=0,
                 num_classes=1000, memory_efficient=False, in_chans=3):
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(in_chans, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        self.feature_info = [dict(num_chs=num_init_features, reduction=2, module="features.relu0")]
        num_features = num_init_features
        reduction = 4
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers=num_layers, num_input_features=num_features, bn_size=bn_size,
                                growth_rate=growth_rate, drop_rate=drop_rate)
            self.features.add_module(f"denseblock{i + 1}", block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.feature_info.append(dict(num_chs=num_features, reduction=reduction,
                                              module=f"features.denseblock{i + 1}"))
                trans = _Transition(num_input_features=num_features, num_output_features=num_features // 2)
                self.features.add_module(f"transition{i + 1}", trans)
                num_features = num_features // 2
                reduction *= 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.feature_info.append(dict(num_chs=num_features, reduction=reduction, module="features.norm5"))
        self.num_features = num_features
        self.head_hidden_size = self.num_features
        self.classifier = self._linear(num_classes)
        self._init_weights()

    def _init_weights(self):
        """Kaiming-normal (fan_in) convolutions, unit/zero norms, zero linear biases."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def _linear(self, num_classes):
        """The classifier (zero bias), or an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        linear = nn.Linear(self.num_features, num_classes)
        nn.init.constant_(linear.bias, 0)
        return linear

    def get_classifier(self):
        """The classification layer (an identity once ``prune_intermediate_layers`` took the head away, as timm's)."""
        return nn.Identity() if self.classifier is None else self.classifier

    def reset_classifier(self, num_classes):
        """Replace the classifier with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.classifier = self._linear(num_classes)

    def forward_features(self, x):
        """The feature map after the final norm, before its ReLU (N, num_features, H/32, W/32)."""
        return self.features(x)

    def _feature_ends(self):
        """The position in ``features`` of each ``feature_info`` stage's last module (past the end for a stage that
        ``prune_intermediate_layers`` removed)."""
        names = [name for name, _ in self.features.named_children()]
        modules = [info["module"].split(".", 1)[1] for info in self.feature_info]
        return [names.index(module) if module in names else len(names) for module in modules]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's DenseNet intermediates on torchvision's modules: the five ``feature_info`` stages, index 0 the stem's
        ReLU output (before ``pool0``), 1-3 the outputs of the first three dense blocks (before their transitions)
        and 4 the final norm's, through the ReLU that timm's ``norm5`` carries and torchvision's head applies (so
        the last map is timm's; ``forward_head`` applying the ReLU again changes nothing).

        ``indices``: None (all), n (the last n) or a list (negative from the end). Returns the picked maps and,
        unless ``intermediates_only``, the last map computed (after that ReLU when ``norm5`` ran). ``stop_early``
        stops at the last stage picked. ``norm`` changes nothing: the final norm is itself a stage, as in timm.
        Only ``output_fmt='NCHW'``.
        """
        ends = self._feature_ends()
        take, _ = intermediate_stages(ends, indices, stop_early, output_fmt)
        take_ends = [ends[i] for i in take]
        last = ends[max(take)] if stop_early else len(self.features) - 1
        intermediates = []
        for i, layer in enumerate(list(self.features)[:last + 1]):
            x = layer(x)
            if i == ends[-1]:
                x = F.relu(x)
            if i in take_ends:
                intermediates.append(x)
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what ``forward_intermediates(indices=indices)`` needs, as timm's DenseNet does: ``features`` cut after
        the last stage picked, and then ``num_features`` / ``head_hidden_size`` that stage's channels. With
        ``prune_head``, or when layers go, the head goes too: ``forward_head`` then returns the map as it is (timm's
        classifier and pooling reset to none) until ``reset_classifier`` builds a new one. ``prune_norm`` changes
        nothing (the final norm is a stage). Returns the absolute indices kept."""
        ends = self._feature_ends()
        take = take_indices(len(ends), indices)
        last = max(take)
        self.features = self.features[:ends[last] + 1]
        prune_end = last < len(ends) - 1
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.num_classes = 0
            self.classifier = None
        return take

    def forward_head(self, x, pre_logits=False):
        """ReLU, global average pool and flatten, then the classifier unless ``pre_logits``; the map as it is when
        ``prune_intermediate_layers`` took the head away."""
        if self.classifier is None:
            return x
        x = F.relu(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_densenet(variant, growth_rate, block_config, num_init_features, pretrained, progress, **kwargs):
    """Build a registered DenseNet variant."""
    return build_model(DenseNet, variant, pretrained, progress=progress, growth_rate=growth_rate,
                       block_config=block_config, num_init_features=num_init_features, **kwargs)


@register_model
def densenet121(pretrained=False, progress=True, **kwargs):
    """DenseNet-121 (k=32, blocks of 6, 12, 24, 16 layers)."""
    return _create_densenet("densenet121", 32, (6, 12, 24, 16), 64, pretrained, progress, **kwargs)


@register_model
def densenet161(pretrained=False, progress=True, **kwargs):
    """DenseNet-161 (k=48, blocks of 6, 12, 36, 24 layers, 96 stem channels)."""
    return _create_densenet("densenet161", 48, (6, 12, 36, 24), 96, pretrained, progress, **kwargs)


@register_model
def densenet169(pretrained=False, progress=True, **kwargs):
    """DenseNet-169 (k=32, blocks of 6, 12, 32, 32 layers)."""
    return _create_densenet("densenet169", 32, (6, 12, 32, 32), 64, pretrained, progress, **kwargs)


@register_model
def densenet201(pretrained=False, progress=True, **kwargs):
    """DenseNet-201 (k=32, blocks of 6, 12, 48, 32 layers)."""
    return _create_densenet("densenet201", 32, (6, 12, 48, 32), 64, pretrained, progress, **kwargs)
