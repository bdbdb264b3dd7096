"""Detection building blocks (torchvision.models.detection._utils): box coders, matchers, sampler."""
import math

import engine


class BalancedPositiveNegativeSampler:
    """Per image, draw up to ``batch_size_per_image`` examples, at most ``positive_fraction`` of them positive.

    Draws come from ``engine.randperm``, so ``engine.manual_seed`` makes them reproducible.
    """

    def __init__(self, batch_size_per_image, positive_fraction):
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs):
        """uint8 masks of the sampled positives (label >= 1) and negatives (label 0), one pair per image."""
        pos_idx, neg_idx = [], []
        for matched_idxs_per_image in matched_idxs:
            positive = engine.nonzero(matched_idxs_per_image >= 1).reshape(-1)
            negative = engine.nonzero(matched_idxs_per_image == 0).reshape(-1)
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            perm1 = engine.randperm(positive.numel())[:num_pos]
            perm2 = engine.randperm(negative.numel())[:num_neg]
            pos_mask = engine.zeros_like(matched_idxs_per_image, dtype=engine.uint8)
            neg_mask = engine.zeros_like(matched_idxs_per_image, dtype=engine.uint8)
            pos_mask[positive[perm1]] = 1
            neg_mask[negative[perm2]] = 1
            pos_idx.append(pos_mask)
            neg_idx.append(neg_mask)
        return pos_idx, neg_idx


def _centres_and_sizes(boxes):
    """Widths, heights and centres (columns (K, 1) each) of (x1, y1, x2, y2) boxes."""
    x1, y1, x2, y2 = (boxes[:, i].unsqueeze(1) for i in range(4))
    widths, heights = x2 - x1, y2 - y1
    return widths, heights, x1 + 0.5 * widths, y1 + 0.5 * heights


def encode_boxes(reference_boxes, proposals, weights):
    """R-CNN regression targets (dx, dy, dw, dh) of ``reference_boxes`` relative to ``proposals``."""
    wx, wy, ww, wh = weights[0], weights[1], weights[2], weights[3]
    ex_widths, ex_heights, ex_ctr_x, ex_ctr_y = _centres_and_sizes(proposals)
    gt_widths, gt_heights, gt_ctr_x, gt_ctr_y = _centres_and_sizes(reference_boxes)
    targets_dx = wx * (gt_ctr_x - ex_ctr_x) / ex_widths
    targets_dy = wy * (gt_ctr_y - ex_ctr_y) / ex_heights
    targets_dw = ww * engine.log(gt_widths / ex_widths)
    targets_dh = wh * engine.log(gt_heights / ex_heights)
    return engine.cat((targets_dx, targets_dy, targets_dw, targets_dh), dim=1)


class BoxCoder:
    """Encode boxes as weighted (dx, dy, dw, dh) offsets from reference boxes and decode them back.

    Decoding clamps dw and dh at ``bbox_xform_clip`` so that exp() cannot overflow.
    """

    def __init__(self, weights, bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes, proposals):
        """Per-image lists in, per-image list of (L, 4) targets out."""
        boxes_per_image = [len(b) for b in reference_boxes]
        targets = self.encode_single(engine.cat(reference_boxes, dim=0), engine.cat(proposals, dim=0))
        return targets.split(boxes_per_image, 0)

    def encode_single(self, reference_boxes, proposals):
        weights = engine.as_tensor(self.weights, dtype=reference_boxes.dtype, device=reference_boxes.device)
        return encode_boxes(reference_boxes, proposals, weights)

    def decode(self, rel_codes, boxes):
        """(sum L, 4 * classes) codes and per-image reference boxes -> (sum L, classes, 4) boxes."""
        if not isinstance(boxes, (list, tuple)):
            raise AssertionError("This function expects boxes of type list or tuple.")
        if not isinstance(rel_codes, engine.Tensor):
            raise AssertionError("This function expects rel_codes of type torch.Tensor.")
        box_sum = sum(b.size(0) for b in boxes)
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, engine.cat(list(boxes), dim=0))
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes, boxes):
        """Apply (K, 4 * classes) codes to (K, 4) boxes -> (K, 4 * classes) boxes."""
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        clip = float(self.bbox_xform_clip)  # a numpy scalar (np.log(...)) too, as torch takes it
        dw = engine.clamp(rel_codes[:, 2::4] / ww, max=clip)
        dh = engine.clamp(rel_codes[:, 3::4] / wh, max=clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        half_w = 0.5 * (engine.exp(dw) * widths[:, None])
        half_h = 0.5 * (engine.exp(dh) * heights[:, None])
        pred_boxes = engine.stack((pred_ctr_x - half_w, pred_ctr_y - half_h, pred_ctr_x + half_w,
                                   pred_ctr_y + half_h), dim=2)
        return pred_boxes.flatten(1)


class BoxLinearCoder:
    """FCOS's coder: distances (left, top, right, bottom) from the reference box centre, optionally per size."""

    def __init__(self, normalize_by_size=True):
        self.normalize_by_size = normalize_by_size

    def _sizes(self, boxes):
        """(w, h, w, h) per box, to scale codes by."""
        w, h = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
        return engine.stack((w, h, w, h), dim=-1)

    def encode(self, reference_boxes, proposals):
        ctr_x = 0.5 * (reference_boxes[..., 0] + reference_boxes[..., 2])
        ctr_y = 0.5 * (reference_boxes[..., 1] + reference_boxes[..., 3])
        targets = engine.stack((ctr_x - proposals[..., 0], ctr_y - proposals[..., 1],
                                proposals[..., 2] - ctr_x, proposals[..., 3] - ctr_y), dim=-1)
        if self.normalize_by_size:
            targets = targets / self._sizes(reference_boxes)
        return targets

    def decode(self, rel_codes, boxes):
        boxes = boxes.to(dtype=rel_codes.dtype)
        ctr_x = 0.5 * (boxes[..., 0] + boxes[..., 2])
        ctr_y = 0.5 * (boxes[..., 1] + boxes[..., 3])
        if self.normalize_by_size:
            rel_codes = rel_codes * self._sizes(boxes)
        return engine.stack((ctr_x - rel_codes[..., 0], ctr_y - rel_codes[..., 1],
                             ctr_x + rel_codes[..., 2], ctr_y + rel_codes[..., 3]), dim=-1)


class Matcher:
    """Assign each prediction (column) its best ground truth (row) by quality, or -1 (below
    ``low_threshold``) / -2 (between the thresholds).

    ``allow_low_quality_matches`` keeps, for every ground truth, the predictions that match it best
    even below the thresholds (Faster R-CNN's RPN).
    """

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold, low_threshold, allow_low_quality_matches=False):
        if low_threshold > high_threshold:
            raise AssertionError("low_threshold should be <= high_threshold")
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        """(M ground truths, N predictions) quality -> (N,) int64 matched ground-truth index or -1/-2."""
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ValueError("No ground-truth boxes available for one of the images during training")
            raise ValueError("No proposal boxes available for one of the images during training")
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below_low_threshold = matched_vals < self.low_threshold
        between_thresholds = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches[below_low_threshold] = self.BELOW_LOW_THRESHOLD
        matches[between_thresholds] = self.BETWEEN_THRESHOLDS
        if self.allow_low_quality_matches:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(self, matches, all_matches, match_quality_matrix):
        """Restore the original match of every prediction that is some ground truth's best (ties included)."""
        highest_quality_foreach_gt, _ = match_quality_matrix.max(dim=1)
        best = engine.nonzero(match_quality_matrix == highest_quality_foreach_gt[:, None])
        pred_inds_to_update = best[:, 1]
        matches[pred_inds_to_update] = all_matches[pred_inds_to_update]


class SSDMatcher(Matcher):
    """One threshold, and every ground truth always gets its best prediction."""

    def __init__(self, threshold):
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix):
        matches = super().__call__(match_quality_matrix)
        _, highest_quality_pred_foreach_gt = match_quality_matrix.max(dim=1)
        matches[highest_quality_pred_foreach_gt] = engine.arange(highest_quality_pred_foreach_gt.size(0),
                                                                 dtype=engine.int64, device=matches.device)
        return matches
