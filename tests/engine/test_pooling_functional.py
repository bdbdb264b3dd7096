"""Pooling and interpolation through nn.functional against PyTorch (1-D, 2-D, unbatched, indices)."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(5)
TF = torch.nn.functional


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                                    dict(kernel_size=(3, 2), stride=(2, 1), dilation=2, ceil_mode=True)])
def test_max_pool2d_with_indices(kwargs):
    check_op(lambda x: F.max_pool2d(x, return_indices=True, **kwargs),
             lambda x: TF.max_pool2d(x, return_indices=True, **kwargs), [rand(2, 3, 11, 9)])
    check_op(lambda x: F.max_pool2d(x, **kwargs), lambda x: TF.max_pool2d(x, **kwargs), [rand(3, 10, 7)])


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, ceil_mode=True),
                                    dict(kernel_size=(3, 2), stride=(2, 1), dilation=2, ceil_mode=True)])
def test_max_pool2d_inference_values(kwargs):
    """Without gradient or indices only the values are computed: equal to torch's, NaN and all -inf windows too."""
    x = rand(2, 3, 11, 9)
    x[0, 0, 4, 4] = np.nan
    x[1, 2, :3, :3] = -np.inf
    with engine.no_grad():
        ours = F.max_pool2d(engine.from_numpy(x), **kwargs).numpy()
    np.testing.assert_array_equal(ours, TF.max_pool2d(torch.from_numpy(x), **kwargs).numpy())
    with engine.no_grad():
        unbatched = F.max_pool1d(engine.from_numpy(x[0, 0]), 3, 2, 1).numpy()
    np.testing.assert_array_equal(unbatched, TF.max_pool1d(torch.from_numpy(x[0, 0]), 3, 2, 1).numpy())


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                    dict(kernel_size=2, divisor_override=3)])
def test_avg_pool2d(kwargs):
    check_op(lambda x: F.avg_pool2d(x, **kwargs), lambda x: TF.avg_pool2d(x, **kwargs), [rand(2, 3, 9, 10)])


@pytest.mark.parametrize("size", [1, 3, (2, 4), (None, 3)])
def test_adaptive_pools(size):
    check_op(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), [rand(2, 3, 7, 9)])
    check_op(lambda x: F.adaptive_max_pool2d(x, size, return_indices=True),
             lambda x: TF.adaptive_max_pool2d(x, size, return_indices=True), [rand(2, 3, 7, 9)])


def test_pool1d():
    x = rand(2, 3, 13)
    check_op(lambda a: F.max_pool1d(a, 3, 2, 1), lambda a: TF.max_pool1d(a, 3, 2, 1), [x])
    check_op(lambda a: F.max_pool1d(a, 2, return_indices=True), lambda a: TF.max_pool1d(a, 2, return_indices=True), [x])
    check_op(lambda a: F.avg_pool1d(a, 3, 2, 1), lambda a: TF.avg_pool1d(a, 3, 2, 1), [x])
    check_op(lambda a: F.adaptive_avg_pool1d(a, 4), lambda a: TF.adaptive_avg_pool1d(a, 4), [x])
    check_op(lambda a: F.adaptive_max_pool1d(a, 5), lambda a: TF.adaptive_max_pool1d(a, 5), [x])


@pytest.mark.parametrize("kwargs", [dict(size=(13, 17), mode="bilinear"), dict(scale_factor=2, mode="nearest"),
                                    dict(size=(5, 4), mode="bilinear", align_corners=True),
                                    dict(scale_factor=1.7, mode="bilinear"), dict(size=(6, 20), mode="nearest")])
def test_interpolate(kwargs):
    check_op(lambda x: F.interpolate(x, **kwargs), lambda x: TF.interpolate(x, **kwargs), [rand(2, 3, 7, 9)])


@pytest.mark.parametrize("size, mode", [((9, 600), "bilinear"), ((9, 600), "bicubic"), ((40, 11), "bilinear")])
def test_interpolate_wide_and_tall_and_nonfinite(size, mode):
    """Long output rows (the last axis by GEMM or by gather) match torch; inf/NaN stay where torch puts them."""
    x = rand(2, 3, 7, 9)
    check_op(lambda a: F.interpolate(a, size=size, mode=mode), lambda a: TF.interpolate(a, size=size, mode=mode), [x])
    x[0, 0, 3, 4], x[1, 2, 1, 1] = np.inf, np.nan
    with engine.no_grad():
        ours = F.interpolate(engine.from_numpy(x), size=size, mode=mode).numpy()
    ref = TF.interpolate(torch.from_numpy(x), size=size, mode=mode).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(ours[finite], ref[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_many_rows(mode):
    """Inputs with more rows than the row GEMM takes (the gathered stencil) match torch too."""
    from engine.backends.cpu.interpolate import _GEMM_MAX_HEIGHT
    x = rand(2, 2, _GEMM_MAX_HEIGHT + 11, 5)
    size = (2 * x.shape[2] - 3, 8)
    check_op(lambda a: F.interpolate(a, size=size, mode=mode), lambda a: TF.interpolate(a, size=size, mode=mode), [x])


def test_interpolate_1d_and_pixel_shuffle():
    check_op(lambda x: F.interpolate(x, size=11, mode="linear"), lambda x: TF.interpolate(x, size=11, mode="linear"),
             [rand(2, 3, 7)])
    check_op(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2), [rand(2, 8, 3, 5)])
    check_op(lambda x: F.pixel_unshuffle(x, 2), lambda x: TF.pixel_unshuffle(x, 2), [rand(2, 2, 6, 4)])


def test_errors():
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool2d(engine.zeros(1, 1, 5, 5), 2, padding=2)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(engine.zeros(1, 1, 4, 4), size=3, scale_factor=2)


AA_CASES = [dict(size=(4, 6)), dict(size=(17, 5), align_corners=True), dict(scale_factor=0.45),
            dict(scale_factor=(2.3, 0.6), align_corners=True), dict(size=(3, 2)), dict(size=(1, 1), align_corners=True),
            dict(scale_factor=1.5)]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interpolate_antialias(mode, dtype):
    """antialias=True against torch, values and input gradients: downscales (the widened filter), upscales,
    size and scale_factor, both align_corners, odd sizes, a batch of 2."""
    x = rand(2, 3, 11, 13).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for kwargs in AA_CASES:
        check_op(lambda a: F.interpolate(a, mode=mode, antialias=True, **kwargs),
                 lambda a: TF.interpolate(a, mode=mode, antialias=True, **kwargs), [x], rtol=rtol)


def test_interpolate_antialias_upscale_and_nonfinite():
    """Upscaling with antialias is plain bilinear for bilinear (bicubic keeps the a = -0.5 filter, as torch);
    an inf or NaN input stays where torch's antialiased kernel puts it."""
    x = rand(1, 2, 5, 7)
    with engine.no_grad():
        aa = F.interpolate(engine.from_numpy(x), size=(9, 12), mode="bilinear", antialias=True).numpy()
        plain = F.interpolate(engine.from_numpy(x), size=(9, 12), mode="bilinear").numpy()
    np.testing.assert_allclose(aa, plain, rtol=1e-6, atol=1e-6)
    x = rand(1, 2, 23, 19)
    x[0, 0, 3, 4], x[0, 1, 20, 2] = np.inf, np.nan
    for mode in ("bilinear", "bicubic"):
        with engine.no_grad():
            ours = F.interpolate(engine.from_numpy(x), size=(7, 19), mode=mode, antialias=True).numpy()
        ref = TF.interpolate(torch.from_numpy(x), size=(7, 19), mode=mode, antialias=True).numpy()
        np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
        np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
        finite = np.isfinite(ref)
        np.testing.assert_allclose(ours[finite], ref[finite], rtol=1e-5, atol=1e-5)


def test_interpolate_antialias_cuda(cuda):
    """The CUDA kernels run the antialiasing taps too (on the GPU or its CPU emulation)."""
    for mode, kwargs in [("bicubic", dict(size=(4, 9))), ("bilinear", dict(scale_factor=0.4, align_corners=True))]:
        check_op(lambda a: F.interpolate(a, mode=mode, antialias=True, **kwargs),
                 lambda a: TF.interpolate(a, mode=mode, antialias=True, **kwargs), [rand(2, 3, 11, 13)], device="cuda")


@pytest.mark.parametrize("mode, shape", [("nearest", (1, 1, 4, 4)), ("area", (1, 1, 4, 4)), ("linear", (1, 1, 4)),
                                         ("bilinear", (1, 1, 4, 4, 4)), ("bicubic", (1, 1, 4))])
def test_interpolate_antialias_errors(mode, shape):
    """Like torch: antialias only with bilinear or bicubic on 4-D input, a ValueError otherwise."""
    message = "Anti-alias option is restricted to bilinear"
    with pytest.raises(ValueError, match=message):
        TF.interpolate(torch.zeros(shape), size=2, mode=mode, antialias=True)
    with pytest.raises(ValueError, match=message + " and bicubic modes and requires a 4-D tensor as input"):
        F.interpolate(engine.zeros(shape), size=2, mode=mode, antialias=True)


def test_interpolate_antialias_onnx_export():
    """ONNX (opset 18 on) exports antialiasing as Resize(antialias=1, exclude_outside=1, half_pixel), which ONNX
    Runtime computes as our eager op does; earlier opsets and align_corners=True are refused in one line."""
    from onnx_check import check_export, images

    from engine import nn

    class Resize(nn.Module):
        def __init__(self, **kwargs):
            super().__init__()
            self.kwargs = kwargs

        def forward(self, x):
            return F.interpolate(x, antialias=True, **self.kwargs)

    inputs = lambda batch: (images(0, batch, 3, 13, 17),)  # noqa: E731
    check_export(Resize(size=(5, 8), mode="bicubic"), inputs, opset_version=18)
    check_export(Resize(scale_factor=(0.4, 1.7), mode="bilinear"), inputs, opset_version=18)
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="needs ONNX opset 18"):
        check_export(Resize(size=(5, 8), mode="bilinear"), inputs, opset_version=17)
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="align_corners=True"):
        check_export(Resize(size=(5, 8), mode="bilinear", align_corners=True), inputs, opset_version=18)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "area"])
def test_float16_interpolation_computes_in_float32(mode):
    """torch interpolates float16 in float32 and rounds once; float16 sums were up to 0.023 off on [0, 1] images."""
    x = np.random.default_rng(0).random((2, 3, 17, 23)).astype(np.float16)
    ours = engine.nn.functional.interpolate(engine.tensor(x), size=(31, 12), mode=mode)
    theirs = torch.nn.functional.interpolate(torch.tensor(x), size=(31, 12), mode=mode)
    assert ours.dtype == engine.float16
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), atol=1e-3)
