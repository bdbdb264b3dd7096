"""``engine.nn.init``: in-place weight initialisation with PyTorch's formulas and defaults.

Every function fills its tensor under ``no_grad`` from ``engine.random`` (so ``engine.manual_seed``
makes it reproducible) and returns the tensor.
"""
import math
import statistics
import warnings

import numpy as np

from .. import random as _random
from ..autograd.grad_mode import no_grad
from ..ops.creation import _fill_

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (``param`` is leaky_relu's negative slope)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) of a weight laid out as (out, in, *kernel)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = 1
    for s in tensor.shape[2:]:
        receptive_field *= s
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _write(tensor, values):
    """Overwrite ``tensor`` in place with ``values`` (cast to its dtype), outside autograd."""
    with no_grad():
        return _fill_(tensor, np.asarray(values))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    return _write(tensor, _random.uniform_array(generator, a, b, tuple(tensor.shape), tensor._data.dtype))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    return _write(tensor, _random.normal_array(generator, mean, std, tuple(tensor.shape), tensor._data.dtype))


def _standard_truncated_normal(rng, shape, lo, hi):
    """Exact samples of N(0, 1) restricted to [lo, hi].

    Rejection sampling when the interval holds a fair share of the mass; otherwise the inverse
    CDF of uniforms drawn between the CDF values of the bounds.
    """
    size = int(np.prod(shape))
    cdf = statistics.NormalDist().cdf
    mass = cdf(hi) - cdf(lo)
    if mass >= 0.25:
        out = np.empty(size)
        todo = np.arange(size)
        while todo.size:
            draw = rng.standard_normal(todo.size)
            ok = (draw >= lo) & (draw <= hi)
            out[todo[ok]] = draw[ok]
            todo = todo[~ok]
        return out.reshape(shape)
    inv = np.frompyfunc(statistics.NormalDist().inv_cdf, 1, 1)
    u = rng.uniform(cdf(lo), cdf(hi), size)
    u = np.clip(u, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0))
    return np.clip(inv(u).astype(np.float64), lo, hi).reshape(shape)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (exactly, not by clamping)."""
    if std <= 0:
        raise ValueError(f"trunc_normal_ expects std > 0, got {std}")
    z = _standard_truncated_normal(_random.rng(generator), tuple(tensor.shape), (a - mean) / std, (b - mean) / std)
    return _write(tensor, np.clip(z * std + mean, a, b))


def constant_(tensor, val):
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity (as many ones as fit on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill a 3/4/5-D conv weight so the convolution is the identity (per group)."""
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    values = np.zeros(shape)
    centre = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2) with std = gain / sqrt(fan)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (trailing dims flattened), scaled by ``gain``."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _random.rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (gain * q).reshape(tuple(tensor.shape)))


# PyTorch's deprecated non-underscore aliases are not provided: call the in-place names.
__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_"]
