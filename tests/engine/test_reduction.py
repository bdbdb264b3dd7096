"""Reductions against PyTorch: values, dtypes and gradients over dims, keepdim, ties, zeros and edge cases."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


DIMS = [None, 0, -1, 1, (0, 2), (-1, 0, 1), ()]


def both(name, *args, **kwargs):
    """The same call on engine and torch: ``f(x)`` -> ``x.name(*args, **kwargs)``."""
    return (lambda x: getattr(engine, name)(x, *args, **kwargs),
            lambda x: getattr(torch, name)(x, *args, **kwargs))


def dim_kw(dim, keepdim):
    return {} if dim is None else {"dim": dim, "keepdim": keepdim}


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean", "var", "std", "logsumexp", "amax", "amin",
                                  "norm"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_multi_dim_reductions(name, dim, keepdim):
    if name == "logsumexp" and dim in (None, ()):
        dim = (0, 1, 2)
    # its own seed: the module's generator gives each test what the tests before it in this worker left, and a mean
    # of that draw near 0 once failed the relative tolerance on float32 rounding alone (7.27e-4 vs 7.27e-4 + 1e-8)
    x = noncontiguous(np.random.default_rng(5).uniform(-2.0, 2.0, (3, 4, 5)).astype(np.float32))
    args = (2,) if name == "norm" and isinstance(dim, tuple) and len(dim) > 2 else ()
    # torch's var/std backward with dim=() is inf (a torch quirk); compare values only there
    check_op(*both(name, *args, **dim_kw(dim, keepdim)), [x], grad=not (name in ("var", "std") and dim == ()))


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "amax", "norm", "logsumexp", "prod"])
def test_float64_and_size_one_dims(name):
    x = rand(1, 5, 1, 3, dtype=np.float64)
    check_op(*both(name, 1), [x], rtol=1e-10)
    check_op(*both(name, 2, keepdim=True), [x], rtol=1e-10)


def test_method_forms_and_positional_var_overloads():
    x = rand(4, 6)
    check_op(lambda t: t.var(0, False, True), lambda t: t.var(0, False, True), [x])
    check_op(lambda t: t.std(False), lambda t: t.std(False), [x])
    check_op(lambda t: t.var(dim=1, correction=0), lambda t: t.var(dim=1, correction=0), [x])
    check_op(lambda t: t.std(1, correction=2, keepdim=True), lambda t: t.std(1, correction=2, keepdim=True), [x])
    check_op(lambda t: t.sum(1, keepdim=True), lambda t: t.sum(1, keepdim=True), [x])
    check_op(lambda t: engine.var_mean(t, 1), lambda t: torch.var_mean(t, 1), [x])
    check_op(lambda t: engine.std_mean(t, (0, 1), unbiased=False), lambda t: torch.std_mean(t, (0, 1), unbiased=False),
             [x])


def test_std_of_constant_has_zero_grad():
    check_op(lambda t: t.std(1), lambda t: t.std(1), [np.ones((2, 4), np.float32)])


def test_half_scans_accumulate_in_float32():
    """torch's float16 cumsum / cumprod (and their gradients) run in float32, rounding each output once: a float16
    running sum rounded at every step drifts from it within a few hundred elements."""
    x = np.random.default_rng(3).uniform(-6, 6, (2, 300)).astype(np.float16)
    g = np.random.default_rng(4).uniform(-1, 1, (2, 300)).astype(np.float16)
    for op in ("cumsum", "cumprod"):
        e, t = engine.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
        ye, yt = getattr(e, op)(1), getattr(t, op)(1)
        assert ye.dtype == engine.float16
        np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
        ye.backward(engine.from_numpy(g))
        yt.backward(torch.from_numpy(g))
        assert e.grad.dtype == engine.float16
        np.testing.assert_allclose(e.grad.numpy().astype(np.float64), t.grad.numpy().astype(np.float64), rtol=2e-3,
                                   atol=1e-3, err_msg=op)


@pytest.mark.parametrize("dtype,sum_dtype", [(np.int32, "int64"), (np.bool_, "int64"), (np.uint8, "int64"),
                                             (np.int64, "int64"), (np.float16, "float16")])
def test_sum_dtypes(dtype, sum_dtype):
    x = (rand(3, 4) * 3).astype(dtype)
    for e, t in [(engine.from_numpy(x).sum(), torch.from_numpy(x).sum()),
                 (engine.from_numpy(x).sum(0), torch.from_numpy(x).sum(0)),
                 (engine.from_numpy(x).cumsum(1), torch.from_numpy(x).cumsum(1)),
                 (engine.from_numpy(x).prod(1), torch.from_numpy(x).prod(1))]:
        assert str(e.dtype) == "engine." + str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(e.numpy().astype(np.float64), t.numpy().astype(np.float64), rtol=1e-3)
    assert engine.from_numpy(x).sum().dtype is getattr(engine, sum_dtype)


def test_dtype_argument_and_int_mean():
    x = np.arange(6).reshape(2, 3)
    check_op(lambda t: t.sum(dtype=engine.float64), lambda t: t.sum(dtype=torch.float64), [x])
    check_op(lambda t: t.mean(1, dtype=engine.float32), lambda t: t.mean(1, dtype=torch.float32), [x])
    check_op(lambda t: engine.sum(t, 0, dtype=engine.int32), lambda t: torch.sum(t, 0, dtype=torch.int32),
             [rand(3, 2) * 5], grad=False)
    check_op(lambda t: t.sum(dtype=engine.float64), lambda t: t.sum(dtype=torch.float64), [rand(3, 2)])
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype. Input dtype must be either a "
                                           "floating point or complex dtype. Got: Long"):
        engine.tensor([1, 2, 3]).mean()
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        engine.tensor([1, 2, 3]).var()


def test_dim_errors():
    x = engine.zeros(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got -3"):
        x.max(-3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.mean(dim=(0, -2))
    with pytest.raises(RuntimeError, match="max\\(\\): Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        engine.zeros(0, 3).max()
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 0 to have non-zero size"):
        engine.zeros(0, 3).max(0)
    with pytest.raises(IndexError, match="argmax\\(\\): Expected reduction dim 0 to have non-zero size"):
        engine.zeros(0, 3).argmax(0)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0 to have non-zero size"):
        engine.zeros(0, 3).amax(0)


def test_empty_reductions():
    x = np.zeros((0, 3), np.float32)
    for name in ["sum", "mean", "prod", "std", "logsumexp", "norm"]:
        check_op(*both(name, 0), [x])
    check_op(lambda t: t.max(1), lambda t: t.max(1), [x])
    check_op(lambda t: t.median(1), lambda t: t.median(1), [x])
    check_op(lambda t: t.sum(), lambda t: t.sum(), [x])
    check_op(lambda t: t.norm(), lambda t: t.norm(), [x])


def test_zero_dim_input():
    x = np.array(1.5, np.float32)
    for fn in [lambda t: t.sum(0), lambda t: t.mean(-1), lambda t: t.max(0), lambda t: t.argmax(0),
               lambda t: t.cumsum(0), lambda t: t.median(0), lambda t: t.amax(), lambda t: t.prod(0)]:
        check_op(fn, fn, [x])


@pytest.mark.parametrize("name", ["max", "min", "median"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_values_indices(name, dim, keepdim):
    x = noncontiguous(rand(4, 7))
    out = check_op(lambda t: getattr(t, name)(dim, keepdim), lambda t: getattr(t, name)(dim, keepdim), [x])
    assert out[1].dtype is engine.int64
    res = getattr(engine.from_numpy(x), name)(dim=dim, keepdim=keepdim)
    values, indices = res
    assert res.values is values and res.indices is indices


def test_ties():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [0.5, 0.5, -1.0, 0.5]], np.float32)
    for fn in [lambda t: t.max(), lambda t: t.min(), lambda t: t.amax(1), lambda t: t.amin(0),
               lambda t: t.max(1), lambda t: t.min(1), lambda t: t.argmax(1), lambda t: t.argmin(),
               lambda t: t.median(), lambda t: t.norm(float("inf"), 1), lambda t: t.amax((0, 1), keepdim=True)]:
        check_op(fn, fn, [x])
    check_op(lambda t: t.median(), lambda t: t.median(), [np.array([1, 2, 2, 2, 4], np.float32)])
    check_op(lambda t: t.median(0), lambda t: t.median(0), [np.array([1, 2, 2, 2, 4], np.float32)])


def test_max_other_forms():
    a, b = rand(3, 4), rand(3, 4)
    check_op(lambda x, y: engine.max(x, y), lambda x, y: torch.max(x, y), [a, b])
    check_op(lambda x, y: x.min(y), lambda x, y: x.min(y), [a, b])
    check_op(lambda x, y: engine.max(x, other=y), lambda x, y: torch.max(x, other=y), [a, b])
    check_op(lambda x: engine.aminmax(x, dim=1), lambda x: torch.aminmax(x, dim=1), [a])
    res = engine.aminmax(engine.from_numpy(a))
    assert res.min.item() == a.min() and res.max.item() == a.max()


@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin(dim, keepdim):
    x = rand(3, 5)
    check_op(lambda t: t.argmax(dim, keepdim), lambda t: t.argmax(dim, keepdim), [x])
    check_op(lambda t: engine.argmin(t, dim=dim, keepdim=keepdim), lambda t: torch.argmin(t, dim=dim, keepdim=keepdim),
             [x])


def test_nan_propagation():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, 1.0]], np.float32)
    for fn in [lambda t: t.max(1), lambda t: t.argmax(1), lambda t: t.amax(1), lambda t: t.median(1),
               lambda t: t.nansum(1), lambda t: t.nanmean(1), lambda t: t.sum(1)]:
        check_op(fn, fn, [x])


@pytest.mark.parametrize("zeros", [0, 1, 2])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_with_zeros(zeros, dim):
    x = rand(3, 4, low=0.5, high=1.5)
    x[1, :zeros] = 0
    x[:zeros, 2] = 0
    kw = {} if dim is None else {"dim": dim}
    check_op(lambda t: t.prod(**kw), lambda t: t.prod(**kw), [x])
    check_op(lambda t: t.prod(1, True), lambda t: t.prod(1, True), [x.astype(np.float64)], rtol=1e-10)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod(dim):
    x = noncontiguous(rand(4, 5))
    check_op(lambda t: t.cumsum(dim), lambda t: t.cumsum(dim), [x])
    check_op(lambda t: engine.cumprod(t, dim), lambda t: torch.cumprod(t, dim), [x])
    x[1, 2] = x[3, 1] = x[3, 3] = 0
    x[0, 0] = x[0, 1] = 0
    check_op(lambda t: t.cumprod(dim), lambda t: t.cumprod(dim), [x.astype(np.float64)], rtol=1e-10)
    check_op(lambda t: t.cumsum(dim, dtype=engine.float64), lambda t: t.cumsum(dim, dtype=torch.float64), [x])


def test_logsumexp_is_stable():
    x = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, 0.0]], np.float32)
    check_op(lambda t: t.logsumexp(1), lambda t: t.logsumexp(1), [x])
    check_op(lambda t: engine.logsumexp(t, 0), lambda t: torch.logsumexp(t, 0), [np.arange(3)])


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, float("inf"), -float("inf"), 0, "fro"])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm(p, dim):
    x = rand(3, 4, 2)
    check_op(lambda t: t.norm(p, dim), lambda t: t.norm(p, dim), [x], rtol=1e-5)
    check_op(lambda t: engine.norm(t, p, dim, keepdim=True), lambda t: torch.norm(t, p, dim, keepdim=True),
             [x.astype(np.float64)], rtol=1e-10)


def test_norm_at_zero_and_dtype():
    check_op(lambda t: t.norm(), lambda t: t.norm(), [np.zeros(3, np.float32)])
    check_op(lambda t: t.norm(1), lambda t: t.norm(1), [np.zeros(3, np.float32)])
    check_op(lambda t: t.norm(3, 1, dtype=engine.float64), lambda t: t.norm(3, 1, dtype=torch.float64), [rand(2, 3)])
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        engine.tensor([1, 2]).norm()


@pytest.mark.parametrize("dim", [None, 0, (0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_all_any_count_nonzero(dim, keepdim):
    x = (rand(3, 4) > 0)
    x[0] = True
    for arr in (x, x.astype(np.uint8), x.astype(np.float32), x.astype(np.int64)):
        check_op(lambda t: t.all(**dim_kw(dim, keepdim)), lambda t: t.all(**dim_kw(dim, keepdim)), [arr])
        check_op(lambda t: engine.any(t, **dim_kw(dim, keepdim)), lambda t: torch.any(t, **dim_kw(dim, keepdim)), [arr])
        check_op(lambda t: t.count_nonzero(dim), lambda t: t.count_nonzero(dim), [arr])


def test_mean_of_noncontiguous_batch_matches():
    x = noncontiguous(rand(2, 3, 5, 7))
    check_op(lambda t: t.mean((-1, -2), keepdim=True), lambda t: t.mean((-1, -2), keepdim=True), [x])
    check_op(lambda t: t.sum([0, 2]), lambda t: t.sum([0, 2]), [x])
