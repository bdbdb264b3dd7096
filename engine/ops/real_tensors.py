"""PyTorch's complex-number API as it answers for real tensors (every engine tensor is real and dense:
``to_dense`` gives the tensor itself), and the ``torch.is_*`` forms of the tensor queries.

``x.conj()``, ``conj_physical``, ``resolve_conj``, ``resolve_neg`` and ``x.real`` give ``x`` itself, as PyTorch does for
a real tensor; ``x.imag`` is PyTorch's error; the conjugate transposes (``H``, ``mH``, ``adjoint``)
are plain transposes.
"""
import math

from .._device import array_module
from ..autograd.function import Function
from ..tensor import register_method
from ._common import float_dtype
from .shape import transpose


def conj(input):
    """``input`` itself: the conjugate of a real tensor."""
    return input


def conj_physical(input):
    """``input`` itself (the materialised conjugate of a real tensor)."""
    return input


def conj_physical_(input):
    return input


def resolve_conj(input):
    return input


def resolve_neg(input):
    return input


def real(input):
    """``input`` itself: a real tensor's real part."""
    return input


def imag(input):
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def to_dense(input, dtype=None, *, masked_grad=None):
    """``input`` itself (in ``dtype`` if given): engine tensors are dense."""
    return input if dtype is None else input.to(dtype)


def adjoint(input):
    """The transpose of the last two dims (the conjugate transpose of a real tensor)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return transpose(input, -2, -1)


def _conjugate_transpose(self):
    """``x.H``: the transpose of a matrix (PyTorch requires 0 or 2 dims)."""
    if self.ndim not in (0, 2):
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.{hint}")
    return self if self.ndim == 0 else transpose(self, 0, 1)


def _batched_conjugate_transpose(self):
    """``x.mH``: the transpose of the last two dims (at least 2 dims)."""
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def is_complex(input):
    return input.is_complex()


def is_conj(input):
    return input.is_conj()


def is_neg(input):
    return input.is_neg()


def is_nonzero(input):
    return input.is_nonzero()


def is_same_size(input, other):
    return input.is_same_size(other)


def is_signed(input):
    return input.is_signed()


def is_inference(input):
    return input.is_inference()


for _name in ("conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "adjoint", "to_dense"):
    register_method(globals()[_name], _name)
register_method(property(real), "real")
register_method(property(imag), "imag")
register_method(property(_conjugate_transpose), "H")
register_method(property(_batched_conjugate_transpose), "mH")

__all__ = ["conj", "conj_physical", "conj_physical_", "resolve_conj", "resolve_neg", "real", "imag", "adjoint",
           "is_complex", "is_conj", "is_neg", "is_nonzero", "is_same_size", "is_signed", "is_inference"]


class Angle(Function):
    """The argument of real numbers: pi for negatives, 0 otherwise, NaN kept; its gradient is zero, as PyTorch's
    for real inputs."""

    uses_inputs = False

    def forward(self, x):
        xp = array_module(x)
        return xp.where(x < 0, x.dtype.type(math.pi), xp.where(xp.isnan(x), x, x.dtype.type(0)))

    def backward(self, gy):
        return (array_module(gy).zeros_like(gy),)


def angle(input):
    """The argument of each element (integers give the default float type)."""
    return Angle()(input if input.is_floating_point() else input.to(float_dtype(input.dtype)))


register_method(angle, "angle")
__all__ += ["angle"]
