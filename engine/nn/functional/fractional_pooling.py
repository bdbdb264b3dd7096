"""Fractional max pooling (Graham, 2014): max over ``kernel_size`` windows placed at pseudo-random starts.

Along each spatial axis the window starts come from one random sample ``u`` in [0, 1) per (batch, channel)
and axis: start ``i`` is ``int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (in - k) / (out - 1)``,
computed in the samples' dtype as torch does, and the last window ends at the input's end. The samples are
``_random_samples`` (N, C, nd) when given, so both sides of a comparison can share them; for 2-D inputs
sample 0 places the width axis and sample 1 the height axis, for 3-D samples 0, 1, 2 place depth, height
and width (torch's order).

Every window is gathered from the flattened planes as flat indices, and ``max`` over the window's
positions (first maximum in row-major order, as torch) gives values and the argmax; gather and max are
differentiable, so the backward pass adds each output's gradient at its argmax, on either device.
"""
import math

from ... import _dtype
from ...ops.creation import rand
from ...ops.ranges import arange
from ...ops.shape import cat
from ...tensor import Tensor
from .pooling import _expand
from ...amp import autocast_mode

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}
_SAMPLE_OF_AXIS = {2: (1, 0), 3: (0, 1, 2)}


def _sizes(nd, name, what, value):
    """``value`` as ``nd`` ints, with torch's error for a wrong count."""
    values = _expand(value, nd)
    if len(values) == 1:
        values = values * nd
    if len(values) != nd:
        ints = "tuple of three Ints" if nd == 3 else "tuple of Ints"
        raise RuntimeError(f"{name}: {what} must either be a single Int or {ints}")
    return values


def _output_sizes(nd, name, input, output_size, output_ratio):
    """``output_size``, or the input's spatial size times ``output_ratio`` (truncated)."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return _sizes(nd, name, "output_size", output_size)
    ratios = _expand(output_ratio, nd)
    if len(ratios) > nd:
        raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
    ratios = ratios * nd if len(ratios) == 1 else ratios
    return tuple(int(n * r) for n, r in zip(input.shape[-nd:], ratios))


def _checked_input(nd, name, input):
    """``input`` with a batch axis and whether it had none, with torch's errors for a wrong rank and for empty
    non-batch dims."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() not in (nd + 1, nd + 2):
        op = name if nd == 2 else name + "_out"
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    empty = [d for d in range(1, input.dim()) if input.shape[d] == 0]
    if empty:
        op = name if nd == 2 else name + "_out"
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but got"
                           f"{list(input.shape)} with dimension {empty[0]} being empty.")
    unbatched = input.dim() == nd + 1
    return (input.unsqueeze(0) if unbatched else input), unbatched


def _check_windows(nd, name, x, kernel, out):
    """torch's check that ``out`` windows of size ``kernel`` fit each axis; its 3-d check is one stricter."""
    op = name if nd == 2 else name + "_out"
    spare = 0 if nd == 2 else 1
    for axis, n, k, o in zip(_AXES[nd], x.shape[2:], kernel, out):
        if o + k - 1 > n - spare:
            raise RuntimeError(f"{op}(): pool {axis} {k} too large relative to input {axis} {n}")


def _checked_samples(nd, x, samples):
    """The (N, C, nd) samples for batch ``x``: ``samples`` checked as torch does, or fresh uniform draws."""
    n, c = x.shape[:2]
    if samples is None:
        return rand(n, c, nd, dtype=x.dtype, device=x.device)
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[2]}.")
    return samples[:n].detach()


def _starts(sample, size, out, k):
    """The (N, C, out) window starts along one axis from its (N, C) samples."""
    last = sample.new_full((*sample.shape, 1), size - k, dtype=_dtype.int64)
    if out <= 1:
        return last[..., :out]
    alpha = sample.new_full((), size - k) / (out - 1)
    steps = arange(out - 1, dtype=sample.dtype, device=sample.device)
    starts = ((steps + sample[..., None]) * alpha).long() - (sample * alpha).long()[..., None]
    return cat([starts, last], -1)


def _window_indices(samples, spatial, kernel, out):
    """Flat indices (N, C, prod(out), prod(kernel)) into the planes of every position of every window."""
    nd = len(spatial)
    n, c = samples.shape[:2]
    flat = 0
    plane_stride = 1
    for d in reversed(range(nd)):
        starts = _starts(samples[..., _SAMPLE_OF_AXIS[nd][d]], spatial[d], out[d], kernel[d])
        positions = starts[..., None] + arange(kernel[d], device=samples.device)
        shape = [n, c] + [1] * (2 * nd)
        shape[2 + d], shape[2 + nd + d] = out[d], kernel[d]
        flat = flat + positions.reshape(shape) * plane_stride
        plane_stride *= spatial[d]
    return flat.reshape(n, c, math.prod(out), math.prod(kernel))


def _fractional_max_pool(nd, name, input, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples):
    """Fractional max pooling over the last ``nd`` dims of ``input``: values, and flat indices when asked."""
    x, unbatched = _checked_input(nd, name, input)
    kernel = _sizes(nd, name, "kernel_size", kernel_size)
    out = _output_sizes(nd, name, x, output_size, output_ratio)
    _check_windows(nd, name, x, kernel, out)
    samples = _checked_samples(nd, x, _random_samples)
    n, c = x.shape[:2]
    windows = _window_indices(samples, tuple(x.shape[2:]), kernel, out)
    planes = x.reshape(n, c, math.prod(x.shape[2:]))  # sizes spelled out: -1 is ambiguous for an empty batch
    values = planes.gather(2, windows.reshape(n, c, math.prod(windows.shape[2:]))).reshape(windows.shape)
    best = values.max(dim=-1)
    y = best.values.reshape(n, c, *out)
    indices = windows.gather(-1, best.indices[..., None]).reshape(n, c, *out)
    if unbatched:
        y, indices = y.squeeze(0), indices.squeeze(0)
    return (y, indices) if return_indices else y


@autocast_mode.float32("cpu")
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch's ``fractional_max_pool2d`` over (N, C, H, W) or (C, H, W) inputs."""
    return _fractional_max_pool(2, "fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


@autocast_mode.float32("cpu")
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """torch's ``fractional_max_pool3d`` over (N, C, T, H, W) or (C, T, H, W) inputs."""
    return _fractional_max_pool(3, "fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool2d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``fractional_max_pool3d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]
