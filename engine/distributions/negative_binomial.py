"""``NegativeBinomial(total_count, probs | logits)``: in torch's convention, the number of successes (each of
probability ``probs``) before ``total_count`` failures; drawn as a Poisson with a Gamma rate (torch's
construction), so from torch's distribution, not its numbers."""
import engine
import engine.nn.functional as F

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .gamma import Gamma
from .utils import CountedTrials, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(CountedTrials, Distribution):
    """P(k) = C(k + r - 1, k) p^k (1 - p)^r, r = ``total_count`` (a positive real)."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        self._set_trials(total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_trials(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * engine.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / engine.sigmoid(-self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=engine.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=engine.Size()):
        with engine.no_grad():
            return engine.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        unnormalized = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        normalization = (-engine.lgamma(self.total_count + value) + engine.lgamma(1.0 + value)
                         + engine.lgamma(self.total_count))
        normalization = normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return unnormalized - normalization
