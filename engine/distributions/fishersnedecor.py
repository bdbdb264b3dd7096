"""``FisherSnedecor(df1, df2)``: the F law, a ratio of two Gamma draws (torch's construction; draws follow the
Gamma's, the same distribution as torch's, not its numbers)."""

import engine

from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_params

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """(X1 / df1) / (X2 / df2) for independent chi-squared X1, X2 with df1 and df2 degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        (self.df1, self.df2), batch_shape = broadcast_params(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(FisherSnedecor, batch_shape, _instance, ("df1", "df2"))
        new._gamma1, new._gamma2 = self._gamma1.expand(batch_shape), self._gamma2.expand(batch_shape)
        return new

    @property
    def mean(self):
        df2 = self.df2.masked_fill(self.df2 <= 2, float("nan"))
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return mode.masked_fill(self.df1 <= 2, float("nan"))

    @property
    def variance(self):
        df2 = self.df2.masked_fill(self.df2 <= 4, float("nan"))
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = engine.finfo(x2.dtype).tiny
        x2.detach().clamp_(min=tiny)  # as torch: the values only
        y = x1 / x2
        y.detach().clamp_(min=tiny)
        return y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1, ct2, ct3 = self.df1 * 0.5, self.df2 * 0.5, self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * engine.log(value)
        t3 = (ct1 + ct2) * engine.log1p(ct3 * value)
        return t1 + t2 - t3
