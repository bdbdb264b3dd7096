"""``Binomial(total_count, probs | logits)``: successes in ``total_count`` trials, drawn with ``engine.binomial``
(torch's distribution, not its numbers)."""
import engine

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import CountedTrials

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    """max(x, 0) with gradient 1/2 at 0 (as torch's, so log_prob's gradient at logits = 0 matches)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(CountedTrials, Distribution):
    """P(k) = C(n, k) p^k (1 - p)^(n - k)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        self._set_trials(total_count, probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_trials(Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        with engine.no_grad():
            return engine.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        normalizer = (n * _clamp_by_zero(self.logits) + n * engine.log1p(engine.exp(-engine.abs(self.logits)))
                      - engine.lgamma(n + 1))
        return value * self.logits - engine.lgamma(value + 1) - engine.lgamma(n - value + 1) - normalizer

    def _homogeneous_count(self, what):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(engine.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        values = engine.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values
