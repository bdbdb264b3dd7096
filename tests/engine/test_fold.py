"""``unfold`` and ``fold`` (and ``nn.Unfold``/``nn.Fold``) against torch: odd geometries forward and backward,
unbatched inputs, the fold-of-unfold identity that patch models rely on, torch's errors, and the GPU."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from op_check import check_op

import engine
import engine.nn.functional as F

GEOMETRIES = [dict(kernel_size=2), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
              dict(kernel_size=3, padding=(0, 2), stride=3), dict(kernel_size=(1, 4), dilation=2, stride=(1, 2))]


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("geometry", GEOMETRIES)
def test_unfold_and_fold_match_torch(geometry):
    x = _randn(2, 3, 7, 9)
    check_op(lambda a: F.unfold(a, **geometry), lambda a: TF.unfold(a, **geometry), [x])
    cols = TF.unfold(torch.from_numpy(x), **geometry).numpy()
    check_op(lambda c: F.fold(c, (7, 9), **geometry), lambda c: TF.fold(c, (7, 9), **geometry), [cols * 0.5 + 1])
    check_op(lambda a: F.unfold(a, **geometry), lambda a: TF.unfold(a, **geometry), [x[0]])  # unbatched
    check_op(lambda c: F.fold(c, (7, 9), **geometry), lambda c: TF.fold(c, (7, 9), **geometry), [cols[0]])


def test_fold_of_unfold_counts_each_pixel_s_blocks():
    """fold(unfold(x)) / fold(unfold(ones)) == x: how sliding-window models average their patches."""
    x = engine.from_numpy(_randn(1, 2, 6, 5))
    args = dict(kernel_size=3, padding=1, stride=2)
    counts = F.fold(F.unfold(engine.ones(1, 2, 6, 5), **args), (6, 5), **args)
    np.testing.assert_allclose((F.fold(F.unfold(x, **args), (6, 5), **args) / counts).numpy(), x.numpy(), rtol=1e-6)


def test_modules_and_errors_as_torch():
    x = _randn(2, 3, 5, 6)
    for lib in (engine, torch):
        assert repr(lib.nn.Unfold((2, 3), padding=1)) == "Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=1)"
        assert tuple(lib.nn.Fold((4, 4), 2)(lib.ones(1, 8, 9)).shape) == (1, 2, 4, 4)
    calls = [lambda fn, lib: fn.fold(lib.ones(2, 7, 9), (4, 4), 2),
             lambda fn, lib: fn.fold(lib.ones(2, 8, 10), (4, 4), 2),
             lambda fn, lib: fn.unfold(lib.from_numpy(x), 7),
             lambda fn, lib: fn.unfold(lib.from_numpy(x), 2, stride=0)]
    for call in calls:
        with pytest.raises(RuntimeError) as theirs:
            call(TF, torch)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
            call(F, engine)


def test_on_the_gpu(cuda):
    geometry = GEOMETRIES[1]
    check_op(lambda a: F.unfold(a, **geometry), lambda a: TF.unfold(a, **geometry), [_randn(2, 3, 7, 9)], device="cuda")
    cols = _randn(2, 18, 28)
    check_op(lambda c: F.fold(c, (7, 9), **geometry), lambda c: TF.fold(c, (7, 9), **geometry), [cols], device="cuda")
