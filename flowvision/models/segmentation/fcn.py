"""FCN (Long et al. 2015, "Fully Convolutional Networks for Semantic Segmentation") on dilated ResNets.

The backbone keeps output stride 8 (layers 3 and 4 dilate instead of striding); a 3x3 conv head
predicts per-pixel classes, upsampled bilinearly to the input. Module names follow torchvision.
"""
from engine import nn

from .. import resnet as _resnet
from .._utils import IntermediateLayerGetter
from ..registry import register_model
from ..weights import ResNet50_Weights, ResNet101_Weights
from ._utils import _SimpleSegmentationModel, finish_model, resolve_segmentation_args

__all__ = ["FCN", "FCNHead"]


class FCN(_SimpleSegmentationModel):
    """A fully convolutional network: dilated backbone, FCN head, optional auxiliary head on layer3."""


class FCNHead(nn.Sequential):
    """3x3 conv to a quarter of the channels, BN, ReLU, dropout, then a 1x1 conv to the class logits."""

    def __init__(self, in_channels, channels):
        inter_channels = in_channels // 4
        super().__init__(
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        )


def _fcn_resnet(backbone, num_classes, aux):
    """An FCN on a dilated ResNet: head on layer4 (2048 channels), auxiliary head on layer3 (1024)."""
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)
    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = FCNHead(2048, num_classes)
    return FCN(backbone, classifier, aux_classifier)


def _create_fcn(variant, backbone_fn, pretrained, progress, weights, num_classes, aux_loss, weights_backbone,
                pretrained_backbone, checkpoint_path):
    """Resolve the arguments, build the dilated backbone and the FCN, load weights."""
    weights, num_classes, aux_loss, weights_backbone = resolve_segmentation_args(
        variant, pretrained, weights, num_classes, aux_loss, weights_backbone, pretrained_backbone)
    backbone = backbone_fn(weights=weights_backbone, progress=progress,
                           replace_stride_with_dilation=[False, True, True])
    model = _fcn_resnet(backbone, num_classes, aux_loss)
    return finish_model(model, weights, progress, checkpoint_path)


@register_model
def fcn_resnet50(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                 weights_backbone=ResNet50_Weights.IMAGENET1K_V1, pretrained_backbone=None, checkpoint_path=None):
    """FCN with a ResNet-50 backbone (``weights_backbone=None`` for a random backbone, as torchvision)."""
    return _create_fcn("fcn_resnet50", _resnet.resnet50, pretrained, progress, weights, num_classes, aux_loss,
                       weights_backbone, pretrained_backbone, checkpoint_path)


@register_model
def fcn_resnet101(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                  weights_backbone=ResNet101_Weights.IMAGENET1K_V1, pretrained_backbone=None, checkpoint_path=None):
    """FCN with a ResNet-101 backbone."""
    return _create_fcn("fcn_resnet101", _resnet.resnet101, pretrained, progress, weights, num_classes, aux_loss,
                       weights_backbone, pretrained_backbone, checkpoint_path)


@register_model(alias_of="fcn_resnet50")
def fcn_resnet50_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``fcn_resnet50``."""
    return fcn_resnet50(pretrained, progress, **kwargs)


@register_model(alias_of="fcn_resnet101")
def fcn_resnet101_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``fcn_resnet101``."""
    return fcn_resnet101(pretrained, progress, **kwargs)
