"""SparseAdam: Adam that updates only the entries a sparse gradient holds (embedding tables)."""
from .optimizer import Optimizer, _bump_version, _check_lr, _to_scalar, _zeros_like, is_sparse_grad, sparse_grad_values
from .._layout import strided
from ..ops._common import xp_of


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: the moments and parameters change only at the entries the (coalesced) sparse
    gradient holds, as ``nn.Embedding(sparse=True)`` gives it: every looked-up row, even one whose gradient is
    zero (its moments still decay); the other rows keep their moments and values. Dense gradients get torch's
    error.
    """

    takes_sparse_grads = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check_lr(lr, positive=True)
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        checks = (("Sparse", lambda p: p.layout is not strided, "SparseAdam requires dense parameter tensors"),
                  ("Complex", lambda p: p.is_complex(), "SparseAdam does not support complex parameters"))
        for kind, test, reason in checks:  # torch's [group index, index in group] of each offending parameter
            found = [[i, j] for i, group in enumerate(self.param_groups) for j, p in enumerate(group["params"])
                     if test(p)]
            if found:
                raise ValueError(f"{kind} params at indices {found}: {reason}")

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
        if not is_sparse_grad(p):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        beta1, beta2 = group["betas"]
        state = self._state_of(p)
        state["step"] += 1
        rows, grad_values = sparse_grad_values(p, group["maximize"])
        if grad_values.size == 0:
            return
        xp = xp_of(p._data)
        exp_avg, exp_avg_sq = state["exp_avg"]._data, state["exp_avg_sq"]._data
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

