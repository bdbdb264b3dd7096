"""Keypoint R-CNN's heatmap targets, loss and decoding of heatmaps to keypoints."""
import engine as torch
from engine import backends
from engine.autograd.function import Function
from engine.nn import functional as F
from engine.ops._common import xp_of


def keypoints_to_heatmap(keypoints, rois, heatmap_size):
    """Each (K, N, 3) keypoint's flat cell index in its RoI's heatmap_size^2 grid, and whether it is a valid target."""
    offset_x = rois[:, 0][:, None]
    offset_y = rois[:, 1][:, None]
    scale_x = heatmap_size / (rois[:, 2] - rois[:, 0])[:, None]
    scale_y = heatmap_size / (rois[:, 3] - rois[:, 1])[:, None]
    x = keypoints[..., 0]
    y = keypoints[..., 1]
    x_boundary = x == rois[:, 2][:, None]
    y_boundary = y == rois[:, 3][:, None]
    x = ((x - offset_x) * scale_x).floor().long()
    y = ((y - offset_y) * scale_y).floor().long()
    x = torch.where(x_boundary, torch.full_like(x, heatmap_size - 1), x)
    y = torch.where(y_boundary, torch.full_like(y, heatmap_size - 1), y)
    valid_loc = (x >= 0) & (y >= 0) & (x < heatmap_size) & (y < heatmap_size)
    visible = keypoints[..., 2] > 0
    valid = (valid_loc & visible).long()
    heatmaps = (y * heatmap_size + x) * valid
    return heatmaps, valid


def _roi_argmax(maps, width, height):
    """Upsample one RoI's (N, H, W) heatmaps bicubically to its box size: per keypoint the argmax cell and its score."""
    kernels = backends.kernels(maps, "interpolate")
    roi_map = kernels.interpolate_forward(maps[:, None], size=(height, width), mode="bicubic", align_corners=False)[0]
    flat = roi_map.reshape(roi_map.shape[0], -1)
    pos = flat.argmax(axis=1)
    return pos % width, pos // width, flat[xp_of(flat).arange(flat.shape[0]), pos]


class _HeatmapsToKeypoints(Function):
    """Keypoint decoding as one op, so that a trace (nn.Graph, engine.onnx.export) records it whole: each box's
    heatmaps are resized to the box's own size, which no fixed-shape op sequence can express. ONNX writes it
    as a ``Loop`` over the boxes (engine/onnx/detection.py). No gradient."""

    uses_inputs = False

    def forward(self, maps, rois):
        boxes = rois.astype("float32", copy=False)
        xp = xp_of(boxes)
        widths = xp.maximum(boxes[:, 2] - boxes[:, 0], xp.float32(1))
        heights = xp.maximum(boxes[:, 3] - boxes[:, 1], xp.float32(1))
        widths_ceil = xp.ceil(widths)
        heights_ceil = xp.ceil(heights)
        num_rois, num_keypoints = maps.shape[0], maps.shape[1]
        x_int = xp.zeros((num_rois, num_keypoints), xp.int64)
        y_int = xp.zeros((num_rois, num_keypoints), xp.int64)
        scores = xp.zeros((num_rois, num_keypoints), xp.float32)
        sizes = zip(widths_ceil.astype(xp.int64).tolist(), heights_ceil.astype(xp.int64).tolist())
        for i, (w, h) in enumerate(sizes):
            x_int[i], y_int[i], scores[i] = _roi_argmax(maps[i], w, h)
        x = (x_int.astype(xp.float32) + xp.float32(0.5)) * (widths / widths_ceil)[:, None] + boxes[:, 0, None]
        y = (y_int.astype(xp.float32) + xp.float32(0.5)) * (heights / heights_ceil)[:, None] + boxes[:, 1, None]
        return xp.stack([x, y, xp.ones_like(x)], axis=2), scores


def heatmaps_to_keypoints(maps, rois):
    """Decode (K, N, H, W) heatmaps into (K, N, 3) keypoints (x, y, 1) in image coordinates and (K, N) scores:
    per box and keypoint, the argmax cell of the heatmap resized bicubically to the box's size (in whole
    pixels), at the cell's centre scaled back to the box's exact size."""
    return _HeatmapsToKeypoints()(maps.detach(), rois.detach())


def keypointrcnn_loss(keypoint_logits, proposals, gt_keypoints, keypoint_matched_idxs):
    """Cross-entropy over each RoI keypoint's heatmap cells against the cell of its matched gt keypoint (valid ones)."""
    N, K, H, W = keypoint_logits.shape
    if H != W:
        raise ValueError("keypoint_logits height and width (last two elements of shape) should be equal. "
                         f"Instead got H = {H} and W = {W}")
    heatmaps = []
    valid = []
    for proposals_per_image, gt_kp_in_image, midx in zip(proposals, gt_keypoints, keypoint_matched_idxs):
        heatmaps_per_image, valid_per_image = keypoints_to_heatmap(gt_kp_in_image[midx], proposals_per_image, H)
        heatmaps.append(heatmaps_per_image.reshape(-1))
        valid.append(valid_per_image.reshape(-1))
    keypoint_targets = torch.cat(heatmaps, dim=0)
    valid = torch.where(torch.cat(valid, dim=0) > 0)[0]
    if keypoint_targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0
    keypoint_logits = keypoint_logits.reshape(N * K, H * W)
    return F.cross_entropy(keypoint_logits[valid], keypoint_targets[valid])


def keypointrcnn_inference(x, boxes):
    """Per image, the decoded keypoints (K, N, 3) and their scores (K, N) from the heatmap logits of its boxes."""
    kp_probs = []
    kp_scores = []
    boxes_per_image = [box.size(0) for box in boxes]
    for xx, bb in zip(x.split(boxes_per_image, dim=0), boxes):
        kp_prob, scores = heatmaps_to_keypoints(xx, bb)
        kp_probs.append(kp_prob)
        kp_scores.append(scores)
    return kp_probs, kp_scores


__all__ = ["keypoints_to_heatmap", "heatmaps_to_keypoints", "keypointrcnn_loss", "keypointrcnn_inference"]
