"""RMSprop with optional momentum, centering and weight decay."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _alpha, _bump_version, _check_lr, _grad_of, _lerp_,
                        _new_tensor, _opmath, _real, _scale_, _step_tensor, _to_scalar, _zeros_like)
from ..ops._common import xp_of


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``.

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_of(self, p, group):
        """``p``'s state, created on its first step (step, square_avg[, momentum_buffer, grad_avg])."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["square_avg"] = _zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = _zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One RMSprop step on ``p`` in torch's order of operations."""
        lr, alpha = _to_scalar(group["lr"]), group["alpha"]
        state = self._state_of(p, group)
        state["step"]._data += 1
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        x, g = _real(p._data), _real(g)
        square_avg = _real(state["square_avg"]._data)
        _scale_(square_avg, alpha)
        _addcmul_(square_avg, g, g, 1 - alpha)
        xp, dtype = xp_of(p._data), x.dtype
        if group["centered"]:
            grad_avg = _real(state["grad_avg"]._data)
            _lerp_(grad_avg, g, 1 - alpha)
            avg = _new_tensor(_opmath(square_avg) - _opmath(grad_avg) * _opmath(grad_avg), dtype)
            avg = _new_tensor(xp.sqrt(avg), dtype)
        else:
            avg = _new_tensor(xp.sqrt(square_avg), dtype)
        avg += _alpha(group["eps"], dtype)
        avg = _new_tensor(avg, dtype)
        if group["momentum"] > 0:
            buf = _real(state["momentum_buffer"]._data)
            _scale_(buf, group["momentum"])
            buf += _opmath(g) / avg
            x -= _alpha(lr, dtype) * _opmath(buf)
        else:
            update = _opmath(g) * -lr
            update /= avg
            x += update
        _bump_version(p)
