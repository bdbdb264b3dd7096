"""The variance and standard deviation of complex tensors, which torch defines as those of the magnitudes of
the deviations: ``sum |z - mean(z)|^2 / (n - correction)``, a real result. That is the real parts' variance plus
the imaginary parts', so it is composed of the real ``var`` (its checks, warning and gradient: the complex
gradient ``2 gy (z - mean) / (n - correction)`` comes back through ``real`` and ``imag``). The standard
deviation's gradient is 0 where it is 0, as torch's.
"""
import warnings

import numpy as np

from .._device import array_module
from ..autograd.double_backward import masked
from ..autograd.function import Function
from .complex_views import imag, real


class _Root(Function):
    """The square root of a variance, whose gradient ``gy / (2 y)`` is 0 where ``y`` is 0 (torch's std)."""

    uses_inputs, uses_output = False, True

    def forward(self, v):
        self.y = array_module(v).sqrt(v)
        return self.y

    def backward(self, gy):
        xp = array_module(gy)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where(self.y == 0, 0, gy / (2 * self.y)).astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        keep = self.y != 0
        return masked(gy / (2 * masked(self.saved_output(0, self.y), keep, 1.0)), keep)


def complex_variance(input, dim, unbiased, keepdim, correction, root=False):
    """``var`` (``std`` where ``root``) of complex ``input`` with torch's arguments, as a real tensor."""
    from .reduction import var
    parts = var(real(input), dim, unbiased, keepdim, correction=correction)
    with warnings.catch_warnings():  # the degrees-of-freedom warning once, not once per part
        warnings.simplefilter("ignore")
        parts = parts + var(imag(input), dim, unbiased, keepdim, correction=correction)
    return _Root()(parts) if root else parts


__all__ = ["complex_variance"]
