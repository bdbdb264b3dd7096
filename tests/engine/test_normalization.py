"""Normalisation functionals against PyTorch: values, input/weight/bias grads, running stats, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import assert_close, check_op, noncontiguous

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32, scale=1.0, shift=0.0):
    return (RNG.standard_normal(shape) * scale + shift).astype(dtype)


def stats(c, dtype=np.float32):
    """Running mean and (positive) running variance."""
    return randn(c, dtype=dtype), (RNG.random(c) + 0.5).astype(dtype)


# ---- batch norm --------------------------------------------------------------------------------
# The last two have rows (planes) long enough for the blocked kernels, one in several threads' blocks.
BN_SHAPES = [(4, 3), (5, 3, 7), (2, 3, 5, 6), (3, 2, 3, 4, 5), (3, 4, 1, 1), (2, 3, 23, 29), (4, 32, 45, 50)]


@pytest.mark.parametrize("shape", BN_SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(shape, affine):
    c = shape[1]
    x, w, b = randn(*shape, scale=2.0, shift=1.5), randn(c), randn(c)
    args = [x, w, b] if affine else [x, None, None]
    check_op(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
             lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), args, rtol=1e-5)


@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_eval(shape):
    c = shape[1]
    x, w, b = randn(*shape), randn(c), randn(c)
    rm, rv = stats(c)
    check_op(lambda x, w, b: F.batch_norm(x, engine.tensor(rm), engine.tensor(rv), w, b, False),
             lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, False), [x, w, b])


def test_batch_norm_noncontiguous_float64_and_bias_only():
    x = noncontiguous(randn(3, 4, 5, 6, dtype=np.float64))
    w, b = randn(4, dtype=np.float64), randn(4, dtype=np.float64)
    assert not x.flags.c_contiguous
    check_op(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
             lambda x, w, b: TF.batch_norm(x, None, None, w, b, True), [x, w, b], rtol=1e-10)
    check_op(lambda x, b: F.batch_norm(x, None, None, None, b, True, eps=1e-3),
             lambda x, b: TF.batch_norm(x, None, None, None, b, True, eps=1e-3), [x, b], rtol=1e-10)
    rm, rv = stats(4, np.float64)
    check_op(lambda x, w: F.batch_norm(x, engine.tensor(rm), engine.tensor(rv), w, None),
             lambda x, w: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, None), [x, w], rtol=1e-10)


def test_batch_norm_large_mean_is_accurate():
    x = randn(8, 16, 9, 9, scale=0.1, shift=50.0)
    w, b = randn(16), randn(16)
    check_op(lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
             lambda x, w, b: TF.batch_norm(x, None, None, w, b, True), [x, w, b], rtol=1e-4)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5, 5), (2, 3, 2, 3, 4)])
def test_batch_norm_running_stats_three_updates(shape):
    c = shape[1]
    rm, rv = stats(c)
    e_rm, e_rv, t_rm, t_rv = engine.tensor(rm), engine.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    for step in range(3):
        x = randn(*shape, shift=step)
        F.batch_norm(engine.tensor(x), e_rm, e_rv, training=True, momentum=0.3)
        TF.batch_norm(torch.tensor(x), t_rm, t_rv, training=True, momentum=0.3)
        assert_close(e_rm.numpy(), t_rm.numpy(), 1e-6, f"running_mean after {step + 1} updates")
        assert_close(e_rv.numpy(), t_rv.numpy(), 1e-6, f"running_var after {step + 1} updates")
    assert e_rm._version == 3 and e_rv._version == 3


def test_batch_norm_cumulative_average():
    """momentum=None in the module: the factor it passes is 1 / num_batches_tracked."""
    rm, rv = stats(3)
    e_rm, e_rv, t_rm, t_rv = engine.tensor(rm), engine.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    batches = [randn(4, 3, 2, 2, shift=i) for i in range(3)]
    for n, x in enumerate(batches, 1):
        F.batch_norm(engine.tensor(x), e_rm, e_rv, training=True, momentum=1.0 / n)
        TF.batch_norm(torch.tensor(x), t_rm, t_rv, training=True, momentum=1.0 / n)
    all_x = np.stack(batches)
    assert_close(e_rm.numpy(), all_x.mean(axis=(0, 1, 3, 4)), 1e-5, "cumulative mean")
    assert_close(e_rm.numpy(), t_rm.numpy(), 1e-6, "running_mean")
    assert_close(e_rv.numpy(), t_rv.numpy(), 1e-6, "running_var")


def test_batch_norm_module_parity():
    """The same functional drives engine.nn.BatchNorm2d like torch's, train then eval."""
    x = randn(4, 3, 5, 5)
    ours, ref = engine.nn.BatchNorm2d(3, momentum=None), torch.nn.BatchNorm2d(3, momentum=None)
    for _ in range(2):
        ours(engine.tensor(x))
        ref(torch.tensor(x))
    ours.eval(), ref.eval()
    assert_close(ours(engine.tensor(x)).detach().numpy(), ref(torch.tensor(x)).detach().numpy(), 1e-5)
    assert_close(ours.running_var.numpy(), ref.running_var.numpy(), 1e-6, "running_var")


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, "
                                         r"got input size .*\[1, 3\]"):
        F.batch_norm(engine.randn(1, 3), engine.zeros(3), engine.ones(3), training=True)
    with pytest.raises(ValueError, match=r"got input size .*\[1, 3, 1, 1\]"):
        F.batch_norm(engine.randn(1, 3, 1, 1), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(engine.randn(4, 3), engine.zeros(4), engine.ones(4), training=True)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(engine.randn(4, 3), None, None, engine.ones(4), training=True)
    with pytest.raises(RuntimeError, match="running_mean must be defined in evaluation mode"):
        F.batch_norm(engine.randn(4, 3), None, None)


def test_batch_norm_no_grad_saves_nothing():
    x = engine.randn(4, 3, 2, 2)
    with engine.no_grad():
        y = F.batch_norm(x, None, None, engine.ones(3).requires_grad_(), None, training=True)
    assert y.grad_fn is None and not y.requires_grad


# ---- layer norm --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((2, 3, 5), 1), ((2, 3, 5), 2), ((2, 3, 4, 5), 3),
                                     ((3, 1, 6), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(shape, k, affine):
    norm = shape[len(shape) - k:]
    args = [randn(*shape, scale=3.0, shift=-1.0), randn(*norm), randn(*norm)] if affine \
        else [randn(*shape), None, None]
    check_op(lambda x, w, b: F.layer_norm(x, norm, w, b, 1e-5),
             lambda x, w, b: TF.layer_norm(x, norm, w, b, 1e-5), args, rtol=1e-5)


def test_layer_norm_int_shape_noncontiguous_float64():
    x = noncontiguous(randn(3, 4, 6, dtype=np.float64))
    w, b = randn(6, dtype=np.float64), randn(6, dtype=np.float64)
    check_op(lambda x, w, b: F.layer_norm(x, 6, w, b), lambda x, w, b: TF.layer_norm(x, (6,), w, b),
             [x, w, b], rtol=1e-10)
    check_op(lambda x, w: F.layer_norm(x, [6], w, eps=0.1), lambda x, w: TF.layer_norm(x, [6], w, eps=0.1),
             [x, w], rtol=1e-10)


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[6\], expected input with shape \[\*, 6\], "
                                           r"but got input of size.*\[2, 6, 4\]"):
        F.layer_norm(engine.randn(2, 6, 4), (6,))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape, but got "
                                           r"weight of shape \[4\] and normalized_shape = \[6, 4\]"):
        F.layer_norm(engine.randn(2, 6, 4), (6, 4), engine.ones(4))


# ---- group and instance norm -------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [(s, g) for s in [(2, 6, 5), (3, 6, 4, 3), (2, 6), (1, 6, 2, 3, 2)]
                                          for g in (1, 2, 6) if np.prod(s[1:]) > g])
def test_group_norm(shape, groups):
    """Groups of one value are left out: torch's output and grad there are rounding noise."""
    x, w, b = randn(*shape, scale=2.0, shift=0.5), randn(6), randn(6)
    check_op(lambda x, w, b: F.group_norm(x, groups, w, b, 1e-5),
             lambda x, w, b: TF.group_norm(x, groups, w, b, 1e-5), [x, w, b], rtol=1e-5)


def test_group_norm_no_affine_noncontiguous_float64():
    x = noncontiguous(randn(3, 4, 5, 6, dtype=np.float64))
    check_op(lambda x: F.group_norm(x, 2), lambda x: TF.group_norm(x, 2), [x], rtol=1e-10)


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, "
                                           r"but got input of shape \[2, 6, 4\] and num_groups=4"):
        F.group_norm(engine.randn(2, 6, 4), 4)
    with pytest.raises(RuntimeError, match=r"got weight of shape \[5\] and input of shape \[2, 6, 4\]"):
        F.group_norm(engine.randn(2, 6, 4), 3, engine.ones(5))


@pytest.mark.parametrize("shape", [(2, 3, 7), (3, 4, 5, 6), (2, 2, 3, 4, 3)])
def test_instance_norm(shape):
    c = shape[1]
    x, w, b = randn(*shape, shift=2.0), randn(c), randn(c)
    check_op(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
             lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), [x, w, b], rtol=1e-5)


def test_instance_norm_running_stats():
    rm, rv = stats(3)
    e_rm, e_rv, t_rm, t_rv = engine.tensor(rm), engine.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    for step in range(2):
        x = randn(4, 3, 5, 2, shift=step)
        out = F.instance_norm(engine.tensor(x), e_rm, e_rv, momentum=0.2)
        ref = TF.instance_norm(torch.tensor(x), t_rm, t_rv, momentum=0.2)
        assert_close(out.numpy(), ref.numpy(), 1e-5)
    assert_close(e_rm.numpy(), t_rm.numpy(), 1e-6, "running_mean")
    assert_close(e_rv.numpy(), t_rv.numpy(), 1e-6, "running_var")
    x = randn(2, 3, 4)
    check_op(lambda x: F.instance_norm(x, e_rm, e_rv, use_input_stats=False),
             lambda x: TF.instance_norm(x, t_rm, t_rv, use_input_stats=False), [x])


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 spatial element when training, got input size "
                                         r".*\[2, 3, 1\]"):
        F.instance_norm(engine.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var to be defined when "
                                           "use_input_stats is false"):
        F.instance_norm(engine.randn(2, 3, 4), use_input_stats=False)


# ---- RMS norm and local response norm ----------------------------------------------------------
@pytest.mark.parametrize("shape,k", [((4, 7), 1), ((2, 3, 5), 2)])
def test_rms_norm(shape, k):
    norm = shape[len(shape) - k:]
    x, w = randn(*shape, shift=0.3), randn(*norm)
    check_op(lambda x, w: F.rms_norm(x, norm, w), lambda x, w: TF.rms_norm(x, norm, w), [x, w])
    check_op(lambda x: F.rms_norm(x, norm, eps=1e-2), lambda x: TF.rms_norm(x, norm, eps=1e-2), [x])


@pytest.mark.parametrize("shape", [(2, 7, 5), (2, 6, 3, 4), (1, 5, 2, 2, 3)])
@pytest.mark.parametrize("size", [1, 2, 5])
def test_local_response_norm(shape, size):
    x = randn(*shape, scale=2.0)
    check_op(lambda x: F.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5),
             lambda x: TF.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5), [x], rtol=1e-5)


def test_local_response_norm_error():
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"):
        F.local_response_norm(engine.randn(2, 3), 2)


@pytest.mark.parametrize("make", [lambda nn: nn.InstanceNorm2d(4), lambda nn: nn.GroupNorm(2, 4, affine=False),
                                  lambda nn: nn.LayerNorm([5, 6], elementwise_affine=False),
                                  lambda nn: nn.RMSNorm([6], elementwise_affine=False),
                                  lambda nn: nn.BatchNorm2d(4, affine=False).double()])
def test_norm_without_affine_then_an_inplace_op(make):
    """An in-place op on a norm's output (InstanceNorm2d then ReLU(inplace=True), as in RAFT's encoders) leaves
    the norm's gradient as torch's: the normalized array backward reads is not the output's memory."""
    x = np.random.default_rng(0).standard_normal((2, 4, 5, 6))
    weights = np.arange(x.size).reshape(x.shape) * 0.01
    grads = []
    for lib in (torch, engine):
        leaf = lib.from_numpy(x.copy()).requires_grad_()
        (make(lib.nn)(leaf).relu_() * lib.from_numpy(weights)).sum().backward()
        grads.append(leaf.grad.numpy())
    assert_close(grads[1], grads[0], 1e-10)
