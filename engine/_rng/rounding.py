"""Floating-point operations as torch's compiled CPU kernels round them.

The kernels are built with fused multiply-adds (the compiler contracts ``a * b + c``), so a sampler
that is to match them bit for bit needs a correctly rounded ``fma``; numpy has none. Double-precision
functions (log, sin, ...) come from the C library through ``math``, as torch's scalar code calls it
(numpy's own vectorised versions differ from it in the last bit).
"""
import math

import numpy as np

_SPLITTER = np.float64(2.0 ** 27 + 1)
# A float64 whose low 29 significand bits read 1000...0 lies exactly halfway between two float32s.
_LOW29 = np.uint64((1 << 29) - 1)
_HALFWAY = np.uint64(1 << 28)


def _two_sum(a, b):
    """s = fl(a + b) and the exact error e, with a + b = s + e."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def _two_product(a, b):
    """p = fl(a * b) and the exact error e, with a * b = p + e (Veltkamp split, Dekker product)."""
    p = a * b
    a_big = _SPLITTER * a
    a_hi = a_big - (a_big - a)
    a_lo = a - a_hi
    b_big = _SPLITTER * b
    b_hi = b_big - (b_big - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _toward(s, error, where):
    """``s`` moved one step toward the sign of ``error`` at the positions ``where``."""
    direction = np.where(error > 0, np.inf, -np.inf)
    return np.where(where, np.nextafter(s, direction), s)


def _add_round_to_odd(a, b):
    """a + b rounded to odd: an inexact sum takes whichever neighbour has an odd last bit."""
    s, error = _two_sum(a, b)
    inexact_even = (error != 0) & ((s.view(np.uint64) & np.uint64(1)) == 0)
    if inexact_even.any():
        s = _toward(s, error, inexact_even)
    return s


def fma64(a, b, c):
    """a * b + c in float64 with one rounding (Boldo and Melquiond's emulation through rounding to odd)."""
    a, b, c = np.broadcast_arrays(np.float64(a), np.float64(b), np.float64(c))
    product_hi, product_lo = _two_product(a, b)
    sum_hi, sum_lo = _two_sum(c, product_hi)
    return sum_hi + _add_round_to_odd(sum_lo, product_lo)


def _float64(x):
    return x.astype(np.float64) if isinstance(x, np.ndarray) else np.float64(x)


def _round_to_float32(s, a, b, c):
    """The float64 sum s = fl(a * b + c) of float32 operands, rounded to float32 as the exact a * b + c
    would be: the product is exact in float64, so only a sum landing exactly halfway between two
    float32s can round wrongly, and those rare sums are first nudged toward the exact value."""
    halfway = (s.view(np.uint64) & _LOW29) == _HALFWAY
    if halfway.any():
        where = np.flatnonzero(halfway)
        picked = [np.broadcast_to(x, s.shape).ravel()[where].astype(np.float64) for x in (a, b, c)]
        rounded, error = _two_sum(picked[0] * picked[1], picked[2])
        s.ravel()[where] = np.where(error != 0, np.nextafter(rounded, np.where(error > 0, np.inf, -np.inf)),
                                    rounded)
    return s.astype(np.float32)


def fma32(a, b, c):
    """a * b + c for float32 values (arrays or scalars) with one rounding."""
    s = _float64(a) * _float64(b)
    s += _float64(c)
    return _round_to_float32(s, a, b, c)


def horner32(coefficients, x):
    """c0 x^n + ... + cn for a float32 array ``x``, every step a float32 fused multiply-add."""
    x = x.astype(np.float64)
    y = _round_to_float32(coefficients[0] * x + coefficients[1], coefficients[0], x, coefficients[1])
    for c in coefficients[2:]:
        s = y.astype(np.float64)
        s *= x
        s += c
        y = _round_to_float32(s, y, x, c)
    return y


def libm(function, values):
    """``function`` (from ``math``) of every element of a float64 array, as the C library computes it: a result
    past float64's range is infinity (where ``math`` raises OverflowError), as C's exp gives it."""
    def c_function(x):
        try:
            return function(x)
        except OverflowError:
            return math.inf
    flat = np.asarray(values, np.float64).ravel()
    out = np.fromiter(map(c_function, flat.tolist()), np.float64, flat.size)
    return out.reshape(np.shape(values))

