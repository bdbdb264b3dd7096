"""The regularized incomplete gamma functions: ``torch.igamma`` (lower, P(a, x)) and ``torch.igammac`` (upper,
Q(a, x) = 1 - P(a, x)), also as ``torch.special.gammainc``/``gammaincc`` compute them, from scipy's values.

Their gradient with respect to ``x`` is +-x^(a-1) e^-x / Gamma(a); PyTorch has none with respect to ``a`` and says
so when asked, as here. The gradient is written again in engine ops for higher orders.
"""
import numpy as np

from ..tensor import Tensor, register_method
from ._common import cast, result_dtype, xp_of
from .elementwise import _Binary, _binary
from .inplace import inplace_of
from .special import scipy_special


def _torch_nan_cases(xp, a, x, value, upper):
    """P(a, x) (Q(a, x) when ``upper``, 1 - P) where torch's kernel decides before looking at a NaN: P is 0 at
    x = 0 (a not negative or zero, NaN included), 0 at a = inf (x finite and positive, or NaN), 1 at x = inf when a
    is NaN."""
    zero, one = (1.0, 0.0) if upper else (0.0, 1.0)
    with np.errstate(invalid="ignore"):
        value = xp.where((x == 0) & ~(a <= 0), zero, value)
        value = xp.where((a == np.inf) & ~(x <= 0) & (x != np.inf), zero, value)
        return xp.where(xp.isnan(a) & (x == np.inf), one, value)


class _IncompleteGamma(_Binary):
    upper = False

    def forward(self, a, x):
        a, x = cast(a, self.dtype), cast(x, self.dtype)
        self.a, self.x = a, x
        xp = xp_of(a, x)
        value = scipy_special(xp, "gammaincc" if self.upper else "gammainc")(a, x)
        return _torch_nan_cases(xp, a, x, value, self.upper).astype(self.dtype)

    def backward(self, gy):
        name = "igammac" if self.upper else "igamma"
        if self.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        xp = xp_of(gy)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            density = xp.exp((self.a - 1) * xp.log(self.x) - self.x - scipy_special(xp, "gammaln")(self.a))
        return None, (-gy if self.upper else gy) * density.astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        """The same density in engine ops on the rebuilt inputs (so differentiable again, w.r.t. x)."""
        from .special import lgamma
        name = "igammac" if self.upper else "igamma"
        if self.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        a, x = self.saved_input(0, self.a), self.saved_input(1, self.x)
        density = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, (-gy if self.upper else gy) * density


class _UpperIncompleteGamma(_IncompleteGamma):
    upper = True


def _tensors_only(name, input, other, method=False):
    """torch's TypeError for a Python number in either place (its igamma has no Scalar overload); the method's
    ``other`` is its first argument."""
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 0 if method else 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")


def _incomplete_gamma(fn_cls, name, input, other):
    _tensors_only(name, input, other)
    dtype = result_dtype(input, other)
    if not dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dtype.title}'")
    return _binary(fn_cls, input, other)


def igamma(input, other):
    """P(a, x): the lower regularized incomplete gamma function of a = input, x = other."""
    return _incomplete_gamma(_IncompleteGamma, "igamma", input, other)


def igammac(input, other):
    """Q(a, x) = 1 - P(a, x): the upper regularized incomplete gamma function."""
    return _incomplete_gamma(_UpperIncompleteGamma, "igammac", input, other)


igamma_ = inplace_of(igamma)
igammac_ = inplace_of(igammac)


def _method(fn):
    """``Tensor.<fn>(other)``: torch's TypeError names ``other`` as the method's first argument."""
    def method(self, other):
        _tensors_only(fn.__name__, self, other, method=True)
        return fn(self, other)
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


for _fn in (igamma, igammac, igamma_, igammac_):
    register_method(_method(_fn))

__all__ = ["igamma", "igammac"]
