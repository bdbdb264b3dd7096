"""Continuous samplers (uniform, normal, exponential, log-normal, Cauchy, geometric) as torch's CPU kernels.

Each fills a numpy array ``out`` in place from a ``Generator``'s 32-bit stream. The unit uniforms are
torch's: float32 takes the low 24 bits of one word, float64 the low 53 bits of a 64-bit draw (two
words, the first high). Float16 and bfloat16 compute in float32 and float64 in float64, rounding as the kernels do.
"""
import math

import numpy as np

from .. import _dtype
from . import avx_math
from .order import fill_in_memory_order
from .rounding import fma32, fma64, libm

_F32 = np.float32
_F64 = np.float64
_MASK24 = np.uint32((1 << 24) - 1)
_MASK53 = np.uint64((1 << 53) - 1)
_TWO_PI_F32 = _F32(2.0 * math.pi)
_TWO_PI = 2.0 * math.pi
# The vectorised normal fill works on blocks of 16 (8 pairs); this many at a time stay in the CPU cache.
_BLOCK = 16
_CHUNK_BLOCKS = 2048
_CHUNK = _BLOCK * _CHUNK_BLOCKS


def unit_float32(generator, count):
    """``count`` float32 uniforms on [0, 1): 24 random bits each."""
    return (generator.draw_uint32(count) & _MASK24).astype(_F32) * _F32(2.0 ** -24)


def unit_float64(generator, count):
    """``count`` float64 uniforms on [0, 1): 53 random bits each."""
    return (generator.draw_uint64(count) & _MASK53).astype(_F64) * 2.0 ** -53


def _cast(values, dtype):
    """float64 ``values`` in ``dtype`` as C++'s static_cast gives them (a double reaches half and bfloat16
    through float)."""
    if dtype in _dtype.HALF_NP:
        values = values.astype(_F32)
    return values.astype(dtype, copy=False)


def _sum_is_exact(low, width):
    """Whether every k 2^-24 width + low (k < 2^24) is exact in float64 for these float32s: true unless
    low is far larger (over 2^4 times) or far smaller (under 2^-28 times) than width."""
    if low == 0 or width == 0:
        return True
    gap = np.frexp(low)[1] - np.frexp(width)[1]
    return -28 <= gap <= 4


def _flat_target(out):
    """A flat array to compute ``out``'s values into, in fill order (a view of ``out`` when it is
    contiguous), and whether it must then be written into ``out``."""
    if out.flags.c_contiguous:
        return out.reshape(-1), False
    return np.empty(out.size, out.dtype), True


def _uniform_float32_(generator, flat, low32, width):
    """Unit uniforms times width plus low, each rounded once to float32: exactly in float64 (when the
    sum is exact there; chunk by chunk, to stay in the CPU cache), else through ``fma32``."""
    if not _sum_is_exact(low32, width):
        flat[:] = fma32(unit_float32(generator, flat.size), width, low32)
        return
    scale = _F64(width) * 2.0 ** -24
    for start in range(0, flat.size, _CHUNK):
        values = (generator.draw_uint32(min(_CHUNK, flat.size - start)) & _MASK24).astype(_F64)
        values *= scale
        values += low32
        flat[start:start + _CHUNK] = values.astype(_F32)


def uniform_(generator, out, low, high):
    """U[low, high): the unit uniform times (high - low) plus low, fused; a value rounding up to
    ``high`` becomes ``low``. Float16 computes in float32."""
    flat, write_back = _flat_target(out)
    if out.dtype == _F64:
        flat[:] = fma64(unit_float64(generator, out.size), _F64(high) - _F64(low), low)
    else:
        low32, high32 = _F32(low), _F32(high)
        _uniform_float32_(generator, flat, low32, high32 - low32)
    flat[flat == out.dtype.type(high)] = out.dtype.type(low)
    if write_back:
        fill_in_memory_order(out, flat)


def _scaled(normal, std, mean):
    """normal * std + mean fused, as the kernel's last step (a plain product when mean is 0)."""
    return normal * std if mean == 0 else fma32(normal, std, mean)


def _box_muller_float32(uniforms, mean, std, out):
    """torch's AVX2 transform of 16-uniform blocks into ``out``: lanes 0-7 get r cos(theta), lanes 8-15
    r sin(theta)."""
    blocks = uniforms.reshape(-1, _BLOCK)
    radius = np.sqrt(_F32(-2) * avx_math.log(_F32(1) - blocks[:, :8]))
    sin, cos = avx_math.sincos_of_angle(_TWO_PI_F32 * blocks[:, 8:])
    out = out.reshape(-1, _BLOCK)
    out[:, :8] = _scaled(radius * cos, std, mean)
    out[:, 8:] = _scaled(radius * sin, std, mean)


def _box_muller_float64(uniforms, mean, std, out):
    """The same transform in float64 with the C library's log, cos and sin."""
    blocks = uniforms.reshape(-1, _BLOCK)
    radius = np.sqrt(-2.0 * libm(math.log, 1.0 - blocks[:, :8]))
    theta = _TWO_PI * blocks[:, 8:]
    out = out.reshape(-1, _BLOCK)
    out[:, :8] = fma64(radius * libm(math.cos, theta), std, mean)
    out[:, 8:] = fma64(radius * libm(math.sin, theta), std, mean)


def _normal_blocks(generator, out, mean, std):
    """The vectorised fill of a contiguous array of 16 or more: whole blocks of 16, then the last 16
    elements again from 16 fresh uniforms. Float32 and float64 first draw one uniform per element (the
    tail's are drawn and discarded); float16 and bfloat16 draw per block only. Chunk by chunk, in stream order."""
    count = out.size
    whole = count - count % _BLOCK
    flat = out.reshape(-1)
    if out.dtype == _F64:
        draw, transform = unit_float64, _box_muller_float64
        mean, std = _F64(mean), _F64(std)
    else:
        draw, transform = unit_float32, _box_muller_float32
        mean, std = _F32(mean), _F32(std)
    for start in range(0, whole, _CHUNK):
        stop = min(whole, start + _CHUNK)
        transform(draw(generator, stop - start), mean, std, flat[start:stop])
    if whole < count:
        if out.dtype not in _dtype.HALF_NP:
            draw(generator, count - whole)
        transform(draw(generator, _BLOCK), mean, std, flat[count - _BLOCK:])


def standard_normal_pairs(generator, count):
    """``count`` float64 N(0, 1) samples from torch's scalar Box-Muller, which caches every second
    sample in the generator: a cached sample is used first, and an odd leftover is cached."""
    values = np.empty(count, _F64)
    start = 0
    if count and generator.next_double_normal is not None:
        values[0] = generator.next_double_normal
        generator.next_double_normal = None
        start = 1
    pairs = (count - start + 1) // 2
    if pairs:
        uniforms = unit_float64(generator, 2 * pairs).reshape(pairs, 2)
        radius = np.sqrt(-2.0 * libm(math.log1p, -uniforms[:, 1]))
        theta = _TWO_PI * uniforms[:, 0]
        both = np.stack([radius * libm(math.cos, theta), radius * libm(math.sin, theta)], axis=1).ravel()
        values[start:] = both[:count - start]
        if (count - start) % 2:
            generator.next_double_normal = float(both[-1])
    return values


def normal_(generator, out, mean, std):
    """N(mean, std^2): vectorised Box-Muller on contiguous arrays of 16 or more, else the scalar path."""
    if out.size >= _BLOCK and out.flags.c_contiguous:
        _normal_blocks(generator, out, mean, std)
        return
    values = fma64(standard_normal_pairs(generator, out.size), std, mean)
    fill_in_memory_order(out, _cast(values, out.dtype))


def log_normal_(generator, out, mean, std):
    """exp of the scalar path's N(mean, std^2)."""
    values = libm(math.exp, fma64(standard_normal_pairs(generator, out.size), std, mean))
    fill_in_memory_order(out, _cast(values, out.dtype))


def exponential_(generator, out, rate):
    """Exp(rate): -log(1 - u) / rate."""
    values = (-1.0 / rate) * libm(math.log1p, -unit_float64(generator, out.size))
    fill_in_memory_order(out, _cast(values, out.dtype))


def geometric_(generator, out, p):
    """Geometric(p) on {1, 2, ...}: ceil(log(u) / log(1 - p))."""
    with np.errstate(divide="ignore"):
        values = np.ceil(libm(_log_or_minus_inf, unit_float64(generator, out.size)) / math.log1p(-p))
    fill_in_memory_order(out, _cast(values, out.dtype))


def cauchy_(generator, out, median, sigma):
    """Cauchy(median, sigma): median + sigma tan(pi (u - 1/2)), fused."""
    values = fma64(sigma, libm(math.tan, math.pi * (unit_float64(generator, out.size) - 0.5)), median)
    fill_in_memory_order(out, _cast(values, out.dtype))


def _log_or_minus_inf(x):
    return math.log(x) if x > 0 else -math.inf


def rrelu_noise(generator, x, lower, upper):
    """torch's training ``rrelu`` slopes for the numpy array ``x``: walking it in C order, each element <= 0 takes
    U(lower, upper) from a float64 uniform (bounds and slope in the op's compute type, float32 below float64),
    the others 1. Returned in that compute type: torch multiplies the input by the unrounded slope and stores
    the slope in the input's dtype as the noise."""
    compute = _F64 if x.dtype == _F64 else _F32
    low, high = float(compute(lower)), float(compute(upper))
    negative = np.ascontiguousarray(x).reshape(-1) <= 0
    noise = np.ones(negative.shape, compute)
    noise[negative] = unit_float64(generator, int(negative.sum())) * (high - low) + low
    return noise.reshape(x.shape)
