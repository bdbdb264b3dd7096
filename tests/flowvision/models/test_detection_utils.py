"""flowvision.models.detection._utils against torchvision's det_utils: coders, matchers, sampler."""
import numpy as np
import pytest
import torch
from op_check import check_op
from torchvision.models.detection import _utils as tv_utils

import engine
from flowvision import ops
from flowvision.models.detection import _utils as det_utils

rng = np.random.default_rng(0)


def _boxes(n, dtype=np.float32):
    xy = rng.uniform(0, 200, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(2, 120, (n, 2))], 1).astype(dtype)


@pytest.mark.parametrize("weights", [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)])
def test_box_coder(weights):
    ref_boxes, proposals = [_boxes(5), _boxes(3)], [_boxes(5), _boxes(3)]
    ours, ref = det_utils.BoxCoder(weights), tv_utils.BoxCoder(weights)
    check_op(lambda a, b, c, d: ours.encode([a, b], [c, d]), lambda a, b, c, d: ref.encode([a, b], [c, d]),
             ref_boxes + proposals, rtol=1e-5)
    codes = rng.standard_normal((8, 12)).astype(np.float32)
    codes[0, 2] = 20.0                                               # beyond bbox_xform_clip
    check_op(lambda r, a, b: ours.decode(r, [a, b]), lambda r, a, b: ref.decode(r, [a, b]),
             [codes] + proposals, rtol=1e-5)
    check_op(lambda r, a: ours.decode_single(r, a), lambda r, a: ref.decode_single(r, a),
             [codes[:5], proposals[0].astype(np.float64)], rtol=1e-5)
    with pytest.raises(AssertionError, match="expects boxes of type list or tuple"):
        ours.decode(engine.zeros(1, 4), engine.zeros(1, 4))


@pytest.mark.parametrize("normalize", [True, False])
def test_box_linear_coder(normalize):
    ours, ref = det_utils.BoxLinearCoder(normalize), tv_utils.BoxLinearCoder(normalize)
    a, b = _boxes(6), _boxes(6)
    check_op(ours.encode, ref.encode, [a, b], rtol=1e-5)
    check_op(ours.decode, ref.decode, [rng.standard_normal((6, 4)).astype(np.float32), b], rtol=1e-5)


@pytest.mark.parametrize("low_quality", [False, True])
def test_matcher(low_quality):
    gt, preds = _boxes(6), _boxes(300)
    preds[:4] = gt[:4] + 1                                          # clear matches
    preds[10] = preds[11]                                           # duplicate preds: ties in the best quality
    iou = ops.box_iou(engine.from_numpy(gt), engine.from_numpy(preds)).numpy()
    for high, low in ((0.7, 0.3), (0.5, 0.5), (0.4, 0.1)):
        ours = det_utils.Matcher(high, low, low_quality)(engine.from_numpy(iou)).numpy()
        ref = tv_utils.Matcher(high, low, low_quality)(torch.from_numpy(iou)).numpy()
        assert ours.dtype == np.int64
        np.testing.assert_array_equal(ours, ref)


def test_ssd_matcher_and_errors():
    gt, preds = _boxes(5), _boxes(120)
    iou = ops.box_iou(engine.from_numpy(gt), engine.from_numpy(preds)).numpy()
    np.testing.assert_array_equal(det_utils.SSDMatcher(0.5)(engine.from_numpy(iou)).numpy(),
                                  tv_utils.SSDMatcher(0.5)(torch.from_numpy(iou)).numpy())
    with pytest.raises(ValueError, match="No ground-truth boxes available"):
        det_utils.Matcher(0.7, 0.3)(engine.zeros(0, 5))
    with pytest.raises(ValueError, match="No proposal boxes available"):
        det_utils.Matcher(0.7, 0.3)(engine.zeros(3, 0))
    with pytest.raises(AssertionError, match="low_threshold should be <= high_threshold"):
        det_utils.Matcher(0.3, 0.7)


def test_balanced_sampler():
    labels = [engine.from_numpy(rng.integers(-1, 3, 500)), engine.from_numpy(np.array([0, 0, 1, -1, 0]))]
    sampler = det_utils.BalancedPositiveNegativeSampler(64, 0.25)
    engine.manual_seed(3)
    pos, neg = sampler(labels)
    engine.manual_seed(3)
    pos2, neg2 = sampler(labels)
    for p, n, p2, n2, lab in zip(pos, neg, pos2, neg2, labels):
        p, n, lab = p.numpy(), n.numpy(), lab.numpy()
        assert p.dtype == np.uint8 and n.dtype == np.uint8
        np.testing.assert_array_equal(p, p2.numpy())
        np.testing.assert_array_equal(n, n2.numpy())
        assert np.all(lab[p == 1] >= 1) and np.all(lab[n == 1] == 0)
        assert p.sum() == min(16, (lab >= 1).sum())
        assert n.sum() == min(64 - p.sum(), (lab == 0).sum())
    assert not np.array_equal(sampler(labels)[0][0].numpy(), pos[0].numpy())
