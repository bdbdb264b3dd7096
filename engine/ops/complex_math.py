"""Complex numbers built from and taken apart into real ones: ``complex(real, imag)``, ``polar(abs, angle)``,
``angle`` and ``sgn``, with torch's gradients (complex_grad): a real input of a complex result gets
the part of the complex gradient along its own direction (``Re(conj(gz) * dz/dt)``)."""
from .._device import array_module
from .._dtype import from_numpy_dtype
from ..autograd.double_backward import constant, masked
from ..autograd.function import Function
from ..tensor import register_method
from . import complex_views, real_tensors
from ._common import check_broadcast, xp_of
from .elementwise import _quiet, _torch_ordered, _write_out
from ..amp import autocast_mode


def _check_pair(a, b, kind):
    """torch's checks of ``complex`` / ``polar`` inputs: both Half, Float or Double, of one dtype."""
    if not (a.is_floating_point() and b.is_floating_point()) or "bfloat16" in (a.dtype.name, b.dtype.name):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {a.dtype.title} and "
                           f"{b.dtype.title}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {a.dtype.title} but got scalar type {b.dtype.title} "
                           f"for second argument")
    if a.dtype.name == "float16":
        raise RuntimeError(f"{kind} of Half tensors needs complex32, which engine does not have")
    check_broadcast(a, b)


def _complex_type(real_dtype):
    return {"float32": "complex64", "float64": "complex128"}[real_dtype.name]


def _complex_result(a, b):
    """The uninitialised complex result of a pointwise op over real ``a`` and ``b``, laid out as torch's (the first
    operand's order)."""
    dtype = _complex_type(_real_dtype(a))
    z = _torch_ordered((a, b), (a, b), dtype)
    return xp_of(a, b).empty(xp_of(a, b).broadcast_shapes(a.shape, b.shape), dtype) if z is None else z


class Complex(Function):
    """``real + 1j * imag`` (broadcast)."""

    uses_inputs = False

    def forward(self, re, im):
        z = _complex_result(re, im)
        z.real, z.imag = re, im
        return z

    def backward(self, gz):
        return gz.real, gz.imag

    def backward_tensors(self, gz):
        return complex_views.real(gz), complex_views.imag(gz)


def _real_dtype(array):
    return from_numpy_dtype(array.dtype)


class Polar(Function):
    """``abs * (cos(angle) + 1j * sin(angle))``."""

    def forward(self, r, theta):
        xp = xp_of(r, theta)
        self.r, self.theta = r, theta
        z = _complex_result(r, theta)
        z.real, z.imag = r * xp.cos(theta), r * xp.sin(theta)
        return z

    def backward(self, gz):
        xp = array_module(gz)
        cos, sin = xp.cos(self.theta), xp.sin(self.theta)
        # Re(conj(gz) * dz/dt), dz/dtheta = i z; for abs torch takes sgn(z) = sign(abs) e^(i theta) (not
        # e^(i theta)): the two differ only for negative magnitudes, outside polar's domain, and at 0
        g_r = (gz.real * cos + gz.imag * sin) * xp.sign(self.r)
        g_theta = self.r * (gz.imag * cos - gz.real * sin)
        return g_r, g_theta

    def backward_tensors(self, gz):
        r, theta = self.saved_input(0, self.r), self.saved_input(1, self.theta)
        re, im = complex_views.real(gz), complex_views.imag(gz)
        cos, sin = theta.cos(), theta.sin()
        return (re * cos + im * sin) * constant(array_module(self.r).sign(self.r)), r * (im * cos - re * sin)


def complex(real, imag, *, out=None):
    """The complex tensor ``real + 1j * imag`` (both float32 or both float64; broadcast)."""
    _check_pair(real, imag, "complex")
    return _write_out(Complex()(real, imag), out)


@autocast_mode.float32("cpu")
def polar(abs, angle, *, out=None):
    """The complex tensor of magnitudes ``abs`` and arguments ``angle``."""
    _check_pair(abs, angle, "polar")
    return _write_out(Polar()(abs, angle), out)


class ComplexAngle(Function):
    """The argument of complex numbers (real result); its gradient ``gy * 1j * z / |z|^2``, 0 at 0."""

    def forward(self, z):
        self.z = z
        return array_module(z).angle(z)

    def backward(self, gy):
        xp = array_module(gy)
        with _quiet():
            norm = self.z.real * self.z.real + self.z.imag * self.z.imag
            g = gy * (1j * self.z) / norm
        return xp.where(norm == 0, 0, g).astype(self.z.dtype, copy=False)

    def backward_tensors(self, gy):
        z, keep = self.saved_input(0, self.z), self.z != 0
        return masked(gy * z * 1j / masked(z.abs() ** 2, keep, 1.0), keep)


def angle(input):
    """The argument of each element: of a complex tensor in (-pi, pi], of a real one pi or 0 (NaN kept)."""
    return ComplexAngle()(input) if input.is_complex() else real_tensors.angle(input)


class Sgn(Function):
    """``z / |z|`` (0 at 0). Not holomorphic: its gradient is ``(gy - s * Re(conj(s) * gy)) / |z|``."""

    uses_output = True

    def forward(self, z):
        xp = array_module(z)
        self.z, self.magnitude = z, xp.abs(z)
        with _quiet():
            s = xp.where(self.magnitude == 0, 0, z / self.magnitude).astype(z.dtype, copy=False)
        self.s = s
        return s

    def backward(self, gy):
        xp = array_module(gy)
        along = (self.s.conj() * gy).real
        with _quiet():
            g = (gy - self.s * along) / self.magnitude
        return xp.where(self.magnitude == 0, 0, g).astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        z, s, keep = self.saved_input(0, self.z), self.saved_output(0, self.s), self.magnitude != 0
        along = complex_views.real(complex_views.conj(s) * gy)
        return masked((gy - s * along) / masked(z.abs(), keep, 1.0), keep)


def sgn(input):
    """``z / |z|`` for complex tensors (0 at 0), the sign for real ones."""
    return Sgn()(input) if input.is_complex() else input.sign()


for _name in ("angle", "sgn"):
    register_method(globals()[_name], _name)

__all__ = ["complex", "polar", "angle", "sgn"]
