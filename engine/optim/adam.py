"""Adam and AdamW (decoupled weight decay), with optional AMSGrad."""
from .optimizer import (Optimizer, _bump_version, _check_adam_arguments, _check_fused, _check_fused_param, _grad_of,
                        _lerp_, _like, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class Adam(Optimizer):
    """``torch.optim.Adam``; ``decoupled_weight_decay=True`` makes it AdamW.

    ``foreach``, ``capturable`` and ``fused`` (on any device, as torch allows on the CPU) are accepted and
    change nothing: each parameter's update is a few whole-array operations either way; ``fused`` keeps
    torch's checks and its float32 step counter. ``differentiable`` is accepted; the update is not
    recorded by autograd.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_arguments(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _state_of(self, p, amsgrad, fused):
        """``p``'s state, created on its first step (step, exp_avg, exp_avg_sq[, max_exp_avg_sq])."""
        state = self.state[p]
        if not state:
            if fused:
                _check_fused_param(p)
            state["step"] = _step_tensor(fused=fused)
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    def _scalars(self, p, group):
        """(learning rate, step size lr / (1 - beta1^step), sqrt(1 - beta2^step)), the step counted."""
        lr = _to_scalar(group["lr"])
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        state = self._state_of(p, group["amsgrad"], group["fused"])
        state["step"]._data += 1
        step = float(state["step"]._data)
        return lr, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5

    def _apply(self, p, group, scalars):
        """One Adam step on ``p`` in torch's order of operations."""
        lr, step_size, bias_correction2_sqrt = scalars
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        state = self.state[p]
        g = _grad_of(p, group["maximize"])
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p._data *= _like(1 - lr * weight_decay, p._data)
            else:
                g = g + weight_decay * p._data
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        _lerp_(exp_avg, g, 1 - beta1)
        exp_avg_sq *= beta2
        exp_avg_sq += (1 - beta2) * g * g
        second = exp_avg_sq
        xp = xp_of(p._data)
        if amsgrad:
            second = state["max_exp_avg_sq"]._data
            xp.maximum(second, exp_avg_sq, out=second)
        denom = xp.sqrt(second)
        denom /= _like(bias_correction2_sqrt, denom)
        denom += group["eps"]
        update = exp_avg * _like(-step_size, exp_avg)
        update /= denom
        p._data += update
        _bump_version(p)


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with weight decay applied to the parameters, not the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
