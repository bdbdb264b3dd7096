"""MobileNetV2 (Sandler et al. 2018, "MobileNetV2: Inverted Residuals and Linear Bottlenecks").

Module names, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``)
follows timm.
"""
import engine as torch
from engine import nn
from engine.nn import functional as F

from ..ops.misc import Conv2dNormActivation
from ._features import sequential_feature_info
from ._helpers import build_model
from ._utils import _make_divisible, classifier_linear, init_mobilenet_weights, linear_or_identity
from .registry import register_model

__all__ = ["MobileNetV2"]


class InvertedResidual(nn.Module):
    """Expand with a 1x1 conv, filter with a 3x3 depthwise conv, project linearly with a 1x1 conv.

    The residual connection joins the thin ends when the block keeps stride and width.
    """

    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer,
                                               activation_layer=nn.ReLU6))
        layers.append(Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim,
                                           norm_layer=norm_layer, activation_layer=nn.ReLU6))
        layers.append(nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False))
        layers.append(norm_layer(oup))
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)


# expansion t, output channels c, repeats n, first stride s
_DEFAULT_SETTING = [
    [1, 16, 1, 1],
    [6, 24, 2, 2],
    [6, 32, 3, 2],
    [6, 64, 4, 2],
    [6, 96, 3, 1],
    [6, 160, 3, 2],
    [6, 320, 1, 1],
]


class MobileNetV2(nn.Module):
    """A strided 3x3 stem, inverted residual stages, a 1x1 conv to ``last_channel``, pooling and a classifier.

    ``width_mult`` scales every width (rounded to ``round_nearest``); ``num_classes=0`` replaces the
    final linear layer with an identity.
    """

    default_cfg = {"first_conv": "features.0.0", "classifier": "classifier.1"}

    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None, round_nearest=8,
                 block=None, norm_layer=None, dropout=0.2, in_chans=3):
        super().__init__()
        if block is None:
            block = InvertedResidual
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if inverted_residual_setting is None:
            inverted_residual_setting = _DEFAULT_SETTING
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError("inverted_residual_setting should be non-empty or a 4-element list, "
                             f"got {inverted_residual_setting}")
        self.num_classes = num_classes
        input_channel = _make_divisible(32 * width_mult, round_nearest)
        self.last_channel = _make_divisible(1280 * max(1.0, width_mult), round_nearest)
        features = [Conv2dNormActivation(in_chans, input_channel, stride=2, norm_layer=norm_layer,
                                         activation_layer=nn.ReLU6)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(input_channel, output_channel, stride, expand_ratio=t, norm_layer=norm_layer))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1,
                                             norm_layer=norm_layer, activation_layer=nn.ReLU6))
        self.features = nn.Sequential(*features)
        self.feature_info = sequential_feature_info(self.features, in_chans=in_chans)
        self.num_features = self.last_channel
        self.head_hidden_size = self.num_features
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), linear_or_identity(self.num_features, num_classes))
        init_mobilenet_weights(self)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[1]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.classifier[1] = classifier_linear(self.num_features, num_classes)

    def forward_features(self, x):
        """The feature map after the last 1x1 conv (N, last_channel, H/32, W/32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Global average pool and flatten, then dropout and the final linear layer unless ``pre_logits``."""
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def mobilenet_v2(pretrained=False, progress=True, **kwargs):
    """MobileNetV2 at width 1.0 (``width_mult=`` scales it)."""
    return build_model(MobileNetV2, "mobilenet_v2", pretrained, progress=progress, **kwargs)
