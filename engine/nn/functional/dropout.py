"""Dropout: random zeroing with 1 / (1 - p) rescaling, drawn from ``engine.random`` (seedable; on the
CPU the masks are torch's for the same seed).

In eval mode, with p = 0 or on empty inputs, each function returns its input unchanged (the same
tensor, as in PyTorch); p = 1 gives zeros.
"""
import numpy as np

from ... import _dtype
from ..._rng import discrete
from ..._device import device_of
from ...autograd.function import Function
from ...autograd.double_backward import constant
from ...ops._common import xp_of
from ...random import default_generator, device_rng


class _ScaleShift(Function):
    """x * scale + shift with constant arrays (broadcasting); writes into x when in-place."""

    uses_inputs = False

    def forward(self, x, scale, shift):
        self.scale = scale
        return _scale_shift(x, scale, shift, self.inplace)

    def backward(self, gy):
        return gy * self.scale, None, None

    def backward_tensors(self, gy):
        return _scaled(gy, self.scale), None, None


class _Dropout(Function):
    """Dropout's ``x * noise / (1 - p)`` (alpha dropout's affine map of the noise with ``alpha``), the noise
    drawn in the forward: each call, and each replay of an ``nn.Graph`` that traced it, draws its own."""

    uses_inputs = False

    def forward(self, x):
        # torch computes the mask in the input's dtype: the half types round each step (their scalar factors
        # stay float32, the shift added is rounded to the dtype). A bfloat16 input arrives widened to float32.
        dt = x.dtype
        own = np.dtype(_dtype.bfloat16.np) if self.widened else dt
        compute = np.float32 if own.itemsize == 2 else dt.type

        def rounded(v):
            return v if v.dtype == dt == own else v.astype(own).astype(dt, copy=False)
        noise = _noise(x, self.p, self.mask_shape).astype(compute)
        if not self.alpha:
            self.scale = rounded(noise / compute(1.0 - self.p))
            return _scale_shift(x, self.scale, None, self.inplace)
        a = 1.0 / np.sqrt((_SELU_NEG_SAT ** 2 * self.p + 1) * (1 - self.p))
        shift = rounded(rounded(rounded(noise - compute(1)) * compute(_SELU_NEG_SAT * a))
                        + rounded(compute(_SELU_NEG_SAT * a * self.p)))
        self.scale = rounded(noise * compute(a))
        if self.inplace:
            xp_of(x).multiply(x, self.scale, out=x)
            x[...] = rounded(x) + shift
            return x
        return rounded(x * self.scale) + shift

    def backward(self, gy):
        return (gy * self.scale,)

    def backward_tensors(self, gy):
        return (_scaled(gy, self.scale),)


def _scaled(gy, scale):
    """Gradient tensor ``gy`` times the constant ``scale`` (an array or a number): linear, constant data."""
    return gy * (constant(scale) if hasattr(scale, "shape") else scale)


def _scale_shift(x, scale, shift, inplace):
    if inplace:
        xp_of(x).multiply(x, scale, out=x)
        if shift is not None:
            x += shift
        return x
    y = x * scale
    return y if shift is None else y + shift


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _noise(x, p, shape):
    """torch's dropout noise for array ``x``: 1 with probability 1 - p, else 0, in x's dtype and of ``shape``.
    On the CPU it is ``empty_like(input).bernoulli_(1 - p)`` (or a fresh (N, C, 1, ...) tensor for
    channel-wise dropout), so the same seed drops the same elements as in PyTorch."""
    dt = x.dtype
    state = device_rng(device_of(x))
    if state is not None:
        draw = np.float64 if dt.itemsize == 8 else np.float32
        return (state.random_sample(shape, dtype=draw) >= p).astype(dt)
    noise = np.empty_like(x) if shape == x.shape else np.empty(shape, dt)
    discrete.bernoulli_scalar_(default_generator, noise, 1.0 - p)
    return noise


def _zeros(input, inplace):
    """p = 1: every unit dropped."""
    fn = _ScaleShift()
    fn.inplace = inplace
    return fn(input, xp_of(input._data).zeros((), input._data.dtype), None)


def _apply_noise(input, p, mask_shape, inplace, alpha=False):
    fn = _Dropout()
    fn.p, fn.mask_shape, fn.inplace, fn.alpha = p, mask_shape, inplace, alpha
    return fn(input)


_FEATURE_NDIM = "Feature dropout requires at least 2 dimensions in the input"


def _dropout(input, p, training, inplace, mask_shape, feature=False):
    """Zero elements (or whole channels, via ``mask_shape``; ``feature``: torch's feature dropout, which needs
    2 dims) with probability p; rescale the rest."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _zeros(input, inplace)
    if feature and input.ndim < 2:
        raise RuntimeError(_FEATURE_NDIM)
    return _apply_noise(input, p, mask_shape, inplace)


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
    return _dropout(input, p, training, inplace, _feature_shape(input), feature=True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    _check_p(p)
    if input.ndim not in (4, 5):
        import warnings
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead.", stacklevel=2)
    # all but 5-D inputs are one unbatched sample, whose channels are the first dim (torch unsqueezes them)
    shape = _feature_shape(input) if input.ndim == 5 else input.shape[:1] + (1,) * (input.ndim - 1)
    return _dropout(input, p, training, inplace, tuple(shape))


_SELU_NEG_SAT = 1.7580993408473766  # -scale * alpha of SELU: where a dropped unit sits


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units go to SELU's saturation value and the result is
    affinely rescaled so the mean and variance are kept."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _zeros(input, inplace)
    return _apply_noise(input, p, tuple(input.shape), inplace, alpha=True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: each (N, C) channel of an (N, C, ...) input is dropped to SELU's
    saturation value with probability p, then the result is affinely rescaled as in ``alpha_dropout``."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        return _zeros(input, inplace)
    if input.ndim < 2:
        raise RuntimeError(_FEATURE_NDIM)
    return _apply_noise(input, p, _feature_shape(input), inplace, alpha=True)


__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]
