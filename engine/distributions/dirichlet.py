"""``Dirichlet(concentration)``: points of the simplex, drawn as normalised gammas from the engine's stream, with
torch's implicit reparameterisation gradient."""
import engine
import engine.nn.functional as F

from . import constraints
from ._gamma_sampling import sample_dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Density ∏ x_i^(α_i - 1) / B(α) on the simplex of the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = engine.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=engine.Size()):
        return sample_dirichlet(self.concentration.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (engine.xlogy(self.concentration - 1.0, value).sum(-1) + engine.lgamma(self.concentration.sum(-1))
                - engine.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        less_one = (self.concentration - 1).clamp(min=0.0)
        mode = less_one / less_one.sum(-1, True)
        corner = F.one_hot(mode.argmax(dim=-1), less_one.shape[-1]).to(mode.dtype)
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        return engine.where(all_below_one, corner, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.shape[-1]
        a0 = self.concentration.sum(-1)
        return (engine.lgamma(self.concentration).sum(-1) - engine.lgamma(a0) - (k - a0) * engine.digamma(a0)
                - ((self.concentration - 1.0) * engine.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - engine.lgamma(x.sum(-1))

