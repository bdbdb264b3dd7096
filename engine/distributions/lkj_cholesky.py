"""``LKJCholesky(dim, concentration)``: Cholesky factors of LKJ-distributed correlation matrices (Lewandowski,
Kurowicka and Joe, 2009), drawn by the onion method as torch does: Beta-distributed squared row norms times
directions uniform on the sphere (so draws follow the Beta's: torch's distribution, not its numbers)."""
import math

import engine

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ law on dim x dim correlation Cholesky factors; density ∝ det(L L^T)^(concentration - 1)."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = engine.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = engine.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, engine.Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = engine.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=engine.Size()):
        with engine.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = engine.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            first_row = engine.arange(self.dim, device=y.device).reshape(-1, 1) == 0
            u_hypersphere = u_hypersphere.masked_fill(first_row, 0.0)
            w = engine.sqrt(y) * u_hypersphere
            diag = engine.clamp(1 - engine.sum(w ** 2, dim=-1), min=engine.finfo(w.dtype).tiny).sqrt()
            return w + engine.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = engine.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = engine.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize_term = 0.5 * dm1 * math.log(math.pi) + engine.mvlgamma(alpha - 0.5, dm1) - engine.lgamma(alpha) * dm1
        return unnormalized - normalize_term
