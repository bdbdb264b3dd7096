"""Adadelta: step sizes from the ratio of running RMS of updates to running RMS of gradients."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _alpha, _bump_version, _check_lr, _grad_of, _opmath,
                        _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class Adadelta(Optimizer):
    """``torch.optim.Adadelta`` (Zeiler 2012; the optimizer of PyTorch's MNIST example).

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step (step, square_avg, acc_delta)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["square_avg"] = _zeros_like(p)
            state["acc_delta"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One Adadelta step on ``p`` in torch's order of operations."""
        lr, rho, eps = _to_scalar(group["lr"]), group["rho"], group["eps"]
        state = self._state_of(p)
        state["step"]._data += 1
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        x, g = _real(p._data), _real(g)
        square_avg, acc_delta = _real(state["square_avg"]._data), _real(state["acc_delta"]._data)
        _scale_(square_avg, rho)
        _addcmul_(square_avg, g, g, 1 - rho)
        xp = xp_of(p._data)
        std = xp.sqrt(square_avg + eps)  # (an added scalar is rounded to a half dtype, in NumPy as in torch)
        delta = xp.sqrt(acc_delta + eps)
        delta /= std
        delta *= g
        _scale_(acc_delta, rho)
        _addcmul_(acc_delta, delta, delta, 1 - rho)
        x -= _alpha(lr, x.dtype) * _opmath(delta)
        _bump_version(p)
