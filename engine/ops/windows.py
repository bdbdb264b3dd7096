"""Window functions for spectral analysis: hann, hamming, blackman, bartlett and kaiser windows
(``torch.hann_window`` ...), periodic by default, in the default float type.

Each is computed as torch's CPU kernel computes it, op by op in the requested dtype (so float16 and bfloat16
windows round where torch's round): positions ``0 .. m-1`` (``m`` is the length, one more when periodic, and the
periodic window drops its last point), scaled, through the cosine (or the triangle), and shifted. Kaiser's is one
kernel in the dtype's compute type (float32 for the half types), rounded once.
"""
import numpy as np

from .. import _dtype
from .._device import factory_device, move
from ..tensor import _new

_PI = np.pi


def _checked_dtype(name, length, dtype, layout, device):
    """torch's checks (the dtype before the length) and the result's dtype: floating, or complex (which only an
    empty or single-point window survives: torch's ``arange`` has no complex kernel)."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        shown_layout = "Strided" if layout is not None else "Strided (default)"
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype={_dtype.cpp_name(dt)}, "
                           f"device={factory_device(device) or 'cpu'}, layout={shown_layout}, requires_grad=false "
                           f"(default), pinned_memory=false, memory_format=(nullopt))")
    if length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={length}")
    if dt.is_complex and length > 1:
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dt.title}'")
    return dt


def _window(name, length, periodic, dtype, layout, device, requires_grad, shape):
    """``shape(positions)`` over the positions 0..m-1 (an engine tensor of the dtype) for m = ``length`` (+1 when
    periodic), the last point dropped when periodic; torch's empty and single-point windows."""
    from .creation import ones, zeros
    from .ranges import arange
    dt = _checked_dtype(name, length, dtype, layout, device)
    device = factory_device(device)
    if length <= 1:
        window = (ones if length else zeros)(length, dtype=dt, device=device)
    else:
        points = length + 1 if periodic else length
        window = shape(arange(points, dtype=dt, device=device), points)[:length]
    return window.requires_grad_(True) if requires_grad else window


def _hamming_shape(alpha, beta):
    def shape(n, m):
        return (n * (2 * _PI / (m - 1))).cos() * -beta + alpha
    return shape


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    _checked_dtype("hann_window", window_length, dtype, layout, device)
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _hamming_shape(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   _hamming_shape(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    def shape(n, m):
        phase = n * (_PI / (m - 1))
        return (phase * 4).cos() * 0.08 - (phase * 2).cos() * 0.5 + 0.42
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, shape)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    def shape(n, m):
        from .shape import cat
        ramp = n * (2.0 / (m - 1))
        first_half = ((m - 1) >> 1) + 1
        return cat([ramp[:first_half], ramp[first_half:] * -1 + 2])
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, shape)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    def shape(n, m):
        compute = np.float64 if n.dtype is _dtype.float64 else np.float32
        half = compute((m - 1) / 2.0)
        b = compute(beta)
        x = n.cpu().numpy().astype(compute)
        values = np.i0(b * np.sqrt(np.abs(1 - ((x - half) / half) ** 2))) / np.i0(b)
        return _new(move(np.asarray(values, compute), n.device.type)).to(n.dtype)
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, shape)


__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
