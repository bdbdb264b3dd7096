"""``Bernoulli(probs | logits)``: one coin flip, sampled with ``torch.bernoulli``'s stream."""
import numbers

import engine
import engine.nn.functional as F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import BinaryProbsLogits, broadcast_all

__all__ = ["Bernoulli"]


def _one_of(probs, logits):
    """The one parameter given, or torch's error when both or neither are."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    return probs if probs is not None else logits


class Bernoulli(BinaryProbsLogits, ExponentialFamily):
    """1 with probability ``probs`` (or sigmoid(``logits``)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = _one_of(probs, logits)
        (param_tensor,) = broadcast_all(param)
        if probs is not None:
            self.probs = param_tensor
        else:
            self.logits = param_tensor
        self._param = param_tensor
        batch_shape = engine.Size() if isinstance(param, numbers.Number) else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = engine.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(batch_shape)
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        with engine.no_grad():
            return engine.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        values = engine.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

    @property
    def _natural_params(self):
        return (engine.logit(self.probs),)

    def _log_normalizer(self, x):
        return engine.log1p(engine.exp(x))
