"""Window functions for spectral analysis: hann, hamming, blackman, bartlett and kaiser windows
(``torch.hann_window`` ...), periodic by default, in the default float type."""
import numpy as np

from .. import _dtype
from .._device import factory_device, move
from ..tensor import _new


def _window(name, length, periodic, dtype, device, requires_grad, shape):
    """``shape(n, m)`` over positions n = 0..length-1 of a window of ``m`` points (``length + 1`` when
    periodic: the last point of the symmetric window is dropped)."""
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt}")
    if length <= 1:
        values = np.ones(length, np.float64)
    else:
        points = length + 1 if periodic else length
        values = shape(np.arange(length, dtype=np.float64), points)
    return _new(move(values.astype(dt.np), factory_device(device) or "cpu"), requires_grad)


def _cosines(*coefficients):
    """a0 - a1 cos(2 pi n / (m - 1)) + a2 cos(4 pi n / (m - 1)) ..."""
    def shape(n, m):
        phase = 2 * np.pi * n / (m - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return shape


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosines(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    def triangle(n, m):
        return 1 - np.abs(2 * n / (m - 1) - 1)
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   triangle)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    def kaiser(n, m):
        return np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   kaiser)


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
