"""``GeneralizedPareto(loc, scale, concentration)``: the peaks-over-threshold law (Exponential at concentration 0,
Pareto above, bounded below 0), drawn through its icdf from ``rand`` (equal to torch's under a seed). Where the
concentration is zero (within torch's isclose tolerance) the exponential limits of the formulas are used."""
import math

import engine

from . import constraints
from .distribution import Distribution
from .utils import broadcast_params

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival function (1 + ξ z)^(-1/ξ), z = (x - loc) / scale, ξ = ``concentration``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        (self.loc, self.scale, self.concentration), batch_shape = broadcast_params(loc, scale, concentration)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance, ("loc", "scale", "concentration"))

    def _zero_and_safe(self):
        """Where the concentration is zero, and the concentration with ones there (kept out of divisions)."""
        eq_zero = engine.isclose(self.concentration, engine.zeros_like(self.concentration))
        return eq_zero, engine.where(eq_zero, engine.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=engine.Size()):
        u = engine.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        y = 1 / safe + engine.ones_like(z)
        nonzero = engine.where(y == 0, y, y * engine.log1p(safe * z))
        return -self.scale.log() - engine.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        return engine.where(eq_zero, -z, -engine.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return engine.log1p(-engine.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return engine.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._zero_and_safe()
        logu = engine.log1p(-value)
        nonzero = self.loc + self.scale / safe * engine.expm1(-safe * logu)
        return engine.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = engine.where(valid, self.concentration, 0.5)
        return engine.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = engine.where(valid, self.concentration, 0.25)
        return engine.where(valid, self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self):
        return engine.broadcast_to(engine.log(self.scale) + self.concentration + 1, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = engine.where(self.concentration < 0, self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)
