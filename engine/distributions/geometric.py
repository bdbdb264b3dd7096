"""``Geometric(probs | logits)``: the number of failures before the first success, sampled as torch samples it
(``uniform_(tiny, 1)`` draws through the inverse CDF)."""
import numbers

import engine
import engine.nn.functional as F

from . import constraints
from .bernoulli import _one_of
from .distribution import Distribution
from .utils import BinaryProbsLogits, broadcast_all

__all__ = ["Geometric"]


class Geometric(BinaryProbsLogits, Distribution):
    """P(k) = (1 - p)^k p for k = 0, 1, 2, ..."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = _one_of(probs, logits)
        (tensor,) = broadcast_all(param)
        if probs is not None:
            self.probs = tensor
        else:
            self.logits = tensor
        super().__init__(engine.Size() if isinstance(param, numbers.Number) else tensor.shape,
                         validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            value = self.probs  # beyond unit_interval: a zero probability of success never stops
            raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {self!r} to be positive but found invalid values:\n"
                             f"{value[~(value > 0)]}")

    def expand(self, batch_shape, _instance=None):
        names = [name for name in ("probs", "logits") if name in self.__dict__]
        return self._expand_params(Geometric, batch_shape, _instance, names)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return engine.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        with engine.no_grad():
            u = self.probs.new_empty(shape).uniform_(engine.finfo(self.probs.dtype).tiny, 1)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.masked_fill((probs == 1) & (value == 0), 0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
