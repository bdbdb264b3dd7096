"""Gamma and Dirichlet draws with torch's implicit reparameterisation gradients (Figurnov et al., 2018).

The draws are torch's CPU numbers: its Marsaglia-Tsang loop on the engine generator's stream
(``engine._rng.counts``), Dirichlet's gammas in float64 and normalised as torch does. The gradient of a draw x
with respect to its concentration
is dx/dα = -(∂F/∂α)(x; α) / f(x; α), F the CDF and f the density: for Gamma the regularised lower incomplete gamma
function, for one coordinate of a Dirichlet its Beta(α_i, Σα - α_i) marginal (torch's ``_standard_gamma_grad``
and ``_dirichlet_grad``). ∂F/∂α is a central difference of scipy's float64 CDF: within 1e-9 (Gamma) and 1e-6
(Beta) of the exact derivative (mpmath, 30 digits), where torch's own approximations are within about 1e-3
(Gamma) and 1e-2 (Beta).
"""
import numpy as np

from engine import random as _random
from engine._device import device_of, move
from engine._rng import counts
from engine.autograd.function import Function
from engine.ops.special import scipy_special

#: relative step of the central difference in α: the truncation error (~h²) and the rounding error of the CDF
#: (~1e-16 / h) balance near it. Largest relative error against mpmath's exact derivative, Gamma on α in
#: [0.3, 40] / Beta on α in [0.3, 8]: h = 1e-4: 6e-8 / 6e-7, 1e-5: 6e-10 / 8e-7, 1e-6: 3e-10 / 3e-6
_STEP = 1e-5


def standard_gamma_grad(x, alpha):
    """dx/dα of a Gamma(α, 1) draw x, as float64 numpy arrays."""
    gammainc = scipy_special(np, "gammainc")
    h = _STEP * np.maximum(alpha, 1.0)
    h = np.minimum(h, 0.5 * alpha)
    dcdf = (gammainc(alpha + h, x) - gammainc(alpha - h, x)) / (2 * h)
    log_pdf = (alpha - 1) * np.log(x) - x - scipy_special(np, "gammaln")(alpha)
    return -dcdf / np.exp(log_pdf)


def dirichlet_grad(x, alpha, total):
    """torch's ``_dirichlet_grad``: for a Dirichlet coordinate x ~ Beta(α, total - α), dx/dα with the other
    concentrations (so total - α) held fixed, divided by 1 - x (the Dirichlet backward multiplies it back in its
    projection onto the simplex); float64 numpy arrays."""
    betainc = scipy_special(np, "betainc")
    beta = total - alpha
    h = np.minimum(_STEP * np.maximum(alpha, 1.0), 0.5 * alpha)
    dcdf = (betainc(alpha + h, beta, x) - betainc(alpha - h, beta, x)) / (2 * h)
    log_pdf = (alpha - 1) * np.log(x) + (beta - 1) * np.log1p(-x) - scipy_special(np, "betaln")(alpha, beta)
    return -dcdf / np.exp(log_pdf) / (1 - x)


def _host64(array):
    return np.asarray(move(array, "cpu"), dtype=np.float64)


class _StandardGamma(Function):
    """Gamma(α, 1) draws; backward by the implicit gradient."""

    uses_inputs = False

    def __init__(self, generator):
        self.generator = generator

    def forward(self, alpha):
        self.alpha = _host64(alpha)
        generator = _random.generator_or_default(self.generator)
        self.x = counts.standard_gamma(generator, self.alpha, alpha.dtype == np.float32)
        return move(np.maximum(self.x.astype(alpha.dtype), np.finfo(alpha.dtype).tiny), device_of(alpha))

    def backward(self, g):
        grad = standard_gamma_grad(np.maximum(self.x, np.finfo(np.float64).tiny), self.alpha)
        return move(grad.astype(g.dtype), device_of(g)) * g


class _Dirichlet(Function):
    """Dirichlet(α) draws over the last dim (normalised gammas); backward as torch's ``_Dirichlet``."""

    uses_inputs = False

    def __init__(self, generator):
        self.generator = generator

    def forward(self, alpha):
        self.alpha = _host64(alpha)
        generator = _random.generator_or_default(self.generator)
        # float64 gammas at least the smallest normal double (tiny α underflows to 0: the sum stays positive)
        gammas = np.maximum(counts.standard_gamma(generator, self.alpha, False), np.finfo(np.float64).tiny)
        x = gammas / gammas.sum(-1, keepdims=True)
        tiny = np.finfo(alpha.dtype).tiny
        self.x = np.clip(x, tiny, 1 - np.finfo(np.float64).eps)
        below_one = np.nextafter(alpha.dtype.type(1), alpha.dtype.type(0))
        return move(np.clip(x.astype(alpha.dtype), tiny, below_one), device_of(alpha))

    def backward(self, g):
        total = np.broadcast_to(self.alpha.sum(-1, keepdims=True), self.alpha.shape)
        grad = move(dirichlet_grad(self.x, self.alpha, total).astype(g.dtype), device_of(g))
        x = move(self.x.astype(g.dtype), device_of(g))
        return grad * (g - (x * g).sum(-1, keepdims=True))


def standard_gamma(concentration, generator=None):
    """Gamma(concentration, 1) draws, differentiable in the concentration."""
    return _StandardGamma(generator)(concentration)


def sample_dirichlet(concentration, generator=None):
    """Dirichlet(concentration) draws over the last dim, differentiable in the concentration."""
    return _Dirichlet(generator)(concentration)

