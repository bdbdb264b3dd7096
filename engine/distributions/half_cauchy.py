"""``HalfCauchy(scale)``: |X| for X ~ Cauchy(0, scale)."""
import math

import engine

from ._folded import Folded
from .cauchy import Cauchy

__all__ = ["HalfCauchy"]


class HalfCauchy(Folded):
    """The Cauchy folded onto [0, inf): twice its density there."""

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return super().expand(batch_shape, _instance=self._get_checked_instance(HalfCauchy, _instance))

    @property
    def mean(self):
        return engine.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def _as_value(self, value):
        return engine.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
