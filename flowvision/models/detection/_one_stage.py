"""Pieces the dense one-stage detectors share (RetinaNet, FCOS; SSD's head reshaping): head-output layout,
anchor matching with empty targets, per-level candidate selection, per-class NMS and torchvision's ``_box_loss``.
"""
import math

import engine
from engine import nn
from engine.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import complete_box_iou_loss, distance_box_iou_loss, generalized_box_iou_loss


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


def _per_anchor(x, channels):
    """(N, A * channels, H, W) head map -> (N, H * W * A, channels), anchors ordered as the generator's."""
    N, _, H, W = x.shape
    x = x.view(N, -1, channels, H, W)
    x = x.permute(0, 3, 4, 1, 2)
    return x.reshape(N, -1, channels)


def _prior_logits(in_channels, num_anchors, num_classes, prior_probability):
    """3x3 conv giving a logit per (anchor, class): N(0, 0.01) weights, biases at the foreground prior's logit."""
    cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
    nn.init.normal_(cls_logits.weight, std=0.01)
    nn.init.constant_(cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
    return cls_logits


def _run_levels(x, conv, predictor, channels):
    """``predictor(conv(level))`` on every feature level, as (N, H * W * A, channels) rows concatenated over levels."""
    return engine.cat([_per_anchor(predictor(conv(features)), channels) for features in x], dim=1)


def _match_anchors(anchors, targets, match):
    """Per image, ``match(anchors_per_image, gt_boxes)``'s target index per anchor; -1 (background) without boxes."""
    matched_idxs = []
    for anchors_per_image, targets_per_image in zip(anchors, targets):
        if targets_per_image["boxes"].numel() == 0:
            matched_idxs.append(engine.full((anchors_per_image.size(0),), -1, dtype=engine.int64,
                                            device=anchors_per_image.device))
            continue
        matched_idxs.append(match(anchors_per_image, targets_per_image["boxes"]))
    return matched_idxs


def _iou_matcher(proposal_matcher):
    """A ``_match_anchors`` match function: ``proposal_matcher`` on the boxes-by-anchors IoU matrix."""
    return lambda anchors_per_image, gt_boxes: proposal_matcher(box_ops.box_iou(gt_boxes, anchors_per_image))


def _top_candidates(scores, score_thresh, topk_candidates, num_classes):
    """Of one level's flattened (anchor, class) scores, the best ``topk_candidates`` above the threshold.

    Returns their scores, anchor indices and class labels.
    """
    keep_idxs = scores > score_thresh
    scores = scores[keep_idxs]
    topk_idxs = engine.where(keep_idxs)[0]
    # a sort cut at topk_candidates, rather than topk(min(topk_candidates, n)): traces (nn.Graph, ONNX export)
    # then record the cap, not the number of candidates of the traced input
    scores, idxs = scores.sort(descending=True)
    scores = scores[:topk_candidates]
    topk_idxs = topk_idxs[idxs[:topk_candidates]]
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


def _postprocess(model, head_outputs, anchors, image_shapes, score, decode):
    """Per image: each level's top ``score(outputs)`` candidates above ``model.score_thresh``, decoded and
    clipped, then per-class NMS.

    ``head_outputs`` and ``anchors`` are split by level; ``score`` maps one level's outputs of one image
    (a dict like ``head_outputs``) to its (locations, classes) scores; ``decode(deltas, anchors)`` gives boxes.
    """
    detections = []
    for index, image_shape in enumerate(image_shapes):
        image_boxes, image_scores, image_labels = [], [], []
        for level, anchors_per_level in enumerate(anchors[index]):
            outputs = {k: v[level][index] for k, v in head_outputs.items()}
            scores_per_level = score(outputs).flatten()
            scores_per_level, anchor_idxs, labels_per_level = _top_candidates(
                scores_per_level, model.score_thresh, model.topk_candidates, outputs["cls_logits"].shape[-1])
            boxes_per_level = decode(outputs["bbox_regression"][anchor_idxs], anchors_per_level[anchor_idxs])
            image_boxes.append(box_ops.clip_boxes_to_image(boxes_per_level, image_shape))
            image_scores.append(scores_per_level)
            image_labels.append(labels_per_level)
        detections.append(_nms_detections(image_boxes, image_scores, image_labels, model.nms_thresh,
                                          model.detections_per_img))
    return detections
