"""kl_divergence for every pair torch registers, against torch on seeded parameters of a batch of 3, with the
gradients of both distributions' parameters; the registry's pairs equal torch's; dispatch, register_kl and the
errors."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op
from torch.distributions import kl as torch_kl

RNG = np.random.default_rng(3)
B = 3


def _spd():
    a = RNG.standard_normal((B, 2, 2))
    return a @ np.swapaxes(a, -1, -2) + 2 * np.eye(2)


# name -> (parameter arrays, how to build from tensors)
FACTORIES = {
    "Bernoulli": (lambda: [RNG.uniform(0.1, 0.9, B)], lambda D, p: D.Bernoulli(p)),
    "Beta": (lambda: [RNG.uniform(0.5, 3, B), RNG.uniform(0.5, 3, B)], lambda D, a, b: D.Beta(a, b)),
    "Binomial": (lambda: [RNG.uniform(0.1, 0.9, B)], lambda D, p: D.Binomial(5, p)),
    "Categorical": (lambda: [RNG.dirichlet(np.ones(4), B)], lambda D, p: D.Categorical(p)),
    "ContinuousBernoulli": (lambda: [RNG.uniform(0.1, 0.9, B)], lambda D, p: D.ContinuousBernoulli(p)),
    "Dirichlet": (lambda: [RNG.uniform(0.5, 3, (B, 4))], lambda D, c: D.Dirichlet(c)),
    "Exponential": (lambda: [RNG.uniform(0.5, 3, B)], lambda D, r: D.Exponential(r)),
    "ExponentialFamily": None,
    "Gamma": (lambda: [RNG.uniform(0.5, 3, B), RNG.uniform(0.5, 3, B)], lambda D, a, b: D.Gamma(a, b)),
    "Geometric": (lambda: [RNG.uniform(0.1, 0.9, B)], lambda D, p: D.Geometric(p)),
    "Gumbel": (lambda: [RNG.standard_normal(B), RNG.uniform(0.5, 2, B)], lambda D, a, b: D.Gumbel(a, b)),
    "HalfNormal": (lambda: [RNG.uniform(0.5, 2, B)], lambda D, s: D.HalfNormal(s)),
    "Independent": (lambda: [RNG.standard_normal((B, 2)), RNG.uniform(0.5, 2, (B, 2))],
                    lambda D, a, b: D.Independent(D.Normal(a, b), 1)),
    "Laplace": (lambda: [RNG.standard_normal(B), RNG.uniform(0.5, 2, B)], lambda D, a, b: D.Laplace(a, b)),
    "LowRankMultivariateNormal": (lambda: [RNG.standard_normal((B, 2)), RNG.standard_normal((B, 2, 1)),
                                           RNG.uniform(0.5, 2, (B, 2))],
                                  lambda D, a, w, d: D.LowRankMultivariateNormal(a, w, d)),
    "MultivariateNormal": (lambda: [RNG.standard_normal((B, 2)), _spd()],
                           lambda D, a, c: D.MultivariateNormal(a, covariance_matrix=c)),
    "Normal": (lambda: [RNG.standard_normal(B), RNG.uniform(0.5, 2, B)], lambda D, a, b: D.Normal(a, b)),
    "OneHotCategorical": (lambda: [RNG.dirichlet(np.ones(4), B)], lambda D, p: D.OneHotCategorical(p)),
    "Pareto": (lambda: [RNG.uniform(0.5, 2, B), RNG.uniform(2.5, 5, B)], lambda D, s, a: D.Pareto(s, a)),
    "Poisson": (lambda: [RNG.uniform(0.5, 4, B)], lambda D, r: D.Poisson(r)),
    "TransformedDistribution": (lambda: [RNG.standard_normal(B), RNG.uniform(0.5, 2, B)],
                                lambda D, a, b: D.TransformedDistribution(D.Normal(a, b), [D.ExpTransform()])),
    "Uniform": (lambda: [RNG.uniform(0.1, 0.3, B), RNG.uniform(0.6, 0.9, B)], lambda D, a, b: D.Uniform(a, b)),
    "Cauchy": (lambda: [RNG.standard_normal(B), RNG.uniform(0.5, 2, B)], lambda D, a, b: D.Cauchy(a, b)),
}
TORCH_PAIRS = sorted((p.__name__, q.__name__) for p, q in torch_kl._KL_REGISTRY)


def test_registered_pairs_equal_torchs():
    ours = sorted((p.__name__, q.__name__) for p, q in engine.distributions.kl._KL_REGISTRY)
    assert ours == TORCH_PAIRS


@pytest.mark.parametrize("p_name,q_name", [pq for pq in TORCH_PAIRS if "ExponentialFamily" not in pq],
                         ids=[f"{p}-{q}" for p, q in TORCH_PAIRS if "ExponentialFamily" not in (p, q)])
def test_kl_matches_torch(p_name, q_name):
    p_arrays, p_make = FACTORIES[p_name][0](), FACTORIES[p_name][1]
    q_arrays, q_make = FACTORIES[q_name][0](), FACTORIES[q_name][1]
    n = len(p_arrays)

    def run(module):
        def fn(*arrays):
            D = module.distributions
            return D.kl_divergence(p_make(D, *arrays[:n]), q_make(D, *arrays[n:]))
        return fn
    check_op(run(engine), run(torch), p_arrays + q_arrays, rtol=1e-9, grad_rtol=1e-8)


def test_infinite_where_supports_do_not_nest_and_gradients_stay_finite():
    def run(module):
        def fn(a, b, c, d):
            D = module.distributions
            return D.kl_divergence(D.Uniform(a, b), D.Uniform(c, d))
        return fn
    out = check_op(run(engine), run(torch), [np.array([0.0, 0.0]), np.array([1.0, 2.0]), np.array([-1.0, 0.5]),
                                              np.array([2.0, 3.0])])
    assert np.isinf(out[0].detach().numpy()[1])


def test_bregman_kl_for_exponential_families_without_a_closed_form_pair():
    """Wishart has no closed-form pair: both sides fall back to the Bregman divergence of the log normaliser."""
    def spd(i):
        a = np.random.default_rng(i).standard_normal((2, 2))
        return a @ a.T + 2 * np.eye(2)

    def run(module):
        def fn(df_p, cov_p, df_q, cov_q):
            D = module.distributions
            return D.kl_divergence(D.Wishart(df_p, covariance_matrix=cov_p), D.Wishart(df_q, covariance_matrix=cov_q))
        return fn
    check_op(run(engine), run(torch), [np.array([3.5]), spd(0), np.array([4.0]), spd(1)], rtol=1e-9)


def test_exponential_family_entropy_from_the_log_normalizer_matches_torch():
    conc, rate = RNG.uniform(0.5, 3, B), RNG.uniform(0.5, 3, B)
    for name, args in (("Gamma", (conc, rate)), ("Exponential", (rate,)), ("Normal", (conc, rate))):
        ours = engine.distributions.ExponentialFamily.entropy(
            getattr(engine.distributions, name)(*(engine.from_numpy(a) for a in args)))
        ref = torch.distributions.ExponentialFamily.entropy(
            getattr(torch.distributions, name)(*(torch.from_numpy(a) for a in args)))
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-12)


def test_register_kl_dispatch_and_errors():
    D = engine.distributions

    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def _kl_wide(p, q):
        return engine.full(p.batch_shape, 7.0)

    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == 7.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), Wide(0.0, 2.0)).item() != 7.0  # falls back to Normal-Normal
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for p type Normal and q "
                                                  "type VonMises"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.VonMises(0.0, 1.0))
    with pytest.raises(TypeError, match="Distribution subclass"):
        D.register_kl(int, D.Normal)
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(D.Binomial(3, engine.tensor([0.5])), D.Binomial(5, engine.tensor([0.5])))
