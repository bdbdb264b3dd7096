"""DeepLabV3 (Chen et al. 2017, "Rethinking Atrous Convolution for Semantic Image Segmentation").

Atrous Spatial Pyramid Pooling on a dilated ResNet or MobileNetV3: parallel 1x1, three dilated 3x3
and an image-pooling branch, concatenated and projected. Module names follow torchvision.
"""
import engine as torch
from engine import nn
from engine.nn import functional as F

from .. import mobilenetv3 as _mobilenetv3
from .. import resnet as _resnet
from .._utils import IntermediateLayerGetter
from ..registry import register_model
from ..weights import MobileNet_V3_Large_Weights, ResNet50_Weights, ResNet101_Weights
from ._utils import _SimpleSegmentationModel, finish_model, resolve_segmentation_args
from .fcn import FCNHead

__all__ = ["DeepLabV3", "DeepLabHead", "ASPP", "ASPPConv", "ASPPPooling"]


class DeepLabV3(_SimpleSegmentationModel):
    """DeepLabV3: dilated backbone, ASPP head, optional FCN auxiliary head."""


class DeepLabHead(nn.Sequential):
    """ASPP, a 3x3 conv with BN and ReLU, then a 1x1 conv to the class logits."""

    def __init__(self, in_channels, num_classes, atrous_rates=(12, 24, 36)):
        super().__init__(
            ASPP(in_channels, atrous_rates),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, num_classes, 1),
        )


class ASPPConv(nn.Sequential):
    """A 3x3 conv at one atrous rate, BN, ReLU."""

    def __init__(self, in_channels, out_channels, dilation):
        super().__init__(
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )


class ASPPPooling(nn.Sequential):
    """Image-level features: global average pool, 1x1 conv, BN, ReLU, broadcast back to the map size."""

    def __init__(self, in_channels, out_channels):
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        size = x.shape[-2:]
        for module in self:
            x = module(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """Atrous Spatial Pyramid Pooling: a 1x1 branch, one ``ASPPConv`` per rate and ``ASPPPooling``, fused by a 1x1 conv."""

    def __init__(self, in_channels, atrous_rates, out_channels=256):
        super().__init__()
        modules = [nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )]
        for rate in tuple(atrous_rates):
            modules.append(ASPPConv(in_channels, out_channels, rate))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x):
        branches = [conv(x) for conv in self.convs]
        x = torch.cat(branches, dim=1)
        return self.project(x)


def _deeplabv3_resnet(backbone, num_classes, aux):
    """DeepLabV3 on a dilated ResNet: ASPP head on layer4 (2048 channels), auxiliary FCN head on layer3 (1024)."""
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)
    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = DeepLabHead(2048, num_classes)
    return DeepLabV3(backbone, classifier, aux_classifier)


def stage_indices(features):
    """Indices in a MobileNet ``features`` sequence where a stage starts (its stride-2 blocks), plus the first and last."""
    return [0] + [i for i, block in enumerate(features) if getattr(block, "_is_cn", False)] + [len(features) - 1]


def _deeplabv3_mobilenetv3(backbone, num_classes, aux):
    """DeepLabV3 on a dilated MobileNetV3: ASPP on the last features, auxiliary head on the stride-8 stage's input."""
    features = backbone.features
    stages = stage_indices(features)
    out_pos, aux_pos = stages[-1], stages[-4]
    return_layers = {str(out_pos): "out"}
    if aux:
        return_layers[str(aux_pos)] = "aux"
    getter = IntermediateLayerGetter(features, return_layers=return_layers)
    aux_classifier = FCNHead(features[aux_pos].out_channels, num_classes) if aux else None
    classifier = DeepLabHead(features[out_pos].out_channels, num_classes)
    return DeepLabV3(getter, classifier, aux_classifier)


def _create_deeplabv3(variant, make_backbone, make_model, pretrained, progress, weights, num_classes, aux_loss,
                      weights_backbone, pretrained_backbone, checkpoint_path):
    """Resolve the arguments, build the dilated backbone and the model, load weights."""
    weights, num_classes, aux_loss, weights_backbone = resolve_segmentation_args(
        variant, pretrained, weights, num_classes, aux_loss, weights_backbone, pretrained_backbone)
    model = make_model(make_backbone(weights_backbone, progress), num_classes, aux_loss)
    return finish_model(model, weights, progress, checkpoint_path)


def _dilated_resnet(resnet_fn):
    """A backbone factory: ``resnet_fn`` with layers 3 and 4 dilated (output stride 8)."""
    return lambda weights, progress: resnet_fn(weights=weights, progress=progress,
                                               replace_stride_with_dilation=[False, True, True])


def _dilated_mobilenet_v3_large(weights, progress):
    """MobileNetV3-Large with its last stage dilated (output stride 16)."""
    return _mobilenetv3.mobilenet_v3_large(weights=weights, progress=progress, dilated=True)


@register_model
def deeplabv3_resnet50(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                       weights_backbone=ResNet50_Weights.IMAGENET1K_V1, pretrained_backbone=None,
                       checkpoint_path=None):
    """DeepLabV3 with a ResNet-50 backbone (``weights_backbone=None`` for a random backbone, as torchvision)."""
    return _create_deeplabv3("deeplabv3_resnet50", _dilated_resnet(_resnet.resnet50), _deeplabv3_resnet, pretrained,
                             progress, weights, num_classes, aux_loss, weights_backbone, pretrained_backbone,
                             checkpoint_path)


@register_model
def deeplabv3_resnet101(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                        weights_backbone=ResNet101_Weights.IMAGENET1K_V1, pretrained_backbone=None,
                        checkpoint_path=None):
    """DeepLabV3 with a ResNet-101 backbone."""
    return _create_deeplabv3("deeplabv3_resnet101", _dilated_resnet(_resnet.resnet101), _deeplabv3_resnet,
                             pretrained, progress, weights, num_classes, aux_loss, weights_backbone,
                             pretrained_backbone, checkpoint_path)


@register_model
def deeplabv3_mobilenet_v3_large(pretrained=False, progress=True, *, weights=None, num_classes=None, aux_loss=None,
                                 weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1, pretrained_backbone=None,
                                 checkpoint_path=None):
    """DeepLabV3 with a dilated MobileNetV3-Large backbone."""
    return _create_deeplabv3("deeplabv3_mobilenet_v3_large", _dilated_mobilenet_v3_large, _deeplabv3_mobilenetv3,
                             pretrained, progress, weights, num_classes, aux_loss, weights_backbone,
                             pretrained_backbone, checkpoint_path)


@register_model(alias_of="deeplabv3_resnet50")
def deeplabv3_resnet50_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``deeplabv3_resnet50``."""
    return deeplabv3_resnet50(pretrained, progress, **kwargs)


@register_model(alias_of="deeplabv3_resnet101")
def deeplabv3_resnet101_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``deeplabv3_resnet101``."""
    return deeplabv3_resnet101(pretrained, progress, **kwargs)


@register_model(alias_of="deeplabv3_mobilenet_v3_large")
def deeplabv3_mobilenet_v3_large_coco(pretrained=False, progress=True, **kwargs):
    """flowvision's earlier name of ``deeplabv3_mobilenet_v3_large``."""
    return deeplabv3_mobilenet_v3_large(pretrained, progress, **kwargs)
