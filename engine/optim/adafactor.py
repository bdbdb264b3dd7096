"""Adafactor: Adam-like steps whose second moment of a matrix is kept as row and column means (factored)."""
import numpy as np

from .optimizer import Optimizer, _bump_version, _grad_of, _lerp_, _step_tensor, _to_scalar
from ..ops._common import xp_of
from ..tensor import Tensor, _new


class Adafactor(Optimizer):
    """``torch.optim.Adafactor``: a parameter of two or more dimensions keeps ``row_var`` (its last dimension
    averaged away) and ``col_var`` (its second-to-last averaged away), a vector keeps ``variance``; the step size
    is relative to the parameter's RMS and the update is clipped to RMS ``d``.

    ``foreach`` is accepted and changes nothing: torch's single-tensor and foreach paths compute the same
    update, and each parameter's is a few whole-array operations here either way. ``eps=(None, ...)`` takes the
    machine epsilon of each parameter's own dtype (torch's single-tensor path keeps the first parameter's for the
    rest of the group; the two agree whenever a group has one dtype).
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def _state_of(self, p):
        """``p``'s state, created on its first step: step and the factored (or full, for a vector) variance."""
        state = self.state[p]
        if not state:
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            state["step"] = _step_tensor()
            xp = xp_of(p._data)
            if p.dim() > 1:
                state["row_var"] = _new(xp.zeros(p.shape[:-1] + (1,), p._data.dtype))
                state["col_var"] = _new(xp.zeros(p.shape[:-2] + (1, p.shape[-1]), p._data.dtype))
            else:
                state["variance"] = _new(xp.zeros_like(p._data))
        return state

    def _update(self, p, group):
        """One Adafactor step on ``p`` in torch's order of operations."""
        lr = _to_scalar(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(p._data.dtype).eps)
        state = self._state_of(p)
        state["step"]._data += 1
        step = float(state["step"]._data)
        one_minus_beta2 = step ** group["beta2_decay"]
        rho = min(lr, 1 / step ** 0.5)
        x = p._data
        xp = xp_of(x)
        alpha = max(eps2, float(xp.linalg.norm(x.ravel())) / x.size ** 0.5) * rho
        if group["weight_decay"] != 0:
            x *= x.dtype.type(1 - lr * group["weight_decay"])
        g = _grad_of(p, group["maximize"])
        if g.ndim > 1:
            row_var, col_var = state["row_var"]._data, state["col_var"]._data
            _lerp_(row_var, (g * g).sum(axis=-1, keepdims=True) / x.dtype.type(g.shape[-1]), one_minus_beta2)
            _lerp_(col_var, (g * g).sum(axis=-2, keepdims=True) / x.dtype.type(g.shape[-2]), one_minus_beta2)
            estimate = row_var @ col_var
            estimate /= xp.maximum(row_var.mean(axis=-2, keepdims=True), x.dtype.type(eps1))
        else:
            variance = state["variance"]._data
            _lerp_(variance, g * g, one_minus_beta2)
            estimate = variance.copy()
        update = 1 / xp.sqrt(xp.maximum(estimate, x.dtype.type(eps1 * eps1)))
        update *= g
        clip = max(1.0, float(xp.linalg.norm(update.ravel())) / (update.size ** 0.5 * group["d"]))
        x -= x.dtype.type(alpha / clip) * update
        _bump_version(p)
