"""Complete IoU loss (Zheng et al. 2021): DIoU loss plus an aspect-ratio consistency term."""
import math

import engine

from ._utils import _reduce_loss, _upcast_non_float
from .diou_loss import _diou_iou_loss


def complete_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """CIoU loss of each pair of (x1, y1, x2, y2) boxes (the trade-off weight alpha is not differentiated)."""
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    diou_loss, iou = _diou_iou_loss(boxes1, boxes2)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    angle_gap = engine.atan((x2g - x1g) / (y2g - y1g)) - engine.atan((x2 - x1) / (y2 - y1))
    v = (4 / (math.pi ** 2)) * engine.pow(angle_gap, 2)
    with engine.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce_loss(diou_loss + alpha * v, reduction)


__all__ = ["complete_box_iou_loss"]
