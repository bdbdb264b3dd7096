"""Dropout: random zeroing with 1 / (1 - p) rescaling, drawn from ``engine.random`` (seedable; on the
CPU the masks are torch's for the same seed).

In eval mode, with p = 0 or on empty inputs, each function returns its input unchanged (the same
tensor, as in PyTorch); p = 1 gives zeros.
"""
import numpy as np

from ..._rng import discrete
from ...autograd.function import Function
from ...ops._common import xp_of
from ...random import default_generator, device_rng


class _ScaleShift(Function):
    """x * scale + shift with constant arrays (broadcasting); writes into x when in-place."""

    uses_inputs = False

    def forward(self, x, scale, shift):
        self.scale = scale
        if self.inplace:
            xp_of(x).multiply(x, scale, out=x)
            if shift is not None:
                x += shift
            return x
        y = x * scale
        return y if shift is None else y + shift

    def backward(self, gy):
        return gy * self.scale, None, None


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(input, p, shape):
    """torch's dropout noise: 1 with probability 1 - p, else 0, in the input's dtype and of ``shape``.
    On the CPU it is ``empty_like(input).bernoulli_(1 - p)`` (or a fresh (N, C, 1, ...) tensor for
    channel-wise dropout), so the same seed drops the same elements as in PyTorch."""
    dt = input._data.dtype
    state = device_rng(input.device)
    if state is not None:
        draw = np.float64 if dt.itemsize == 8 else np.float32
        return (state.random_sample(shape, dtype=draw) >= p).astype(dt)
    noise = np.empty_like(input._data) if shape == tuple(input.shape) else np.empty(shape, dt)
    discrete.bernoulli_scalar_(default_generator, noise, 1.0 - p)
    return noise


def _apply(input, scale, shift, inplace):
    fn = _ScaleShift()
    fn.inplace = inplace
    return fn(input, scale, shift)


def _dropout(input, p, training, inplace, mask_shape):
    """Zero elements (or whole channels, via ``mask_shape``) with probability p; rescale the rest."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    dt = input._data.dtype
    if p == 1:
        return _apply(input, xp_of(input._data).zeros((), dt), None, inplace)
    noise = _noise(input, p, mask_shape)
    return _apply(input, noise / dt.type(1.0 - p), None, inplace)


def _feature_shape(input):
    """Mask shape of channel-wise dropout: one draw per (N, C), broadcast over the rest."""
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the survivors by 1 / (1 - p)."""
    return _dropout(input, p, training, inplace, tuple(input.shape))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                           "spatial dimension, a channel dimension, and an optional batch dimension "
                           "(i.e. 2D or 3D inputs).")
    shape = (input.shape[0], 1) if input.ndim == 2 else _feature_shape(input)
    return _dropout(input, p, training, inplace, shape)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) inputs (3-D inputs are read as (N, C, L), like PyTorch)."""
    _check_p(p)
    if input.ndim not in (3, 4):
        import warnings
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead.", stacklevel=2)
    return _dropout(input, p, training, inplace, _feature_shape(input))


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    if input.ndim not in (4, 5):
        import warnings
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead.", stacklevel=2)
    shape = (input.shape[0],) + (1,) * 3 if input.ndim == 4 else _feature_shape(input)
    return _dropout(input, p, training, inplace, shape)


_SELU_NEG_SAT = 1.7580993408473766  # -scale * alpha of SELU: where a dropped unit sits


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units go to SELU's saturation value and the result is
    affinely rescaled so the mean and variance are kept."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    dt = input._data.dtype
    if p == 1:
        return _apply(input, xp_of(input._data).zeros((), dt), None, inplace)
    a = 1.0 / np.sqrt((_SELU_NEG_SAT ** 2 * p + 1) * (1 - p))
    noise = _noise(input, p, tuple(input.shape))
    shift = (noise - dt.type(1)) * dt.type(_SELU_NEG_SAT * a) + dt.type(_SELU_NEG_SAT * a * p)
    return _apply(input, noise * dt.type(a), shift, inplace)


__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"]
