"""``Cauchy(loc, scale)``, sampled as torch samples it (``cauchy_`` draws, then loc + eps * scale)."""
import math

import engine

from . import constraints
from .distribution import Distribution
from .utils import broadcast_params

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution: a ratio of independent centred normals, shifted and scaled."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        (self.loc, self.scale), batch_shape = broadcast_params(loc, scale)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return engine.full(self._extended_shape(), float("nan"), dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return engine.full(self._extended_shape(), float("inf"), dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        return self.loc + self.loc.new_empty(shape).cauchy_() * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return engine.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return engine.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
