"""``ExponentialFamily``: the base of distributions of the exponential family (``torch.distributions``'),
p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)). Subclasses name their natural parameters and log normaliser; the
entropy then follows from them (the Bregman divergence form: F(θ) - <θ, ∇F(θ)> - E[k(x)])."""
import engine

from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution with natural parameters θ (``_natural_params``) and log normaliser F (``_log_normalizer``)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        """The entropy from the log normaliser and its gradient (for families without a closed form here)."""
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        # no create_graph (the engine has no higher-order gradients): the parameters are detached copies here, as
        # in torch, so the entropy's value and its (absent) path to the distribution's parameters are the same
        gradients = engine.autograd.grad(log_normalizer.sum(), params, retain_graph=True)
        result = log_normalizer - self._mean_carrier_measure
        for param, gradient in zip(params, gradients):
            result = result - _sum_rightmost(param * gradient, len(self.event_shape))
        return result
