"""The standard normal distribution's functions of ``torch.special``: ndtr (its CDF), ndtri (the CDF's inverse),
log_ndtr (the log CDF, accurate in both tails) and erfcx (exp(x^2) erfc(x), which log_ndtr's lower tail uses).

ndtr is torch's composite (1 + erf(x / sqrt 2)) / 2, so it is 0 below x ~ -8.3 in float64 as torch's is (scipy's
stays positive), and differentiates through erf. The others take scipy's values in the input's dtype; log_ndtr
follows torch's split at x = -1 (log(erfcx(-t) / 2) - t^2 below, log1p(-erfc(t) / 2) above, t = x / sqrt 2) so its
tails round as torch's do. float16 and bfloat16 are refused but by ndtr, as torch refuses them.
"""
import math


from ..tensor import Tensor
from ._common import xp_of
from .elementwise import _Unary, _unary, _write_out, erf
from .special import scipy_special
from .complex_refusals import refuse_complex

_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT1_2 = 0.707106781186547524400844362104849039  # 1 / sqrt(2) correctly rounded (1 / math.sqrt(2) is not)


def _erfcx(xp, x):
    return scipy_special(xp, "erfcx")(x).astype(x.dtype, copy=False)


class Erfcx(_Unary):
    """exp(x^2) erfc(x); the gradient is 2x erfcx(x) - 2 / sqrt(pi)."""

    uses_output = True
    f = staticmethod(_erfcx)

    def backward(self, gy):
        return gy * (2 * self.x * self.y - 2 / math.sqrt(math.pi))

    def backward_tensors(self, gy):
        return gy * (2 * self.saved_input(0, self.x) * self.saved_output(0, self.y) - 2 / math.sqrt(math.pi))


class Ndtri(_Unary):
    """The inverse of the standard normal CDF on [0, 1]; the gradient is sqrt(2 pi) exp(y^2 / 2)."""

    uses_inputs, uses_output = False, True

    def f(self, xp, x):
        return scipy_special(xp, "ndtri")(x).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * _SQRT_2PI * xp_of(gy).exp(self.y * self.y / 2)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * _SQRT_2PI * (y * y / 2).exp()


class LogNdtr(_Unary):
    """log of the standard normal CDF; the gradient is the normal density over the CDF, exp(-x^2/2 - y) / sqrt(2 pi)."""

    uses_output = True

    def f(self, xp, x):
        t = x * _SQRT1_2
        lower = xp.log(_erfcx(xp, -t) / 2) - t * t
        upper = xp.log1p(-scipy_special(xp, "erfc")(t).astype(x.dtype, copy=False) / 2)
        return xp.where(x < -1, lower, upper)

    def backward(self, gy):
        return gy / _SQRT_2PI * xp_of(gy).exp(-(self.y + self.x * self.x / 2))

    def backward_tensors(self, gy):
        x, y = self.saved_input(0, self.x), self.saved_output(0, self.y)
        return gy / _SQRT_2PI * (-(y + x * x / 2)).exp()


def _float32_up(name, input):
    """torch's error for float16 and bfloat16, which these kernels do not take."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dtype.is_floating_point and input.dtype.itemsize < 4:
        raise NotImplementedError(f"\"{name}_{input.device.type}\" not implemented for '{input.dtype.title}'")


def erfcx(input, *, out=None):
    """The scaled complementary error function exp(x^2) erfc(x) (``torch.special.erfcx``)."""
    refuse_complex("erfcx", input)
    _float32_up("erfcx", input)
    return _write_out(_unary(Erfcx, input), out)


def ndtri(input, *, out=None):
    """The quantile function of the standard normal distribution (``torch.special.ndtri``)."""
    refuse_complex("ndtri", input)
    _float32_up("ndtri", input)
    return _write_out(_unary(Ndtri, input), out)


def log_ndtr(input, *, out=None):
    """log of the standard normal CDF, accurate far into both tails (``torch.special.log_ndtr``)."""
    refuse_complex("log_ndtr", input)
    _float32_up("log_ndtr", input)
    return _write_out(_unary(LogNdtr, input), out)


def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2 as torch composes it (``torch.special.ndtr``)."""
    return _write_out((1 + erf(input * _SQRT1_2)) * 0.5, out)


__all__ = ["erfcx", "ndtr", "ndtri", "log_ndtr"]
