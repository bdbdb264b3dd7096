"""``ContinuousBernoulli(probs | logits)`` (Loaiza-Ganem and Cunningham, 2019): the density proportional to
p^x (1-p)^(1-x) on [0, 1]. Near p = 1/2 (inside ``lims``) the closed forms cancel catastrophically, so there a
Taylor expansion is used, as in torch; draws are ``rand`` through the icdf (equal to torch's under a seed)."""
import math
import numbers

import engine
import engine.nn.functional as F

from . import constraints
from .bernoulli import _one_of
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli law on [0, 1] with shape parameter ``probs`` (or sigmoid(``logits``))."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        param = _one_of(probs, logits)
        (tensor,) = broadcast_all(param)
        if probs is not None:
            # checked before clamping, which would hide invalid values
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(tensor).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(tensor)
            self._param = self.probs
        else:
            self.logits = self._param = tensor
        self._lims = lims
        super().__init__(engine.Size() if isinstance(param, numbers.Number) else self._param.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        names = [name for name in ("probs", "logits") if name in self.__dict__]
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, names)
        new._lims = self._lims
        new._param = getattr(new, names[-1])
        return new

    def _outside_unstable_region(self):
        return engine.maximum(engine.le(self.probs, self._lims[0]), engine.gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        return engine.where(self._outside_unstable_region(), self.probs,
                            self._lims[0] * engine.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p), the log of the normalising constant."""
        cut = self._cut_probs()
        below_half = engine.where(engine.le(cut, 0.5), cut, engine.zeros_like(cut))
        above_half = engine.where(engine.ge(cut, 0.5), cut, engine.ones_like(cut))
        log_norm = engine.log(engine.abs(engine.log1p(-cut) - engine.log(cut))) - engine.where(
            engine.le(cut, 0.5), engine.log1p(-2.0 * below_half), engine.log(2.0 * above_half - 1.0))
        x = engine.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return engine.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (engine.log1p(-cut) - engine.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * engine.pow(x, 2)) * x
        return engine.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return engine.sqrt(self.variance)

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / engine.pow(1.0 - 2.0 * cut, 2)
                     + 1.0 / engine.pow(engine.log1p(-cut) - engine.log(cut), 2))
        x = engine.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return engine.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def sample(self, sample_shape=engine.Size()):
        u = engine.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        with engine.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=engine.Size()):
        u = engine.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (engine.pow(cut, value) * engine.pow(1.0 - cut, 1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = engine.where(self._outside_unstable_region(), cdfs, value)
        return engine.where(engine.le(value, 0.0), engine.zeros_like(value),
                            engine.where(engine.ge(value, 1.0), engine.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inverted = ((engine.log1p(-cut + value * (2.0 * cut - 1.0)) - engine.log1p(-cut))
                    / (engine.log(cut) - engine.log1p(-cut)))
        return engine.where(self._outside_unstable_region(), inverted, value)

    def entropy(self):
        log_probs0, log_probs1 = engine.log1p(-self.probs), engine.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = engine.maximum(engine.le(x, self._lims[0] - 0.5), engine.gt(x, self._lims[1] - 0.5))
        cut = engine.where(outside, x, (self._lims[0] - 0.5) * engine.ones_like(x))
        log_norm = engine.log(engine.abs(engine.expm1(cut))) - engine.log(engine.abs(cut))
        taylor = 0.5 * x + engine.pow(x, 2) / 24.0 - engine.pow(x, 4) / 2880.0
        return engine.where(outside, log_norm, taylor)
