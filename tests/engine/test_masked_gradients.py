"""Gradients that an op masks out stay 0 where the incoming gradient is infinite or NaN, as in torch.

torch's backward formulas for piecewise ops mask with ``where`` / ``masked_fill`` (relu's threshold_backward,
clamp, where, masked_fill, maximum's loser) or return zeros (sign, floor): an inf or NaN arriving at a masked
position is dropped. A product with the mask would turn it into NaN and poison every gradient upstream.
Also NaN inputs where torch's results do not depend on the element's place in the array (its vectorised and
scalar loops disagree for hardtanh or elu): relu passes the gradient at NaN, abs gives it 0, clamp with
tensor bounds gives x all of it.
"""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F

_X = np.random.default_rng(5).standard_normal((5, 7)).astype(np.float32)
_X[0, :3] = 0.0
_X[1, :5] = [3.0, -3.0, 1.0, -1.0, 0.5]
_GRAD = np.random.default_rng(6).standard_normal((5, 7)).astype(np.float32)
_GRAD[::2, ::2] = np.inf
_GRAD[1::2, 1::3] = np.nan
_GRAD[3, 5] = -np.inf

_NAN_X = _X.copy()
_NAN_X[2, 1] = np.nan
_NAN_X[4, 3] = np.nan

# name: f(lib, functional, x)
CASES = {
    "relu": lambda L, F, x: L.relu(x),
    "relu_": lambda L, F, x: L.relu_(x * 1),
    "relu6": lambda L, F, x: F.relu6(x),
    "hardtanh": lambda L, F, x: F.hardtanh(x, -0.5, 0.8),
    "threshold": lambda L, F, x: F.threshold(x, 0.2, -1.0),
    "hardshrink": lambda L, F, x: F.hardshrink(x, 0.4),
    "softshrink": lambda L, F, x: F.softshrink(x, 0.4),
    "hardsigmoid": lambda L, F, x: F.hardsigmoid(x * 4),
    "hardswish": lambda L, F, x: F.hardswish(x),
    "sign": lambda L, F, x: L.sign(x),
    "floor": lambda L, F, x: L.floor(x),
    "round": lambda L, F, x: L.round(x),
    "clamp": lambda L, F, x: L.clamp(x, -0.5, 0.5),
    "clamp_min": lambda L, F, x: L.clamp(x, min=0.1),
    "clamp_tensor": lambda L, F, x: L.clamp(x, L.full_like(x, -0.5), L.full_like(x, 0.5)),
    "where": lambda L, F, x: L.where(x > 0, x, x * 2),
    "masked_fill": lambda L, F, x: x.masked_fill(x > 0, 1.0),
    "masked_scatter": lambda L, F, x: x.masked_scatter(x > 0, L.ones(35)),
    "maximum": lambda L, F, x: L.maximum(x, L.zeros_like(x)),
    "minimum": lambda L, F, x: L.minimum(x, L.zeros_like(x)),
    "fmax": lambda L, F, x: L.fmax(x, L.zeros_like(x)),
    "pow_zero": lambda L, F, x: x ** 0,
    "copy_": lambda L, F, x: (x * 1).copy_(L.ones(5, 7)) + x,
    "abs": lambda L, F, x: L.abs(x),
}


def _gradients(fn, x, grad, device=None):
    """The input gradient of ``fn`` under ``grad``, in ours and in torch."""
    ours = engine.tensor(x, requires_grad=True)
    source = ours.to(device) if device else ours
    fn(engine, F, source).backward(engine.tensor(grad).to(source.device))
    theirs = torch.tensor(x, requires_grad=True)
    fn(torch, torch.nn.functional, theirs).backward(torch.tensor(grad))
    return ours.grad.numpy(), theirs.grad.numpy()


@pytest.mark.parametrize("name", sorted(CASES))
def test_masked_positions_drop_an_infinite_or_nan_gradient(name):
    ours, theirs = _gradients(CASES[name], _X, _GRAD)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("name", ["relu", "relu_", "threshold", "abs", "clamp_tensor", "maximum", "where"])
def test_nan_inputs(name):
    grad = np.random.default_rng(7).standard_normal(_X.shape).astype(np.float32)
    ours, theirs = _gradients(CASES[name], _NAN_X, grad)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_clamp_with_tensor_bounds_and_nans_shares_as_torch():
    """A NaN x gives x all of the gradient and, against one bound, that bound too; a NaN bound gives x all."""
    x = np.array([np.nan, 0.5, 2.0, 1.0, 1.0, 0.5], np.float32)
    lo = np.array([0.0, np.nan, 0.0, 1.0, 2.0, 0.0], np.float32)
    hi = np.array([1.0, 1.0, np.nan, 1.0, 0.0, np.nan], np.float32)
    grad = np.arange(1, 7, dtype=np.float32)
    for bounds in [(lo, hi), (lo, None), (None, hi)]:
        results = []
        for lib in (engine, torch):
            tensors = [None if b is None else lib.tensor(b, requires_grad=True) for b in (x,) + bounds]
            lib.clamp(*tensors).backward(lib.tensor(grad))
            results.append([t.grad.numpy() for t in tensors if t is not None])
        for ours, theirs in zip(*results):
            np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", ["relu", "hardtanh", "clamp", "where", "masked_fill", "maximum"])
def test_masked_positions_on_cuda(cuda, name):
    ours, theirs = _gradients(CASES[name], _X, _GRAD, device="cuda")
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_relu_gradient_of_a_large_array_in_blocks():
    """The CPU kernel's threaded, cache-blocked path (arrays above a few MB), with non-finite gradients in
    several blocks."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 64, 64, 64)).astype(np.float32)
    grad = rng.standard_normal(x.shape).astype(np.float32)
    grad.reshape(-1)[::100_003] = np.inf
    grad.reshape(-1)[7::200_003] = np.nan
    ours, theirs = _gradients(lambda L, F, t: L.relu(t), x, grad)
    np.testing.assert_array_equal(ours, theirs)
