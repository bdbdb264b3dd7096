"""``StudentT(df, loc, scale)``: a normal draw divided by sqrt(chi2 / df), shifted and scaled."""
import math

import engine

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(StudentT, batch_shape, _instance, ("df", "loc", "scale"))
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        m = engine.where(self.df > 2, finite, self.df)
        m = m.masked_fill((self.df <= 2) & (self.df > 1), float("inf"))
        return m.masked_fill(self.df <= 1, float("nan"))

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        x = engine.empty(shape, dtype=self.df.dtype, device=self.df.device).normal_()
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * engine.rsqrt(z / self.df))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + engine.lgamma(0.5 * self.df)
             - engine.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * engine.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = engine.lgamma(0.5 * self.df) + math.lgamma(0.5) - engine.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (engine.digamma(0.5 * (self.df + 1))
                                                          - engine.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
