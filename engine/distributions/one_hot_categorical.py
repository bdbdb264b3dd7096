"""``OneHotCategorical``: a Categorical draw written as a one-hot vector, and ``OneHotCategoricalStraightThrough``,
its reparameterised form with the straight-through gradient (the probabilities' gradient passed through)."""
import engine
import engine.nn.functional as F

from . import constraints
from .categorical import Categorical, OverCategorical
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


class OneHotCategorical(OverCategorical, Distribution):
    """A one-hot vector over the last dim of ``probs`` or ``logits``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._set_categorical(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_categorical(OneHotCategorical, batch_shape, _instance)

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(dim=-1), num_classes=probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=engine.Size()):
        indices = self._categorical.sample(engine.Size(sample_shape))
        return F.one_hot(indices, self._categorical._num_events).to(self._categorical.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = engine.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` carries the probabilities' gradient (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=engine.Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
