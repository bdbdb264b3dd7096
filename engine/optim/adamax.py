"""Adamax: Adam with the infinity norm of past gradients in place of their second moment."""
from .optimizer import (Optimizer, _add_weight_decay, _bump_version, _check_adam_arguments, _grad_of, _lerp_, _opmath,
                        _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class Adamax(Optimizer):
    """``torch.optim.Adamax`` (Kingma and Ba 2015, section 7).

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_arguments(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step (step, exp_avg, exp_inf)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["exp_avg"] = _zeros_like(p)
            state["exp_inf"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One Adamax step on ``p`` in torch's order of operations."""
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        state = self._state_of(p)
        state["step"]._data += 1
        step = float(state["step"]._data)
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        x, g = _real(p._data), _real(g)
        exp_avg, exp_inf = _real(state["exp_avg"]._data), _real(state["exp_inf"]._data)
        _lerp_(exp_avg, g, 1 - beta1)
        xp = xp_of(p._data)
        _scale_(exp_inf, beta2)
        norm = xp.abs(g)
        norm += group["eps"]  # (an added scalar is rounded to a half dtype, in NumPy as in torch)
        xp.maximum(exp_inf, norm, out=exp_inf)
        clr = lr / (1 - beta1 ** step)
        update = _opmath(exp_avg) * -clr
        update /= _opmath(exp_inf)
        x += update
        _bump_version(p)
