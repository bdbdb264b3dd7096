"""``Uniform(low, high)``: uniform on [low, high), sampled as torch samples it (``rand`` draws, scaled)."""

import engine

from . import constraints
from .distribution import Distribution
from .utils import broadcast_params

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The continuous uniform distribution on the half-open interval [low, high)."""

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        (self.low, self.high), batch_shape = broadcast_params(low, high)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Uniform, batch_shape, _instance, ("low", "high"))

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return float("nan") * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        rand = engine.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + rand * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).type_as(self.low)
        ub = self.high.gt(value).type_as(self.low)
        return engine.log(lb.mul(ub)) - engine.log(self.high - self.low)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return engine.log(self.high - self.low)
