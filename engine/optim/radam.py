"""RAdam: Adam with the variance of its adaptive learning rate rectified in the first steps."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _bump_version, _check_adam_arguments, _grad_of,
                        _lerp_, _new_tensor, _opmath, _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class RAdam(Optimizer):
    """``torch.optim.RAdam`` (Liu et al. 2019): while the approximated SMA length is at most 5 the step
    is plain momentum SGD; ``decoupled_weight_decay=True`` applies weight decay as AdamW does.

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_arguments(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step (step, exp_avg, exp_avg_sq)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One RAdam step on ``p`` in torch's order of operations."""
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        weight_decay = group["weight_decay"]
        state = self._state_of(p)
        state["step"]._data += 1
        step = float(state["step"]._data)
        g = _grad_of(p, group["maximize"])
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                _scale_(p._data, 1 - lr * weight_decay)
            else:
                g = _add_weight_decay(g, p._data, weight_decay)
        x, g = _real(p._data), _real(g)
        exp_avg, exp_avg_sq = _real(state["exp_avg"]._data), _real(state["exp_avg_sq"]._data)
        _lerp_(exp_avg, g, 1 - beta1)
        _scale_(exp_avg_sq, beta2)
        _addcmul_(exp_avg_sq, g, g, 1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        dtype = x.dtype
        update = _new_tensor(_opmath(exp_avg) / bias_correction1, dtype)  # each product a new tensor, as torch's
        update = _new_tensor(update * lr, dtype)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            root = xp_of(p._data).sqrt(exp_avg_sq)
            root += group["eps"]  # (an added scalar is rounded to a half dtype, in NumPy as in torch)
            update = _new_tensor(update * _new_tensor(bias_correction2 ** 0.5 / _opmath(root), dtype), dtype)
            update = _new_tensor(update * rect, dtype)
        x -= update
        _bump_version(p)
