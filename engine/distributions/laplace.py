"""``Laplace(loc, scale)``: the double exponential, sampled as torch samples it (``uniform_(eps - 1, 1)`` draws
through the inverse CDF)."""

import engine

from . import constraints
from .distribution import Distribution
from .utils import broadcast_params

__all__ = ["Laplace"]


class Laplace(Distribution):
    """Density exp(-|x - loc| / scale) / (2 scale)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        u = self.loc.new_empty(shape).uniform_(engine.finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * engine.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -engine.log(2 * self.scale) - engine.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * engine.expm1(-(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * engine.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + engine.log(2 * self.scale)
