"""Stochastic depth (Huang et al. 2016, "Deep Networks with Stochastic Depth"): in training, a residual
branch is dropped for a whole sample ("row") or the whole batch ("batch") with probability ``p``, and
scaled by 1 / (1 - p) where kept (torchvision.ops.stochastic_depth)."""
import engine
from engine import nn


def stochastic_depth(input, p, mode, training=True):
    """``input`` times a Bernoulli(1 - p) mask over its first axis ("row") or one draw ("batch"),
    divided by 1 - p; ``input`` itself in eval mode or with p = 0."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = engine.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise = noise / survival_rate
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of :func:`stochastic_depth` (active in training mode)."""

    def __init__(self, p, mode):
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"


__all__ = ["stochastic_depth", "StochasticDepth"]
