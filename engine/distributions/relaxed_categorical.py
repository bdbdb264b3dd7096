"""``RelaxedOneHotCategorical(temperature, probs | logits)`` (the Concrete / Gumbel-softmax law): exp of an
``ExpRelaxedCategorical``, whose draws are log-softmax((logits + Gumbel noise) / temperature) with the noise from
``rand`` draws (equal to torch's under the same seed)."""
import engine

from . import constraints
from .categorical import Categorical, OverCategorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(OverCategorical, Distribution):
    """The log of a RelaxedOneHotCategorical draw."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the draws lie on a submanifold of it
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._set_categorical(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_categorical(ExpRelaxedCategorical, batch_shape, _instance, kept=("temperature",))

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        uniforms = clamp_probs(engine.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = engine.full_like(self.temperature, float(k)).lgamma() - self.temperature.log().mul(-(k - 1))
        score = logits - value.mul(self.temperature)
        return (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A reparameterisable relaxation of OneHotCategorical on the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args),
                         ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape,
                              _instance=self._get_checked_instance(RelaxedOneHotCategorical, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
