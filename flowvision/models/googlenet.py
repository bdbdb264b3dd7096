"""GoogLeNet / Inception v1 (Szegedy et al. 2014, "Going Deeper with Convolutions"), with batch norm.

Nine Inception modules (parallel 1x1, 3x3, "5x5" and pooled branches, concatenated); two auxiliary
classifiers on intermediate maps add their losses during training. As in torchvision (and its
ported checkpoint), the "5x5" branch uses a 3x3 convolution. Module names, state_dict keys,
initialisation, training outputs (``GoogLeNetOutputs``) and ``transform_input`` follow torchvision,
so its checkpoints load directly; the model API (``forward_features``, ``forward_head``,
``reset_classifier``, ``in_chans``) follows timm.
"""
import warnings
from collections import namedtuple

import engine as torch
import engine.nn.functional as F
from engine import nn

from ._helpers import build_model
from .registry import register_model

__all__ = ["GoogLeNet", "GoogLeNetOutputs"]

# Training-mode output with auxiliary heads: the final logits and the two auxiliary ones (deepest first).
GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
_GoogLeNetOutputs = GoogLeNetOutputs


class BasicConv2d(nn.Module):
    """Convolution without bias, batch norm (eps 0.001), ReLU."""

    def __init__(self, in_channels, out_channels, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return F.relu(x, inplace=True)


class Inception(nn.Module):
    """Four parallel branches concatenated: 1x1; 1x1 then 3x3; 1x1 then 3x3 (the "5x5"); 3x3 max pool then 1x1."""

    def __init__(self, in_channels, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(
            conv_block(in_channels, ch3x3red, kernel_size=1),
            conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1),
        )
        self.branch3 = nn.Sequential(
            conv_block(in_channels, ch5x5red, kernel_size=1),
            conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1),
        )
        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
            conv_block(in_channels, pool_proj, kernel_size=1),
        )

    def _forward(self, x):
        """The four branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        return [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier: pool to 4x4, 1x1 conv to 128 channels, two linear layers with dropout."""

    def __init__(self, in_channels, num_classes, conv_block=None, dropout=0.7):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.conv = conv_block(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = _linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(x, (4, 4))
        x = self.conv(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x), inplace=True)
        x = self.dropout(x)
        x = self.fc2(x)
        return x


def _linear(in_features, num_classes):
    """A class layer, or an identity when ``num_classes`` is 0."""
    return nn.Linear(in_features, num_classes) if num_classes > 0 else nn.Identity()


def _init_weights(module):
    """Convolutions and linear layers from N(0, 0.01) truncated at +-2; unit/zero batch norms."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def transform_imagenet_input(x):
    """Re-normalize an input made with ImageNet's mean and std to the [-1, 1] range of Google's checkpoints.

    Per channel, ``(x * std + mean - 0.5) / 0.5``, written as one scale and one shift.
    """
    channels = [x[:, c:c + 1] * (std / 0.5) + (mean - 0.5) / 0.5
                for c, (mean, std) in enumerate(zip(IMAGENET_MEAN, IMAGENET_STD))]
    return torch.cat(channels, 1)


class GoogLeNet(nn.Module):
    """A conv stem, Inception stages 3, 4 and 5 between max pools, global pooling, dropout and a linear layer.

    In training mode with ``aux_logits`` the forward returns ``GoogLeNetOutputs(logits, aux_logits2,
    aux_logits1)``, otherwise the logits. ``transform_input`` maps ImageNet-normalized inputs to the
    ported weights' [-1, 1] range. ``init_weights=None`` means True (truncated normal init), as in
    torchvision. ``num_classes=0`` replaces the class layers with identities (pooled 1024 features).
    """

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False, init_weights=None, blocks=None,
                 dropout=0.2, dropout_aux=0.7, in_chans=3):
        super().__init__()
        if blocks is None:
            blocks = [BasicConv2d, Inception, InceptionAux]
        if init_weights is None:
            init_weights = True
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        if transform_input and in_chans != 3:
            raise ValueError(f"transform_input re-normalizes RGB inputs; it needs in_chans=3, not {in_chans}")
        conv_block, inception_block, inception_aux_block = blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.num_classes = num_classes
        self.num_features = 1024
        self.head_hidden_size = self.num_features

        self.conv1 = conv_block(in_chans, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception3a = inception_block(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = inception_block(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)

        self.inception4a = inception_block(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = inception_block(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = inception_block(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = inception_block(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = inception_block(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)

        self.inception5a = inception_block(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = inception_block(832, 384, 192, 384, 48, 128, 128)

        if aux_logits:
            self.aux1 = inception_aux_block(512, num_classes, dropout=dropout_aux)
            self.aux2 = inception_aux_block(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = None
            self.aux2 = None

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = _linear(1024, num_classes)

        if init_weights:
            _init_weights(self)

    @property
    def default_cfg(self):
        """The first conv, and the class layers a checkpoint for another class count cannot fill."""
        heads = [f"{name}.fc2" for name in ("aux1", "aux2") if getattr(self, name) is not None]
        return {"first_conv": "conv1.conv", "classifier": "fc" if not heads else ("fc", *heads)}

    def get_classifier(self):
        """The final linear layer."""
        return self.fc

    def reset_classifier(self, num_classes):
        """Fresh class layers for ``num_classes``: the final one and the auxiliary heads' (0: identities)."""
        self.num_classes = num_classes
        self.fc = _linear(self.num_features, num_classes)
        _init_weights(self.fc)
        for aux in (self.aux1, self.aux2):
            if aux is not None:
                aux.fc2 = _linear(aux.fc1.out_features, num_classes)
                _init_weights(aux.fc2)

    def _transform_input(self, x):
        return transform_imagenet_input(x) if self.transform_input else x

    def _forward_features(self, x):
        """The last Inception output and, in training with auxiliary heads, their logits (else None)."""
        x = self._transform_input(x)
        x = self.conv1(x)
        x = self.maxpool1(x)
        x = self.conv2(x)
        x = self.conv3(x)
        x = self.maxpool2(x)
        x = self.inception3a(x)
        x = self.inception3b(x)
        x = self.maxpool3(x)
        x = self.inception4a(x)
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4b(x)
        x = self.inception4c(x)
        x = self.inception4d(x)
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.inception4e(x)
        x = self.maxpool4(x)
        x = self.inception5a(x)
        x = self.inception5b(x)
        return x, aux2, aux1

    def forward_features(self, x):
        """The input transform (if enabled) and the trunk: (N, 1024, about H/32, W/32)."""
        return self._forward_features(x)[0]

    def forward_head(self, x, pre_logits=False):
        """Global average pool and flatten; then dropout and the final linear layer unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        if pre_logits:
            return x
        x = self.dropout(x)
        return self.fc(x)

    def forward(self, x):
        x, aux2, aux1 = self._forward_features(x)
        x = self.forward_head(x)
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


def _create_googlenet(pretrained, progress, **kwargs):
    """Build GoogLeNet (see ``build_with_weights_defaults``)."""
    if kwargs.get("features_only"):
        raise ValueError("googlenet has no features_only mode; use flowvision.models.create_feature_extractor")
    return build_with_weights_defaults(
        lambda **options: build_model(GoogLeNet, "googlenet", pretrained, progress=progress, **options),
        pretrained, kwargs)


def build_with_weights_defaults(build, pretrained, kwargs):
    """``build(**kwargs)``, as torchvision builds GoogLeNet (float or quantizable): pretrained weights bring
    ``transform_input=True`` unless given, and their auxiliary heads (untrained) are built to load the
    checkpoint and removed after it unless ``aux_logits=True`` was asked."""
    if not (pretrained or kwargs.get("weights") is not None):
        return build(**kwargs)
    keep_aux = kwargs.pop("aux_logits", False)
    kwargs.setdefault("transform_input", True)
    kwargs.setdefault("init_weights", False)
    model = build(aux_logits=True, **kwargs)
    if keep_aux:
        warnings.warn("the auxiliary heads of the pretrained googlenet are not trained: train them before use")
    else:
        model.aux_logits = False
        model.aux1 = None
        model.aux2 = None
    return model


@register_model
def googlenet(pretrained=False, progress=True, **kwargs):
    """GoogLeNet (Inception v1) with batch norm; auxiliary classifiers on by default (``aux_logits``)."""
    return _create_googlenet(pretrained, progress, **kwargs)
