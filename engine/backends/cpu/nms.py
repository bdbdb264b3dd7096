"""Greedy non-maximum suppression on numpy, block by block instead of box by box.

Boxes are visited in descending score order (a stable sort, so tied scores keep index order, and
NaN scores first, as torchvision). A box survives when no earlier survivor overlaps it by more than
the threshold. Survivors are decided 64 candidates at a time: inside a block a fixed-point iteration settles the
chain of suppressions (after round r the first r candidates are final), then the block's
survivors remove every later candidate they overlap in one vectorised step. IoU is computed in
the boxes' dtype with torchvision's operation order and compared in double precision.
"""
import numpy as np

BLOCK = 64


def descending(scores):
    """Indices that sort ``scores`` in decreasing order as torch's stable descending sort does: ties keep
    index order and NaN counts as the largest value (a stable sort by value, then a stable one moving NaN
    first)."""
    order = np.argsort(-scores, kind="stable")
    return order[np.argsort(~np.isnan(scores[order]), kind="stable")]


def _areas(boxes):
    """(x2 - x1) * (y2 - y1) in the boxes' dtype."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _overlaps(a, area_a, b, area_b, threshold):
    """Boolean (len(a), len(b)) matrix: IoU(a_i, b_j) > threshold, in torchvision's arithmetic."""
    w = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    h = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.maximum(w, 0) * np.maximum(h, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_a[:, None] + area_b[None, :] - inter)
    return iou > np.float64(threshold)


def _settle_block(over):
    """Greedy survivors among candidates whose earlier-suppresses-later matrix is ``over``."""
    n = over.shape[0]
    over = np.triu(over, 1)
    keep = np.ones(n, bool)
    for _ in range(n):
        new = ~(keep[:, None] & over).any(axis=0)
        if np.array_equal(new, keep):
            break
        keep = new
    return keep


def _per_class(boxes, scores, iou_threshold, classes):
    """NMS run separately on each class's boxes (sum of squares of the class sizes, not the square of
    their sum); the survivors of all classes, by decreasing score."""
    by_class = np.argsort(classes, kind="stable")
    bounds = np.flatnonzero(np.diff(classes[by_class])) + 1
    kept = [members[nms(boxes[members], scores[members], iou_threshold)]
            for members in np.split(by_class, bounds)]
    kept = np.concatenate(kept)
    return kept[descending(scores[kept])].astype(np.int64)


def nms(boxes, scores, iou_threshold, classes=None):
    """Indices (int64, by decreasing score) of the boxes greedy NMS keeps.

    With ``classes`` (one integer label per box) only boxes of the same class suppress each other.
    """
    n = boxes.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    if classes is not None:
        return _per_class(boxes, scores, iou_threshold, np.asarray(classes))
    order = descending(scores)
    boxes = boxes[order]
    areas = _areas(boxes)
    alive = np.arange(n)
    kept = []
    while alive.size:
        block, rest = alive[:BLOCK], alive[BLOCK:]
        over = _overlaps(boxes[block], areas[block], boxes[block], areas[block], iou_threshold)
        block = block[_settle_block(over)]
        kept.append(block)
        if rest.size:
            over = _overlaps(boxes[block], areas[block], boxes[rest], areas[rest], iou_threshold)
            rest = rest[~over.any(axis=0)]
        alive = rest
    return order[np.concatenate(kept)].astype(np.int64)
