"""Special functions: erfc, erfinv, lgamma, digamma (``torch.erfc`` ..., and ``torch.special``'s names).

Their values come from ``scipy.special`` on the CPU and ``cupyx.scipy.special`` on the GPU (the
accurate implementations; numpy has none of them). scipy is optional for the engine as a whole:
these ops alone need it, and say so in one line when it is missing.
"""
import importlib
import math

import numpy as np

from .elementwise import _Unary, _unary_pair
from ..tensor import register_method
from ._common import xp_of


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


class Erfc(_Unary):
    """1 - erf(x), accurate where erf(x) is close to 1."""

    f = _special("erfc")

    def backward(self, gy):
        return gy * (-2.0 / math.sqrt(math.pi)) * xp_of(gy).exp(-self.x * self.x)


class Erfinv(_Unary):
    """The inverse of erf on (-1, 1); +-inf at +-1."""

    uses_inputs, uses_output = False, True
    f = _special("erfinv")

    def backward(self, gy):
        return gy * (math.sqrt(math.pi) / 2) * xp_of(gy).exp(self.y * self.y)


class Lgamma(_Unary):
    """log |Gamma(x)| (+inf at -inf, as in PyTorch); the gradient is digamma(x)."""

    def f(self, xp, x):
        y = scipy_special(xp, "gammaln")(x).astype(x.dtype, copy=False)
        return xp.where(x == -np.inf, np.inf, y).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * scipy_special(xp_of(gy), "digamma")(self.x)


class Digamma(_Unary):
    """d/dx log Gamma(x), -inf at +0 and +inf at -0 as in PyTorch; the gradient is the trigamma
    function."""

    def f(self, xp, x):
        y = scipy_special(xp, "digamma")(x).astype(x.dtype, copy=False)
        return xp.where(x == 0, -xp.copysign(np.inf, x), y).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * scipy_special(xp_of(gy), "polygamma")(1, self.x)


erfc, erfc_ = _unary_pair("erfc", Erfc)
erfinv, erfinv_ = _unary_pair("erfinv", Erfinv)
lgamma, lgamma_ = _unary_pair("lgamma", Lgamma)
digamma, digamma_ = _unary_pair("digamma", Digamma)

for _name in ("erfc", "erfc_", "erfinv", "erfinv_", "lgamma", "lgamma_", "digamma", "digamma_"):
    register_method(globals()[_name], _name)

__all__ = ["erfc", "erfc_", "erfinv", "erfinv_", "lgamma", "lgamma_", "digamma", "digamma_"]
