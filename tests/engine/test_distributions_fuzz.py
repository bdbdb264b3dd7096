"""Cases found by differential fuzzing of engine.distributions against torch.distributions: triangular packing
at its smallest sizes (CorrCholeskyTransform of 2 x 2 matrices, empty vectors), torch's errors for bad diagonals
and sizes, a second backward through a distribution's parameters (Gumbel, LowRankMultivariateNormal), and a
seeded sample of the sweep (scoring, moments and gradients of broadcast parameters, transforms at their edges).
"""
import numpy as np
import pytest
import torch

import engine
import engine.distributions  # noqa: F401  (the submodule, as torch.distributions)
import engine.distributions.utils as EU
import torch.distributions.utils as TU
from tests.op_check import check_op

pytestmark = pytest.mark.slow  # ~3 s in all on a quiet machine

RNG = np.random.default_rng(2026)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test draws the same values however the tests are ordered or spread over workers."""
    global RNG
    RNG = np.random.default_rng(2026)


def _corr_cholesky(batch, n):
    a = RNG.standard_normal(batch + (n, n + 2))
    s = a @ np.swapaxes(a, -1, -2)
    d = np.sqrt(np.diagonal(s, axis1=-2, axis2=-1))
    return np.linalg.cholesky(s / d[..., :, None] / d[..., None, :])


# ---- triangular packing at the smallest sizes -----------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3])
def test_corr_cholesky_inverse_and_log_det_of_small_matrices(n):
    """The log-det sums the entries two below the diagonal: none for 2 x 2 (was an unpacking error)."""
    y = _corr_cholesky((3,), n)

    def run(lib):
        def fn(y):
            t = lib.distributions.transforms.CorrCholeskyTransform()
            x = t.inv(y)
            return x, t.log_abs_det_jacobian(x, t(x))
        return fn
    check_op(run(engine), run(torch), [y], rtol=1e-8)


@pytest.mark.parametrize("shape,diag", [((2, 0), -1), ((3,), 0), ((2, 3), -1), ((4,), 1)])
def test_vec_to_tril_matrix_matches_torch(shape, diag):
    vec = RNG.standard_normal(shape)
    check_op(lambda v: EU.vec_to_tril_matrix(v, diag), lambda v: TU.vec_to_tril_matrix(v, diag), [vec])


@pytest.mark.parametrize("n,diag", [(2, -2), (3, -3), (3, 0), (3, 2)])
def test_tril_matrix_to_vec_matches_torch(n, diag):
    mat = RNG.standard_normal((2, n, n))
    check_op(lambda m: EU.tril_matrix_to_vec(m, diag), lambda m: TU.tril_matrix_to_vec(m, diag), [mat])


@pytest.mark.parametrize("call", [
    lambda U, lib: U.tril_matrix_to_vec(lib.ones(2, 2), diag=-3),
    lambda U, lib: U.tril_matrix_to_vec(lib.ones(2, 2), diag=2),
    lambda U, lib: U.vec_to_tril_matrix(lib.ones(5)),
    lambda U, lib: (lambda t, x: t.log_abs_det_jacobian(x, t(x)))(lib.distributions.transforms.CorrCholeskyTransform(),
                                                                  lib.zeros(2, 0)),
], ids=["diag-below", "diag-above", "not-triangular", "corr-cholesky-of-nothing"])
def test_triangular_packing_errors_match_torch(call):
    with pytest.raises(ValueError) as theirs:
        call(TU, torch)
    with pytest.raises(ValueError) as ours:
        call(EU, engine)
    assert str(ours.value) == str(theirs.value)


def test_utils_public_names_match_torch():
    assert sorted(EU.__all__) == sorted(TU.__all__)
    assert EU.euler_constant == TU.euler_constant


@pytest.mark.parametrize("shape", [(5,), [5], "size"])
def test_reshape_transform_shape_error_shows_the_shape_as_given(shape):
    def message(lib):
        t = lib.distributions.transforms.ReshapeTransform((4,), (2, 2))
        with pytest.raises(ValueError) as e:
            t.forward_shape(lib.Size([3, 5]) if shape == "size" else shape)
        return str(e.value).replace("torch.", "engine.")
    assert message(engine) == message(torch)


# ---- matrix constraints ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["positive_definite", "positive_semidefinite"])
@pytest.mark.parametrize("batch", [(), (2,)])
def test_matrix_definiteness_check_has_the_batch_shape(name, batch):
    """One matrix gives a 0-dim answer, as torch's (was shape (1,), so Wishart's support check broadcast wrong)."""
    a = RNG.standard_normal(batch + (3, 3))
    mats = np.stack([a @ np.swapaxes(a, -1, -2) + np.eye(3), -np.eye(3) - a @ np.swapaxes(a, -1, -2)])

    for m in mats:
        ours = getattr(engine.distributions.constraints, name).check(engine.from_numpy(m.copy()))
        theirs = getattr(torch.distributions.constraints, name).check(torch.from_numpy(m.copy()))
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == engine.bool
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    support = engine.distributions.Wishart(engine.tensor(4.0), engine.eye(3)).support
    assert tuple(support.check(engine.from_numpy(mats[0].astype(np.float32))).shape) == batch


def test_corr_cholesky_check_of_a_number_raises_torchs_index_error():
    def message(lib):
        with pytest.raises(IndexError) as e:
            lib.distributions.constraints.corr_cholesky.check(lib.tensor(2.0))
        return str(e.value)
    assert message(engine) == message(torch)


# ---- a second backward through the parameters -----------------------------------------------------------
def _twice(lib, make, method, params):
    """Gradients of ``method`` of one distribution taken twice, each by its own backward."""
    ps = [lib.from_numpy(p.copy()).requires_grad_() for p in params]
    d = make(lib, *ps)
    grads = []
    for _ in range(2):
        lib.manual_seed(0)
        out = method(lib, d)
        grads.append(lib.autograd.grad(out.sum(), ps, allow_unused=True))
    return grads


TWICE = [
    ("Gumbel-icdf", lambda lib, loc, scale: lib.distributions.Gumbel(loc, scale),
     lambda lib, d: d.icdf(lib.tensor([0.2, 0.5, 0.9], dtype=lib.float64)), 2),
    ("Gumbel-rsample", lambda lib, loc, scale: lib.distributions.Gumbel(loc, scale),
     lambda lib, d: d.rsample((2,)), 2),
    ("Gumbel-cdf", lambda lib, loc, scale: lib.distributions.Gumbel(loc, scale),
     lambda lib, d: d.cdf(lib.tensor([0.2, -0.5, 1.9], dtype=lib.float64)), 2),
    ("LowRankMVN-mean", lambda lib, loc, w, d: lib.distributions.LowRankMultivariateNormal(loc, w.reshape(3, 1), d),
     lambda lib, d: d.mean, 3),
    ("LowRankMVN-rsample", lambda lib, loc, w, d: lib.distributions.LowRankMultivariateNormal(loc, w.reshape(3, 1),
                                                                                               d),
     lambda lib, d: d.rsample((2,)), 3),
]


@pytest.mark.parametrize("make,method,n", [c[1:] for c in TWICE], ids=[c[0] for c in TWICE])
def test_second_backward_through_parameters_works_as_in_torch(make, method, n):
    """torch's negation and views save nothing, so their graph can be walked again (was: 'Trying to backward
    through the graph a second time')."""
    params = [RNG.standard_normal(3), RNG.uniform(0.5, 2, 3), RNG.uniform(0.5, 2, 3)][:n]
    ours, theirs = _twice(engine, make, method, params), _twice(torch, make, method, params)
    for o, t in zip(ours, theirs):
        for a, b in zip(o, t):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)


@pytest.mark.parametrize("loc_shape,factor_shape,diag_shape", [
    ((3,), (2, 1, 3, 1), (4, 3)), ((2, 3), (5, 1, 3, 2), (3,)), ((2, 3), (3, 2), (3,))])
def test_lowrank_mvn_broadcasts_its_parameters_as_torch(loc_shape, factor_shape, diag_shape):
    loc, w, d = RNG.standard_normal(loc_shape), RNG.standard_normal(factor_shape), RNG.uniform(0.5, 2, diag_shape)
    value = RNG.standard_normal((3,))

    def run(lib):
        def fn(loc, w, d, value):
            dist = lib.distributions.LowRankMultivariateNormal(loc, w, d)
            return dist.loc, dist.cov_factor, dist.cov_diag, dist.log_prob(value), dist.variance
        return fn
    check_op(run(engine), run(torch), [loc, w, d, value], rtol=1e-9)


@pytest.mark.parametrize("name", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_mvn_one_dimensional_matrix_error_is_torchs(name):
    def message(lib):
        with pytest.raises(ValueError) as e:
            lib.distributions.MultivariateNormal(lib.zeros(2), **{name: lib.ones(2)})
        return str(e.value)
    assert message(engine) == message(torch)


def test_lowrank_mvn_incompatible_batches_raise_torchs_error():
    def message(lib):
        with pytest.raises(ValueError) as e:
            lib.distributions.LowRankMultivariateNormal(lib.zeros(2, 3), lib.ones(3, 3, 1), lib.ones(3))
        return str(e.value).replace("torch.", "engine.")
    assert message(engine) == message(torch)


# ---- a seeded sample of the sweep -----------------------------------------------------------------------
def _pos(*shape):
    return RNG.uniform(0.5, 2.5, shape)


SWEEP = [
    ("Gumbel", lambda: [RNG.standard_normal((3, 1)), _pos(4)], lambda: RNG.standard_normal((2, 3, 4))),
    ("Laplace", lambda: [RNG.standard_normal(4), _pos(3, 1)], lambda: RNG.standard_normal((3, 4))),
    ("Weibull", lambda: [_pos(1, 4), _pos(3, 1)], lambda: _pos(3, 4)),
    ("Kumaraswamy", lambda: [_pos(4), _pos(3, 1)], lambda: RNG.uniform(0.05, 0.95, (3, 4))),
    ("Cauchy", lambda: [RNG.standard_normal(4), _pos(3, 4)], lambda: RNG.standard_normal((3, 4))),
    ("Pareto", lambda: [RNG.uniform(0.1, 0.4, 4), _pos(3, 1)], lambda: _pos(3, 4)),
    ("HalfCauchy", lambda: [_pos(3, 4)], lambda: _pos(2, 3, 4)),
]


@pytest.mark.parametrize("name,params,value", SWEEP, ids=[c[0] for c in SWEEP])
def test_sweep_sample_scoring_moments_and_gradients(name, params, value):
    """log_prob, cdf and mean, their gradients in the parameters and the value, and an rsample under one seed,
    for parameters of shapes that broadcast (float64)."""
    ps, v = params(), value()

    def run(lib):
        def fn(*args):
            d = getattr(lib.distributions, name)(*args[:-1])
            lib.manual_seed(3)
            draw = d.rsample((2,)) if d.has_rsample else d.sample((2,))
            return d.log_prob(args[-1]), d.cdf(args[-1]), d.mean, draw
        return fn
    check_op(run(engine), run(torch), ps + [v], rtol=1e-8, grad_rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["ExpTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform"])
def test_sweep_transforms_at_extreme_inputs(name, dtype):
    x = np.array([-1e4, -100., -17., 0., 1e-8, 17., 100., 1e4], dtype=dtype)

    def run(lib):
        def fn(x):
            t = getattr(lib.distributions.transforms, name)()
            y = t(x)
            return y, t.log_abs_det_jacobian(x, y)
        return fn
    check_op(run(engine), run(torch), [x], rtol=1e-5 if dtype == "float32" else 1e-10)


def test_fixed_paths_on_cuda(cuda):
    """The small-matrix packing, the definiteness checks and LowRankMultivariateNormal's broadcast on the CUDA
    backend (the CPU emulation of CuPy here)."""
    x, w, d = RNG.standard_normal((2, 1)), RNG.standard_normal((2, 3, 1)), RNG.uniform(0.5, 2, 3)

    def run(lib):
        def fn(x, w, d):
            t = lib.distributions.transforms.CorrCholeskyTransform()
            y = t(x)
            dist = lib.distributions.LowRankMultivariateNormal(x.new_zeros(3), w, d)
            pd = lib.distributions.constraints.positive_definite.check(dist.covariance_matrix[0])
            return y, t.log_abs_det_jacobian(x, y), dist.log_prob(d), dist.mean, pd
        return fn
    check_op(run(engine), run(torch), [x, w, d], rtol=1e-9, device="cuda")
