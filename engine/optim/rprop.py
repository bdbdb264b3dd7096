"""Rprop: per-coordinate step sizes that grow while the gradient keeps its sign and shrink when it flips."""
from .optimizer import Optimizer, _bump_version, _check_lr, _grad_of, _real, _step_tensor, _to_scalar, _zeros_like
from ..ops._common import xp_of


class Rprop(Optimizer):
    """``torch.optim.Rprop`` (Riedmiller and Braun 1993): only the gradient's sign is used; after a sign
    flip the coordinate does not move and its gradient is forgotten for the next comparison.

    ``foreach`` and ``capturable`` are accepted and change nothing: each parameter's update is a few
    whole-array operations either way. ``differentiable`` is accepted; the update is not recorded by
    autograd.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _state_of(self, p, lr):
        """``p``'s state, created on its first step (step, prev, step_size filled with lr, in both parts of a
        complex one)."""
        state = self.state[p]
        if not state:
            state["step"] = _step_tensor()
            state["prev"] = _zeros_like(p)
            state["step_size"] = _zeros_like(p, complex(lr, lr) if p.is_complex() else lr)
        return state

    def _update(self, p, group):
        """One Rprop step on ``p`` in torch's order of operations."""
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        state = self._state_of(p, _to_scalar(group["lr"]))
        state["step"]._data += 1
        xp = xp_of(p._data)
        x, g = _real(p._data), xp.array(_real(_grad_of(p, group["maximize"])))  # a copy, even of a 0-dim grad
        prev, step_size = _real(state["prev"]._data), _real(state["step_size"]._data)
        factor = _sign(xp, g * prev)
        flipped = factor < 0
        factor[factor > 0] = etaplus
        factor[flipped] = etaminus
        factor[factor == 0] = 1
        step_size *= factor
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        g[flipped] = 0
        x -= _sign(xp, g) * step_size
        _bump_version(p)
        prev[...] = g


def _sign(xp, x):
    """-1, 0 or 1, and 0 for NaN as torch gives (numpy gives NaN): a NaN gradient leaves its step size and
    its coordinate alone."""
    return xp.where(x == x, xp.sign(x), 0).astype(x.dtype, copy=False)
