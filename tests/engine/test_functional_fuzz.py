"""Cases a differential fuzz of nn.functional against torch found wrong, kept as a seeded, cheap sample.

Each test failed before its fix: 5-D interpolation (nearest, nearest-exact, trilinear, area) raised, and 1-D
'nearest' with a kept scale factor took the 2-D kernel's copy/halving shortcuts that torch's 1-D kernel does not;
empty resampled outputs, transposed convolutions too small for their input, a group of one value, a lone running
statistic, zero dilations, negative paddings and a zero divisor were accepted silently; zero strides and kernels
and adaptive pooling to an empty axis divided by zero; threshold replaced NaN; pixel_shuffle refused extra leading
dims; affine_grid refused 3-D maps; and many messages differed from torch's.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow  # ~3 s in all, a second of it the first call's warm-up

_RNG = np.random.default_rng(2024)


def _rand(*shape, dtype=np.float64):
    return _RNG.standard_normal(shape).astype(dtype)


def _both(fn):
    """``fn(lib)`` as the (ours, torch's) pair of callables check_op takes."""
    return (lambda *a: fn(F, engine, *a)), (lambda *a: fn(TF, torch, *a))


# ---- 5-D interpolate: two separable passes of the 4-D kernels, area as adaptive_avg_pool3d -----------------
@pytest.mark.parametrize("mode,kwargs,shape", [
    ("nearest", dict(size=(4, 3, 5)), (2, 2, 3, 4, 2)),
    ("nearest", dict(scale_factor=(0.7, 2.0, 1.5)), (1, 3, 5, 3, 4)),
    ("nearest-exact", dict(scale_factor=1.7, recompute_scale_factor=True), (2, 1, 3, 2, 4)),
    ("nearest-exact", dict(size=2), (1, 2, 5, 3, 3)),
    ("trilinear", dict(size=(5, 2, 7), align_corners=True), (2, 2, 3, 4, 3)),
    ("trilinear", dict(scale_factor=(1.5, 0.6, 2.5), align_corners=False), (1, 2, 4, 5, 2)),
    ("trilinear", dict(scale_factor=1.3, recompute_scale_factor=True), (2, 1, 3, 3, 2)),
    ("area", dict(size=(2, 3, 1)), (2, 2, 5, 4, 3)),
    ("area", dict(scale_factor=0.6), (1, 2, 5, 4, 7)),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_interpolate_5d_matches_torch(mode, kwargs, shape, dtype):
    ours, theirs = _both(lambda lib, _, x: lib.interpolate(x, mode=mode, **kwargs))
    check_op(ours, theirs, [_rand(*shape, dtype=dtype)], rtol=1e-5 if dtype == np.float32 else 1e-10)


@pytest.mark.parametrize("mode", ["trilinear", "nearest"])
def test_interpolate_5d_on_cuda(cuda, mode):
    x = _rand(2, 2, 3, 4, 2, dtype=np.float32)
    ours, theirs = _both(lambda lib, _, x: lib.interpolate(x, scale_factor=(1.5, 0.6, 2.5), mode=mode))
    check_op(ours, theirs, [x], device="cuda")


@pytest.mark.parametrize("shape,scale", [((1, 2, 3), 1.3), ((2, 1, 3), 2.1), ((1, 1, 3, 4), (1.3, 2.2)),
                                         ((1, 1, 3, 2, 4), (1.0, 2.3, 1.2))])
def test_nearest_with_a_scale_factor_near_one_or_two(shape, scale):
    """torch's 1-D and 3-D forwards compute every source index from 1 / scale_factor, its 2-D forward copies an
    axis that keeps its size and halves one that doubles (its backward always does: only values compared)."""
    ours, theirs = _both(lambda lib, _, x: lib.interpolate(x, scale_factor=scale, mode="nearest"))
    check_op(ours, theirs, [_rand(*shape)], grad=False)


@pytest.mark.parametrize("shape,kwargs", [
    ((1, 2, 2), dict(scale_factor=0.35, mode="linear")),
    ((2, 2, 2, 5), dict(scale_factor=(0.35, 2.0), mode="bilinear")),
    ((2, 2, 2, 6), dict(scale_factor=0.35, mode="bilinear", antialias=True)),
    ((1, 1, 3, 5, 2), dict(scale_factor=(0.7, 1.3, 0.35), mode="nearest")),
    ((1, 1, 3, 5, 2), dict(size=(2, 0, 3), mode="trilinear")),
])
def test_interpolate_to_an_empty_axis_is_refused(shape, kwargs):
    x = np.zeros(shape)
    assert_same_error(lambda: F.interpolate(engine.from_numpy(x), **kwargs),
                      lambda: TF.interpolate(torch.from_numpy(x), **kwargs))


@pytest.mark.parametrize("shape,kwargs", [
    ((1, 1, 3), dict(scale_factor=2, mode="bilinear")),
    ((1, 1, 3, 3), dict(scale_factor=2, mode="trilinear")),
    ((1, 1, 3, 3, 3), dict(scale_factor=2, mode="linear")),
    ((1, 1, 3, 3, 3), dict(scale_factor=2, mode="bicubic")),
    ((1, 1, 3, 3), dict(scale_factor=2, mode="cubic")),
    ((1, 3), dict(scale_factor=2)),
    ((1, 1, 3, 3), dict(scale_factor=2, align_corners=False)),
    ((1, 1, 3, 3, 3), dict(scale_factor=2, mode="area", align_corners=True)),
    ((1, 1, 3, 3), dict(size=(2.0, 3))),
    ((1, 1, 3, 3), dict(scale_factor=(2, 2, 2))),
    ((1, 1, 3, 3), dict(size=(2, 3), recompute_scale_factor=True)),
])
def test_interpolate_argument_errors(shape, kwargs):
    x = np.zeros(shape)
    assert_same_error(lambda: F.interpolate(engine.from_numpy(x), **kwargs),
                      lambda: TF.interpolate(torch.from_numpy(x), **kwargs))


# ---- adaptive pooling to an empty axis: torch's empty output -------------------------------------------------
@pytest.mark.parametrize("name,shape,size", [
    ("adaptive_avg_pool1d", (2, 4), 0),
    ("adaptive_max_pool1d", (1, 2, 4), 0),
    ("adaptive_avg_pool2d", (1, 2, 4, 5), (0, None)),
    ("adaptive_max_pool2d", (1, 2, 4, 5), (2, 0)),
    ("adaptive_avg_pool3d", (1, 2, 3, 4, 5), (2, 0, 2)),
    ("adaptive_max_pool3d", (2, 3, 4, 5), (0, 2, 2)),
])
def test_adaptive_pooling_to_an_empty_axis(name, shape, size):
    x = _rand(*shape)
    ours = getattr(F, name)(engine.from_numpy(x).requires_grad_(), size)
    theirs = getattr(TF, name)(torch.from_numpy(x), size)
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.requires_grad
    if "max" in name:
        values, indices = getattr(F, name)(engine.from_numpy(x), size, return_indices=True)
        assert tuple(indices.shape) == tuple(theirs.shape) and indices.dtype is engine.int64


# ---- convolution and pooling geometry errors ------------------------------------------------------------------
@pytest.mark.parametrize("nd,padding,groups", [(1, 2, 1), (2, (2, 0), 1), (3, 3, 1), (1, 3, 2), (2, 2, 2)])
def test_conv_transpose_output_too_small(nd, padding, groups):
    x, w = np.zeros((1, 2) + (4,) * nd), np.zeros((2, 1) + (1,) * nd)
    name = f"conv_transpose{nd}d"
    assert_same_error(lambda: getattr(F, name)(engine.from_numpy(x), engine.from_numpy(w), padding=padding,
                                               groups=groups),
                      lambda: getattr(TF, name)(torch.from_numpy(x), torch.from_numpy(w), padding=padding,
                                                groups=groups))


@pytest.mark.parametrize("name,shape,kwargs", [
    ("max_pool2d", (1, 2, 6, 7), dict(kernel_size=1, padding=(0, 1), dilation=(1, 2))),
    ("avg_pool2d", (1, 2, 6, 7), dict(kernel_size=(3, 1), padding=(1, 1))),
    ("max_pool3d", (2, 3, 4, 5), dict(kernel_size=3, padding=(0, 0, 1), dilation=(2, 2, 1))),
])
def test_pooling_geometry_errors(name, shape, kwargs):
    x = np.zeros(shape)
    assert_same_error(lambda: getattr(F, name)(engine.from_numpy(x), **kwargs),
                      lambda: getattr(TF, name)(torch.from_numpy(x), **kwargs))


# ---- normalization and loss argument checks -------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda lib, t: lib.group_norm(t.zeros(1, 3), 3),
    lambda lib, t: lib.group_norm(t.zeros(1, 6, 1), 6),
    lambda lib, t: lib.instance_norm(t.zeros(2, 3, 4), t.zeros(3), None),
    lambda lib, t: lib.instance_norm(t.zeros(2, 3, 4), None, t.ones(3)),
    lambda lib, t: lib.gaussian_nll_loss(t.zeros(2, 3, 2, 1), t.zeros(2, 3, 2, 1), t.ones(2, 1, 1, 1)),
])
def test_normalization_and_loss_argument_errors(call):
    assert_same_error(lambda: call(F, engine), lambda: call(TF, torch))


# ---- rearranging and sampling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name,factor,shape", [
    ("pixel_shuffle", 2, (2, 1, 8, 2, 3)),
    ("pixel_shuffle", 3, (18, 2, 1)),
    ("pixel_unshuffle", 2, (1, 2, 2, 4, 6)),
    ("pixel_unshuffle", 3, (2, 3, 6)),
])
def test_pixel_shuffle_any_leading_dims(name, factor, shape):
    ours, theirs = _both(lambda lib, _, x: getattr(lib, name)(x, factor))
    check_op(ours, theirs, [_rand(*shape)])


@pytest.mark.parametrize("call", [
    lambda lib, t: lib.pixel_shuffle(t.zeros(3, 3), 1),
    lambda lib, t: lib.pixel_shuffle(t.zeros(1, 4, 3, 3), 0),
    lambda lib, t: lib.pixel_unshuffle(t.zeros(1, 4, 3, 3), -1),
    lambda lib, t: lib.pixel_unshuffle(t.zeros(3, 5, 4), 2),
    lambda lib, t: lib.pixel_unshuffle(t.zeros(3, 4, 5), 2),
    lambda lib, t: lib.channel_shuffle(t.zeros(2, 6), 3),
])
def test_rearrange_errors(call):
    assert_same_error(lambda: call(F, engine), lambda: call(TF, torch))


@pytest.mark.parametrize("size,align_corners", [((2, 1, 3, 4, 2), False), ((1, 2, 2, 1, 3), True),
                                                ((3, 1, 1, 1, 1), False)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_affine_grid_3d(size, align_corners, dtype):
    ours, theirs = _both(lambda lib, _, theta: lib.affine_grid(theta, size, align_corners=align_corners))
    with pytest.warns(UserWarning) if align_corners else _no_warning():
        check_op(ours, theirs, [_rand(size[0], 3, 4, dtype=dtype)])


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_affine_grid_shape_errors():
    assert_same_error(lambda: F.affine_grid(engine.zeros(2, 3, 4), (2, 1, 3), align_corners=False),
                      lambda: TF.affine_grid(torch.zeros(2, 3, 4), (2, 1, 3), align_corners=False))
    with pytest.raises(ValueError, match=r"^Expected a batch of 3D affine matrices of shape Nx3x4 for size"):
        F.affine_grid(engine.zeros(2, 2, 3), (2, 1, 3, 3, 3), align_corners=False)


# ---- activations ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("threshold", [0.0, float("nan")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threshold_keeps_nan(threshold, dtype):
    """torch replaces x <= threshold: a NaN input, or any input against a NaN threshold, is kept."""
    x = np.array([-2.0, -0.5, 0.0, 0.5, np.nan, 3.0], dtype)
    ours, theirs = _both(lambda lib, _, x: lib.threshold(x, threshold, -7.0))
    check_op(ours, theirs, [x])


@pytest.mark.parametrize("call", [
    lambda lib, t: lib.celu(t.zeros(3), 0.0),
    lambda lib, t: lib.celu_(t.zeros(3), 0.0),
    lambda lib, t: lib.hardtanh(t.zeros(3), 1.0, -1.0),
    lambda lib, t: lib.softshrink(t.zeros(3), -0.5),
    lambda lib, t: lib.softshrink(t.zeros(3, dtype=t.float64), -0.25),
    lambda lib, t: lib.softshrink(t.zeros(3, dtype=t.bfloat16), -1.0),
    lambda lib, t: lib.multi_margin_loss(t.zeros(3, 4), t.tensor([0, 1, 5])),
])
def test_activation_and_margin_errors(call):
    assert_same_error(lambda: call(F, engine), lambda: call(TF, torch))


# ---- argument checks: torch's errors where a bad window or size used to divide by zero or pass silently -------
def _x(t, *shape):
    return t.zeros(*shape, dtype=t.float64)


@pytest.mark.parametrize("call", [
    lambda F, t: F.conv2d(_x(t, 1, 4, 5, 5), _x(t, 4, 2, 3, 3), padding=-1),
    lambda F, t: F.conv2d(_x(t, 1, 4, 5, 5), _x(t, 4, 2, 3, 3), stride=(1, 0)),
    lambda F, t: F.conv1d(_x(t, 1, 4, 5), _x(t, 4, 2, 3), groups=0),
    lambda F, t: F.conv2d(_x(t, 1, 4, 5, 5), _x(t, 3, 2, 3, 3), groups=2),
    lambda F, t: F.conv2d(_x(t, 1, 4, 5, 5), _x(t, 4, 4, 3, 3), padding="full"),
    lambda F, t: F.conv_transpose2d(_x(t, 1, 4, 5, 5), _x(t, 4, 2, 3, 3), stride=0),
    lambda F, t: F.conv_transpose1d(_x(t, 1, 4, 5), _x(t, 4, 2, 3), output_padding=-1),
    lambda F, t: F.conv_transpose2d(_x(t, 1, 3, 5, 5), _x(t, 3, 2, 3, 3), groups=2),
    lambda F, t: F.max_pool2d(_x(t, 1, 2, 5, 5), 2, stride=0),
    lambda F, t: F.max_pool2d(_x(t, 1, 2, 5, 5), 0),
    lambda F, t: F.max_pool2d(_x(t, 1, 2, 5, 5), -1),
    lambda F, t: F.max_pool2d(_x(t, 1, 2, 5, 5), 2, dilation=(1, 0)),
    lambda F, t: F.max_pool2d(_x(t, 1, 2, 5, 5), 2, padding=(0, -1)),
    lambda F, t: F.max_pool2d(_x(t, 5, 5), 2),
    lambda F, t: F.max_pool1d(_x(t, 1, 2, 5), 0),
    lambda F, t: F.max_pool1d(_x(t, 1, 2, 5), 2, stride=-1),
    lambda F, t: F.max_pool1d(_x(t, 1, 2, 5), 2, padding=-1),
    lambda F, t: F.max_pool1d(_x(t, 1, 2, 5), 2, dilation=0),
    lambda F, t: F.max_pool1d(_x(t, 5), 2),
    lambda F, t: F.avg_pool1d(_x(t, 1, 2, 5), 2, stride=0),
    lambda F, t: F.avg_pool1d(_x(t, 5), 2),
    lambda F, t: F.avg_pool2d(_x(t, 1, 2, 5, 5), 2, padding=-1),
    lambda F, t: F.avg_pool2d(_x(t, 1, 2, 5, 5), 2, divisor_override=0),
    lambda F, t: F.max_pool3d(_x(t, 1, 2, 4, 4, 4), 2, dilation=(1, 0, 1)),
    lambda F, t: F.avg_pool3d(_x(t, 1, 2, 4, 4, 4), -1),
    lambda F, t: F.max_pool3d(_x(t, 1, 2, 4, 4, 4), 2, padding=(0, -1, 0)),
    lambda F, t: F.adaptive_avg_pool2d(_x(t, 1, 2, 5, 5), (1, 2, 3)),
    lambda F, t: F.adaptive_max_pool2d(_x(t, 1, 2, 5, 5), (1, 2, 3)),
    lambda F, t: F.adaptive_avg_pool1d(_x(t, 1, 2, 5), (1, 2)),
    lambda F, t: F.adaptive_avg_pool2d(_x(t, 1, 2, 5, 5), -1),
    lambda F, t: F.adaptive_avg_pool1d(_x(t, 1, 2, 5), -1),
    lambda F, t: F.adaptive_max_pool2d(_x(t, 1, 2, 5, 5), (2, -3)),
    lambda F, t: F.adaptive_max_pool2d(_x(t, 5, 5), 2),
    lambda F, t: F.adaptive_avg_pool2d(_x(t, 5, 5), 2),
    lambda F, t: F.adaptive_avg_pool1d(_x(t, 5), 2),
    lambda F, t: F.adaptive_avg_pool3d(_x(t, 1, 2, 4, 4, 4), (2, -1, None)),
    lambda F, t: F.adaptive_max_pool3d(_x(t, 1, 2, 4, 4, 4), -1),
    lambda F, t: F.adaptive_max_pool3d(_x(t, 1, 2, 4, 4, 4), (2, 2)),
    lambda F, t: F.mse_loss(_x(t, 3), _x(t, 4)),
    lambda F, t: F.huber_loss(_x(t, 2, 3), _x(t, 3, 3)),
    lambda F, t: F.cosine_embedding_loss(_x(t, 3, 2), _x(t, 3, 2), t.ones(4)),
    lambda F, t: F.local_response_norm(_x(t, 1, 3, 3), 0),
    lambda F, t: F.local_response_norm(_x(t, 1, 3, 3, 3), -1),
    lambda F, t: F.embedding(t.tensor([0, 1]), _x(t, 5)),
    lambda F, t: F.layer_norm(_x(t, 2, 3), (2, 4)),
    lambda F, t: F.rms_norm(_x(t, 2, 3), (2, 4)),
    lambda F, t: F.bilinear(_x(t, 3, 3), _x(t, 3, 2), _x(t, 4, 2, 2)),
    lambda F, t: F.bilinear(_x(t, 3, 2), _x(t, 4, 2), _x(t, 4, 2, 2)),
    lambda F, t: F.bilinear(_x(t, 3, 2), _x(t, 3, 2), _x(t, 4, 2, 2), _x(t, 3)),
    lambda F, t: F.bilinear(_x(t, 3, 2), _x(t, 2, 3, 2), _x(t, 4, 2, 2)),
    lambda F, t: F.bilinear(_x(t, 3, 2), _x(t, 3, 2), _x(t, 4, 2)),
])
@pytest.mark.filterwarnings("ignore:Using a target size")
def test_argument_errors(call):
    assert_same_error(lambda: call(F, engine), lambda: call(TF, torch))


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean"])
def test_kl_div_of_a_negative_target_is_nan_as_torchs(reduction):
    x = torch.tensor([[-1.2, -0.7, -1.5], [-0.4, -2.0, -1.1]])
    t = torch.tensor([[0.5, -0.1, 0.6], [0.2, 0.0, 0.8]])
    theirs = torch.nn.functional.kl_div(x, t, reduction=reduction)
    ours = engine.nn.functional.kl_div(engine.tensor(x.numpy()), engine.tensor(t.numpy()), reduction=reduction)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, equal_nan=True)
