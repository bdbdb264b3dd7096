"""Max unpooling (1-D to 3-D, from max pooling's indices) and power-average (LP) pooling against PyTorch:
values, gradients, output sizes, modules and torch's errors."""
import re

import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(17)
TF = torch.nn.functional

POOLS = {1: (F.max_pool1d, TF.max_pool1d), 2: (F.max_pool2d, TF.max_pool2d), 3: (F.max_pool3d, TF.max_pool3d)}
UNPOOLS = {1: (F.max_unpool1d, TF.max_unpool1d), 2: (F.max_unpool2d, TF.max_unpool2d),
           3: (F.max_unpool3d, TF.max_unpool3d)}
LP_POOLS = {1: (F.lp_pool1d, TF.lp_pool1d), 2: (F.lp_pool2d, TF.lp_pool2d), 3: (F.lp_pool3d, TF.lp_pool3d)}
SHAPES = {1: (2, 3, 11), 2: (2, 3, 9, 7), 3: (2, 2, 6, 6, 4)}


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def torch_pooled(nd, shape, window):
    """Values and indices of torch's max pooling of a random input, as numpy (the unpooling inputs)."""
    values, indices = POOLS[nd][1](torch.from_numpy(rand(*shape)), return_indices=True, **window)
    return values.numpy(), indices.numpy()


@pytest.mark.parametrize("nd,window,output_size", [
    (1, dict(kernel_size=3, stride=2, padding=1), None),
    (1, dict(kernel_size=2), [11]),
    (2, dict(kernel_size=3, stride=2, padding=1), None),
    (2, dict(kernel_size=(2, 3), stride=(2, 1)), (9, 7)),
    (3, dict(kernel_size=2, stride=2), None),
    (3, dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1)), [6, 6, 4]),
])
def test_max_unpool_matches_torch(nd, window, output_size):
    """Values land at the pooled indices, gradients gather there; batched and unbatched."""
    ours, theirs = UNPOOLS[nd]
    values, indices = torch_pooled(nd, SHAPES[nd], window)
    check_op(lambda v, i: ours(v, i, output_size=output_size, **window),
             lambda v, i: theirs(v, i, output_size=output_size, **window), [values, indices])
    check_op(lambda v, i: ours(v, i, output_size=output_size, **window),
             lambda v, i: theirs(v, i, output_size=output_size, **window), [values[0], indices[0]])


def test_max_unpool_inverts_our_own_pooling():
    """Unpooling engine's max_pool2d/3d output puts every maximum back in place (float64 too)."""
    x = engine.from_numpy(rand(2, 3, 8, 6, dtype=np.float64))
    y, i = F.max_pool2d(x, 2, return_indices=True)
    restored = F.max_unpool2d(y, i, 2)
    np.testing.assert_array_equal(restored.numpy()[restored.numpy() != 0], x.numpy()[restored.numpy() != 0])
    assert restored.dtype is engine.float64
    x3 = engine.from_numpy(rand(1, 2, 4, 4, 6))
    y3, i3 = F.max_pool3d(x3, 2, return_indices=True)
    assert np.count_nonzero(F.max_unpool3d(y3, i3, 2).numpy()) == y3.numel()


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_modules(nd):
    cls = getattr(engine.nn, f"MaxUnpool{nd}d")
    ref = getattr(torch.nn, f"MaxUnpool{nd}d")
    ours, theirs = cls(2, stride=2), ref(2, stride=2)
    assert repr(ours) == repr(theirs)
    assert ours.kernel_size == theirs.kernel_size and ours.padding == theirs.padding
    assert list(ours.state_dict()) == []
    values, indices = torch_pooled(nd, SHAPES[nd], dict(kernel_size=2))
    size = [n * 2 + 1 for n in values.shape[2:]]
    check_op(lambda v, i: ours(v, i, size), lambda v, i: theirs(v, i, size), [values, indices])


@pytest.mark.parametrize("call,error", [
    (lambda m, v, i: m.max_unpool2d(v, i.int(), 2), RuntimeError),  # indices not int64
    (lambda m, v, i: m.max_unpool2d(v, i[:, :, :1], 2), RuntimeError),  # shapes differ
    (lambda m, v, i: m.max_unpool2d(v, i + 100, 2), RuntimeError),  # index off the output
    (lambda m, v, i: m.max_unpool2d(v[0, 0], i[0, 0], 2), RuntimeError),  # 2-D input
    (lambda m, v, i: m.max_unpool3d(v[0], i[0], 2), RuntimeError),  # 3-D input
    (lambda m, v, i: m.max_unpool1d(v[0, 0], i[0, 0], 2), RuntimeError),  # 2-D after the unit width
    (lambda m, v, i: m.max_unpool2d(v, i, 2, output_size=(1, 2, 3)), ValueError),  # 3 sizes
    (lambda m, v, i: m.max_unpool2d(v, i, 2, output_size=(9, 9)), ValueError),  # a stride off the default
])
def test_max_unpool_errors_match_torch(call, error):
    x = rand(2, 3, 8, 6)
    values, indices = TF.max_pool2d(torch.from_numpy(x), 2, return_indices=True)
    with pytest.raises(error) as theirs:
        call(TF, values, indices)
    ev, ei = engine.from_numpy(values.numpy()), engine.from_numpy(indices.numpy())
    with pytest.raises(error) as ours:
        call(F, ev, ei)
    # torch names whichever bad index its threads meet first; the rest of the message is the same
    assert re.sub(r"index: \d+", "index: N", str(ours.value)) == re.sub(r"index: \d+", "index: N", str(theirs.value))


@pytest.mark.parametrize("nd,norm_type,window", [
    (1, 2.0, dict(kernel_size=3, stride=2)),
    (1, 3, dict(kernel_size=2, ceil_mode=True)),
    (2, 2.0, dict(kernel_size=3, stride=2)),
    (2, 1.5, dict(kernel_size=(2, 3), stride=(1, 2), ceil_mode=True)),
    (2, 3.0, dict(kernel_size=2)),
    (3, 2.0, dict(kernel_size=2, stride=(1, 2, 2))),
    (3, 1.0, dict(kernel_size=(3, 2, 2), ceil_mode=True)),
    (2, float("inf"), dict(kernel_size=3, stride=2)),
    (3, -float("inf"), dict(kernel_size=2)),
])
def test_lp_pool_matches_torch(nd, norm_type, window):
    """Every norm (odd ones give NaN for negative sums, as torch), ceil_mode, infinite norms; batched and
    unbatched. Fractional norms raise negative inputs to NaN in both, so those run on positive inputs."""
    ours, theirs = LP_POOLS[nd]
    x = rand(*SHAPES[nd])
    if np.isfinite(norm_type) and norm_type % 1:
        x = np.abs(x) + 0.1
    check_op(lambda a: ours(a, norm_type, **window), lambda a: theirs(a, norm_type, **window), [x], rtol=1e-4)
    check_op(lambda a: ours(a, norm_type, **window), lambda a: theirs(a, norm_type, **window), [x[0]], rtol=1e-4)


def test_lp_pool_zero_sums_have_zero_gradient():
    """A window of zeros pools to 0 with a zero gradient (torch's sign * relu), not NaN."""
    x = rand(2, 3, 6, 6, dtype=np.float64)
    x[:, :, :2, :2] = 0
    check_op(lambda a: F.lp_pool2d(a, 2, 2), lambda a: TF.lp_pool2d(a, 2, 2), [x])


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pool_modules(nd):
    cls, ref = getattr(engine.nn, f"LPPool{nd}d"), getattr(torch.nn, f"LPPool{nd}d")
    ours, theirs = cls(2, 3, stride=2, ceil_mode=True), ref(2, 3, stride=2, ceil_mode=True)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == []
    check_op(ours, theirs, [rand(*SHAPES[nd])], rtol=1e-4)
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        cls(0, 2)
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        LP_POOLS[nd][0](engine.zeros(*SHAPES[nd]), 0, 2)


def test_on_the_gpu(cuda):
    values, indices = torch_pooled(2, (2, 3, 9, 7), dict(kernel_size=3, stride=2))
    check_op(lambda v, i: F.max_unpool2d(v, i, 3, 2), lambda v, i: TF.max_unpool2d(v, i, 3, 2), [values, indices],
             device="cuda")
    check_op(lambda a: F.lp_pool2d(a, 2, 3, 2), lambda a: TF.lp_pool2d(a, 2, 3, 2), [rand(2, 3, 9, 7)], rtol=1e-4,
             device="cuda")
