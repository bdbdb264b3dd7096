"""Discrete distributions against torch.distributions: log_prob, entropy, moments and enumerate_support with
gradients of probs/logits, draws equal to torch's under the same seed (Bernoulli, Categorical, OneHotCategorical,
Geometric, Multinomial) and, for the counts torch draws with its own C++ samplers (Poisson, Binomial,
NegativeBinomial), the same distribution at a fixed seed."""
import numpy as np
import pytest
import torch

import engine
from distribution_check import check_methods, same_samples, tensors

RNG = np.random.default_rng(1)


def unit(*shape):
    return RNG.uniform(0.05, 0.95, shape)


def simplex(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


MOMENTS = ("entropy", "mean", "mode", "variance")
CASES = [
    ("Bernoulli", [unit(3, 4)], RNG.integers(0, 2, (3, 4)).astype(float), MOMENTS),
    ("Bernoulli", [None, RNG.standard_normal((3, 4))], RNG.integers(0, 2, (2, 3, 4)).astype(float), MOMENTS),
    ("Categorical", [simplex(3, 5)], RNG.integers(0, 5, (2, 3)).astype(float), ("entropy", "mode")),
    ("Categorical", [None, RNG.standard_normal((3, 5))], RNG.integers(0, 5, (3,)).astype(float), ("entropy",)),
    ("Geometric", [unit(3, 4)], RNG.integers(0, 6, (3, 4)).astype(float), MOMENTS),
    ("Poisson", [RNG.uniform(0.5, 6, (3, 4))], RNG.integers(0, 8, (3, 4)).astype(float),
     ("mean", "mode", "variance")),
    ("Binomial", [np.full((3, 4), 7.0), unit(3, 4)], RNG.integers(0, 8, (3, 4)).astype(float), MOMENTS),
    ("Binomial", [np.full(4, 5.0), None, RNG.standard_normal((3, 4))], RNG.integers(0, 6, (3, 4)).astype(float),
     MOMENTS),
    ("NegativeBinomial", [RNG.uniform(1, 5, 4), None, RNG.standard_normal((3, 4))],
     RNG.integers(0, 8, (3, 4)).astype(float), ("mean", "mode", "variance")),
    ("Geometric", [None, RNG.standard_normal((3, 4))], RNG.integers(0, 6, (3, 4)).astype(float), MOMENTS),
    ("NegativeBinomial", [RNG.uniform(1, 5, (3, 4)), unit(4)], RNG.integers(0, 8, (3, 4)).astype(float),
     ("mean", "mode", "variance")),
]


@pytest.mark.parametrize("name,params,value,methods", CASES, ids=[c[0] for c in CASES])
def test_methods_and_gradients_match_torch(name, params, value, methods):
    """probs (or, after a None for probs, logits) get gradients; the scored value is a count."""
    check_methods(name, params, value=value, methods=("log_prob",) + methods, value_grad=False)


def test_one_hot_categorical_and_multinomial_match_torch():
    probs = simplex(3, 4)
    value = np.eye(4)[RNG.integers(0, 4, (2, 3))]
    check_methods("OneHotCategorical", [probs], value=value, methods=("log_prob", "entropy", "mean", "mode",
                                                                      "variance"), value_grad=False)
    counts = RNG.multinomial(6, [0.25] * 4, (2, 3)).astype(float)
    check_methods("Multinomial", [6, probs], value=counts, methods=("log_prob", "entropy", "mean", "variance"),
                  value_grad=False)


def test_enumerate_support_matches_torch():
    for name, args in (("Bernoulli", (unit(2, 3),)), ("Categorical", (simplex(2, 4),)),
                       ("OneHotCategorical", (simplex(2, 4),)), ("Binomial", (5, unit(2, 3)))):
        for expand in (True, False):
            ours = getattr(engine.distributions, name)(*tensors(engine, *args)).enumerate_support(expand)
            ref = getattr(torch.distributions, name)(*tensors(torch, *args)).enumerate_support(expand)
            np.testing.assert_array_equal(ours.numpy(), ref.numpy())
            assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]


STREAMED = [("Bernoulli", [unit(3, 4)]), ("Categorical", [simplex(3, 5)]), ("OneHotCategorical", [simplex(2, 5)]),
            ("Geometric", [unit(4)]), ("Multinomial", [9, simplex(2, 5)])]


@pytest.mark.parametrize("name,params", STREAMED, ids=[s[0] for s in STREAMED])
def test_samples_equal_torch_under_the_same_seed(name, params):
    same_samples(lambda m: getattr(m.distributions, name)(*tensors(m, *params)), seed=5, sample_shape=(4, 3))


def test_straight_through_rsample_passes_the_probabilities_gradient():
    probs = simplex(2, 4)
    engine.manual_seed(2)
    p_e = engine.from_numpy(probs).requires_grad_()
    x = engine.distributions.OneHotCategoricalStraightThrough(p_e).rsample((3,))
    torch.manual_seed(2)
    p_t = torch.from_numpy(probs).requires_grad_()
    y = torch.distributions.OneHotCategoricalStraightThrough(p_t).rsample((3,))
    np.testing.assert_array_equal(x.detach().numpy(), y.detach().numpy())
    w = RNG.standard_normal((3, 2, 4))
    (x * engine.from_numpy(w)).sum().backward()
    (y * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(p_e.grad.numpy(), p_t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("name,params,mean,var", [
    ("Poisson", (np.array([0.5, 4.0, 30.0]),), lambda p: p[0], lambda p: p[0]),
    ("Binomial", (np.array([10.0, 40.0, 3.0]), np.array([0.3, 0.8, 0.5])),
     lambda p: p[0] * p[1], lambda p: p[0] * p[1] * (1 - p[1])),
    ("NegativeBinomial", (np.array([2.0, 5.0, 0.7]), np.array([0.4, 0.2, 0.6])),
     lambda p: p[0] * p[1] / (1 - p[1]), lambda p: p[0] * p[1] / (1 - p[1]) ** 2),
])
def test_counts_follow_the_distribution(name, params, mean, var):
    """20000 draws at a fixed seed: sample mean and variance within 4 standard errors of the truth (a wrong
    sampler, e.g. a shifted rate, fails), integer values, the parameters' dtype."""
    engine.manual_seed(0)
    d = getattr(engine.distributions, name)(*tensors(engine, *params))
    x = d.sample((20000,))
    assert x.dtype == engine.float64 and tuple(x.shape) == (20000, 3)
    values = x.numpy()
    assert np.all(values == np.round(values)) and np.all(values >= 0)
    m, v = mean(params), var(params)
    assert np.all(np.abs(values.mean(0) - m) < 4 * np.sqrt(v / 20000)), (values.mean(0), m)
    assert np.all(np.abs(values.var(0) - v) < 0.1 * v), (values.var(0), v)
    np.testing.assert_allclose(d.mean.numpy(), m) if name != "Binomial" else None
