"""What a sweep of flowvision (models, ops, transforms) on the CUDA backend found wrong there: batched_nms past
1000 boxes (its per-category overlap mask) listed the survivors of tied scores in index order, where the CPU
backend lists them by category, then index, as the order torchvision's CPU result gave for the NaN scores of
test_ops_fuzz. Seeded inputs, on the GPU and on the CPU emulation of CuPy (the ``cuda`` fixture)."""
import numpy as np
import pytest
import torch
import torchvision
from op_check import check_op

import engine
from flowvision import ops

pytestmark = pytest.mark.slow  # runs on the emulated GPU: outside the quick subset (-m "not slow")


def _boxes(rng, n):
    xy = rng.uniform(-10, 50, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0, 30, (n, 2))], 1).astype(np.float32)


def test_batched_nms_nan_scores_per_category_path(cuda):
    """test_ops_fuzz's case: 1500 boxes (over torchvision's 4000-coordinate limit: one NMS per category), three NaN
    scores in three categories, which torchvision's CPU result lists by category."""
    rng = np.random.default_rng(1500)
    boxes, scores = _boxes(rng, 1500), rng.random(1500).astype(np.float32)
    scores[rng.choice(1500, 3, replace=False)] = np.nan
    scores[:4] = 0.5
    idxs = rng.integers(0, 3, 1500)
    check_op(lambda b, s, i: ops.batched_nms(b, s, i, 0.5), lambda b, s, i: torchvision.ops.batched_nms(b, s, i, 0.5),
             [boxes, scores, idxs], grad=False, device="cuda")


@pytest.mark.parametrize("tie", [0.5, np.nan])
def test_batched_nms_ties_as_on_the_cpu(cuda, tie):
    """Disjoint boxes all kept, every score tied, in three categories: the CUDA result is the CPU backend's."""
    n = 1200
    corner = np.arange(n, dtype=np.float32)[:, None] * 10
    boxes = np.concatenate([corner, corner, corner + 1, corner + 1], 1)
    scores = np.full(n, tie, np.float32)
    idxs = np.random.default_rng(0).integers(0, 3, n)
    args = [engine.from_numpy(a) for a in (boxes, scores, idxs)]
    expected = ops.batched_nms(*args, 0.5).numpy()
    got = ops.batched_nms(*[a.cuda() for a in args], 0.5)
    assert got.device.type == "cuda" and got.dtype == engine.int64
    np.testing.assert_array_equal(got.cpu().numpy(), expected)
    assert (np.diff(idxs[expected]) >= 0).all()  # by category, then index
    reference = torchvision.ops.batched_nms(*[torch.from_numpy(a) for a in (boxes, scores, idxs)], 0.5).numpy()
    assert sorted(reference) == sorted(expected)  # the same boxes (torch's unstable sort orders the ties its own way)
