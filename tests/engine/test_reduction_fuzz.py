"""Reductions, scans, order statistics, quantiles and integration against torch where a differential fuzz found
them apart: gradients at inf, NaN and zeros (prod, var/std past their degrees of freedom, the norms, full
max/median with NaN), empty and 0-d inputs, bool inputs torch refuses, and torch's error messages.

Each case is a seeded sample of the sweep (/tmp fuzzers, not kept) that failed before its fix.
"""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow

_RNG = np.random.default_rng(24)
_INF, _NAN = np.inf, np.nan


def _specials(shape, zeros=0, infs=0, nans=0, seed=0):
    """Seeded normal values with the first few elements (flattened) set to 0, inf and NaN."""
    x = np.random.default_rng(seed).standard_normal(shape)
    flat = x.reshape(-1)
    flat[:zeros] = 0.0
    flat[zeros:zeros + infs] = _INF
    flat[zeros + infs:zeros + infs + nans] = _NAN
    return np.random.default_rng(seed + 1).permutation(flat).reshape(shape)


def _both(fn):
    """``fn(module)`` for engine and torch: the pair check_op and assert_same_error take."""
    return (lambda *a: fn(engine)(*a)), (lambda *a: fn(torch)(*a))


# ---- gradients at inf, NaN and zeros -------------------------------------------------------------
@pytest.mark.parametrize("dim", [None, 0, -1])
@pytest.mark.parametrize("x", [
    _specials((3, 4), zeros=1, infs=1),          # a zero somewhere: torch's product of the others everywhere
    _specials((3, 4), zeros=2, infs=1, seed=3),  # two zeros: a full product's gradient is 0, not a dim's
    _specials((1, 5), zeros=1, nans=1, seed=4),  # a size-1 dim: the product of no others is 1
], ids=["zero", "two-zeros", "size-1"])
def test_prod_gradient_with_inf_nan_and_zeros(x, dim):
    check_op(*_both(lambda m: lambda t: m.prod(t) if dim is None else m.prod(t, dim)), [x])


def test_prod_of_a_0d_infinity_passes_the_gradient():
    check_op(*_both(lambda m: lambda t: m.prod(t)), [np.array(_INF)])


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim, correction", [(None, 9), (None, 8), (1, 5), (1, 4), ((0, 1), 9), (1, 6)])
def test_var_std_past_their_degrees_of_freedom(name, dim, correction):
    """torch's forward clamps n - correction at 0; its backward does not with ``dim`` and, without, gives inf
    times the gradient (NaN where x is the mean): values, gradients and its warning."""
    x = np.round(_RNG.standard_normal((2, 4)), 1)
    x[0, :2] = x[0, :2].mean()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_op(*_both(lambda m: lambda t: getattr(m, name)(t, dim, correction=correction)), [x])
    assert sum("degrees of freedom is <= 0" in str(w.message) for w in caught) == 2


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_half_variance_accumulates_in_float32(name):
    """Squares of float16 values overflow (a spread of a few hundred): torch computes in float32."""
    x = np.random.default_rng(11).standard_normal((3, 37)) * 300
    check_op(*_both(lambda m: lambda t: getattr(m, name)(t, 1)), [x.astype(np.float32)], rtol=1e-2, dtype="float16")


@pytest.mark.parametrize("name", ["max", "min", "median", "nanmedian"])
@pytest.mark.parametrize("x", [_specials((3, 4), nans=2, seed=5), np.full((2, 3), _NAN)], ids=["nans", "all-nan"])
def test_full_value_reductions_send_the_gradient_to_nan(name, x):
    """``max()``/``min()``/``median()``/``nanmedian()`` with a NaN result share the gradient among the NaN inputs."""
    check_op(*_both(lambda m: lambda t: getattr(m, name)(t)), [x])


def test_full_nanmedian_shares_the_gradient_among_ties():
    check_op(*_both(lambda m: lambda t: m.nanmedian(t)), [np.array([0.5, 1.5, _NAN, 0.5, 0.5, -1.0, 1.5])])


@pytest.mark.parametrize("ord", [2, 1, 3, 1.5, 0.5, -1, float("inf"), -float("inf")])
def test_vector_norm_gradient_at_special_values(ord):
    """torch's formulas: a NaN norm reaches the zeros (no mask at x == 0 for p >= 1), sgn(NaN) is 0, and the
    infinity norms count NaN elements among the maxima."""
    x = np.array([[0.0, _NAN, 1.0, 2.0, -1.0], [0.0, _INF, 1.0, -2.0, 3.0], [0.0] * 5, [0.0, 0.5, -1.0, 2.0, 1.0]])
    check_op(*_both(lambda m: lambda t: m.linalg.vector_norm(t, ord, dim=1)), [x])


def test_one_norm_of_a_0d_nan():
    check_op(*_both(lambda m: lambda t: m.norm(t, 1, -1, True)), [np.array(_NAN, np.float32)])


def test_dist_with_infinite_order_at_nan():
    a, b = _specials((4, 2), nans=1, seed=9), _RNG.standard_normal((4, 2))
    check_op(*_both(lambda m: lambda s, t: m.dist(s, t, float("inf"))), [a, b])


@pytest.mark.parametrize("v", [_INF, _NAN])
def test_cumprod_of_one_element_passes_the_gradient(v):
    check_op(*_both(lambda m: lambda t: m.cumprod(t, 0)), [np.array(v)])
    check_op(*_both(lambda m: lambda t: m.cumprod(t, -1)), [np.array([v])])
    check_op(*_both(lambda m: lambda t: m.cumprod(t, -1)), [np.array([[v], [2.0], [0.0]])])


# ---- quantiles -----------------------------------------------------------------------------------
_Q_DATA = np.array([[1.0, _INF, 3.0, -2.0, 0.5], [_NAN, 1.0, 2.0, 3.0, 4.0], [-_INF, -_INF, 0.0, 1.0, 2.0]])


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_reads_infinities_and_passes_gradient_to_q(name, interpolation):
    """Only linear and midpoint blend two elements (torch's two-sided lerp); linear's weight carries q's
    gradient, cut off where the rank is fixed."""
    q = np.array([0.0, 0.3, 0.75, 1.0])
    check_op(*_both(lambda m: lambda t, s: getattr(m, name)(t, s, 1, interpolation=interpolation)), [_Q_DATA, q])


def test_nanquantile_of_an_all_nan_row_at_q_zero():
    """torch clamps a negative rank only: at q = 0 the rank is -0.0, so q's gradient is NaN there."""
    x = np.array([[_NAN, _NAN], [1.0, 2.0]])
    check_op(*_both(lambda m: lambda t, s: m.nanquantile(t, s, 1)), [x, np.array([0.0, 0.5])])


@pytest.mark.parametrize("v", [_INF, -_INF])
def test_quantile_of_a_0d_infinity(v):
    for interpolation in ("lower", "higher", "nearest"):
        check_op(*_both(lambda m: lambda t: m.quantile(t, 0.4, interpolation=interpolation)), [np.array(v)])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_quantile_refuses_half_types(dtype):
    assert_same_error(*[lambda m=m: m.quantile(m.ones(3, dtype=getattr(m, dtype)), 0.5) for m in (engine, torch)])
    assert_same_error(*[lambda m=m: m.nanquantile(m.ones(0, 2, dtype=getattr(m, dtype)), 0.5)
                        for m in (engine, torch)])


# ---- searchsorted ----------------------------------------------------------------------------------
_BOUNDS = np.array([[-1.0, 1.0, 2.0, _NAN, _NAN], [0.0, 1.0, 1.0, 3.0, _INF]])
_VALUES = np.array([[1.5, _NAN, 2.0, -_INF], [_NAN, 1.0, 5.0, _INF]])


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_with_nan_as_torch_binary_search(right):
    """A NaN probe or value compares false both ways: torch's search moves past it (numpy's orders NaN last)."""
    fn = _both(lambda m: lambda b, v: m.searchsorted(b, v, right=right))
    check_op(*fn, [_BOUNDS, _VALUES], grad=False)
    check_op(*fn, [_BOUNDS[0], _VALUES], grad=False)
    check_op(*_both(lambda m: lambda v, b: m.bucketize(v, b, right=right)), [_VALUES, _BOUNDS[1]], grad=False)
    check_op(*fn, [np.zeros((2, 0, 3)), np.zeros((2, 0, 1))], grad=False)


# ---- integration, diff ---------------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["trapezoid", "trapz"])
def test_trapezoid_with_constant_spacing_at_infinities(fn):
    """(sum - (first + last) / 2) * dx, as torch: an infinity at an end gives NaN, also with one sample."""
    x = np.array([[_INF, 1.0, 2.0], [1.0, 2.0, -_INF], [0.5, _INF, 1.0], [1.0, 2.0, 3.0]])
    check_op(*_both(lambda m: lambda t: getattr(m, fn)(t)), [x])
    check_op(*_both(lambda m: lambda t: getattr(m, fn)(t, dim=0)), [x[:1]])
    check_op(*_both(lambda m: lambda t: m.trapezoid(t, dx=0.25)), [x])


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_trapezoid_over_no_samples_keeps_the_dtype(dtype):
    y = np.zeros((0, 2, 3)).astype(dtype)
    check_op(*_both(lambda m: lambda t: m.trapezoid(t, dim=0)), [y])
    check_op(*_both(lambda m: lambda t, s: m.trapezoid(t, s, dim=0)), [y, np.zeros(0)], grad=False)


def test_cumulative_trapezoid_over_no_samples_promotes_with_x():
    y = np.zeros((0, 2)).astype(np.float32)
    check_op(*_both(lambda m: lambda t, s: m.cumulative_trapezoid(t, s, dim=0)), [y, np.zeros(0)])
    check_op(*_both(lambda m: lambda t, s: m.cumulative_trapezoid(t.to(m.int64), s, dim=0)), [y, np.zeros(0)])


@pytest.mark.parametrize("call", [
    lambda m: m.trapezoid(m.tensor([True, False, True])),
    lambda m: m.trapezoid(m.tensor([True, False]), m.tensor([1.0, 2.0])),
    lambda m: m.trapz(m.tensor([[True, False]])),
    lambda m: m.cumulative_trapezoid(m.tensor([True, False])),
    lambda m: m.cumulative_trapezoid(m.tensor([1.0, 2.0]), m.tensor([True, False])),
])
def test_integration_refuses_bool(call):
    assert_same_error(lambda: call(engine), lambda: call(torch))


def test_diff_of_order_zero_ignores_prepend_and_append():
    x = _RNG.standard_normal((3, 4))
    check_op(*_both(lambda m: lambda t, p, a: m.diff(t, 0, -1, p, a)), [x, x[:, :2], x[:, :1]])
    check_op(*_both(lambda m: lambda t: m.diff(t, 0, 0, append=t)), [x])


# ---- empty and 0-d inputs ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "bool"])
def test_median_of_no_elements_is_nan_cast(dtype):
    for name in ("median", "nanmedian"):
        check_op(*_both(lambda m: lambda t: getattr(m, name)(t)), [np.zeros((2, 0), dtype)])


def test_nanmedian_of_no_float_elements_is_nan():
    check_op(*_both(lambda m: lambda t: m.nanmedian(t)), [np.zeros((0, 3), np.float32)])


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dtype", ["float32", "uint8", "int16", "bool"])
def test_all_any_over_no_dims_reduce_nothing(name, dtype):
    x = np.array([[1.5, 0.0, _NAN if dtype == "float32" else 7], [2.0, 3.0, 0.0]]).astype(dtype)
    for dim, keepdim in (((), False), ([], True)):
        check_op(*_both(lambda m: lambda t: getattr(m, name)(t, dim, keepdim)), [x], grad=False)


@pytest.mark.parametrize("name", ["unique", "unique_consecutive"])
@pytest.mark.parametrize("shape, dim", [((0,), 0), ((0, 3), 0), ((3, 0), 1), ((0, 2, 3), -3)])
def test_unique_along_an_empty_dim(name, shape, dim):
    fn = _both(lambda m: lambda t: getattr(m, name)(t, return_inverse=True, return_counts=True, dim=dim))
    check_op(*fn, [np.zeros(shape, np.float32)], grad=False)


# ---- refusals and messages -----------------------------------------------------------------------
def _same_error(call):
    assert_same_error(lambda: call(engine), lambda: call(torch))


@pytest.mark.parametrize("call", [
    lambda m: m.argmax(m.tensor([True, False])),
    lambda m: m.argmin(m.tensor([[True, False]]), 1),
    lambda m: m.median(m.tensor([True, False])),
    lambda m: m.median(m.tensor([True, False]), 0),
    lambda m: m.nanmedian(m.tensor([True, False])),
    lambda m: m.nanmedian(m.tensor([[True, False]]), 1),
    lambda m: m.kthvalue(m.tensor([True, False]), 1),
    lambda m: m.topk(m.tensor([True, False]), 1),
    lambda m: m.nanmedian(m.zeros(2, 0), 1),                  # torch names median()
    lambda m: m.logcumsumexp(m.tensor([1, 2]), 0),            # NotImplementedError
    lambda m: m.histc(m.tensor([1, 2])),                      # NotImplementedError
    lambda m: m.histc(m.tensor([1.0, float("inf")]), 3),      # a range from the data must be finite
    lambda m: m.histc(m.tensor([0.5, 2.0]), 3, min=-float("inf"), max=2),
    lambda m: m.unique(m.zeros(3, 0), dim=0),
    lambda m: m.unique_consecutive(m.zeros(0, 2), dim=1),
], ids=lambda c: "")
def test_refused_as_torch(call):
    _same_error(call)


def test_histc_of_nan_data_is_refused():
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[nan, nan\] is not finite"):
        engine.histc(engine.tensor([1.0, float("nan")]), 3)
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histc(torch.tensor([1.0, float("nan")]), 3)


@pytest.mark.parametrize("call", [
    lambda m: m.mean(m.ones(3), dtype=m.int64),
    lambda m: m.nanmean(m.ones(3, dtype=m.int8), dtype=m.float32),
    lambda m: m.nanmean(m.ones(3), dtype=m.int64),
    lambda m: m.var_mean(m.ones(3, dtype=m.int32)),
    lambda m: m.std_mean(m.ones(3, dtype=m.int64), 0),
    lambda m: m.amax(m.zeros(4, 0, 1), (-2, 0)),
    lambda m: m.amin(m.zeros(0, 0), (1, 0)),
    lambda m: m.aminmax(m.zeros(3, 0), dim=-1),
    lambda m: m.aminmax(m.zeros(3, 0)),
    lambda m: m.aminmax(m.zeros(3, 2), dim=[0]),
    lambda m: m.linalg.vector_norm(m.ones(2, 3, dtype=m.float64), dtype=m.float32),
    lambda m: m.linalg.vector_norm(m.ones(2, 3, dtype=m.float16), dtype=m.bfloat16),
    lambda m: m.linalg.vector_norm(m.ones(2, 3), dtype=m.complex64),
    lambda m: m.linalg.vector_norm(m.zeros(0, 4, 2), float("inf"), (-1, -2, 0)),
    lambda m: m.linalg.vector_norm(m.zeros(2, 0), -1.0, -1),
], ids=lambda c: "")
def test_messages_as_torch(call):
    _same_error(call)


# ---- statistics, legacy norms, set membership, histograms -------------------------------------------
@pytest.mark.parametrize("shape", [(1, 4), (1, 1)])
def test_cov_and_corrcoef_of_one_variable_are_0d(shape):
    x = _RNG.standard_normal(shape)
    check_op(*_both(lambda m: lambda t: m.cov(t)), [x])
    check_op(*_both(lambda m: lambda t: m.corrcoef(t)), [x], grad=False)  # its gradient, 0, is rounding noise in torch


@pytest.mark.parametrize("call", [
    lambda m: m.cov(m.tensor([[True, False, True]])),
    lambda m: m.corrcoef(m.tensor([True, False])),
    lambda m: m.cov(m.ones(2, 3), fweights=m.tensor([0, 0, 0])),
    lambda m: m.cov(m.ones(2, 3), aweights=m.tensor([0.0, 0.0, 0.0])),
    lambda m: m.gradient(m.ones(3, dtype=m.uint8)),
    lambda m: m.gradient(m.ones(1, dtype=m.uint8), edge_order=2),   # the dtype is checked first
    lambda m: m.isin(m.tensor([True]), m.tensor([True])),
    lambda m: m.isin(m.tensor([1]), m.tensor([True])),
    lambda m: m.isin(True, m.tensor([1, 2])),
    lambda m: m.histogram(m.tensor([0.1, 0.5], dtype=m.float16), 3),
    lambda m: m.histogramdd(m.ones(3, 2, dtype=m.bfloat16), 3),
], ids=lambda c: "")
def test_refused_as_torch_too(call):
    _same_error(call)


def test_half_histogram_over_a_given_range():
    fn = _both(lambda m: lambda t: m.histogram(t.to(m.float16), 3, range=(0.0, 1.0)))
    check_op(*fn, [np.array([0.1, 0.5, 2.0, 0.7], np.float32)], grad=False)


@pytest.mark.parametrize("shape", [(5,), (1,)])
def test_norm_except_dim_of_a_vector_is_elementwise(shape):
    check_op(*_both(lambda m: lambda t: m.norm_except_dim(t, 2, 0)), [_specials(shape, zeros=1, seed=12)])


# ---- the CUDA backend (emulated without a GPU) ---------------------------------------------------
@pytest.mark.parametrize("case", ["prod", "var", "norm", "max", "quantile"])
def test_special_value_gradients_on_cuda(cuda, case):
    x = _specials((3, 4), zeros=1, infs=1, nans=1, seed=10)
    fns = {"prod": lambda m: lambda t: m.prod(t, 1),
           "var": lambda m: lambda t: m.var(t, 1, correction=6),
           "norm": lambda m: lambda t: m.linalg.vector_norm(t, float("inf"), 1),
           "max": lambda m: lambda t: m.max(t),
           "quantile": lambda m: lambda t, s: m.nanquantile(t, s, 1)}
    inputs = [x, np.array([0.2, 0.9])] if case == "quantile" else [x]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(*_both(fns[case]), inputs, device="cuda")


def test_searchsorted_on_cuda(cuda):
    check_op(*_both(lambda m: lambda b, v: m.searchsorted(b, v, right=True)), [_BOUNDS, _VALUES], grad=False,
             device="cuda")


def test_renorm_refuses_one_dimensional_input():
    for lib in (torch, engine):
        with pytest.raises(RuntimeError, match="^renorm: input needs at least 2 dimensions, got 1 dimensions$"):
            lib.renorm(lib.ones(3), 2, 0, 1.0)
