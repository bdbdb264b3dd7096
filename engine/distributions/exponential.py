"""``Exponential(rate)``, sampled as torch samples it (``exponential_`` draws divided by the rate)."""

import engine

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_params

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Density rate * exp(-rate * x) on x >= 0."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return engine.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        return self.rate.new_empty(shape).exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - engine.exp(-self.rate * value)

    def icdf(self, value):
        return -engine.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - engine.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -engine.log(-x)
