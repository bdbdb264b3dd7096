"""Distance IoU loss (Zheng et al. 2019) between paired boxes."""
import engine

from ._utils import _loss_inter_union, _reduce_loss, _upcast_non_float


def _diou_iou_loss(boxes1, boxes2, eps=1e-7):
    """1 - IoU + squared centre distance / squared enclosing diagonal, and the IoU itself."""
    intsct, union = _loss_inter_union(boxes1, boxes2)
    iou = intsct / (union + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    diagonal_distance_squared = ((engine.maximum(x2, x2g) - engine.minimum(x1, x1g)) ** 2) + \
        ((engine.maximum(y2, y2g) - engine.minimum(y1, y1g)) ** 2) + eps
    centers_distance_squared = (((x2 + x1) / 2 - (x1g + x2g) / 2) ** 2) + (((y2 + y1) / 2 - (y1g + y2g) / 2) ** 2)
    return 1 - iou + (centers_distance_squared / diagonal_distance_squared), iou


def distance_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """DIoU loss of each pair of (x1, y1, x2, y2) boxes."""
    loss, _ = _diou_iou_loss(_upcast_non_float(boxes1), _upcast_non_float(boxes2), eps)
    return _reduce_loss(loss, reduction)


__all__ = ["distance_box_iou_loss"]
