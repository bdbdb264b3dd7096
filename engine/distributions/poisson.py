"""``Poisson(rate)``: counts, sampled with ``engine.poisson`` (the same distribution as torch's, not its draws)."""

import engine

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all, broadcast_params

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """P(k) = rate^k exp(-rate) / k!."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,), batch_shape = broadcast_params(rate)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        with engine.no_grad():
            return engine.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (engine.log(self.rate),)

    def _log_normalizer(self, x):
        return engine.exp(x)
