"""Argument and sample validation as torch's: the same ValueErrors (same messages up to the module's name) for
parameters outside their constraints and for values outside the support or of the wrong shape, validation
switched per instance and globally, and the constructor errors for missing or doubled parameters."""
import re

import numpy as np
import pytest
import torch

import engine


def _message(fn, module):
    with pytest.raises(Exception) as info:
        fn(module)
    return type(info.value), str(info.value).replace("torch.", "").replace("engine.", "")


def same_error(fn):
    """``fn(module)`` raises the same exception type with the same message on engine and torch (the invalid
    values printed after the message compared as numbers: the two reprs space them differently)."""
    ours, ref = _message(fn, engine), _message(fn, torch)
    assert ours[0] is ref[0], (ours, ref)
    head, _, tail = ours[1].partition("invalid values:\n")
    ref_head, _, ref_tail = ref[1].partition("invalid values:\n")
    assert head == ref_head, (head, ref_head)
    assert _numbers(tail) == _numbers(ref_tail), (tail, ref_tail)


def _numbers(text):
    return re.findall(r"-?(?:inf|nan|\d+\.?\d*(?:e[-+]?\d+)?)", text.replace("dtype=float64", ""))


def tensor(module, values):
    return module.tensor(values, dtype=module.float64)


BAD_PARAMETERS = [
    lambda m: m.distributions.Normal(tensor(m, [0.0, 1.0]), tensor(m, [1.0, -2.0])),
    lambda m: m.distributions.Exponential(tensor(m, [0.0])),
    lambda m: m.distributions.Bernoulli(tensor(m, [1.5])),
    lambda m: m.distributions.Categorical(tensor(m, [[0.5, -0.5]])),
    lambda m: m.distributions.Gamma(tensor(m, [1.0]), tensor(m, [float("nan")])),
    lambda m: m.distributions.Dirichlet(tensor(m, [[1.0, 0.0]])),
    lambda m: m.distributions.Binomial(tensor(m, [2.5]), tensor(m, [0.5])),
    lambda m: m.distributions.MultivariateNormal(tensor(m, [0.0, 0.0]), scale_tril=tensor(m, [[1.0, 1.0],
                                                                                              [0.0, 1.0]])),
    lambda m: m.distributions.MultivariateNormal(tensor(m, [0.0, 0.0]), covariance_matrix=tensor(m, [[1.0, 2.0],
                                                                                                     [2.0, 1.0]])),
    lambda m: m.distributions.Uniform(tensor(m, [1.0]), tensor(m, [0.0])),
    lambda m: m.distributions.Normal(0.0, 1.0).log_prob(0.5),
    lambda m: m.distributions.Exponential(tensor(m, [1.0])).log_prob(tensor(m, [-1.0])),
    lambda m: m.distributions.Categorical(tensor(m, [0.5, 0.5])).log_prob(tensor(m, [2.0])),
    lambda m: m.distributions.Normal(tensor(m, [0.0, 1.0]), 1.0).log_prob(tensor(m, [0.0, 1.0, 2.0])),
    lambda m: m.distributions.Dirichlet(tensor(m, [1.0, 2.0])).log_prob(tensor(m, [0.5, 0.25, 0.25])),
    lambda m: m.distributions.Bernoulli(tensor(m, [0.5])).log_prob(tensor(m, [0.5])),
    lambda m: m.distributions.Bernoulli(probs=tensor(m, [0.5]), logits=tensor(m, [0.0])),
    lambda m: m.distributions.Categorical(),
    lambda m: m.distributions.Categorical(tensor(m, 0.5)),
    lambda m: m.distributions.MultivariateNormal(tensor(m, [0.0]), tensor(m, [[1.0]]), scale_tril=tensor(m, [[1.0]])),
    lambda m: m.distributions.Independent(m.distributions.Normal(0.0, 1.0), 1),
    lambda m: m.distributions.MixtureSameFamily(m.distributions.Categorical(tensor(m, [0.5, 0.5])),
                                                m.distributions.Normal(tensor(m, [0.0, 1.0, 2.0]), 1.0)),
    lambda m: m.distributions.LKJCholesky(1),
    lambda m: m.distributions.Geometric(tensor(m, [0.0])),
]


@pytest.mark.parametrize("fn", BAD_PARAMETERS, ids=range(len(BAD_PARAMETERS)))
def test_errors_match_torch(fn):
    same_error(fn)


def test_validation_can_be_switched_off_per_instance_and_globally():
    d = engine.distributions
    d.Normal(engine.tensor([0.0]), engine.tensor([-1.0]), validate_args=False)  # no error
    assert np.isnan(d.Normal(0.0, 1.0, validate_args=False).log_prob(engine.tensor(float("nan"))).item())
    try:
        d.Distribution.set_default_validate_args(False)
        d.Normal(engine.tensor([0.0]), engine.tensor([-1.0]))
        assert not d.Exponential(engine.tensor([1.0]))._validate_args
    finally:
        d.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match=re.escape("Expected parameter scale")):
        d.Normal(engine.tensor([0.0]), engine.tensor([-1.0]))
    with pytest.raises(ValueError):
        d.Distribution.set_default_validate_args("yes")


def test_supports_arg_constraints_and_expand_match_torch():
    for name, args in (("Normal", ([0.0, 1.0], [1.0, 2.0])), ("Uniform", ([0.0, 1.0], [1.0, 3.0])),
                       ("Binomial", ([3.0, 4.0], [0.5, 0.25])), ("Categorical", ([[0.5, 0.5]],)),
                       ("Pareto", ([1.0, 2.0], [2.0, 3.0])), ("Beta", ([1.0, 2.0], [2.0, 3.0]))):
        e = getattr(engine.distributions, name)(*(tensor(engine, a) for a in args))
        t = getattr(torch.distributions, name)(*(tensor(torch, a) for a in args))
        assert repr(e.support).replace("engine.", "") == repr(t.support).replace("torch.", "")
        assert sorted(e.arg_constraints) == sorted(t.arg_constraints)
        assert [repr(c).replace("engine.", "") for c in e.arg_constraints.values()] == \
            [repr(c).replace("torch.", "") for c in t.arg_constraints.values()]
        batch = (4,) + tuple(t.batch_shape)
        assert tuple(e.expand(batch).batch_shape) == tuple(t.expand(batch).batch_shape)
        assert tuple(e.expand(batch).sample().shape) == tuple(t.expand(batch).sample().shape)
        assert e.has_rsample == t.has_rsample and e.has_enumerate_support == t.has_enumerate_support


def test_missing_rsample_raises_not_implemented():
    with pytest.raises(NotImplementedError):
        engine.distributions.Poisson(engine.tensor([1.0])).rsample()
    with pytest.raises(NotImplementedError):
        engine.distributions.VonMises(engine.tensor([0.0]), engine.tensor([1.0])).rsample()
