"""``Weibull(scale, concentration)``: scale * E^(1/concentration) for E ~ Exponential(1) (draws equal torch's)."""
import engine

from . import constraints
from .exponential import Exponential
from .gumbel import EULER_CONSTANT
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull law (scale λ, shape k)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        super().__init__(Exponential(engine.ones_like(self.scale), validate_args=validate_args),
                         self._transforms(self.concentration_reciprocal, self.scale), validate_args=validate_args)

    @staticmethod
    def _transforms(concentration_reciprocal, scale):
        return [PowerTransform(exponent=concentration_reciprocal), AffineTransform(loc=0, scale=scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale, new.concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape),
                                         self._transforms(new.concentration_reciprocal, new.scale),
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * engine.exp(engine.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        return self.scale * ((self.concentration - 1) / self.concentration) ** self.concentration.reciprocal()

    @property
    def variance(self):
        return self.scale.pow(2) * (engine.exp(engine.lgamma(1 + 2 * self.concentration_reciprocal))
                                    - engine.exp(2 * engine.lgamma(1 + self.concentration_reciprocal)))

    def entropy(self):
        return (EULER_CONSTANT * (1 - self.concentration_reciprocal)
                + engine.log(self.scale * self.concentration_reciprocal) + 1)
