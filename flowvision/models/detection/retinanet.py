"""RetinaNet (Lin et al. 2017, focal loss) and its builders.

Also holds the pieces both one-stage detectors (RetinaNet, FCOS) share: head-output reshaping,
input checks, per-level candidate selection and torchvision's ``_box_loss``.
"""
import math
from collections import OrderedDict
from functools import partial

import engine
from engine import nn
from engine.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import complete_box_iou_loss, distance_box_iou_loss, generalized_box_iou_loss, sigmoid_focal_loss
from ...ops.feature_pyramid_network import LastLevelP6P7
from ...ops.misc import Conv2dNormActivation, FrozenBatchNorm2d
from ..registry import register_model
from ..resnet import resnet50
from ..weights import ResNet50_Weights
from . import _utils as det_utils
from ._builder import finish_detection_model, resolve_detection_args
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .transform import GeneralizedRCNNTransform

__all__ = ["RetinaNet", "RetinaNetHead", "RetinaNetClassificationHead", "RetinaNetRegressionHead"]


def _sum(x):
    """Sum of a list of tensors (left to right, as torchvision adds the per-image losses)."""
    res = x[0]
    for i in x[1:]:
        res = res + i
    return res


def _box_loss(type, box_coder, anchors_per_image, matched_gt_boxes_per_image, bbox_regression_per_image, cnf=None):
    """Summed box loss of one image's foreground anchors.

    'l1' / 'smooth_l1' compare box codes; 'giou' / 'diou' / 'ciou' compare decoded boxes.
    """
    if type not in ("l1", "smooth_l1", "ciou", "diou", "giou"):
        raise AssertionError(f"Unsupported loss: {type}")
    cnf = cnf or {}
    if type in ("l1", "smooth_l1"):
        target_regression = box_coder.encode_single(matched_gt_boxes_per_image, anchors_per_image)
        if type == "l1":
            return F.l1_loss(bbox_regression_per_image, target_regression, reduction="sum")
        return F.smooth_l1_loss(bbox_regression_per_image, target_regression, reduction="sum",
                                beta=cnf.get("beta", 1.0))
    bbox_per_image = box_coder.decode_single(bbox_regression_per_image, anchors_per_image)
    iou_loss = {"ciou": complete_box_iou_loss, "diou": distance_box_iou_loss, "giou": generalized_box_iou_loss}[type]
    return iou_loss(bbox_per_image, matched_gt_boxes_per_image, reduction="sum", eps=cnf.get("eps", 1e-7))


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


def _per_anchor(x, channels):
    """(N, A * channels, H, W) head map -> (N, H * W * A, channels), anchors ordered as the generator's."""
    N, _, H, W = x.shape
    x = x.view(N, -1, channels, H, W)
    x = x.permute(0, 3, 4, 1, 2)
    return x.reshape(N, -1, channels)


def _check_training_targets(training, targets):
    """Training needs targets whose ``boxes`` are Tensor[N, 4]."""
    if not training:
        return
    if targets is None:
        raise AssertionError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, engine.Tensor):
            raise AssertionError("Expected target boxes to be of type Tensor.")
        if not (len(boxes.shape) == 2 and boxes.shape[-1] == 4):
            raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.")


def _original_image_sizes(images):
    """(H, W) of every input image, to map detections back to it."""
    sizes = []
    for img in images:
        val = img.shape[-2:]
        if len(val) != 2:
            raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got {val}")
        sizes.append((val[0], val[1]))
    return sizes


def _check_degenerate_boxes(targets):
    """Refuse target boxes with x2 <= x1 or y2 <= y1, naming the first one."""
    if targets is None:
        return
    for target_idx, target in enumerate(targets):
        boxes = target["boxes"]
        degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
        if degenerate_boxes.any():
            bb_idx = engine.where(degenerate_boxes.any(dim=1))[0][0]
            degen_bb = boxes[bb_idx].tolist()
            raise AssertionError("All bounding boxes should have positive height and width."
                                 f" Found invalid box {degen_bb} for target at index {target_idx}.")


def _backbone_features(backbone, images):
    """The backbone's feature maps of the batched images, as a list (a lone tensor becomes one level)."""
    features = backbone(images.tensors)
    if isinstance(features, engine.Tensor):
        features = OrderedDict([("0", features)])
    return list(features.values())


def _top_candidates(scores, score_thresh, topk_candidates, num_classes):
    """Of one level's flattened (anchor, class) scores, the best ``topk_candidates`` above the threshold.

    Returns their scores, anchor indices and class labels.
    """
    keep_idxs = scores > score_thresh
    scores = scores[keep_idxs]
    topk_idxs = engine.where(keep_idxs)[0]
    num_topk = min(topk_candidates, topk_idxs.size(0))
    scores, idxs = scores.topk(num_topk)
    topk_idxs = topk_idxs[idxs]
    anchor_idxs = engine.div(topk_idxs, num_classes, rounding_mode="floor")
    labels = topk_idxs % num_classes
    return scores, anchor_idxs, labels


def _nms_detections(boxes, scores, labels, nms_thresh, detections_per_img):
    """Per-class NMS over one image's candidates from all levels; the best ``detections_per_img`` survive."""
    boxes = engine.cat(boxes, dim=0)
    scores = engine.cat(scores, dim=0)
    labels = engine.cat(labels, dim=0)
    keep = box_ops.batched_nms(boxes, scores, labels, nms_thresh)
    keep = keep[:detections_per_img]
    return {"boxes": boxes[keep], "scores": scores[keep], "labels": labels[keep]}


def _split_levels(head_outputs, anchors, num_anchors_per_level):
    """Head outputs (N, sum HWA, C) and per-image anchors cut into per-level pieces."""
    split_head_outputs = {k: list(v.split(num_anchors_per_level, dim=1)) for k, v in head_outputs.items()}
    split_anchors = [list(a.split(num_anchors_per_level)) for a in anchors]
    return split_head_outputs, split_anchors


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
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
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
        all_cls_logits = []
        for features in x:
            cls_logits = self.conv(features)
            cls_logits = self.cls_logits(cls_logits)
            all_cls_logits.append(_per_anchor(cls_logits, self.num_classes))
        return engine.cat(all_cls_logits, dim=1)


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
        all_bbox_regression = []
        for features in x:
            bbox_regression = self.conv(features)
            bbox_regression = self.bbox_reg(bbox_regression)
            all_bbox_regression.append(_per_anchor(bbox_regression, 4))
        return engine.cat(all_bbox_regression, dim=1)


class RetinaNet(nn.Module):
    """RetinaNet: a backbone with FPN, dense anchors on each level, focal-loss classification and box regression.

    Input: a list of CHW images in [0, 1] (any sizes). Train mode (with ``targets``, dicts of ``boxes``
    x1y1x2y2 and ``labels``) returns ``{'classification', 'bbox_regression'}`` losses; eval mode returns
    one ``{'boxes', 'scores', 'labels'}`` dict per image. Extra ``kwargs`` go to GeneralizedRCNNTransform.
    """

    def __init__(self, backbone, num_classes, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 anchor_generator=None, head=None, proposal_matcher=None, score_thresh=0.05, nms_thresh=0.5,
                 detections_per_img=300, fg_iou_thresh=0.5, bg_iou_thresh=0.4, topk_candidates=1000, **kwargs):
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
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
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def eager_outputs(self, losses, detections):
        """The losses in train mode, the detections in eval mode."""
        if self.training:
            return losses
        return detections

    def compute_loss(self, targets, head_outputs, anchors):
        """Match anchors to target boxes by IoU (none: all background), then the head's losses."""
        matched_idxs = []
        for anchors_per_image, targets_per_image in zip(anchors, targets):
            if targets_per_image["boxes"].numel() == 0:
                matched_idxs.append(engine.full((anchors_per_image.size(0),), -1, dtype=engine.int64))
                continue
            match_quality_matrix = box_ops.box_iou(targets_per_image["boxes"], anchors_per_image)
            matched_idxs.append(self.proposal_matcher(match_quality_matrix))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes):
        """Per image: each level's top candidates above ``score_thresh``, decoded and clipped, then NMS."""
        class_logits = head_outputs["cls_logits"]
        box_regression = head_outputs["bbox_regression"]
        detections = []
        for index, image_shape in enumerate(image_shapes):
            image_boxes, image_scores, image_labels = [], [], []
            for box_regression_per_level, logits_per_level, anchors_per_level in zip(
                    [br[index] for br in box_regression], [cl[index] for cl in class_logits], anchors[index]):
                scores_per_level = engine.sigmoid(logits_per_level).flatten()
                scores_per_level, anchor_idxs, labels_per_level = _top_candidates(
                    scores_per_level, self.score_thresh, self.topk_candidates, logits_per_level.shape[-1])
                boxes_per_level = self.box_coder.decode_single(box_regression_per_level[anchor_idxs],
                                                               anchors_per_level[anchor_idxs])
                image_boxes.append(box_ops.clip_boxes_to_image(boxes_per_level, image_shape))
                image_scores.append(scores_per_level)
                image_labels.append(labels_per_level)
            detections.append(_nms_detections(image_boxes, image_scores, image_labels, self.nms_thresh,
                                              self.detections_per_img))
        return detections

    def forward(self, images, targets=None):
        _check_training_targets(self.training, targets)
        original_image_sizes = _original_image_sizes(images)
        images, targets = self.transform(images, targets)
        _check_degenerate_boxes(targets)
        features = _backbone_features(self.backbone, images)
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
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    if v2:
        backbone = resnet50(weights=weights_backbone, progress=progress)
        extra_blocks = LastLevelP6P7(2048, 256)
    else:
        norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
        backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
        extra_blocks = LastLevelP6P7(256, 256)
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, returned_layers=[2, 3, 4],
                                     extra_blocks=extra_blocks)
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
