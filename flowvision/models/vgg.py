"""VGG (Simonyan & Zisserman 2014, "Very Deep Convolutional Networks for Large-Scale Image Recognition").

Configurations A, B, D and E (VGG-11/13/16/19), with or without batch norm. Module names,
state_dict keys and initialisation follow torchvision, so its checkpoints load directly; the
model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``) follows timm.
"""
import engine as torch
from engine import nn

from ._features import intermediate_stages, sequential_feature_info, take_indices
from ._helpers import build_model
from ._utils import linear_or_identity
from .registry import register_model

__all__ = ["VGG", "make_layers"]

# output channels of each 3x3 conv; "M" is a 2x2 max pool
cfgs = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def make_layers(cfg, batch_norm=False, in_chans=3):
    """The convolutional trunk of a configuration: 3x3 convs (each with optional BN) and ReLU, max pools between."""
    layers = []
    in_channels = in_chans
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(in_channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    """A convolutional trunk, adaptive pooling to 7x7 and three fully connected layers with dropout.

    ``num_classes=0`` replaces the last linear layer with an identity (the 4096 pre-logits).
    """

    default_cfg = {"first_conv": "features.0", "classifier": "classifier.6"}

    def __init__(self, features, num_classes=1000, init_weights=True, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        self.num_features = 4096
        self.head_hidden_size = self.num_features
        self.features = features
        self.feature_info = sequential_feature_info(features, in_chans=features[0].in_channels)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            linear_or_identity(self.num_features, num_classes),
        )
        if init_weights:
            self._init_weights()

    def _init_weights(self):
        """Kaiming-normal (fan_out, ReLU) convolutions, unit/zero norms, N(0, 0.01) linear layers."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def _linear(self, num_classes):
        """The final linear layer (N(0, 0.01) init), or an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        linear = nn.Linear(self.num_features, num_classes)
        nn.init.normal_(linear.weight, 0, 0.01)
        nn.init.constant_(linear.bias, 0)
        return linear

    def get_classifier(self):
        """The final linear layer (an identity once ``prune_intermediate_layers`` took the head away, as timm's)."""
        return nn.Identity() if self.classifier is None else self.classifier[6]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return the pre-logits)."""
        if self.classifier is None:
            raise ValueError("this VGG's head was taken away by prune_intermediate_layers: its 25088-wide hidden "
                             "layers take the full trunk's 7x7 map, so there is no classifier to reset")
        self.num_classes = num_classes
        self.classifier[6] = self._linear(num_classes)

    def forward_features(self, x):
        """The trunk's feature map (N, 512, H/32, W/32)."""
        return self.features(x)

    def _feature_ends(self):
        """The position in ``features`` of each ``feature_info`` stage's last module (past the end for a stage that
        ``prune_intermediate_layers`` removed)."""
        return [min(int(info["module"].split(".")[1]), len(self.features)) for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's VGG intermediates, the ``feature_info`` stages (``features_only``' maps): index 0 to n - 2 the
        output of each block of convolutions (its last ReLU, before the max pool), n - 1 the final max pool's, which
        is ``forward_features``' output. timm's ``features`` has the same modules at the same positions.

        ``indices``: None (all), n (the last n) or a list (negative from the end). Returns the picked maps and,
        unless ``intermediates_only``, the last map computed. ``stop_early`` stops at the last one picked. ``norm``
        changes nothing: there is no final norm. Only ``output_fmt='NCHW'``.
        """
        ends = self._feature_ends()
        take, _ = intermediate_stages(ends, indices, stop_early, output_fmt)
        take_ends = [ends[i] for i in take]
        layers = list(self.features)
        if stop_early:
            layers = layers[:ends[max(take)] + 1]
        intermediates = []
        for i, layer in enumerate(layers):
            x = layer(x)
            if i in take_ends:
                intermediates.append(x)
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what ``forward_intermediates(indices=indices)`` needs, as timm's VGG does: ``features`` cut after the
        last stage picked. With ``prune_head``, or when layers go, the head goes too (the 7x7 pooling and all three
        linear layers: timm's pre-logits ConvMlp and classifier): ``forward_head`` then returns the map as it is,
        and ``num_features`` / ``head_hidden_size`` are the last stage's channels, timm's values (here the head
        kept, ``num_features`` stays torchvision's 4096). ``prune_norm`` changes nothing (no final norm). Returns
        the absolute indices kept."""
        ends = self._feature_ends()
        take = take_indices(len(ends), indices)
        last = max(take)
        self.features = self.features[:ends[last] + 1]
        if prune_head or last < len(ends) - 1:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
            self.num_classes = 0
            self.classifier = None
        return take

    def forward_head(self, x, pre_logits=False):
        """Pool to 7x7, flatten, the two hidden layers; then the final linear layer unless ``pre_logits``; the map
        as it is when ``prune_intermediate_layers`` took the head away."""
        if self.classifier is None:
            return x
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        for layer in list(self.classifier)[:6]:
            x = layer(x)
        return x if pre_logits else self.classifier[6](x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _vgg(cfg, batch_norm, in_chans=3, **kwargs):
    """A VGG of configuration ``cfg`` (the model class for ``build_model``, which passes ``in_chans``)."""
    return VGG(make_layers(cfgs[cfg], batch_norm, in_chans), **kwargs)


def _create_vgg(variant, cfg, batch_norm, pretrained, progress, **kwargs):
    """Build a registered VGG variant; with pretrained weights the random init is skipped (they overwrite it)."""
    if pretrained or kwargs.get("weights") is not None:
        kwargs.setdefault("init_weights", False)
    return build_model(_vgg, variant, pretrained, progress=progress, cfg=cfg, batch_norm=batch_norm, **kwargs)


@register_model
def vgg11(pretrained=False, progress=True, **kwargs):
    """VGG-11 (configuration A)."""
    return _create_vgg("vgg11", "A", False, pretrained, progress, **kwargs)


@register_model
def vgg11_bn(pretrained=False, progress=True, **kwargs):
    """VGG-11 (configuration A) with batch normalization."""
    return _create_vgg("vgg11_bn", "A", True, pretrained, progress, **kwargs)


@register_model
def vgg13(pretrained=False, progress=True, **kwargs):
    """VGG-13 (configuration B)."""
    return _create_vgg("vgg13", "B", False, pretrained, progress, **kwargs)


@register_model
def vgg13_bn(pretrained=False, progress=True, **kwargs):
    """VGG-13 (configuration B) with batch normalization."""
    return _create_vgg("vgg13_bn", "B", True, pretrained, progress, **kwargs)


@register_model
def vgg16(pretrained=False, progress=True, **kwargs):
    """VGG-16 (configuration D)."""
    return _create_vgg("vgg16", "D", False, pretrained, progress, **kwargs)


@register_model
def vgg16_bn(pretrained=False, progress=True, **kwargs):
    """VGG-16 (configuration D) with batch normalization."""
    return _create_vgg("vgg16_bn", "D", True, pretrained, progress, **kwargs)


@register_model
def vgg19(pretrained=False, progress=True, **kwargs):
    """VGG-19 (configuration E)."""
    return _create_vgg("vgg19", "E", False, pretrained, progress, **kwargs)


@register_model
def vgg19_bn(pretrained=False, progress=True, **kwargs):
    """VGG-19 (configuration E) with batch normalization."""
    return _create_vgg("vgg19_bn", "E", True, pretrained, progress, **kwargs)
