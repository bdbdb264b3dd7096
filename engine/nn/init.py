"""``engine.nn.init``: in-place weight initialisation with PyTorch's formulas and defaults.

Every function fills its tensor under ``no_grad`` from ``engine.random`` and returns the tensor. The
random ones draw as torch's do, so after the same seed they give torch's values bit for bit (except
``orthogonal_``, whose QR factorisation is numpy's). torch's deprecated names without the trailing ``_``
(``uniform``, ``xavier_normal``, ...) warn with torch's FutureWarning and call the in-place form.
"""
import math
import warnings

import numpy as np

from .. import _dtype, random as _random
from .._rng import bounds, continuous
from ..autograd.grad_mode import no_grad
from ..ops.creation import _fill_, randperm

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
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _normal_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _truncate_by_redrawing(values, generator, mean, std, a, b):
    """Normal draws; those outside [a, b] are replaced from fresh full draws until none is left."""
    low, high = (float(values.dtype.type(bound)) for bound in (a, b))
    continuous.normal_(generator, values, mean, std)
    outside = (values < low) | (values > high)
    while outside.any():
        fresh = np.empty_like(values)
        continuous.normal_(generator, fresh, mean, std)
        values[outside] = fresh[outside]
        outside = (values < low) | (values > high)


def _truncate_by_proposals(values, generator, mean, std, a, b):
    """Uniform proposals on [a, b], each accepted with probability density / peak density; the
    rejected ones are proposed again (every round draws for the whole tensor, as torch does)."""
    dtype = values.dtype.type
    mode = max(a, min(mean, b))
    log_peak = dtype(-0.5 * ((mode - mean) / std) ** 2)

    def log_density_below_peak(x):
        return ((x - dtype(mean)) / dtype(std)) ** 2 * dtype(-0.5) - log_peak

    def rejected(proposals):
        acceptance = np.empty_like(values)
        continuous.uniform_(generator, acceptance, 0.0, 1.0)
        with np.errstate(divide="ignore"):  # log(0) = -inf accepts, as in torch
            log_acceptance = np.log(acceptance.astype(np.float64)).astype(values.dtype)
        return log_acceptance > log_density_below_peak(proposals)

    continuous.uniform_(generator, values, a, b)
    pending = rejected(values)
    proposals = np.empty_like(values)
    while pending.any():
        continuous.uniform_(generator, proposals, a, b)
        values[pending] = proposals[pending]
        pending &= rejected(proposals)


def _check_trunc_normal_dtype(tensor, by_redrawing):
    """torch's error for a dtype its sampling refuses: the first op to fail names itself (``normal_`` or
    ``uniform_`` on an integer tensor, the comparison on a complex one)."""
    d = tensor.dtype
    if d.is_complex:
        kernel = "lt_cpu" if by_redrawing else "gt_cpu"
    elif not d.is_floating_point:
        kernel = "normal_kernel_cpu" if by_redrawing else "check_uniform_bounds"
    else:
        return
    raise NotImplementedError(f'"{kernel}" not implemented for \'{d.title}\'')


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b], by torch's rejection sampling: redrawn normals
    when [a, b] holds more than 30% of the mass, else uniform proposals accepted by density (a
    negative ``std`` acts as its absolute value there, as in torch; ``std=0`` divides by zero)."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
                      "values may be incorrect.", stacklevel=2)
    mass = _normal_cdf((b - mean) / std) - _normal_cdf((a - mean) / std)
    by_redrawing = mass > 0.3
    _check_trunc_normal_dtype(tensor, by_redrawing)
    if not by_redrawing:
        bounds.uniform_bounds(tensor.dtype, a, b)
    sample = _truncate_by_redrawing if by_redrawing else _truncate_by_proposals
    host = tensor._data if tensor.device.type == "cpu" else np.empty(tuple(tensor.shape), tensor._data.dtype)
    sample(host, _random.generator_or_default(generator), mean, std, a, b)
    return _write(tensor, host)


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
    if min(out_per_group, shape[1]) > 0 and 0 in shape[2:]:
        empty = shape.index(0, 2)
        raise IndexError(f"index 0 is out of bounds for dimension {empty} with size 0")
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = sqrt(3) * gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
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


def _check_orthogonal_dtype(d):
    """torch's error for a dtype its QR factorisation or its sign refuses (torch raises it after drawing)."""
    if d.is_complex:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                                  "use torch.sgn instead.")
    if d.np in _dtype.HALF_NP:
        raise NotImplementedError(f'"geqrf_cpu" not implemented for \'{d.title}\'')


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix (trailing dims flattened), scaled by ``gain``: the Q of
    the QR factorisation of a standard normal matrix (torch's draw; numpy's LAPACK factorises it, so
    the values agree with torch's to rounding, not bit for bit). Like torch's, it writes through a view
    of ``tensor`` as (rows, cols), so a tensor that cannot be viewed so is refused."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    if not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for \'{tensor.dtype.title}\'')
    _check_orthogonal_dtype(tensor.dtype)
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        target = tensor.view(rows, cols)
    flat = np.empty((rows, cols), tensor._data.dtype)
    continuous.normal_(_random.generator_or_default(generator), flat, 0.0, 1.0)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    _write(target, q * q.dtype.type(gain))
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor with N(0, std^2) values, then zero ``ceil(sparsity * rows)`` random rows of each column
    (the rows come from the global generator's ``randperm``, as in torch, whatever ``generator`` is)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            tensor[randperm(rows)[:num_zeros], col] = 0
    return tensor


def _deprecated(new):
    """torch's old name of the in-place initialiser ``new`` (without the trailing ``_``): warns, then calls it."""
    old_name = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = f"Deprecated: use ``{new.__name__}``."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
           "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]
