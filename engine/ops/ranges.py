"""Ranges: ``arange``, ``linspace`` and ``logspace``.

They give torch's CPU numbers bit for bit (x86-64 builds, whose range kernels run
their AVX2 build): the same operations in the same dtypes and order and, where torch's compiler fuses a
multiply and an add into one FMA (aten/src/ATen/native/cpu is built with -mfma), that fused operation's
single rounding, which _fma reproduces exactly. It is IEEE arithmetic on arrays of any array module, so
CuPy's take the same code (_rng.rounding's fma32/fma64 are numpy's alone); logspace alone calls the C
library's pow, on the CPU (numpy's vectorised pow rounds differently).
"""
import math
import numbers

import numpy as np

from .. import _dtype, backends
from .._device import factory_device, xp_for
from .._rng.rounding import _two_product, _two_sum
from ..tensor import Tensor
from .creation import _finish, _float
from .python_data import _to_dtype_scalar

__all__ = ["arange", "linspace", "logspace"]

_GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE: ranges this long are split over torch's threads


def _add_round_odd(xp, a, b):
    """``a + b`` of float64 arrays rounded to odd (truncated, then made odd where inexact): rounding that to
    nearest in a format at least two bits narrower rounds the exact sum correctly, with no double rounding."""
    s, err = _two_sum(a, b)
    fix = (err != 0) & ((s.view(np.int64) & 1) == 0) & xp.isfinite(s)
    return xp.where(fix, xp.nextafter(s, xp.where(err > 0, np.inf, -np.inf)), s)


def _fma(xp, a, b, c, np_dtype):
    """``a * b + c`` rounded once to ``np_dtype`` (float32 or float64), as an FMA instruction rounds it.

    float32: the product is exact in float64 and the sum is rounded to odd there, then to float32. float64:
    Boldo and Melquiond's emulation (the exact product as two float64, TwoSum, the two error terms added
    rounded to odd, a last rounded add); where that overflows, meets an infinity or gives zero (whose sign
    it may lose), the plain ``a * b + c``."""
    a, b, c = xp.broadcast_arrays(*(xp.asarray(v, np_dtype).astype(np.float64) for v in (a, b, c)))
    with np.errstate(invalid="ignore", over="ignore"):
        if np_dtype == np.float32:
            return _add_round_odd(xp, a * b, c).astype(np.float32)
        high, low = _two_product(a, b)
        s, err = _two_sum(c, high)
        fused = s + _add_round_odd(xp, err, low)
        return xp.where(xp.isfinite(fused) & (fused != 0), fused, a * b + c)


def _split_range(n):
    """The [begin, end) chunks that at::parallel_for hands torch's threads (engine's thread count taken for
    torch's): one below the grain size."""
    threads = backends.runtime("cpu").num_threads() if n >= _GRAIN_SIZE else 1
    chunk = max(1, -(-n // max(1, min(threads, -(-n // _GRAIN_SIZE)))))
    return [(begin, min(n, begin + chunk)) for begin in range(0, n, chunk)]


def _float_arange(xp, start, step, n, np_dtype):
    """torch's CPU arange of a floating dtype. From each thread's first index its kernel writes blocks of two
    vectors of ``lanes`` values (AVX2: 8 float32, 4 float64, 16 float16 or bfloat16), the rest one at a time.
    A value alone is ``start + step * i`` in the accumulate type (float64; float32 for the half types), one
    FMA, rounded to the dtype; lane ``k`` of a vector is ``base + k * step`` in that type, ``base`` being the
    value at the vector's first index rounded to the dtype (an FMA again, but for bfloat16's vectors)."""
    half = np_dtype in _dtype.HALF_NP
    acc = np.dtype(np.float32 if half else np.float64)
    lanes = 16 if half else 32 // np_dtype.itemsize
    start, step = acc.type(start), acc.type(step)
    out = xp.empty(n, np_dtype)
    lane = xp.arange(lanes).astype(acc)
    for begin, end in _split_range(n):
        blocked = begin + (end - begin) // (2 * lanes) * (2 * lanes)
        firsts = xp.arange(begin, blocked, lanes).astype(acc)[:, None]  # each vector's first index
        base = _fma(xp, step, firsts, start, acc).astype(np_dtype).astype(acc)
        vectors = base + lane * step if np_dtype == _dtype.BFLOAT16_NP else _fma(xp, lane, step, base, acc)
        out[begin:blocked] = vectors.reshape(-1).astype(np_dtype)
        out[blocked:end] = _fma(xp, step, xp.arange(blocked, end).astype(acc), start, acc).astype(np_dtype)
    return out


def arange(start=None, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Values from ``start`` up to ``end`` (excluded) by ``step``, as torch computes them: ceil((end - start) /
    step) of them (in float64 unless all three and the dtype are integers), floating ones torch's CPU values
    (``_float_arange``), integer ones ``int(start) + int(step) * i`` (truncated arguments, wrapping into the
    dtype)."""
    if start is None:  # ``arange(end=5)``, as torch takes it
        if end is None:
            raise TypeError('arange() missing 1 required positional arguments: "end"')
        start = 0
    elif end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        d = _dtype.get_default_dtype() if any(isinstance(v, float) for v in values) else _dtype.int64
    else:
        d = _dtype.to_dtype(dtype)
    if d.np.kind in "bc":
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{d.title}'")
    start, end, step = values
    check_range(start, end, step)
    xp = xp_for(factory_device(device) or "cpu")
    exact = d.np.kind in "iu" and all(isinstance(v, numbers.Integral) for v in values)
    n = -(-(end - start) // step) if exact else int(math.ceil((float(end) - float(start)) / float(step)))
    with np.errstate(all="ignore"):  # infinities and NaN come out as torch's, quietly
        if d.is_floating_point:
            arr = _float_arange(xp, start, step, n, d.np)
        else:
            arr = (int(start) + int(step) * xp.arange(n, dtype=np.int64)).astype(d.np)
    return _finish(arr, requires_grad=requires_grad)


def check_range(start, end, step):
    """torch's errors for a range (``arange``, ``range``) that has no step, ends at an infinity or NaN, or runs
    away from its end."""
    if not (step > 0 or step < 0):
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start:g} -> {end:g}")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def _range_args(name, d, start, end, steps):
    """``start`` and ``end`` as Python numbers and ``steps`` as an int, checked as torch checks them (bool: only
    for two steps or more, which its kernel computes; one step is a fill)."""
    steps = int(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if d.np == np.bool_ and steps >= 2:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    return start, end, steps


def _linspace(xp, start, end, steps, np_dtype):
    """torch's CPU linspace for ``steps`` >= 2 (RangeFactoriesKernel.cpp, a serial loop): ``step = (end -
    start) / (steps - 1)`` in the dtype (float64 for integers), then ``start + step * i`` below ``steps // 2``
    and ``end - step * (steps - 1 - i)`` from there on; each is one FMA for float32, float64 and integers
    (whose float64 values are truncated), while for float16 and bfloat16 every operation (in float32) is
    rounded to the dtype, the index too, as c10::Half's and BFloat16's operators round."""
    s, e = _to_dtype_scalar(start, np_dtype), _to_dtype_scalar(end, np_dtype)
    i = xp.arange(steps)
    first = i < steps // 2
    k = xp.where(first, i, steps - 1 - i)
    if np_dtype in (np.float32, np.float64):
        step = (e - s) / np_dtype.type(steps - 1)
        return _fma(xp, xp.where(first, step, -step), k.astype(np_dtype), xp.where(first, s, e), np_dtype)
    if np_dtype in _dtype.HALF_NP:
        def rounded(v):  # a float32 result rounded to the half type, held in float32
            return xp.asarray(v, np.float32).astype(np_dtype).astype(np.float32)
        s, e = np.float32(s), np.float32(e)
        step = rounded(rounded(e - s) / rounded(np.float32(steps - 1)))
        product = rounded(step * rounded(k.astype(np.float32)))
        return xp.where(first, rounded(s + product), rounded(e - product)).astype(np_dtype)
    s, e = float(s), float(e)
    step = (e - s) / (steps - 1)
    values = _fma(xp, xp.where(first, step, -step), k.astype(np.float64), xp.where(first, s, e), np.float64)
    return xp.trunc(values).astype(np_dtype)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values evenly spaced from ``start`` to ``end``: torch's CPU values bit for bit
    (``_linspace``); one step is ``start`` in the dtype. A complex start, end or dtype spaces the real and the
    imaginary parts apart (torch's complex step times a real index is the same per part)."""
    complex_ends = any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex()) for v in (start, end))
    if complex_ends or (dtype is not None and _dtype.to_dtype(dtype).is_complex):
        d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.default_complex()
        start, end = (complex(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
        parts = (linspace(a, b, steps, dtype=d.to_real(), device=device) for a, b in
                 ((start.real, end.real), (start.imag, end.imag)))
        return _finish(_complex_from_parts(*(p._data for p in parts), d.np), requires_grad=requires_grad)
    d = _float(dtype)
    start, end, steps = _range_args("linspace", d, start, end, steps)
    xp = xp_for(factory_device(device) or "cpu")
    with np.errstate(all="ignore"):  # infinities and NaN come out as torch's, quietly
        if steps < 2:  # a fill with ``start`` (no conversion for no steps)
            arr = xp.asarray([_to_dtype_scalar(start, d.np)] if steps else [], d.np)
        else:
            arr = _linspace(xp, start, end, steps, d.np)
    return _finish(arr, requires_grad=requires_grad)


def _complex_from_parts(real, imag, np_dtype):
    """One complex array from its parts."""
    out = real.astype(np_dtype)
    out.imag = imag
    return out


def _libm_pow(xp, base, exponents):
    """``base ** exponents`` (float64) from the C library's pow on the CPU, which torch's logspace calls
    (numpy's vectorised pow differs in the last bit); numpy's value where pow raises, and on a GPU."""
    approx = xp.power(base, exponents)
    if xp is not np:
        return approx

    def libm(x, fallback):
        try:
            return math.pow(base, x)
        except (ValueError, OverflowError):
            return fallback
    return np.array([libm(x, a) for x, a in zip(exponents.tolist(), approx.tolist())], np.float64)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``base ** linspace(start, end, steps)``: torch's CPU values bit for bit. RangeFactories.cpp (built
    without FMA) casts ``start`` and ``end`` to the dtype, takes ``step = (end - start) / (steps - 1)`` with
    the difference in the dtype and the rest in float64, and calls pow(base, start + step * i) below
    ``steps // 2``, pow(base, end - step * (steps - 1 - i)) from there, in float64; one step is
    pow(base, start) with ``start`` uncast. The float64 values go to float32 first for float16 and
    bfloat16 and are truncated for integers."""
    d = _float(dtype)
    start, end, steps = _range_args("logspace", d, start, end, steps)
    xp = xp_for(factory_device(device) or "cpu")
    base = float(base)
    with np.errstate(all="ignore"):  # infinities and NaN come out as torch's, quietly
        if steps < 2:  # a fill with pow(base, start), converted (checked) into the dtype
            power = float(_libm_pow(xp, base, xp.asarray([float(start)], np.float64))[0])
            return _finish(xp.asarray([_to_dtype_scalar(power, d.np)] if steps else [], d.np),
                           requires_grad=requires_grad)
        s, e = _to_dtype_scalar(start, d.np), _to_dtype_scalar(end, d.np)
        if d.np in _dtype.HALF_NP:  # Half - Half rounds to Half; integers subtract as C ints, exactly
            diff = (np.float32(e) - np.float32(s)).astype(d.np)
        else:
            diff = int(e) - int(s) if d.np.kind in "iu" else e - s
        step = float(diff) / (steps - 1)
        i = xp.arange(steps)
        exponents = xp.where(i < steps // 2, float(s) + step * i, float(e) - step * (steps - 1 - i))
        values = _libm_pow(xp, base, exponents)
        if d.np.kind in "iu":
            values = xp.trunc(values)
        elif d.np in _dtype.HALF_NP:
            values = values.astype(np.float32)
        values = values.astype(d.np)
    return _finish(values, requires_grad=requires_grad)
