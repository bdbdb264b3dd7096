"""Distributions over vectors and matrices against torch.distributions: MultivariateNormal in its three
parameterisations, LowRankMultivariateNormal, Dirichlet, Independent, MixtureSameFamily, the relaxed
(Concrete) distributions, LogisticNormal, LKJCholesky and Wishart: log_prob, entropy, moments and derived
matrices with gradients; draws equal to torch's where torch draws through normal_/rand; shapes."""
import numpy as np
import pytest
import torch

import engine
from distribution_check import check_methods, same_samples, tensors
from op_check import check_op

RNG = np.random.default_rng(2)
N = 3


def spd(*batch):
    a = RNG.standard_normal(batch + (N, N))
    return a @ np.swapaxes(a, -1, -2) + N * np.eye(N)


def lower(*batch):
    return np.tril(RNG.standard_normal(batch + (N, N)), -1) + np.diag(RNG.uniform(0.5, 2.0, N))


MVN_METHODS = ("log_prob", "entropy", "mean", "mode", "variance", "covariance_matrix", "precision_matrix",
               "scale_tril")


@pytest.mark.parametrize("parameter,matrix", [("covariance_matrix", spd(2)), ("precision_matrix", spd(2)),
                                             ("scale_tril", lower())])
def test_multivariate_normal_matches_torch(parameter, matrix):
    loc, value = RNG.standard_normal((4, 1, N)), RNG.standard_normal((4, 2, N))
    # the matrix goes in by keyword: wrapped so both sides receive it as a differentiable input
    for method in MVN_METHODS:
        def run(module, method=method):
            def fn(loc, m, value):
                d = module.distributions.MultivariateNormal(loc, **{parameter: m})
                out = getattr(d, method)
                return out(value) if method == "log_prob" else out() if callable(out) else out
            return fn
        check_op(run(engine), run(torch), [loc, matrix, value], rtol=1e-9)


def test_low_rank_multivariate_normal_matches_torch():
    loc, factor, diag = RNG.standard_normal((2, N)), RNG.standard_normal((2, N, 2)), RNG.uniform(0.5, 2.0, N)
    check_methods("LowRankMultivariateNormal", [loc, factor, diag], value=RNG.standard_normal((5, 2, N)),
                  methods=MVN_METHODS, rtol=1e-9)


def test_multivariate_normal_samples_equal_torch():
    loc, tril = RNG.standard_normal(N), lower(2)
    same_samples(lambda m: m.distributions.MultivariateNormal(*tensors(m, loc), scale_tril=tensors(m, tril)[0]),
                 seed=3, sample_shape=(4,), method="rsample")
    loc, factor, diag = RNG.standard_normal(N), RNG.standard_normal((N, 2)), RNG.uniform(0.5, 2.0, N)
    same_samples(lambda m: m.distributions.LowRankMultivariateNormal(*tensors(m, loc, factor, diag)), seed=4,
                 sample_shape=(2, 3), method="rsample")


def test_multivariate_normal_rsample_gradient_matches_torch():
    def run(module):
        def fn(loc, cov):
            module.manual_seed(9)
            return module.distributions.MultivariateNormal(loc, covariance_matrix=cov).rsample((5,))
        return fn
    check_op(run(engine), run(torch), [RNG.standard_normal(N), spd()], rtol=1e-9)


def test_dirichlet_independent_and_mixture_match_torch():
    conc = RNG.uniform(0.5, 3.0, (2, 4))
    value = RNG.dirichlet(np.ones(4), (3, 2))
    check_methods("Dirichlet", [conc], value=value, methods=("log_prob", "entropy", "mean", "mode", "variance"),
                  rtol=1e-9)
    check_methods("Dirichlet", [RNG.uniform(0.2, 0.9, (2, 4))], methods=("mode",))  # all below one: a corner

    def independent(module):
        def fn(loc, scale, value):
            d = module.distributions.Independent(module.distributions.Normal(loc, scale), 1)
            assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
            return d.log_prob(value), d.entropy(), d.mean, d.variance
        return fn
    check_op(independent(engine), independent(torch), [RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2, (2, 3)),
                                                       RNG.standard_normal((4, 2, 3))])

    def mixture(module):
        def fn(logits, loc, scale, value):
            d = module.distributions.MixtureSameFamily(
                module.distributions.Categorical(logits=logits),
                module.distributions.Independent(module.distributions.Normal(loc, scale), 1))
            return d.log_prob(value), d.mean, d.variance
        return fn
    check_op(mixture(engine), mixture(torch), [RNG.standard_normal((2, 5)), RNG.standard_normal((2, 5, 3)),
                                               RNG.uniform(0.5, 2, (2, 5, 3)), RNG.standard_normal((4, 2, 3))],
             rtol=1e-9)

    def univariate_mixture(module):
        def fn(probs, loc, scale, value):
            d = module.distributions.MixtureSameFamily(module.distributions.Categorical(probs),
                                                       module.distributions.Normal(loc, scale))
            return d.log_prob(value), d.cdf(value), d.mean, d.variance
        return fn
    p = RNG.uniform(0.1, 1, 4)
    check_op(univariate_mixture(engine), univariate_mixture(torch),
             [p / p.sum(), RNG.standard_normal(4), RNG.uniform(0.5, 2, 4), RNG.standard_normal((3, 1))], rtol=1e-9)


def test_mixture_samples_equal_torch():
    logits, loc, scale = RNG.standard_normal((2, 5)), RNG.standard_normal((2, 5, 3)), RNG.uniform(0.5, 2, (2, 5, 3))
    same_samples(lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(logits=tensors(m, logits)[0]),
        m.distributions.Independent(m.distributions.Normal(*tensors(m, loc, scale)), 1)), seed=6, sample_shape=(4,))


def test_relaxed_distributions_and_logistic_normal_match_torch():
    temperature = np.array([0.7])
    check_methods("RelaxedBernoulli", [temperature, RNG.uniform(0.1, 0.9, (2, 3))],
                  value=RNG.uniform(0.05, 0.95, (4, 2, 3)), methods=("log_prob",), rtol=1e-9)
    probs = RNG.dirichlet(np.ones(4), 2)
    check_methods("RelaxedOneHotCategorical", [temperature, probs], value=RNG.dirichlet(np.ones(4), (3, 2)),
                  methods=("log_prob",), rtol=1e-9)
    check_methods("LogisticNormal", [RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2, 3)],
                  value=RNG.dirichlet(np.ones(4), (5, 2)), methods=("log_prob",), rtol=1e-9)
    for name, params in (("RelaxedBernoulli", [temperature, RNG.uniform(0.1, 0.9, 3)]),
                         ("RelaxedOneHotCategorical", [temperature, probs]),
                         ("LogisticNormal", [RNG.standard_normal(3), RNG.uniform(0.5, 2, 3)])):
        same_samples(lambda m: getattr(m.distributions, name)(*tensors(m, *params)), seed=1, sample_shape=(5,),
                     method="rsample")


def test_lkj_cholesky_matches_torch():
    conc = RNG.uniform(0.5, 3.0, 2)
    e = engine.distributions.LKJCholesky(4, engine.from_numpy(conc))
    t = torch.distributions.LKJCholesky(4, torch.from_numpy(conc))
    engine.manual_seed(0)
    value = e.sample((3,))
    assert tuple(value.shape) == (3, 2, 4, 4)
    assert bool(engine.distributions.constraints.corr_cholesky.check(value).all())
    check_op(lambda c, v: engine.distributions.LKJCholesky(4, c).log_prob(v),
             lambda c, v: torch.distributions.LKJCholesky(4, c).log_prob(v), [conc, value.numpy()], rtol=1e-9)
    assert tuple(e.batch_shape) == tuple(t.batch_shape) and tuple(e.event_shape) == tuple(t.event_shape)


@pytest.mark.parametrize("parameter", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch(parameter):
    df = np.array([4.5, 6.0])
    matrix = lower() if parameter == "scale_tril" else spd()
    value = np.stack([spd() for _ in range(2)])
    for method in ("log_prob", "entropy", "mean", "mode", "variance"):
        def run(module, method=method):
            def fn(df, m, value):
                d = module.distributions.Wishart(df, **{parameter: m})
                out = getattr(d, method)
                return out(value) if method == "log_prob" else out() if callable(out) else out
            return fn
        check_op(run(engine), run(torch), [df, matrix, value], rtol=1e-8)
    engine.manual_seed(0)
    d = engine.distributions.Wishart(engine.from_numpy(df), covariance_matrix=engine.from_numpy(spd()))
    sample = d.rsample((4000,))
    assert tuple(sample.shape) == (4000, 2, N, N)
    assert bool(engine.distributions.constraints.positive_definite.check(sample).all())
    standard_error = np.sqrt(d.variance.numpy() / 4000)
    assert np.all(np.abs(sample.numpy().mean(0) - d.mean.numpy()) < 5 * standard_error)


def test_cholesky_and_triangular_solve_helpers_match_torch():
    from engine.distributions._linalg import cholesky, solve_triangular
    check_op(lambda a: cholesky(a), lambda a: torch.linalg.cholesky(a), [spd(2, 2)], rtol=1e-10)
    check_op(lambda l, b: solve_triangular(l, b), lambda l, b: torch.linalg.solve_triangular(l, b, upper=False),
             [lower(2), RNG.standard_normal((4, 1, N, 2))], rtol=1e-10)
    with pytest.raises(RuntimeError, match="not positive-definite"):
        cholesky(engine.tensor([[1.0, 2.0], [2.0, 1.0]]))
