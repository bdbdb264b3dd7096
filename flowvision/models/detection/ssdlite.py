"""SSDlite (Sandler et al. 2018, MobileNetV2 section 6.2) on MobileNetV3-Large (Howard et al. 2019, section 6.3)
and the ssdlite320_mobilenet_v3_large builder.

Names, arguments, defaults, state_dict keys and outputs follow torchvision.models.detection.ssdlite.
"""
from collections import OrderedDict
from functools import partial

from engine import nn

from ...ops.misc import Conv2dNormActivation
from ..mobilenetv3 import mobilenet_v3_large
from ..registry import register_model
from ..weights import MobileNet_V3_Large_Weights, SSDLite320_MobileNet_V3_Large_Weights
from ._builder import finish_detection_model, resolve_detection_args
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .ssd import SSD, SSDScoringHead, _ignore_size, retrieve_out_channels

__all__ = ["SSDLite320_MobileNet_V3_Large_Weights", "SSDLiteHead", "SSDLiteClassificationHead", "SSDLiteRegressionHead",
           "SSDLiteFeatureExtractorMobileNet",
           "ssdlite320_mobilenet_v3_large"]


def _prediction_block(in_channels, out_channels, kernel_size, norm_layer):
    """Depthwise kxk conv (norm, ReLU6) then a 1x1 projection to ``out_channels`` predictions."""
    return nn.Sequential(
        Conv2dNormActivation(in_channels, in_channels, kernel_size=kernel_size, groups=in_channels,
                             norm_layer=norm_layer, activation_layer=nn.ReLU6),
        nn.Conv2d(in_channels, out_channels, 1),
    )


def _extra_block(in_channels, out_channels, norm_layer):
    """1x1 to half the width, 3x3 depthwise stride 2, 1x1 to ``out_channels`` (each with norm and ReLU6)."""
    activation = nn.ReLU6
    intermediate_channels = out_channels // 2
    return nn.Sequential(
        Conv2dNormActivation(in_channels, intermediate_channels, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=activation),
        Conv2dNormActivation(intermediate_channels, intermediate_channels, kernel_size=3, stride=2,
                             groups=intermediate_channels, norm_layer=norm_layer, activation_layer=activation),
        Conv2dNormActivation(intermediate_channels, out_channels, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=activation),
    )


def _normal_init(conv):
    """N(0, 0.03) weights and zero biases for every Conv2d inside ``conv``."""
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteHead(nn.Module):
    """Depthwise-separable classification and regression heads over every feature level."""

    def __init__(self, in_channels, num_anchors, num_classes, norm_layer):
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(in_channels, num_anchors, num_classes, norm_layer)
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x):
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


class SSDLiteClassificationHead(SSDScoringHead):
    """A prediction block per level giving ``num_classes`` logits per default box."""

    def __init__(self, in_channels, num_anchors, num_classes, norm_layer):
        cls_logits = nn.ModuleList()
        for channels, anchors in zip(in_channels, num_anchors):
            cls_logits.append(_prediction_block(channels, num_classes * anchors, 3, norm_layer))
        _normal_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    """A prediction block per level giving 4 box offsets per default box."""

    def __init__(self, in_channels, num_anchors, norm_layer):
        bbox_reg = nn.ModuleList()
        for channels, anchors in zip(in_channels, num_anchors):
            bbox_reg.append(_prediction_block(channels, 4 * anchors, 3, norm_layer))
        _normal_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """MobileNet features split at the C4 block's expansion layer (two maps: C4 expanded and the last one),
    then four extra down-sampling blocks (widths 512, 256, 256, 128 times ``width_mult``, at least ``min_depth``).
    """

    def __init__(self, backbone, c4_pos, norm_layer, width_mult=1.0, min_depth=16):
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(
            nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),  # up to the C4 expansion
            nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1:]),  # C4 depthwise to the end
        )
        depth_512, depth_256, depth_128 = (max(min_depth, int(d * width_mult)) for d in (512, 256, 128))
        extra = nn.ModuleList([
            _extra_block(backbone[-1].out_channels, depth_512, norm_layer),
            _extra_block(depth_512, depth_256, norm_layer),
            _extra_block(depth_256, depth_256, norm_layer),
            _extra_block(depth_256, depth_128, norm_layer),
        ])
        _normal_init(extra)
        self.extra = extra

    def forward(self, x):
        output = []
        for block in self.features:
            x = block(x)
            output.append(x)
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _mobilenet_extractor(backbone, trainable_layers, norm_layer):
    """Freeze all but the last ``trainable_layers`` stages of a MobileNet's features and wrap them for SSDlite."""
    backbone = backbone.features
    stage_indices = [0] + [i for i, b in enumerate(backbone) if getattr(b, "_is_cn", False)] + [len(backbone) - 1]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise ValueError(f"trainable_layers should be in the range [0, {num_stages}], instead got {trainable_layers}")
    freeze_before = len(backbone) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in backbone[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDLiteFeatureExtractorMobileNet(backbone, stage_indices[-2], norm_layer)


_BACKBONE_KWARGS = ("width_mult", "dilated")


@register_model
def ssdlite320_mobilenet_v3_large(pretrained=False, progress=True, *, weights=None, num_classes=None,
                                  weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                  trainable_backbone_layers=None, norm_layer=None, pretrained_backbone=None,
                                  checkpoint_path=None, **kwargs):
    """SSDlite at 320x320 on MobileNetV3-Large (COCO_V1: 21.3 box mAP); ``trainable_backbone_layers`` in
    [0, 6], default 6. Without backbone weights the backbone's tail is reduced (paper Table 6)."""
    weights, num_classes, weights_backbone = resolve_detection_args(
        "ssdlite320_mobilenet_v3_large", pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    _ignore_size(kwargs)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 6)
    reduce_tail = weights_backbone is None
    if norm_layer is None:
        norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone_kwargs = {k: kwargs.pop(k) for k in _BACKBONE_KWARGS if k in kwargs}
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer,
                                  reduced_tail=reduce_tail, **backbone_kwargs)
    if weights_backbone is None:
        _normal_init(backbone)
    backbone = _mobilenet_extractor(backbone, trainable_backbone_layers, norm_layer)
    size = (320, 320)
    anchor_generator = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = retrieve_out_channels(backbone, size)
    num_anchors = anchor_generator.num_anchors_per_location()
    if len(out_channels) != len(anchor_generator.aspect_ratios):
        raise ValueError(f"The length of the output channels from the backbone {len(out_channels)} do not match "
                         f"the length of the anchor generator aspect ratios {len(anchor_generator.aspect_ratios)}")
    defaults = {
        "score_thresh": 0.001,
        "nms_thresh": 0.55,
        "detections_per_img": 300,
        "topk_candidates": 300,
        "image_mean": [0.5, 0.5, 0.5],  # [0, 1] -> [-1, 1]
        "image_std": [0.5, 0.5, 0.5],
    }
    model = SSD(backbone, anchor_generator, size, num_classes,
                head=SSDLiteHead(out_channels, num_anchors, num_classes, norm_layer), **{**defaults, **kwargs})
    model.default_cfg = {"classifier": ("head.classification_head",)}
    return finish_detection_model(model, weights, progress, checkpoint_path)
