"""Cases a differential fuzz of flowvision.ops and the detection helpers against torchvision found wrong:
rotated-box IoU, NaN scores in NMS, batched remove_small_boxes, NMS dtype and category checks, and a BoxCoder
clip given as a numpy scalar. Seeded inputs, compared with torchvision on the CPU."""
import warnings

import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close, check_op
from torchvision.models.detection import _utils as tv_utils

import engine
from flowvision import ops
from flowvision.models.detection import _utils as det_utils

tv_ops = torchvision.ops


def _boxes(rng, n, dtype=np.float32):
    xy = rng.uniform(-10, 50, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0, 30, (n, 2))], 1).astype(dtype)


def _rotated(rng, n, dtype, right_angles=False):
    """(n, 5) cxcywhr boxes on a 20 x 20 field; with ``right_angles`` the angles are multiples of 45 degrees
    (parallel and collinear edges)."""
    angles = rng.choice([0.0, 45.0, 90.0, -90.0, 180.0], (n, 1)) if right_angles else rng.uniform(-180, 180, (n, 1))
    boxes = np.concatenate([rng.uniform(0, 20, (n, 2)), rng.uniform(0.5, 12, (n, 2)), angles], 1)
    return boxes.astype(dtype)


def _torch_box_iou(a, b, fmt):
    with warnings.catch_warnings():  # torchvision's rotated kernel has no autograd: a warning on requires_grad
        warnings.simplefilter("ignore")
        return torchvision.ops.box_iou(a, b, fmt=fmt)


@pytest.mark.parametrize("fmt", ["cxcywhr", "xywhr", "xyxyxyxy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("right_angles", [False, True])
def test_rotated_box_iou(fmt, dtype, right_angles):
    rng = np.random.default_rng([len(fmt), np.dtype(dtype).itemsize, int(right_angles)])
    a, b = _rotated(rng, 7, dtype, right_angles), _rotated(rng, 9, dtype, right_angles)
    b[0], b[1] = a[0], a[1] + [0.5, 0, 0, 0, 10]                     # identical, shifted and turned
    b[2] = a[2] * [1, 1, 0.3, 0.3, 1]                                # inside another
    b[3, 2] = 0.0                                                    # zero area: IoU 0
    if fmt != "cxcywhr":
        a = ops.box_convert(engine.from_numpy(a), "cxcywhr", fmt).numpy()
        b = ops.box_convert(engine.from_numpy(b), "cxcywhr", fmt).numpy()
    out = check_op(lambda x, y: ops.box_iou(x, y, fmt=fmt), lambda x, y: _torch_box_iou(x, y, fmt), [a, b],
                   rtol=1e-5 if dtype == np.float64 else 2e-5, grad=False)[0]
    assert out.dtype is engine.float32                              # torchvision's kernel writes float32


def test_rotated_box_iou_empty_and_many():
    rng = np.random.default_rng(1)
    many = _rotated(rng, 300, np.float32)
    check_op(lambda x, y: ops.box_iou(x, y, fmt="cxcywhr"), lambda x, y: _torch_box_iou(x, y, "cxcywhr"),
             [many, many[:40]], rtol=2e-5, grad=False)
    check_op(lambda x, y: ops.box_iou(x, y, fmt="cxcywhr"), lambda x, y: _torch_box_iou(x, y, "cxcywhr"),
             [many[:0], many[:3]], grad=False)


@pytest.mark.parametrize("case", ["3d", "half", "int", "mixed", "columns"])
def test_rotated_box_iou_errors(case):
    a = _rotated(np.random.default_rng(2), 3, np.float32)
    x, y = {"3d": (a[None], a[None]), "half": (a.astype(np.float16),) * 2, "int": (a.astype(np.int64),) * 2,
            "mixed": (a, a.astype(np.float64)), "columns": (a[:, :4], a[:, :4])}[case]
    with pytest.raises(RuntimeError) as expected:
        _torch_box_iou(torch.from_numpy(x), torch.from_numpy(y), "cxcywhr")
    with pytest.raises(RuntimeError) as got:
        ops.box_iou(engine.from_numpy(x), engine.from_numpy(y), fmt="cxcywhr")
    assert str(expected.value).endswith(str(got.value))               # torch's adds the kernel's file and line


def test_rotated_box_iou_on_cuda(cuda):
    rng = np.random.default_rng(3)
    a, b = _rotated(rng, 5, np.float32), _rotated(rng, 4, np.float32)
    check_op(lambda x, y: ops.box_iou(x, y, fmt="cxcywhr"), lambda x, y: _torch_box_iou(x, y, "cxcywhr"),
             [a, b], rtol=2e-5, grad=False, device="cuda")


def _nan_scores(rng, n, dtype=np.float32):
    boxes, scores = _boxes(rng, n, dtype), rng.random(n).astype(dtype)
    scores[rng.choice(n, 3, replace=False)] = np.nan
    scores[:4] = 0.5                                                   # ties keep index order
    return boxes, scores


@pytest.mark.parametrize("n", [20, 1500])                             # 1500: batched_nms's per-category path
def test_nms_nan_scores_come_first(n):
    rng = np.random.default_rng(n)
    boxes, scores = _nan_scores(rng, n)
    idxs = rng.integers(0, 3, n)
    check_op(lambda b, s: ops.nms(b, s, 0.5), lambda b, s: tv_ops.nms(b, s, 0.5), [boxes, scores], grad=False)
    check_op(lambda b, s, i: ops.batched_nms(b, s, i, 0.5), lambda b, s, i: tv_ops.batched_nms(b, s, i, 0.5),
             [boxes, scores, idxs], grad=False)


def test_nms_nan_scores_on_cuda(cuda):
    boxes, scores = _nan_scores(np.random.default_rng(4), 30)
    check_op(lambda b, s: ops.nms(b, s, 0.5), lambda b, s: tv_ops.nms(b, s, 0.5), [boxes, scores], grad=False,
             device="cuda")


def test_nms_type_and_category_checks():
    rng = np.random.default_rng(5)
    boxes, scores = torch.from_numpy(_boxes(rng, 4)), torch.from_numpy(rng.random(4))   # float32 vs float64
    ours = engine.from_numpy(boxes.numpy()), engine.from_numpy(scores.numpy())
    for theirs, mine in ((lambda: tv_ops.nms(boxes, scores, 0.5), lambda: ops.nms(*ours, 0.5)),
                         (lambda: tv_ops.batched_nms(boxes, scores, torch.zeros(4, dtype=torch.int64), 0.5),
                          lambda: ops.batched_nms(*ours, engine.zeros(4, dtype=engine.int64), 0.5)),
                         (lambda: tv_ops.batched_nms(boxes, scores.float(), torch.zeros(3, dtype=torch.int64), 0.5),
                          lambda: ops.batched_nms(ours[0], ours[1].float(), engine.zeros(3, dtype=engine.int64),
                                                  0.5))):
        with pytest.raises(RuntimeError) as expected:
            theirs()
        with pytest.raises(RuntimeError) as got:
            mine()
        assert str(expected.value).endswith(str(got.value))
    empty = ops.batched_nms(engine.zeros(0, 4), engine.zeros(0, dtype=engine.float64),
                            engine.zeros(0, dtype=engine.int64), 0.5)         # torchvision returns before checking
    assert empty.shape == (0,) and empty.dtype is engine.int64


@pytest.mark.parametrize("shape", [(2, 7), (3, 1, 5)])
def test_remove_small_boxes_batched(shape):
    """torchvision returns the index along the first axis of every kept box (torch.where(keep)[0])."""
    rng = np.random.default_rng(len(shape))
    boxes = _boxes(rng, int(np.prod(shape))).reshape(shape + (4,))
    check_op(lambda b: ops.remove_small_boxes(b, 12.0), lambda b: tv_ops.remove_small_boxes(b, 12.0), [boxes],
             grad=False)


def test_box_coder_numpy_clip():
    rng = np.random.default_rng(6)
    codes = (rng.standard_normal((5, 8)) * 3).astype(np.float32)
    boxes = _boxes(rng, 5)
    clip = np.log(1000.0 / 16)
    ours, ref = det_utils.BoxCoder((10.0, 10.0, 5.0, 5.0), clip), tv_utils.BoxCoder((10.0, 10.0, 5.0, 5.0), clip)
    check_op(lambda r, b: ours.decode(r, [b]), lambda r, b: ref.decode(r, [b]), [codes, boxes])
    assert_close(ours.decode_single(engine.from_numpy(codes), engine.from_numpy(boxes)).numpy(),
                 ref.decode_single(torch.from_numpy(codes), torch.from_numpy(boxes)).numpy())


@pytest.mark.parametrize("name", ["roi_align", "roi_pool"])
@pytest.mark.parametrize("output_size", [0, (0, 3), (2, 0)])
def test_roi_empty_output_grid(name, output_size):
    """torchvision returns an empty (K, C, PH, PW) result (and a zero gradient) for a zero output size."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    rois = np.array([[0, 1.0, 1.0, 4.0, 3.5], [1, 0.0, 2.0, 3.0, 5.0]], np.float32)
    check_op(lambda a, r: getattr(ops, name)(a, r, output_size), lambda a, r: getattr(tv_ops, name)(a, r, output_size),
             [x, rois])


@pytest.mark.parametrize("name", ["roi_align", "roi_pool"])
def test_roi_empty_output_grid_on_cuda(cuda, name):
    x = np.random.default_rng(8).standard_normal((1, 2, 5, 5)).astype(np.float32)
    rois = np.array([[0, 1.0, 1.0, 4.0, 3.5]], np.float32)
    check_op(lambda a, r: getattr(ops, name)(a, r, (0, 2)), lambda a, r: getattr(tv_ops, name)(a, r, (0, 2)),
             [x, rois], device="cuda")
