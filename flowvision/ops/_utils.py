"""Small helpers shared by the ops: dtype upcasting, box list <-> RoI tensor conversion, checks."""
import engine
from engine import Tensor


def _cat(tensors, dim=0):
    """``engine.cat`` that returns a single tensor unchanged (no copy)."""
    if len(tensors) == 1:
        return tensors[0]
    return engine.cat(tensors, dim)


def convert_boxes_to_roi_format(boxes):
    """A list of per-image Tensor[L, 4] boxes as one Tensor[K, 5] whose column 0 is the image index."""
    concat_boxes = _cat(list(boxes), dim=0)
    ids = _cat([engine.full_like(b[:, :1], i) for i, b in enumerate(boxes)], dim=0)
    return engine.cat([ids, concat_boxes], dim=1)


def check_roi_boxes_shape(boxes):
    """Refuse anything but Tensor[K, 5] or a list/tuple of Tensor[L, 4]."""
    if isinstance(boxes, (list, tuple)):
        for tensor in boxes:
            if tensor.dim() != 2 or tensor.size(1) != 4:
                raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, Tensor):
        if boxes.dim() != 2 or boxes.size(1) != 5:
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def _upcast(t):
    """Widen half floats to float32 and small integers to int32 so products do not overflow."""
    if t.is_floating_point():
        return t if t.dtype in (engine.float32, engine.float64) else t.float()
    return t if t.dtype in (engine.int32, engine.int64) else t.int()


def _upcast_non_float(t):
    """Anything but float32/float64 becomes float32."""
    return t if t.dtype in (engine.float32, engine.float64) else t.float()


def _loss_inter_union(boxes1, boxes2):
    """Elementwise intersection and union of paired (x1, y1, x2, y2) boxes, for the IoU losses."""
    x1, y1, x2, y2 = boxes1.unbind(dim=-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(dim=-1)
    xkis1, ykis1 = engine.maximum(x1, x1g), engine.maximum(y1, y1g)
    xkis2, ykis2 = engine.minimum(x2, x2g), engine.minimum(y2, y2g)
    overlap = (ykis2 > ykis1) & (xkis2 > xkis1)
    intsctk = engine.where(overlap, (xkis2 - xkis1) * (ykis2 - ykis1), engine.zeros_like(x1))
    unionk = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - intsctk
    return intsctk, unionk


def _reduce_loss(loss, reduction):
    """'none' | 'mean' | 'sum' of an elementwise loss; the mean of nothing is 0 (keeping the graph)."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: "
                     "'none', 'mean', 'sum'")
