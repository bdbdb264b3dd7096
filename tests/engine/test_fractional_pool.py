"""Fractional max pooling (2-D and 3-D) against PyTorch with the same ``_random_samples`` on both sides:
values, indices, gradients, output sizes and ratios, the ``_with_indices`` names, modules and torch's errors."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(23)
TF = torch.nn.functional


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def samples(n, c, nd, dtype=np.float32):
    return rng.random((n, c, nd)).astype(dtype)


def both(name, **kwargs):
    """Our and torch's ``name`` with ``kwargs``; the samples (the second input) never take gradients."""
    return (lambda x, u: getattr(F, name)(x, _random_samples=u.detach(), **kwargs),
            lambda x, u: getattr(TF, name)(x, _random_samples=u.detach(), **kwargs))


@pytest.mark.parametrize("kwargs,dtype", [
    (dict(kernel_size=2, output_size=(5, 4)), np.float32),
    (dict(kernel_size=(3, 2), output_size=4, return_indices=True), np.float32),
    (dict(kernel_size=3, output_ratio=(0.5, 0.7), return_indices=True), np.float64),
    (dict(kernel_size=2, output_ratio=(0.4, 0.4)), np.float64),
    (dict(kernel_size=(2, 3), output_size=(10, 5), return_indices=True), np.float32),  # a window per row
    (dict(kernel_size=3, output_size=1, return_indices=True), np.float32),  # one window at the end
])
def test_fractional_max_pool2d_matches_torch(kwargs, dtype):
    """Window starts are computed in the samples' dtype as torch does; overlapping windows add gradients."""
    ours, theirs = both("fractional_max_pool2d", **kwargs)
    check_op(ours, theirs, [rand(2, 3, 11, 13, dtype=dtype), samples(2, 3, 2, dtype)])
    check_op(ours, theirs, [rand(3, 11, 13, dtype=dtype), samples(1, 3, 2, dtype)])


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2, output_size=(3, 4, 2), return_indices=True),
    dict(kernel_size=(2, 3, 2), output_ratio=(0.5, 0.6, 0.7)),
    dict(kernel_size=(1, 2, 3), output_size=(6, 3, 1), return_indices=True),
])
def test_fractional_max_pool3d_matches_torch(kwargs):
    ours, theirs = both("fractional_max_pool3d", **kwargs)
    check_op(ours, theirs, [rand(2, 2, 7, 9, 8), samples(2, 2, 3)])
    check_op(ours, theirs, [rand(2, 7, 9, 8), samples(1, 2, 3)])


def test_extra_samples_and_the_with_indices_names():
    """Samples beyond the batch are ignored; ``*_with_indices`` returns indices even when not asked."""
    x, u = rand(2, 3, 9, 9), samples(4, 3, 2)
    check_op(*both("fractional_max_pool2d_with_indices", kernel_size=2, output_size=4), [x, u])
    check_op(*both("fractional_max_pool3d_with_indices", kernel_size=2, output_size=3, return_indices=False),
             [rand(2, 3, 5, 6, 7), samples(2, 3, 3)])


def test_ties_take_the_first_maximum_and_fresh_samples_are_drawn():
    """A constant input: every index is its window's first position, as torch's; without samples each call
    draws its own (the values are the same whatever the windows)."""
    x = np.ones((2, 3, 9, 9), np.float32)
    u = samples(2, 3, 2)
    ours = F.fractional_max_pool2d(engine.from_numpy(x), 3, 4, return_indices=True,
                                   _random_samples=engine.from_numpy(u))[1]
    theirs = TF.fractional_max_pool2d(torch.from_numpy(x), 3, 4, return_indices=True,
                                      _random_samples=torch.from_numpy(u))[1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    y = F.fractional_max_pool2d(engine.from_numpy(x), 2, output_ratio=0.5)
    assert tuple(y.shape) == (2, 3, 4, 4) and y.dtype is engine.float32
    np.testing.assert_array_equal(y.numpy(), 1)


@pytest.mark.parametrize("nd", [2, 3])
def test_modules(nd):
    cls, ref = getattr(engine.nn, f"FractionalMaxPool{nd}d"), getattr(torch.nn, f"FractionalMaxPool{nd}d")
    u = samples(2, 3, nd)
    ours = cls(2, output_size=3, return_indices=True, _random_samples=engine.from_numpy(u))
    theirs = ref(2, output_size=3, return_indices=True, _random_samples=torch.from_numpy(u))
    assert repr(ours) == repr(theirs)
    assert ours.kernel_size == theirs.kernel_size and ours.output_size == theirs.output_size
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["_random_samples"]
    check_op(ours, theirs, [rand(2, 3, *[7] * nd)])
    by_ratio = cls(3, output_ratio=0.5)
    assert by_ratio.output_ratio == (0.5,) * nd and by_ratio.output_size is None
    assert list(by_ratio.state_dict()) == []
    assert tuple(by_ratio(engine.randn(2, 3, *[8] * nd)).shape) == (2, 3) + (4,) * nd


@pytest.mark.parametrize("kwargs", [dict(), dict(output_ratio=1.2), dict(output_ratio=0.2, output_size=2)])
def test_module_argument_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as theirs:
        torch.nn.FractionalMaxPool2d(3, **kwargs)
    with pytest.raises(ValueError) as ours:
        engine.nn.FractionalMaxPool2d(3, **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name,shape,kwargs,error", [
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=(8, 8)), RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=(9, 3)), RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2), ValueError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_ratio=(0.5, 0.5, 0.5)), ValueError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=(3, 3, 3)), RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=(2, 2, 2), output_size=3), RuntimeError),
    ("fractional_max_pool2d", (1, 2, 3, 9, 8), dict(kernel_size=2, output_size=3), RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=3, _random_samples=(1, 3, 2)),
     RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=3, _random_samples=(2, 2, 2)),
     RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=3, _random_samples=(2, 3, 1)),
     RuntimeError),
    ("fractional_max_pool2d", (2, 3, 9, 8), dict(kernel_size=2, output_size=3, _random_samples=(3, 2)),
     RuntimeError),
    ("fractional_max_pool3d", (2, 3, 9, 8, 7), dict(kernel_size=2, output_size=(9, 3, 3)), RuntimeError),
    ("fractional_max_pool3d", (2, 3, 9, 8, 7), dict(kernel_size=2, output_size=(3, 8, 3)), RuntimeError),
    ("fractional_max_pool3d", (2, 3, 9, 8, 7), dict(kernel_size=2, output_size=(8, 3, 3)), RuntimeError),
    ("fractional_max_pool3d", (2, 3, 9, 8, 7), dict(kernel_size=2, output_size=(8, 8)), RuntimeError),
    ("fractional_max_pool3d", (1, 2, 3, 9, 8, 7), dict(kernel_size=2, output_size=3), RuntimeError),
    ("fractional_max_pool3d", (2, 3, 9, 8, 7), dict(kernel_size=2, output_size=3, _random_samples=(2, 3, 2)),
     RuntimeError),
])
def test_errors_match_torch(name, shape, kwargs, error):
    """Same type and message as torch (samples given as a shape here, drawn for both sides)."""
    x = rand(*shape)
    theirs_kwargs, ours_kwargs = dict(kwargs), dict(kwargs)
    if "_random_samples" in kwargs:
        u = rng.random(kwargs["_random_samples"]).astype(np.float32)
        theirs_kwargs["_random_samples"], ours_kwargs["_random_samples"] = torch.from_numpy(u), engine.from_numpy(u)
    with pytest.raises(error) as theirs:
        getattr(TF, name)(torch.from_numpy(x), **theirs_kwargs)
    with pytest.raises(error) as ours:
        getattr(F, name)(engine.from_numpy(x), **ours_kwargs)
    assert str(ours.value) == str(theirs.value)


def test_on_the_gpu(cuda):
    ours, theirs = both("fractional_max_pool2d", kernel_size=(3, 2), output_size=(4, 5), return_indices=True)
    check_op(ours, theirs, [rand(2, 3, 11, 13), samples(2, 3, 2)], device="cuda")
