"""``VonMises(loc, concentration)``: the circular normal law on angles, sampled by Best and Fisher's (1979)
rejection method in double precision from ``rand`` draws (as torch does, so draws equal torch's under a seed).

log I_0 and log I_1 (the normaliser and the circular variance) use the polynomial approximations of Abramowitz and
Stegun 9.8.1-9.8.4, the coefficients below, as torch does.
"""
import math

import engine

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Abramowitz and Stegun 9.8.1/9.8.2 (I0) and 9.8.3/9.8.4 (I1): polynomials in (x / 3.75)^2 below 3.75, in 3.75 / x
# above (times exp(x) / sqrt(x))
_SMALL = {0: [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
          1: [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2, 0.32411e-3]}
_LARGE = {0: [0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2, -0.2057706e-1, 0.2635537e-1,
              -0.1647633e-1, 0.392377e-2],
          1: [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1, 0.2282967e-1, -0.2895312e-1,
              0.1787654e-1, -0.420059e-2]}


def _eval_poly(y, coef):
    """Σ coef[i] y^i by Horner's rule."""
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for x > 0, order 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = (x / 3.75) * (x / 3.75)
    small = _eval_poly(y, _SMALL[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _LARGE[order]).log()
    return engine.where(x < 3.75, small.log(), large)


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best-Fisher draws: rounds of three uniforms per element until every element has accepted once."""
    done = engine.zeros(x.shape, dtype=engine.bool, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = engine.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device).unbind()
        z = engine.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if bool(accept.any()):
            x = engine.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Density exp(κ cos(x - loc)) / (2π I_0(κ)); ``loc`` and values are angles (any real, taken mod 2π)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, engine.Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * engine.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _loc(self):
        return self.loc.to(engine.float64)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(engine.float64)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return engine.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=engine.Size()):
        """Draws in double precision (single precision can loop for tiny concentrations), cast back."""
        with engine.no_grad():
            shape = self._extended_shape(sample_shape)
            x = engine.empty(shape, dtype=engine.float64, device=self.loc.device)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, ("loc", "concentration"))

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance, 1 - I_1(κ) / I_0(κ)."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
