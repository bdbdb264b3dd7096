"""``torch.testing.make_tensor``: a tensor of a shape, dtype and device filled with uniform random values.

The value ranges, clamping, checks and messages are torch's; the values themselves come from the engine's
generator (``engine.manual_seed`` makes them repeatable), so they differ from torch's for the same seed.
"""
import collections.abc
import math
import warnings

from .. import _dtype

__all__ = ["make_tensor"]

_INTEGRAL = (_dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32, _dtype.int64, _dtype.uint16, _dtype.uint32,
             _dtype.uint64)
_FLOATING = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
_BOOLEAN_OR_INTEGRAL = (_dtype.bool_, *_INTEGRAL)


def _low_high(low, high, dtype, lowest_inclusive, highest_exclusive, default_low, default_high):
    """``low`` and ``high`` (defaults for None) checked, clamped to what ``dtype`` holds, rounded up for integers."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(value, float) and math.isnan(value) for value in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if dtype in _BOOLEAN_OR_INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape, dtype, device, low, high):
    """Uniform values in ``[low, high)``; a range wider than the dtype's largest value is drawn at half scale and
    doubled, so that ``high - low`` never overflows."""
    from .. import empty, finfo

    result = empty(shape, dtype=dtype, device=device)
    if high - low >= finfo(dtype).max:
        return result.uniform_(low / 2, high / 2).mul_(2)
    return result.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` (integers, or one sequence) with values drawn uniformly from ``[low, high)``.

    Defaults as torch's: bool [0, 2), unsigned integers [0, 10), signed integers [-9, 10), floating [-9, 9);
    bounds outside the dtype's finite range are clamped to it. ``noncontiguous`` gives a view with a last-dimension
    stride of 2 (tensors of two or more elements); ``memory_format`` a copy in that layout; ``exclude_zero``
    replaces zeros by 1 (integers, bool) or the dtype's smallest normal number. Complex dtypes, which the engine
    does not have, are not supported.
    """
    from .. import finfo, iinfo, randint

    dtype = _dtype.to_dtype(dtype)
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is _dtype.bool_:
        low, high = _low_high(low, high, dtype, 0, 2, 0, 2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = iinfo(dtype)
        low, high = _low_high(low, high, dtype, info.min, info.max + (dtype is not _dtype.int64), -9, 10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = finfo(dtype)
        low, high = _low_high(low, high, dtype, info.min, info.max, -9, 9)
        result = _uniform(shape, dtype, device, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To request "
                        "support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL else finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
