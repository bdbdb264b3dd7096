"""Box operations (torchvision.ops.boxes): NMS, IoU variants, format conversion, clipping, filtering.

Boxes are Tensor[..., N, 4], ``(x1, y1, x2, y2)`` unless a ``fmt`` says otherwise. Everything but
NMS is written with engine tensor ops, so gradients flow through it.
"""
import math

import engine
from engine import backends
from engine.autograd import tracing
from engine.autograd.function import Function
from engine.ops._common import xp_of
from engine.tensor import _new

from ._rotated_iou import box_iou_rotated
from ._utils import _upcast

_AXIS_ALIGNED = ("xyxy", "xywh", "cxcywh")
_ROTATED = ("cxcywhr", "xywhr", "xyxyxyxy")


def _check_nms_inputs(boxes, scores, check_type=True):
    """torchvision's shape and (with ``check_type``) dtype checks for (boxes, scores)."""
    if boxes.dim() != 2:
        raise RuntimeError(f"boxes should be a 2d tensor, got {boxes.dim()}D")
    if boxes.size(1) != 4:
        raise RuntimeError(f"boxes should have 4 elements in dimension 1, got {boxes.size(1)}")
    if scores.dim() != 1:
        raise RuntimeError(f"scores should be a 1d tensor, got {scores.dim()}D")
    if boxes.size(0) != scores.size(0):
        raise RuntimeError("boxes and scores should have same number of elements in dimension 0, "
                           f"got {boxes.size(0)} and {scores.size(0)}")
    if check_type and boxes.dtype != scores.dtype:
        raise RuntimeError("dets should have the same type as scores")


class _NMS(Function):
    """Greedy NMS through the backend's kernel as one op (so that traces record it): the kept indices
    (int64) by decreasing score; with category ``idxs``, boxes of different categories never suppress
    each other. No gradient.

    Like torchvision, up to 1000 boxes run per category as one NMS over boxes shifted apart by category
    (the coordinate trick); more run with a per-category overlap mask. Both keep the same boxes.
    """

    uses_inputs = False

    def __init__(self, iou_threshold):
        self.iou_threshold = float(iou_threshold)

    def forward(self, boxes, scores, idxs=None):
        keep = self._keep(boxes, scores, idxs)
        if len(boxes) and tracing.vary(len(keep)):  # an export's probe: one box fewer, or the best one
            keep = keep[:-1] if len(keep) else xp_of(boxes).zeros(1, dtype="int64")
        return keep

    def _keep(self, boxes, scores, idxs):
        kernels = backends.kernels(boxes, "nms")
        if idxs is None:
            return kernels.nms(boxes, scores, self.iou_threshold)
        if boxes.size == 0:
            return xp_of(boxes).zeros(0, dtype="int64")
        if boxes.size > 4000:
            return kernels.nms(boxes, scores, self.iou_threshold, idxs)
        step = boxes.max() + boxes.dtype.type(1)
        shifted = boxes + (idxs.astype(boxes.dtype) * step)[:, None]
        return kernels.nms(shifted, scores, self.iou_threshold)


def nms(boxes, scores, iou_threshold):
    """Indices of the boxes greedy non-maximum suppression keeps, by decreasing score.

    Boxes overlapping a higher-scored kept box by IoU > ``iou_threshold`` are dropped; tied scores
    are visited in index order.
    """
    _check_nms_inputs(boxes, scores)
    return _NMS(iou_threshold)(boxes.detach(), scores.detach())


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category ``idxs``: boxes of different categories never suppress each other."""
    _check_nms_inputs(boxes, scores, check_type=boxes.numel() > 0)  # torchvision returns early on no boxes
    if boxes.numel() > 0 and idxs.shape[0] != boxes.shape[0]:  # torchvision's category shift fails to broadcast
        raise RuntimeError(f"The size of tensor a ({boxes.shape[0]}) must match the size of tensor b "
                           f"({idxs.shape[0]}) at non-singleton dimension 0")
    return _NMS(iou_threshold)(boxes.detach(), scores.detach(), idxs)


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes whose width and height are both at least ``min_size``.

    As torchvision's, the indices are along the first dimension of ``boxes``' batch shape: for batched
    (B, N, 4) boxes, the batch index of every box kept."""
    ws, hs = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    keep = (ws >= min_size) & (hs >= min_size)
    return engine.where(keep)[0]


def clip_boxes_to_image(boxes, size):
    """Clamp x to [0, width] and y to [0, height]; ``size`` is (height, width)."""
    height, width = size
    boxes_x = boxes[..., 0::2].clamp(min=0, max=width)
    boxes_y = boxes[..., 1::2].clamp(min=0, max=height)
    return engine.stack((boxes_x, boxes_y), dim=boxes.dim()).reshape(boxes.shape)


def _xywh_to_xyxy(boxes):
    x, y, w, h = boxes.unbind(-1)
    return engine.stack([x, y, x + w, y + h], dim=-1)


def _cxcywh_to_xyxy(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return engine.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def _xyxy_to_xywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return engine.stack([x1, y1, x2 - x1, y2 - y1], dim=-1)


def _xyxy_to_cxcywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return engine.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1)


_TO_XYXY = {"xyxy": lambda b: b, "xywh": _xywh_to_xyxy, "cxcywh": _cxcywh_to_xyxy}
_FROM_XYXY = {"xyxy": lambda b: b, "xywh": _xyxy_to_xywh, "cxcywh": _xyxy_to_cxcywh}


def _angle_terms(r):
    """cos and sin of angles ``r`` in degrees (counter-clockwise)."""
    radians = r * math.pi / 180.0
    return radians.cos(), radians.sin()


def _cxcywhr_to_xywhr(boxes):
    cx, cy, w, h, r = boxes.unbind(-1)
    cos, sin = _angle_terms(r)
    return engine.stack([cx - w / 2 * cos - h / 2 * sin, cy - h / 2 * cos + w / 2 * sin, w, h, r], dim=-1)


def _xywhr_to_cxcywhr(boxes):
    x1, y1, w, h, r = boxes.unbind(-1)
    cos, sin = _angle_terms(r)
    return engine.stack([x1 + w / 2 * cos + h / 2 * sin, y1 - w / 2 * sin + h / 2 * cos, w, h, r], dim=-1)


def _xywhr_to_xyxyxyxy(boxes):
    """The corners in order: the first, along the width, opposite, along the height."""
    x1, y1, w, h, r = boxes.unbind(-1)
    cos, sin = _angle_terms(r)
    x2, y2 = x1 + w * cos, y1 - w * sin
    return engine.stack([x1, y1, x2, y2, x2 + h * sin, y2 + h * cos, x1 + h * sin, y1 + h * cos], dim=-1)


def _xyxyxyxy_to_xywhr(boxes):
    x1, y1, x2, y2, x3, y3, _, _ = boxes.unbind(-1)
    r = engine.atan2(y1 - y2, x2 - x1) * 180 / math.pi
    w = ((x2 - x1) ** 2 + (y1 - y2) ** 2).sqrt()
    h = ((x3 - x2) ** 2 + (y3 - y2) ** 2).sqrt()
    return engine.stack([x1, y1, w, h, r], dim=-1)


# rotated conversions, each pair through xywhr (torchvision's ops; transforms.v2 has its own, with other rounding)
_ROTATED_STEPS = {("cxcywhr", "xywhr"): [_cxcywhr_to_xywhr], ("xywhr", "cxcywhr"): [_xywhr_to_cxcywhr],
                  ("xywhr", "xyxyxyxy"): [_xywhr_to_xyxyxyxy], ("xyxyxyxy", "xywhr"): [_xyxyxyxy_to_xywhr],
                  ("cxcywhr", "xyxyxyxy"): [_cxcywhr_to_xywhr, _xywhr_to_xyxyxyxy],
                  ("xyxyxyxy", "cxcywhr"): [_xyxyxyxy_to_xywhr, _xywhr_to_cxcywhr]}


def _rotated_convert(boxes, steps):
    """The conversion ``steps`` in floating point; integer boxes are rounded back after each, as torchvision's."""
    for step in steps:
        dtype = boxes.dtype
        boxes = step(boxes if dtype.is_floating_point else boxes.to(engine.get_default_dtype()))
        if not dtype.is_floating_point:
            boxes = boxes.round().to(dtype)
    return boxes


def box_convert(boxes, in_fmt, out_fmt):
    """Convert Tensor[..., K] boxes between 'xyxy', 'xywh' and 'cxcywh' (through xyxy), or between the rotated
    'xywhr', 'cxcywhr' and 'xyxyxyxy' (angles in degrees, counter-clockwise; through xywhr). A rotated format and
    an axis-aligned one do not convert into each other, as in torchvision."""
    if in_fmt not in _AXIS_ALIGNED + _ROTATED or out_fmt not in _AXIS_ALIGNED + _ROTATED:
        raise ValueError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    if in_fmt == out_fmt:
        return boxes.clone()
    if (in_fmt, out_fmt) in _ROTATED_STEPS:
        return _rotated_convert(boxes, _ROTATED_STEPS[in_fmt, out_fmt])
    if in_fmt in _ROTATED or out_fmt in _ROTATED:
        raise NotImplementedError(f"Unsupported Bounding Box Conversions for given in_fmt {in_fmt} and out_fmt {out_fmt}")
    return _FROM_XYXY[out_fmt](_TO_XYXY[in_fmt](boxes))


def box_area(boxes, fmt="xyxy"):
    """Areas of Tensor[..., N, 4] boxes (width * height)."""
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported Bounding Box area for given format {fmt}")
    boxes = _upcast(boxes)
    if fmt == "xyxy":
        return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
    return boxes[..., 2] * boxes[..., 3]


def _corners(boxes, fmt):
    """Top-left and bottom-right corners (..., N, 2) of boxes in ``fmt``."""
    if fmt == "xyxy":
        return boxes[..., :2], boxes[..., 2:]
    if fmt == "xywh":
        return boxes[..., :2], boxes[..., :2] + boxes[..., 2:]
    return boxes[..., :2] - boxes[..., 2:] / 2, boxes[..., :2] + boxes[..., 2:] / 2


def _box_inter_union(boxes1, boxes2, fmt="xyxy"):
    """Pairwise intersection and union areas, Tensor[..., N, M] each."""
    area1, area2 = box_area(boxes1, fmt=fmt), box_area(boxes2, fmt=fmt)
    lt1, rb1 = _corners(boxes1, fmt)
    lt2, rb2 = _corners(boxes2, fmt)
    lt = engine.maximum(lt1[..., :, None, :], lt2[..., None, :, :])
    rb = engine.minimum(rb1[..., :, None, :], rb2[..., None, :, :])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    union = area1[..., :, None] + area2[..., None, :] - inter
    return inter, union


def box_iou(boxes1, boxes2, fmt="xyxy"):
    """Pairwise intersection over union, Tensor[..., N, M] (rotated formats: Tensor[N, M], no gradient)."""
    if fmt in _ROTATED:
        if fmt != "cxcywhr":
            boxes1, boxes2 = box_convert(boxes1, fmt, "cxcywhr"), box_convert(boxes2, fmt, "cxcywhr")
        return box_iou_rotated(boxes1, boxes2)
    if fmt not in _AXIS_ALIGNED:
        raise ValueError(f"Unsupported format '{fmt}'. Supported axis-aligned formats: {_AXIS_ALIGNED}. "
                         f"Supported rotated formats: {_ROTATED}.")
    inter, union = _box_inter_union(boxes1, boxes2, fmt=fmt)
    return inter / union


def _enclosing_wh(boxes1, boxes2):
    """Width and height (..., N, M, 2) of the smallest box enclosing each pair."""
    lti = engine.minimum(boxes1[..., :, None, :2], boxes2[..., None, :, :2])
    rbi = engine.maximum(boxes1[..., :, None, 2:], boxes2[..., None, :, 2:])
    return _upcast(rbi - lti).clamp(min=0)


def generalized_box_iou(boxes1, boxes2):
    """Pairwise GIoU: IoU minus the share of the enclosing box that the union leaves empty."""
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    whi = _enclosing_wh(boxes1, boxes2)
    areai = whi[..., 0] * whi[..., 1]
    return iou - (areai - union) / areai


def _box_diou_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise DIoU and IoU: IoU minus squared centre distance over squared enclosing diagonal."""
    iou = box_iou(boxes1, boxes2)
    whi = _enclosing_wh(boxes1, boxes2)
    diagonal_distance_squared = (whi[..., 0] ** 2) + (whi[..., 1] ** 2) + eps
    x_p = (boxes1[..., 0] + boxes1[..., 2]) / 2
    y_p = (boxes1[..., 1] + boxes1[..., 3]) / 2
    x_g = (boxes2[..., 0] + boxes2[..., 2]) / 2
    y_g = (boxes2[..., 1] + boxes2[..., 3]) / 2
    centers_distance_squared = (_upcast(x_p[..., :, None] - x_g[..., None, :]) ** 2) + \
        (_upcast(y_p[..., :, None] - y_g[..., None, :]) ** 2)
    return iou - (centers_distance_squared / diagonal_distance_squared), iou


def distance_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise distance IoU (Zheng et al. 2019)."""
    diou, _ = _box_diou_iou(_upcast(boxes1), _upcast(boxes2), eps=eps)
    return diou


def complete_box_iou(boxes1, boxes2, eps=1e-7):
    """Pairwise complete IoU: DIoU minus an aspect-ratio consistency term (its weight not differentiated)."""
    boxes1, boxes2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _box_diou_iou(boxes1, boxes2, eps)
    w_pred = boxes1[..., :, None, 2] - boxes1[..., :, None, 0]
    h_pred = boxes1[..., :, None, 3] - boxes1[..., :, None, 1]
    w_gt = boxes2[..., None, :, 2] - boxes2[..., None, :, 0]
    h_gt = boxes2[..., None, :, 3] - boxes2[..., None, :, 1]
    v = (4 / (math.pi ** 2)) * engine.pow(engine.atan(w_pred / h_pred) - engine.atan(w_gt / h_gt), 2)
    with engine.no_grad():
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def masks_to_boxes(masks):
    """Tight (x1, y1, x2, y2) float boxes around the nonzero pixels of each (N, H, W) mask; 0 for empty masks."""
    if masks.numel() == 0:
        return engine.zeros((0, 4), dtype=engine.float32, device=masks.device)
    n, h, w = masks.shape
    xp = xp_of(masks._data)
    filled = masks._data != 0
    rows, cols = filled.any(axis=2), filled.any(axis=1)
    y1, x1 = rows.argmax(axis=1), cols.argmax(axis=1)
    y2, x2 = (h - 1) - rows[:, ::-1].argmax(axis=1), (w - 1) - cols[:, ::-1].argmax(axis=1)
    boxes = xp.stack([x1, y1, x2, y2], axis=1).astype(xp.float32)
    boxes[~rows.any(axis=1)] = 0
    return _new(boxes)


__all__ = ["nms", "batched_nms", "remove_small_boxes", "clip_boxes_to_image", "box_convert", "box_area",
           "box_iou", "generalized_box_iou", "complete_box_iou", "distance_box_iou", "masks_to_boxes"]
