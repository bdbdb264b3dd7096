"""SparseAdam: Adam that updates only the rows a gradient touches (embedding tables)."""
from .optimizer import Optimizer, _bump_version, _grad_of, _to_scalar, _zeros_like
from ..ops._common import xp_of


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: the moments and parameters change only in the rows (slices along
    dim 0) that the gradient touches; the other rows keep their moments and values.

    torch takes sparse gradients only (``nn.Embedding(sparse=True)``). The engine has no sparse
    layout: its ``Embedding(sparse=True)`` gives a dense gradient whose untouched rows are zero, so
    SparseAdam takes dense gradients and treats a row as touched when any of its values is nonzero.
    That equals torch's update except for a looked-up row whose gradient is exactly zero, which torch
    would still decay.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step (step as a Python int, exp_avg, exp_avg_sq)."""
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
        return state

    def _update(self, p, group):
        """One SparseAdam step on ``p``'s touched rows, in torch's order of operations."""
        beta1, beta2 = group["betas"]
        state = self._state_of(p)
        state["step"] += 1
        g = _grad_of(p, group["maximize"])
        xp = xp_of(p._data)
        rows = _touched_rows(g, xp)
        if rows is None:
            return
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
        grad_values = g[rows]
        old_exp_avg = exp_avg[rows]
        exp_avg_update = (grad_values - old_exp_avg) * (1 - beta1)
        exp_avg[rows] = old_exp_avg + exp_avg_update
        old_exp_avg_sq = exp_avg_sq[rows]
        exp_avg_sq_update = (grad_values * grad_values - old_exp_avg_sq) * (1 - beta2)
        exp_avg_sq[rows] = old_exp_avg_sq + exp_avg_sq_update
        numer = exp_avg_update + old_exp_avg
        denom = xp.sqrt(exp_avg_sq_update + old_exp_avg_sq)
        denom += group["eps"]
        step = state["step"]
        step_size = _to_scalar(group["lr"]) * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
        p._data[rows] += -step_size * (numer / denom)
        _bump_version(p)


def _touched_rows(g, xp):
    """The indices along dim 0 where ``g`` has a nonzero value (``...`` for a nonzero 0-dim ``g``);
    None when there are none."""
    if g.ndim == 0:
        return ... if g != 0 else None
    rows = xp.flatnonzero(xp.any(g != 0, axis=tuple(range(1, g.ndim))))
    return rows if rows.size else None
