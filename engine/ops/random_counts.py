"""Random counts: ``torch.poisson`` (a Poisson draw at each rate) and ``torch.binomial`` (a binomial draw for each
count and probability), in the input's floating type, from the engine generator's stream (seedable).

They follow PyTorch's distributions, not its exact draws: PyTorch's CPU samplers (its rejection loops) are not
emulated, so a seed gives other values than in PyTorch. Neither is differentiable (PyTorch's gradients are zero).
"""
from .. import random as _random
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
        values = self.draw(_random.rng(self.generator), *host).astype(params[0].dtype)
        return move(values, device_of(params[0]))

    def backward(self, gy):
        return tuple(xp_of(gy).zeros_like(gy) if need else None for need in self.needs_input_grad)


def poisson(input, generator=None):
    """A Poisson count drawn at each rate of ``input`` (non-negative)."""
    if not input.is_floating_point():
        raise RuntimeError(f"poisson is not implemented for {input.dtype}")
    if bool((input._data < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _Counts(lambda rng, rate: rng.poisson(rate), generator)(input)


def binomial(count, prob, generator=None):
    """The number of successes in ``count`` trials of probability ``prob`` (element by element)."""
    if not count.is_floating_point() or not prob.is_floating_point():
        raise RuntimeError(f"binomial is not implemented for count {count.dtype} and prob {prob.dtype}")
    bad = (prob._data < 0) | (prob._data > 1)
    if bool(bad.any()):
        raise RuntimeError(f"binomial: prob must be in [0, 1], got {float(prob._data[bad].reshape(-1)[0])}")
    return _Counts(lambda rng, n, p: rng.binomial(n.astype("int64"), p), generator)(count, prob)


__all__ = ["poisson", "binomial"]
