"""Special functions: erfc, erfinv, lgamma, digamma, polygamma, i0 (``torch.erfc`` ..., and
``torch.special``'s names).

Their values come from ``scipy.special`` on the CPU and ``cupyx.scipy.special`` on the GPU (the
accurate implementations; numpy has none of them), but the CPU's float32 erfinv's, which ``normal_quantile``
computes (the zoo's initialisation needs erfinv), as it computes float64 ones without scipy; erfinv's are made
torch's CPU values as nearly as can be (``_erfinv``). scipy is optional for the engine as a whole: the other ops
here need it, and say so in one line when it is missing.
"""
import functools
import importlib
import math

import numpy as np

from .elementwise import _Binary, _binary, _Unary, _unary, _unary_pair, _write_out
from .. import _dtype
from ..tensor import Tensor, register_method
from ._common import as_operand, cast, float_dtype, result_dtype, xp_of
from .complex_refusals import refuse_complex
from . import normal_quantile
from ..amp import autocast_mode


def scipy_special(xp, name):
    """The function ``name`` of scipy.special for numpy arrays or of cupyx.scipy.special for cupy ones."""
    module = "scipy.special" if xp is np else "cupyx.scipy.special"
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:
        raise RuntimeError(f"engine.{name} needs {module.split('.special')[0]} (pip install scipy)") from None


def _special(name):
    """The elementwise function ``name`` in the input's own dtype."""
    return staticmethod(lambda xp, x: scipy_special(xp, name)(x).astype(x.dtype, copy=False))


# torch's x86-64 builds link MKL, and their CPU erfinv for float32 and float64 is MKL's vsErfInv / vdErfInv in
# high-accuracy mode (Math.h's calc_erfinv runs only in builds without MKL); float16 and bfloat16 go through float32
# and round. MKL's values are the correctly rounded ones but for ~0.03% of float32 inputs, which lie within ~1e-3 ulp
# of a rounding boundary; scipy's float32 loop is off by 1 ulp on ~43% of them, float64 erfinv rounded to float32
# on ~0.03% only (scipy's or normal_quantile's, which round alike). float64 inputs keep the float64 values (a few ulp
# from MKL's on ~43% of them).


def _erfinv(xp, y):
    """erfinv(y) in y's dtype (floating), as torch's CPU gives it (above): computed in float64, rounded through
    float32 for the narrower types; -0 stays -0. On the CPU, float32 and narrower types from ``normal_quantile``
    (the zoo's initialisation needs erfinv, SciPy is not a dependency, and it is faster), float64 from SciPy where
    installed (``normal_quantile``'s are up to 6 ulp from MKL's, SciPy's 3); on the GPU from CuPy's."""
    if xp is np and y.dtype != np.float64:
        wide = normal_quantile.erfinv(y)
    else:
        try:
            wide = scipy_special(xp, "erfinv")(y.astype(np.float64))
        except RuntimeError:
            if xp is not np:
                raise
            wide = normal_quantile.erfinv(y)
    out = wide.astype(np.float32) if y.dtype != np.float64 else wide
    return xp.where(y == 0, y, out.astype(y.dtype, copy=False))


class Erfc(_Unary):
    """1 - erf(x), accurate where erf(x) is close to 1."""

    f = _special("erfc")

    def backward(self, gy):
        return gy * (-2.0 / math.sqrt(math.pi)) * xp_of(gy).exp(-self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy * (-2.0 / math.sqrt(math.pi)) * (-x * x).exp()


class Erfinv(_Unary):
    """The inverse of erf on (-1, 1); +-inf at +-1, NaN beyond. torch's CPU values (``_erfinv``) for all but
    ~0.03% of float32 inputs, which differ by 1 ulp; float64 ones within a few ulp."""

    uses_inputs, uses_output = False, True
    f = staticmethod(_erfinv)

    def backward(self, gy):
        return gy * (math.sqrt(math.pi) / 2) * xp_of(gy).exp(self.y * self.y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * (math.sqrt(math.pi) / 2) * (y * y).exp()


_EULER_GAMMA = 0.577215664901532860606512090082402431


@functools.lru_cache(maxsize=1)
def _lgamma_series():
    """The coefficients (-1)^k zeta(k) / k, k = 21 down to 2, of lgamma's Taylor series about 1."""
    return tuple((-1) ** k * float(scipy_special(np, "zeta")(float(k), 1.0)) / k for k in range(21, 1, -1))


def _lgamma_near_one(xp, e):
    """lgamma(1 + e) for |e| <= 0.1 from its Taylor series -gamma e + sum_k>=2 (-1)^k zeta(k) / k e^k (20 terms:
    the rest is below 1e-19 relative), in float64."""
    series = xp.zeros_like(e)
    for c in _lgamma_series():
        series = series * e + c
    return e * (series * e - _EULER_GAMMA)


class Lgamma(_Unary):
    """log |Gamma(x)| (+inf at -inf, as in PyTorch); the gradient is digamma(x). Within 0.1 of the zeros at 1 and
    2 the Taylor series about 1 (``_lgamma_near_one``; lgamma(2 + e) = log1p(e) + lgamma(1 + e)): scipy's values
    lose up to 6e-6 relative there, torch's (the C library's) do not."""

    def f(self, xp, x):
        y = scipy_special(xp, "gammaln")(x).astype(x.dtype, copy=False)
        wide = x.astype(np.float64)
        near_two = xp.abs(wide - 2) <= 0.1
        e = xp.where(near_two, wide - 2, wide - 1)
        near = xp.abs(e) <= 0.1
        e = xp.where(near, e, 0)
        fixed = _lgamma_near_one(xp, e) + xp.where(near_two, xp.log1p(e), 0)
        y = xp.where(near, fixed.astype(x.dtype), y)
        return xp.where(x == -np.inf, np.inf, y).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * scipy_special(xp_of(gy), "digamma")(self.x)

    def backward_tensors(self, gy):
        return gy * digamma(self.saved_input(0, self.x))


class Digamma(_Unary):
    """d/dx log Gamma(x), -inf at +0 and +inf at -0 as in PyTorch; the gradient is the trigamma
    function."""

    def f(self, xp, x):
        y = scipy_special(xp, "digamma")(x).astype(x.dtype, copy=False)
        return xp.where(x == 0, -xp.copysign(np.inf, x), y).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * _polygamma(xp_of(gy), 1, self.x)

    def backward_tensors(self, gy):
        return gy * polygamma(1, self.saved_input(0, self.x))


def _polygamma(xp, n, x):
    """polygamma(n, x) for n >= 1 in x's dtype: scipy's values, but NaN where torch's CPU kernel gives NaN: at -inf
    for trigamma, at +inf for n >= 2 (in the gradients too: digamma's is trigamma, polygamma(n)'s polygamma(n + 1))."""
    y = scipy_special(xp, "polygamma")(n, x)
    return xp.where(x == (-np.inf if n == 1 else np.inf), np.nan, y).astype(x.dtype, copy=False)


class I0(_Unary):
    """The modified Bessel function of the first kind, order 0; the gradient is i1(x)."""

    f = _special("i0")

    def backward(self, gy):
        return gy * scipy_special(xp_of(gy), "i1")(self.x)

    def backward_tensors(self, gy):
        from .special_bessel import i1
        return gy * i1(self.saved_input(0, self.x))


class Polygamma(_Unary):
    """The ``n``-th derivative of digamma; the gradient is polygamma(n + 1, x)."""

    def __init__(self, dtype, n):
        super().__init__(dtype)
        self.n = n

    def f(self, xp, x):
        return _polygamma(xp, self.n, x)

    def backward(self, gy):
        return gy * _polygamma(xp_of(gy), self.n + 1, self.x)

    def backward_tensors(self, gy):
        return gy * polygamma(self.n + 1, self.saved_input(0, self.x))


def polygamma(n, input):
    """The ``n``-th derivative of the digamma function (``n`` = 0 is digamma itself)."""
    refuse_complex({0: "digamma", 1: "trigamma"}.get(n, "polygamma"), input)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(input)
    return _unary(Polygamma, input, n=int(n))


def _polygamma_method(self, n):
    return polygamma(n, self)


erfc, erfc_ = _unary_pair("erfc", Erfc)
erfinv, erfinv_ = _unary_pair("erfinv", Erfinv)
erfinv = autocast_mode.float32("cuda")(erfinv)  # on torch's CUDA float32 list
lgamma, lgamma_ = _unary_pair("lgamma", Lgamma)
digamma, digamma_ = _unary_pair("digamma", Digamma)
i0, i0_ = _unary_pair("i0", I0)

for _name in ("erfc", "erfc_", "erfinv", "erfinv_", "lgamma", "lgamma_", "digamma", "digamma_", "i0", "i0_"):
    register_method(globals()[_name], _name)
register_method(_polygamma_method, "polygamma")

__all__ = ["erfc", "erfc_", "erfinv", "erfinv_", "lgamma", "lgamma_", "digamma", "digamma_", "i0", "i0_",
           "polygamma"]


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension ``p``: sum over i < p of lgamma(x - i/2), plus
    p (p - 1) / 4 log(pi) (``torch.mvlgamma``, ``torch.special.multigammaln``)."""
    refuse_complex("mvlgamma", input)
    if input.dtype is _dtype.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    input = input if input.is_floating_point() else input.to(float_dtype(input.dtype))
    halves = input.new_tensor([i / 2 for i in range(p)])
    return lgamma(input.unsqueeze(-1) - halves).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def mvlgamma_(input, p):
    return input.copy_(mvlgamma(input, p))


register_method(mvlgamma, "mvlgamma")
register_method(mvlgamma_, "mvlgamma_")
__all__ += ["mvlgamma"]


class Zeta(_Binary):
    """The Hurwitz zeta function sum_k (k + q)^-x of x = input and q = other; the gradient with respect to q is
    -x zeta(x + 1, q), and torch has none with respect to x (it says so when asked, as here)."""

    def forward(self, x, q):
        xp = xp_of(x, q)
        # a Python number rounded to the result's dtype first, as torch wraps it (1e39 with float32 is inf)
        with np.errstate(over="ignore"):
            x, q = (xp.asarray(cast(v, self.dtype), dtype=self.dtype) for v in (x, q))
        self.x, self.q = x, q
        y = scipy_special(xp, "zeta")(x, q)
        return xp.where((q == np.inf) & (x > 1), np.nan, y).astype(self.dtype, copy=False)  # torch: NaN (scipy: 0)

    def backward(self, gy):
        if self.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        zeta_next = scipy_special(xp_of(gy), "zeta")(self.x + 1, self.q)
        return None, gy * (-self.x * zeta_next).astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        if self.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        x = self.saved_input(0, self.x)
        return None, gy * (-x * zeta(x + 1, self.saved_input(1, self.q)))


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function of x = input and q = other (``torch.special.zeta``); integers give floats."""
    refuse_complex("zeta", input, other)
    dt = result_dtype(as_operand(input), as_operand(other))
    if dt.is_floating_point and dt.itemsize < 4:  # torch's kernel has no half types
        device = next((t.device.type for t in (input, other) if isinstance(t, Tensor)), "cpu")
        raise NotImplementedError(f"\"zeta_{device}\" not implemented for '{dt.title}'")
    return _write_out(_binary(Zeta, input, other, float_result=True), out)
