"""NAdam: Adam with Nesterov momentum and a momentum schedule."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _alpha, _bump_version, _check_adam_arguments,
                        _grad_of, _lerp_, _new_tensor, _opmath, _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class NAdam(Optimizer):
    """``torch.optim.NAdam`` (Dozat 2016): ``momentum_decay`` schedules the momentum,
    ``decoupled_weight_decay=True`` applies weight decay to the parameters as AdamW does (NAdamW).

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_arguments(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step (step, mu_product, exp_avg, exp_avg_sq)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["mu_product"] = _step_tensor(1.0)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One NAdam step on ``p`` in torch's order of operations."""
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        weight_decay, momentum_decay = group["weight_decay"], group["momentum_decay"]
        state = self._state_of(p)
        state["step"]._data += 1
        step = float(state["step"]._data)
        g = _grad_of(p, group["maximize"])
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                _scale_(p._data, 1 - lr * weight_decay)
            else:
                g = _add_weight_decay(g, p._data, weight_decay)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product = state["mu_product"]._data
        mu_product *= mu
        x, g = _real(p._data), _real(g)
        exp_avg, exp_avg_sq = _real(state["exp_avg"]._data), _real(state["exp_avg_sq"]._data)
        _lerp_(exp_avg, g, 1 - beta1)
        _scale_(exp_avg_sq, beta2)
        _addcmul_(exp_avg_sq, g, g, 1 - beta2)
        dtype = x.dtype
        denom = _new_tensor(xp_of(p._data).sqrt(_new_tensor(_opmath(exp_avg_sq) / (1 - beta2 ** step), dtype)), dtype)
        denom += _alpha(group["eps"], dtype)
        denom = _new_tensor(denom, dtype)
        mu_product = float(mu_product)
        mu_product_next = mu_product * mu_next
        x += ((-lr * (1.0 - mu) / (1.0 - mu_product)) * _opmath(g)) / denom
        x += (((-lr * mu_next) / (1.0 - mu_product_next)) * _opmath(exp_avg)) / denom
        _bump_version(p)
