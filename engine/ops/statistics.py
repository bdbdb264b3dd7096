"""Covariance and correlation of variables observed together: cov and corrcoef (rows are variables,
columns observations), composed of differentiable ops."""
import warnings

from .. import _dtype
from ..tensor import Tensor, register_method
from .complex_math import complex
from .complex_views import conj, real, imag
from .elementwise import clamp, sqrt
from .linalg import matmul
from .shape import diag


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows (a 0-d variance for a 1-d input),
    with integer frequency weights ``fweights`` and observation weights ``aweights``."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input.dtype is _dtype.bool_:
        raise NotImplementedError("cov(): bool dtype is not supported for input")
    x = input if input.is_floating_point() or input.is_complex() else input.to(_dtype.get_default_dtype())
    x = x.reshape(1, -1) if x.ndim < 2 else x
    observations = x.shape[1]
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is None:
            continue
        if not isinstance(w, Tensor) or w.ndim > 1 or w.numel() != observations:
            raise RuntimeError(f"cov(): expected {name} to have one dimension and {observations} elements but "
                               f"got {getattr(w, 'ndim', 0)} dimensions")
        weights = w if weights is None else weights * w
    if weights is None:
        total = observations
        mean = x.mean(1, keepdim=True)
        degrees = total - correction
    else:
        total = weights.sum()
        if float(total) == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        mean = (x * weights).sum(1, keepdim=True) / total
        degrees = total - correction if aweights is None else total - correction * (weights * aweights).sum() / total
    centred = x - mean
    weighted = centred if weights is None else centred * weights
    if float(degrees) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
    degrees = clamp(degrees, min=0) if isinstance(degrees, Tensor) else max(degrees, 0)
    result = matmul(weighted, conj(centred.t())) / degrees
    return result.reshape(()) if input.ndim < 2 or input.shape[0] == 1 else result  # one variable: torch's 0-d


def corrcoef(input):
    """Pearson correlation coefficients of the variables in ``input``'s rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = sqrt(real(diag(c)))
    c = c / stddev.reshape(-1, 1) / stddev.reshape(1, -1)
    if c.is_complex():  # each part clipped, as torch's
        return complex(clamp(real(c), -1, 1), clamp(imag(c), -1, 1))
    return clamp(c, -1, 1)


register_method(cov)
register_method(corrcoef)

__all__ = ["cov", "corrcoef"]
