"""Adadelta: step sizes from the ratio of running RMS of updates to running RMS of gradients."""
from .optimizer import (Optimizer, _add_weight_decay, _bump_version, _grad_of, _step_tensor, _to_scalar,
                        _zeros_like)
from ..ops._common import xp_of


class Adadelta(Optimizer):
    """``torch.optim.Adadelta`` (Zeiler 2012; the optimizer of PyTorch's MNIST example).

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
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
        square_avg, acc_delta = state["square_avg"]._data, state["acc_delta"]._data
        square_avg *= rho
        square_avg += (1 - rho) * g * g
        xp = xp_of(p._data)
        std = xp.sqrt(square_avg + eps)
        delta = xp.sqrt(acc_delta + eps)
        delta /= std
        delta *= g
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        p._data -= lr * delta
        _bump_version(p)
