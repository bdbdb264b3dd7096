"""Random counts: ``torch.poisson`` (a Poisson draw at each rate) and ``torch.binomial`` (a binomial draw for each
count and probability), in the input's floating type, from the engine generator's stream (seedable).

Both draw torch's CPU numbers (its rejection loops, ``engine._rng.counts``): a seed gives the same counts as in
PyTorch. Neither is differentiable (PyTorch's gradients are zero).
"""
import numpy as np

from .. import random as _random
from .._rng import counts as _counts
from .._device import device_of, move
from ..autograd.function import Function
from ._common import xp_of


class _Counts(Function):
    """A draw with zero gradients, as PyTorch's ``poisson`` and ``binomial`` give."""

    uses_inputs = False

    def __init__(self, draw, generator):
        self.draw, self.generator = draw, generator

    def forward(self, *params):
        host = [move(p, "cpu") for p in params]
        values = self.draw(_random.generator_or_default(self.generator), *host)
        return move(values.astype(params[0].dtype), device_of(params[0]))

    def backward(self, gy):
        return tuple(xp_of(gy).zeros_like(gy) if need else None for need in self.needs_input_grad)


def poisson(input, generator=None):
    """A Poisson count drawn at each rate of ``input`` (non-negative)."""
    if not input.is_floating_point():
        raise RuntimeError(f"poisson is not implemented for {input.dtype}")
    if not bool((input._data >= 0).all()):  # NaN too
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _Counts(lambda g, rate: _in_type(_counts.poisson(g, rate.astype(np.float64)), rate.dtype), generator)(input)


def _in_type(counts, dtype):
    """int64 ``counts`` cast as C++ casts them to ``dtype``: to a half type through float32."""
    return counts.astype(np.float32 if dtype.itemsize == 2 else dtype).astype(dtype)


def binomial(count, prob, generator=None):
    """The number of successes in ``count`` trials of probability ``prob`` (element by element)."""
    if not count.is_floating_point() or not prob.is_floating_point():
        raise RuntimeError(f"binomial is not implemented for count {count.dtype} and prob {prob.dtype}")
    return _Counts(lambda g, n, p: _counts.binomial(g, n, p), generator)(count, prob)


__all__ = ["poisson", "binomial"]
