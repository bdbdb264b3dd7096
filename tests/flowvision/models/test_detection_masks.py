"""Mask R-CNN mask helpers against torchvision.models.detection.roi_heads on seeded random inputs."""
import numpy as np
import pytest
import torch
from op_check import assert_close
from torchvision.models.detection import roi_heads as tv

import engine
from flowvision.models.detection import _masks


def _boxes(rng, n, h, w):
    """n random (x1, y1, x2, y2) boxes clipped to an h x w image, some tiny."""
    xy = rng.random((n, 2)) * [w, h]
    wh = rng.random((n, 2)) * [w / 2, h / 2] + 0.3
    boxes = np.concatenate([xy, xy + wh], 1)
    boxes[:, 0::2] = boxes[:, 0::2].clip(0, w)
    boxes[:, 1::2] = boxes[:, 1::2].clip(0, h)
    return boxes.astype(np.float32)


def _e(a):
    return engine.from_numpy(np.ascontiguousarray(a))


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_expand_boxes_and_masks():
    rng = np.random.default_rng(0)
    boxes = _boxes(rng, 9, 50, 70)
    assert_close(_masks.expand_boxes(_e(boxes), 1.25).numpy(), tv.expand_boxes(_t(boxes), 1.25).numpy())
    masks = rng.random((4, 1, 14, 14)).astype(np.float32)
    ours, s = _masks.expand_masks(_e(masks), 2)
    ref, s_ref = tv.expand_masks(_t(masks), 2)
    assert s == s_ref
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_paste_masks_in_image(dtype):
    rng = np.random.default_rng(1)
    im_h, im_w = 61, 83
    masks = rng.random((11, 1, 28, 28)).astype(dtype)
    boxes = _boxes(rng, 11, im_h, im_w).astype(dtype)
    boxes[0] = [0, 0, im_w, im_h]
    boxes[1] = [3, 4, 3.2, 4.1]
    ours = _masks.paste_masks_in_image(_e(masks), _e(boxes), (im_h, im_w))
    ref = tv.paste_masks_in_image(_t(masks), _t(boxes), (im_h, im_w))
    assert ours.dtype == engine.from_numpy(masks).dtype
    assert_close(ours.numpy(), ref.numpy(), rtol=1e-5)
    one = _masks.paste_mask_in_image(_e(masks[2, 0]), _e(boxes[2]).long(), im_h, im_w)
    assert_close(one.numpy(), tv.paste_mask_in_image(_t(masks[2, 0]), _t(boxes[2]).long(), im_h, im_w).numpy())


def test_paste_masks_empty():
    ours = _masks.paste_masks_in_image(engine.zeros(0, 1, 28, 28), engine.zeros(0, 4), (10, 12))
    assert tuple(ours.shape) == (0, 1, 10, 12)


def test_project_masks_on_boxes():
    rng = np.random.default_rng(2)
    gt = (rng.random((3, 40, 50)) > 0.5).astype(np.uint8)
    boxes = _boxes(rng, 8, 40, 50)
    idx = rng.integers(0, 3, 8)
    ours = _masks.project_masks_on_boxes(_e(gt), _e(boxes), _e(idx), 14)
    ref = tv.project_masks_on_boxes(_t(gt), _t(boxes), _t(idx), 14)
    assert_close(ours.numpy(), ref.numpy(), rtol=1e-5)


def _loss_inputs(rng, counts, num_classes=5, M=14):
    logits = rng.standard_normal((sum(counts), num_classes, M, M)).astype(np.float32)
    props, gts, labels, idxs = [], [], [], []
    for n in counts:
        g = rng.integers(1, 4)
        props.append(_boxes(rng, n, 30, 40))
        gts.append((rng.random((g, 30, 40)) > 0.4).astype(np.uint8))
        labels.append(rng.integers(1, num_classes, g))
        idxs.append(rng.integers(0, g, n))
    return logits, props, gts, labels, idxs


@pytest.mark.parametrize("counts", [(5, 3), (4, 0), (0, 0)])
def test_maskrcnn_loss_and_grad(counts):
    logits, props, gts, labels, idxs = _loss_inputs(np.random.default_rng(3), counts)
    ours_x = _e(logits).requires_grad_()
    ref_x = _t(logits).requires_grad_()
    ours = _masks.maskrcnn_loss(ours_x, [_e(p) for p in props], [_e(g) for g in gts], [_e(l) for l in labels],
                                [_e(i) for i in idxs])
    ref = tv.maskrcnn_loss(ref_x, [_t(p) for p in props], [_t(g) for g in gts], [_t(l) for l in labels],
                           [_t(i) for i in idxs])
    assert_close(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-5, what="loss")
    ours.backward()
    ref.backward()
    assert_close(ours_x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-5, what="grad")


def test_maskrcnn_inference():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 4, 14, 14)).astype(np.float32)
    labels = [rng.integers(0, 4, 3), rng.integers(0, 4, 0), rng.integers(0, 4, 4)]
    ours = _masks.maskrcnn_inference(_e(x), [_e(l) for l in labels])
    ref = tv.maskrcnn_inference(_t(x), [_t(l) for l in labels])
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        assert tuple(o.shape) == tuple(r.shape)
        assert_close(o.numpy(), r.numpy(), rtol=1e-6)
