"""Generalized IoU loss (Rezatofighi et al. 2019) between paired boxes."""
import engine

from ._utils import _loss_inter_union, _reduce_loss, _upcast_non_float


def generalized_box_iou_loss(boxes1, boxes2, reduction="none", eps=1e-7):
    """1 - GIoU of each pair of (x1, y1, x2, y2) boxes; it still gives a gradient when they do not overlap."""
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    intsctk, unionk = _loss_inter_union(boxes1, boxes2)
    iouk = intsctk / (unionk + eps)
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    area_c = (engine.maximum(x2, x2g) - engine.minimum(x1, x1g)) * (engine.maximum(y2, y2g) - engine.minimum(y1, y1g))
    miouk = iouk - ((area_c - unionk) / (area_c + eps))
    return _reduce_loss(1 - miouk, reduction)


__all__ = ["generalized_box_iou_loss"]
