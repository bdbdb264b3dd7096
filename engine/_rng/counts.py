"""Rejection samplers as torch's CPU kernels run them: Poisson counts (``sample_poisson``) and Gamma(alpha, 1)
draws (``sample_gamma``, Marsaglia and Tsang), element after element in C order.

Each element takes as many float64 unit uniforms (and, for Gamma, float64 normals with the generator's cached
second sample) as its rejection loop needs, so the stream is read one number at a time. The loops are plain
double arithmetic (torch builds them without fused multiply-adds) with the C library's functions. Uniforms are
drawn ahead in blocks; ``_Uniforms.finish`` leaves the generator just past the last one used.
"""
import ctypes
import ctypes.util
import math

import numpy as np

from .continuous import unit_float64

_BLOCK = 256


def _c_function(name, fallback):
    """The C library's ``double name(double)`` (CPython's math.lgamma is its own, not the C library's)."""
    try:
        function = getattr(ctypes.CDLL(ctypes.util.find_library("m")), name)
    except (OSError, AttributeError, TypeError):
        return fallback
    function.restype, function.argtypes = ctypes.c_double, [ctypes.c_double]
    return function


_lgamma = _c_function("lgamma", math.lgamma)


def _int64(x):
    """C's ``(int64_t) floor(x)`` on x86: NaN and values outside int64 become -2^63."""
    return math.floor(x) if math.isfinite(x) and -2.0 ** 63 <= x < 2.0 ** 63 else -2 ** 63


class _Uniforms:
    """The generator's float64 unit uniforms one at a time, and its scalar normal sampler (which caches every
    second sample, as ``at::normal_distribution<double>`` does)."""

    def __init__(self, generator):
        self.generator = generator
        self.start = generator._bits.state
        self.used = 0
        self.buffer = []

    def uniform(self):
        if not self.buffer:
            self.buffer = unit_float64(self.generator, _BLOCK).tolist()[::-1]
        self.used += 1
        return self.buffer.pop()

    def normal(self):
        cached = self.generator.next_double_normal
        if cached is not None:
            self.generator.next_double_normal = None
            return cached
        u1, u2 = self.uniform(), self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.generator.next_double_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def finish(self):
        """Leave the generator just after the uniforms used (the rest of the last block is given back)."""
        if self.buffer:
            self.generator._bits.state = self.start
            unit_float64(self.generator, self.used)


def _poisson(rate, draws):
    """One Poisson count (an int): Hoermann's transformed rejection from rate 10, else multiplied uniforms."""
    if rate >= 10:
        slam, loglam = math.sqrt(rate), math.log(rate)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            u = draws.uniform() - 0.5
            v = draws.uniform()
            us = 0.5 - abs(u)
            k = _int64((2 * a / us + b) * u + rate + 0.43)
            if us >= 0.07 and v <= vr:
                return k
            if k < 0 or (us < 0.013 and v > us):
                continue
            accept = (-rate + k * loglam - _lgamma(k + 1.0))
            if (_log(v) + math.log(invalpha) - math.log(a / (us * us) + b)) <= accept:
                return k
    if rate == 0:
        return 0
    count, product, limit = 0, 1.0, math.exp(-rate)
    while True:
        product *= draws.uniform()
        if product > limit:
            count += 1
        else:
            return count


def _log(x):
    return math.log(x) if x > 0 else -math.inf


def poisson(generator, rates):
    """Poisson counts at the float64 ``rates`` (non-negative), as int64 (torch's type for them), in C order."""
    draws = _Uniforms(generator)
    try:
        counts = [_poisson(rate, draws) for rate in rates.ravel().tolist()]
    finally:
        draws.finish()
    return np.array(counts, np.int64).reshape(rates.shape)


def _gamma(alpha, draws, single):
    """One Gamma(alpha, 1) draw in float64. ``single``: alpha is a float32 (torch's float kernel does the
    boost of alpha < 1 and the constant d in float)."""
    f = np.float32 if single else float
    scale = 1.0
    if alpha < 1:
        if alpha == 0:
            return 0.0
        scale *= math.pow(1 - draws.uniform(), float(f(1.0) / f(alpha)))
        alpha = f(alpha) + f(1.0)
    d = float(f(alpha) - f(np.float32(1.0) / np.float32(3.0)))
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1 - draws.uniform()
        xx = x * x
        if u < 1.0 - _SQUEEZE * xx * xx:
            return scale * d * v
        if _log(u) < 0.5 * xx + d * (1.0 - v + _log(v)):
            return scale * d * v


_SQUEEZE = float(np.float32(0.0331))


def standard_gamma(generator, alphas, single):
    """Gamma(alpha, 1) draws (float64) for the ``alphas`` in C order; ``single``: torch's float32 kernel."""
    draws = _Uniforms(generator)
    try:
        values = [_gamma(alpha, draws, single) for alpha in alphas.ravel().tolist()]
    finally:
        draws.finish()
    return np.array(values, np.float64).reshape(alphas.shape)


_log1pf = None


def _float_log1p(x):
    """C's ``log1pf`` of a float32 (``std::log1p`` of a float), as a float."""
    global _log1pf
    if _log1pf is None:
        try:
            _log1pf = ctypes.CDLL(ctypes.util.find_library("m")).log1pf
            _log1pf.restype, _log1pf.argtypes = ctypes.c_float, [ctypes.c_float]
        except (OSError, AttributeError, TypeError):
            _log1pf = lambda v: float(np.float32(math.log1p(v)))  # noqa: E731 (correctly rounded: equal)
    return float(_log1pf(float(x)))


# log(k!) - (Stirling's approximation of it) for k = 0..9, as torch tabulates it
_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509,
                  0.0166446911898211, 0.0138761288230707, 0.0118967099458917, 0.0104112652619720,
                  0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k):
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count, prob, draws, f):
    """Successes counted as geometric waiting times until they pass ``count`` (small count * prob)."""
    log_q = _float_log1p(-prob) if f is np.float32 else math.log1p(-prob)
    total, successes = 0.0, f(0)
    while True:
        total += math.ceil(_log(draws.uniform()) / log_q) if log_q else math.inf
        if total > count:
            return successes
        successes = f(successes + f(1))


def _btrs(count, prob, draws, f):
    """Hoermann's transformed rejection with squeeze (BTRS), as torch writes it: ``count`` and ``prob`` in the
    input's type ``f``, the rest in float64."""
    count, prob = f(count), f(prob)
    stddev = float(np.sqrt(count * prob * (f(1) - prob)))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * float(prob)
    c = float(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(prob / (f(1) - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = float(np.floor((count + f(1)) * prob))
    n = float(count)
    while True:
        u = draws.uniform() - 0.5
        v = draws.uniform()
        us = 0.5 - abs(u)
        k = f(np.floor((2 * a / us + b) * u + c))  # a double floored, then cast to the input's type
        if k < 0 or k > count:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = _log(v * alpha / (a / (us * us) + b))
        kk = float(k)
        upper = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
                 + float(count + f(1)) * math.log((n - m + 1) / float(count - k + f(1)))
                 + (kk + 0.5) * math.log(r * float(count - k + f(1)) / float(k + f(1)))
                 + _stirling_tail(m) + _stirling_tail(n - m) - _stirling_tail(kk) - _stirling_tail(float(count - k)))
        if v <= upper:
            return k


def _binomial(count, prob, draws, f):
    """One draw, as torch's ``sample_binomial``: the sampler for min(p, 1 - p), as its mean reaches 10 or not. (A
    NaN argument, or an infinite count, would loop for ever there: NaN, and the infinite count, are returned.)"""
    count, prob = f(count), f(prob)
    if math.isnan(count) or math.isnan(prob):
        return math.nan
    if count <= 0 or prob <= 0:
        return 0.0
    if prob >= 1 or math.isinf(count):
        return float(count)
    if prob <= 0.5:
        sampler = _btrs if count * prob >= 10 else _binomial_inversion
        return float(sampler(count, prob, draws, f))
    if prob > 0.5:
        q = f(f(1) - prob)
        sampler = _btrs if count * q >= 10 else _binomial_inversion
        return float(count - sampler(count, q, draws, f))
    return math.nan


def binomial(generator, counts, probs):
    """Binomial draws for the (broadcast, same-dtype) ``counts`` and ``probs`` in C order, as float64."""
    f = np.float32 if counts.dtype != np.float64 else np.float64
    counts, probs = np.broadcast_arrays(counts.astype(f), probs.astype(f))
    draws = _Uniforms(generator)
    try:
        values = [_binomial(n, p, draws, f) for n, p in zip(counts.ravel(), probs.ravel())]
    finally:
        draws.finish()
    return np.array(values, np.float64).reshape(counts.shape)
