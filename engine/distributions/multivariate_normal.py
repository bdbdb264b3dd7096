"""``MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)``: the Gaussian over vectors,
held through the lower Cholesky factor L of its covariance (draws are loc + L eps with torch's ``normal_`` eps)."""
import math

import engine

from . import constraints
from ._linalg import cholesky, solve_triangular
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(matrices, vectors):
    """Matrix-vector products over broadcast batches."""
    return engine.matmul(matrices, vectors.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(lower, x):
    """|L^-1 x|^2 for lower-triangular L, over broadcast batches."""
    return solve_triangular(lower, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision^-1, from the factor of the reversed precision (no inverse of a
    possibly ill-conditioned covariance is formed)."""
    reversed_factor = cholesky(engine.flip(precision, (-2, -1)))
    inverse_lower = engine.flip(reversed_factor, (-2, -1)).mT
    eye = engine.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return solve_triangular(inverse_lower, eye)


class MultivariateNormal(Distribution):
    """The normal law on vectors with mean ``loc`` and one of its covariance, precision or covariance's lower
    Cholesky factor."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [(n, m) for n, m in (("covariance_matrix", covariance_matrix), ("precision_matrix", precision_matrix),
                                     ("scale_tril", scale_tril)) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = given[0]
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name  # torch's wording for each
            raise ValueError(f"{label} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = engine.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = engine.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, getattr(self, name).expand(loc_shape + tuple(self.event_shape)))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        lower = self._unbroadcasted_scale_tril
        return engine.matmul(lower, lower.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return engine.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(tuple(self._batch_shape)
                                                                    + tuple(self._event_shape))

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        eps = engine.empty(shape, dtype=self.loc.dtype, device=self.loc.device).normal_()
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - half_log_det

    def entropy(self):
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
