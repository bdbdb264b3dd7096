"""Faster R-CNN (Ren et al. 2015): an RPN proposes regions, RoI heads classify and refine them.

Constructor arguments, defaults, module names (state_dict keys) and builders follow torchvision.
"""
from engine import nn
from engine.nn import functional as F

from ...ops import Conv2dNormActivation, FrozenBatchNorm2d, MultiScaleRoIAlign
from ..mobilenetv3 import mobilenet_v3_large
from ..registry import register_model
from ..weights import (FasterRCNN_MobileNet_V3_Large_320_FPN_Weights, FasterRCNN_MobileNet_V3_Large_FPN_Weights,
                       FasterRCNN_ResNet50_FPN_V2_Weights, FasterRCNN_ResNet50_FPN_Weights, MobileNet_V3_Large_Weights,
                       ResNet50_Weights)
from ._builder import COCO_NUM_CLASSES, finish_detection_model, resolve_detection_args
from ._detector import check_out_channels, default_transform
from .anchor_utils import AnchorGenerator
from . import backbone_utils
from .generalized_rcnn import GeneralizedRCNN
from .roi_heads import RoIHeads
from .rpn import RegionProposalNetwork, RPNHead

__all__ = ["FasterRCNN", "TwoMLPHead", "FastRCNNConvFCHead", "FastRCNNPredictor", "FasterRCNN_ResNet50_FPN_Weights",
           "FasterRCNN_ResNet50_FPN_V2_Weights", "FasterRCNN_MobileNet_V3_Large_FPN_Weights",
           "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights"]


def _default_anchorgen():
    """One anchor size per FPN level (32..512), three aspect ratios each."""
    anchor_sizes = ((32,), (64,), (128,), (256,), (512,))
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


def _check_components(backbone, num_classes, rpn_anchor_generator, box_roi_pool, box_predictor):
    """torchvision's argument checks: backbone channels, component types, num_classes xor box_predictor."""
    check_out_channels(backbone)
    if not isinstance(rpn_anchor_generator, (AnchorGenerator, type(None))):
        raise TypeError("rpn_anchor_generator should be of type AnchorGenerator or None instead of "
                        f"{type(rpn_anchor_generator)}")
    if not isinstance(box_roi_pool, (MultiScaleRoIAlign, type(None))):
        raise TypeError(f"box_roi_pool should be of type MultiScaleRoIAlign or None instead of {type(box_roi_pool)}")
    if num_classes is not None and box_predictor is not None:
        raise ValueError("num_classes should be None when box_predictor is specified")
    if num_classes is None and box_predictor is None:
        raise ValueError("num_classes should not be None when box_predictor is not specified")


class FasterRCNN(GeneralizedRCNN):
    """Faster R-CNN on any backbone with an ``out_channels`` attribute (one tensor or an OrderedDict of levels).

    Images are resized to ``min_size``/``max_size`` and normalised by ``image_mean``/``image_std``;
    the ``rpn_*`` arguments configure proposals, the ``box_*`` ones the second stage. Components left
    None get torchvision's defaults (5-level anchors, RPNHead, 7x7 MultiScaleRoIAlign over levels
    '0'-'3', TwoMLPHead with 1024 features, FastRCNNPredictor for ``num_classes``).
    """

    def __init__(self, backbone, num_classes=None, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train=2000, rpn_pre_nms_top_n_test=1000,
                 rpn_post_nms_top_n_train=2000, rpn_post_nms_top_n_test=1000, rpn_nms_thresh=0.7,
                 rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3, rpn_batch_size_per_image=256,
                 rpn_positive_fraction=0.5, rpn_score_thresh=0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
                 box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5, box_batch_size_per_image=512,
                 box_positive_fraction=0.25, bbox_reg_weights=None, **kwargs):
        _check_components(backbone, num_classes, rpn_anchor_generator, box_roi_pool, box_predictor)
        out_channels = backbone.out_channels
        if rpn_anchor_generator is None:
            rpn_anchor_generator = _default_anchorgen()
        if rpn_head is None:
            rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator, rpn_head, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image,
            rpn_positive_fraction, dict(training=rpn_pre_nms_top_n_train, testing=rpn_pre_nms_top_n_test),
            dict(training=rpn_post_nms_top_n_train, testing=rpn_post_nms_top_n_test), rpn_nms_thresh,
            score_thresh=rpn_score_thresh)
        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2)
        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            box_head = TwoMLPHead(out_channels * resolution**2, 1024)
        if box_predictor is None:
            box_predictor = FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(
            box_roi_pool, box_head, box_predictor, box_fg_iou_thresh, box_bg_iou_thresh, box_batch_size_per_image,
            box_positive_fraction, bbox_reg_weights, box_score_thresh, box_nms_thresh, box_detections_per_img)
        transform = default_transform(min_size, max_size, image_mean, image_std, **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


def _kaiming_init(module):
    """Kaiming-normal (fan_out, ReLU) weights and zero biases for every Conv2d of ``module``."""
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)


class TwoMLPHead(nn.Module):
    """Flatten the pooled RoI features, then two fully connected layers with ReLU (the FPN box head)."""

    def __init__(self, in_channels, representation_size):
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x):
        x = x.flatten(start_dim=1)
        x = F.relu(self.fc6(x))
        x = F.relu(self.fc7(x))
        return x


class FastRCNNConvFCHead(nn.Sequential):
    """Box head of Faster R-CNN v2: 3x3 conv-norm-ReLU layers, flatten, then linear+ReLU layers.

    ``input_size`` is the pooled features' (C, H, W); ``conv_layers`` and ``fc_layers`` list the widths.
    """

    def __init__(self, input_size, conv_layers, fc_layers, norm_layer=None):
        in_channels, in_height, in_width = input_size
        blocks = []
        previous_channels = in_channels
        for current_channels in conv_layers:
            blocks.append(Conv2dNormActivation(previous_channels, current_channels, norm_layer=norm_layer))
            previous_channels = current_channels
        blocks.append(nn.Flatten())
        previous_channels = previous_channels * in_height * in_width
        for current_channels in fc_layers:
            blocks.append(nn.Linear(previous_channels, current_channels))
            blocks.append(nn.ReLU(inplace=True))
            previous_channels = current_channels
        super().__init__(*blocks)
        _kaiming_init(self)


class FastRCNNPredictor(nn.Module):
    """Class logits and per-class box deltas (4 per class, background included) from each RoI's features."""

    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x):
        if x.dim() == 4 and list(x.shape[2:]) != [1, 1]:
            raise AssertionError("x has the wrong shape, expecting the last two dimensions to be [1,1] "
                                 f"instead of {list(x.shape[2:])}")
        x = x.flatten(start_dim=1)
        scores = self.cls_score(x)
        bbox_deltas = self.bbox_pred(x)
        return scores, bbox_deltas


def _finish(model, weights, progress, checkpoint_path, classifier=("roi_heads.box_predictor",)):
    """Name the class-dependent layers (kept out of fine-tuning loads), then load the weights."""
    model.default_cfg = {"classifier": classifier}
    return finish_detection_model(model, weights, progress, checkpoint_path)


def _resnet50_fpn_parts(variant, pretrained, progress, weights, num_classes, weights_backbone, pretrained_backbone,
                        trainable_backbone_layers, v2=False, default_num_classes=COCO_NUM_CLASSES):
    """What the ResNet-50-FPN R-CNN builders share: resolved (weights, num_classes) and the backbone.

    v1 freezes the backbone's BatchNorm when any weights load; v2 trains BatchNorm and adds it to the FPN.
    """
    weights, num_classes, weights_backbone = resolve_detection_args(
        variant, pretrained, weights, num_classes, weights_backbone, pretrained_backbone, default_num_classes)
    backbone = backbone_utils._resnet50_fpn(weights, weights_backbone, progress, trainable_backbone_layers,
                                            trainable_bn=v2, norm_layer=nn.BatchNorm2d if v2 else None)
    return weights, num_classes, backbone


def _v2_heads(out_channels):
    """Faster R-CNN v2's components: 5-level anchors, a 2-conv RPN head, a 4-conv(-BatchNorm) + 1-FC box head."""
    rpn_anchor_generator = _default_anchorgen()
    rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0], conv_depth=2)
    box_head = FastRCNNConvFCHead((out_channels, 7, 7), [256, 256, 256, 256], [1024], norm_layer=nn.BatchNorm2d)
    return {"rpn_anchor_generator": rpn_anchor_generator, "rpn_head": rpn_head, "box_head": box_head}


def _resnet50_fpn_rcnn(model_class, variant, pretrained, progress, weights, num_classes, weights_backbone,
                       trainable_backbone_layers, pretrained_backbone, checkpoint_path, v2_heads=None,
                       classifier=("roi_heads.box_predictor",), **kwargs):
    """The body of the ResNet-50-FPN Faster/Mask R-CNN builders: ``model_class`` on a v1 or (given the
    ``v2_heads(out_channels)`` components) v2 backbone, then the weights loaded."""
    weights, num_classes, backbone = _resnet50_fpn_parts(
        variant, pretrained, progress, weights, num_classes, weights_backbone, pretrained_backbone,
        trainable_backbone_layers, v2=v2_heads is not None)
    heads = {} if v2_heads is None else v2_heads(backbone.out_channels)
    model = model_class(backbone, num_classes=num_classes, **heads, **kwargs)
    return _finish(model, weights, progress, checkpoint_path, classifier)


@register_model
def fasterrcnn_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                            weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                            pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """Faster R-CNN with a ResNet-50-FPN backbone (frozen BatchNorm when any weights are loaded)."""
    return _resnet50_fpn_rcnn(FasterRCNN, "fasterrcnn_resnet50_fpn", pretrained, progress, weights, num_classes,
                              weights_backbone, trainable_backbone_layers, pretrained_backbone, checkpoint_path,
                              **kwargs)


@register_model
def fasterrcnn_resnet50_fpn_v2(pretrained=False, progress=True, *, weights=None, num_classes=None,
                               weights_backbone=None, trainable_backbone_layers=None, pretrained_backbone=None,
                               checkpoint_path=None, **kwargs):
    """Faster R-CNN v2 (Li et al. 2021): trainable BatchNorm in backbone and FPN, 2-conv RPN head, conv box head.

    As in torchvision, the backbone gets no ImageNet weights unless ``weights_backbone`` is given.
    """
    return _resnet50_fpn_rcnn(FasterRCNN, "fasterrcnn_resnet50_fpn_v2", pretrained, progress, weights, num_classes,
                              weights_backbone, trainable_backbone_layers, pretrained_backbone, checkpoint_path,
                              v2_heads=_v2_heads, **kwargs)


def _fasterrcnn_mobilenet_v3_large_fpn(variant, pretrained, progress, weights, num_classes, weights_backbone,
                                       trainable_backbone_layers, pretrained_backbone, checkpoint_path, **kwargs):
    """Faster R-CNN on the last two MobileNetV3-Large stages with an FPN; 5 anchor sizes x 3 ratios per level."""
    weights, num_classes, weights_backbone = resolve_detection_args(
        variant, pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = backbone_utils._validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    backbone = backbone_utils._mobilenet_extractor(backbone, True, trainable_backbone_layers)
    anchor_sizes = ((32, 64, 128, 256, 512),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    model = FasterRCNN(backbone, num_classes, rpn_anchor_generator=AnchorGenerator(anchor_sizes, aspect_ratios),
                       **kwargs)
    return _finish(model, weights, progress, checkpoint_path)


@register_model
def fasterrcnn_mobilenet_v3_large_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                                      weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                      trainable_backbone_layers=None, pretrained_backbone=None, checkpoint_path=None,
                                      **kwargs):
    """High-resolution Faster R-CNN with a MobileNetV3-Large FPN backbone (RPN score threshold 0.05)."""
    kwargs = {"rpn_score_thresh": 0.05, **kwargs}
    return _fasterrcnn_mobilenet_v3_large_fpn(
        "fasterrcnn_mobilenet_v3_large_fpn", pretrained, progress, weights, num_classes, weights_backbone,
        trainable_backbone_layers, pretrained_backbone, checkpoint_path, **kwargs)


@register_model
def fasterrcnn_mobilenet_v3_large_320_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                                          weights_backbone=MobileNet_V3_Large_Weights.IMAGENET1K_V1,
                                          trainable_backbone_layers=None, pretrained_backbone=None,
                                          checkpoint_path=None, **kwargs):
    """Low-resolution (320-640 px) mobile Faster R-CNN: 150 proposals at test time, RPN score threshold 0.05."""
    defaults = {"min_size": 320, "max_size": 640, "rpn_pre_nms_top_n_test": 150, "rpn_post_nms_top_n_test": 150,
                "rpn_score_thresh": 0.05}
    kwargs = {**defaults, **kwargs}
    return _fasterrcnn_mobilenet_v3_large_fpn(
        "fasterrcnn_mobilenet_v3_large_320_fpn", pretrained, progress, weights, num_classes, weights_backbone,
        trainable_backbone_layers, pretrained_backbone, checkpoint_path, **kwargs)
