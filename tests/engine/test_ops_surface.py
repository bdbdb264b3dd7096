"""The ops training scripts reach for beyond the basics, against PyTorch: hypot, copysign, xlogy,
logaddexp, fmax/fmin, float_power, heaviside, gcd/lcm, clamp_min/max, inverse hyperbolics, sinc,
logit, special functions, cummax/cummin, logcumsumexp, diff, trace, inner, cross, dist, cdist, rot90,
Tensor.unfold, diag_embed, diagflat, splits, sum_to_size, fill_diagonal_, bincount, histc, quantile.

Values, dtypes, broadcasting and gradients through ``check_op``; bad input through ``same_error``
(the engine's message equals PyTorch's).
"""
import numpy as np
import pytest
import torch
from op_check import check_op, noncontiguous

import engine

RNG = np.random.default_rng(7)


def randn(*shape, dtype=np.float32):
    return np.asarray(RNG.standard_normal(shape), dtype)


def uniform(low, high, *shape, dtype=np.float32):
    return np.asarray(RNG.uniform(low, high, shape), dtype)


def both(make):
    """``make(mod)`` builds the function for one library; returns (ours, theirs)."""
    return make(engine), make(torch)


def same_error(make):
    """``make(mod)`` fails in the engine with PyTorch's message (and a RuntimeError where torch raises
    one of its subclasses, such as NotImplementedError)."""
    with pytest.raises(Exception) as theirs:
        make(torch)
    with pytest.raises(Exception) as ours:
        make(engine)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
    kind = RuntimeError if isinstance(theirs.value, RuntimeError) else type(theirs.value)
    assert isinstance(ours.value, kind), f"{type(ours.value).__name__} vs torch {type(theirs.value).__name__}"


# ---- binary pointwise ---------------------------------------------------------------------------------
BINARY = ["hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "fmax", "fmin", "float_power"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcast_forward_backward(name):
    positive_second = name in ("xlogy", "float_power")
    first = uniform(0.2, 2, 3, 1, 5) if name == "float_power" else randn(3, 1, 5)
    second = uniform(0.1, 3, 4, 1) if positive_second else randn(4, 1)
    check_op(*both(lambda m: getattr(m, name)), [first, second])
    check_op(*both(lambda m: lambda x, y: getattr(x, name)(y)),
             [noncontiguous(np.abs(randn(4, 6)) + 0.1), uniform(0.1, 2, 6)])
    check_op(*both(lambda m: getattr(m, name)), [randn(2, 3, dtype=np.float64), uniform(0.5, 2, 3, dtype=np.float64)])


@pytest.mark.parametrize("name", ["copysign", "xlogy", "fmax", "fmin", "float_power"])
def test_binary_integer_and_mixed_dtypes(name):
    ints = np.array([[3, -2, 0], [1, 5, -7]])
    floats = np.array([0.5, -1.5, 2.0], np.float32)
    check_op(*both(lambda m: getattr(m, name)), [ints, ints[::-1].copy()])
    check_op(*both(lambda m: getattr(m, name)), [ints, floats], grad=False)


def test_binary_special_values():
    specials = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 2.0], np.float32)
    others = np.array([np.nan, 1.0, 0.0, -1.0, np.nan, -np.inf], np.float32)
    for name in ("fmax", "fmin", "xlogy", "copysign", "hypot", "logaddexp"):
        check_op(*both(lambda m: getattr(m, name)), [specials, others], grad=False)


def test_xlogy_gradient_at_a_zero_first_operand():
    """torch's d/da is log(b) there too (zero only where b <= 0): a Dirichlet log_prob at concentration 1."""
    a = np.array([0.0, 0.0, 0.0, 0.0, 1.5], np.float64)
    b = np.array([0.5, 2.0, -1.0, 0.0, 0.5], np.float64)
    check_op(*both(lambda m: m.xlogy), [a, b])


def test_fmax_gradient_goes_to_the_number_not_the_nan_and_to_input_on_ties():
    a = np.array([1.0, np.nan, 2.0, 3.0], np.float32)
    b = np.array([1.0, 4.0, np.nan, 0.0], np.float32)
    check_op(*both(lambda m: m.fmax), [a, b])
    check_op(*both(lambda m: m.fmin), [a, b])


def test_heaviside_gcd_lcm():
    x = np.array([-1.5, 0.0, 2.0, 0.0], np.float32)
    values = np.array([0.5, 0.25, 0.5, 0.75], np.float32)
    check_op(*both(lambda m: lambda a, v: m.heaviside(a, v)), [x, values], grad=False)
    a = np.array([[12, -18, 0], [7, 0, 21]])
    b = np.array([8, 27, 5])
    for name in ("gcd", "lcm"):
        check_op(*both(lambda m: getattr(m, name)), [a, b])
        check_op(*both(lambda m: lambda p, q: getattr(p.int(), name)(q.int())), [a, b])


def test_clamp_min_max():
    check_op(*both(lambda m: lambda x: m.clamp_min(x, 0.2)), [randn(3, 4)])
    check_op(*both(lambda m: lambda x, lo: x.clamp_min(lo)), [randn(3, 4), randn(4)])
    check_op(*both(lambda m: lambda x, hi: m.clamp_max(x, hi)), [randn(3, 4), randn(3, 1)])
    check_op(*both(lambda m: lambda x: m.clamp_min(x, 0.5)), [np.array([1, 0, -2])], grad=False)


def test_binary_errors():
    same_error(lambda m: m.hypot(m.tensor([1, 2]), m.tensor([3, 4])))
    same_error(lambda m: m.logaddexp(m.tensor([True]), m.tensor([False])))
    same_error(lambda m: m.logaddexp2(m.tensor([1]), m.tensor([1])))
    same_error(lambda m: m.gcd(m.tensor([1.0]), m.tensor([2.0])))
    same_error(lambda m: m.lcm(m.tensor([True]), m.tensor([True])))
    same_error(lambda m: m.heaviside(m.tensor([1.0]), m.tensor([1.0], dtype=m.float64)))
    same_error(lambda m: m.hypot(m.ones(2, 3), m.ones(4)))


# ---- unary pointwise and special functions --------------------------------------------------------------
UNARY = [  # (name, input maker)
    ("asinh", lambda: randn(3, 5)),
    ("acosh", lambda: uniform(1.1, 4, 3, 5)),
    ("atanh", lambda: uniform(-0.9, 0.9, 3, 5)),
    ("sinc", lambda: np.concatenate([randn(7), np.zeros(1, np.float32)])),
    ("deg2rad", lambda: randn(3, 5) * 90),
    ("rad2deg", lambda: randn(3, 5)),
    ("erfc", lambda: randn(3, 5) * 3),
    ("erfinv", lambda: uniform(-0.99, 0.99, 3, 5)),
    ("lgamma", lambda: np.concatenate([uniform(0.1, 8, 9), -uniform(0.1, 0.9, 3) - 2])),
    ("digamma", lambda: uniform(0.2, 9, 3, 5)),
    ("logit", lambda: uniform(0.01, 0.99, 3, 5)),
]


@pytest.mark.parametrize("name,make", UNARY, ids=[n for n, _ in UNARY])
def test_unary_values_and_gradients(name, make):
    x = make()
    check_op(*both(lambda m: getattr(m, name)), [x], rtol=2e-5)
    check_op(*both(lambda m: lambda t: getattr(t, name)()), [noncontiguous(np.resize(x, (4, 6)))], rtol=2e-5)
    check_op(*both(lambda m: getattr(m, name)), [x.astype(np.float64)], rtol=1e-9)


@pytest.mark.parametrize("name", ["asinh", "acosh", "atanh", "sinc", "deg2rad", "rad2deg", "erfc", "erfinv",
                                  "lgamma", "digamma", "logit"])
def test_unary_integer_inputs_give_floats(name):
    check_op(*both(lambda m: getattr(m, name)), [np.array([[1, 0, -2], [3, 2, 1]])], grad=False)


def test_unary_edges_match_torch():
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -3.0, 2.0], np.float32)
    for name in ("erfinv", "lgamma", "digamma", "logit", "atanh", "acosh", "sinc", "erfc", "sgn"):
        check_op(*both(lambda m: getattr(m, name)), [edges], grad=False)


def erfinv_inputs(dtype, count):
    """Uniform values in (-1, 1), then ones near the central range's edge 0.7, near +-1 and tiny ones, and
    the edges (+-0, +-1, beyond, NaN, subnormals)."""
    rng = np.random.default_rng(17)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    parts = [rng.uniform(-1, 1, count), rng.uniform(0.69, 0.71, count // 10),
             1 - 2.0 ** rng.uniform(-np.finfo(dtype).nmant, -1, count // 10), 2.0 ** rng.uniform(-30, -1, count // 10),
             [0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.inf, np.nan, tiny, -tiny, 1e-40, 0.7, -0.7]]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(dtype)


@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="torch's CPU erfinv is MKL's in its MKL builds")
@pytest.mark.parametrize("dtype,at_most,ulps", [(np.float32, 1e-3, 1), (np.float64, 1.0, 4)])
def test_erfinv_is_torchs_cpu_erfinv_but_for_rare_last_bits(dtype, at_most, ulps):
    """torch's CPU erfinv (MKL's, correctly rounded but for ~0.03% of float32 inputs): engine's float32 values are
    correctly rounded, so nearly all agree exactly and the rest by 1 ulp (scipy's float32 erfinv, which engine used,
    differed by 1 ulp on ~43% of them); float64 values agree within a few ulp."""
    y = erfinv_inputs(dtype, 100_003)
    ours, theirs = engine.from_numpy(y).erfinv().numpy(), torch.from_numpy(y).erfinv().numpy()
    assert ours.dtype == theirs.dtype == dtype
    nan = np.isnan(theirs)
    assert np.array_equal(np.isnan(ours), nan) and np.array_equal(np.signbit(ours[~nan]), np.signbit(theirs[~nan]))
    differ = ours[~nan] != theirs[~nan]
    assert differ.mean() <= at_most
    ints = np.int64 if dtype == np.float64 else np.int32
    assert np.abs(ours[~nan].view(ints).astype(np.int64) - theirs[~nan].view(ints)).max() <= ulps


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_erfinv_of_every_half_value_equals_torchs(name):
    """All 65536 bit patterns: torch computes in float32 and rounds; so does engine, and every value agrees."""
    dtype = getattr(engine, name)
    if dtype.np is None:
        pytest.skip("engine.bfloat16 needs ml_dtypes")
    bits = np.arange(1 << 16, dtype=np.uint16)
    ours = engine.from_numpy(bits.view(dtype.np)).erfinv()
    theirs = torch.from_numpy(bits.view(np.int16)).view(getattr(torch, name)).erfinv()
    ours, theirs = ours.float().numpy(), theirs.float().numpy()
    assert np.array_equal(ours, theirs, equal_nan=True)
    numbers = ~np.isnan(theirs)
    assert np.array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))  # -0 stays -0


def test_logit_eps_clamps_input_and_gradient():
    x = np.array([0.0, 0.05, 0.3, 0.9, 0.97, 1.0], np.float32)
    check_op(*both(lambda m: lambda t: m.logit(t, eps=0.1)), [x])
    check_op(*both(lambda m: lambda t: t.logit(1e-6)), [x[1:-1]])


def test_predicates_and_positive():
    x = np.array([1.0, -0.0, 0.0, np.inf, -np.inf, np.nan, -2.5], np.float32)
    for name in ("signbit", "isposinf", "isneginf", "isreal", "positive"):
        check_op(*both(lambda m: getattr(m, name)), [x], grad=False)
        check_op(*both(lambda m: getattr(m, name)), [np.array([3, -1, 0])], grad=False)
    same_error(lambda m: m.positive(m.tensor([True])))


# ---- scans along a dim ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin_with_ties_and_nan(name):
    ties = np.round(randn(4, 6) * 1.5).astype(np.float32)
    check_op(*both(lambda m: lambda x: getattr(m, name)(x, 1)), [ties])
    check_op(*both(lambda m: lambda x: getattr(x, name)(0)), [noncontiguous(ties)])
    with_nan = randn(3, 5)
    with_nan[1, 2] = np.nan
    with_nan[2, 0] = np.nan
    check_op(*both(lambda m: lambda x: getattr(m, name)(x, -1)), [with_nan])
    check_op(*both(lambda m: lambda a: getattr(m, name)(a, 0)), [np.array([[3, 1], [1, 5], [3, 0]])])
    result = getattr(engine, name)(engine.tensor([2.0, 1.0]), 0)
    assert result.indices.dtype is engine.int64 and result.values is result[0]


def test_logcumsumexp_wide_ranges():
    check_op(*both(lambda m: lambda x: m.logcumsumexp(x, 1)), [randn(3, 6) * 40])
    check_op(*both(lambda m: lambda x: x.logcumsumexp(0)), [noncontiguous(randn(5, 4))])
    check_op(*both(lambda m: lambda x: m.logcumsumexp(x, 0)), [np.array([-1000.0, 0.0, -np.inf, 3.0], np.float64)])
    same_error(lambda m: m.logcumsumexp(m.tensor([1, 2, 3]), 0))


def test_diff():
    check_op(*both(lambda m: lambda x: m.diff(x)), [randn(3, 6)])
    check_op(*both(lambda m: lambda x: x.diff(n=3, dim=0)), [randn(5, 4)])
    check_op(*both(lambda m: lambda x, p, a: m.diff(x, dim=1, prepend=p, append=a)),
             [randn(3, 4), randn(3, 2), randn(3, 1)])
    check_op(*both(lambda m: m.diff), [np.array([True, True, False, True])], grad=False)
    check_op(*both(lambda m: lambda a: m.diff(a, n=2)), [np.array([3, 9, 4, 4, 0])], grad=False)
    same_error(lambda m: m.diff(m.tensor(1.0)))


# ---- products and distances ----------------------------------------------------------------------------
def test_trace_inner_dist():
    check_op(*both(lambda m: m.trace), [randn(4, 3)])
    check_op(*both(lambda m: m.trace), [np.arange(9).reshape(3, 3)])
    check_op(*both(lambda m: m.inner), [randn(2, 3, 5), randn(4, 5)])
    check_op(*both(lambda m: lambda a, b: a.inner(b)), [randn(5), noncontiguous(randn(3, 5))])
    check_op(*both(lambda m: lambda a: m.inner(a, m.tensor(2.5))), [randn(2, 3)])
    for p in (1, 2, 3.5, float("inf")):
        check_op(*both(lambda m: lambda a, b: m.dist(a, b, p)), [randn(3, 4), randn(4)])
    check_op(*both(lambda m: lambda a, b: m.dist(a, b, 0)), [randn(3, 4), randn(4)], grad=False)
    same_error(lambda m: m.trace(m.ones(2, 2, 2)))
    same_error(lambda m: m.inner(m.ones(2, 3), m.ones(4, 5)))


def test_cross():
    check_op(*both(lambda m: lambda a, b: m.cross(a, b, dim=1)), [randn(4, 3), randn(1, 3)])
    check_op(*both(lambda m: lambda a, b: a.cross(b, dim=0)), [randn(3, 5), randn(3, 5)])
    check_op(*both(lambda m: lambda a, b: m.linalg.cross(a, b) if m is torch else m.cross(a, b, dim=-1)),
             [randn(2, 4, 3), randn(2, 4, 3)])
    same_error(lambda m: m.cross(m.ones(4, 2), m.ones(4, 2), dim=1))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_cdist(p):
    check_op(*both(lambda m: lambda a, b: m.cdist(a, b, p=p)), [randn(2, 5, 3), randn(2, 4, 3)], rtol=2e-5)
    check_op(*both(lambda m: lambda a, b: m.cdist(a, b, p=p)), [randn(5, 3), randn(1, 4, 3)], rtol=2e-5)


def test_cdist_zero_distance_gradient_and_errors():
    points = randn(4, 3)
    check_op(*both(lambda m: lambda a, b: m.cdist(a, b)), [points, points[1:3].copy()])
    same_error(lambda m: m.cdist(m.ones(3), m.ones(2, 3)))
    same_error(lambda m: m.cdist(m.ones(2, 3), m.ones(2, 4)))
    same_error(lambda m: m.cdist(m.ones(2, 3), m.ones(2, 3), p=-1))


# ---- rearranging -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("k,dims", [(1, (0, 1)), (2, (1, 2)), (3, (0, 2)), (-1, (2, 0)), (0, (0, 1)), (5, (-1, -2))])
def test_rot90(k, dims):
    check_op(*both(lambda m: lambda x: m.rot90(x, k, dims)), [randn(2, 3, 4)])
    check_op(*both(lambda m: lambda x: x.rot90(k, dims)), [noncontiguous(randn(3, 2, 5))])


def test_rot90_errors():
    same_error(lambda m: m.rot90(m.ones(2, 2), 1, [0]))
    same_error(lambda m: m.rot90(m.ones(2), 1, [0, 1]))
    same_error(lambda m: m.rot90(m.ones(2, 2), 1, [1, 1]))


@pytest.mark.parametrize("dim,size,step", [(1, 2, 1), (1, 3, 2), (0, 1, 1), (-1, 4, 3), (2, 5, 5)])
def test_unfold_windows(dim, size, step):
    check_op(*both(lambda m: lambda x: x.unfold(dim, size, step)), [randn(3, 7, 5)])
    check_op(*both(lambda m: lambda x: x.unfold(dim, size, step) * 2), [noncontiguous(randn(3, 7, 5))])


def test_unfold_is_a_view_and_errors():
    x = engine.arange(6.0)
    windows = x.unfold(0, 2, 2)
    windows[1, 0] = -1.0
    assert x[2].item() == -1.0 and windows._base is x
    same_error(lambda m: m.ones(3, 4).unfold(1, 5, 1))
    same_error(lambda m: m.ones(3, 4).unfold(1, 2, 0))


@pytest.mark.parametrize("offset,dim1,dim2", [(0, -2, -1), (1, 0, 2), (-2, 2, 0), (2, 1, 0)])
def test_diag_embed(offset, dim1, dim2):
    check_op(*both(lambda m: lambda x: m.diag_embed(x, offset, dim1, dim2)), [randn(2, 4)])
    check_op(*both(lambda m: lambda x: x.diag_embed(offset, dim1, dim2)), [noncontiguous(randn(3, 5))])


def test_diagflat_and_splits():
    check_op(*both(lambda m: lambda x: m.diagflat(x, -1)), [randn(2, 3)])
    check_op(*both(lambda m: lambda x: x.diagflat(2)), [randn(4)])
    check_op(*both(lambda m: lambda x: x.split_with_sizes([2, 1, 3], 1)), [randn(2, 6)])
    check_op(*both(lambda m: lambda x: m.hsplit(x, [1, 4])), [randn(3, 5, 2)])
    check_op(*both(lambda m: lambda x: m.hsplit(x, 2)), [randn(6)])
    check_op(*both(lambda m: lambda x: x.vsplit(3)), [randn(6, 2)])
    check_op(*both(lambda m: lambda x: m.dsplit(x, [1])), [randn(2, 2, 3)])
    same_error(lambda m: m.ones(2, 6).split_with_sizes([2, 3], 1))
    same_error(lambda m: m.hsplit(m.ones(3, 5), 2))
    same_error(lambda m: m.vsplit(m.ones(4), 2))


@pytest.mark.parametrize("size", [(3, 1), (1, 3, 1), (2, 3, 4), (4,), (1,), ()])
def test_sum_to_size(size):
    check_op(*both(lambda m: lambda x: x.sum_to_size(size)), [randn(2, 3, 4)])


def test_sum_to_size_error():
    same_error(lambda m: m.ones(2, 3).sum_to_size(3, 3))


@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), False), ((7, 3), True), ((3, 5), True),
                                        ((2, 2, 2), False)])
def test_fill_diagonal_(shape, wrap):
    check_op(*both(lambda m: lambda x: (x * 1).fill_diagonal_(-4.5, wrap)), [randn(*shape)])
    same_error(lambda m: m.ones(2, 3, 2).fill_diagonal_(1))


# ---- counting --------------------------------------------------------------------------------------------
def test_bincount():
    values = RNG.integers(0, 9, 40)
    weights = randn(40)
    check_op(*both(lambda m: m.bincount), [values], grad=False)
    check_op(*both(lambda m: lambda v: v.bincount(minlength=15)), [values])
    check_op(*both(lambda m: m.bincount), [values, weights], grad=False)
    check_op(*both(lambda m: lambda v, w: m.bincount(v, w.double())), [values, weights], grad=False)
    check_op(*both(lambda m: lambda v: m.bincount(v, v)), [values])
    check_op(*both(lambda m: m.bincount), [np.zeros(0, np.int64)])
    same_error(lambda m: m.bincount(m.tensor([1, -1])))
    same_error(lambda m: m.bincount(m.tensor([[1]])))
    same_error(lambda m: m.bincount(m.tensor([1.0])))
    same_error(lambda m: m.bincount(m.tensor([1, 2]), m.ones(3)))
    same_error(lambda m: m.bincount(m.tensor([1]), minlength=-1))


def test_histc():
    data = randn(500)
    check_op(*both(lambda m: lambda x: m.histc(x)), [data], grad=False)
    check_op(*both(lambda m: lambda x: x.histc(7, -1, 1)), [data.astype(np.float64)], grad=False)
    check_op(*both(lambda m: lambda x: m.histc(x, 4, 0, 3)), [np.array([1, 2, 1, 3, np.inf, -1], np.float32)],
             grad=False)
    check_op(*both(lambda m: lambda x: m.histc(x, 4)), [np.array([2.0, 2.0], np.float32)], grad=False)
    same_error(lambda m: m.histc(m.tensor([1, 2])))
    same_error(lambda m: m.histc(m.tensor([1.0]), bins=0))
    same_error(lambda m: m.histc(m.tensor([1.0]), min=3, max=1))


# ---- quantiles -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_interpolations(interpolation):
    check_op(*both(lambda m: lambda x: m.quantile(x, 0.37, dim=1, interpolation=interpolation)), [randn(4, 7)])
    check_op(*both(lambda m: lambda x: x.quantile(m.tensor([0.0, 0.25, 0.5, 1.0]), dim=0, keepdim=True,
                                                   interpolation=interpolation)), [randn(5, 3)])


def test_quantile_whole_tensor_scalars_and_keepdim():
    check_op(*both(lambda m: lambda x: m.quantile(x, 0.9)), [randn(3, 4, 5)])
    check_op(*both(lambda m: lambda x: m.quantile(x, m.tensor([0.2, 0.8], dtype=m.float64), keepdim=True)),
             [randn(2, 3, dtype=np.float64)])
    check_op(*both(lambda m: lambda x: m.quantile(x, 0.5, dim=0)), [np.asarray(3.0, np.float32)])
    check_op(*both(lambda m: lambda x: m.quantile(x, m.tensor(0.5), dim=-1, keepdim=True)), [randn(2, 5)])


def test_quantile_and_nanquantile_with_nan():
    x = randn(4, 6)
    x[0, 1] = np.nan
    x[2] = np.nan
    x[3, ::2] = np.nan
    check_op(*both(lambda m: lambda t: m.quantile(t, m.tensor([0.3, 0.6]), dim=1)), [x], grad=False)
    check_op(*both(lambda m: lambda t: m.nanquantile(t, m.tensor([0.3, 0.6]), dim=1)), [x])
    check_op(*both(lambda m: lambda t: t.nanquantile(0.5)), [x])


def test_quantile_errors():
    x = lambda m: m.tensor([[1.0, 2.0], [3.0, 4.0]])  # noqa: E731
    same_error(lambda m: m.quantile(x(m), 1.5))
    same_error(lambda m: m.quantile(x(m).long(), 0.5))
    same_error(lambda m: m.quantile(x(m), m.tensor([0.5], dtype=m.float64)))
    same_error(lambda m: m.quantile(x(m), 0.5, interpolation="cubic"))
    same_error(lambda m: m.quantile(x(m), m.tensor([[0.5]])))
    same_error(lambda m: m.nanquantile(m.tensor([]), 0.5))


# ---- more elementwise names ------------------------------------------------------------------------------
def test_ldexp_shifts_rsub_and_aliases():
    check_op(*both(lambda m: m.ldexp), [randn(3, 4), RNG.integers(-3, 4, (4,))])
    check_op(*both(lambda m: lambda x, y: x.ldexp(y)), [RNG.integers(-5, 5, (3,)), RNG.integers(0, 3, (3,))])
    shifted, amounts = RNG.integers(-9, 9, (3, 4)), RNG.integers(0, 70, (4,))
    check_op(*both(lambda m: m.bitwise_left_shift), [shifted, amounts])
    check_op(*both(lambda m: lambda x, y: x >> y), [shifted, amounts])
    check_op(*both(lambda m: lambda x: (x.clone() << 2) >> 1), [shifted.astype(np.int32)])
    check_op(*both(lambda m: lambda x, y: m.rsub(x, y, alpha=2)), [randn(3, 4), randn(4)])
    check_op(*both(lambda m: lambda x: m.rsub(x, 5)), [RNG.integers(0, 9, (4,))])
    for name in ("divide", "multiply", "subtract"):
        check_op(*both(lambda m: getattr(m, name)), [randn(3, 4), randn(4)])
    for name in ("arccos", "arcsin", "arctan", "fix"):
        check_op(*both(lambda m: lambda x: getattr(x, name)()), [uniform(-0.9, 0.9, 3, 4)])
    same_error(lambda m: m.bitwise_left_shift(m.tensor([1.0]), 1))


# ---- the complex API on real tensors ----------------------------------------------------------------------
def test_complex_api_on_real_tensors():
    for m in (engine, torch):
        x = m.tensor([[1.0, -2.0], [3.0, 4.0]])
        assert x.conj() is x and m.resolve_conj(x) is x and m.resolve_neg(x) is x and x.real is x
        assert m.conj_physical(x) is x and x.conj_physical_() is x
        assert not m.is_complex(x) and not m.is_conj(x) and not m.is_neg(x) and m.is_signed(x)
        assert m.is_nonzero(m.tensor([3])) and m.is_same_size(x, x.T) and not m.is_inference(x)
    check_op(*both(lambda m: lambda x: x.H * 2), [randn(3, 4)])
    check_op(*both(lambda m: lambda x: x.mH), [randn(2, 3, 4)])
    check_op(*both(lambda m: lambda x: x.adjoint()), [noncontiguous(randn(2, 3, 4))])
    check_op(*both(lambda m: m.real), [randn(3)])
    same_error(lambda m: m.ones(3).imag)
    same_error(lambda m: m.ones(3).H)
    same_error(lambda m: m.ones(2, 3, 4).H)
    same_error(lambda m: m.ones(3).mH)
    same_error(lambda m: m.ones(3).adjoint())


# ---- index sets --------------------------------------------------------------------------------------------
def test_isin():
    values, tests = RNG.integers(0, 9, (3, 4)), RNG.integers(0, 9, (5,))
    check_op(*both(lambda m: m.isin), [values, tests])
    check_op(*both(lambda m: lambda v: m.isin(v, 3, invert=True)), [values])
    check_op(*both(lambda m: lambda t: m.isin(4, t)), [tests])
    check_op(*both(lambda m: lambda v, t: m.isin(v, t, assume_unique=True)), [np.arange(6.0), np.array([2.0, 7.0])],
             grad=False)


@pytest.mark.parametrize("row,col,offset", [(4, 3, 0), (3, 5, -1), (5, 5, 2), (1, 4, -3), (0, 3, 0)])
def test_triangle_indices(row, col, offset):
    check_op(*both(lambda m: lambda: m.tril_indices(row, col, offset)), [])
    check_op(*both(lambda m: lambda: m.triu_indices(row, col, offset, dtype=m.int32)), [])


def test_cartesian_prod_and_combinations():
    check_op(*both(lambda m: m.cartesian_prod), [randn(2), randn(3), randn(2)])
    check_op(*both(lambda m: m.cartesian_prod), [randn(4)])
    for r, replace in ((2, False), (3, False), (2, True), (5, False), (1, True)):
        check_op(*both(lambda m: lambda x: m.combinations(x, r, with_replacement=replace)), [randn(4)])
    check_op(*both(lambda m: lambda x: m.combinations(x)), [RNG.integers(0, 9, (4,))])
    same_error(lambda m: m.cartesian_prod(m.ones(2, 2)))
    same_error(lambda m: m.combinations(m.ones(2, 2)))


def test_block_diag_and_narrow_copy():
    check_op(*both(lambda m: m.block_diag), [randn(2, 2), randn(3), randn(1, 4)])
    check_op(*both(lambda m: lambda a, b: m.block_diag(a, b, m.tensor(7.0), m.ones(2, 1, dtype=m.float64))),
             [randn(2, 3), randn(0, 2)])
    check_op(*both(lambda m: lambda a: m.block_diag(a, a.int())), [RNG.integers(0, 5, (2, 2))])
    check_op(*both(lambda m: lambda x: x.narrow_copy(1, 1, 2)), [randn(3, 4)])
    same_error(lambda m: m.block_diag(m.ones(2, 2, 2)))


# ---- order statistics and statistics -------------------------------------------------------------------------
def test_mode():
    check_op(*both(lambda m: lambda x: m.mode(x, 1)), [np.round(randn(5, 9))])
    check_op(*both(lambda m: lambda x: x.mode(0, keepdim=True)), [noncontiguous(np.round(randn(9, 3)))])
    check_op(*both(lambda m: lambda x: m.mode(x)), [RNG.integers(0, 4, (3, 8))])
    check_op(*both(lambda m: lambda x: m.mode(x, 0)), [np.asarray(2.5, np.float32)])


def test_nanmedian():
    x = randn(5, 7)
    x[x > 0.7] = np.nan
    check_op(*both(lambda m: lambda t: m.nanmedian(t, 1)), [x])
    check_op(*both(lambda m: lambda t: t.nanmedian(0, keepdim=True)), [x])
    check_op(*both(lambda m: lambda t: t.nanmedian()), [x])
    x[2] = np.nan
    values = both(lambda m: lambda t: m.nanmedian(t, 1).values)
    check_op(*values, [x], grad=False)


def test_cov_and_corrcoef():
    check_op(*both(lambda m: m.cov), [randn(3, 6)])
    check_op(*both(lambda m: lambda x: x.cov(correction=0)), [randn(6)])
    check_op(*both(lambda m: lambda x, w: m.cov(x, fweights=m.tensor([1, 2, 1, 3, 1, 1]), aweights=w.abs())),
             [randn(3, 6), randn(6)])
    check_op(*both(lambda m: lambda x, w: m.cov(x, correction=2, aweights=w.abs())), [randn(2, 5), randn(5)])
    check_op(*both(lambda m: m.cov), [RNG.integers(0, 9, (2, 5))])
    check_op(*both(lambda m: m.corrcoef), [randn(4, 6)])
    check_op(*both(lambda m: lambda x: x.corrcoef()), [randn(5, dtype=np.float64)])
    same_error(lambda m: m.cov(m.ones(2, 2, 2)))


# ---- products and norms ----------------------------------------------------------------------------------------
def test_kron_vdot_and_scaled_products():
    check_op(*both(lambda m: m.kron), [randn(2, 3), randn(3, 1, 2)])
    check_op(*both(lambda m: lambda a, b: a.kron(b)), [randn(3), randn(2, 2)])
    check_op(*both(lambda m: m.vdot), [randn(5), randn(5)])
    check_op(*both(lambda m: lambda i, a, v: m.addmv(i, a, v, beta=0.5, alpha=2)), [randn(3), randn(3, 4), randn(4)])
    check_op(*both(lambda m: lambda i, a, v: i.addr(a, v, alpha=3)), [randn(3, 4), randn(3), randn(4)])
    check_op(*both(lambda m: lambda i, a, b: m.addbmm(i, a, b, beta=2)), [randn(3, 4), randn(5, 3, 2), randn(5, 2, 4)])
    check_op(*both(lambda m: lambda i, a, b: (i * 1).addbmm_(a, b, alpha=0.5)),
             [randn(3, 4), randn(2, 3, 2), randn(2, 2, 4)])
    check_op(*both(lambda m: lambda i, a, v: m.addmv(i, a, v, beta=0)),
             [np.full(3, np.nan, np.float32), randn(3, 4), randn(4)], grad=False)
    same_error(lambda m: m.vdot(m.ones(2, 2), m.ones(2)))
    same_error(lambda m: m.addbmm(m.ones(2, 2), m.ones(2, 2), m.ones(2, 2, 2)))


@pytest.mark.parametrize("n", [1, 2, 5, -1, -3])
def test_matrix_power(n):
    well_conditioned = randn(2, 3, 3) * 0.3 + 2 * np.eye(3, dtype=np.float32)
    check_op(*both(lambda m: lambda x: m.matrix_power(x, n)), [well_conditioned], rtol=1e-4)


def test_matrix_power_zero_and_errors():
    check_op(*both(lambda m: lambda x: x.matrix_power(0)), [randn(2, 3, 3)], grad=False)
    same_error(lambda m: m.matrix_power(m.ones(2, 3), 2))


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.5), (1, 1, 2.0), (3, -1, 0.5), (2.5, 2, 100.0)])
def test_renorm(p, dim, maxnorm):
    check_op(*both(lambda m: lambda x: m.renorm(x, p, dim, maxnorm)), [randn(2, 3, 4)])
    check_op(*both(lambda m: lambda x: (x * 1).renorm_(p, dim, maxnorm)), [randn(2, 3, 4)])


def test_renorm_errors():
    same_error(lambda m: m.renorm(m.ones(2, 2), 0, 0, 1))
    same_error(lambda m: m.renorm(m.ones(2, 2), 2, 0, -1))


# ---- scatter_reduce -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    """Repeated indices, ties and zeros (prod's special case) in both the input and src."""
    index = RNG.integers(0, 4, (3, 5))
    x = np.round(randn(4, 5))
    x[0, 0] = 0
    src = np.round(randn(3, 5) * 2) / 2
    src[1:, 1] = 0

    def run(m):
        return lambda a, s: a.scatter_reduce(0, m.from_numpy(index), s, reduce, include_self=include_self)
    check_op(*both(run), [x, src])
    check_op(*both(lambda m: lambda a, s: (a * 1).scatter_reduce_(1, m.from_numpy(index[:, :4] % 5), s, reduce,
                                                                  include_self=include_self)),
             [randn(3, 5), randn(3, 4)])
    check_op(*both(lambda m: lambda a, s: m.scatter_reduce(a, 1, m.from_numpy(index % 5), s, reduce,
                                                           include_self=include_self)),
             [RNG.integers(-9, 9, (3, 5)), RNG.integers(-9, 9, (3, 5))])


def test_scatter_reduce_errors():
    same_error(lambda m: m.ones(3).scatter_reduce(0, m.tensor([0]), m.ones(1), "add"))
    for alias in ("max", "min"):  # PyTorch takes them forward (its backward refuses them)
        check_op(*both(lambda m: lambda x, s: x.scatter_reduce(0, m.tensor([0, 2, 0]), s, alias)), [randn(3), randn(3)],
                 grad=False)
    same_error(lambda m: m.ones(3).scatter_reduce(0, m.tensor([0]), m.ones(1, dtype=m.float64), "sum"))
    same_error(lambda m: m.ones(3).scatter_reduce(0, m.tensor([5]), m.ones(1), "sum"))


# ---- dtype limits ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float16", "float32", "float64"])
def test_finfo(name):
    ours, theirs = engine.finfo(getattr(engine, name)), torch.finfo(getattr(torch, name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    ours, theirs = engine.iinfo(getattr(engine, name)), torch.iinfo(getattr(torch, name))
    for field in ("bits", "max", "min", "dtype"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert repr(ours) == repr(theirs)


def test_type_info_defaults_errors_and_constants():
    assert engine.finfo().eps == torch.finfo().eps
    same_error(lambda m: m.finfo(m.int32))
    same_error(lambda m: m.iinfo(m.float32))
    same_error(lambda m: m.iinfo(m.bool))
    for name in ("pi", "e", "inf"):
        assert getattr(engine, name) == getattr(torch, name)
    assert np.isnan(engine.nan)


# ---- a last batch of names ------------------------------------------------------------------------------------
def test_unravel_index_and_put():
    check_op(*both(lambda m: lambda i: m.unravel_index(i, (3, 4))), [np.array([4, 1, 11, 0])])
    check_op(*both(lambda m: lambda i: m.unravel_index(i, (2, 1, 3))), [np.array([[5, 0], [3, 2]])])
    check_op(*both(lambda m: lambda i: m.unravel_index(i, 7)), [np.asarray(5)])
    same_error(lambda m: m.unravel_index(m.tensor([1.0]), (3, 4)))
    for accumulate in (False, True):
        check_op(*both(lambda m: lambda x, s: x.put(m.tensor([0, 5, -1]), s, accumulate)), [randn(2, 3), randn(3)],
                 grad=accumulate)
        check_op(*both(lambda m: lambda x, s: (x * 1).put_(m.tensor([[1], [4]]), s, accumulate=accumulate)),
                 [randn(2, 3), randn(2, 1)], grad=accumulate)
    same_error(lambda m: m.zeros(2, 3).put_(m.tensor([6]), m.ones(1)))


def test_polygamma_i0_frexp_nextafter():
    for n in (0, 1, 2, 3):
        check_op(*both(lambda m: lambda x: m.polygamma(n, x)), [uniform(0.5, 4, 3, 4)], rtol=1e-4)
        check_op(*both(lambda m: lambda x: x.polygamma(n)), [uniform(0.5, 4, 5).astype(np.float64)], rtol=1e-9)
    check_op(*both(lambda m: lambda x: (x * 1).polygamma_(1)), [uniform(0.5, 4, 3)], rtol=1e-4)
    check_op(*both(lambda m: m.i0), [randn(3, 4) * 3])
    check_op(*both(lambda m: lambda x: (x * 1).i0_()), [randn(5)])
    check_op(*both(lambda m: m.frexp), [np.array([8.0, -0.3, 0.0, 1e-40, np.inf, 3.5], np.float32)], grad=False)
    check_op(*both(lambda m: lambda x: x.frexp()), [randn(3, 2).astype(np.float64)], grad=False)
    check_op(*both(lambda m: m.nextafter), [randn(3, 4), randn(4)], grad=False)
    check_op(*both(lambda m: lambda x, y: x.clone().nextafter_(y)), [randn(3).astype(np.float64), randn(3)], grad=False)
    same_error(lambda m: m.frexp(m.tensor([1, 2])))
    same_error(lambda m: m.polygamma(-1, m.ones(2)))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, length, periodic):
    """(absolute tolerances: where a window is 0, torch's float32 arithmetic leaves about 3e-8)"""
    for dtype, atol in (("float32", 1e-6), ("float64", 1e-12)):
        ours = getattr(engine, name)(length, periodic, dtype=getattr(engine, dtype))
        theirs = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
        assert ours.dtype.name == dtype and ours.shape == theirs.shape
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=atol)
    assert getattr(engine, name)(length).dtype is engine.get_default_dtype()


def test_window_arguments():
    check_op(*both(lambda m: lambda: m.hamming_window(9, False, alpha=0.6, beta=0.4)), [])
    check_op(*both(lambda m: lambda: m.kaiser_window(9, True, 5.0)), [])
    assert engine.hann_window(4, requires_grad=True).requires_grad
    same_error(lambda m: m.hann_window(-1))


def test_can_cast_typename_to_dense_and_unsafe_splits():
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
    for a in names:
        for b in names:
            assert engine.can_cast(getattr(engine, a), getattr(engine, b)) == torch.can_cast(getattr(torch, a),
                                                                                               getattr(torch, b))
    assert engine.typename(engine.ones(2)) == "engine.FloatTensor" and engine.typename(3) == torch.typename(3)
    assert engine.typename(engine.float32) == "engine._dtype.dtype"
    x = engine.ones(2, 3)
    assert x.to_dense() is x and x.to_dense(engine.float64).dtype is engine.float64
    check_op(*both(lambda m: lambda t: t.unsafe_chunk(2, 1)), [randn(2, 5)])
    check_op(*both(lambda m: lambda t: m.unsafe_split(t, 2)), [randn(5, 2)])
    check_op(*both(lambda m: lambda t: t.unsafe_split_with_sizes([1, 4])), [randn(5)])


# ---- on the CUDA backend (a GPU, or CuPy's emulation here) ----------------------------------------------------
CUDA_CASES = {
    "hypot": (lambda m: m.hypot, lambda: [randn(3, 4), randn(4)]),
    "xlogy": (lambda m: m.xlogy, lambda: [randn(3, 4), uniform(0.1, 2, 4)]),
    "logaddexp": (lambda m: m.logaddexp, lambda: [randn(3, 4), randn(3, 1)]),
    "fmax": (lambda m: m.fmax, lambda: [randn(3, 4), randn(4)]),
    "copysign": (lambda m: m.copysign, lambda: [randn(3, 4), randn(4)]),
    "erfinv": (lambda m: m.erfinv, lambda: [uniform(-0.9, 0.9, 3, 4)]),
    "lgamma": (lambda m: m.lgamma, lambda: [uniform(0.5, 5, 3, 4)]),
    "digamma": (lambda m: m.digamma, lambda: [uniform(0.5, 5, 3, 4)]),
    "logit": (lambda m: lambda x: m.logit(x, 0.1), lambda: [uniform(0.01, 0.99, 3, 4)]),
    "cummax": (lambda m: lambda x: m.cummax(x, 1), lambda: [np.round(randn(3, 5))]),
    "logcumsumexp": (lambda m: lambda x: m.logcumsumexp(x, 0), lambda: [randn(4, 3)]),
    "diff": (lambda m: lambda x: m.diff(x, 2), lambda: [randn(3, 6)]),
    "cdist": (lambda m: m.cdist, lambda: [randn(2, 4, 3), randn(2, 5, 3)]),
    "unfold": (lambda m: lambda x: x.unfold(1, 3, 2), lambda: [randn(2, 7)]),
    "diag_embed": (lambda m: lambda x: m.diag_embed(x, 1), lambda: [randn(2, 3)]),
    "quantile": (lambda m: lambda x: m.quantile(x, 0.3, dim=1), lambda: [randn(3, 6)]),
    "mode": (lambda m: lambda x: m.mode(x, 1), lambda: [np.round(randn(3, 7))]),
    "nanmedian": (lambda m: lambda x: m.nanmedian(x, 0), lambda: [np.where(randn(5, 3) > 1, np.nan, randn(5, 3))]),
    "cov": (lambda m: m.cov, lambda: [randn(3, 5)]),
    "kron": (lambda m: m.kron, lambda: [randn(2, 2), randn(2, 3)]),
    "renorm": (lambda m: lambda x: m.renorm(x, 2, 0, 1.0), lambda: [randn(3, 4)]),
    "addcmul_": (lambda m: lambda x, a, b: (x * 1).addcmul_(a, b, value=0.5),
                 lambda: [randn(3, 4), randn(4), randn(3, 1)]),
    "lerp_": (lambda m: lambda x, y: (x * 1).lerp_(y, 0.3), lambda: [randn(3, 4), randn(3, 4)]),
    "hypot_": (lambda m: lambda x, y: (x * 1).hypot_(y), lambda: [randn(3, 4), randn(4)]),
    "t_": (lambda m: lambda x: (x * 1).t_(), lambda: [randn(3, 4)]),
    "scatter_reduce": (lambda m: lambda x, s: x.scatter_reduce(0, m.tensor([[0, 1], [0, 0]], device=x.device), s,
                                                                 "amax"),
                       lambda: [randn(2, 2), randn(2, 2)]),
    "scatter_reduce_prod": (lambda m: lambda x, s: x.scatter_reduce(1, m.tensor([[0, 0, 2]], device=x.device), s,
                                                                      "prod"),
                            lambda: [randn(1, 3), np.array([[2.0, 0.0, -1.5]], np.float32)]),
    "cummin_nan": (lambda m: lambda x: m.cummin(x, 0), lambda: [np.array([3.0, 1.0, np.nan, 0.5, 1.0], np.float32)]),
}


@pytest.mark.parametrize("name", list(CUDA_CASES))
def test_ops_on_cuda(cuda, name):
    make, inputs = CUDA_CASES[name]
    check_op(*both(make), inputs(), rtol=2e-5, device="cuda")


def test_counting_and_index_sets_on_cuda(cuda):
    values = engine.from_numpy(RNG.integers(0, 6, 30)).cuda()
    assert values.bincount().device.type == "cuda"
    np.testing.assert_array_equal(values.bincount().cpu().numpy(), np.bincount(values.cpu().numpy()))
    data = engine.from_numpy(randn(50)).cuda()
    assert data.histc(5).cpu().tolist() == torch.histc(torch.from_numpy(data.cpu().numpy()), 5).tolist()
    found = engine.isin(values, engine.tensor([1, 2], device="cuda"))
    assert found.device.type == "cuda" and found.cpu().tolist() == np.isin(values.cpu().numpy(), [1, 2]).tolist()
    assert engine.tril_indices(3, 3, device="cuda").device.type == "cuda"
