"""``engine.special``: the names of ``torch.special``, with its signatures.

Where torch.special's function is a top-level op under another name (expit is sigmoid, psi is digamma, gammaln is
lgamma, multigammaln is mvlgamma, gammainc and gammaincc are igamma and igammac), it is that op here too, given
torch.special's keyword ``out``; the functions torch has only here live in ``engine/ops/special_*.py``.
"""
import numbers

from . import ops as _ops
from .ops._common import int_arg
from .ops.elementwise import _write_out
from .ops.special import zeta
from .ops.special_bessel import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, i0e, i1, i1e,
                                 modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
                                 scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0)
from .ops.special_logs import entr, xlog1py
from .ops.special_normal import erfcx, log_ndtr, ndtr, ndtri
from .ops.special_polynomials import (chebyshev_polynomial_t, chebyshev_polynomial_u, chebyshev_polynomial_v,
                                      chebyshev_polynomial_w, hermite_polynomial_h, hermite_polynomial_he,
                                      laguerre_polynomial_l, legendre_polynomial_p, shifted_chebyshev_polynomial_t,
                                      shifted_chebyshev_polynomial_u, shifted_chebyshev_polynomial_v,
                                      shifted_chebyshev_polynomial_w)
from .tensor import Tensor


def _tensor_arg(name, input, position=1):
    """torch's TypeError for a non-tensor ``input`` of ``torch.special.<name>``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{name}(): argument 'input' (position {position}) must be Tensor, "
                        f"not {type(input).__name__}")


def _int_arg(name, arg, value, position=None):
    """``value`` as an int, or torch's TypeError for argument ``arg`` (a float or bool: torch takes neither; a
    0-dim integer tensor is its value)."""
    value = int_arg(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"special_{name}(): argument '{arg}'{where} must be int, not {type(value).__name__}")
    return int(value)


def _unary_alias(name, op):
    """``torch.special.<name>(input, *, out=None)`` computed by the engine op ``op``."""
    def fn(input, *, out=None):
        _tensor_arg(name, input)
        return _write_out(op(input), out, op.__name__)
    fn.__name__ = name
    fn.__doc__ = f"``torch.special.{name}``: ``engine.{op.__name__}``."
    return fn


erf = _unary_alias("erf", _ops.erf)
erfc = _unary_alias("erfc", _ops.erfc)
erfinv = _unary_alias("erfinv", _ops.erfinv)
expit = _unary_alias("expit", _ops.sigmoid)
exp2 = _unary_alias("exp2", _ops.exp2)
expm1 = _unary_alias("expm1", _ops.expm1)
log1p = _unary_alias("log1p", _ops.log1p)
digamma = _unary_alias("digamma", _ops.digamma)
psi = _unary_alias("psi", _ops.digamma)
gammaln = _unary_alias("gammaln", _ops.lgamma)
i0 = _unary_alias("i0", _ops.i0)
sinc = _unary_alias("sinc", _ops.sinc)


def round(input, *, decimals=0, out=None):
    """Round half to even, at ``decimals`` decimal places (``torch.special.round``); integers are refused, as by
    torch's kernels (its decimals kernel has another name)."""
    _tensor_arg("round", input)
    decimals = _int_arg("round", "decimals", decimals)
    if not (input.is_floating_point() or input.is_complex()):
        kernel = "round_vml" if decimals == 0 else "round"
        raise NotImplementedError(f"\"{kernel}_{input.device.type}\" not implemented for '{input.dtype.title}'")
    return _write_out(_ops.round(input, decimals=decimals), out)


def logit(input, eps=None, *, out=None):
    """log(p / (1 - p)), the input clamped to [eps, 1 - eps] first when eps is given."""
    return _write_out(_ops.logit(input, eps), out)


def xlogy(input, other, *, out=None):
    """input * log(other), 0 where input is 0."""
    return _write_out(_ops.xlogy(input, other), out)


def _tensors_only(name, input, other):
    for position, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"special_{name}(): argument '{arg}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")


def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(a = input, x = other) (``torch.igamma``)."""
    _tensors_only("gammainc", input, other)
    return _write_out(_ops.igamma(input, other), out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q(a = input, x = other) (``torch.igammac``)."""
    _tensors_only("gammaincc", input, other)
    return _write_out(_ops.igammac(input, other), out)


def multigammaln(input, p, *, out=None):
    """The multivariate log-gamma function of dimension ``p`` (``torch.mvlgamma``)."""
    _tensor_arg("multigammaln", input)
    return _write_out(_ops.mvlgamma(input, _int_arg("multigammaln", "p", p, 2)), out)


def polygamma(n, input, *, out=None):
    """The n-th derivative of the digamma function."""
    n = _int_arg("polygamma", "n", n, 1)
    _tensor_arg("polygamma", input, 2)
    return _write_out(_ops.polygamma(n, input), out)


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) along ``dim``, computed stably."""
    return _write_out(_ops.logsumexp(input, dim, keepdim), out)


def softmax(input, dim, *, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, in ``dtype`` when given."""
    return _ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log(softmax(x)) along ``dim``, in ``dtype`` when given."""
    return _ops.log_softmax(input, dim, dtype=dtype)


__all__ = ["Tensor", "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
           "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
           "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]
