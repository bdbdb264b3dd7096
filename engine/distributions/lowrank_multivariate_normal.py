"""``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``: a Gaussian with covariance W W^T + diag(D), scored
through the m x m capacitance matrix I + W^T D^-1 W (Woodbury and the matrix determinant lemma), so the cost grows
with the rank m rather than the dimension."""
import math

import engine

from . import constraints
from ._linalg import cholesky, solve_triangular
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _eye_plus(matrices):
    n = matrices.shape[-1]
    return matrices + engine.eye(n, dtype=matrices.dtype, device=matrices.device)


def _capacitance_tril(w, d):
    """The lower Cholesky factor of I + W^T D^-1 W."""
    wt_dinv = w.mT / d.unsqueeze(-2)
    return cholesky(_eye_plus(engine.matmul(wt_dinv, w)))


def _lowrank_logdet(w, d, capacitance_tril):
    """log det(W W^T + D) = log det(capacitance) + log det(D)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _lowrank_mahalanobis(w, d, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x by Woodbury."""
    wt_dinv_x = _batch_mv(w.mT / d.unsqueeze(-2), x)
    return (x.pow(2) / d).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The normal law with mean ``loc`` and covariance cov_factor cov_factor^T + diag(cov_diag)."""

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            batch_shape = engine.broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        # expanded views, no graph node holding saved values: a second backward through loc stays possible
        loc_shape = tuple(batch_shape) + tuple(event_shape)
        self.loc, self.cov_diag = loc.expand(loc_shape), cov_diag.expand(loc_shape)
        self.cov_factor = cov_factor.expand(loc_shape + tuple(cov_factor.shape[-1:]))
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = engine.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc, new.cov_diag = self.loc.expand(loc_shape), self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled_w = self._unbroadcasted_cov_factor / sqrt_d
        k = _eye_plus(engine.matmul(scaled_w, scaled_w.mT))
        return (sqrt_d * cholesky(k)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        return (engine.matmul(w, w.mT) + engine.diag_embed(self._unbroadcasted_cov_diag)).expand(
            self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = solve_triangular(self._capacitance_tril, wt_dinv)
        return (engine.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - engine.matmul(a.mT, a)).expand(
            self._matrix_shape())

    def rsample(self, sample_shape=engine.Size()):
        shape = self._extended_shape(sample_shape)
        w_shape = tuple(shape[:-1]) + tuple(self.cov_factor.shape[-1:])
        eps_w = engine.empty(w_shape, dtype=self.loc.dtype, device=self.loc.device).normal_()
        eps_d = engine.empty(shape, dtype=self.loc.dtype, device=self.loc.device).normal_()
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = _lowrank_mahalanobis(w, d, value - self.loc, self._capacitance_tril)
        log_det = _lowrank_logdet(w, d, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + log_det + m)

    def entropy(self):
        log_det = _lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                  self._capacitance_tril)
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
