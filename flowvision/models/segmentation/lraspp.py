"""LR-ASPP (Howard et al. 2019, "Searching for MobileNetV3", Section 6.4): a lite segmentation head.

The high-level features are gated by their global average (a squeeze-excitation-like branch),
upsampled to the stride-8 features and both are classified and summed. Module names follow torchvision.
"""
from collections import OrderedDict

from engine import nn
from engine.nn import functional as F

from .. import mobilenetv3 as _mobilenetv3
from .._utils import IntermediateLayerGetter
from ..registry import register_model
from ..weights import MobileNet_V3_Large_Weights
from ._utils import finish_model, resolve_segmentation_args
from .deeplabv3 import stage_indices

__all__ = ["LRASPP", "LRASPPHead"]


class LRASPP(nn.Module):
    """A backbone returning ``{"low", "high"}`` features and an ``LRASPPHead``; logits upsampled to the input."""

    def __init__(self, backbone, low_channels, high_channels, num_classes, inter_channels=128):
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input):
        features = self.backbone(input)
        out = self.classifier(features)
        result = OrderedDict()
        result["out"] = F.interpolate(out, size=input.shape[-2:], mode="bilinear", align_corners=False)
        return result


class LRASPPHead(nn.Module):
    """1x1 conv-BN-ReLU on the high features times a pooled sigmoid gate, upsampled and classified, plus a 1x1
    classifier on the low features."""

    def __init__(self, low_channels, high_channels, num_classes, inter_channels):
        super().__init__()
        self.cbr = nn.Sequential(
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(inplace=True),
        )
        self.scale = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(high_channels, inter_channels, 1, bias=False),
            nn.Sigmoid(),
        )
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input):
        low = input["low"]
        high = input["high"]
        x = self.cbr(high)
        s = self.scale(high)
        x = x * s
        x = F.interpolate(x, size=low.shape[-2:], mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


def _lraspp_mobilenetv3(backbone, num_classes):
    """LR-ASPP on a dilated MobileNetV3: low features at stride 8, high features at the end."""
    features = backbone.features
    stages = stage_indices(features)
    low_pos, high_pos = stages[-4], stages[-1]
    low_channels = features[low_pos].out_channels
    high_channels = features[high_pos].out_channels
    getter = IntermediateLayerGetter(features, return_layers={str(low_pos): "low", str(high_pos): "high"})
    return LRASPP(getter, low_channels, high_channels, num_classes)


@register_model
def lraspp_mobilenet_v3_large(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                              weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1, pretrained_backbone=None,
                              checkpoint_path=None):
    """LR-ASPP with a dilated MobileNetV3-Large backbone (no auxiliary head)."""
    if aux_loss:
        raise NotImplementedError("This model does not use auxiliary loss")
    weights, num_classes, _, weights_backbone = resolve_segmentation_args(
        "lraspp_mobilenet_v3_large", pretrained, weights, num_classes, None, weights_backbone, pretrained_backbone)
    backbone = _mobilenetv3.mobilenet_v3_large(weights=weights_backbone, progress=progress, dilated=True)
    model = _lraspp_mobilenetv3(backbone, num_classes)
    return finish_model(model, weights, progress, checkpoint_path)


@register_model(alias_of="lraspp_mobilenet_v3_large")
def lraspp_mobilenet_v3_large_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``lraspp_mobilenet_v3_large``."""
    return lraspp_mobilenet_v3_large(pretrained, progress, **kwargs)
