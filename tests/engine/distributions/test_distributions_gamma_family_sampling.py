"""Gamma, Beta, Dirichlet (and Chi2, StudentT, FisherSnedecor built on them) draw from the engine's stream through
another sampler than torch's C++ one: checked statistically at fixed seeds (moments within a few standard errors,
which a wrong sampler fails), and their implicit reparameterisation gradients against torch's
_standard_gamma_grad and _dirichlet_grad on the same draws (to their approximations' accuracy, 1e-3 and 1e-2;
ours are within 1e-6 of the exact derivatives, checked with mpmath)."""
import mpmath
import numpy as np
import torch

import engine
from engine.distributions._gamma_sampling import dirichlet_grad, standard_gamma_grad

RNG = np.random.default_rng(5)
DRAWS = 20000


def test_standard_gamma_grad_matches_torch():
    alpha = np.concatenate([RNG.uniform(0.05, 1, 20), RNG.uniform(1, 50, 20), [0.3, 2.0, 400.0]])
    x = RNG.gamma(alpha)
    ours = standard_gamma_grad(x, alpha)
    ref = torch._standard_gamma_grad(torch.from_numpy(alpha), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-3)
    for a, v, g in list(zip(alpha, x, ours))[::6]:
        exact = -mpmath.diff(lambda s: mpmath.gammainc(s, 0, v, regularized=True), a) / mpmath.exp(
            (a - 1) * mpmath.log(v) - v - mpmath.loggamma(a))
        assert abs(g / float(exact) - 1) < 1e-8


def test_dirichlet_grad_matches_torch():
    alpha = RNG.uniform(0.3, 8, (30, 4))
    x = RNG.dirichlet(np.ones(4), 30) * 0.9 + 0.025
    total = np.broadcast_to(alpha.sum(-1, keepdims=True), alpha.shape)
    ours = dirichlet_grad(x, alpha, total)
    ref = torch._dirichlet_grad(*(torch.from_numpy(np.ascontiguousarray(a)) for a in (x, alpha, total))).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-2)  # torch's rational approximation: up to 0.6% off here
    for v, a, t, g in list(zip(x.ravel(), alpha.ravel(), total.ravel(), ours.ravel()))[::11]:
        b = t - a
        pdf = mpmath.exp((a - 1) * mpmath.log(v) + (b - 1) * mpmath.log(1 - v) - mpmath.log(mpmath.beta(a, b)))
        exact = -mpmath.diff(lambda s: mpmath.betainc(s, b, 0, v, regularized=True), a) / pdf / (1 - v)
        assert abs(g / float(exact) - 1) < 1e-5


def _moments_close(samples, mean, var, axis=0):
    n = samples.shape[axis]
    assert np.all(np.abs(samples.mean(axis) - mean) < 4 * np.sqrt(var / n)), (samples.mean(axis), mean)
    assert np.all(np.abs(samples.var(axis) - var) < 0.1 * var), (samples.var(axis), var)


def test_gamma_beta_dirichlet_draws_follow_their_distributions():
    D = engine.distributions
    engine.manual_seed(0)
    conc, rate = np.array([0.3, 1.0, 4.0, 40.0]), np.array([2.0, 1.0, 0.5, 3.0])
    g = D.Gamma(engine.from_numpy(conc), engine.from_numpy(rate))
    x = g.sample((DRAWS,))
    assert x.dtype == engine.float64 and tuple(x.shape) == (DRAWS, 4) and bool((x > 0).all())
    _moments_close(x.numpy(), conc / rate, conc / rate ** 2)
    a, b = np.array([0.5, 2.0, 5.0]), np.array([0.5, 3.0, 1.0])
    y = D.Beta(engine.from_numpy(a), engine.from_numpy(b)).sample((DRAWS,)).numpy()
    _moments_close(y, a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)))
    alpha = np.array([0.7, 2.0, 5.0])
    z = D.Dirichlet(engine.from_numpy(alpha)).sample((DRAWS,)).numpy()
    np.testing.assert_allclose(z.sum(-1), 1.0, rtol=1e-12)
    a0 = alpha.sum()
    _moments_close(z, alpha / a0, alpha * (a0 - alpha) / (a0 ** 2 * (a0 + 1)))
    chi2 = D.Chi2(engine.tensor([3.0, 10.0], dtype=engine.float64)).sample((DRAWS,)).numpy()
    _moments_close(chi2, np.array([3.0, 10.0]), 2 * np.array([3.0, 10.0]))
    t = D.StudentT(engine.tensor([6.0], dtype=engine.float64), 1.0, 2.0).sample((DRAWS,)).numpy()
    _moments_close(t, 1.0, 4.0 * 6.0 / 4.0)
    f = D.FisherSnedecor(engine.tensor([5.0], dtype=engine.float64),
                         engine.tensor([12.0], dtype=engine.float64)).sample((DRAWS,)).numpy()
    assert abs(f.mean() - 12.0 / 10.0) < 4 * np.sqrt(2 * 144 * 15 / (5 * 100 * 8) / DRAWS)


def test_seeded_draws_repeat_and_use_the_engine_stream():
    d = engine.distributions.Gamma(engine.tensor([2.0, 0.5]), engine.tensor([1.0, 3.0]))
    engine.manual_seed(4)
    first = d.sample((5,))
    engine.manual_seed(4)
    np.testing.assert_array_equal(first.numpy(), d.sample((5,)).numpy())
    assert first.dtype == engine.float32


def test_rsample_gradients_use_the_implicit_formulas():
    """d(draw)/d(concentration) as torch's formulas give at our draws; Gamma's rate enters as x / rate."""
    conc = engine.tensor([0.4, 1.5, 7.0], dtype=engine.float64, requires_grad=True)
    rate = engine.tensor([2.0, 0.5, 1.0], dtype=engine.float64, requires_grad=True)
    engine.manual_seed(1)
    x = engine.distributions.Gamma(conc, rate).rsample()
    x.sum().backward()
    standard = (x * rate).detach().numpy()
    expected = torch._standard_gamma_grad(torch.from_numpy(conc.detach().numpy()),
                                          torch.from_numpy(standard)).numpy() / rate.detach().numpy()
    np.testing.assert_allclose(conc.grad.numpy(), expected, rtol=1e-3)
    np.testing.assert_allclose(rate.grad.numpy(), -x.detach().numpy() / rate.detach().numpy(), rtol=1e-12)

    alpha = engine.tensor([[0.8, 2.0, 3.5]], dtype=engine.float64, requires_grad=True)
    engine.manual_seed(2)
    z = engine.distributions.Dirichlet(alpha).rsample((2,))
    w = RNG.standard_normal((2, 1, 3))
    (z * engine.from_numpy(w)).sum().backward()
    zt, at = torch.from_numpy(z.detach().numpy()), torch.from_numpy(alpha.detach().numpy()).expand(2, 1, 3)
    g = torch.from_numpy(w)
    grad = torch._dirichlet_grad(zt, at, at.sum(-1, keepdim=True).expand_as(at)) * (g - (zt * g).sum(-1, True))
    expected = grad.sum(0).numpy()  # a sum with cancellation: tolerance relative to the largest entry
    np.testing.assert_allclose(alpha.grad.numpy(), expected, rtol=1e-3, atol=1e-3 * np.abs(expected).max())

    # Beta: each draw's derivative in either concentration, the other held fixed, is the exact implicit one
    c1 = engine.tensor([1.5, 0.7], dtype=engine.float64, requires_grad=True)
    c0 = engine.tensor([2.0, 3.0], dtype=engine.float64, requires_grad=True)
    engine.manual_seed(3)
    x = engine.distributions.Beta(c1, c0).rsample()
    x.sum().backward()
    for v, a, b, g1, g0 in zip(x.detach().numpy(), c1.detach().numpy(), c0.detach().numpy(), c1.grad.numpy(),
                               c0.grad.numpy()):
        pdf = mpmath.exp((a - 1) * mpmath.log(v) + (b - 1) * mpmath.log(1 - v) - mpmath.log(mpmath.beta(a, b)))
        d1 = -mpmath.diff(lambda s: mpmath.betainc(s, b, 0, v, regularized=True), a) / pdf
        d0 = -mpmath.diff(lambda s: mpmath.betainc(a, s, 0, v, regularized=True), b) / pdf
        np.testing.assert_allclose([g1, g0], [float(d1), float(d0)], rtol=1e-5)
