"""``Normal(loc, scale)``: the Gaussian, sampled as torch samples it (``normal_`` draws, then loc + eps * scale)."""
import math

import engine

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_params

__all__ = ["Normal"]


class Normal(ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        with engine.no_grad():
            return engine.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        eps = engine.empty(shape, dtype=self.loc.dtype, device=self.loc.device).normal_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + engine.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * engine.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + engine.log(self.scale)

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * engine.log(-math.pi / y)
