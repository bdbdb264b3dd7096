"""Region Proposal Network (Ren et al. 2015): objectness and box deltas per anchor, proposals, losses."""
import engine
from engine import nn
from engine.nn import functional as F

from ...ops import Conv2dNormActivation
from ...ops import boxes as box_ops
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator  # noqa: F401  (torchvision re-exports it here)

__all__ = ["RPNHead", "RegionProposalNetwork", "concat_box_prediction_layers"]


class RPNHead(nn.Module):
    """``conv_depth`` 3x3 conv+ReLU layers shared by two 1x1 convs: objectness logits and box deltas per anchor.

    Version 2 wraps each conv in ``Conv2dNormActivation`` (keys ``conv.0.0.weight``); version-1
    checkpoints (``conv.weight``) are renamed on load.
    """

    _version = 2

    def __init__(self, in_channels, num_anchors, conv_depth=1):
        super().__init__()
        convs = [Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                 for _ in range(conv_depth)]
        self.conv = nn.Sequential(*convs)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                nn.init.constant_(layer.bias, 0)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rename version-1 keys ``conv.weight``/``conv.bias`` to ``conv.0.0.weight``/``conv.0.0.bias``."""
        if version is not None and version >= 2:
            return
        for kind in ("weight", "bias"):
            old_key = f"{prefix}conv.{kind}"
            if old_key in state_dict:
                state_dict[f"{prefix}conv.0.0.{kind}"] = state_dict.pop(old_key)

    def forward(self, x):
        """Per feature level: (N, A, H, W) objectness logits and (N, 4A, H, W) box deltas."""
        logits = []
        bbox_reg = []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def permute_and_flatten(layer, N, A, C, H, W):
    """(N, A*C, H, W) -> (N, H*W*A, C): anchors ordered by position, then by anchor, as the anchor generator."""
    layer = layer.view(N, -1, C, H, W)
    layer = layer.permute(0, 3, 4, 1, 2)
    return layer.reshape(N, -1, C)


def concat_box_prediction_layers(box_cls, box_regression):
    """Per-level head outputs -> (N * total anchors, C) class logits and (N * total anchors, 4) deltas."""
    box_cls_flattened = []
    box_regression_flattened = []
    for box_cls_per_level, box_regression_per_level in zip(box_cls, box_regression):
        N, AxC, H, W = box_cls_per_level.shape
        A = box_regression_per_level.shape[1] // 4
        C = AxC // A
        box_cls_flattened.append(permute_and_flatten(box_cls_per_level, N, A, C, H, W))
        box_regression_flattened.append(permute_and_flatten(box_regression_per_level, N, A, 4, H, W))
    box_cls = engine.cat(box_cls_flattened, dim=1).flatten(0, -2)
    box_regression = engine.cat(box_regression_flattened, dim=1).reshape(-1, 4)
    return box_cls, box_regression


class RegionProposalNetwork(nn.Module):
    """Scores and refines anchors into proposals; in training also returns its objectness and box losses.

    ``pre_nms_top_n``/``post_nms_top_n`` are dicts with ``training`` and ``testing`` entries: the
    anchors kept per level before NMS, and the proposals kept per image after it.
    """

    def __init__(self, anchor_generator, head, fg_iou_thresh, bg_iou_thresh, batch_size_per_image,
                 positive_fraction, pre_nms_top_n, post_nms_top_n, nms_thresh, score_thresh=0.0):
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self):
        """Anchors kept per level before NMS in the current mode."""
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self):
        """Proposals kept per image after NMS in the current mode."""
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(self, anchors, targets):
        """Per image: float labels (1 object, 0 background, -1 ignored) and the matched gt box of each anchor."""
        labels = []
        matched_gt_boxes = []
        for anchors_per_image, targets_per_image in zip(anchors, targets):
            gt_boxes = targets_per_image["boxes"]
            if gt_boxes.numel() == 0:
                device = anchors_per_image.device
                matched_gt_boxes.append(engine.zeros(anchors_per_image.shape, dtype=engine.float32, device=device))
                labels.append(engine.zeros((anchors_per_image.shape[0],), dtype=engine.float32, device=device))
                continue
            match_quality_matrix = self.box_similarity(gt_boxes, anchors_per_image)
            matched_idxs = self.proposal_matcher(match_quality_matrix)
            matched_gt_boxes.append(gt_boxes[matched_idxs.clamp(min=0)])
            labels_per_image = (matched_idxs >= 0).to(dtype=engine.float32)
            labels_per_image[matched_idxs == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0.0
            labels_per_image[matched_idxs == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(labels_per_image)
        return labels, matched_gt_boxes

    def _get_top_n_idx(self, objectness, num_anchors_per_level):
        """(N, pre-NMS count) indices into all anchors of the best-scored ``pre_nms_top_n`` of each level."""
        r = []
        offset = 0
        for ob in objectness.split(num_anchors_per_level, 1):
            num_anchors = ob.shape[1]
            _, top_n_idx = ob.topk(min(self.pre_nms_top_n(), num_anchors), dim=1)
            r.append(top_n_idx + offset)
            offset += num_anchors
        return engine.cat(r, dim=1)

    def filter_proposals(self, proposals, objectness, image_shapes, num_anchors_per_level):
        """Top-n per level, clip, drop tiny and low-scored boxes, NMS per level, keep ``post_nms_top_n``."""
        num_images = proposals.shape[0]
        objectness = objectness.detach().reshape(num_images, -1)
        device = proposals.device
        levels = engine.cat([engine.full((n,), idx, dtype=engine.int64, device=device)
                             for idx, n in enumerate(num_anchors_per_level)], 0)
        levels = levels.reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = engine.arange(num_images, device=device)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        objectness_prob = engine.sigmoid(objectness)
        final_boxes = []
        final_scores = []
        for boxes, scores, lvl, img_shape in zip(proposals, objectness_prob, levels, image_shapes):
            boxes, scores = self._filter_image(boxes, scores, lvl, img_shape)
            final_boxes.append(boxes)
            final_scores.append(scores)
        return final_boxes, final_scores

    def _filter_image(self, boxes, scores, lvl, img_shape):
        """One image's proposals after clipping, size and score filters, per-level NMS and the top-n cut."""
        boxes = box_ops.clip_boxes_to_image(boxes, img_shape)
        keep = box_ops.remove_small_boxes(boxes, self.min_size)
        boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
        keep = engine.where(scores >= self.score_thresh)[0]
        boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
        keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)
        keep = keep[: self.post_nms_top_n()]
        return boxes[keep], scores[keep]

    def compute_loss(self, objectness, pred_bbox_deltas, labels, regression_targets):
        """BCE objectness loss over the sampled anchors, smooth-L1 (beta 1/9) box loss over the positives."""
        sampled_pos_inds, sampled_neg_inds = self.fg_bg_sampler(labels)
        sampled_pos_inds = engine.where(engine.cat(sampled_pos_inds, dim=0))[0]
        sampled_neg_inds = engine.where(engine.cat(sampled_neg_inds, dim=0))[0]
        sampled_inds = engine.cat([sampled_pos_inds, sampled_neg_inds], dim=0)
        objectness = objectness.flatten()
        labels = engine.cat(labels, dim=0)
        regression_targets = engine.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[sampled_pos_inds], regression_targets[sampled_pos_inds],
                                    beta=1 / 9, reduction="sum") / sampled_inds.numel()
        objectness_loss = F.binary_cross_entropy_with_logits(objectness[sampled_inds], labels[sampled_inds])
        return objectness_loss, box_loss

    def forward(self, images, features, targets=None):
        """Proposals per image (``post_nms_top_n`` at most) and, in training, the RPN losses."""
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_images = len(anchors)
        num_anchors_per_level = [o.shape[1] * o.shape[2] * o.shape[3] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors)
        proposals = proposals.view(num_images, -1, 4)
        boxes, scores = self.filter_proposals(proposals, objectness, images.image_sizes, num_anchors_per_level)
        losses = {}
        if self.training:
            losses = self._losses(anchors, targets, objectness, pred_bbox_deltas)
        return boxes, losses

    def _losses(self, anchors, targets, objectness, pred_bbox_deltas):
        """The training losses: match anchors to targets, encode the regression targets, sample, score."""
        if targets is None:
            raise ValueError("targets should not be None")
        labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
        regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
        loss_objectness, loss_rpn_box_reg = self.compute_loss(objectness, pred_bbox_deltas, labels,
                                                              regression_targets)
        return {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
