"""Muon: momentum SGD for 2-D weights whose step direction is orthogonalized by a Newton-Schulz iteration."""
import math

import numpy as np

from .optimizer import Optimizer, _bump_version, _lerp_, _to_scalar, _zeros_like
from ..ops._common import xp_of
from ..tensor import Tensor

NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)  # torch's default quintic: steep at zero, so 5 steps suffice
ADJUST_LR_FNS = ("original", "match_rms_adamw", "spectral_unclamped")


def _round_to_bfloat16(x):
    """float32 ``x`` rounded to the nearest bfloat16 (ties to even) and kept as float32: torch runs the
    iteration in bfloat16, each matrix product accumulated in float32 and rounded once. Done on the bits so CuPy
    arrays (which have no bfloat16) round the same way as numpy ones."""
    xp = xp_of(x)
    bits = xp.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) & np.uint32(0xFFFF0000)
    return xp.where(xp.isnan(x), x, rounded.view(np.float32)).astype(np.float32, copy=False)


def _orthogonalize(update, coefficients, ns_steps, eps):
    """``ns_steps`` Newton-Schulz iterations toward the nearest semi-orthogonal matrix of ``update`` (2-D),
    in bfloat16 precision as torch's; the result is float32 holding bfloat16 values. (A float64 direction is
    rounded to float32 first, then to bfloat16: a value exactly between two bfloat16 numbers after the first
    rounding may go the other way than torch's direct rounding.)"""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(k) for k in coefficients)
    xp = xp_of(update)
    tall = update.shape[0] > update.shape[1]
    x = _round_to_bfloat16(update.astype(np.float32))
    if tall:
        x = x.T
    norm = _round_to_bfloat16(xp.sqrt((x * x).sum(dtype=np.float32)).reshape(1))
    x = _round_to_bfloat16(x / xp.maximum(norm, _round_to_bfloat16(xp.asarray([eps], np.float32))))
    for _ in range(ns_steps):
        gram = _round_to_bfloat16(x @ x.T)
        gram_update = _round_to_bfloat16(b * gram + c * (gram @ gram))
        x = _round_to_bfloat16(a * x + gram_update @ x)
    return x.T if tall else x


def _adjusted_lr(lr, adjust_lr_fn, shape):
    """``lr`` scaled for a (fan-out A, fan-in B) matrix so rectangular updates have comparable size."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr * math.sqrt(rows / cols)


class Muon(Optimizer):
    """``torch.optim.Muon``: the momentum buffer (``momentum_buffer``) is a lerp toward the gradient; the
    (Nesterov) direction is orthogonalized, weight decay is decoupled and the step is scaled by
    ``adjust_lr_fn``. Only 2-D parameters: others are refused at construction, as torch does (train biases and
    embeddings with another optimizer).
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=NS_COEFFICIENTS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update(self, p, group):
        """One Muon step on ``p`` in torch's order of operations."""
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        g = p.grad._data
        if g.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        momentum, lr = group["momentum"], _to_scalar(group["lr"])
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = _zeros_like(p.grad)
        buf = state["momentum_buffer"]._data
        _lerp_(buf, g, 1 - momentum)
        if group["nesterov"]:
            direction = g.copy()
            _lerp_(direction, buf, momentum)
        else:
            direction = buf
        update = _orthogonalize(direction, group["ns_coefficients"], group["ns_steps"], group["eps"])
        x = p._data
        x *= x.dtype.type(1 - lr * group["weight_decay"])
        x -= x.dtype.type(_adjusted_lr(lr, group["adjust_lr_fn"], p.shape)) * update.astype(x.dtype)
        _bump_version(p)
