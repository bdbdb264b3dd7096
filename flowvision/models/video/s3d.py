"""S3D (Xie et al., "Rethinking Spatiotemporal Feature Learning: Speed-Accuracy Trade-offs in Video
Classification", 2018).

Inception-v1 turned into a video network whose 3-d convolutions are separable: each k x k x k convolution is a
spatial 1 x k x k one followed by a temporal k x 1 x 1 one, each with its norm and ReLU. Inputs are clips
(N, 3, T, H, W) of at least 14 frames of 224 x 224. Module names and state_dict keys follow torchvision, so
its Kinetics-400 checkpoint loads directly; the model API (``forward_features``, ``forward_head``,
``reset_classifier``, ``in_chans``) follows timm.
"""
from functools import partial

import engine as torch
from engine import nn

from ...ops.misc import Conv3dNormActivation
from .._helpers import build_model
from ..registry import register_model
from .video_resnet import kinetics_weights

__all__ = ["S3D", "TemporalSeparableConv", "SepInceptionBlock3D"]


class TemporalSeparableConv(nn.Sequential):
    """A spatial 1 x k x k convolution, then a temporal k x 1 x 1 one, each followed by its norm and ReLU."""

    def __init__(self, in_planes, out_planes, kernel_size, stride, padding, norm_layer):
        super().__init__(
            Conv3dNormActivation(in_planes, out_planes, kernel_size=(1, kernel_size, kernel_size),
                                 stride=(1, stride, stride), padding=(0, padding, padding), bias=False,
                                 norm_layer=norm_layer),
            Conv3dNormActivation(out_planes, out_planes, kernel_size=(kernel_size, 1, 1), stride=(stride, 1, 1),
                                 padding=(padding, 0, 0), bias=False, norm_layer=norm_layer),
        )


class SepInceptionBlock3D(nn.Module):
    """Four parallel branches concatenated along channels: a 1x1x1 convolution; two 1x1x1 reductions each
    followed by a separable 3x3x3 convolution; and a 3x3x3 max pool followed by a 1x1x1 convolution."""

    def __init__(self, in_planes, b0_out, b1_mid, b1_out, b2_mid, b2_out, b3_out, norm_layer):
        super().__init__()
        self.branch0 = Conv3dNormActivation(in_planes, b0_out, kernel_size=1, stride=1, norm_layer=norm_layer)
        self.branch1 = nn.Sequential(
            Conv3dNormActivation(in_planes, b1_mid, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(b1_mid, b1_out, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer),
        )
        self.branch2 = nn.Sequential(
            Conv3dNormActivation(in_planes, b2_mid, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(b2_mid, b2_out, kernel_size=3, stride=1, padding=1, norm_layer=norm_layer),
        )
        self.branch3 = nn.Sequential(
            nn.MaxPool3d(kernel_size=(3, 3, 3), stride=1, padding=1),
            Conv3dNormActivation(in_planes, b3_out, kernel_size=1, stride=1, norm_layer=norm_layer),
        )

    def forward(self, x):
        x0 = self.branch0(x)
        x1 = self.branch1(x)
        x2 = self.branch2(x)
        x3 = self.branch3(x)
        return torch.cat((x0, x1, x2, x3), 1)


class S3D(nn.Module):
    """The separable stem, ten inception blocks between 3-d max pools, a 2x7x7 average pool and a 1x1x1
    convolution as the classifier, averaged over what remains of time and space; ``num_classes=0`` leaves the
    pooled 1024-d features. The norms are BatchNorm3d with eps 0.001 and momentum 0.001 by default."""

    default_cfg = {"first_conv": "features.0.0.0", "classifier": "classifier.1"}

    def __init__(self, num_classes=400, dropout=0.2, norm_layer=None, in_chans=3):
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm3d, eps=0.001, momentum=0.001)
        self.num_classes = num_classes
        self.dropout = dropout
        self.num_features = 1024
        self.head_hidden_size = self.num_features
        self.features = nn.Sequential(
            TemporalSeparableConv(in_chans, 64, 7, 2, 3, norm_layer),
            nn.MaxPool3d(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)),
            Conv3dNormActivation(64, 64, kernel_size=1, stride=1, norm_layer=norm_layer),
            TemporalSeparableConv(64, 192, 3, 1, 1, norm_layer),
            nn.MaxPool3d(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)),
            SepInceptionBlock3D(192, 64, 96, 128, 16, 32, 32, norm_layer),
            SepInceptionBlock3D(256, 128, 128, 192, 32, 96, 64, norm_layer),
            nn.MaxPool3d(kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1)),
            SepInceptionBlock3D(480, 192, 96, 208, 16, 48, 64, norm_layer),
            SepInceptionBlock3D(512, 160, 112, 224, 24, 64, 64, norm_layer),
            SepInceptionBlock3D(512, 128, 128, 256, 24, 64, 64, norm_layer),
            SepInceptionBlock3D(512, 112, 144, 288, 32, 64, 64, norm_layer),
            SepInceptionBlock3D(528, 256, 160, 320, 32, 128, 128, norm_layer),
            nn.MaxPool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0)),
            SepInceptionBlock3D(832, 256, 160, 320, 32, 128, 128, norm_layer),
            SepInceptionBlock3D(832, 384, 192, 384, 48, 128, 128, norm_layer),
        )
        self.avgpool = nn.AvgPool3d(kernel_size=(2, 7, 7), stride=1)
        self.classifier = self._classifier(num_classes)

    def _classifier(self, num_classes):
        """Dropout and a 1x1x1 convolution to the classes, or an identity when ``num_classes`` is 0."""
        if num_classes <= 0:
            return nn.Identity()
        return nn.Sequential(nn.Dropout(p=self.dropout), nn.Conv3d(self.num_features, num_classes, kernel_size=1,
                                                                   stride=1, bias=True))

    def get_classifier(self):
        return self.classifier

    def reset_classifier(self, num_classes):
        """Replace the classifier with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.classifier = self._classifier(num_classes)

    def forward_features(self, x):
        """(N, C, T, H, W) clips to (N, 1024, T/8, H/32, W/32) features."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """The 2x7x7 average pool, then the classifier unless ``pre_logits``, averaged over time and space."""
        x = self.avgpool(x)
        if not pre_logits:
            x = self.classifier(x)
        return torch.mean(x, dim=(2, 3, 4))

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def s3d(pretrained=False, progress=True, **kwargs):
    """S3D with separable 3-d convolutions throughout."""
    kwargs["weights"] = kinetics_weights(pretrained, kwargs.get("weights"))
    return build_model(S3D, "s3d", progress=progress, **kwargs)
