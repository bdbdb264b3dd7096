"""Complex tensors seen as real ones and back: ``real`` / ``imag`` (writable views, as numpy's and torch's),
``view_as_real`` / ``view_as_complex``, and the conjugates (``conj``, ``conj_physical``, ``H``, ``mH``,
``adjoint``).

torch's ``conj()`` is lazy: a view with a conjugate bit that later ops resolve. The engine has no such bit:
``conj()`` of a complex tensor is a conjugated copy, so ``is_conj()`` is always False and ``resolve_conj()``
gives the tensor itself; a write into ``z.conj()`` does not reach ``z`` as it would in torch. Of a real tensor
all of these give the tensor itself, as torch does.

Gradients follow torch's convention (complex_grad): ``real`` sends ``gy`` back as ``gy + 0j``, ``imag`` as
``1j * gy``, ``conj`` as ``conj(gy)``.
"""
from .. import _dtype
from .._device import array_module
from ..autograd.function import Function
from ..tensor import register_method
from . import real_tensors


class Real(Function):
    """The real parts of a complex tensor, as a view of it."""

    uses_inputs, is_view, moves_only = False, True, True

    def forward(self, z):
        self.complex_dtype = z.dtype
        return z.real

    def backward(self, gy):
        return gy.astype(self.complex_dtype)

    def backward_tensors(self, gy):
        from .._dtype import from_numpy_dtype
        return gy.to(from_numpy_dtype(self.complex_dtype))


class Imag(Real):
    """The imaginary parts of a complex tensor, as a view of it."""

    def forward(self, z):
        self.complex_dtype = z.dtype
        return z.imag

    def backward(self, gy):
        g = array_module(gy).zeros(gy.shape, self.complex_dtype)
        g.imag = gy
        return g

    def backward_tensors(self, gy):
        from .complex_math import complex
        return complex(gy * 0, gy)


def real(input):
    """The real parts: a view of a complex tensor (writes reach it), a real tensor itself."""
    return Real()(input) if input.is_complex() else input


def imag(input):
    """The imaginary parts, a view of a complex tensor; torch's error for a real one."""
    if not input.is_complex():
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Imag()(input)


def _set_part(part):
    def setter(self, value):
        getattr(self, part).copy_(value)
    return setter


class ViewAsReal(Function):
    """A complex tensor of shape S as a real one of shape S + (2,), sharing its memory (any strides)."""

    uses_inputs, is_view, moves_only = False, True, True

    def forward(self, z):
        self.complex_dtype = z.dtype
        parts = z.real  # a real view at the same address, whose strides are z's
        return array_module(z).lib.stride_tricks.as_strided(parts, z.shape + (2,),
                                                              z.strides + (parts.itemsize,))

    def backward(self, gy):
        return _as_complex(gy).astype(self.complex_dtype, copy=False)

    def backward_tensors(self, gy):
        return view_as_complex(gy.contiguous())


def _as_complex(x):
    """Real ``x`` of shape S + (2,) as complex of shape S (a view where the last axis is dense, else a copy)."""
    if x.strides[-1] != x.itemsize:
        x = array_module(x).ascontiguousarray(x)
    complex_type = {4: "complex64", 8: "complex128"}[x.itemsize]
    return x.view(complex_type)[..., 0]


class ViewAsComplex(Function):
    """A real tensor of shape S + (2,) as a complex one of shape S, sharing its memory."""

    uses_inputs, is_view, moves_only = False, True, True

    def forward(self, x):
        self.real_dtype = x.dtype
        return _as_complex(x)

    def backward(self, gz):
        return ViewAsReal().forward(gz).astype(self.real_dtype, copy=False)

    def backward_tensors(self, gz):
        return view_as_real(gz)


def view_as_real(input):
    """``input`` (complex, shape S) as real pairs (shape S + (2,)): a view, so writes reach ``input``."""
    if not input.is_complex():
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return ViewAsReal()(input)


def view_as_complex(input):
    """``input`` (float32 or float64, shape S + (2,)) as complex numbers (shape S): a view, under torch's
    conditions on its last dimension, strides and offset."""
    if input.dtype.name not in ("float32", "float64"):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double tensors, but got a "
                           f"tensor of scalar type: {input.dtype.title}")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input.stride()[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return ViewAsComplex()(input)


def view_as_real_copy(input):
    """``view_as_real`` as a new tensor (torch's ``*_copy`` forms of views)."""
    return view_as_real(input).clone()


def view_as_complex_copy(input):
    """``view_as_complex`` as a new tensor."""
    return view_as_complex(input).clone()


class Conj(Function):
    """The complex conjugate, as a new tensor (the engine has no lazy conjugate bit)."""

    uses_inputs = False

    def forward(self, z):
        return z.conj()

    def backward(self, gy):
        return gy.conj()

    def backward_tensors(self, gy):
        return conj(gy)


def conj(input):
    """The conjugate: a copy for a complex tensor (``is_conj()`` stays False), a real tensor itself."""
    return Conj()(input) if input.is_complex() else input


def conj_physical(input):
    """The conjugate, materialized (the same as ``conj`` here)."""
    return conj(input)


def conj_physical_(input):
    """Conjugate a complex tensor in place (a real one is left as it is)."""
    if input.is_complex():
        input.imag.neg_()
    return input


def adjoint(input):
    """The conjugate transpose of the last two dims."""
    return conj(real_tensors.adjoint(input))


def _conjugate_transpose(self):
    """``x.H``: the conjugate transpose of a matrix (0 or 2 dims)."""
    return conj(real_tensors._conjugate_transpose(self))


def _batched_conjugate_transpose(self):
    """``x.mH``: the conjugate transpose of the last two dims."""
    return conj(real_tensors._batched_conjugate_transpose(self))


def _cfloat(self, memory_format=None):
    """``x.cfloat()``: ``x`` as complex64."""
    return self.to(_dtype.complex64, memory_format=memory_format)


def _cdouble(self, memory_format=None):
    """``x.cdouble()``: ``x`` as complex128."""
    return self.to(_dtype.complex128, memory_format=memory_format)


def _chalf(self):
    """``x.chalf()``: refused in one line (numpy has no complex32)."""
    raise TypeError(_dtype.NO_COMPLEX32)


for _name in ("conj", "conj_physical", "conj_physical_", "adjoint", "view_as_real", "view_as_complex"):
    register_method(globals()[_name], _name)
register_method(_cfloat, "cfloat")
register_method(_cdouble, "cdouble")
register_method(_chalf, "chalf")
register_method(property(real, _set_part("real")), "real")
register_method(property(imag, _set_part("imag")), "imag")
register_method(property(_conjugate_transpose), "H")
register_method(property(_batched_conjugate_transpose), "mH")

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "view_as_real_copy", "view_as_complex_copy", "conj",
           "conj_physical", "conj_physical_", "adjoint"]
