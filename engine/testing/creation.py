"""``torch.testing.make_tensor``: a tensor of a shape, dtype and device filled with uniform random values.

The value ranges, clamping, checks and messages are torch's, and so are the values: the engine's ``randint`` and
``uniform_`` draw torch's numbers, so after ``engine.manual_seed(s)`` they are torch's after ``torch.manual_seed(s)``.
"""
import collections.abc
import math
import warnings

from .. import _dtype

__all__ = ["make_tensor"]

_INTEGRAL = (_dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32, _dtype.int64, _dtype.uint16, _dtype.uint32,
             _dtype.uint64)
_FLOATING = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64, _dtype.complex64, _dtype.complex128)
_COMPLEX = (_dtype.complex64, _dtype.complex128)
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
    """Uniform values in ``[low, high)`` (both parts of a complex number); a range wider than the dtype's largest
    value is drawn at half scale and doubled, so that ``high - low`` never overflows."""
    from .. import empty, finfo, view_as_real

    result = empty(shape, dtype=dtype, device=device)
    parts = view_as_real(result) if dtype in _COMPLEX else result
    if high - low >= finfo(dtype).max:
        parts.uniform_(low / 2, high / 2).mul_(2)
    else:
        parts.uniform_(low, high)
    return result


def _unsupported(dtype):
    raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To request "
                    "support, file an issue at: https://github.com/pytorch/pytorch/issues")


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` (integers, or one sequence) with values drawn uniformly from ``[low, high)``.

    Defaults as torch's: bool [0, 2), unsigned integers [0, 10), signed integers [-9, 10), floating and complex
    (each part) [-9, 9);
    bounds outside the dtype's finite range are clamped to it. ``noncontiguous`` gives a view with a last-dimension
    stride of 2 (tensors of two or more elements); ``memory_format`` a copy in that layout; ``exclude_zero``
    replaces zeros by 1 (integers, bool) or the dtype's smallest normal number (complex: as the real part).
    """
    from .. import finfo, iinfo, randint

    if not isinstance(dtype, _dtype.dtype):  # None, a Python type or a name: torch names what it got
        _unsupported(dtype)
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
        _unsupported(dtype)
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL else finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
