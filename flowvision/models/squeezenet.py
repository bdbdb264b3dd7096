"""SqueezeNet (Iandola et al. 2016, "SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and
<0.5MB model size").

Versions 1.0 (the paper's) and 1.1 (2.4x less computation at the same accuracy, from the authors'
repository). Module names, state_dict keys and initialisation follow torchvision, so its
checkpoints load directly; the model API (``forward_features``, ``forward_head``,
``reset_classifier``, ``in_chans``) follows timm.
"""
import engine as torch
from engine import nn

from ._features import _block_stride
from ._helpers import build_model
from .registry import register_model

__all__ = ["SqueezeNet", "Fire"]


class Fire(nn.Module):
    """Squeeze to few channels with a 1x1 conv, then expand with parallel 1x1 and 3x3 convs, concatenated."""

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    @property
    def out_channels(self):
        """Channels of the concatenated expansions."""
        return self.expand1x1.out_channels + self.expand3x3.out_channels

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        out1x1 = self.expand1x1_activation(self.expand1x1(x))
        out3x3 = self.expand3x3_activation(self.expand3x3(x))
        return torch.cat([out1x1, out3x3], 1)


def _pool():
    return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)


def _trunk(version, in_chans):
    """The convolutional trunk of a version: a strided stem conv, then Fire modules between max pools."""
    if version == "1_0":
        return nn.Sequential(
            nn.Conv2d(in_chans, 96, kernel_size=7, stride=2),
            nn.ReLU(inplace=True),
            _pool(),
            Fire(96, 16, 64, 64),
            Fire(128, 16, 64, 64),
            Fire(128, 32, 128, 128),
            _pool(),
            Fire(256, 32, 128, 128),
            Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256),
            _pool(),
            Fire(512, 64, 256, 256),
        )
    if version == "1_1":
        return nn.Sequential(
            nn.Conv2d(in_chans, 64, kernel_size=3, stride=2),
            nn.ReLU(inplace=True),
            _pool(),
            Fire(64, 16, 64, 64),
            Fire(128, 16, 64, 64),
            _pool(),
            Fire(128, 32, 128, 128),
            Fire(256, 32, 128, 128),
            _pool(),
            Fire(256, 48, 192, 192),
            Fire(384, 48, 192, 192),
            Fire(384, 64, 256, 256),
            Fire(512, 64, 256, 256),
        )
    raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")


def _feature_info(features, in_chans):
    """One stage at the last block before each max pool, and one at the end of the trunk."""
    info = []
    reduction, channels = 1, in_chans
    blocks = list(features.named_children())
    for i, (name, block) in enumerate(blocks):
        reduction *= _block_stride(block)
        channels = getattr(block, "out_channels", channels)
        if i == len(blocks) - 1 or _block_stride(blocks[i + 1][1]) > 1:
            info.append(dict(num_chs=channels, reduction=reduction, module=f"features.{name}"))
    return info


def _init_final_conv(conv):
    """N(0, 0.01) weights and a zero bias for the class conv."""
    nn.init.normal_(conv.weight, mean=0.0, std=0.01)
    nn.init.constant_(conv.bias, 0)


class SqueezeNet(nn.Module):
    """The Fire trunk, then a 1x1 conv to class scores, ReLU and global average pooling (no linear layer).

    ``num_classes=0`` replaces the class conv with an identity (the pooled 512 trunk features).
    """

    default_cfg = {"first_conv": "features.0", "classifier": "classifier.1"}

    def __init__(self, version="1_0", num_classes=1000, dropout=0.5, in_chans=3):
        super().__init__()
        self.num_classes = num_classes
        self.num_features = 512
        self.head_hidden_size = self.num_features
        self.features = _trunk(version, in_chans)
        self.feature_info = _feature_info(self.features, in_chans)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            self._plain_final_conv(num_classes),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )
        self._init_weights()

    def _init_weights(self):
        """Kaiming-uniform trunk convolutions with zero biases, then the class conv's own init."""
        for m in self.features.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight)
                nn.init.constant_(m.bias, 0)
        if isinstance(self.classifier[1], nn.Conv2d):
            _init_final_conv(self.classifier[1])

    def _plain_final_conv(self, num_classes):
        """The 1x1 class conv with only its default init; an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        return nn.Conv2d(self.num_features, num_classes, kernel_size=1)

    def _final_conv(self, num_classes):
        """A fresh 1x1 class conv, N(0, 0.01) weights and zero bias; an identity when ``num_classes`` is 0."""
        conv = self._plain_final_conv(num_classes)
        if num_classes > 0:
            _init_final_conv(conv)
        return conv

    def get_classifier(self):
        """The 1x1 class conv."""
        return self.classifier[1]

    def reset_classifier(self, num_classes):
        """Replace the class conv with a fresh one for ``num_classes`` (0: return the pooled features)."""
        self.num_classes = num_classes
        self.classifier[1] = self._final_conv(num_classes)

    def forward_features(self, x):
        """The trunk's feature map (N, 512, about H/16, W/16)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Class conv, ReLU and average pooling; with ``pre_logits`` the trunk features are pooled instead."""
        if pre_logits:
            return torch.flatten(self.classifier[3](x), 1)
        x = self.classifier(x)
        return torch.flatten(x, 1)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_squeezenet(variant, version, pretrained, progress, **kwargs):
    """Build a registered SqueezeNet version."""
    return build_model(SqueezeNet, variant, pretrained, progress=progress, version=version, **kwargs)


@register_model
def squeezenet1_0(pretrained=False, progress=True, **kwargs):
    """SqueezeNet 1.0, as in the paper."""
    return _create_squeezenet("squeezenet1_0", "1_0", pretrained, progress, **kwargs)


@register_model
def squeezenet1_1(pretrained=False, progress=True, **kwargs):
    """SqueezeNet 1.1: a smaller stem and earlier pooling, 2.4x less computation than 1.0."""
    return _create_squeezenet("squeezenet1_1", "1_1", pretrained, progress, **kwargs)
