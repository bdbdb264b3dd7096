"""Adam and AdamW (decoupled weight decay), with optional AMSGrad."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _alpha, _bump_version, _check_adam_arguments,
                        _check_fused, _check_fused_param, _fused_half, _grad_of, _in_float32, _lerp_, _like,
                        _new_tensor, _opmath, _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of
from ..tensor import Tensor


class Adam(Optimizer):
    """``torch.optim.Adam``; ``decoupled_weight_decay=True`` makes it AdamW.

    ``foreach``, ``capturable`` and ``fused`` (on any device, as torch allows on the CPU) are accepted and
    change nothing: each parameter's update is a few whole-array operations either way; ``fused`` keeps
    torch's checks, its float32 step counter, its tensor hyper-parameters read as doubles and, for a half
    parameter, its whole step computed in float32 and rounded once. ``differentiable`` is accepted; the update
    is not recorded by autograd. A complex parameter is updated as its real and imaginary parts.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_adam_arguments(lr, eps, betas, weight_decay)
        betas = _check_tensor_betas(betas, foreach, capturable)
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
        if group["fused"]:  # the fused kernel reads tensor hyper-parameters as doubles
            lr, beta1, beta2 = float(lr), float(beta1), float(beta2)
        state = self._state_of(p, group["amsgrad"], group["fused"])
        state["step"]._data += 1
        step = float(state["step"]._data)
        return lr, lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5

    def _apply(self, p, group, scalars):
        """One Adam step on ``p`` in torch's order of operations."""
        if _fused_half(p, group):
            with _in_float32(p, self.state):
                return self._apply(p, {**group, "fused": False}, scalars)
        lr, step_size, bias_correction2_sqrt = scalars
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        state = self.state[p]
        g = _grad_of(p, group["maximize"])
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                _scale_(p._data, _like(1 - lr * weight_decay, _opmath(p._data)))
            else:
                g = _add_weight_decay(g, p._data, weight_decay)
        x, g = _real(p._data), _real(g)
        exp_avg, exp_avg_sq = _real(state["exp_avg"]._data), _real(state["exp_avg_sq"]._data)
        if isinstance(group["betas"][0], Tensor):
            beta1 = x.dtype.type(beta1)  # torch moves a tensor beta1 to the parameter's dtype for the lerp
        _lerp_(exp_avg, g, 1 - beta1)
        _scale_(exp_avg_sq, beta2)
        _addcmul_(exp_avg_sq, g, g, 1 - beta2)
        second = exp_avg_sq
        xp = xp_of(p._data)
        if amsgrad:
            second = _real(state["max_exp_avg_sq"]._data)
            xp.maximum(second, exp_avg_sq, out=second)
        denom = _new_tensor(xp.sqrt(second), x.dtype)
        denom /= _like(bias_correction2_sqrt, denom)
        denom = _new_tensor(denom, x.dtype)
        denom += _alpha(group["eps"], x.dtype)
        denom = _new_tensor(denom, x.dtype)
        update = _opmath(exp_avg) * _like(-step_size, denom)
        update /= denom
        x += update
        _bump_version(p)


def _check_tensor_betas(betas, foreach, capturable):
    """torch's checks of Adam's betas: both floats or both (1-element) tensors, tensors only without foreach unless
    capturable; returns them with 1-element tensors as 0-dim ones, as torch keeps them."""
    if not (all(isinstance(b, float) for b in betas) or all(isinstance(b, Tensor) for b in betas)):
        raise ValueError("betas must be either both floats or both Tensors")
    for i, beta in enumerate(betas):
        if isinstance(beta, Tensor):
            if foreach and not capturable:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if beta.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
    return tuple(b.reshape(()) if isinstance(b, Tensor) else b for b in betas)


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
