"""Stochastic gradient descent with optional momentum, dampening, Nesterov and weight decay."""
from .optimizer import (Optimizer, _add_weight_decay, _alpha, _bump_version, _check_fused, _check_fused_param,
                        _check_lr, _fused_half, _grad_of, _in_float32, _like, _opmath, _scale_, _to_scalar,
                        is_sparse_grad)
from ..ops._common import xp_of
from ..tensor import _new


class SGD(Optimizer):
    """``torch.optim.SGD``: the first step's momentum buffer is the gradient itself.

    ``foreach`` and ``fused`` (on any device, as torch allows on the CPU) are accepted and change nothing:
    each parameter's update is a few whole-array operations either way; ``fused`` keeps torch's checks
    (floating-point parameters, not with ``differentiable`` or ``foreach``) and, for a half parameter, its
    whole step computed in float32 and rounded once. ``differentiable`` is
    accepted; the update is not recorded by autograd. A sparse gradient (``Embedding(sparse=True)``) updates
    the rows it holds, with a sparse momentum buffer, as torch's.
    """

    takes_sparse_grads = True

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach,
                        differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    def _scalars(self, p, group):
        """(learning rate,)"""
        if group["fused"]:
            _check_fused_param(p)
        return (_to_scalar(group["lr"]),)

    def _apply(self, p, group, scalars):
        (lr,) = scalars
        if is_sparse_grad(p):
            return self._apply_sparse(p, group, lr)
        if _fused_half(p, group):
            with _in_float32(p, self.state):
                return self._apply(p, {**group, "fused": False}, scalars)
        momentum = group["momentum"]
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        if momentum != 0:
            g = self._momentum(p, g, momentum, group["dampening"], group["nesterov"])
        p._data -= _alpha(_like(lr, g), g.dtype) * _opmath(g)
        _bump_version(p)

    def _momentum(self, p, g, momentum, dampening, nesterov):
        """Update ``p``'s momentum buffer with ``g`` and return the direction to step along."""
        state = self.state[p]
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = _new(g.copy())
        else:
            _scale_(buf._data, momentum)
            buf._data += _opmath(g) if dampening == 0 else _alpha(1 - dampening, g.dtype) * _opmath(g)
        if nesterov:
            return (_opmath(g) + _alpha(momentum, g.dtype) * _opmath(buf._data)).astype(g.dtype, copy=False)
        return buf._data

    def _apply_sparse(self, p, group, lr):
        """torch's update for a sparse gradient: no weight decay; the momentum buffer is a sparse tensor (kept
        coalesced here), and the step adds into the rows the direction holds."""
        if group["weight_decay"] != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        g = -p.grad if group["maximize"] else p.grad
        momentum, dampening = group["momentum"], group["dampening"]
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            buf = g.clone() if buf is None else (buf * momentum + (g if dampening == 0 else g * (1 - dampening)))
            state["momentum_buffer"] = buf = buf.coalesce()
            g = g + buf * momentum if group["nesterov"] else buf
        direction = g._data
        xp_of(p._data).add.at(p._data, tuple(direction.indices), direction.values * -_to_scalar(lr))
        _bump_version(p)
        return None

