"""Single-precision log and sine/cosine as torch's AVX2 normal sampler computes them.

torch fills float32 tensors with normal samples through the Box-Muller transform, eight lanes at a
time, with the cephes-derived polynomials of ``avx_mathfun.h`` (on every x86 CPU with AVX2; its
AVX512 build dispatches the normal sampler to the AVX2 kernel too). The compiler contracts each
multiply feeding an add into a fused multiply-add, so the steps below fuse exactly those pairs;
everything else rounds to float32 after each operation, as the vector instructions do. Where a
product is exact (a small integer times a short constant) the fused and unfused results are equal
and the cheaper plain operations are used.
"""
import numpy as np

from .rounding import fma32, horner32

_F = np.float32
_EXPONENT_BITS = np.int32(0x7F800000)
_HALF_BITS = np.array(0.5, _F).view(np.int32)
_SIGN_BIT = np.int32(-2 ** 31)

_SQRT_HALF = _F(0.707106781186547524)
_LOG_POLY = [np.float64(_F(c)) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                             3.3333331174e-1)]
_LN2_LOW = _F(-2.12194440e-4)
_LN2_HIGH = _F(0.693359375)  # 9 significant bits: its products with exponents are exact

_FOUR_OVER_PI = _F(1.27323954473516)
# -pi/4 in three parts; the first two are short, so their products with an octant (at most 8) are exact.
_MINUS_PI_OVER_4_SHORT = [_F(-0.78515625), _F(-2.4187564849853515625e-4)]
_MINUS_PI_OVER_4_TAIL = _F(-3.77489497744594108e-8)
_COS_POLY = [np.float64(_F(c)) for c in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)]
_SIN_POLY = [np.float64(_F(c)) for c in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)]


def log(x):
    """Natural logarithm of positive normal float32 values, as ``log256_ps``."""
    bits = x.view(np.int32)
    exponent = ((bits >> 23) - 126).astype(_F)
    mantissa = ((bits & ~_EXPONENT_BITS) | _HALF_BITS).view(_F)  # in [0.5, 1)
    below = mantissa < _SQRT_HALF
    exponent -= below
    t = np.where(below, mantissa + mantissa, mantissa) - _F(1)  # exact: 2m - 1 or m - 1
    t_squared = t * t
    y = horner32(_LOG_POLY, t) * t
    y = fma32(y, t_squared, exponent * _LN2_LOW)
    y -= t_squared * _F(0.5)
    y += t
    y += exponent * _LN2_HIGH
    return y


def sincos_of_angle(x):
    """(sin x, cos x) of float32 angles in [0, 2 pi), as ``sincos256_ps``."""
    octant = (x * _FOUR_OVER_PI).astype(np.int32)
    octant = (octant + 1) & ~1
    y = octant.astype(_F)
    sin_sign = (octant & 4) << 29
    cos_sign = (~(octant - 2) & 4) << 29
    sine_polynomial_for_sin = (octant & 2) == 0
    for part in _MINUS_PI_OVER_4_SHORT:
        x = x + y * part
    x = fma32(y, _MINUS_PI_OVER_4_TAIL, x)
    z = x * x
    cos_poly = horner32(_COS_POLY, z) * z
    cos_poly = fma32(cos_poly, z, -(z * _F(0.5))) + _F(1)
    sin_poly = fma32(horner32(_SIN_POLY, z) * z, x, x)
    sin = np.where(sine_polynomial_for_sin, sin_poly, cos_poly)
    cos = np.where(sine_polynomial_for_sin, cos_poly, sin_poly)
    return (sin.view(np.int32) ^ sin_sign).view(_F), (cos.view(np.int32) ^ cos_sign).view(_F)
