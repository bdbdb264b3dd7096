"""RetinaNet (Lin et al. 2017, focal loss) and its builders."""
from functools import partial

import engine
from engine import nn

from ...ops import sigmoid_focal_loss
from ...ops.feature_pyramid_network import LastLevelP6P7
from ...ops.misc import Conv2dNormActivation
from ..registry import register_model
from ..weights import ResNet50_Weights, RetinaNet_ResNet50_FPN_V2_Weights, RetinaNet_ResNet50_FPN_Weights
from . import _utils as det_utils
from ._builder import finish_detection_model, resolve_detection_args
from ._detector import Detector, backbone_features, check_out_channels, default_transform, prepare_inputs
from ._one_stage import (_box_loss, _iou_matcher, _match_anchors, _postprocess, _prior_logits, _run_levels,
                         _split_levels, _sum)
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet50_fpn

__all__ = ["RetinaNet", "RetinaNet_ResNet50_FPN_Weights", "RetinaNet_ResNet50_FPN_V2_Weights", "RetinaNetHead",
           "RetinaNetClassificationHead", "RetinaNetRegressionHead"]


def _v1_to_v2_weights(state_dict, prefix):
    """Version-1 heads interleaved Conv2d and ReLU (``conv.{2i}``); now each is ``conv.{i}.0``."""
    for i in range(4):
        for kind in ("weight", "bias"):
            old_key = f"{prefix}conv.{2 * i}.{kind}"
            if old_key in state_dict:
                state_dict[f"{prefix}conv.{i}.0.{kind}"] = state_dict.pop(old_key)


def _default_anchorgen():
    """Three sizes (x, x * 2^(1/3), x * 2^(2/3)) and three aspect ratios on each of the five levels."""
    anchor_sizes = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


def _class_probabilities(outputs):
    """RetinaNet's detection scores: the sigmoid of the class logits."""
    return engine.sigmoid(outputs["cls_logits"])


def _conv_tower(in_channels, norm_layer):
    """Four 3x3 conv (+ norm) + ReLU blocks, the shared trunk of each RetinaNet head."""
    return nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer) for _ in range(4)])


def _init_tower(conv):
    """Normal(0, 0.01) weights and zero biases for every convolution of a head trunk."""
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0)


class RetinaNetHead(nn.Module):
    """Classification and box-regression heads run on every pyramid level."""

    def __init__(self, in_channels, num_anchors, num_classes, norm_layer=None):
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors, num_classes,
                                                               norm_layer=norm_layer)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors, norm_layer=norm_layer)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """{'classification': focal loss, 'bbox_regression': box loss}, each averaged over images."""
        return {
            "classification": self.classification_head.compute_loss(targets, head_outputs, matched_idxs),
            "bbox_regression": self.regression_head.compute_loss(targets, head_outputs, anchors, matched_idxs),
        }

    def forward(self, x):
        return {"cls_logits": self.classification_head(x), "bbox_regression": self.regression_head(x)}


class RetinaNetClassificationHead(nn.Module):
    """Four-conv trunk and a 3x3 conv giving one sigmoid logit per (anchor, class).

    The logits' bias starts at the ``prior_probability`` of foreground, so training starts stable.
    """

    _version = 2

    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01, norm_layer=None):
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        _init_tower(self.conv)
        self.cls_logits = _prior_logits(in_channels, num_anchors, num_classes, prior_probability)
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.BETWEEN_THRESHOLDS = det_utils.Matcher.BETWEEN_THRESHOLDS

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rename version-1 trunk keys (``conv.{2i}``) to ``conv.{i}.0``."""
        if version is None or version < 2:
            _v1_to_v2_weights(state_dict, prefix)

    def compute_loss(self, targets, head_outputs, matched_idxs):
        """Sigmoid focal loss over the anchors not between the IoU thresholds, per image / its foreground count."""
        losses = []
        cls_logits = head_outputs["cls_logits"]
        for targets_per_image, cls_logits_per_image, matched_idxs_per_image in zip(targets, cls_logits, matched_idxs):
            foreground_idxs_per_image = matched_idxs_per_image >= 0
            num_foreground = int(foreground_idxs_per_image.sum())
            gt_classes_target = engine.zeros_like(cls_logits_per_image)
            foreground_labels = targets_per_image["labels"][matched_idxs_per_image[foreground_idxs_per_image]]
            gt_classes_target[foreground_idxs_per_image, foreground_labels] = 1.0
            valid_idxs_per_image = matched_idxs_per_image != self.BETWEEN_THRESHOLDS
            loss = sigmoid_focal_loss(cls_logits_per_image[valid_idxs_per_image],
                                      gt_classes_target[valid_idxs_per_image], reduction="sum")
            losses.append(loss / max(1, num_foreground))
        return _sum(losses) / len(targets)

    def forward(self, x):
        return _run_levels(x, self.conv, self.cls_logits, self.num_classes)


class RetinaNetRegressionHead(nn.Module):
    """Four-conv trunk and a 3x3 conv giving 4 box offsets per anchor.

    ``_loss_type`` picks the box loss: 'l1' (default), 'smooth_l1', 'giou', 'diou' or 'ciou'.
    """

    _version = 2

    def __init__(self, in_channels, num_anchors, norm_layer=None):
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        _init_tower(self.conv)
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rename version-1 trunk keys (``conv.{2i}``) to ``conv.{i}.0``."""
        if version is None or version < 2:
            _v1_to_v2_weights(state_dict, prefix)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """Box loss of the foreground anchors against their matched boxes, per image / its foreground count."""
        losses = []
        bbox_regression = head_outputs["bbox_regression"]
        for targets_per_image, bbox_regression_per_image, anchors_per_image, matched_idxs_per_image in zip(
                targets, bbox_regression, anchors, matched_idxs):
            foreground_idxs_per_image = engine.where(matched_idxs_per_image >= 0)[0]
            num_foreground = foreground_idxs_per_image.numel()
            matched_gt_boxes_per_image = targets_per_image["boxes"][matched_idxs_per_image[foreground_idxs_per_image]]
            bbox_regression_per_image = bbox_regression_per_image[foreground_idxs_per_image, :]
            anchors_per_image = anchors_per_image[foreground_idxs_per_image, :]
            loss = _box_loss(self._loss_type, self.box_coder, anchors_per_image, matched_gt_boxes_per_image,
                             bbox_regression_per_image)
            losses.append(loss / max(1, num_foreground))
        return _sum(losses) / max(1, len(targets))

    def forward(self, x):
        return _run_levels(x, self.conv, self.bbox_reg, 4)


class RetinaNet(Detector):
    """RetinaNet: a backbone with FPN, dense anchors on each level, focal-loss classification and box regression.

    Input: a list of CHW images in [0, 1] (any sizes). Train mode (with ``targets``, dicts of ``boxes``
    x1y1x2y2 and ``labels``) returns ``{'classification', 'bbox_regression'}`` losses; eval mode returns
    one ``{'boxes', 'scores', 'labels'}`` dict per image. Extra ``kwargs`` go to GeneralizedRCNNTransform.
    """

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, proposal_matcher=None, score_thresh=0.05, nms_thresh=0.5,
                 detections_per_img=300, fg_iou_thresh=0.5, bg_iou_thresh=0.4, topk_candidates=1000, **kwargs):
        super().__init__()
        check_out_channels(backbone)
        self.backbone = backbone
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError("anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(anchor_generator)}")
        if anchor_generator is None:
            anchor_generator = _default_anchorgen()
        self.anchor_generator = anchor_generator
        if head is None:
            head = RetinaNetHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes)
        self.head = head
        if proposal_matcher is None:
            proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.proposal_matcher = proposal_matcher
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.transform = default_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def compute_loss(self, targets, head_outputs, anchors):
        """Match anchors to target boxes by IoU (none: all background), then the head's losses."""
        matched_idxs = _match_anchors(anchors, targets, _iou_matcher(self.proposal_matcher))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """Per image: each level's top candidates above ``score_thresh``, decoded and clipped, then NMS."""
        return _postprocess(self, head_outputs, anchors, image_shapes, _class_probabilities,
                            self.box_coder.decode_single)

    def forward(self, images, targets=None):
        images, targets, original_image_sizes = prepare_inputs(self, images, targets, name_shape=False)
        features = list(backbone_features(self.backbone, images).values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        losses, detections = {}, []
        if self.training:
            losses = self.compute_loss(targets, head_outputs, anchors)
        else:
            detections = self._detect(features, head_outputs, anchors, images.image_sizes, original_image_sizes)
        return self.eager_outputs(losses, detections)

    def _detect(self, features, head_outputs, anchors, image_sizes, original_image_sizes):
        """Eval path: split outputs per level (A anchors per location), postprocess, map to the input sizes."""
        num_locations_per_level = [x.size(2) * x.size(3) for x in features]
        A = head_outputs["cls_logits"].size(1) // sum(num_locations_per_level)
        num_anchors_per_level = [hw * A for hw in num_locations_per_level]
        split_head_outputs, split_anchors = _split_levels(head_outputs, anchors, num_anchors_per_level)
        detections = self.postprocess_detections(split_head_outputs, split_anchors, image_sizes)
        return self.transform.postprocess(detections, image_sizes, original_image_sizes)


def _retinanet_resnet50_fpn(variant, pretrained, progress, weights, num_classes, weights_backbone,
                            trainable_backbone_layers, pretrained_backbone, checkpoint_path, v2, **kwargs):
    """Shared builder: v1 has frozen-BN backbone and plain heads; v2 has GroupNorm heads, GIoU loss, P6 from C5."""
    weights, num_classes, weights_backbone = resolve_detection_args(
        variant, pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    backbone = _resnet50_fpn(weights, weights_backbone, progress, trainable_backbone_layers, trainable_bn=v2,
                             returned_layers=[2, 3, 4],
                             make_extra_blocks=partial(LastLevelP6P7, 2048 if v2 else 256, 256))
    if v2:
        anchor_generator = _default_anchorgen()
        head = RetinaNetHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes,
                             norm_layer=partial(nn.GroupNorm, 32))
        head.regression_head._loss_type = "giou"
        kwargs.update(anchor_generator=anchor_generator, head=head)
    model = RetinaNet(backbone, num_classes, **kwargs)
    model.default_cfg = {"classifier": ("head.classification_head.cls_logits",)}
    return finish_detection_model(model, weights, progress, checkpoint_path)


@register_model
def retinanet_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                           weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                           pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """RetinaNet with a ResNet-50-FPN backbone (P3-P7; P6 from P5), as in the paper."""
    return _retinanet_resnet50_fpn("retinanet_resnet50_fpn", pretrained, progress, weights, num_classes,
                                   weights_backbone, trainable_backbone_layers, pretrained_backbone,
                                   checkpoint_path, False, **kwargs)


@register_model
def retinanet_resnet50_fpn_v2(pretrained=False, progress=True, *, weights=None, num_classes=None,
                              weights_backbone=None, trainable_backbone_layers=None, pretrained_backbone=None,
                              checkpoint_path=None, **kwargs):
    """Improved RetinaNet (ATSS paper's recipe): GroupNorm heads, GIoU box loss, P6 from C5."""
    return _retinanet_resnet50_fpn("retinanet_resnet50_fpn_v2", pretrained, progress, weights, num_classes,
                                   weights_backbone, trainable_backbone_layers, pretrained_backbone,
                                   checkpoint_path, True, **kwargs)
