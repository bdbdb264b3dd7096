"""The numpy CPU kernels (conv, pool, interpolate) against torch.nn.functional, values and gradients."""
import zlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.backends import Epilogue
from engine.backends.cpu import conv, interpolate, pool, threads

DTYPES = [np.float32, np.float64]


def _rng(*key):
    """Generator seeded from the test case, stable across runs."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _close(ours, ref, dtype, rtol32=1e-5):
    """max |ours - ref| <= rtol * max |ref| (rtol 1e-12-ish for float64)."""
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else ref
    assert ours.shape == ref.shape
    assert ours.dtype == dtype
    rtol = rtol32 if dtype == np.float32 else 1e-11
    assert np.abs(ours - ref).max() <= rtol * max(np.abs(ref).max(), 1e-30)


def _input(rng, shape, dtype, transposed=False):
    """Random input; transposed gives a non-contiguous view of the same shape."""
    if transposed:
        return rng.standard_normal(shape[:2] + shape[2:][::-1]).astype(dtype).swapaxes(2, 3)
    return rng.standard_normal(shape).astype(dtype)


def _torch_grads(fn, arrays, gy=None, rng=None):
    """Run fn on torch leaves made from arrays; return (out, grads, gy) for a random upstream gradient."""
    leaves = [None if a is None else torch.tensor(np.ascontiguousarray(a), requires_grad=True) for a in arrays]
    out = fn(*leaves)
    y = out[0] if isinstance(out, tuple) else out
    if gy is None:
        gy = rng.standard_normal(tuple(y.shape)).astype(arrays[0].dtype)
    y.backward(torch.tensor(gy))
    return out, [None if t is None else t.grad for t in leaves], gy


# (N, C, O, H, W, k, stride, (top, bottom, left, right), dilation, groups, transposed input)
CONV_CASES = [
    (1, 4, 6, 7, 9, 3, 1, (1, 1, 1, 1), 1, 1, False),
    (3, 4, 6, 13, 11, 3, 2, (1, 1, 1, 1), 1, 2, False),
    (3, 4, 4, 13, 11, 3, 1, (1, 1, 1, 1), 1, 4, True),  # depthwise, non-contiguous
    (2, 6, 12, 9, 9, 3, 2, (1, 1, 1, 1), 2, 6, False),  # depthwise multiplier 2, dilated, strided
    (3, 4, 8, 7, 9, 1, 1, (0, 0, 0, 0), 1, 1, False),  # 1x1: plain GEMM (folded batch)
    (2, 4, 8, 11, 10, 1, 1, (0, 0, 0, 0), 1, 1, True),  # 1x1 unfolded, non-contiguous
    (2, 4, 8, 9, 7, 1, 2, (0, 0, 0, 0), 1, 2, False),  # 1x1 strided
    (2, 4, 8, 13, 11, 5, 3, (2, 2, 2, 2), 1, 1, False),
    (2, 4, 6, 7, 9, 2, 1, (0, 1, 0, 1), 1, 1, False),  # 'same' with an even kernel
    (1, 4, 6, 8, 9, 4, 1, (1, 2, 1, 2), 1, 2, False),  # 'same', even kernel, asymmetric
    (1, 4, 6, 7, 9, 3, 3, (0, 2, 1, 0), 2, 2, False),  # asymmetric padding, dilation, stride 3
    (2, 3, 4, 21, 23, 3, 1, (1, 1, 1, 1), 1, 1, False),  # big enough images to stay unfolded
    (2, 3, 4, 22, 23, 7, 2, (3, 3, 3, 3), 1, 1, True),  # stem-like
    (3, 8, 4, 9, 7, 3, 2, (0, 0, 0, 0), 1, 1, False),  # fewer output than input channels
    (2, 128, 128, 7, 6, 3, 1, (1, 1, 1, 1), 1, 1, False),  # Winograd input gradient (>= 128 channels)
    (1, 128, 136, 5, 9, 3, 1, (0, 2, 1, 0), 1, 1, True),  # the same, odd tiles, asymmetric padding
    (2, 256, 264, 28, 29, 3, 1, (1, 1, 1, 1), 1, 1, False),  # Winograd forward too, odd tiles
    (1, 256, 264, 41, 43, 3, 1, (2, 2, 2, 2), 2, 1, False),  # dilated Winograd forward (sub-grid tiles)
    (1, 256, 256, 45, 47, 3, 1, (3, 2, 3, 4), 3, 1, True),  # the same, dilation 3, asymmetric padding
    # wide planes, 16-128 channels: input gradients by row shifts
    (2, 20, 24, 5, 50, 3, 1, (1, 1, 1, 1), 1, 1, False),
    (1, 24, 40, 8, 49, 3, 1, (2, 1, 0, 3), 2, 1, True),  # dilated, asymmetric padding, non-contiguous
    (2, 16, 17, 4, 52, 4, 1, (1, 2, 2, 1), 1, 1, False),  # even kernel
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d(case, dtype):
    N, C, O, H, W, k, s, pads, d, g, transposed = case
    rng = _rng("conv", case)
    x = _input(rng, (N, C, H, W), dtype, transposed)
    w = rng.standard_normal((O, C // g, k, k)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    y, saved = conv.conv2d_forward(x, w, b, (s, s), pads, (d, d), g)
    top, bottom, left, right = pads

    def ref(tx, tw, tb):
        return F.conv2d(F.pad(tx, (left, right, top, bottom)), tw, tb, s, 0, d, g)

    ty, (gx_ref, gw_ref, gb_ref), gy = _torch_grads(ref, [x, w, b], rng=rng)
    _close(y, ty, dtype, 1e-4)
    gx, gw, gb = conv.conv2d_backward(gy, saved, True, True, True)
    _close(gx, gx_ref, dtype, 1e-4)
    _close(gw, gw_ref, dtype, 1e-4)
    _close(gb, gb_ref, dtype, 1e-4)


def test_row_shift_route_is_taken(monkeypatch):
    """A wide 64-channel 3x3 layer's input gradient goes through the row-shift correlation (its forward,
    in training and in inference, through im2col)."""
    calls = []
    row_shift = conv._row_shift_corr
    monkeypatch.setattr(conv, "_row_shift_corr", lambda x, *args: calls.append(x.shape) or row_shift(x, *args))
    x, w = np.ones((1, 64, 4, 56), np.float32), np.ones((64, 64, 3, 3), np.float32)
    conv.conv2d_forward(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1, weight_grad=False)
    y, saved = conv.conv2d_forward(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert calls == []
    conv.conv2d_backward(np.ones_like(y), saved, True, False, False)
    assert calls == [y.shape]


def test_conv2d_needs_flags_and_no_bias():
    rng = _rng("flags")
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y, saved = conv.conv2d_forward(x, w, None, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    _close(y, F.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1), np.float32, 1e-4)
    gx, gw, gb = conv.conv2d_backward(np.ones_like(y), saved, False, True, False)
    assert gx is None and gb is None and gw.shape == w.shape


# (N, C, H, W, k, stride, dilation, (top, bottom, left, right)): depthwise layers summed as einsum grids
# (stride 1: even and odd columns, or one grid when dilated), tap by tap over stride phases, or (small
# planes) channels-last
DEPTHWISE_CASES = [
    (2, 3, 11, 12, 5, 1, 1, (2, 2, 2, 2)),
    (1, 2, 9, 10, 6, 1, 1, (2, 3, 3, 2)),
    (2, 3, 12, 13, 1, 1, 1, (0, 0, 0, 0)),
    (2, 2, 14, 13, 3, 1, 2, (1, 0, 2, 1)),
    (2, 3, 23, 22, 5, 2, 1, (2, 2, 2, 2)),
    (1, 4, 17, 19, 7, 2, 3, (9, 9, 8, 9)),
    (2, 3, 30, 27, 5, 2, 2, (4, 3, 4, 4)),
    (1, 2, 25, 24, 4, 2, 1, (1, 2, 2, 1)),
    (2, 3, 40, 41, 3, 3, 1, (1, 1, 1, 1)),
    (2, 64, 67, 66, 3, 1, 1, (1, 1, 1, 1)),  # split among the threads
    # small planes, channels-last: stride 1, strided, dilated with asymmetric padding, split among threads
    (2, 5, 7, 6, 5, 1, 1, (2, 2, 2, 2)),
    (3, 4, 9, 8, 3, 2, 1, (1, 0, 1, 1)),
    (2, 3, 6, 7, 3, 1, 2, (2, 1, 3, 2)),
    (8, 960, 7, 7, 5, 1, 1, (2, 2, 2, 2)),
]


@pytest.mark.parametrize("case", DEPTHWISE_CASES)
def test_depthwise_corr(case):
    N, C, H, W, k, s, d, pads = case
    rng = _rng("depthwise", case)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((C, 1, k, k)).astype(np.float32)
    y, _ = conv.conv2d_forward(x, w, None, (s, s), pads, (d, d), C)
    top, bottom, left, right = pads
    ref = F.conv2d(F.pad(torch.tensor(x), (left, right, top, bottom)), torch.tensor(w), None, s, 0, d, C)
    _close(y, ref, np.float32, 1e-5)


def _epilogue_reference(y, scale, shift, residual, activation):
    """What conv_epilogue computes, in torch's ops."""
    ref = torch.tensor(y)
    if scale is not None:
        ref = ref * torch.tensor(scale)[:, None, None]
    if shift is not None:
        ref = ref + torch.tensor(shift)[:, None, None]
    if residual is not None:
        ref = ref + torch.tensor(residual)
    return {None: lambda t: t, "relu": F.relu, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "silu": F.silu,
            "gelu": F.gelu}.get(activation, lambda t: t.clamp(activation[1], activation[2]))(ref)


@pytest.mark.parametrize("with_scale, with_shift", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("scale_folds", [True, False])
def test_conv_with_bias_and_epilogue(with_scale, with_shift, scale_folds, monkeypatch):
    """A dense convolution's bias joins its epilogue's shift: (conv + b) * scale + shift, then ReLU, with
    the scale applied to the weight or to the output."""
    monkeypatch.setattr(conv, "_SCALE_FOLD_RATIO", 0 if scale_folds else np.inf)
    rng = _rng("conv bias epilogue", with_scale, with_shift)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    w, b = rng.standard_normal((7, 5, 3, 3)).astype(np.float32), rng.standard_normal(7).astype(np.float32)
    scale, shift = (rng.standard_normal(7).astype(np.float32) for _ in range(2))
    args = Epilogue(scale if with_scale else None, shift if with_shift else None, None, "relu")
    y, _ = conv.conv2d_forward(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1), 1, weight_grad=False, epilogue=args)
    plain = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1, 1).numpy()
    _close(y, _epilogue_reference(plain, *args), np.float32, 1e-5)


def test_scale_folds_where_the_weight_is_smaller():
    """An epilogue's scale goes into the weight of a depthwise layer or a 1x1 layer on a large map, and
    stays on the output of a late ResNet layer (weight 94x its output at batch 1) up to the batch whose
    output is _SCALE_FOLD_RATIO (4) times its weight."""
    same = ((1, 1), (1, 1, 1, 1), (1, 1))
    assert conv._scale_folds((1, 960, 33, 33), (960, 1, 5, 5), (1, 1), (4, 4, 4, 4), (2, 2))
    assert conv._scale_folds((1, 16, 260, 260), (64, 16, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1))
    assert not conv._scale_folds((1, 512, 7, 7), (512, 512, 3, 3), *same)
    assert not conv._scale_folds((376, 512, 7, 7), (512, 512, 3, 3), *same)
    assert conv._scale_folds((377, 512, 7, 7), (512, 512, 3, 3), *same)


@pytest.mark.parametrize("case", [DEPTHWISE_CASES[0], DEPTHWISE_CASES[4], DEPTHWISE_CASES[11]])
@pytest.mark.parametrize("with_epilogue", [False, True])
def test_depthwise_corr_empty_batch(case, with_epilogue):
    """A batch of no images gives an empty output of torch's shape, with or without an epilogue."""
    _, C, H, W, k, s, d, pads = case
    x, w = np.zeros((0, C, H, W), np.float32), np.ones((C, 1, k, k), np.float32)
    epilogue = Epilogue(np.ones(C, np.float32), np.zeros(C, np.float32), None, "relu") if with_epilogue else None
    y, _ = conv.conv2d_forward(x, w, None, (s, s), pads, (d, d), C, weight_grad=False, epilogue=epilogue)
    top, bottom, left, right = pads
    assert y.shape == F.conv2d(F.pad(torch.tensor(x), (left, right, top, bottom)), torch.tensor(w), None, s, 0, d,
                               C).shape


@pytest.mark.parametrize("activation", [None, "relu", "hardswish", "hardsigmoid", "silu", "gelu", ("clip", 0.0, 6.0)])
@pytest.mark.parametrize("with_scale, with_shift, with_residual",
                         [(True, True, True), (True, True, False), (False, True, False), (False, False, True)])
def test_conv_epilogue(activation, with_scale, with_shift, with_residual, monkeypatch):
    """The fused epilogue against torch's ops: in place on a contiguous output, and from a strided view
    into a fresh array, leaving the view's memory alone; big enough to be split among the threads."""
    monkeypatch.setattr(conv, "_NEAR_GEMM_MIN_BYTES", threads._MIN_BYTES)
    rng = _rng("epilogue", activation, with_scale, with_shift, with_residual)
    full = rng.standard_normal((2, 64, 40, 70)).astype(np.float32)
    strided = full[..., :66]
    assert strided.nbytes > threads._MIN_BYTES
    scale, shift = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    residual = rng.standard_normal(strided.shape).astype(np.float32)
    args = Epilogue(scale if with_scale else None, shift if with_shift else None,
                    residual if with_residual else None, activation)
    ref = _epilogue_reference(np.ascontiguousarray(strided), *args)
    before = full.copy()
    out = conv.conv_epilogue(strided, args)
    assert out.flags.c_contiguous and np.array_equal(full, before)
    contiguous = np.ascontiguousarray(strided)
    assert conv.conv_epilogue(contiguous, args) is contiguous
    for result in (out, contiguous):
        _close(result, ref, np.float32, 1e-6)


@pytest.mark.parametrize("case", [DEPTHWISE_CASES[0], DEPTHWISE_CASES[4], DEPTHWISE_CASES[9], DEPTHWISE_CASES[11]])
@pytest.mark.parametrize("with_bias, with_scale, with_shift",
                         [(False, True, True), (True, True, True), (True, True, False), (False, False, True)])
@pytest.mark.parametrize("scale_folds", [True, False])
def test_depthwise_corr_with_epilogue(case, with_bias, with_scale, with_shift, scale_folds, monkeypatch):
    """A depthwise layer with an epilogue (applied inside each thread's pipeline, or after the kernel on
    small planes; its scale applied to the kernel or to the output) equals the layer followed by the
    epilogue in torch; a bias joins the shift."""
    monkeypatch.setattr(conv, "_SCALE_FOLD_RATIO", 0 if scale_folds else np.inf)
    N, C, H, W, k, s, d, pads = case
    rng = _rng("depthwise epilogue", case, with_bias, with_scale, with_shift)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((C, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(C).astype(np.float32) if with_bias else None
    scale, shift = (rng.standard_normal(C).astype(np.float32) if on else None for on in (with_scale, with_shift))
    top, bottom, left, right = pads
    plain = F.conv2d(F.pad(torch.tensor(x), (left, right, top, bottom)), torch.tensor(w),
                     None if b is None else torch.tensor(b), s, 0, d, C).numpy()
    residual = rng.standard_normal(plain.shape).astype(np.float32)
    y, _ = conv.conv2d_forward(x, w, b, (s, s), pads, (d, d), C, weight_grad=False,
                               epilogue=Epilogue(scale, shift, residual, "hardswish"))
    _close(y, _epilogue_reference(plain, scale, shift, residual, "hardswish"), np.float32, 1e-5)


# (N, C_in, C_out, H, W, k, stride, padding, output_padding, dilation, groups)
CONV_T_CASES = [
    (1, 4, 6, 7, 9, 3, 1, 1, 0, 1, 1),
    (3, 4, 6, 5, 4, 3, 2, 1, 1, 1, 2),
    (2, 6, 3, 4, 5, 4, 2, 1, 0, 1, 1),
    (2, 4, 4, 5, 5, 3, 3, 0, 2, 1, 4),
    (2, 4, 8, 6, 5, 3, 2, 2, 1, 2, 2),
    (1, 4, 2, 7, 6, 1, 2, 0, 1, 1, 1),
    (2, 2, 4, 9, 11, 5, 1, 2, 0, 1, 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_T_CASES)
def test_conv_transpose2d(case, dtype):
    N, C, O, H, W, k, s, p, op, d, g = case
    rng = _rng("convT", case)
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((C, O // g, k, k)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype)
    y, saved = conv.conv_transpose2d_forward(x, w, b, (s, s), (p, p), (op, op), (d, d), g)
    ty, (gx_ref, gw_ref, gb_ref), gy = _torch_grads(
        lambda tx, tw, tb: F.conv_transpose2d(tx, tw, tb, s, p, op, g, d), [x, w, b], rng=rng)
    _close(y, ty, dtype, 1e-4)
    gx, gw, gb = conv.conv_transpose2d_backward(gy, saved, True, True, True)
    _close(gx, gx_ref, dtype, 1e-4)
    _close(gw, gw_ref, dtype, 1e-4)
    _close(gb, gb_ref, dtype, 1e-4)


# (N, H, W, kernel, stride, padding, dilation, ceil_mode, transposed input)
POOL_CASES = [
    (1, 7, 9, 3, 2, 1, 1, False, False),
    (3, 13, 11, 3, 2, 1, 1, True, False),
    (3, 13, 11, 2, 2, 0, 1, True, True),
    (1, 8, 8, 2, 2, 0, 1, False, False),
    (3, 7, 9, 3, 1, 1, 2, False, False),
    (1, 13, 11, 3, 3, 1, 2, True, False),
    (3, 7, 9, 5, 3, 2, 1, True, True),
    (1, 9, 9, 1, 2, 0, 1, False, False),
    (3, 10, 7, (3, 2), (2, 1), (1, 0), 1, True, False),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d(case, dtype):
    N, H, W, k, s, p, d, ceil_mode, transposed = case
    rng = _rng("maxpool", case)
    x = _input(rng, (N, 3, H, W), dtype, transposed)
    y, indices, saved = pool.max_pool2d_forward(x, k, s, p, d, ceil_mode)
    (ty, ti), (gx_ref,), gy = _torch_grads(
        lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode, return_indices=True), [x], rng=rng)
    _close(y, ty, dtype)
    assert indices.dtype == np.int64 and np.array_equal(indices, ti.numpy())
    _close(pool.max_pool2d_backward(gy, saved), gx_ref, dtype)


def test_max_pool2d_nan_and_ties():
    rng = _rng("maxnan")
    x = np.round(rng.standard_normal((2, 2, 9, 9))).astype(np.float32)  # many ties
    x[0, 0, 2, 3] = np.nan
    x[1, 1, :4, :4] = -np.inf
    for args in [(3, 2, 1, 1, False), (3, 1, 1, 2, True), (2, 2, 0, 1, False)]:
        y, indices, _ = pool.max_pool2d_forward(x, *args)
        ty, ti = F.max_pool2d(torch.tensor(x), *args, return_indices=True)
        assert np.array_equal(y, ty.numpy(), equal_nan=True)
        assert np.array_equal(indices, ti.numpy())


def test_parallel_chunks_min_bytes(monkeypatch):
    """Work is split between two threads from its call's lower bound up (threads._MIN_BYTES unless
    given); below it one call covers the range inline."""
    monkeypatch.setattr(threads.blas, "num_threads", lambda: 2)
    low = threads._MIN_BYTES
    for nbytes, min_bytes, split in [(4 * low, low, True), (4 * low, 8 * low, False), (low // 2, low, False)]:
        seen = []
        threads.parallel_chunks(lambda lo, hi: seen.append((lo, hi)), 10, nbytes, min_bytes)
        assert sorted(seen) == ([(0, 5), (5, 10)] if split else [(0, 10)])


def test_max_pool2d_split_over_threads():
    """An input big enough to be split among the CPU threads: values and indices equal torch's in every
    chunk, with a NaN and an all -inf window in different ones; the values-only kernel agrees."""
    rng = _rng("maxsplit")
    x = rng.standard_normal((2, 8, 130, 129)).astype(np.float32)
    assert x.nbytes > threads._MIN_BYTES
    x[0, 1, 7, 9] = np.nan
    x[1, 6, :3, :3] = -np.inf
    for args in [(3, 2, 1, 1, False), (2, 2, 0, 1, True)]:
        y, indices, _ = pool.max_pool2d_forward(x, *args)
        ty, ti = F.max_pool2d(torch.tensor(x), *args, return_indices=True)
        assert np.array_equal(y, ty.numpy(), equal_nan=True)
        assert np.array_equal(indices, ti.numpy())
        assert np.array_equal(pool.max_pool2d_values_forward(x, *args)[0], y, equal_nan=True)



@pytest.mark.parametrize("strides, top, left, Hq, Wq", [((2, 2), 1, 1, 7, 6), ((1, 1), 2, 0, 13, 14),
                                                        ((2, 3), 0, 2, 8, 5), ((2, 2), 3, 4, 4, 3)])
def test_phase_planes_over_used_scratch(strides, top, left, Hq, Wq):
    """Every entry of the phase planes, margins included, comes from the padded input (cropped where the
    planes end before it), whatever the reused scratch memory held before (NaN here)."""
    from engine.backends.cpu import scratch
    x = _rng("phases", strides, top).standard_normal((2, 3, 11, 9)).astype(np.float32)
    sh, sw = strides
    scratch.scratch("phase_planes", (sh, sw, 6, Hq, Wq), x.dtype)[...] = np.nan
    planes = scratch.phase_planes(x, strides, top, left, Hq, Wq, -7.0).reshape(sh, sw, 6, Hq, Wq)
    padded = np.full((2, 3, max(Hq * sh, top + 11), max(Wq * sw, left + 9)), -7.0, np.float32)
    padded[:, :, top:top + 11, left:left + 9] = x
    for a in range(sh):
        for b in range(sw):
            expected = padded[:, :, a::sh, b::sw][:, :, :Hq, :Wq].reshape(6, Hq, Wq)
            assert np.array_equal(planes[a, b], expected), (a, b)

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[6] == 1])
@pytest.mark.parametrize("count_include_pad, divisor_override", [(True, None), (False, None), (True, 3)])
def test_avg_pool2d(case, count_include_pad, divisor_override, dtype):
    N, H, W, k, s, p, _, ceil_mode, transposed = case
    rng = _rng("avgpool", case, count_include_pad, divisor_override)
    x = _input(rng, (N, 3, H, W), dtype, transposed)
    y, saved = pool.avg_pool2d_forward(x, k, s, p, ceil_mode, count_include_pad, divisor_override)
    ty, (gx_ref,), gy = _torch_grads(
        lambda t: F.avg_pool2d(t, k, s, p, ceil_mode, count_include_pad, divisor_override), [x], rng=rng)
    _close(y, ty, dtype)
    _close(pool.avg_pool2d_backward(gy, saved), gx_ref, dtype)


# (H, W, output_size)
ADAPTIVE_CASES = [
    (7, 7, 3), (5, 5, (2, 4)), (10, 9, (None, 4)), (8, 8, 4), (8, 6, 1), (9, 7, (2, None)),
    (7, 9, (7, 9)), (13, 11, (5, 3)), (3, 4, (5, 6)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES)
def test_adaptive_avg_pool2d(case, dtype):
    H, W, out = case
    rng = _rng("aavg", case)
    x = _input(rng, (2, 3, H, W), dtype, transposed=H == 13)
    y, saved = pool.adaptive_avg_pool2d_forward(x, out)
    ty, (gx_ref,), gy = _torch_grads(lambda t: F.adaptive_avg_pool2d(t, out), [x], rng=rng)
    _close(y, ty, dtype)
    _close(pool.adaptive_avg_pool2d_backward(gy, saved), gx_ref, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ADAPTIVE_CASES)
def test_adaptive_max_pool2d(case, dtype):
    H, W, out = case
    rng = _rng("amax", case)
    x = _input(rng, (2, 3, H, W), dtype, transposed=H == 13)
    y, indices, saved = pool.adaptive_max_pool2d_forward(x, out)
    (ty, ti), (gx_ref,), gy = _torch_grads(lambda t: F.adaptive_max_pool2d(t, out, return_indices=True), [x], rng=rng)
    _close(y, ty, dtype)
    assert np.array_equal(indices, ti.numpy())
    _close(pool.adaptive_max_pool2d_backward(gy, saved), gx_ref, dtype)


INTERP_SIZES = [dict(size=(5, 17)), dict(size=(14, 18)), dict(size=(3, 2)), dict(size=(7, 9)),
                dict(scale_factor=1.7), dict(scale_factor=0.5), dict(scale_factor=(2, 3)),
                dict(scale_factor=0.73, recompute_scale_factor=True)]
INTERP_MODES = [("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True),
                ("bicubic", False), ("bicubic", True), ("area", None)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode, align_corners", INTERP_MODES)
@pytest.mark.parametrize("kwargs", INTERP_SIZES, ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_interpolate_2d(kwargs, mode, align_corners, dtype):
    rng = _rng("interp", mode, align_corners, tuple(kwargs.items()))
    x = _input(rng, (2, 3, 7, 9), dtype, transposed=mode == "bilinear")
    y, saved = interpolate.interpolate_forward(x, mode=mode, align_corners=align_corners, **kwargs)
    ty, (gx_ref,), gy = _torch_grads(lambda t: F.interpolate(t, mode=mode, align_corners=align_corners, **kwargs),
                                     [x], rng=rng)
    _close(y, ty, dtype)
    _close(interpolate.interpolate_backward(gy, saved), gx_ref, dtype)


@pytest.mark.parametrize("mode, align_corners", [("bilinear", False), ("bilinear", True), ("bicubic", False)])
@pytest.mark.parametrize("in_rows, out_rows", [(37, 301), (150, 37)])
def test_interpolate_rows_in_bands(in_rows, out_rows, mode, align_corners):
    """Rows resized by banded GEMMs (upsampling with a remainder band, downsampling), against torch."""
    rng = _rng("interp bands", in_rows, out_rows, mode, align_corners)
    x = rng.standard_normal((2, 3, in_rows, 11)).astype(np.float32)
    y, _ = interpolate.interpolate_forward(x, size=(out_rows, 23), mode=mode, align_corners=align_corners)
    _close(y, F.interpolate(torch.tensor(x), size=(out_rows, 23), mode=mode, align_corners=align_corners),
           np.float32)


@pytest.mark.parametrize("n_in, resize", [(97, dict(size=171)), (60, dict(size=128)), (50, dict(size=13)),
                                           (20, dict(scale_factor=1.7)), (31, dict(scale_factor=0.43))])
def test_linear_weights_are_torch_s_to_the_bit(n_in, resize):
    """float32 linear weights equal torch's exactly: the source index is rounded once, as torch's fused
    multiply-add does, so resized uint8 frames round as torchvision's (97 -> 171 was 3.8e-6 off before)."""
    identity = np.eye(n_in, dtype=np.float32)[:, None, :]
    y, _ = interpolate.interpolate_forward(identity, mode="linear", align_corners=False, **resize)
    assert np.array_equal(y, F.interpolate(torch.from_numpy(identity), mode="linear", align_corners=False,
                                           **resize).numpy())


@pytest.mark.parametrize("mode, align_corners", [("nearest", None), ("nearest-exact", None), ("linear", False),
                                                 ("linear", True), ("area", None)])
@pytest.mark.parametrize("kwargs", [dict(size=17), dict(size=4), dict(scale_factor=1.7), dict(scale_factor=0.5)],
                         ids=lambda kw: "-".join(f"{k}={v}" for k, v in kw.items()))
def test_interpolate_1d(kwargs, mode, align_corners):
    rng = _rng("interp1d", mode, align_corners, tuple(kwargs.items()))
    x = rng.standard_normal((2, 3, 9)).astype(np.float32)
    y, saved = interpolate.interpolate_forward(x, mode=mode, align_corners=align_corners, **kwargs)
    ty, (gx_ref,), gy = _torch_grads(lambda t: F.interpolate(t, mode=mode, align_corners=align_corners, **kwargs),
                                     [x], rng=rng)
    _close(y, ty, np.float32)
    _close(interpolate.interpolate_backward(gy, saved), gx_ref, np.float32)
