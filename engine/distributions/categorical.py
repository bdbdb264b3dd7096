"""``Categorical(probs | logits)``: an index drawn from K categories, sampled with ``torch.multinomial``'s stream."""
import engine

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical", "OverCategorical"]


class Categorical(Distribution):
    """Category i of the last dim with probability probs[..., i] (normalised) or softmax(logits)[..., i]."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = _one_of(probs, logits)
        if param.dim() < 1:
            name = "probs" if probs is not None else "logits"
            raise ValueError(f"`{name}` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / probs.sum(-1, keepdim=True)
            self._param = self.probs
        else:
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            self._param = self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else engine.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = engine.Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = new._param = self.probs.expand(param_shape)
        if "logits" in self.__dict__:
            new.logits = new._param = self.logits.expand(param_shape)
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return engine.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(dim=-1)

    @property
    def variance(self):
        return engine.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape=engine.Size()):
        sample_shape = engine.Size(sample_shape)
        with engine.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = engine.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = engine.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=engine.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = engine.arange(self._num_events, dtype=engine.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class OverCategorical:
    """Base of the distributions built on a ``Categorical`` over the last dimension (one-hot draws, multinomial counts,
    relaxed draws): its batch shape, the categories as the event, and its probs, logits and parameter shape."""

    def _set_categorical(self, categorical, validate_args):
        self._categorical = categorical
        Distribution.__init__(self, categorical.batch_shape, categorical.param_shape[-1:], validate_args=validate_args)

    def _expand_categorical(self, cls, batch_shape, _instance, kept=()):
        """``expand``'s instance of ``cls``: the categorical expanded, the attributes named in ``kept`` shared."""
        new = self._get_checked_instance(cls, _instance)
        for name in kept:
            setattr(new, name, getattr(self, name))
        new._set_categorical(self._categorical.expand(engine.Size(batch_shape)), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape
