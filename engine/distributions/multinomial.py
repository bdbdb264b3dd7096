"""``Multinomial(total_count, probs | logits)``: counts of ``total_count`` Categorical draws per category, drawn
from the Categorical's stream (equal to torch's under the same seed)."""
import math

import engine

from . import constraints
from .binomial import Binomial
from .categorical import Categorical, OverCategorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(OverCategorical, Distribution):
    """P(x) = n! / ∏ x_i! ∏ p_i^x_i for counts x summing to n = ``total_count``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._set_categorical(Categorical(probs=probs, logits=logits), validate_args)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)

    def expand(self, batch_shape, _instance=None):
        return self._expand_categorical(Multinomial, batch_shape, _instance, kept=("total_count",))

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=engine.Size()):
        sample_shape = engine.Size(sample_shape)
        samples = self._categorical.sample(engine.Size((self.total_count,) + tuple(sample_shape)))
        samples = samples.permute(*range(1, samples.dim()), 0)
        counts = engine.zeros(self._extended_shape(sample_shape), dtype=samples.dtype, device=samples.device)
        counts.scatter_add_(-1, samples, engine.ones_like(samples))
        return counts.type_as(self.probs)

    def entropy(self):
        n = engine.tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - math.lgamma(self.total_count + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = engine.exp(self._binomial.log_prob(support))
        term2 = (binomial_probs * engine.lgamma(support + 1)).sum([0, -1])
        return term1 + term2

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.masked_fill((value == 0) & (logits == -math.inf), 0)
        log_factorial_n = engine.lgamma(value.sum(-1) + 1)
        log_factorial_xs = engine.lgamma(value + 1).sum(-1)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)
