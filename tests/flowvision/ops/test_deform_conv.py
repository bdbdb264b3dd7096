"""deform_conv2d / DeformConv2d against torchvision: output and the gradients of input, offsets, mask,
weight and bias, on the CPU and on the CUDA backend (the ``cuda`` fixture: a GPU or the CPU emulation of
CuPy)."""
import numpy as np
import pytest
import torch
import torchvision
from op_check import check_op

import engine
from flowvision import ops

# (N, C, O, H, W, (KH, KW), stride, padding, dilation, groups, offset_groups)
CASES = [
    (2, 4, 6, 9, 11, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1),
    (2, 6, 4, 10, 9, (3, 2), (2, 1), (1, 2), (2, 1), 2, 3),      # grouped, several offset groups, uneven
    (3, 4, 4, 7, 8, (3, 3), (1, 2), (0, 1), (1, 1), 4, 2),       # depthwise
    (1, 3, 5, 6, 7, (1, 1), (1, 1), (0, 0), (1, 1), 1, 3),       # 1x1 taps, one offset group per channel
]


def _inputs(case, seed=0, offset_scale=2.0, dtype=np.float32):
    n, c, o, h, w, (kh, kw), s, p, d, g, og = case
    rng = np.random.default_rng(seed)
    ho, wo = ((size + 2 * p[a] - d[a] * (k - 1) - 1) // s[a] + 1 for a, (size, k) in enumerate(((h, kh), (w, kw))))
    x = rng.standard_normal((n, c, h, w)).astype(dtype)
    offset = (rng.standard_normal((n, 2 * og * kh * kw, ho, wo)) * offset_scale).astype(dtype)
    mask = rng.uniform(0, 1, (n, og * kh * kw, ho, wo)).astype(dtype)
    weight = rng.standard_normal((o, c // g, kh, kw)).astype(dtype)
    bias = rng.standard_normal(o).astype(dtype)
    return [x, offset, weight, mask, bias]


def _check(case, inputs, use_mask=True, use_bias=True, rtol=2e-6, device=None):
    s, p, d = case[6:9]
    check_op(lambda x, off, w, m, b: ops.deform_conv2d(x, off, w, b if use_bias else None, s, p, d,
                                                       m if use_mask else None),
             lambda x, off, w, m, b: torchvision.ops.deform_conv2d(x, off, w, b if use_bias else None, s, p, d,
                                                                   m if use_mask else None),
             inputs, rtol=rtol, grad_rtol=rtol, device=device)


@pytest.mark.parametrize("use_mask, use_bias", [(True, True), (False, False)])
@pytest.mark.parametrize("case", CASES)
def test_deform_conv2d(case, use_mask, use_bias):
    _check(case, _inputs(case), use_mask, use_bias)


def test_deform_conv2d_float64_far_offsets():
    """Offsets of up to a dozen pixels: most samples fall partly or wholly off the map."""
    _check(CASES[1], _inputs(CASES[1], seed=1, offset_scale=6.0, dtype=np.float64), rtol=1e-12)


BORDER_CASE = (2, 3, 4, 5, 6, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1)


def _border_inputs():
    """Integer and half-integer offsets that put samples exactly on rows/columns -1, 0, H - 1 and H (and
    beyond), where the bilinear weights and their derivatives switch between corners (torchvision gives a
    sample exactly on row -1 the y derivative of row 0)."""
    inputs = _inputs(BORDER_CASE, seed=2)
    rng = np.random.default_rng(3)
    inputs[1] = rng.choice(np.float32([-7, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 4.5, 5, 6]), inputs[1].shape)
    return inputs


def test_deform_conv2d_samples_on_and_beyond_the_borders():
    _check(BORDER_CASE, _border_inputs())


def test_module_matches_torchvision_under_the_same_seed():
    engine.manual_seed(0)
    ours = ops.DeformConv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2)
    torch.manual_seed(0)
    theirs = torchvision.ops.DeformConv2d(4, 6, 3, stride=2, padding=1, dilation=1, groups=2)
    assert repr(ours) == repr(theirs)
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    np.testing.assert_array_equal(ours.bias.detach().numpy(), theirs.bias.detach().numpy())
    x, offset, _, mask, _ = _inputs((2, 4, 6, 9, 8, (3, 3), (2, 2), (1, 1), (1, 1), 2, 1))
    check_op(lambda a, o, m: ours(a, o, m), lambda a, o, m: theirs(a, o, m), [x, offset, mask], rtol=2e-6)
    plain = ops.DeformConv2d(3, 5, (1, 2), bias=False)
    assert repr(plain) == repr(torchvision.ops.DeformConv2d(3, 5, (1, 2), bias=False)) and plain.bias is None
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        ops.DeformConv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        ops.DeformConv2d(4, 5, 3, groups=2)


def test_errors_name_the_shapes():
    x, w = engine.randn(1, 4, 5, 5), engine.randn(2, 4, 3, 3)
    offset = engine.randn(1, 18, 3, 3)
    cases = [
        (dict(offset=engine.randn(1, 17, 3, 3)), "offset tensor at dimension 1 is not valid.*Got offset.shape"),
        (dict(offset=engine.randn(1, 19, 3, 3)), r"offset.shape\[1\] is not valid: got 19, expected 18"),
        (dict(offset=engine.randn(1, 54, 3, 3)), r"input channels \(4\) must be a multiple of offset groups \(3\)"),
        (dict(offset=engine.randn(2, 18, 3, 3)), r"invalid batch size of offset: \[2, 18, 3, 3\]"),
        (dict(offset=engine.randn(1, 18, 4, 4)), r"offset output dims \(4, 4\) differ .* \(3, 3\)"),
        (dict(mask=engine.randn(1, 8, 3, 3)), r"mask.shape\[1\] is not valid: got 8, expected 9"),
        (dict(mask=engine.randn(1, 9, 2, 3)), r"mask output dims \(2, 3\)"),
        (dict(weight=engine.randn(5, 3, 3, 3)), "input has 4 channels, but weight"),
        (dict(weight=engine.randn(5, 2, 3, 3)), "5 output channels do not split into 2 groups"),
        (dict(bias=engine.randn(3)), r"bias of shape \[3\] for 2 output channels"),
        (dict(stride=0), r"stride must be positive, got \(0, 0\)"),
        (dict(padding=(1, -1)), r"padding must be >= 0, got \(1, -1\)"),
        (dict(dilation=(0, 1)), r"dilation must be positive"),
        (dict(input=engine.randn(1, 4, 2, 2), offset=engine.randn(1, 18, 1, 1)), "output size too small"),
        (dict(input=engine.randn(4, 5, 5)), r"input must be 4-D, got shape \[4, 5, 5\]"),
        (dict(offset=offset.double()), "offset has dtype engine.float64, input engine.float32"),
    ]
    for change, message in cases:
        args = dict(input=x, offset=offset, weight=w) | change
        with pytest.raises(RuntimeError, match=message):
            ops.deform_conv2d(**args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", [CASES[1], CASES[2]])
def test_on_cuda(cuda, case, dtype):
    inputs = _inputs(case, seed=4, offset_scale=3.0, dtype=dtype)
    _check(case, inputs, rtol=2e-6 if dtype == np.float32 else 1e-12, device="cuda")
    _check(case, inputs, use_mask=False, use_bias=False, rtol=2e-6 if dtype == np.float32 else 1e-12,
           device="cuda")


def test_borders_on_cuda(cuda):
    _check(BORDER_CASE, _border_inputs(), device="cuda")


EMPTY_CASE = (1, 4, 4, 6, 7, (3, 3), (1, 1), (0, 0), (1, 1), 2, 1)


def _empty_batch_inputs():
    """EMPTY_CASE's inputs with no images (the weight and bias kept)."""
    x, offset, weight, mask, bias = _inputs(EMPTY_CASE)
    return [x[:0], offset[:0], weight, mask[:0], bias]


def test_empty_batch():
    _check(EMPTY_CASE, _empty_batch_inputs())


def test_empty_batch_on_cuda(cuda):
    """No kernel is launched over nothing (a grid of no blocks is a CUDA error)."""
    _check(EMPTY_CASE, _empty_batch_inputs(), device="cuda")
