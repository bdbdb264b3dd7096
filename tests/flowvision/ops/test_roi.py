"""roi_align, roi_pool and MultiScaleRoIAlign against torchvision: values and input gradients."""
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close, check_op

import engine
from flowvision import ops

rng = np.random.default_rng(0)


def _rois(k, images, lo=-30.0, hi=130.0, size=90.0, dtype=np.float32):
    """k random (image, x1, y1, x2, y2) rows; some boxes poke out of or lie beyond the map."""
    xy = rng.uniform(lo, hi, (k, 2))
    wh = rng.uniform(0.0, size, (k, 2))
    return np.concatenate([rng.integers(0, images, (k, 1)), xy, xy + wh], 1).astype(dtype)


def _edge_rois(dtype=np.float32):
    """Tiny, zero-size, inverted, huge, fully-outside and partly-outside boxes on both images."""
    return np.array([[0, 10, 10, 10.2, 10.3], [1, 5, 5, 5, 5], [0, 40, 30, 20, 10], [1, -400, -300, 900, 700],
                     [0, 200, 200, 260, 240], [1, -50, -60, -10, -20], [0, -10, 20, 30, 140],
                     [1, 60, -5, 150, 30]], dtype)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("scale", [0.25, 0.5])
def test_roi_align(aligned, sampling_ratio, scale):
    x = rng.standard_normal((2, 3, 21, 26)).astype(np.float32)
    rois = np.concatenate([_rois(40, 2), _edge_rois()])
    check_op(lambda a, r: ops.roi_align(a, r, (7, 5), scale, sampling_ratio, aligned),
             lambda a, r: torchvision.ops.roi_align(a, r, (7, 5), scale, sampling_ratio, aligned),
             [x, rois], rtol=2e-6, grad_rtol=2e-6)


@pytest.mark.parametrize("aligned", [False, True])
def test_roi_align_float64_list_boxes(aligned):
    x = rng.standard_normal((2, 4, 11, 9)) + np.linspace(0, 1, 9)
    boxes = [_rois(6, 1, hi=40, size=30, dtype=np.float64)[:, 1:], _edge_rois(np.float64)[:, 1:] * 0.2]
    et = engine.from_numpy(x).requires_grad_()
    tt = torch.from_numpy(x).requires_grad_()
    ours = ops.roi_align(et, [engine.from_numpy(b) for b in boxes], 3, 0.5, -1, aligned)
    ref = torchvision.ops.roi_align(tt, [torch.from_numpy(b) for b in boxes], 3, 0.5, -1, aligned)
    assert ours.dtype == engine.float64
    assert_close(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    g = rng.standard_normal(ref.shape)
    ours.backward(engine.from_numpy(g))
    ref.backward(torch.from_numpy(g))
    assert_close(et.grad.numpy(), tt.grad.numpy(), rtol=1e-12)


def test_roi_align_module_empty_and_errors():
    x = engine.randn(1, 2, 5, 5, requires_grad=True)
    layer = ops.RoIAlign((2, 2), spatial_scale=0.5, sampling_ratio=2)
    assert repr(layer) == repr(torchvision.ops.RoIAlign((2, 2), spatial_scale=0.5, sampling_ratio=2))
    out = layer(x, engine.zeros(0, 5))
    assert out.shape == (0, 2, 2, 2)
    out.sum().backward()
    assert float(x.grad.abs().sum()) == 0.0
    with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
        ops.roi_align(x, engine.zeros(3, 4), 2)
    with pytest.raises(AssertionError, match=r"List\[Tensor\[L, 4\]\]"):
        ops.roi_align(x, [engine.zeros(3, 5)], 2)
    with pytest.raises(RuntimeError, match="same type as rois"):
        ops.roi_align(x, engine.zeros(1, 5, dtype=engine.float64), 2)


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_roi_pool(scale):
    x = rng.standard_normal((2, 3, 17, 23)).astype(np.float32)
    rois = np.concatenate([_rois(30, 2), _edge_rois()])
    check_op(lambda a, r: ops.roi_pool(a, r, (4, 3), scale),
             lambda a, r: torchvision.ops.roi_pool(a, r, (4, 3), scale), [x, rois], rtol=0, grad_rtol=1e-6)


def test_roi_pool_ties_float64_module():
    x = np.round(rng.standard_normal((1, 2, 9, 9)))                  # many tied maxima
    boxes = [_rois(12, 1, lo=-5, hi=20, size=15, dtype=np.float64)[:, 1:]]
    layer = ops.RoIPool(3, 1.0)
    assert repr(layer) == repr(torchvision.ops.RoIPool(3, 1.0))
    check_op(lambda a, b: layer(a, [b]), lambda a, b: torchvision.ops.RoIPool(3, 1.0)(a, [b]), [x, boxes[0]], rtol=0, grad_rtol=1e-12)


def _pyramid(channels=3, batch=2):
    """Four FPN levels (strides 4..32) for an 800x608 padded batch."""
    sizes = [(200, 152), (100, 76), (50, 38), (25, 19)]
    return OrderedDict((str(i), rng.standard_normal((batch, channels) + s).astype(np.float32))
                       for i, s in enumerate(sizes))


def test_multiscale_roi_align():
    feats = _pyramid()
    feats["extra"] = rng.standard_normal((2, 3, 7, 5)).astype(np.float32)      # filtered out by name
    image_shapes = [(800, 600), (750, 608)]
    sizes = np.exp(rng.uniform(np.log(8), np.log(700), (2, 60, 2)))
    xy = rng.uniform(0, 600, (2, 60, 2))
    boxes = [np.concatenate([xy[i], xy[i] + sizes[i]], 1).astype(np.float32) for i in range(2)]
    names = ["0", "1", "2", "3"]
    ours_pool = ops.MultiScaleRoIAlign(names, 7, 2)
    ref_pool = torchvision.ops.MultiScaleRoIAlign(names, 7, 2)
    assert repr(ours_pool) == repr(ref_pool)
    e_feats = OrderedDict((k, engine.from_numpy(v).requires_grad_()) for k, v in feats.items())
    t_feats = OrderedDict((k, torch.from_numpy(v).requires_grad_()) for k, v in feats.items())
    ours = ours_pool(e_feats, [engine.from_numpy(b) for b in boxes], image_shapes)
    ref = ref_pool(t_feats, [torch.from_numpy(b) for b in boxes], image_shapes)
    assert ours_pool.scales == ref_pool.scales
    levels = ours_pool.map_levels([engine.from_numpy(b) for b in boxes]).numpy()
    np.testing.assert_array_equal(levels, ref_pool.map_levels([torch.from_numpy(b) for b in boxes]).numpy())
    assert len(set(levels.tolist())) == 4
    assert_close(ours.detach().numpy(), ref.detach().numpy(), rtol=2e-6)
    g = rng.standard_normal(ref.shape).astype(np.float32)
    ours.backward(engine.from_numpy(g))
    ref.backward(torch.from_numpy(g))
    for k in names:
        assert_close(e_feats[k].grad.numpy(), t_feats[k].grad.numpy(), rtol=2e-6, what=f"grad of level {k}")


def test_multiscale_single_level():
    feats = OrderedDict(feat=rng.standard_normal((1, 2, 20, 20)).astype(np.float32))
    boxes = [_rois(5, 1, lo=0, hi=60, size=40)[:, 1:]]
    ours = ops.MultiScaleRoIAlign(["feat"], (3, 4), 0)(
        {k: engine.from_numpy(v) for k, v in feats.items()}, [engine.from_numpy(b) for b in boxes], [(80, 80)])
    ref = torchvision.ops.MultiScaleRoIAlign(["feat"], (3, 4), 0)(
        {k: torch.from_numpy(v) for k, v in feats.items()}, [torch.from_numpy(b) for b in boxes], [(80, 80)])
    assert_close(ours.numpy(), ref.numpy(), rtol=2e-6)
