"""``Gamma(concentration, rate)``: draws from the engine's stream (torch's distribution, not its numbers) with
torch's implicit reparameterisation gradient in the concentration."""

import engine

from . import constraints
from ._gamma_sampling import standard_gamma
from .exp_family import ExponentialFamily
from .utils import broadcast_params

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Density rate^α x^(α-1) exp(-rate x) / Γ(α) on x > 0."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        (self.concentration, self.rate), batch_shape = broadcast_params(concentration, rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=engine.Size(), generator=None):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape), generator) / self.rate.expand(shape)
        value.detach().clamp_(min=engine.finfo(value.dtype).tiny)  # as torch: the value only, not the graph
        return value

    def sample(self, sample_shape=engine.Size(), generator=None):
        with engine.no_grad():
            return self.rsample(sample_shape, generator)

    def log_prob(self, value):
        value = engine.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (engine.xlogy(self.concentration, self.rate) + engine.xlogy(self.concentration - 1, value)
                - self.rate * value - engine.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - engine.log(self.rate) + engine.lgamma(self.concentration)
                + (1.0 - self.concentration) * engine.digamma(self.concentration))

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return engine.lgamma(x + 1) + (x + 1) * engine.log(-y.reciprocal())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return engine.igamma(self.concentration, self.rate * value)
