"""Rotated boxes: conversions between XYWHR, CXCYWHR and XYXYXYXY, clamping to the canvas, and the rectangle a
warped (parallelogram) box becomes.

Angles are in degrees, counter-clockwise on screen (y points down): a box of width ``w`` at angle ``r`` runs from
its first corner (x, y) to (x + w cos r, y - w sin r). Every step keeps torchvision's order of floating-point
operations, so that results agree with its to the rounding of sin, cos, atan2 and sqrt (torch's and numpy's
float32 versions differ in the last bit now and then).
"""
import math

import numpy as np

import engine
from engine._device import array_module

from ... import functional as F1


def radians(degrees):
    """Degrees to radians as torchvision rounds it: (r * pi) / 180 in the boxes' dtype."""
    return degrees * math.pi / 180.0


def _check_floating(boxes):
    """Rotated boxes are floating point: their corners move by sines and cosines."""
    if not boxes.is_floating_point():
        raise ValueError(f"Rotated bounding boxes should be floating point tensors, got {boxes.dtype}.")


def _half_size(boxes):
    """|w / 2|, |h / 2| of [..., 5] boxes (a negative size spans as much as its positive twin)."""
    return (boxes[..., 2] / -2).abs(), (boxes[..., 3] / -2).abs()


def cxcywhr_to_xywhr(cxcywhr):
    """The first corner of each box from its centre: (cx - w/2 cos - h/2 sin, cy + w/2 sin - h/2 cos)."""
    _check_floating(cxcywhr)
    half_w, half_h = _half_size(cxcywhr)
    rad = radians(cxcywhr[..., 4])
    cos, sin = rad.cos(), rad.sin()
    x = cxcywhr[..., 0] - half_w * cos - half_h * sin
    y = cxcywhr[..., 1] + half_w * sin - half_h * cos
    return engine.stack([x, y, cxcywhr[..., 2], cxcywhr[..., 3], cxcywhr[..., 4]], dim=-1)


def xywhr_to_cxcywhr(xywhr):
    """The centre of each box from its first corner (the inverse of ``cxcywhr_to_xywhr``)."""
    _check_floating(xywhr)
    half_w, half_h = _half_size(xywhr)
    rad = radians(xywhr[..., 4])
    cos, sin = rad.cos(), rad.sin()
    cx = xywhr[..., 0] + half_w * cos + half_h * sin
    cy = xywhr[..., 1] - half_w * sin + half_h * cos
    return engine.stack([cx, cy, xywhr[..., 2], xywhr[..., 3], xywhr[..., 4]], dim=-1)


def xywhr_to_xyxyxyxy(xywhr):
    """The four corners [..., 8]: first, along the width, opposite, along the height."""
    _check_floating(xywhr)
    x, y, w, h = xywhr[..., 0], xywhr[..., 1], xywhr[..., 2], xywhr[..., 3]
    rad = radians(xywhr[..., 4])
    cos, sin = rad.cos(), rad.sin()
    w_cos, w_sin, h_sin, h_cos = w * cos, w * sin, h * sin, h * cos
    corners = [x, y, x + w_cos, y - w_sin, x + (w_cos + h_sin), y - (w_sin - h_cos), x + h_sin, y + h_cos]
    return engine.stack(corners, dim=-1)


def xyxyxyxy_to_xywhr(xyxyxyxy):
    """(first corner, length of the first edge, of the second edge, angle of the first edge); integer corners are
    measured in float32 and the result truncated back, as torchvision does."""
    dtype = xyxyxyxy.dtype
    corners = xyxyxyxy if dtype in (engine.float32, engine.float64) else xyxyxyxy.to(engine.float32)
    x1, y1, x2, y2, x3, y3 = (corners[..., i] for i in range(6))
    angle = engine.atan2(y1 - y2, x2 - x1) / math.pi * 180.0
    first_dx, first_dy, second_dx, second_dy = x2 - x1, y2 - y1, x3 - x2, y3 - y2
    width = (first_dx * first_dx + first_dy * first_dy).sqrt()
    height = (second_dx * second_dx + second_dy * second_dy).sqrt()
    return engine.stack([x1, y1, width, height, angle], dim=-1).to(dtype)


def parallelogram_to_rectangle(parallelogram):
    """[..., 8] parallelograms (affine-warped boxes) as rectangles around the same centre (the middle of the
    first-to-third diagonal), along the direction of the longer side. Integer corners are measured in float32
    and truncated back."""
    with np.errstate(all="ignore"):  # degenerate sides give torch's NaN angles, quietly
        return _parallelogram_to_rectangle(parallelogram)


def _parallelogram_to_rectangle(parallelogram):
    dtype = parallelogram.dtype
    points = parallelogram if dtype in (engine.float32, engine.float64) else parallelogram.to(engine.float32)
    x1, y1, x2, y2, x3, y3, x4, y4 = (points[..., i] for i in range(8))
    cx, cy = (x1 + x3) / 2, (y1 + y3) / 2
    side_w = ((x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1)).sqrt()
    side_h = ((x4 - x1) * (x4 - x1) + (y4 - y1) * (y4 - y1)).sqrt()
    angle_w = engine.atan2(y1 - y2, x2 - x1)
    angle_h = engine.atan2(y1 - y4, x4 - x1)
    between = angle_w - angle_h
    sign = engine.where(between > math.pi / 2, -1, 1)
    cos, sin = between.cos(), between.sin()
    w = engine.where(side_w < side_h, side_w * sin, side_w + side_h * cos * sign)
    h = engine.where(side_w > side_h, side_h * sin, side_h + side_w * cos * sign)
    rad = engine.where(side_h > side_w, angle_h + math.pi / 2, angle_w)
    cos, sin = rad.cos(), rad.sin()
    half_w_cos, half_w_sin, half_h_cos, half_h_sin = w / 2 * cos, w / 2 * sin, h / 2 * cos, h / 2 * sin
    corners = [cx - half_w_cos - half_h_sin, cy - half_h_cos + half_w_sin,
               cx + half_w_cos - half_h_sin, cy - half_h_cos - half_w_sin,
               cx + half_w_cos + half_h_sin, cy + half_h_cos - half_w_sin,
               cx - half_w_cos + half_h_sin, cy + half_h_cos + half_w_sin]
    return engine.stack(corners, dim=-1).to(dtype)


# ---- clamping -------------------------------------------------------------------------------------------------
# A box is clamped against the left edge of the canvas, then the canvas and the box turn a quarter counter-
# clockwise and the next edge is done, four times. Against the left edge, the corners are renumbered to start at
# the leftmost one and each side's line y = a x + b (a slope, b intercept) is moved within the box's original
# lines; the corners become the new lines' crossings. This runs on the arrays behind the tensors (numpy or CuPy,
# whose arithmetic the engine's is): as ~750 engine ops it took 9.7 ms for 8 boxes, torch 2.6 ms.
def _roll_order(xp, corners):
    """[N, 8] gather indices that renumber each box's corners to start at its leftmost one (the top one of two
    at the same x): the corner of least y / max|y| + 100 x / max|x|."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    key = y / xp.abs(y).max(axis=1, keepdims=True) + (x / xp.abs(x).max(axis=1, keepdims=True)) * 100
    first = key.argmin(axis=1)[:, None]
    return (first * 2 + xp.arange(8)) % 8


def _lines(xp, corners):
    """(slopes, intercepts) [N, 4] of the sides from each corner to the next."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    slope = xp.diff(y, append=y[:, :1]) / xp.diff(x, append=x[:, :1])
    return slope, y - slope * x


def _crossings(xp, slope, intercept):
    """[N, 8] corners where each side's line meets the previous side's."""
    x = -xp.diff(intercept, prepend=intercept[:, 3:]) / xp.diff(slope, prepend=slope[:, 3:])
    return xp.stack([x, slope * x + intercept], axis=-1).reshape(-1, 8)


def _between(xp, value, low, high):
    """``value`` raised to ``low`` then lowered to ``high`` (``high`` wins where they cross; NaN spreads)."""
    return xp.minimum(xp.maximum(value, low), high)


def _clamped_intercepts(xp, corners, original, canvas_size, clamping_mode):
    """[N, 4] intercepts of the four sides of boxes whose first corner is leftmost, clamped against the left
    edge. Soft: the two sides through the first corner slide to the canvas (within the box); hard: they meet
    at their mean and the other two move in to keep the largest box on the canvas. Every side stays between
    its original line and the original opposite side."""
    height, width = canvas_size
    slope, intercept = _lines(xp, corners)
    a1, a2, a3, a4 = slope.T
    b1, b2, b3, b4 = intercept.T
    b1_low, b2_low, b1_high, b2_high = _lines(xp, original)[1].T
    b1_new = xp.clip(_between(xp, b2, b1, b3), 0, height)
    b4_new = xp.clip(_between(xp, b3, b2, b4), 0, height)
    if clamping_mode == "hard":
        b1_new = b4_new = (b1_new + b4_new) / 2
        b2_new = xp.stack([b1_new * a2 / a1, b3 * a2 / a3, (a1 - a2) * width + b1_new, (a3 - a2) * width + b3],
                          axis=1).max(axis=1)
        b2 = xp.minimum(b2_new, b2)
        b3_new = xp.stack([height * (1 - a3 / a4) + b4_new * a3 / a4, height * (1 - a3 / a2) + b2 * a3 / a2,
                           (a2 - a3) * width + b2, (a4 - a3) * width + b4_new], axis=1).min(axis=1)
        b3 = xp.maximum(b3_new, b3)
        # the first and last sides share one line here: both bounds apply to it, one after the other
        b1_new = b4_new = _between(xp, _between(xp, b1_new, b1_low, b1_high), b2_low, b2_high)
    else:
        b1_new = _between(xp, b1_new, b1_low, b1_high)
        b4_new = _between(xp, b4_new, b2_low, b2_high)
    b3 = _between(xp, b3, b1_low, b1_high)
    b2 = _between(xp, b2, b2_low, b2_high)
    return xp.stack([b1_new, b2, b3, b4_new], axis=-1)


def _clamp_left(xp, corners, original, canvas_size, clamping_mode):
    """[N, 8] boxes (first corner leftmost) clamped against the canvas' left edge: moved to the crossings of their
    clamped sides where the first corner is outside; only the first and last corners' x raised to 0 where a side
    through them is horizontal; nothing left (all zero) for boxes wholly left of the edge, degenerate boxes, and
    boxes whose sides are both near-horizontal and near-vertical."""
    slope, _ = _lines(xp, corners)
    x1, y1, x2, y2, x3, y3, x4, y4 = corners.T
    crossings = _crossings(xp, slope, _clamped_intercepts(xp, corners, original, canvas_size, clamping_mode))
    raised = corners.copy()
    raised[:, 0::6] = xp.maximum(corners[:, 0::6], 0)
    outside = (x1 < 0) & ~xp.isnan(crossings).any(axis=-1)
    horizontal = xp.isclose(y1, y2) | xp.isclose(y3, y4)
    empty = ((x1 <= 0) & (x2 <= 0) & (x3 <= 0) & (x4 <= 0)) | xp.isclose(y1, y4) | xp.isclose(y2, y3) | (
        horizontal & xp.isclose(x1, x2))
    corners = xp.where(outside[:, None], crossings, corners)
    corners = xp.where(horizontal[:, None], raised, corners)
    return xp.where(empty[:, None], xp.zeros_like(corners), corners)


def _quarter_turn(xp, corners, width):
    """Corners after turning the canvas (of ``width``) a quarter counter-clockwise: (x, y) -> (y, width - x)."""
    points = corners.reshape(-1, 4, 2)
    return xp.stack([points[..., 1], width - points[..., 0]], axis=-1).reshape(-1, 8)


def clamp_rotated(corners, canvas_size, clamping_mode):
    """[N, 8] XYXYXYXY boxes clamped to the canvas, one edge after the other (see the comment above). The
    corners come back renumbered as torchvision's: each pass applies its renumbering twice. Vertical sides have
    infinite slopes and degenerate boxes NaN ones, as in torch, without numpy's warnings."""
    array = F1._arr(corners)
    xp = array_module(array)
    with np.errstate(all="ignore"):
        return F1._wrap(_clamp_edge_by_edge(xp, array, canvas_size, clamping_mode))


def _clamp_edge_by_edge(xp, corners, canvas_size, clamping_mode):
    original = corners
    for _ in range(4):
        order = _roll_order(xp, corners)
        corners = xp.take_along_axis(corners, order, axis=1)
        original = xp.take_along_axis(original, order, axis=1)
        corners = _clamp_left(xp, corners, original, canvas_size, clamping_mode)
        corners = xp.take_along_axis(corners, order, axis=1)
        original = xp.take_along_axis(original, order, axis=1)
        corners, original = _quarter_turn(xp, corners, canvas_size[1]), _quarter_turn(xp, original, canvas_size[1])
        canvas_size = (canvas_size[1], canvas_size[0])
    return corners
