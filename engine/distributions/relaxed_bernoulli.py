"""``RelaxedBernoulli(temperature, probs | logits)`` (the binary Concrete / Gumbel-softmax law, Maddison et al.
and Jang et al., 2017): sigmoid of a ``LogitRelaxedBernoulli``, whose draws are logistic noise plus the logits over
the temperature (``rand`` draws, equal to torch's under the same seed)."""
import numbers

import engine

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import BinaryProbsLogits, broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(BinaryProbsLogits, Distribution):
    """The logit of a RelaxedBernoulli draw (a real number)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        param = _one_of(probs, logits)
        (tensor,) = broadcast_all(param)
        if probs is not None:
            self.probs = tensor
        else:
            self.logits = tensor
        self._param = tensor
        super().__init__(engine.Size() if isinstance(param, numbers.Number) else tensor.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = [name for name in ("probs", "logits") if name in self.__dict__]
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, names)
        new.temperature = self.temperature
        new._param = getattr(new, names[-1])
        return new

    @property
    def param_shape(self):
        return self._param.shape

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(engine.rand(shape, dtype=probs.dtype, device=probs.device))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value.mul(self.temperature)
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """A reparameterisable relaxation of Bernoulli on (0, 1); low temperatures approach 0/1 draws."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        super().__init__(LogitRelaxedBernoulli(temperature, probs, logits), SigmoidTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(RelaxedBernoulli, _instance))

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs
