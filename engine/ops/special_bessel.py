"""Bessel and Airy functions of ``torch.special``: bessel_j0/j1/y0/y1, airy_ai, modified_bessel_i0/i1/k0/k1,
scaled_modified_bessel_k0/k1, spherical_bessel_j0 (no gradient in torch, none here: their results do not require
grad), and i0e, i1, i1e (differentiable to any order: each gradient is written with the others and i0).

J, Y and Ai are torch's own approximations (``special_cephes``); the modified Bessel functions are scipy's (Cephes'
Chebyshev expansions, the ones torch uses) with torch's edge values: I0 and I1 are NaN at +-inf, and in float32
+-inf where exp(|x|) overflows (torch multiplies by exp(|x|) in float32; scipy computes in float64).
"""
import numpy as np

from ..autograd.double_backward import constant, masked
from ..tensor import Tensor
from . import special_cephes
from ._common import xp_of
from .elementwise import _Unary, _unary, _write_out
from .special import scipy_special
from .complex_refusals import refuse_complex


def _in_float32(xp, fn, x):
    """fn(x) for float16 and bfloat16 computed in float32 and rounded, as torch's kernels do; else in x's dtype."""
    if x.dtype.itemsize < 4:
        return fn(xp, x.astype(np.float32)).astype(x.dtype)
    return fn(xp, x).astype(x.dtype, copy=False)


def _scipy(name):
    return lambda xp, x: scipy_special(xp, name)(x)


def _exp_overflows(xp, x):
    """Where exp(|x|) is infinite in x's dtype: torch's I0 and I1 are infinite there."""
    return xp.isinf(xp.exp(xp.abs(x)))


def _growing(name, odd):
    """scipy's I0 or I1 with torch's infinities: +-inf where exp(|x|) overflows, NaN at +-inf."""
    def f(xp, x):
        y = scipy_special(xp, name)(x).astype(x.dtype, copy=False)
        big = xp.copysign(np.inf, x) if odd else np.inf
        y = xp.where(_exp_overflows(xp, x), big, y)
        return xp.where(xp.isinf(x), np.nan, y)
    return f


def _spherical_j0(xp, x):
    """sin(x) / x, 1 at 0 and 0 at +-inf."""
    y = xp.where(x == 0, 1, xp.sin(x) / xp.where(x == 0, 1, x))
    return xp.where(xp.isinf(x), 0, y)


class _Plain(_Unary):
    """An elementwise function with no derivative in torch (called on detached inputs only); subclasses name the
    array function ``fn(xp, x)``."""

    uses_inputs = False

    def f(self, xp, x):
        return _in_float32(xp, self.fn, x)


class BesselJ0(_Plain):
    fn = staticmethod(special_cephes.bessel_j0)


class BesselJ1(_Plain):
    fn = staticmethod(special_cephes.bessel_j1)


class BesselY0(_Plain):
    fn = staticmethod(special_cephes.bessel_y0)


class BesselY1(_Plain):
    fn = staticmethod(special_cephes.bessel_y1)


class AiryAi(_Plain):
    fn = staticmethod(special_cephes.airy_ai)


class ModifiedBesselI0(_Plain):
    fn = staticmethod(_growing("i0", odd=False))


class ModifiedBesselI1(_Plain):
    fn = staticmethod(_growing("i1", odd=True))


class ModifiedBesselK0(_Plain):
    fn = staticmethod(_scipy("k0"))


class ModifiedBesselK1(_Plain):
    fn = staticmethod(_scipy("k1"))


class ScaledModifiedBesselK0(_Plain):
    fn = staticmethod(_scipy("k0e"))


class ScaledModifiedBesselK1(_Plain):
    fn = staticmethod(_scipy("k1e"))


class SphericalBesselJ0(_Plain):
    fn = staticmethod(_spherical_j0)


def _tensor_input(name, input):
    """torch's TypeError for a non-tensor input of ``torch.special.<name>``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _float_only(name, input):
    """torch's error for the half and complex types, which these kernels do not take."""
    _tensor_input(name, input)
    if input.dtype.is_floating_point and input.dtype.itemsize < 4 or input.dtype.is_complex:
        raise NotImplementedError(f"\"{name}_{input.device.type}\" not implemented for '{input.dtype.title}'")


def _without_grad(name, fn_cls):
    """``torch.special.<name>(input, *, out=None)`` for a function torch does not differentiate."""
    def op(input, *, out=None):
        _float_only(name, input)
        return _write_out(_unary(fn_cls, input.detach()), out, name)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} (``torch.special.{name}``); not differentiable, as in torch."
    return op


bessel_j0 = _without_grad("bessel_j0", BesselJ0)
bessel_j1 = _without_grad("bessel_j1", BesselJ1)
bessel_y0 = _without_grad("bessel_y0", BesselY0)
bessel_y1 = _without_grad("bessel_y1", BesselY1)
airy_ai = _without_grad("airy_ai", AiryAi)
modified_bessel_i0 = _without_grad("modified_bessel_i0", ModifiedBesselI0)
modified_bessel_i1 = _without_grad("modified_bessel_i1", ModifiedBesselI1)
modified_bessel_k0 = _without_grad("modified_bessel_k0", ModifiedBesselK0)
modified_bessel_k1 = _without_grad("modified_bessel_k1", ModifiedBesselK1)
scaled_modified_bessel_k0 = _without_grad("scaled_modified_bessel_k0", ScaledModifiedBesselK0)
scaled_modified_bessel_k1 = _without_grad("scaled_modified_bessel_k1", ScaledModifiedBesselK1)
spherical_bessel_j0 = _without_grad("spherical_bessel_j0", SphericalBesselJ0)


class I0e(_Unary):
    """exp(-|x|) I0(x); the gradient is i1e(x) - sign(x) i0e(x)."""

    uses_output = True

    def f(self, xp, x):
        return _in_float32(xp, _scipy("i0e"), x)

    def backward(self, gy):
        xp = xp_of(gy)
        return gy * (_in_float32(xp, _scipy("i1e"), self.x) - xp.sign(self.x) * self.y)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy * (i1e(x) - constant(xp_of(self.x).sign(self.x)) * self.saved_output(0, self.y))


class I1(_Unary):
    """I1(x), odd; the gradient is i0(x) - i1(x) / x, 1/2 at 0."""

    uses_output = True

    def f(self, xp, x):
        return _in_float32(xp, _growing("i1", odd=True), x)

    def backward(self, gy):
        xp = xp_of(gy)
        x = self.x
        slope = _in_float32(xp, _scipy("i0"), x) - self.y / xp.where(x == 0, 1, x)
        return gy * xp.where(x == 0, 0.5, slope).astype(x.dtype, copy=False)

    def backward_tensors(self, gy):
        from .special import i0
        nonzero = self.x != 0
        x = self.saved_input(0, self.x)
        slope = i0(x) - self.saved_output(0, self.y) / masked(x, nonzero, 1.0)
        return gy * masked(slope, nonzero, 0.5)


class I1e(_Unary):
    """exp(-|x|) I1(x); the gradient is i0e(x) - i1e(x) (sign(x) + 1/x), 1/2 at 0."""

    uses_output = True

    def f(self, xp, x):
        return _in_float32(xp, _scipy("i1e"), x)

    def backward(self, gy):
        xp = xp_of(gy)
        x = self.x
        slope = _in_float32(xp, _scipy("i0e"), x) - self.y * (xp.sign(x) + 1 / xp.where(x == 0, 1, x))
        return gy * xp.where(x == 0, 0.5, slope).astype(x.dtype, copy=False)

    def backward_tensors(self, gy):
        nonzero = self.x != 0
        x = self.saved_input(0, self.x)
        sign = constant(xp_of(self.x).sign(self.x))
        slope = i0e(x) - self.saved_output(0, self.y) * (sign + 1 / masked(x, nonzero, 1.0))
        return gy * masked(slope, nonzero, 0.5)


def i0e(input, *, out=None):
    """The exponentially scaled modified Bessel function of order 0, exp(-|x|) I0(x)."""
    _tensor_input("i0e", input)
    refuse_complex("i0e", input)
    return _write_out(_unary(I0e, input), out)


def i1(input, *, out=None):
    """The modified Bessel function of the first kind of order 1."""
    _tensor_input("i1", input)
    refuse_complex("i1", input)
    return _write_out(_unary(I1, input), out)


def i1e(input, *, out=None):
    """The exponentially scaled modified Bessel function of order 1, exp(-|x|) I1(x)."""
    _tensor_input("i1e", input)
    refuse_complex("i1e", input)
    return _write_out(_unary(I1e, input), out)


__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "i0e", "i1", "i1e"]
