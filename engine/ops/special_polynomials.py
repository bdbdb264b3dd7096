"""The orthogonal polynomials of ``torch.special``: Chebyshev T, U, V, W (plain and shifted to [0, 1]), Hermite H
(physicists') and He (probabilists'), Laguerre L and Legendre P, evaluated as torch evaluates them.

``f(input, n)``: either may be a tensor or a number (not both); both are promoted to one floating type (integers
give the default float type) and ``n`` is truncated to an integer. torch's conventions, kept here: a negative
(or NaN, infinite or out-of-range) degree gives 0; the three-term recurrence runs in the input's dtype, so it
overflows to inf and then NaN for large degrees outside [-1, 1]; for the Chebyshev families inside (-1, 1) degrees
above 6 (8 for U, V and W; 4 for shifted W) use the trigonometric closed forms; the endpoints have exact values;
Hermite degrees above 128 (float32) or 512 (float64) give NaN. torch does not differentiate these: the results
never require grad. float16 and bfloat16 are refused, as torch's kernels refuse them.
"""
import numpy as np

from ..tensor import Tensor
from ._common import float_dtype, result_dtype, xp_of
from .elementwise import _Binary, _binary, _write_out


def _degree(xp, n):
    """n truncated toward zero as int64; -1 where torch's conversion of a float to int64 is out of range."""
    ok = xp.isfinite(n) & (xp.abs(n) < 2.0 ** 63)
    return xp.where(ok, xp.trunc(xp.where(ok, n, 0)), -1).astype(np.int64)


def _climb(xp, n, p, q, step):
    """The degree-n term of a three-term recurrence, per element: p and q are the degree-0 and degree-1 terms and
    ``step(j, p, q)`` the degree-(j+1) term; elements with n <= 1 keep q. Stops once every element still climbing
    is NaN (where torch's loop stops too)."""
    for j in range(1, int(n.max()) if n.size else 0):
        live = n > j
        r = step(j, p, q)
        p, q = xp.where(live, q, p), xp.where(live, r, q)
        if not bool((live & ~xp.isnan(q)).any()):
            break
    return q


def _mul_sub(a, q, c):
    """a * q - c with one rounding, as torch's kernels give it (their compilers fuse it into a fused multiply-add):
    float32 through float64, where the product is exact; float64 directly (within an ulp of the fused value)."""
    if a.dtype == np.float32:
        return (a.astype(np.float64) * q - c).astype(np.float32)
    return a * q - c


def _select(xp, cases, default):
    """The value of the first true condition in ``cases`` ((condition, value) pairs), else ``default``."""
    out = default
    for cond, value in reversed(cases):
        out = xp.where(cond, value, out)
    return out


def _even(n):
    return n % 2 == 0


def _rounded(fn):
    """The array function ``fn`` in float32 computed in float64 and rounded: nearer to the C library's acosf, cosf
    and sinf that torch's scalar kernels call than numpy's float32 loops (acos: those differ from glibc 2.36's on
    35% of inputs, the rounded float64 values on 3%), which matters as n * theta multiplies an ulp: T_100 at 0.2223
    was 7e-6 from torch's. The rest are the C library's own ulp, up to 5e-4 relative at n ~ 300."""
    def f(xp, x):
        return fn(xp, x.astype(np.float64)).astype(x.dtype) if x.dtype == np.float32 else fn(xp, x)
    return f


_acos, _cos, _sin = (_rounded(lambda xp, x, name=name: getattr(xp, name)(x)) for name in ("arccos", "cos", "sin"))


def _chebyshev(kind, shifted):
    """Chebyshev's polynomial of ``kind`` ("t", "u", "v" or "w") at x, or at 2x - 1 when ``shifted``."""
    def f(xp, x, n):
        dt = x.dtype.type
        t = x + x - 1.0 if shifted else x
        nf = n.astype(x.dtype)
        two_n1 = 2 * n + 1
        first = {"t": t, "u": t + t, "v": t + t - 1.0, "w": t + t + 1.0}[kind]
        threshold = 4 if (shifted and kind == "w") else (6 if kind == "t" or shifted else 8)
        inside = (n > threshold) & (xp.abs(t) < 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            theta = _acos(xp, xp.where(inside, t, 0))
        if kind == "t":
            closed = _cos(xp, nf * theta)
        elif kind == "u":
            s = _sin(xp, theta)
            closed = xp.where(s != 0, _sin(xp, (nf + 1) * theta) / xp.where(s != 0, s, 1),
                              (nf + 1) * _cos(xp, (nf + 1) * theta) / t)
        elif kind == "v":
            closed = xp.where(_sin(xp, theta / dt(2)) != 1, _cos(xp, (nf + dt(0.5)) * theta) / _cos(xp, theta / dt(2)),
                              xp.where(_even(n), two_n1, -two_n1))
        else:
            sin_half = _sin(xp, theta / dt(2))
            closed = xp.where(_cos(xp, theta / dt(2)) != 1, _sin(xp, (nf + dt(0.5)) * theta) / sin_half,
                              _w_vertex(xp, t, n, shifted))
        climbed = _climb(xp, xp.where(inside, 1, n), xp.ones_like(t), first, lambda j, p, q: _mul_sub(t + t, q, p))
        return _select(xp, [(n < 0, 0), *_chebyshev_ends(xp, kind, shifted, x, n), (inside, closed), (n == 0, 1)],
                       climbed)
    return f


def _w_vertex(xp, t, n, shifted):
    """W's value where its closed form's denominator vanishes (t rounds to 1)."""
    parity = xp.where(_even(n), 1, -1)
    return parity if shifted else xp.where(t > 0, 2 * n + 1, parity)


def _chebyshev_ends(xp, kind, shifted, x, n):
    """The exact values at the interval's ends: x = +-1, or x = 1 and x = 0 when shifted."""
    plus1 = {"t": 1, "u": n + 1, "v": 1, "w": 2 * n + 1}[kind]
    at_minus1 = {"t": 1, "u": n + 1, "v": 2 * n + 1, "w": 1}[kind]
    minus1 = xp.where(_even(n), at_minus1, -at_minus1)
    if shifted:
        return [(x == 1, plus1), (x == 0, minus1)]
    return [(x == 1, plus1), (x == -1, minus1)]


_HERMITE_LIMIT = {np.dtype(np.float32): 128, np.dtype(np.float64): 512}


def _hermite(physicists):
    """Hermite's H (``physicists``) or He; NaN above the dtype's degree limit."""
    def f(xp, x, n):
        scale = 2.0 if physicists else 1.0
        first = x + x if physicists else x
        beyond = n > _HERMITE_LIMIT[x.dtype]
        climbed = _climb(xp, xp.where(beyond, 1, n), xp.ones_like(x), first,
                         lambda j, p, q: _mul_sub(x + x if physicists else x, q, (scale * j) * p))
        return _select(xp, [(n < 0, 0), (n == 0, 1), (n == 1, first), (beyond, np.nan)], climbed)
    return f


def laguerre(xp, x, n):
    """Laguerre's L_n(x); 1 at x = 0."""
    climbed = _climb(xp, n, xp.ones_like(x), 1.0 - x, lambda j, p, q: _mul_sub((j + j) + (1.0 - x), q, j * p) / (j + 1))
    return _select(xp, [(n < 0, 0), (x == 0, 1), (n == 0, 1)], climbed)


def legendre(xp, x, n):
    """Legendre's P_n(x); +-1 at x = +-1."""
    climbed = _climb(xp, n, xp.ones_like(x), x, lambda j, p, q: _mul_sub((j + j + 1) * x, q, j * p) / (j + 1))
    return _select(xp, [(n < 0, 0), (x == 1, 1), (x == -1, xp.where(_even(n), 1, -1)), (n == 0, 1)], climbed)


class _Polynomial(_Binary):
    """p_n(x) by the subclass's ``fn(xp, x, n)`` on arrays of the promoted dtype, n an int64 array."""

    uses_inputs = False

    def forward(self, x, n):
        xp = xp_of(x, n)
        x, n = xp.broadcast_arrays(xp.asarray(x, dtype=self.dtype), xp.asarray(n, dtype=self.dtype))
        with np.errstate(all="ignore"):
            return self.fn(xp, x, _degree(xp, n)).astype(self.dtype, copy=False)


class ChebyshevT(_Polynomial):
    fn = staticmethod(_chebyshev("t", shifted=False))


class ChebyshevU(_Polynomial):
    fn = staticmethod(_chebyshev("u", shifted=False))


class ChebyshevV(_Polynomial):
    fn = staticmethod(_chebyshev("v", shifted=False))


class ChebyshevW(_Polynomial):
    fn = staticmethod(_chebyshev("w", shifted=False))


class ShiftedChebyshevT(_Polynomial):
    fn = staticmethod(_chebyshev("t", shifted=True))


class ShiftedChebyshevU(_Polynomial):
    fn = staticmethod(_chebyshev("u", shifted=True))


class ShiftedChebyshevV(_Polynomial):
    fn = staticmethod(_chebyshev("v", shifted=True))


class ShiftedChebyshevW(_Polynomial):
    fn = staticmethod(_chebyshev("w", shifted=True))


class HermiteH(_Polynomial):
    fn = staticmethod(_hermite(physicists=True))


class HermiteHe(_Polynomial):
    fn = staticmethod(_hermite(physicists=False))


class LaguerreL(_Polynomial):
    fn = staticmethod(laguerre)


class LegendreP(_Polynomial):
    fn = staticmethod(legendre)


def _polynomial(name, fn_cls):
    """``torch.special.<name>(input, n, *, out=None)``."""
    def op(input, n, *, out=None):
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(n).__name__}), but expected (Tensor x, Tensor n), "
                            f"(Number x, Tensor n) or (Tensor x, Number n)")
        x, n = (t.detach() if isinstance(t, Tensor) else t for t in (input, n))
        common = result_dtype(x, n)
        dtype = common if common.is_complex else float_dtype(common)
        if dtype.itemsize < 4 or dtype.is_complex:
            device = (x if isinstance(x, Tensor) else n).device
            raise NotImplementedError(f"\"{name}_{device.type}\" not implemented for '{dtype.title}'")
        return _write_out(_binary(fn_cls, x, n, float_result=True), out, name)
    op.__name__ = name
    op.__doc__ = f"``torch.special.{name}``: the polynomial of degree n at input (module docstring)."
    return op


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", ChebyshevT)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", ChebyshevU)
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", ChebyshevV)
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", ChebyshevW)
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", ShiftedChebyshevT)
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", ShiftedChebyshevU)
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", ShiftedChebyshevV)
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", ShiftedChebyshevW)
hermite_polynomial_h = _polynomial("hermite_polynomial_h", HermiteH)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", HermiteHe)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", LaguerreL)
legendre_polynomial_p = _polynomial("legendre_polynomial_p", LegendreP)

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]
