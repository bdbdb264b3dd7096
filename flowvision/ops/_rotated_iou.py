"""Pairwise IoU of rotated boxes (torchvision's ``box_iou_rotated``, behind ``box_iou(fmt="cxcywhr")`` & co).

The intersection of two rectangles is a convex polygon whose vertices are among 24 candidates: the
corners of each box inside the other and the crossings of their edges. Only pairs whose circumscribed
circles meet are computed, all at once: their candidates are sorted by angle around their mean and
summed by the shoelace formula; no loop runs over boxes (only over chunks of pairs that bound the
memory). Arithmetic is float64, the result float32 as torchvision's. As torchvision's, there is no gradient.
"""
import numpy as np

import engine
from engine.autograd.function import Function
from engine.ops._common import xp_of

#: pairs of boxes whose intersections one vectorised pass computes (about 4 KB of temporaries each)
CHUNK_PAIRS = 1 << 15
#: boxes of smaller area, and edge pairs whose cross product is smaller, count as degenerate (as torchvision)
_TINY = 1e-14


def _corners(boxes, xp):
    """(K, 4, 2) corners, in order around the box, of (K, 5) (cx, cy, w, h, angle in degrees) boxes."""
    theta = boxes[:, 4] * (xp.pi / 180.0)
    cos, sin = xp.cos(theta) * 0.5, xp.sin(theta) * 0.5
    w, h = boxes[:, 2], boxes[:, 3]
    dx = xp.stack([sin * h + cos * w, -sin * h + cos * w, -sin * h - cos * w, sin * h - cos * w], axis=1)
    dy = xp.stack([cos * h - sin * w, -cos * h - sin * w, -cos * h + sin * w, cos * h + sin * w], axis=1)
    return xp.stack([boxes[:, None, 0] + dx, boxes[:, None, 1] + dy], axis=-1)


def _cross(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _inside(points, rect):
    """(..., P) whether each of ``points`` (..., P, 2) lies in the rectangle ``rect`` (..., 4, 2), edges included."""
    a = rect[..., None, 0, :]
    ab, ad = rect[..., None, 1, :] - a, rect[..., None, 3, :] - a
    ap = points - a
    along_ab, along_ad = (ap * ab).sum(-1), (ap * ad).sum(-1)
    return (along_ab >= 0) & (along_ab <= (ab * ab).sum(-1)) & (along_ad >= 0) & (along_ad <= (ad * ad).sum(-1))


def _crossings(p, q, xp):
    """(P, 16, 2) crossing points of every edge of p (P, 4, 2) with every edge of its partner q (P, 4, 2), and
    whether each exists (parallel edges never cross)."""
    start_p, edge_p = p[:, :, None, :], (xp.roll(p, -1, axis=1) - p)[:, :, None, :]
    start_q, edge_q = q[:, None, :, :], (xp.roll(q, -1, axis=1) - q)[:, None, :, :]
    det = _cross(edge_q, edge_p)
    gap = start_q - start_p
    t = _cross(edge_q, gap) / det
    u = _cross(edge_p, gap) / det
    found = (xp.abs(det) > _TINY) & (t >= 0) & (t <= 1) & (u >= 0) & (u <= 1)
    points = start_p + xp.where(found, t, 0)[..., None] * edge_p
    return points.reshape(len(p), 16, 2), found.reshape(len(p), 16)


def _intersection_areas(p, q, xp):
    """(P,) areas of the intersections of the paired rectangles p[i] and q[i], (P, 4, 2) each."""
    cross_points, cross_found = _crossings(p, q, xp)
    points = xp.concatenate([p, q, cross_points], 1)
    found = xp.concatenate([_inside(p, q), _inside(q, p), cross_found], 1)
    count = found.sum(1)
    centre = (points * found[..., None]).sum(1) / xp.maximum(count, 1)[:, None]
    rel = points - centre[:, None]
    angle = xp.where(found, xp.arctan2(rel[..., 1], rel[..., 0]), xp.inf)
    order = xp.argsort(angle, axis=1)
    rel = xp.take_along_axis(rel, order[..., None], axis=1)
    found = xp.take_along_axis(found, order, axis=1)
    rel = xp.where(found[..., None], rel, rel[:, :1])            # missing vertices repeat the first: no area
    area = 0.5 * xp.abs(_cross(rel, xp.roll(rel, -1, axis=1)).sum(1))
    return xp.where(count >= 3, area, 0.0)


def _may_meet(b1, b2, xp):
    """(N, M) whether the circles around each pair of boxes overlap: only those pairs can intersect."""
    radius1, radius2 = xp.hypot(b1[:, 2], b1[:, 3]) / 2, xp.hypot(b2[:, 2], b2[:, 3]) / 2
    distance = xp.hypot(b1[:, None, 0] - b2[None, :, 0], b1[:, None, 1] - b2[None, :, 1])
    return distance <= radius1[:, None] + radius2[None, :]


class _RotatedIoU(Function):
    """(N, M) float32 IoU of (N, 5) and (M, 5) cxcywhr boxes; no gradient."""

    uses_inputs = False

    def forward(self, boxes1, boxes2):
        xp = xp_of(boxes1)
        b1, b2 = boxes1.astype(xp.float64), boxes2.astype(xp.float64)
        area1, area2 = b1[:, 2] * b1[:, 3], b2[:, 2] * b2[:, 3]
        p, q = _corners(b1, xp), _corners(b2, xp)
        out = xp.zeros((len(b1), len(b2)), xp.float64)
        close = _may_meet(b1, b2, xp) & (area1[:, None] >= _TINY) & (area2[None, :] >= _TINY)
        rows, cols = xp.nonzero(close)
        with np.errstate(divide="ignore", invalid="ignore"):  # parallel edges: masked in _crossings
            for start in range(0, len(rows), CHUNK_PAIRS):
                i, j = rows[start:start + CHUNK_PAIRS], cols[start:start + CHUNK_PAIRS]
                inter = _intersection_areas(p[i], q[j], xp)
                out[i, j] = inter / (area1[i] + area2[j] - inter)
        return out.astype(xp.float32)   # torchvision returns float32 whatever the boxes' dtype


def _check(boxes1, boxes2):
    """torchvision's checks: 2-D (K, 5) float32/float64 boxes of one dtype."""
    for name, boxes in (("boxes1", boxes1), ("boxes2", boxes2)):
        if boxes.dim() != 2:
            raise RuntimeError(f"{name} should be a 2d tensor, got {boxes.dim()}D")
        if boxes.size(1) != 5:
            raise RuntimeError(f"{name} should have 5 elements in dimension 1, got {boxes.size(1)}")
    if boxes1.dtype != boxes2.dtype:
        raise RuntimeError("boxes1 and boxes2 must have the same dtype")
    if boxes1.dtype not in (engine.float32, engine.float64):
        raise RuntimeError(f"\"box_iou_rotated_cpu\" not implemented for '{boxes1.dtype.title}'")


def box_iou_rotated(boxes1, boxes2):
    """Pairwise IoU, Tensor[N, M], of (cx, cy, w, h, angle in degrees) boxes; boxes of (near) zero area have IoU 0."""
    _check(boxes1, boxes2)
    return _RotatedIoU()(boxes1.detach(), boxes2.detach())
