"""FCOS (Tian et al. 2019): anchor-free one-stage detection with centerness, and its builder."""
from functools import partial

import engine
from engine import nn
from engine.nn import functional as F

from ...ops import generalized_box_iou_loss, sigmoid_focal_loss
from ...ops.feature_pyramid_network import LastLevelP6P7
from ..registry import register_model
from ..weights import FCOS_ResNet50_FPN_Weights, ResNet50_Weights
from . import _utils as det_utils
from ._builder import finish_detection_model, resolve_detection_args
from ._detector import Detector, backbone_features, check_out_channels, default_transform, prepare_inputs
from ._one_stage import _match_anchors, _per_anchor, _postprocess, _prior_logits, _run_levels, _split_levels
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet50_fpn

__all__ = ["FCOS", "FCOS_ResNet50_FPN_Weights", "FCOSHead", "FCOSClassificationHead", "FCOSRegressionHead"]


def _norm_tower(in_channels, num_convs, norm_layer):
    """``num_convs`` x (3x3 conv, norm, ReLU) as one flat Sequential (convolutions not yet re-initialised)."""
    if norm_layer is None:
        norm_layer = partial(nn.GroupNorm, 32)
    conv = []
    for _ in range(num_convs):
        conv.append(nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1))
        conv.append(norm_layer(in_channels))
        conv.append(nn.ReLU())
    return nn.Sequential(*conv)


def _init_tower(conv):
    """N(0, 0.01) weights and zero biases for a tower's convolutions."""
    for layer in conv.children():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.constant_(layer.bias, 0)


def _centered_probabilities(outputs):
    """FCOS's detection scores: sqrt(class probability * centerness probability)."""
    return engine.sqrt(engine.sigmoid(outputs["cls_logits"]) * engine.sigmoid(outputs["bbox_ctrness"]))


def _centerness_targets(bbox_reg_targets):
    """sqrt(min(l, r) / max(l, r) * min(t, b) / max(t, b)) of (K, 4) (l, t, r, b) distance targets."""
    left_right = bbox_reg_targets[:, [0, 2]]
    top_bottom = bbox_reg_targets[:, [1, 3]]
    return engine.sqrt((left_right.min(dim=-1)[0] / left_right.max(dim=-1)[0])
                       * (top_bottom.min(dim=-1)[0] / top_bottom.max(dim=-1)[0]))


class FCOSHead(nn.Module):
    """Classification head plus box-regression-and-centerness head, on every pyramid level."""

    def __init__(self, in_channels, num_anchors, num_classes, num_convs=4):
        super().__init__()
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(in_channels, num_anchors, num_classes, num_convs)
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs)

    def _matched_targets(self, targets, matched_idxs):
        """Per-anchor target class (-1 for background) and box, stacked over images."""
        all_gt_classes_targets, all_gt_boxes_targets = [], []
        for targets_per_image, matched_idxs_per_image in zip(targets, matched_idxs):
            if len(targets_per_image["labels"]) == 0:
                gt_classes_targets = targets_per_image["labels"].new_zeros((len(matched_idxs_per_image),))
                gt_boxes_targets = targets_per_image["boxes"].new_zeros((len(matched_idxs_per_image), 4))
            else:
                gt_classes_targets = targets_per_image["labels"][matched_idxs_per_image.clip(min=0)]
                gt_boxes_targets = targets_per_image["boxes"][matched_idxs_per_image.clip(min=0)]
            gt_classes_targets[matched_idxs_per_image < 0] = -1
            all_gt_classes_targets.append(gt_classes_targets)
            all_gt_boxes_targets.append(gt_boxes_targets)
        return engine.stack(all_gt_classes_targets), engine.stack(all_gt_boxes_targets)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """Focal, GIoU and centerness-BCE losses, each summed over the batch / the foreground count."""
        cls_logits = head_outputs["cls_logits"]
        bbox_regression = head_outputs["bbox_regression"]
        bbox_ctrness = head_outputs["bbox_ctrness"]
        all_gt_classes_targets, all_gt_boxes_targets = self._matched_targets(targets, matched_idxs)
        anchors = engine.stack(anchors)
        foreground_mask = all_gt_classes_targets >= 0
        num_foreground = max(1, int(foreground_mask.sum()))
        gt_classes_targets = engine.zeros_like(cls_logits)
        gt_classes_targets[foreground_mask, all_gt_classes_targets[foreground_mask]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes_targets, reduction="sum")
        pred_boxes = self.box_coder.decode(bbox_regression, anchors)
        loss_bbox_reg = generalized_box_iou_loss(pred_boxes[foreground_mask], all_gt_boxes_targets[foreground_mask],
                                                 reduction="sum")
        bbox_reg_targets = self.box_coder.encode(anchors[foreground_mask], all_gt_boxes_targets[foreground_mask])
        gt_ctrness_targets = _centerness_targets(bbox_reg_targets)
        pred_centerness = bbox_ctrness.squeeze(dim=2)
        loss_bbox_ctrness = F.binary_cross_entropy_with_logits(pred_centerness[foreground_mask], gt_ctrness_targets,
                                                               reduction="sum")
        return {
            "classification": loss_cls / num_foreground,
            "bbox_regression": loss_bbox_reg / num_foreground,
            "bbox_ctrness": loss_bbox_ctrness / num_foreground,
        }

    def forward(self, x):
        cls_logits = self.classification_head(x)
        bbox_regression, bbox_ctrness = self.regression_head(x)
        return {"cls_logits": cls_logits, "bbox_regression": bbox_regression, "bbox_ctrness": bbox_ctrness}


class FCOSClassificationHead(nn.Module):
    """``num_convs`` conv-GroupNorm-ReLU blocks and a 3x3 conv giving one sigmoid logit per (location, class)."""

    def __init__(self, in_channels, num_anchors, num_classes, num_convs=4, prior_probability=0.01, norm_layer=None):
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.conv = _norm_tower(in_channels, num_convs, norm_layer)
        _init_tower(self.conv)
        self.cls_logits = _prior_logits(in_channels, num_anchors, num_classes, prior_probability)

    def forward(self, x):
        return _run_levels(x, self.conv, self.cls_logits, self.num_classes)


class FCOSRegressionHead(nn.Module):
    """``num_convs`` conv-GroupNorm-ReLU blocks, then non-negative (l, t, r, b) distances and a centerness logit."""

    def __init__(self, in_channels, num_anchors, num_convs=4, norm_layer=None):
        super().__init__()
        self.conv = _norm_tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        self.bbox_ctrness = nn.Conv2d(in_channels, num_anchors * 1, kernel_size=3, stride=1, padding=1)
        for layer in [self.bbox_reg, self.bbox_ctrness]:
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)
        _init_tower(self.conv)  # after the outputs, in torchvision's order of random initialisation

    def forward(self, x):
        all_bbox_regression, all_bbox_ctrness = [], []
        for features in x:
            bbox_feature = self.conv(features)
            bbox_regression = F.relu(self.bbox_reg(bbox_feature))
            bbox_ctrness = self.bbox_ctrness(bbox_feature)
            all_bbox_regression.append(_per_anchor(bbox_regression, 4))
            all_bbox_ctrness.append(_per_anchor(bbox_ctrness, 1))
        return engine.cat(all_bbox_regression, dim=1), engine.cat(all_bbox_ctrness, dim=1)


class FCOS(Detector):
    """FCOS: every feature-map location inside (the centre of) a box predicts that box directly.

    Input: a list of CHW images in [0, 1]. Train mode (with ``targets``) returns ``{'classification',
    'bbox_regression', 'bbox_ctrness'}`` losses; eval mode one ``{'boxes', 'scores', 'labels'}`` dict per
    image, scored by sqrt(class probability * centerness). The anchor generator must give one anchor per
    location (its size is the level's stride). Extra ``kwargs`` go to GeneralizedRCNNTransform.
    """

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, center_sampling_radius=1.5, score_thresh=0.2, nms_thresh=0.6,
                 detections_per_img=100, topk_candidates=1000, **kwargs):
        super().__init__()
        check_out_channels(backbone)
        self.backbone = backbone
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError("anchor_generator should be of type AnchorGenerator or None, instead  got "
                            f"{type(anchor_generator)}")
        if anchor_generator is None:
            anchor_sizes = ((8,), (16,), (32,), (64,), (128,))
            aspect_ratios = ((1.0,),) * len(anchor_sizes)
            anchor_generator = AnchorGenerator(anchor_sizes, aspect_ratios)
        self.anchor_generator = anchor_generator
        if self.anchor_generator.num_anchors_per_location()[0] != 1:
            raise ValueError("anchor_generator.num_anchors_per_location()[0] should be 1 instead of "
                             f"{anchor_generator.num_anchors_per_location()[0]}")
        if head is None:
            head = FCOSHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes)
        self.head = head
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        self.transform = default_transform(min_size, max_size, image_mean, image_std, **kwargs)
        self.center_sampling_radius = center_sampling_radius
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def _match_image(self, anchors_per_image, gt_boxes, num_anchors_per_level):
        """Each location's target box: the smallest box whose centre region holds it and whose scale fits its level.

        A location matches a box when it lies inside the box, within ``center_sampling_radius`` strides of
        its centre, and its largest distance to the box sides is in (4, 8) strides (first level: from 0,
        last level: unbounded). Unmatched locations get -1.
        """
        gt_centers = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
        anchor_centers = (anchors_per_image[:, :2] + anchors_per_image[:, 2:]) / 2
        anchor_sizes = anchors_per_image[:, 2] - anchors_per_image[:, 0]
        center_dist = (anchor_centers[:, None, :] - gt_centers[None, :, :]).abs().max(dim=2).values
        pairwise_match = center_dist < self.center_sampling_radius * anchor_sizes[:, None]
        x, y = anchor_centers.unsqueeze(dim=2).unbind(dim=1)
        x0, y0, x1, y1 = gt_boxes.unsqueeze(dim=0).unbind(dim=2)
        pairwise_dist = engine.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)
        pairwise_match = pairwise_match & (pairwise_dist.min(dim=2).values > 0)
        lower_bound = anchor_sizes * 4
        lower_bound[: num_anchors_per_level[0]] = 0
        upper_bound = anchor_sizes * 8
        upper_bound[-num_anchors_per_level[-1]:] = float("inf")
        pairwise_dist = pairwise_dist.max(dim=2).values
        in_scale = (pairwise_dist > lower_bound[:, None]) & (pairwise_dist < upper_bound[:, None])
        pairwise_match = pairwise_match & in_scale
        gt_areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
        pairwise_match = pairwise_match.to(engine.float32) * (1e8 - gt_areas[None, :])
        min_values, matched_idx = pairwise_match.max(dim=1)
        matched_idx[min_values < 1e-5] = -1
        return matched_idx

    def compute_loss(self, targets, head_outputs, anchors, num_anchors_per_level):
        """Assign locations to boxes (none: all background), then the head's losses."""
        match = partial(self._match_image, num_anchors_per_level=num_anchors_per_level)
        matched_idxs = _match_anchors(anchors, targets, match)
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """Per image: each level's top sqrt(class * centerness) scores above ``score_thresh``, decoded, then NMS."""
        return _postprocess(self, head_outputs, anchors, image_shapes, _centered_probabilities, self.box_coder.decode)

    def forward(self, images, targets=None):
        images, targets, original_image_sizes = prepare_inputs(self, images, targets)
        features = list(backbone_features(self.backbone, images).values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_anchors_per_level = [x.size(2) * x.size(3) for x in features]
        losses, detections = {}, []
        if self.training:
            losses = self.compute_loss(targets, head_outputs, anchors, num_anchors_per_level)
        else:
            split_head_outputs, split_anchors = _split_levels(head_outputs, anchors, num_anchors_per_level)
            detections = self.postprocess_detections(split_head_outputs, split_anchors, images.image_sizes)
            detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        return self.eager_outputs(losses, detections)


@register_model
def fcos_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                      weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                      pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """FCOS with a ResNet-50-FPN backbone (P3-P7; P6 from P5)."""
    weights, num_classes, weights_backbone = resolve_detection_args(
        "fcos_resnet50_fpn", pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    backbone = _resnet50_fpn(weights, weights_backbone, progress, trainable_backbone_layers, returned_layers=[2, 3, 4],
                             make_extra_blocks=partial(LastLevelP6P7, 256, 256))
    model = FCOS(backbone, num_classes, **kwargs)
    model.default_cfg = {"classifier": ("head.classification_head.cls_logits",)}
    return finish_detection_model(model, weights, progress, checkpoint_path)
