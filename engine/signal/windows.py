"""``torch.signal.windows``: SciPy-style window functions, symmetric by default (``sym=False`` gives the periodic
window for spectral analysis: the symmetric window of M + 1 points without its last).

Values are computed in float64 over the positions and rounded once to the requested float32 or float64; torch
computes float32 windows in float32, so the two can differ in the last bit or two.
"""
import math
from collections.abc import Iterable

import numpy as np

from .. import _dtype
from .._device import factory_device, move
from .._layout import strided
from ..tensor import _new

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]

_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _checked(name, M, dtype, layout):
    """torch's checks of every window, in its order (before the window's own parameters): the length, the layout
    and the dtype; the dtype of the result."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if dt not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _window(M, sym, dt, device, requires_grad, shape, single_point=True):
    """``shape(n, points)`` over n = 0..M-1 for a window of ``points`` = M (M + 1 when periodic) positions, as a
    tensor; an empty window for M = 0 and (``single_point``) a one for M = 1, as torch's."""
    if M == 0 or (M == 1 and single_point):
        values = np.ones(M, np.float64)
    else:
        values = shape(np.arange(M, dtype=np.float64), M if sym or M == 1 else M + 1)
    return _new(move(np.asarray(values).astype(dt.np), factory_device(device) or "cpu"), requires_grad)


def _positive(what, value):
    if value <= 0:
        raise ValueError(f"{what} must be positive, got: {value} instead.")


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """sum over k of (-1)^k a[k] cos(2 pi k n / (points - 1)): the family of hann, hamming, blackman, nuttall."""
    dt = _checked("general_cosine", M, dtype, layout)
    if M > 1:
        if not isinstance(a, Iterable):
            raise TypeError("Coefficients must be a list/tuple")
        if not a:
            raise ValueError("Coefficients cannot be empty")
        a = [float(c) for c in a]

    def shape(n, points):
        phase = 2 * math.pi * n / (points - 1)
        return sum((-1) ** k * c * np.cos(k * phase) for k, c in enumerate(a))
    return _window(M, sym, dt, device, requires_grad, shape)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The generalised Hamming window: alpha - (1 - alpha) cos(2 pi n / (points - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hamming window (alpha 0.54)."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window (alpha 0.5)."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window (coefficients 0.42, 0.5, 0.08)."""
    _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=list(_NUTTALL), sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular window reaching zero at both ends: 1 - |2 n / (points - 1) - 1|."""
    dt = _checked("bartlett", M, dtype, layout)
    return _window(M, sym, dt, device, requires_grad, lambda n, points: 1 - np.abs(2 * n / (points - 1) - 1))


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """The sine window: sin(pi (n + 0.5) / points)."""
    dt = _checked("cosine", M, dtype, layout)
    return _window(M, sym, dt, device, requires_grad, lambda n, points: np.sin(math.pi * (n + 0.5) / points),
                   single_point=False)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-|n - center| / tau), centred on the window's middle; ``center`` may be given for periodic windows only."""
    dt = _checked("exponential", M, dtype, layout)
    _positive("Tau", tau)
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def shape(n, points):
        middle = (points - 1) / 2 if center is None else center
        return np.exp(-np.abs(n - middle) / tau)
    return _window(M, sym, dt, device, requires_grad, shape, single_point=False)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """exp(-((n - middle) / std)^2 / 2)."""
    dt = _checked("gaussian", M, dtype, layout)
    _positive("Standard deviation", std)
    return _window(M, sym, dt, device, requires_grad,
                   lambda n, points: np.exp(-0.5 * ((n - (points - 1) / 2) / std) ** 2), single_point=False)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """I0(beta sqrt(1 - (2 n / (points - 1) - 1)^2)) / I0(beta)."""
    dt = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window(M, sym, dt, device, requires_grad,
                   lambda n, points: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (points - 1) - 1) ** 2, 0, None)))
                   / np.i0(beta))
