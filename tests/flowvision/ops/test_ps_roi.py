"""ps_roi_align / ps_roi_pool and their modules against torchvision: values and input gradients, on the CPU
and on the CUDA backend (the ``cuda`` fixture: a GPU or the CPU emulation of CuPy)."""
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
    """Tiny, inverted, huge, fully-outside and partly-outside boxes, and boxes reaching the last row and
    column (where torchvision's ps_roi_pool forward and backward clip differently)."""
    return np.array([[0, 10, 10, 10.2, 10.3], [0, 40, 30, 20, 10], [1, -400, -300, 900, 700],
                     [0, 200, 200, 260, 240], [1, -50, -60, -10, -20], [0, -10, 20, 30, 140],
                     [1, 60, -5, 150, 30], [0, 70, 60, 104, 92], [1, 0, 0, 104, 92]], dtype)


def _zero_size_rois(dtype=np.float32):
    """Boxes of zero width and height: ps_roi_align's bins get no samples and divide 0 by 0 (NaN)."""
    return np.array([[1, 5, 5, 5, 5], [0, 30, 22, 30, 22]], dtype)


@pytest.mark.parametrize("sampling_ratio", [-1, 2])
@pytest.mark.parametrize("scale", [0.25, 0.5])
def test_ps_roi_align(sampling_ratio, scale):
    x = rng.standard_normal((2, 12, 23, 26)).astype(np.float32)
    rois = np.concatenate([_rois(40, 2), _edge_rois(), _zero_size_rois()])
    check_op(lambda a, r: ops.ps_roi_align(a, r, (2, 3), scale, sampling_ratio),
             lambda a, r: torchvision.ops.ps_roi_align(a, r, (2, 3), scale, sampling_ratio),
             [x, rois], rtol=2e-6, grad_rtol=2e-6)


@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_ps_roi_pool(scale):
    x = rng.standard_normal((2, 18, 17, 23)).astype(np.float32)
    rois = np.concatenate([_rois(30, 2), _edge_rois(), _zero_size_rois()])
    check_op(lambda a, r: ops.ps_roi_pool(a, r, (3, 2), scale),
             lambda a, r: torchvision.ops.ps_roi_pool(a, r, (3, 2), scale), [x, rois], rtol=2e-6, grad_rtol=2e-6)


@pytest.mark.parametrize("name", ["ps_roi_align", "ps_roi_pool"])
def test_float64_list_boxes_and_square_output(name):
    x = rng.standard_normal((2, 18, 11, 9)) + np.linspace(0, 1, 9)
    boxes = [_rois(6, 1, hi=40, size=30, dtype=np.float64)[:, 1:], _edge_rois(np.float64)[:, 1:] * 0.2]
    et = engine.from_numpy(x).requires_grad_()
    tt = torch.from_numpy(x).requires_grad_()
    ours = getattr(ops, name)(et, [engine.from_numpy(b) for b in boxes], 3, 0.5)
    ref = getattr(torchvision.ops, name)(tt, [torch.from_numpy(b) for b in boxes], 3, 0.5)
    assert ours.dtype == engine.float64 and tuple(ours.shape) == tuple(ref.shape) == (15, 2, 3, 3)
    assert_close(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    g = rng.standard_normal(ref.shape)
    ours.backward(engine.from_numpy(g))
    ref.backward(torch.from_numpy(g))
    assert_close(et.grad.numpy(), tt.grad.numpy(), rtol=1e-12)


def test_modules_empty_boxes_and_errors():
    x = engine.randn(1, 8, 5, 5, requires_grad=True)
    layers = [(ops.PSRoIAlign((2, 2), spatial_scale=0.5, sampling_ratio=2),
               torchvision.ops.PSRoIAlign((2, 2), spatial_scale=0.5, sampling_ratio=2)),
              (ops.PSRoIPool(2, spatial_scale=0.5), torchvision.ops.PSRoIPool(2, spatial_scale=0.5))]
    for ours, theirs in layers:
        assert repr(ours) == repr(theirs)
        out = ours(x, engine.zeros(0, 5))
        assert out.shape == (0, 2, 2, 2)
        out.sum().backward()
        assert float(x.grad.abs().sum()) == 0.0
    for fn in (ops.ps_roi_align, ops.ps_roi_pool):
        with pytest.raises(RuntimeError, match=r"multiple of pooling height \* pooling width, got 8 channels for "
                                               r"output_size \(3, 3\)"):
            fn(x, engine.zeros(1, 5), 3)
        with pytest.raises(AssertionError, match=r"Tensor\[K, 5\]"):
            fn(x, engine.zeros(3, 4), 2)
        with pytest.raises(RuntimeError, match="same type as rois"):
            fn(x, engine.zeros(1, 5, dtype=engine.float64), 2)


@pytest.mark.parametrize("name", ["ps_roi_align", "ps_roi_pool"])
def test_on_cuda(cuda, name):
    x = rng.standard_normal((2, 12, 17, 19)).astype(np.float32)
    rois = np.concatenate([_rois(12, 2, hi=80, size=50), _edge_rois() * 0.3, _zero_size_rois()])
    check_op(lambda a, r: getattr(ops, name)(a, r.detach(), (2, 3), 0.5),
             lambda a, r: getattr(torchvision.ops, name)(a, r.detach(), (2, 3), 0.5),
             [x, rois], rtol=2e-6, grad_rtol=2e-6, device="cuda")
