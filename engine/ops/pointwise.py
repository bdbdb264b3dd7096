"""More elementwise math with PyTorch's dtypes and gradients: hypot, copysign, xlogy, logaddexp,
fmax/fmin, float_power, heaviside, gcd/lcm, bit shifts, ldexp, frexp, nextafter, clamp_min/clamp_max,
inverse hyperbolics, sinc, logit, angle conversions, sign tests and PyTorch's other names for ops.

Built on ``elementwise``'s ``_Binary``/``_Unary`` Functions and its promotion helpers, so these ops
broadcast and promote like ``add`` and ``exp``. The in-place forms of the binary ones are made in
``inplace``.
"""
import math

import numpy as np

from .. import _dtype
from ..autograd.double_backward import constant, masked
from ..autograd.function import Function
from ..tensor import Tensor, register_method
from ._common import as_operand, cast, result_dtype, xp_of
from .elementwise import Maximum, _Binary, _Unary, _binary, _torch_ordered, _unary, _unary_pair, atan2, clamp, div, mul, pow, sub
from .reduction import return_type
from . import complex_math, complex_views  # complex_views also makes real, imag, conj... methods of the complex forms
from .complex_refusals import refuse_complex

_frexp_result = return_type("frexp", ("mantissa", "exponent"))


# ---- binary ---------------------------------------------------------------------------------------
class Hypot(_Binary):
    """sqrt(a**2 + b**2) without overflow; the gradient is (a, b) / result."""

    def forward(self, a, b):
        inputs = a, b
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        self.a, self.b = a, b
        self.y = xp_of(a, b).hypot(a, b, out=_torch_ordered(inputs, (a, b)))
        return self.y

    def backward(self, gy):
        return gy * self.a / self.y, gy * self.b / self.y

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * self.saved_input(0, self.a) / y, gy * self.saved_input(1, self.b) / y


class Copysign(_Binary):
    """|a| with the sign of b; the gradient to a is result / a (0 where a is 0), none to b."""

    def forward(self, a, b):
        inputs = a, b
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        xp = xp_of(a, b)
        self.a = a
        self.y = xp.copysign(a, b, out=_torch_ordered(inputs, (a, b)))
        return self.y

    def backward(self, gy):
        xp = xp_of(gy)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = xp.where(self.a == 0, 0, self.y / self.a)
        return gy * ratio, xp.zeros_like(gy)

    def backward_tensors(self, gy):
        """Linear in gy: the ratio (+-1, or 0 at a == 0) is constant."""
        xp = xp_of(gy._data)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = xp.where(self.a == 0, 0, self.y / self.a).astype(gy._data.dtype, copy=False)
        return gy * constant(ratio), constant(xp.zeros_like(gy._data))


class Xlogy(_Binary):
    """a * log(b), and 0 where a is 0 (unless b is NaN)."""

    def forward(self, a, b):
        xp = xp_of(a, b)
        # a Python number rounded to the result dtype first, as torch's (a float16 4.98e-16 is 0, so 0 * log(-4) is 0)
        a, b = (xp.asarray(cast(v, self.dtype), dtype=self.dtype) for v in (a, b))
        self.a, self.b = a, b
        self.zero = (a == 0) & ~xp.isnan(b)
        self.grad_zero = (a == 0) & (b <= 0)  # torch's d/da is xlogy(grad, b), zeroed only where a is 0 and b <= 0
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where(self.zero, 0, a * xp.log(b)).astype(self.dtype, copy=False)

    def backward(self, gy):
        xp = xp_of(gy)
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = xp.where(self.grad_zero | ((gy == 0) & ~xp.isnan(self.b)), 0, gy * xp.log(self.b))
            gb = gy * self.a / self.b
        return ga, gb

    def backward_tensors(self, gy):
        a, b = self.saved_input(0, self.a), self.saved_input(1, self.b)
        ga = masked(gy.xlogy(b), ~self.grad_zero) if self.needs_input_grad[0] else None
        gb = gy * a / b if self.needs_input_grad[1] else None
        return ga, gb


class LogAddExp(_Binary):
    """log(exp(a) + exp(b)) computed without overflow; the gradients are softmax weights. Complex operands (numpy's
    ufunc takes none) shift by the one with the larger real part, as torch's kernel does."""

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        self.a, self.b = a, b
        xp = xp_of(a, b)
        if a.dtype.kind == "c":
            a_larger = a.real >= b.real
            larger, smaller = xp.where(a_larger, a, b), xp.where(a_larger, b, a)
            self.y = larger + xp.log1p(xp.exp(smaller - larger))
        else:
            with np.errstate(invalid="ignore"):  # a NaN operand gives NaN without a word, as in torch
                self.y = xp.logaddexp(a, b)
        return self.y

    def backward(self, gy):
        xp = xp_of(gy)
        return gy * xp.exp(self.a - self.y), gy * xp.exp(self.b - self.y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * (self.saved_input(0, self.a) - y).exp(), gy * (self.saved_input(1, self.b) - y).exp()


class LogAddExp2(LogAddExp):
    """log2(2**a + 2**b); the gradients are base-2 softmax weights."""

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        self.a, self.b = a, b
        self.y = xp_of(a, b).logaddexp2(a, b)
        return self.y

    def backward(self, gy):
        xp = xp_of(gy)
        return gy * xp.exp2(self.a - self.y), gy * xp.exp2(self.b - self.y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * 2.0 ** (self.saved_input(0, self.a) - y), gy * 2.0 ** (self.saved_input(1, self.b) - y)


class FMax(Maximum):
    """The larger operand, ignoring NaN; gradients as ``maximum``'s."""

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        self.a, self.b = a, b
        return xp_of(a, b).fmax(a, b)


class FMin(FMax):
    """The smaller operand, ignoring NaN (gradients as ``FMax``'s, mirrored)."""

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        self.a, self.b = a, b
        return xp_of(a, b).fmin(a, b)

    @staticmethod
    def loses(a, b):
        return a > b


class Heaviside(_Binary):
    """0 where a < 0, ``values`` where a == 0, 1 where a > 0 (not differentiable, as in PyTorch)."""

    def forward(self, a, values):
        return xp_of(a).where(a == 0, values, a > 0).astype(self.dtype, copy=False)


class _IntegerBinary(_Binary):
    """gcd and lcm: integer ufuncs, not differentiable."""

    def __init__(self, dtype, ufunc):
        super().__init__(dtype)
        self.ufunc = ufunc

    def forward(self, a, b):
        inputs = a, b
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        return getattr(xp_of(a, b), self.ufunc)(a, b, out=_torch_ordered(inputs, (a, b)))


def _check_kinds(name, dt, kinds, device="cpu"):
    """PyTorch's error for a dtype the op has no kernel for (``"hypot_cpu" not implemented for 'Long'``); kinds
    are numpy's letters, "f" taking bfloat16 too."""
    kind = "f" if dt.is_floating_point else dt.np.kind
    if kind not in kinds:
        raise NotImplementedError(f"\"{name}_{device}\" not implemented for '{dt.title}'")


def _device_type(*operands):
    return next((t.device.type for t in operands if isinstance(t, Tensor)), "cpu")


def _float_only(name, fn_cls, input, other):
    dt = result_dtype(as_operand(input), as_operand(other))
    _check_kinds(name, dt, "f", _device_type(input, other))
    return _binary(fn_cls, input, other)


def hypot(input, other):
    """sqrt(input**2 + other**2), elementwise (floating types only, as in PyTorch)."""
    return _float_only("hypot", Hypot, input, other)


def logaddexp(input, other):
    """log(exp(input) + exp(other)) without overflow (floating and complex types, as torch's)."""
    dt = result_dtype(as_operand(input), as_operand(other))
    _check_kinds("logaddexp", dt, "fc", _device_type(input, other))
    return _binary(LogAddExp, input, other)


def logaddexp2(input, other):
    """log2(2**input + 2**other) without overflow (floating types only)."""
    return _float_only("logaddexp2", LogAddExp2, input, other)


def copysign(input, other):
    """The magnitude of ``input`` with the sign of ``other``; integers give the default float type."""
    refuse_complex("copysign", input, other)
    return _binary(Copysign, input, other, float_result=True)


def xlogy(input, other):
    """input * log(other), with 0 where input is 0 (``torch.xlogy``); integers give floats."""
    refuse_complex("xlogy", input, other)
    return _binary(Xlogy, input, other, float_result=True)


def fmax(input, other):
    """The elementwise maximum where a NaN loses to a number (``maximum`` propagates NaN)."""
    refuse_complex("fmax", input, other)
    return _binary(FMax, input, other)


def fmin(input, other):
    """The elementwise minimum where a NaN loses to a number."""
    refuse_complex("fmin", input, other)
    return _binary(FMin, input, other)


def float_power(input, exponent):
    """``input ** exponent`` computed in float64, or complex128 where an operand is complex, whatever the
    operands' types (``torch.float_power``)."""
    wide = _dtype.complex128 if result_dtype(as_operand(input), as_operand(exponent)).is_complex else _dtype.float64
    return pow(_widened(input, wide), _widened(exponent, wide))


def _widened(x, wide):
    if isinstance(x, Tensor):
        return x.to(wide)
    return complex(x) if wide.is_complex else float(x)


def heaviside(input, values):
    """The Heaviside step of ``input`` taking ``values`` at 0; both must share one dtype."""
    refuse_complex("heaviside", input, values)
    values = as_operand(values, like=input)
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _binary(Heaviside, input, values)


def _integer_op(name):
    def op(input, other):
        dt = result_dtype(as_operand(input), as_operand(other))
        _check_kinds(name, dt, "iu", _device_type(input, other))
        return _binary(_IntegerBinary, input, other, ufunc=name)
    op.__name__ = name
    op.__doc__ = f"The elementwise {name} of two integer tensors (``torch.{name}``)."
    return op


gcd = _integer_op("gcd")
lcm = _integer_op("lcm")


class Shift(_Binary):
    """Bit shifts of integers; shifting by the width or more gives 0 (left) or the sign (right), as
    PyTorch does (C leaves it undefined)."""

    def __init__(self, dtype, left):
        super().__init__(dtype)
        self.left = left

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        xp = xp_of(a, b)
        bits = self.dtype.itemsize * 8
        shift = xp.asarray(xp.minimum(b, bits - 1), dtype=self.dtype)
        if self.left:
            return xp.where(b >= bits, 0, xp.left_shift(a, shift)).astype(self.dtype, copy=False)
        if self.dtype.kind == "u":  # the sign an over-wide shift leaves is 0 for unsigned types
            return xp.where(b >= bits, 0, xp.right_shift(a, shift)).astype(self.dtype, copy=False)
        return xp.right_shift(a, shift)


def _shift(name, kernel, left):
    def op(input, other):
        dt = result_dtype(as_operand(input), as_operand(other))
        _check_kinds(kernel, dt, "iu", _device_type(input, other))
        return _binary(Shift, input, other, left=left)
    op.__name__ = name
    op.__doc__ = f"``input {'<<' if left else '>>'} other`` for integer tensors (``torch.{name}``)."
    return op


bitwise_left_shift = _shift("bitwise_left_shift", "lshift", True)
bitwise_right_shift = _shift("bitwise_right_shift", "rshift", False)


class NextAfter(_Binary):
    """The next representable number after ``a`` towards ``b`` (not differentiable, as in PyTorch)."""

    def forward(self, a, b):
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        return xp_of(a, b).nextafter(a, b)


def nextafter(input, other):
    """The next floating-point value after ``input`` towards ``other`` (floating types only)."""
    refuse_complex("nextafter", input, other)
    return _float_only("nextafter", NextAfter, input, other)


class Frexp(Function):
    """Mantissa in [0.5, 1) (with the sign) and int32 exponent: input = mantissa * 2 ** exponent."""

    def forward(self, x):
        mantissa, exponent = xp_of(x).frexp(x)
        return mantissa, exponent.astype(np.int32)


def frexp(input):
    """``(mantissa, exponent)`` with ``input == mantissa * 2 ** exponent`` (floating inputs only)."""
    if not input.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return _frexp_result(*Frexp()(input))


def ldexp(input, other):
    """input * 2 ** other. As torch: a floating input with an integer exponent keeps its type and is exact (no
    2 ** other rounded to float16 first), a bool exponent there is refused; otherwise input * pow(2.0, other)."""
    other = as_operand(other, like=input)
    if isinstance(other, Tensor) and input.dtype.is_floating_point and _dtype.category(other.dtype) < 2:
        if other.dtype is _dtype.bool_:
            raise NotImplementedError(f"\"ldexp_{_device_type(input)}_exp\" not implemented for 'Bool'")
        return mul(input.double(), pow(2.0, other.double())).to(input.dtype)
    return mul(input, pow(2.0, other))


def rsub(input, other, *, alpha=1):
    """other - alpha * input (``torch.rsub``)."""
    return sub(as_operand(other, like=input), input, alpha=alpha)


divide, multiply, subtract = div, mul, sub


def clamp_min(input, min):
    """``clamp(input, min=min)``; ``min`` may be a tensor."""
    return clamp(input, min=min)


def clamp_max(input, max):
    """``clamp(input, max=max)``; ``max`` may be a tensor."""
    return clamp(input, max=max)


# ---- unary ----------------------------------------------------------------------------------------
class Asinh(_Unary):
    f = staticmethod(lambda xp, x: xp.arcsinh(x))

    def backward(self, gy):
        return gy / xp_of(gy).sqrt(self.x * self.x + 1)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy / (x * x + 1).sqrt()


class Acosh(_Unary):
    """acosh; its derivative 1 / sqrt(x^2 - 1) is, for complex x on acosh's principal branch,
    1 / (sqrt(x - 1) sqrt(x + 1)), which has the opposite sign where Re x < 0."""
    f = staticmethod(lambda xp, x: xp.arccosh(x))

    def backward(self, gy):
        xp = xp_of(gy)
        with np.errstate(invalid="ignore"):
            if self.x.dtype.kind == "c":
                return gy / (xp.sqrt(self.x - 1) * xp.sqrt(self.x + 1))
            return gy / xp.sqrt(self.x * self.x - 1)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        if x.is_complex():
            return gy / ((x - 1).sqrt() * (x + 1).sqrt())
        return gy / (x * x - 1).sqrt()


class Atanh(_Unary):
    f = staticmethod(lambda xp, x: xp.arctanh(x))

    def backward(self, gy):
        with np.errstate(divide="ignore"):
            return gy / (1 - self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy / (1 - x * x)


class Sinc(_Unary):
    """sin(pi x) / (pi x), 1 at 0; float16 and bfloat16 computed in float32, as torch's."""

    f = staticmethod(lambda xp, x: xp.sinc(x.astype(np.float32)).astype(x.dtype) if x.dtype.itemsize < 4
                     else xp.sinc(x))

    def backward(self, gy):
        xp = xp_of(gy)
        px = math.pi * self.x
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (xp.cos(px) * px - xp.sin(px)) / (px * self.x)
        return gy * xp.where(self.x == 0, 0, d)

    def backward_tensors(self, gy):
        """(cos(pi x) pi x - sin(pi x)) / (pi x^2), 0 at x == 0 (a constant mask, as torch's)."""
        nonzero = self.x != 0
        x = masked(self.saved_input(0, self.x), nonzero, 1.0)
        px = x * math.pi
        return masked(gy * ((px.cos() * px - px.sin()) / (px * x)), nonzero)


class _Scale(_Unary):
    """Multiplication by a constant (``deg2rad``, ``rad2deg``)."""

    uses_inputs = False
    factor = 1.0

    def f(self, xp, x):
        return x * self.dtype.type(self.factor)

    def backward(self, gy):
        return gy * self.factor

    def backward_tensors(self, gy):
        return gy * self.factor


class Deg2Rad(_Scale):
    factor = math.pi / 180


class Rad2Deg(_Scale):
    factor = 180 / math.pi


class Logit(_Unary):
    """log(x / (1 - x)), with x first clamped to [eps, 1 - eps] when eps is given."""

    def __init__(self, dtype, eps=None):
        super().__init__(dtype)
        self.eps = eps

    def f(self, xp, x):
        if self.eps is not None:  # torch's x < eps ? eps : (x > 1 - eps ? 1 - eps : x), also for eps > 0.5
            x = xp.where(x < self.eps, self.eps, xp.where(x > 1 - self.eps, 1 - self.eps, x)).astype(x.dtype,
                                                                                                   copy=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.log(x / (1 - x))

    def backward(self, gy):
        x = self.x
        with np.errstate(divide="ignore", invalid="ignore"):
            g = gy / (x * (1 - x))
        if self.eps is None:
            return g
        return xp_of(gy).where((x < self.eps) | (x > 1 - self.eps), 0, g)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        g = gy / (x * (1 - x))
        if self.eps is None:
            return g
        return masked(g, ~((self.x < self.eps) | (self.x > 1 - self.eps)))


asinh, asinh_ = _unary_pair("asinh", Asinh)
acosh, acosh_ = _unary_pair("acosh", Acosh)
atanh, atanh_ = _unary_pair("atanh", Atanh)
sinc, sinc_ = _unary_pair("sinc", Sinc)
deg2rad, deg2rad_ = _unary_pair("deg2rad", Deg2Rad)
rad2deg, rad2deg_ = _unary_pair("rad2deg", Rad2Deg)
arcsinh, arccosh, arctanh, arctan2 = asinh, acosh, atanh, atan2


def logit(input, eps=None):
    """log(p / (1 - p)); with ``eps`` the input is clamped to [eps, 1 - eps] first."""
    refuse_complex("logit", input)
    return _unary(Logit, input, eps=eps)


def logit_(input, eps=None):
    refuse_complex("logit", input)
    return _unary(Logit, input, inplace=True, eps=eps)


def sgn(input):
    """The sign of each element: ``z / |z|`` for complex tensors, ``sign`` for real ones."""
    return complex_math.sgn(input)


def positive(input):
    """``input`` itself (``+x``); refused for bool tensors, as in PyTorch."""
    if input.dtype is _dtype.bool_:
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported.")
    return input


class _Test(Function):
    """An elementwise predicate giving a bool tensor (not differentiable)."""

    def __init__(self, test):
        self.test = test

    def forward(self, x):
        return self.test(xp_of(x), x)


def signbit(input):
    """True where the sign bit is set (negative numbers and -0.0)."""
    refuse_complex("signbit", input)
    return _Test(lambda xp, x: xp.signbit(x))(input)


def isposinf(input):
    refuse_complex("isposinf", input)
    return _Test(lambda xp, x: xp.isposinf(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool))(input)


def isneginf(input):
    refuse_complex("isneginf", input)
    return _Test(lambda xp, x: xp.isneginf(x) if x.dtype.kind == "f" else xp.zeros(x.shape, bool))(input)


def isreal(input):
    """True where the imaginary part is 0 (everywhere for a real tensor)."""
    if input.is_complex():
        return complex_views.imag(input) == 0
    return _Test(lambda xp, x: xp.ones(x.shape, bool))(input)


for _name in ("hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "fmax", "fmin", "float_power",
              "heaviside", "gcd", "lcm", "clamp_min", "clamp_max", "asinh", "asinh_", "acosh",
              "acosh_", "atanh", "atanh_", "sinc", "sinc_", "deg2rad", "deg2rad_", "rad2deg", "rad2deg_",
              "logit", "logit_", "sgn", "positive", "signbit", "isposinf", "isneginf", "isreal",
              "bitwise_left_shift", "bitwise_right_shift", "ldexp", "nextafter", "frexp"):
    register_method(globals()[_name], _name)
for _alias, _name in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("arctan2", "atan2"),
                      ("arcsinh_", "asinh_"), ("arccosh_", "acosh_"), ("arctanh_", "atanh_"),
                      ("__lshift__", "bitwise_left_shift"), ("__rshift__", "bitwise_right_shift")):
    register_method(globals()[_name], _alias)
register_method(positive, "__pos__")
register_method(lambda self, other: bitwise_left_shift(as_operand(other, like=self), self), "__rlshift__")
register_method(lambda self, other: bitwise_right_shift(as_operand(other, like=self), self), "__rrshift__")
# PyTorch's other names for ops defined in elementwise
for _alias, _name in (("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("fix", "trunc")):
    register_method(getattr(Tensor, _name), _alias)

__all__ = ["hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "fmax", "fmin", "float_power",
           "heaviside", "gcd", "lcm", "clamp_min", "clamp_max", "asinh", "asinh_", "acosh", "acosh_",
           "atanh", "atanh_", "arcsinh", "arccosh", "arctanh", "arctan2", "sinc", "sinc_", "deg2rad",
           "deg2rad_", "rad2deg", "rad2deg_", "logit", "logit_", "sgn", "positive", "signbit", "isposinf",
           "isneginf", "isreal", "bitwise_left_shift", "bitwise_right_shift", "ldexp", "rsub", "divide", "multiply",
           "subtract", "nextafter", "frexp"]
