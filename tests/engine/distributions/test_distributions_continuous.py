"""Univariate continuous distributions against torch.distributions: log_prob, cdf, icdf, entropy and moments with
the gradients of parameters and values (broadcast batch shapes), samples equal to torch's under the same seed
where torch draws through the generator's tensor samplers, and shapes everywhere."""
import numpy as np
import pytest
import torch

import engine
from distribution_check import check_methods, same_samples, tensors

RNG = np.random.default_rng(0)
B = (3, 1)  # a batch that broadcasts against the parameters' (4,)


def positive(*shape, low=0.5, high=2.5):
    return RNG.uniform(low, high, shape)


def real(*shape):
    return RNG.standard_normal(shape)


ALL = ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")
# name, parameters, value, methods
CASES = [
    ("Normal", [real(4), positive(3, 1)], real(3, 4), ALL),
    ("Laplace", [real(4), positive(3, 1)], real(3, 4), ALL),
    ("Cauchy", [real(4), positive(3, 1)], real(3, 4), ("log_prob", "cdf", "icdf", "entropy", "mean", "mode",
                                                          "variance")),
    ("Exponential", [positive(3, 4)], positive(3, 4), ALL),
    ("LogNormal", [real(4), positive(3, 1, high=1.0)], positive(3, 4), ("log_prob", "cdf", "icdf", "entropy",
                                                                         "mean", "mode", "variance")),
    ("HalfNormal", [positive(3, 4)], positive(3, 4), ALL),
    ("HalfCauchy", [positive(3, 4)], positive(3, 4), ("log_prob", "cdf", "icdf", "entropy", "mean", "mode")),
    ("Gumbel", [real(4), positive(3, 1)], real(3, 4), ("log_prob", "cdf", "icdf", "entropy", "mean", "mode",
                                                         "variance", "stddev")),
    ("StudentT", [positive(3, 4, low=0.5, high=6.0), real(4), positive(4)], real(3, 4),
     ("log_prob", "entropy", "mean", "mode", "variance")),
    ("Gamma", [positive(3, 4), positive(4)], positive(3, 4), ("log_prob", "entropy", "mean", "mode", "variance")),
    ("Chi2", [positive(3, 4, high=5.0)], positive(3, 4), ("log_prob", "entropy", "mean", "mode", "variance")),
    ("Beta", [positive(3, 4), positive(4)], RNG.uniform(0.05, 0.95, (3, 4)),
     ("log_prob", "entropy", "mean", "mode", "variance")),
    ("Pareto", [positive(4, low=0.2, high=0.5), positive(3, 4, high=4.0)], positive(3, 4, low=0.6, high=3.0),
     ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance")),
    ("Weibull", [positive(4), positive(3, 4)], positive(3, 4), ("log_prob", "cdf", "icdf", "entropy", "mean",
                                                                 "mode", "variance")),
    ("Kumaraswamy", [positive(4), positive(3, 4)], RNG.uniform(0.05, 0.95, (3, 4)),
     ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance")),
    ("ContinuousBernoulli", [RNG.uniform(0.05, 0.95, (3, 4))], RNG.uniform(0.05, 0.95, (3, 4)),
     ("log_prob", "cdf", "icdf", "entropy", "mean", "variance", "stddev")),
    ("FisherSnedecor", [positive(3, 4, high=9.0), positive(4, low=4.5, high=9.0)], positive(3, 4),
     ("log_prob", "mean", "mode", "variance")),
    ("VonMises", [real(4), positive(3, 4, high=6.0)], real(3, 4), ("log_prob", "mean", "mode", "variance")),
    ("InverseGamma", [positive(3, 4, high=4.0), positive(4)], positive(3, 4), ("log_prob", "entropy", "mean",
                                                                              "mode", "variance")),
]


@pytest.mark.parametrize("name,params,value,methods", CASES, ids=[c[0] for c in CASES])
def test_methods_and_gradients_match_torch(name, params, value, methods):
    check_methods(name, params, value=value, prob=RNG.uniform(0.05, 0.95, value.shape), methods=methods)


def test_uniform_methods_gradients_and_outside_support():
    low = real(4)
    high = low + positive(4)
    value = low + (high - low) * RNG.uniform(0.05, 0.95, (3, 4))
    check_methods("Uniform", [low, high], value=value, prob=RNG.uniform(0.05, 0.95, (3, 4)),
                  methods=("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev"))
    outside = engine.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(engine.tensor([2.0]))
    assert outside.item() == torch.distributions.Uniform(0.0, 1.0, validate_args=False).log_prob(
        torch.tensor([2.0])).item() == -np.inf


def test_generalized_pareto_matches_torch():
    """float32: torch's log_prob compares the concentration with a float32 zero, which fails for float64."""
    loc = real(4).astype(np.float32)
    params = [loc, positive(4).astype(np.float32), np.array([0.3, -0.2, 0.0, 0.6], np.float32)]
    value = loc + positive(3, 4, low=0.1, high=1.0).astype(np.float32)
    check_methods("GeneralizedPareto", params, value=value, prob=RNG.uniform(0.05, 0.95, (3, 4)).astype(np.float32),
                  methods=("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance"), rtol=2e-5)


def test_continuous_bernoulli_taylor_region_near_half():
    probs = np.array([0.4995, 0.5, 0.5004, 0.3])
    check_methods("ContinuousBernoulli", [probs], value=RNG.uniform(0.05, 0.95, 4), prob=RNG.uniform(0.1, 0.9, 4),
                  methods=("log_prob", "cdf", "icdf", "entropy", "mean", "variance"))


def test_float32_parameters_keep_their_dtype():
    loc, scale = real(5).astype(np.float32), positive(5).astype(np.float32)
    check_methods("Normal", [loc, scale], value=real(5).astype(np.float32), methods=("log_prob", "entropy"),
                  rtol=1e-5)


def test_number_parameters_give_scalar_batch():
    for module in (engine, torch):
        d = module.distributions.Normal(0.0, 1.0)
        assert tuple(d.batch_shape) == () and tuple(d.sample((2, 3)).shape) == (2, 3)


# ---- samples equal torch's under the same seed ------------------------------------------------------------
STREAMED = [
    ("Normal", [real(4), positive(4)]),
    ("Uniform", [-positive(4), positive(4)]),
    ("Laplace", [real(4), positive(4)]),
    ("Exponential", [positive(2, 4)]),
    ("Cauchy", [real(4), positive(4)]),
    ("LogNormal", [real(4), positive(4)]),
    ("HalfNormal", [positive(4)]),
    ("HalfCauchy", [positive(4)]),
    ("Gumbel", [real(4), positive(4)]),
    ("Gumbel", [0.5, 2.0]),
    ("Pareto", [positive(4), positive(4)]),
    ("Weibull", [positive(4), positive(4)]),
    ("Kumaraswamy", [positive(4), positive(4)]),
    ("ContinuousBernoulli", [RNG.uniform(0.1, 0.9, 4)]),
    ("VonMises", [real(4), positive(4, low=0.01, high=5.0)]),
    ("GeneralizedPareto", [real(4), positive(4), np.array([0.3, -0.2, 0.0, 0.6])]),
    ("Normal", [real(4).astype(np.float32), positive(4).astype(np.float32)]),
]


@pytest.mark.parametrize("name,params", STREAMED, ids=[f"{s[0]}{i}" for i, s in enumerate(STREAMED)])
def test_samples_equal_torch_under_the_same_seed(name, params):
    def make(module):
        return getattr(module.distributions, name)(*tensors(module, *params))
    same_samples(make, seed=7, sample_shape=(5, 2))
    same_samples(make, seed=8, sample_shape=(3,), method="rsample" if make(engine).has_rsample else "sample")


def test_rsample_gradients_match_torch():
    loc, scale = real(4), positive(4)

    def draw(module):
        def fn(loc, scale):
            module.manual_seed(3)
            return module.distributions.Normal(loc, scale).rsample((6,))
        return fn
    from op_check import check_op
    check_op(draw(engine), draw(torch), [loc, scale])
    check_op(lambda a, b: _seeded(engine, lambda: engine.distributions.Laplace(a, b).rsample((5,))),
             lambda a, b: _seeded(torch, lambda: torch.distributions.Laplace(a, b).rsample((5,))), [loc, scale])
    check_op(lambda a, b: _seeded(engine, lambda: engine.distributions.Gumbel(a, b).rsample((5,))),
             lambda a, b: _seeded(torch, lambda: torch.distributions.Gumbel(a, b).rsample((5,))), [loc, scale])


def _seeded(module, draw):
    module.manual_seed(11)
    return draw()


def test_sample_shapes_and_sample_n():
    d = engine.distributions.Normal(engine.zeros(2, 3), engine.ones(3))
    assert tuple(d.batch_shape) == (2, 3) and tuple(d.event_shape) == ()
    assert tuple(d.sample()).__len__() == 2 and tuple(d.sample((4, 5)).shape) == (4, 5, 2, 3)
    with pytest.warns(UserWarning, match="sample_n will be deprecated"):
        assert tuple(d.sample_n(7).shape) == (7, 2, 3)
    e = d.expand((4, 2, 3))
    assert tuple(e.batch_shape) == (4, 2, 3) and tuple(e.sample((2,)).shape) == (2, 4, 2, 3)
    assert not d.sample().requires_grad


def test_studentT_and_gamma_samples_have_the_right_shape_and_gradients():
    df = engine.tensor([2.5, 4.0, 9.0], requires_grad=True)
    x = engine.distributions.StudentT(df).rsample((50,))
    assert tuple(x.shape) == (50, 3)
    x.sum().backward()
    assert df.grad is not None and bool(engine.isfinite(df.grad).all())
