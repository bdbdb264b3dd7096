"""ASGD: SGD with a decaying step size and a running (Polyak) average of the iterates."""
from .optimizer import (Optimizer, _add_weight_decay, _alpha, _bump_version, _check_lr, _grad_of, _opmath, _scale_,
                        _step_tensor, _to_scalar, _zeros_like)


class ASGD(Optimizer):
    """``torch.optim.ASGD`` (Polyak and Juditsky 1992): ``state['ax']`` holds the averaged parameters,
    which start averaging after ``t0`` steps.

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _state_of(self, p, lr):
        """``p``'s state, created on its first step (step, eta = lr, mu = 1, ax)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["eta"] = _step_tensor(lr)
            state["mu"] = _step_tensor(1.0)
            state["ax"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One ASGD step on ``p`` in torch's order of operations."""
        lr, lambd, alpha = _to_scalar(group["lr"]), group["lambd"], group["alpha"]
        state = self._state_of(p, lr)
        state["step"]._data += 1
        g = _add_weight_decay(_grad_of(p, group["maximize"]), p._data, group["weight_decay"])
        eta = float(state["eta"]._data)
        _scale_(p._data, 1 - lambd * eta)
        p._data -= _alpha(eta, g.dtype) * _opmath(g)
        _bump_version(p)
        ax, mu = state["ax"]._data, state["mu"]._data
        if float(mu) != 1:
            ax += (p._data - ax) * mu
        else:
            ax[...] = p._data
        step = float(state["step"]._data)
        state["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** alpha)
        state["mu"]._data[...] = 1 / max(1, step - group["t0"])
