"""flowvision.ops box operations and NMS against torchvision.ops on the same inputs."""
import time

import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close, check_op

import engine
from flowvision import ops

rng = np.random.default_rng(0)


def _boxes(n, scale=100.0, size=40.0, dtype=np.float32, seed=None):
    """n random (x1, y1, x2, y2) boxes, heavily overlapping."""
    g = rng if seed is None else np.random.default_rng(seed)
    xy = g.uniform(0, scale, (n, 2))
    wh = g.uniform(0.5, size, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(dtype)


def _nms_both(boxes, scores, thr):
    ours = ops.nms(engine.from_numpy(boxes), engine.from_numpy(scores), thr).numpy()
    ref = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), thr).numpy()
    return ours, ref


@pytest.mark.parametrize("n", [0, 1, 7, 300, 1500])
@pytest.mark.parametrize("thr", [0.0, 0.3, 0.5, 0.7, 1.0])
def test_nms_random(n, thr):
    boxes, scores = _boxes(n), rng.random(n).astype(np.float32)
    ours, ref = _nms_both(boxes, scores, thr)
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours, ref)


def test_nms_ties_degenerate_outside_float64():
    boxes = np.concatenate([_boxes(200, seed=1), np.tile([[5, 5, 20, 20]], (20, 1)),      # identical boxes
                            np.array([[3, 3, 3, 3], [3, 3, 3, 3], [7, 2, 7, 9], [9, 9, 4, 4]]),  # zero/negative area
                            _boxes(30, seed=2) - 500]).astype(np.float32)                   # far outside
    scores = np.round(rng.random(len(boxes)) * 5).astype(np.float32) / 5                    # many ties
    for thr in (0.0, 0.2, 0.5, 1.0):
        ours, ref = _nms_both(boxes, scores, thr)
        np.testing.assert_array_equal(ours, ref)
        ours, ref = _nms_both(boxes.astype(np.float64), scores.astype(np.float64), thr)
        np.testing.assert_array_equal(ours, ref)


def test_nms_bad_shapes():
    with pytest.raises(RuntimeError, match="boxes should have 4 elements in dimension 1, got 5"):
        ops.nms(engine.zeros(3, 5), engine.zeros(3), 0.5)
    with pytest.raises(RuntimeError, match="boxes and scores should have same number"):
        ops.nms(engine.zeros(3, 4), engine.zeros(2), 0.5)


@pytest.mark.parametrize("n", [0, 1, 250, 1200])
def test_batched_nms(n):
    boxes, scores = _boxes(n), rng.random(n).astype(np.float32)
    idxs = rng.integers(0, 4, n)
    for thr in (0.3, 0.7):
        ours = ops.batched_nms(engine.from_numpy(boxes), engine.from_numpy(scores), engine.from_numpy(idxs), thr)
        ref = torchvision.ops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                          torch.from_numpy(idxs), thr)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_batched_nms_ties():
    boxes = np.tile(_boxes(20, seed=3), (5, 1))
    scores = np.round(rng.random(100) * 3).astype(np.float32)
    idxs = rng.integers(0, 3, 100)
    ours = ops.batched_nms(engine.from_numpy(boxes), engine.from_numpy(scores), engine.from_numpy(idxs), 0.5)
    ref = torchvision.ops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores), torch.from_numpy(idxs), 0.5)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_nms_speed():
    """2000 boxes: report ours vs torchvision (median of 5); ours must not be far slower."""
    boxes, scores = _boxes(2000, scale=800, size=200, seed=4), rng.random(2000).astype(np.float32)
    eb, es, tb, ts = (engine.from_numpy(boxes), engine.from_numpy(scores),
                      torch.from_numpy(boxes), torch.from_numpy(scores))

    def median(fn):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return float(np.median(times))

    ours, ref = median(lambda: ops.nms(eb, es, 0.7)), median(lambda: torchvision.ops.nms(tb, ts, 0.7))
    print(f"nms 2000 boxes: ours {ours * 1e3:.1f} ms, torchvision {ref * 1e3:.1f} ms, ratio {ref / ours:.2f}x")
    assert ours < 10 * ref + 0.05


def _pairs(dtype=np.float32):
    return [_boxes(6, dtype=dtype), _boxes(5, dtype=dtype)]


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pairwise_ious(name, dtype):
    a, b = _pairs(dtype)
    check_op(getattr(ops, name), getattr(torchvision.ops, name), [a, b], rtol=1e-5)
    # batched leading dims
    a3, b3 = np.stack([a, a[::-1]]), np.stack([b, b * 1.5])
    check_op(getattr(ops, name), getattr(torchvision.ops, name), [a3, b3], rtol=1e-5)


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "cxcywh"])
def test_box_iou_and_area_formats(fmt):
    a, b = _pairs()
    check_op(lambda x, y: ops.box_iou(x, y, fmt=fmt), lambda x, y: torchvision.ops.box_iou(x, y, fmt=fmt), [a, b])
    check_op(lambda x: ops.box_area(x, fmt=fmt), lambda x: torchvision.ops.box_area(x, fmt=fmt), [a])
    ints = a.astype(np.int16)
    assert_close(ops.box_area(engine.from_numpy(ints)).numpy(),
                 torchvision.ops.box_area(torch.from_numpy(ints)).numpy())
    with pytest.raises(ValueError, match="Unsupported Bounding Box area"):
        ops.box_area(engine.from_numpy(a), fmt="xyz")


@pytest.mark.parametrize("pair", [("xyxy", "xywh"), ("xyxy", "cxcywh"), ("xywh", "xyxy"), ("xywh", "cxcywh"),
                                  ("cxcywh", "xyxy"), ("cxcywh", "xywh"), ("xyxy", "xyxy")])
def test_box_convert(pair):
    a = _boxes(7)
    check_op(lambda x: ops.box_convert(x, *pair), lambda x: torchvision.ops.box_convert(x, *pair), [a])


def _rotated_boxes(fmt, dtype):
    """Seeded boxes in a rotated format: corners of boxes from x, y, w, h, angle for xyxyxyxy."""
    rng = np.random.default_rng(11)
    boxes = np.concatenate([rng.uniform(-20, 60, (9, 2)), rng.uniform(0, 30, (9, 2)), rng.uniform(-180, 180, (9, 1))], 1)
    boxes[0, 2:] = 0  # a degenerate box
    if fmt == "xyxyxyxy":
        boxes = torchvision.ops.box_convert(torch.from_numpy(boxes), "xywhr", "xyxyxyxy").numpy()
    return boxes.astype(dtype)


@pytest.mark.parametrize("pair", [("xywhr", "cxcywhr"), ("cxcywhr", "xywhr"), ("xywhr", "xyxyxyxy"),
                                  ("xyxyxyxy", "xywhr"), ("cxcywhr", "xyxyxyxy"), ("xyxyxyxy", "cxcywhr")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_box_convert_rotated(pair, dtype):
    """Floats within torch's sin/cos/atan2 rounding (their last bit differs from numpy's); integers rounded after
    each step through xywhr, as torchvision's."""
    boxes = _rotated_boxes(pair[0], dtype)
    ours = ops.box_convert(engine.from_numpy(boxes), *pair).numpy()
    theirs = torchvision.ops.box_convert(torch.from_numpy(boxes), *pair).numpy()
    assert ours.dtype == theirs.dtype
    if dtype == np.int64:
        np.testing.assert_array_equal(ours, theirs)
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-3)


def test_box_convert_rotated_gradient():
    check_op(lambda x: ops.box_convert(x, "cxcywhr", "xyxyxyxy"),
             lambda x: torchvision.ops.box_convert(x, "cxcywhr", "xyxyxyxy"), [_rotated_boxes("cxcywhr", np.float64)])


def test_box_convert_rotated_to_axis_aligned_is_refused():
    with pytest.raises(NotImplementedError, match="in_fmt xywhr and out_fmt xyxy"):
        ops.box_convert(engine.zeros(1, 5), "xywhr", "xyxy")


def test_box_convert_bad_format():
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions for given in_fmt xyxy and out_fmt abc"):
        ops.box_convert(engine.zeros(1, 4), "xyxy", "abc")


def test_clip_remove_small():
    a = _boxes(30, scale=120) - 10
    check_op(lambda x: ops.clip_boxes_to_image(x, (90, 70)),
             lambda x: torchvision.ops.clip_boxes_to_image(x, (90, 70)), [a])
    check_op(lambda x: ops.clip_boxes_to_image(x, (90, 70)),
             lambda x: torchvision.ops.clip_boxes_to_image(x, (90, 70)), [a.reshape(5, 6, 4)])
    ours = ops.remove_small_boxes(engine.from_numpy(a), 15.0).numpy()
    np.testing.assert_array_equal(ours, torchvision.ops.remove_small_boxes(torch.from_numpy(a), 15.0).numpy())


def test_masks_to_boxes():
    masks = np.zeros((4, 9, 13), np.uint8)
    masks[0, 2:5, 3:11] = 1
    masks[1, 8, 0] = 1
    masks[2, [0, 7], [12, 4]] = 1
    ours = ops.masks_to_boxes(engine.from_numpy(masks))
    ref = torchvision.ops.masks_to_boxes(torch.from_numpy(masks))
    assert ours.dtype == engine.float32
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert ops.masks_to_boxes(engine.zeros(0, 5, 5)).shape == (0, 4)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_box_losses(reduction):
    a, b = _boxes(8), _boxes(8)
    b[:3] = a[:3] + 2                                           # some overlapping, some disjoint pairs
    for name in ("generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss"):
        check_op(lambda x, y: getattr(ops, name)(x, y, reduction=reduction),
                 lambda x, y: getattr(torchvision.ops, name)(x, y, reduction=reduction), [a, b], rtol=1e-5)
    empty = engine.zeros(0, 4, requires_grad=True)
    loss = ops.generalized_box_iou_loss(empty, empty, reduction="mean")
    loss.backward()
    assert float(loss) == 0.0 and empty.grad.shape == (0, 4)


@pytest.mark.parametrize("alpha,gamma", [(0.25, 2), (-1, 0), (0.7, 1.5)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_sigmoid_focal_loss(alpha, gamma, reduction):
    x = rng.standard_normal((6, 5)).astype(np.float32) * 3
    t = (rng.random((6, 5)) > 0.7).astype(np.float32)
    check_op(lambda a, b: ops.sigmoid_focal_loss(a, b, alpha, gamma, reduction),
             lambda a, b: torchvision.ops.sigmoid_focal_loss(a, b, alpha, gamma, reduction), [x, t], rtol=1e-5)
    with pytest.raises(ValueError, match="Invalid alpha value"):
        ops.sigmoid_focal_loss(engine.zeros(2), engine.zeros(2), alpha=2)
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
        ops.sigmoid_focal_loss(engine.zeros(2), engine.zeros(2), reduction="max")
