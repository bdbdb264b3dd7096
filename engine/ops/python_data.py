"""Python values into arrays as torch converts them: numbers into a dtype (``Scalar.to``, with c10's overflow
checks) and nested lists and tuples of numbers (``torch.tensor``'s dtype inference, nesting and range checks)."""
import math
import numbers

import numpy as np

from .. import _dtype
from .._device import move
from ..tensor import Tensor, _unwrap_sequence, to_array


_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                 "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
                 "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
                 "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _to_dtype_scalar(value, np_dtype, one_element=False):
    """A number (or one-element tensor) as torch's ``Scalar.to<dtype>()`` converts it (``fill_``, ``full``, one
    step of ``linspace``): integers truncated, the half types through float32 (c10::Half and BFloat16 are built
    from a float), any number true where nonzero as a bool; a numpy scalar of ``np_dtype``. Like c10's
    checked_convert it refuses a finite value past the type's range (an integer may also wrap into an unsigned
    type from as low as minus its maximum) and a complex number with an imaginary part into a real type.
    ``one_element``: the fill of a single element, whose half types torch's CPU fill takes unchecked (to inf)."""
    if isinstance(value, Tensor):
        value = value.item()
    np_dtype = np.dtype(np_dtype)
    if np_dtype.kind == "b":
        return np.bool_(value != 0)
    if np_dtype.kind == "c":
        value = complex(value)
        fits = all(_fits_float(part, np_dtype.type(0).real.dtype) for part in (value.real, value.imag))
    elif isinstance(value, (complex, np.complexfloating)):
        fits = value.imag == 0 and (_fits_int(value.real, np_dtype) if np_dtype.kind in "iu"
                                    else _fits_float(value.real, np_dtype))
        value = value.real
    else:
        fits = _fits_int(value, np_dtype) if np_dtype.kind in "iu" else _fits_float(value, np_dtype)
    fits = fits or one_element and np_dtype in _dtype.HALF_NP
    if not fits:
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES.get(np_dtype.name, np_dtype.name)} "
                           "without overflow")
    if np_dtype.kind in "iu":
        return np.array(int(value)).astype(np_dtype)[()]  # wraps, as two's complement does
    if np_dtype in _dtype.HALF_NP:
        return np.float32(value).astype(np_dtype)
    return np_dtype.type(value)


def _fits_int(value, np_dtype):
    """Whether c10's checked_convert takes real ``value`` into integer type ``np_dtype``: an integer from the
    type's minimum (minus its maximum for an unsigned type) to its maximum, a float between them compared as
    doubles."""
    info = np.iinfo(np_dtype)
    if isinstance(value, (numbers.Integral, np.integer)):
        return (-int(info.max) if np_dtype.kind == "u" else int(info.min)) <= int(value) <= int(info.max)
    value = float(value)
    return math.isfinite(value) and float(info.min) <= value <= float(info.max)


def _fits_float(value, np_dtype):
    """Whether c10's checked_convert takes real ``value`` into floating type ``np_dtype`` (infinities and NaN do)."""
    value = float(value)
    return not math.isfinite(value) or abs(value) <= float(np.finfo(np_dtype).max)


#: the integer types torch's data conversion range-checks (uint64 takes only Python ints: ``_check_uint64``)
_CHECKED_INTS = ("int8", "uint8", "int16", "int32", "int64", "uint16", "uint32")


def _python_data(data, dtype, device):
    """Python data (numbers, nested lists and tuples) as an array, refused where torch refuses it (see
    ``_check_nesting`` and ``_check_values``). Only failures and integer results pay for the checks' second
    look at the data, and float results past 2^63 (integers that numpy read as floats)."""
    target = None if dtype is None else _dtype.to_dtype(dtype)
    if isinstance(data, (bytearray, memoryview)):
        data = _byte_lists(data)
    try:
        if target is _dtype.bool_:  # any number is a bool: complex ones and integers past int64 too
            arr = _as_bools(_unwrap_sequence(data), data, device)
        else:
            arr = to_array(data, dtype, device)
    except (ValueError, TypeError, OverflowError):
        values = _unwrap_sequence(data)
        leaves = _leaves(values, [])
        if target is None:
            _check_types(leaves)
        final = target or _inferred(leaves)
        sizes = _nested_sizes(values)
        if 0 in sizes:  # torch reads no element of an empty result: only its dtype inference sees them
            if _has_empty(values):  # an empty sequence counts as one of the default float type
                leaves.append(0.0)
            empty = np.empty(sizes, to_array(leaves, dtype).dtype)
            return empty if device is None else move(empty, device)
        _check_nesting(values, sizes, 0, final)
        _check_values(values, final)
        if final.is_floating_point or final.is_complex:  # integers past int64 among floats: numpy's objects
            return to_array(_floats_for_big_ints(values), dtype, device)
        raise
    if arr.dtype.kind in "iu":
        _check_values(_unwrap_sequence(data), _dtype.from_numpy_dtype(arr.dtype))
    elif target is None and arr.dtype.kind == "f" and arr.size and isinstance(arr, np.ndarray) and \
            float(np.abs(arr).max()) >= 2.0 ** 63:  # (on the host only: a device array is not read back for it)
        values = _unwrap_sequence(data)
        _check_values(values, _inferred(_leaves(values, [])))
    return arr


def _byte_lists(data):
    """A bytearray's or a 1-d memoryview's elements as a list, as torch reads any sequence
    (``tensor(bytearray(b'ab'))``: int64 [97, 98], where numpy's buffer reading would give uint8)."""
    if isinstance(data, memoryview) and data.ndim > 1:
        raise ValueError("could not determine the shape of object type 'memoryview'")
    return data.tolist() if isinstance(data, memoryview) else list(data)


def _as_bools(values, data, device):
    """Python data as bools (true where nonzero); data of other objects as ``to_array`` refuses it."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "biufcO" or arr.dtype.kind == "O" and not all(type(v) is int for v in arr.flat):
        return to_array(data, _dtype.bool_, device)
    arr = arr.astype(np.bool_)
    return arr if device is None else move(arr, device)


def _floats_for_big_ints(values):
    """Nested lists with every integer past int64 made a float, as torch reads it for a floating dtype."""
    if isinstance(values, (list, tuple)):
        return [_floats_for_big_ints(v) for v in values]
    return float(values) if type(values) is int and not -2 ** 63 <= values < 2 ** 63 else values


def _leaves(values, out):
    """The scalars (and arrays: tensors unwrapped) of nested lists and tuples, in order, appended to ``out``."""
    if isinstance(values, (list, tuple)):
        for v in values:
            _leaves(v, out)
    else:
        out.append(values)
    return out


def _check_types(leaves):
    """torch's error for data holding something other than numbers and arrays (its dtype inference's)."""
    for v in leaves:
        if not isinstance(v, (numbers.Number, np.generic, np.ndarray)):
            name = type(v).__name__
            if isinstance(v, (str, bytes)):
                raise TypeError(f"new(): invalid data type '{name}'")
            raise RuntimeError(f"Could not infer dtype of {name}")


def _has_empty(values):
    """Whether nested lists and tuples hold an empty one."""
    return isinstance(values, (list, tuple)) and (not values or any(_has_empty(v) for v in values))


def _inferred(leaves):
    """torch's dtype for data of these scalars: complex, float, integer or bool, the first that any has."""
    kinds = {np.asarray(v).dtype.kind if isinstance(v, (np.ndarray, np.generic)) else type(v) for v in leaves}
    if kinds & {complex, "c"}:
        return _dtype.default_complex()
    if kinds & {float, "f", "V"}:
        return _dtype.get_default_dtype()
    return _dtype.int64 if kinds & {int, "i", "u"} else _dtype.bool_


def _nested_sizes(values):
    """The shape torch reads off nested sequences: each level's length, down the first elements."""
    sizes = []
    while isinstance(values, (list, tuple)):
        sizes.append(len(values))
        if not values:
            return tuple(sizes)
        values = values[0]
    return tuple(sizes) + np.shape(values)


def _check_nesting(values, sizes, dim, final):
    """torch's first error, in its order of storing the elements (depth first): a sequence whose length differs
    from the first one's at its level, a number where a sequence belongs, a sequence where a number belongs, or
    a number that does not convert to ``final`` (``_check_scalar``)."""
    if dim == len(sizes):
        if isinstance(values, (list, tuple)):
            kind = type(values).__name__
            raise TypeError(f"must be real number, not {kind}" if final.is_floating_point or final.is_complex
                            else f"'{kind}' object cannot be interpreted as an integer")
        _check_scalar(values, final)
        return
    if not isinstance(values, (list, tuple, np.ndarray)) or isinstance(values, np.ndarray) and values.ndim == 0:
        raise TypeError("not a sequence")
    if len(values) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(values)})")
    for v in values:
        _check_nesting(v, sizes, dim + 1, final)


def _check_values(values, d):
    """torch's error where a scalar of ``values`` does not convert to ``d``, at the first such scalar: into an
    integer type, a complex number, a numpy number other than an integer or float64 (a Python float), a float
    tensor, an integer past int64, or a value past ``d``'s range (a negative integer into uint8 may go down to
    -255, as c10's checked_convert allows; NaN and infinities never fit); into a floating type, an integer too
    large for a float. Integer data (numpy reads it as integers) is checked at once, the rest element by
    element."""
    if d.is_floating_point or d.is_complex or d is _dtype.uint64:
        for v in _leaves(values, []):
            _check_scalar(v, d)
    if d.np.name not in _CHECKED_INTS:  # bool takes any number
        return
    try:
        natural = np.asarray(values)
    except (ValueError, TypeError, OverflowError):
        natural = None
    if natural is not None and natural.dtype.kind in "iub" and natural.dtype != np.uint64:
        if natural.size and not (_fits(natural.min(), d) and _fits(natural.max(), d)):
            raise _overflow(d)
        return
    for v in _leaves(values, []):
        _check_scalar(v, d)


def _check_scalar(v, d):
    """torch's error where scalar ``v`` does not convert to ``d`` (see ``_check_values``)."""
    if d.is_floating_point or d.is_complex:
        if type(v) is int:
            float(v)  # OverflowError: int too large to convert to float
        elif type(v) is complex and not d.is_complex:
            raise TypeError("must be real number, not complex")
        return
    if d is _dtype.uint64:
        _check_uint64(v)
    if d.np.name not in _CHECKED_INTS:
        return
    if isinstance(v, complex) or isinstance(v, np.generic) and v.dtype.kind not in "iu" and not isinstance(v, float):
        raise TypeError(f"'{'numpy.' if isinstance(v, np.generic) else ''}{type(v).__name__}' object "
                        "cannot be interpreted as an integer")
    if isinstance(v, np.ndarray):
        if v.ndim == 0 and v.dtype.kind not in "iub":
            raise TypeError("only integer tensors of a single element can be converted to an index")
    elif type(v) is int and not -2 ** 63 <= v < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    elif not _fits(v, d):
        raise _overflow(d)


def _check_uint64(v):
    """torch's errors for a scalar of uint64 data, which it reads as C's unsigned long long: a Python int in
    range, or a bool; numpy numbers, floats and tensors are refused."""
    if isinstance(v, bool):
        return
    if type(v) is not int:
        raise TypeError("an integer is required")
    if v < 0:
        raise OverflowError("can't convert negative int to unsigned")
    if v >= 2 ** 64:
        raise OverflowError("int too big to convert")


def _fits(value, d):
    """Whether torch's data conversion takes ``value`` (a number, a bool too) into integer type ``d``."""
    return isinstance(value, (bool, np.bool_)) or _fits_int(value, d.np)


def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {d.np.name} without overflow")
