"""Adagrad: per-coordinate learning rates from the running sum of squared gradients."""
from .optimizer import (Optimizer, _add_weight_decay, _addcmul_, _alpha, _bump_version, _check_fused,
                        _check_fused_param, _check_lr, _fused_half, _grad_of, _in_float32, _new_tensor, _opmath, _real,
                        _step_tensor, _to_scalar, _zeros_like, is_sparse_grad, sparse_grad_values)
from ..ops._common import xp_of


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``; its state (step, sum) is created when it is constructed.

    ``foreach`` and ``fused`` (on any device, as torch allows on the CPU) are accepted and change nothing:
    each parameter's update is a few whole-array operations either way; ``fused`` keeps torch's checks, its
    float32 step counter, its tensor lr read as a double and, for a half parameter, its whole step computed in
    float32 and rounded once. ``differentiable`` is accepted; the update is not recorded by autograd.
    A sparse gradient updates only the entries it holds, as torch's (``_sparse_update``).
    """

    takes_sparse_grads = True

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        """``p``'s step counter and accumulator, filled with the constructor's ``initial_accumulator_value`` (a
        group's own value is ignored, as torch does), in both parts of a complex one."""
        state = self.state[p]
        state["step"] = _step_tensor(fused=group["fused"])
        value = self.defaults["initial_accumulator_value"]
        state["sum"] = _zeros_like(p, complex(value, value) if p.is_complex() else value)
        return state

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            if group["fused"]:
                lr = float(lr)  # the fused kernel reads a tensor lr as a double
            for p in group["params"]:
                if p.grad is None:
                    continue
                if group["fused"]:
                    _check_fused_param(p)
                state = self.state[p] or self._init_state(p, group)
                state["step"]._data += 1
                step = float(state["step"]._data)
                if is_sparse_grad(p):
                    self._sparse_update(p, group, lr / (1 + (step - 1) * group["lr_decay"]))
                    continue
                clr = lr / (1 + (step - 1) * group["lr_decay"])
                if _fused_half(p, group):
                    with _in_float32(p, self.state):
                        self._dense_update(p, group, state, clr)
                else:
                    self._dense_update(p, group, state, clr)
        return loss

    def _dense_update(self, p, group, state, clr):
        """torch's Adagrad step for a dense gradient, at the step's learning rate ``clr``."""
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        x, g = _real(p._data), _real(g)
        state_sum = _real(state["sum"]._data)
        _addcmul_(state_sum, g, g, 1)
        std = _new_tensor(xp_of(p._data).sqrt(state_sum), x.dtype)
        std += _alpha(group["eps"], x.dtype)
        update = _opmath(g) * -clr
        update /= _new_tensor(std, x.dtype)
        x += update
        _bump_version(p)

    def _sparse_update(self, p, group, clr):
        """torch's Adagrad step for a sparse gradient (coalesced): the squared values added into the sum at their
        entries, and the parameter moved at those entries only; weight decay is refused."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        index, values = sparse_grad_values(p, group["maximize"])
        state_sum = self.state[p]["sum"]._data
        state_sum[index] += values * values
        std = xp_of(p._data).sqrt(state_sum[index])
        std += group["eps"]
        p._data[index] += (values / std) * -clr
        _bump_version(p)
