"""3-d pooling (``max_pool3d``, ``avg_pool3d``, the adaptive pools and their modules) against torch: odd
geometries forward and backward, indices, ties and NaNs, unbatched inputs, torch's errors, and the GPU."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from op_check import check_op

import engine
import engine.nn.functional as F

WINDOWS = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
           dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0)),
           dict(kernel_size=(1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))]
SIZES = [2, (3, None, 4), (1, 1, 1), (4, 5, 3), (7, 8, 9)]


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _ties(*shape):
    """Small integers: most windows hold their maximum more than once."""
    return np.random.default_rng(1).integers(0, 3, shape).astype(np.float32)


@pytest.mark.parametrize("window", WINDOWS)
def test_max_pool3d_matches_torch(window):
    x = _randn(2, 3, 7, 8, 9)
    check_op(lambda a: F.max_pool3d(a, return_indices=True, **window),
             lambda a: TF.max_pool3d(a, return_indices=True, **window), [x])
    check_op(lambda a: F.max_pool3d(a, **window), lambda a: TF.max_pool3d(a, **window), [x[0]])  # unbatched


def test_max_pool3d_with_dilation_ties_and_nan():
    """Ties go to the first maximum in (depth, height, width) order, as in torch; a NaN wins its windows."""
    dilated = dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 2))
    check_op(lambda a: F.max_pool3d(a, return_indices=True, **dilated),
             lambda a: TF.max_pool3d(a, return_indices=True, **dilated), [_randn(2, 3, 7, 8, 9)])
    for window in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, stride=1)):
        check_op(lambda a: F.max_pool3d(a, return_indices=True, **window),
                 lambda a: TF.max_pool3d(a, return_indices=True, **window), [_ties(2, 3, 6, 7, 5)])
    check_op(lambda a: F.adaptive_max_pool3d(a, (4, 3, 2), True),
             lambda a: TF.adaptive_max_pool3d(a, (4, 3, 2), True), [_ties(2, 3, 6, 7, 5)])
    x = _randn(1, 2, 4, 4, 4)
    x[0, 1, 1, 2, 3] = np.nan
    check_op(lambda a: F.max_pool3d(a, 2, return_indices=True), lambda a: TF.max_pool3d(a, 2, return_indices=True),
             [x], grad=False)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("divisor_override", [None, 5])
def test_avg_pool3d_matches_torch(window, count_include_pad, divisor_override):
    args = dict(window, count_include_pad=count_include_pad, divisor_override=divisor_override)
    check_op(lambda a: F.avg_pool3d(a, **args), lambda a: TF.avg_pool3d(a, **args), [_randn(2, 3, 7, 8, 9)])


@pytest.mark.parametrize("size", SIZES)
def test_adaptive_pools_match_torch(size):
    x = _randn(2, 3, 7, 8, 9)
    check_op(lambda a: F.adaptive_avg_pool3d(a, size), lambda a: TF.adaptive_avg_pool3d(a, size), [x])
    check_op(lambda a: F.adaptive_max_pool3d(a, size, return_indices=True),
             lambda a: TF.adaptive_max_pool3d(a, size, return_indices=True), [x])
    check_op(lambda a: F.adaptive_avg_pool3d(a, size), lambda a: TF.adaptive_avg_pool3d(a, size), [x[1]])


def test_modules_as_torch():
    x = _randn(2, 3, 5, 6, 7)
    for make in (lambda nn: nn.MaxPool3d((1, 3, 3), (1, 2, 2), (0, 1, 1)), lambda nn: nn.MaxPool3d(2),
                 lambda nn: nn.AvgPool3d((2, 3, 3), 1), lambda nn: nn.AvgPool3d(2, ceil_mode=True),
                 lambda nn: nn.AdaptiveAvgPool3d((1, 1, 1)), lambda nn: nn.AdaptiveMaxPool3d(2)):
        ours, theirs = make(engine.nn), make(torch.nn)
        assert repr(ours) == repr(theirs)
        np.testing.assert_allclose(ours(engine.from_numpy(x)).numpy(), theirs(torch.from_numpy(x)).numpy(),
                                   rtol=1e-6, atol=1e-7)
    values, indices = engine.nn.MaxPool3d(2, return_indices=True)(engine.from_numpy(x))
    assert indices.dtype == engine.int64 and tuple(values.shape) == (2, 3, 2, 3, 3)


def test_errors_as_torch():
    x = _randn(2, 3, 5, 6, 7)
    calls = [lambda fn, lib: fn.max_pool3d(lib.ones(3, 4, 5), 2),
             lambda fn, lib: fn.max_pool3d(lib.from_numpy(x), 3, padding=2),
             lambda fn, lib: fn.max_pool3d(lib.from_numpy(x), 9),
             lambda fn, lib: fn.max_pool3d(lib.from_numpy(x), 2, stride=0),
             lambda fn, lib: fn.max_pool3d(lib.from_numpy(x), (2, 2)),
             lambda fn, lib: fn.avg_pool3d(lib.ones(3, 4, 5), 2),
             lambda fn, lib: fn.avg_pool3d(lib.from_numpy(x), 9),
             lambda fn, lib: fn.avg_pool3d(lib.from_numpy(x), (2, 2)),
             lambda fn, lib: fn.avg_pool3d(lib.from_numpy(x), 2, divisor_override=0),
             lambda fn, lib: fn.adaptive_avg_pool3d(lib.ones(3, 4, 5), 2),
             lambda fn, lib: fn.adaptive_max_pool3d(lib.ones(3, 4, 5), 2),
             lambda fn, lib: fn.adaptive_avg_pool3d(lib.from_numpy(x), (2, 2))]
    for call in calls:
        with pytest.raises(RuntimeError) as theirs:
            call(TF, torch)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value).splitlines()[0])):
            call(F, engine)
    assert tuple(F.max_pool3d(engine.ones(0, 2, 4, 4, 4), 2).shape) == (0, 2, 2, 2, 2)


def test_in_a_graph():
    """nn.Graph traces the two passes like any other ops."""
    model = engine.nn.Sequential(engine.nn.Conv3d(2, 3, 3, padding=1), engine.nn.MaxPool3d(2),
                                 engine.nn.AdaptiveAvgPool3d(1))

    class Graph(engine.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x = engine.from_numpy(_randn(2, 2, 5, 6, 7))
    with engine.no_grad():
        np.testing.assert_allclose(Graph()(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_on_the_gpu(cuda):
    x = _randn(2, 3, 7, 8, 9)
    window = WINDOWS[3]
    check_op(lambda a: F.max_pool3d(a, return_indices=True, **window),
             lambda a: TF.max_pool3d(a, return_indices=True, **window), [x], device="cuda")
    check_op(lambda a: F.avg_pool3d(a, **window), lambda a: TF.avg_pool3d(a, **window), [x], device="cuda")
    check_op(lambda a: F.adaptive_avg_pool3d(a, (4, 5, 3)), lambda a: TF.adaptive_avg_pool3d(a, (4, 5, 3)), [x],
             device="cuda")
