"""``HalfNormal(scale)``: |X| for X ~ Normal(0, scale)."""
import math

from ._folded import Folded
from .normal import Normal

__all__ = ["HalfNormal"]


class HalfNormal(Folded):
    """The normal folded onto [0, inf): twice its density there."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Normal(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfNormal, _instance))

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)
