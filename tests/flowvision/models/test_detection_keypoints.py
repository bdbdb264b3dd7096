"""Keypoint R-CNN heatmap helpers against torchvision.models.detection.roi_heads on seeded random inputs."""
import numpy as np
import pytest
import torch
from op_check import assert_close
from torchvision.models.detection import roi_heads as tv

import engine
from flowvision.models.detection import _keypoints


def _e(a):
    return engine.from_numpy(np.ascontiguousarray(a))


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def _rois(rng, n, size=100.0):
    xy = rng.random((n, 2)) * size
    wh = rng.random((n, 2)) * size / 2 + 0.5
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def _keypoints_in(rng, rois, k):
    """(n, k, 3) keypoints around each roi (some outside, some on the far edge, some invisible)."""
    n = len(rois)
    frac = rng.random((n, k, 2)) * 1.4 - 0.2
    xy = rois[:, None, :2] + frac * (rois[:, None, 2:] - rois[:, None, :2])
    xy[:, 0, 0] = rois[:, 2]
    xy[:, 1, 1] = rois[:, 3]
    vis = rng.integers(0, 3, (n, k, 1))
    return np.concatenate([xy, vis], 2).astype(np.float32)


def test_keypoints_to_heatmap():
    rng = np.random.default_rng(0)
    rois = _rois(rng, 9)
    kps = _keypoints_in(rng, rois, 5)
    ours = _keypoints.keypoints_to_heatmap(_e(kps), _e(rois), 56)
    ref = tv.keypoints_to_heatmap(_t(kps), _t(rois), 56)
    for o, r in zip(ours, ref):
        assert o.dtype == engine.int64
        np.testing.assert_array_equal(o.numpy(), r.numpy())


def test_heatmaps_to_keypoints():
    rng = np.random.default_rng(1)
    rois = _rois(rng, 6)
    rois[0] = [10, 10, 10.4, 10.2]  # narrower than a pixel: clamped to 1
    maps = rng.standard_normal((6, 4, 14, 14)).astype(np.float32)
    ours_xy, ours_s = _keypoints.heatmaps_to_keypoints(_e(maps), _e(rois))
    ref_xy, ref_s = tv.heatmaps_to_keypoints(_t(maps), _t(rois))
    assert ours_xy.dtype == engine.float32 and tuple(ours_xy.shape) == (6, 4, 3)
    assert_close(ours_xy.numpy(), ref_xy.numpy(), rtol=1e-6, what="keypoints")
    assert_close(ours_s.numpy(), ref_s.numpy(), rtol=1e-5, what="scores")


def test_keypointrcnn_inference():
    rng = np.random.default_rng(2)
    maps = rng.standard_normal((5, 3, 14, 14)).astype(np.float32)
    boxes = [_rois(rng, 2), _rois(rng, 0), _rois(rng, 3)]
    ours = _keypoints.keypointrcnn_inference(_e(maps), [_e(b) for b in boxes])
    ref = tv.keypointrcnn_inference(_t(maps), [_t(b) for b in boxes])
    for o_list, r_list in zip(ours, ref):
        assert [tuple(o.shape) for o in o_list] == [tuple(r.shape) for r in r_list]
        for o, r in zip(o_list, r_list):
            assert_close(o.numpy(), r.numpy(), rtol=1e-5)


@pytest.mark.parametrize("counts", [(6, 4), (3, 0)])
def test_keypointrcnn_loss_and_grad(counts):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((sum(counts), 5, 8, 8)).astype(np.float32)
    props, gts, idxs = [], [], []
    for n in counts:
        gt_rois = _rois(rng, 3)
        idx = rng.integers(0, 3, n)
        props.append((gt_rois[idx] + rng.standard_normal((n, 4)) * 2).astype(np.float32))
        gts.append(_keypoints_in(rng, gt_rois, 5))
        idxs.append(idx)
    ours_x = _e(logits).requires_grad_()
    ref_x = _t(logits).requires_grad_()
    ours = _keypoints.keypointrcnn_loss(ours_x, [_e(p) for p in props], [_e(g) for g in gts], [_e(i) for i in idxs])
    ref = tv.keypointrcnn_loss(ref_x, [_t(p) for p in props], [_t(g) for g in gts], [_t(i) for i in idxs])
    assert ref.item() > 0
    assert_close(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-5, what="loss")
    ours.backward()
    ref.backward()
    assert_close(ours_x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-5, what="grad")


def test_keypointrcnn_loss_no_valid_targets():
    logits = engine.randn(2, 3, 8, 8, requires_grad=True)
    kps = engine.zeros(1, 3, 3)  # all invisible
    loss = _keypoints.keypointrcnn_loss(logits, [engine.tensor([[0., 0, 4, 4], [1, 1, 5, 5]])], [kps],
                                        [engine.zeros(2, dtype=engine.int64)])
    assert loss.item() == 0
    loss.backward()
    assert float(logits.grad.abs().sum()) == 0


def test_keypointrcnn_loss_non_square():
    with pytest.raises(ValueError, match="Instead got H = 8 and W = 6"):
        _keypoints.keypointrcnn_loss(engine.zeros(1, 2, 8, 6), [], [], [])
