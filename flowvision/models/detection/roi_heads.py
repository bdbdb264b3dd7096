"""The R-CNN second stage: per-proposal classification and box refinement, plus optional mask/keypoint branches."""
import engine
from engine import nn
from engine.nn import functional as F

from ...ops import boxes as box_ops
from . import _keypoints
from . import _masks
from . import _utils as det_utils

__all__ = ["RoIHeads", "fastrcnn_loss"]

_FLOAT_TYPES = (engine.float32, engine.float64, engine.float16)


def fastrcnn_loss(class_logits, box_regression, labels, regression_targets):
    """Cross-entropy over the sampled proposals and smooth-L1 (beta 1/9) on each positive's own-class deltas.

    The box loss is summed and divided by the number of sampled proposals (positives and negatives).
    """
    labels = engine.cat(labels, dim=0)
    regression_targets = engine.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    sampled_pos_inds_subset = engine.where(labels > 0)[0]
    labels_pos = labels[sampled_pos_inds_subset]
    N, num_classes = class_logits.shape
    box_regression = box_regression.reshape(N, box_regression.size(-1) // 4, 4)
    box_loss = F.smooth_l1_loss(box_regression[sampled_pos_inds_subset, labels_pos],
                                regression_targets[sampled_pos_inds_subset], beta=1 / 9, reduction="sum")
    box_loss = box_loss / labels.numel()
    return classification_loss, box_loss


def _positive_proposals(proposals, labels, matched_idxs):
    """Per image, the proposals with a foreground label and the gt indices they matched (mask/keypoint training)."""
    pos_proposals = []
    pos_matched_idxs = []
    for proposals_in_image, labels_in_image, matched_in_image in zip(proposals, labels, matched_idxs):
        pos = engine.where(labels_in_image > 0)[0]
        pos_proposals.append(proposals_in_image[pos])
        pos_matched_idxs.append(matched_in_image[pos])
    return pos_proposals, pos_matched_idxs


class RoIHeads(nn.Module):
    """Pool each proposal's features, classify and refine it; with mask/keypoint modules, predict those too.

    Training samples ``batch_size_per_image`` proposals per image (``positive_fraction`` positives,
    gt boxes added as proposals) and returns losses; evaluation returns per-image detections after
    ``score_thresh``, per-class NMS at ``nms_thresh`` and the ``detections_per_img`` cut.
    """

    def __init__(self, box_roi_pool, box_head, box_predictor, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
                 positive_fraction, bbox_reg_weights, score_thresh, nms_thresh, detections_per_img,
                 mask_roi_pool=None, mask_head=None, mask_predictor=None,
                 keypoint_roi_pool=None, keypoint_head=None, keypoint_predictor=None):
        super().__init__()
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        if bbox_reg_weights is None:
            bbox_reg_weights = (10.0, 10.0, 5.0, 5.0)
        self.box_coder = det_utils.BoxCoder(bbox_reg_weights)
        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor
        self.keypoint_roi_pool = keypoint_roi_pool
        self.keypoint_head = keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self):
        """Whether all three mask modules are set."""
        return None not in (self.mask_roi_pool, self.mask_head, self.mask_predictor)

    def has_keypoint(self):
        """Whether all three keypoint modules are set."""
        return None not in (self.keypoint_roi_pool, self.keypoint_head, self.keypoint_predictor)

    def assign_targets_to_proposals(self, proposals, gt_boxes, gt_labels):
        """Per image: matched gt index of each proposal (clamped at 0) and its label (0 background, -1 ignored)."""
        matched_idxs = []
        labels = []
        for proposals_in_image, gt_boxes_in_image, gt_labels_in_image in zip(proposals, gt_boxes, gt_labels):
            if gt_boxes_in_image.numel() == 0:
                device = proposals_in_image.device
                matched_idxs.append(engine.zeros((proposals_in_image.shape[0],), dtype=engine.int64, device=device))
                labels.append(engine.zeros((proposals_in_image.shape[0],), dtype=engine.int64, device=device))
                continue
            match_quality_matrix = box_ops.box_iou(gt_boxes_in_image, proposals_in_image)
            matched_idxs_in_image = self.proposal_matcher(match_quality_matrix)
            clamped_matched_idxs_in_image = matched_idxs_in_image.clamp(min=0)
            labels_in_image = gt_labels_in_image[clamped_matched_idxs_in_image].to(dtype=engine.int64)
            labels_in_image[matched_idxs_in_image == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0
            labels_in_image[matched_idxs_in_image == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(clamped_matched_idxs_in_image)
            labels.append(labels_in_image)
        return matched_idxs, labels

    def subsample(self, labels):
        """Per image, the indices of the proposals the balanced sampler picked (positives and negatives)."""
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        return [engine.where(pos_inds_img | neg_inds_img)[0]
                for pos_inds_img, neg_inds_img in zip(sampled_pos_inds, sampled_neg_inds)]

    def add_gt_proposals(self, proposals, gt_boxes):
        """Append each image's gt boxes to its proposals (so every gt has at least one good match)."""
        return [engine.cat((proposal, gt_box)) for proposal, gt_box in zip(proposals, gt_boxes)]

    def check_targets(self, targets):
        """Targets must exist and carry ``boxes``, ``labels`` (and ``masks`` with a mask branch)."""
        if targets is None:
            raise ValueError("targets should not be None")
        if not all("boxes" in t for t in targets):
            raise ValueError("Every element of targets should have a boxes key")
        if not all("labels" in t for t in targets):
            raise ValueError("Every element of targets should have a labels key")
        if self.has_mask() and not all("masks" in t for t in targets):
            raise ValueError("Every element of targets should have a masks key")

    def select_training_samples(self, proposals, targets):
        """Sampled proposals with their matched gt indices, labels and box regression targets, per image."""
        self.check_targets(targets)
        dtype = proposals[0].dtype
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        sampled_inds = self.subsample(labels)
        matched_gt_boxes = []
        for img_id, img_sampled_inds in enumerate(sampled_inds):
            proposals[img_id] = proposals[img_id][img_sampled_inds]
            labels[img_id] = labels[img_id][img_sampled_inds]
            matched_idxs[img_id] = matched_idxs[img_id][img_sampled_inds]
            gt_boxes_in_image = gt_boxes[img_id]
            if gt_boxes_in_image.numel() == 0:
                gt_boxes_in_image = engine.zeros((1, 4), dtype=dtype, device=gt_boxes_in_image.device)
            matched_gt_boxes.append(gt_boxes_in_image[matched_idxs[img_id]])
        regression_targets = self.box_coder.encode(matched_gt_boxes, proposals)
        return proposals, matched_idxs, labels, regression_targets

    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        """Per image: boxes, scores, labels of every (proposal, foreground class) pair that survives the filters."""
        num_classes = class_logits.shape[-1]
        boxes_per_image = [boxes_in_image.shape[0] for boxes_in_image in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)
        all_boxes = []
        all_scores = []
        all_labels = []
        for boxes, scores, image_shape in zip(pred_boxes.split(boxes_per_image, 0),
                                              pred_scores.split(boxes_per_image, 0), image_shapes):
            boxes, scores, labels = self._detections_in_image(boxes, scores, image_shape, num_classes)
            all_boxes.append(boxes)
            all_scores.append(scores)
            all_labels.append(labels)
        return all_boxes, all_scores, all_labels

    def _detections_in_image(self, boxes, scores, image_shape, num_classes):
        """One image's (K, C, 4) boxes and (K, C) scores -> its final detections, best first."""
        boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
        labels = engine.arange(num_classes, device=scores.device).view(1, -1).expand_as(scores)
        boxes = boxes[:, 1:].reshape(-1, 4)
        scores = scores[:, 1:].reshape(-1)
        labels = labels[:, 1:].reshape(-1)
        inds = engine.where(scores > self.score_thresh)[0]
        boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
        keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
        boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)
        keep = keep[: self.detections_per_img]
        return boxes[keep], scores[keep], labels[keep]

    def _check_target_types(self, targets):
        """Float boxes, int64 labels and (with a keypoint branch) float32 keypoints, as torchvision requires."""
        for t in targets:
            if t["boxes"].dtype not in _FLOAT_TYPES:
                raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
            if t["labels"].dtype != engine.int64:
                raise TypeError(f"target labels must of int64 type, instead got {t['labels'].dtype}")
            if self.has_keypoint() and t["keypoints"].dtype != engine.float32:
                raise TypeError(f"target keypoints must of float type, instead got {t['keypoints'].dtype}")

    def forward(self, features, proposals, image_shapes, targets=None):
        """(detections per image, losses): detections in eval mode, losses in training mode."""
        if targets is not None:
            self._check_target_types(targets)
        labels = regression_targets = matched_idxs = None
        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(proposals, targets)
        box_features = self.box_roi_pool(features, proposals, image_shapes)
        box_features = self.box_head(box_features)
        class_logits, box_regression = self.box_predictor(box_features)
        result = []
        losses = {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            result = self._detections(class_logits, box_regression, proposals, image_shapes)
        if self.has_mask():
            losses.update(self._mask_branch(features, proposals, image_shapes, targets, labels, matched_idxs, result))
        if self.has_keypoint():
            losses.update(self._keypoint_branch(features, proposals, image_shapes, targets, labels, matched_idxs,
                                                result))
        return result, losses

    def _detections(self, class_logits, box_regression, proposals, image_shapes):
        """Post-processed detections as one ``{boxes, labels, scores}`` dict per image."""
        boxes, scores, labels = self.postprocess_detections(class_logits, box_regression, proposals, image_shapes)
        return [{"boxes": b, "labels": lab, "scores": s} for b, s, lab in zip(boxes, scores, labels)]

    def _branch_proposals(self, proposals, labels, matched_idxs, result):
        """Boxes a mask/keypoint branch runs on: positives in training (with gt indices), detections in eval."""
        if not self.training:
            return [r["boxes"] for r in result], None
        if matched_idxs is None:
            raise ValueError("if in training, matched_idxs should not be None")
        return _positive_proposals(proposals, labels, matched_idxs)

    def _mask_branch(self, features, proposals, image_shapes, targets, labels, matched_idxs, result):
        """Mask logits for the branch's boxes: the mask loss in training, ``masks`` added to ``result`` in eval."""
        mask_proposals, pos_matched_idxs = self._branch_proposals(proposals, labels, matched_idxs, result)
        mask_features = self.mask_roi_pool(features, mask_proposals, image_shapes)
        mask_features = self.mask_head(mask_features)
        mask_logits = self.mask_predictor(mask_features)
        if self.training:
            gt_masks = [t["masks"] for t in targets]
            gt_labels = [t["labels"] for t in targets]
            loss_mask = _masks.maskrcnn_loss(mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched_idxs)
            return {"loss_mask": loss_mask}
        masks_probs = _masks.maskrcnn_inference(mask_logits, [r["labels"] for r in result])
        for mask_prob, r in zip(masks_probs, result):
            r["masks"] = mask_prob
        return {}

    def _keypoint_branch(self, features, proposals, image_shapes, targets, labels, matched_idxs, result):
        """Keypoint logits for the branch's boxes: the keypoint loss in training, keypoints added in eval."""
        keypoint_proposals, pos_matched_idxs = self._branch_proposals(proposals, labels, matched_idxs, result)
        keypoint_features = self.keypoint_roi_pool(features, keypoint_proposals, image_shapes)
        keypoint_features = self.keypoint_head(keypoint_features)
        keypoint_logits = self.keypoint_predictor(keypoint_features)
        if self.training:
            gt_keypoints = [t["keypoints"] for t in targets]
            loss_keypoint = _keypoints.keypointrcnn_loss(keypoint_logits, keypoint_proposals, gt_keypoints,
                                                         pos_matched_idxs)
            return {"loss_keypoint": loss_keypoint}
        keypoints_probs, kp_scores = _keypoints.keypointrcnn_inference(keypoint_logits, keypoint_proposals)
        for keypoint_prob, kps, r in zip(keypoints_probs, kp_scores, result):
            r["keypoints"] = keypoint_prob
            r["keypoints_scores"] = kps
        return {}
