"""engine.nn.utils gradient clipping and parameter/vector conversion against torch.nn.utils."""
import math

import numpy as np
import pytest
import torch
from op_check import assert_close

import engine
import engine.nn.utils
from engine.nn.utils import (clip_grad_norm_, clip_grad_value_, get_total_norm, parameters_to_vector,
                             vector_to_parameters)

SHAPES = [(4, 3), (5,), (2, 1, 3), (6,)]


def _pair(scale=1.0, no_grad_index=2, dtype=np.float32):
    """Parameters with identical gradients on both sides; one parameter has no gradient."""
    rng = np.random.default_rng(7)
    ours, theirs = [], []
    for i, shape in enumerate(SHAPES):
        value = rng.standard_normal(shape).astype(dtype)
        grad = (scale * rng.standard_normal(shape)).astype(dtype)
        a = engine.tensor(value, requires_grad=True)
        b = torch.nn.Parameter(torch.tensor(value))
        if i != no_grad_index:
            a.grad = engine.tensor(grad)
            b.grad = torch.tensor(grad)
        ours.append(a)
        theirs.append(b)
    return ours, theirs


def _assert_grads(ours, theirs, rtol=1e-6):
    for a, b in zip(ours, theirs):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            assert_close(a.grad.numpy(), b.grad.numpy(), rtol=rtol, what="clipped grad")


@pytest.mark.parametrize("norm_type", [2, 2.0, 1, math.inf, "inf", 3.5, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    norm_type = float(norm_type)
    ours, theirs = _pair()
    total_ours = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(total_ours, engine.Tensor) and total_ours.shape == ()
    assert total_ours.dtype == engine.float32
    assert_close(total_ours.numpy(), total_theirs.numpy(), rtol=1e-6, what="total norm")
    _assert_grads(ours, theirs)


def test_clip_grad_norm_float64_and_generator_and_single_tensor():
    ours, theirs = _pair(dtype=np.float64)
    total_ours = clip_grad_norm_((p for p in ours), 0.3)
    total_theirs = torch.nn.utils.clip_grad_norm_((p for p in theirs), 0.3)
    assert total_ours.dtype == engine.float64
    assert_close(total_ours.numpy(), total_theirs.numpy(), rtol=1e-12)
    _assert_grads(ours, theirs, rtol=1e-12)
    ours, theirs = _pair()
    total_ours = clip_grad_norm_(ours[0], 0.1, norm_type=1)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs[0], 0.1, norm_type=1)
    assert_close(total_ours.numpy(), total_theirs.numpy(), rtol=1e-6)
    _assert_grads(ours, theirs)


def test_clip_grad_norm_without_grads_and_in_place():
    ours, _ = _pair(no_grad_index=0)
    total = clip_grad_norm_(ours[:1], 1.0)
    assert total.item() == 0.0
    arrays = [p.grad._data for p in ours[1:]]
    clip_grad_norm_(ours, 0.01)
    assert all(p.grad._data is a for p, a in zip(ours[1:], arrays))


def test_clip_grad_norm_nonfinite():
    ours, theirs = _pair()
    ours[0].grad._data[0, 0] = np.inf
    theirs[0].grad[0, 0] = math.inf
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    total_ours = clip_grad_norm_(ours, 1.0)
    total_theirs = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert math.isinf(total_ours.item()) and math.isinf(total_theirs.item())
    _assert_grads(ours, theirs)


def test_get_total_norm_matches_torch():
    ours, theirs = _pair(scale=3.0)
    grads_ours = [p.grad for p in ours if p.grad is not None]
    grads_theirs = [p.grad for p in theirs if p.grad is not None]
    for norm_type in (2.0, 1.0, math.inf):
        assert_close(get_total_norm(grads_ours, norm_type).numpy(),
                     torch.nn.utils.get_total_norm(grads_theirs, norm_type).numpy(), rtol=1e-6)


@pytest.mark.parametrize("clip_value", [0.3, 1, 10.0])
def test_clip_grad_value_matches_torch(clip_value):
    ours, theirs = _pair()
    clip_grad_value_(ours, clip_value)
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    _assert_grads(ours, theirs, rtol=0)


def test_parameters_to_vector_and_back():
    ours, theirs = _pair()
    vec_ours = parameters_to_vector(ours)
    vec_theirs = torch.nn.utils.parameters_to_vector(theirs)
    np.testing.assert_array_equal(vec_ours.detach().numpy(), vec_theirs.detach().numpy())
    new = np.arange(vec_theirs.numel(), dtype=np.float32)
    vec = engine.tensor(new)
    vector_to_parameters(vec, ours)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        assert np.shares_memory(a._data, vec._data)  # as torch's: each parameter's .data becomes a view of vec
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: ndarray"):
        vector_to_parameters(new, ours)
