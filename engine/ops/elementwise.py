"""Elementwise ops with broadcasting and PyTorch type promotion: arithmetic, math, comparisons.

Binary ops cast both operands to the promoted dtype before computing; their backward returns
gradients in the broadcast shape (the engine reduces them to each input's shape).
"""
import contextlib
import numbers
import math
import sys

import numpy as np

from .. import _dtype, _layout, backends
from ..amp import autocast_mode
from ..autograd import grad_mode
from ..autograd.function import Function
from ..autograd.double_backward import constant, masked
from ..backends.special import erf as erf_array
from ..tensor import Tensor, register_method
from ._common import as_operand, cast, check_broadcast, float_dtype, is_scalar, masked_grad, result_dtype, xp_of
from .complex_grad import holomorphic, holomorphic_tensors, real_parts
from .complex_power import complex_power, zero_base_real_exponent
from .activation import _sigmoid, round_trip
from .complex_refusals import refuse_complex


# ---- binary arithmetic ---------------------------------------------------------------------
def _streamed(a, b):
    """The context a binary op over arrays ``a`` and ``b`` runs in, from the device's kernels (numpy
    streams a broadcast one unbuffered); scalars need none."""
    if isinstance(a, numbers.Number) or isinstance(b, numbers.Number):
        return contextlib.nullcontext()
    return backends.kernels(a, "pointwise").binary_context(a, b)


def _quiet():
    """numpy's floating-point warnings off: PyTorch returns inf and NaN (1 / 0, 0 / 0) without a word."""
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


def _check_divisor(kernel, a, b, dtype):
    """PyTorch's refusals of an integer division: bool has no such kernel, and a zero divisor is an error
    where numpy would give 0 and warn. Checked on the CPU only, as torch does (CUDA kernels do not check)."""
    if dtype == np.bool_:
        device = "cpu" if xp_of(a, b) is np else "cuda"
        raise NotImplementedError(f"\"{kernel}_{device}\" not implemented for 'Bool'")
    if dtype.kind in "iu" and xp_of(a, b) is np and np.size(a) > 0 and np.any(np.equal(b, 0)):
        raise RuntimeError("ZeroDivisionError")


def wrap_int(x, dt):
    """A Python int operand of an integer op as torch converts it: to the op's type, wrapping modulo 2**bits where
    it is out of range (a uint8 tensor plus -2 adds 254; numpy 2 raises OverflowError). Anything else unchanged;
    an int no 64-bit type holds is torch's OverflowError, whatever the type."""
    if type(x) is not int:
        return x
    if not -(1 << 63) <= x < (1 << 64):
        raise OverflowError("int too big to convert")
    if dt.is_floating_point or dt.is_complex or dt is _dtype.bool_:
        return x
    info = np.iinfo(dt.np)
    if info.min <= x <= info.max:
        return x
    bits = 8 * dt.np.itemsize
    x &= (1 << bits) - 1
    if info.min < 0 and x > info.max:
        x -= 1 << bits
    return dt.np.type(x)


def _complex_aware(cls):
    """Wrap the backward a holomorphic op class defines so that it also serves complex dtypes (complex_grad)."""
    if getattr(cls, "holomorphic", False) and "backward" in cls.__dict__:
        cls.backward = holomorphic(cls.__dict__["backward"])
    if getattr(cls, "holomorphic", False) and "backward_tensors" in cls.__dict__:
        cls.backward_tensors = holomorphic_tensors(cls.__dict__["backward_tensors"])


def _complex_refused(dtype, name, kernel=None, error=NotImplementedError):
    """torch's refusal of an op without complex kernels (``"lt_cpu" not implemented for 'ComplexFloat'``, or
    the op's own line): ``kernel``, a format of the dtype's title, or the kernel name's form."""
    if dtype.is_complex:
        raise error(kernel.format(dtype.title) if kernel else f"\"{name}_cpu\" not implemented for '{dtype.title}'")


class _Binary(Function):
    #: the backward is ``gy`` times the derivatives: complex dtypes conjugate around it (complex_grad)
    holomorphic = True
    #: torch's kernel reads a scalar second operand of a float16 or bfloat16 op at float32 (mul and the divisions:
    #: ``1000 * 2**-31`` is not 0); other ops, and every op's scalar first operand, round it to that type first
    opmath_scalar = False
    #: the type a float16 op computed in float32 rounds its result to (``_half_operands``), else None
    narrow = None
    #: a float16 or bfloat16 op's scalar second operand is kept at float32 (``_half_operands``)
    kept = False

    def __init__(self, dtype):
        self.dtype = dtype.np
        self.half = dtype.np if dtype is _dtype.float16 or dtype is _dtype.bfloat16 else None

    __init_subclass__ = classmethod(lambda cls, **kw: _complex_aware(cls))

    def operands(self, a, b, wide=False):
        """``a`` and ``b`` cast to the op's type; for a float16 or bfloat16 result, as torch's kernels read them
        (``_half_operands``), in float32 where ``wide``."""
        if self.half is None:
            return cast(a, self.dtype), cast(b, self.dtype)
        return _half_operands(self, a, b, wide)

    def rounded(self, y):
        """The result ``y`` of the forward, rounded once to float16 where ``operands`` widened a float16 op."""
        if self.narrow is None:
            return y
        with _quiet():  # beyond float16's range: inf, as torch's, without numpy's warning
            return y.astype(self.narrow)

    def widened_grad(self, gy):
        """The backward's ``gy``, in float32 where the forward computed a float16 op in float32: torch's backward
        multiplies by a scalar (an alpha, a kept operand) at float32 too."""
        return gy if self.narrow is None else gy.astype(np.float32)


def _half_operands(fn, a, b, wide):
    """A float16 or bfloat16 op's operands as torch's CPU kernels take them: a scalar (a Python number or a 0-dim
    array) rounded to the op's type, except ``fn``'s ``opmath_scalar`` second operand, kept at float32, where
    the op computes in float32 (its "opmath" type) and rounds once. bfloat16 ops compute in float32 anyway
    (autograd/bfloat16.py, which rounds their results); a float16 one does here where ``wide`` or the scalar is
    kept, with ``fn.narrow`` set for ``fn.rounded``. numpy's float16 kernels compute each element in float32
    and round it once, so other float16 ops need no widening."""
    half = fn.half
    keep_b = fn.kept = fn.opmath_scalar and _scalar_like(b)
    a, b = _rounded(a, half), (b if keep_b else _rounded(b, half))
    if fn.dtype == half and not (wide or keep_b):
        return cast(a, half), cast(b, half)
    if fn.dtype == half:
        fn.narrow = half
    return _float32(a), _float32(b)


def _scalar_like(x):
    """Whether ``x`` is a scalar operand: a Python number or a 0-dim array (a 0-dim tensor's)."""
    return isinstance(x, numbers.Number) or x.ndim == 0


def _rounded(x, half):
    """A scalar operand rounded to ``half`` (float16 or bfloat16) as torch converts it: a Python number through
    float32, as a Python float; a 0-dim array as an array of ``half``. Anything else (a dimensioned array, a bool,
    a complex number) unchanged."""
    if isinstance(x, (bool, complex)):
        return x
    with _quiet():
        if isinstance(x, numbers.Number):
            return float(np.float32(x).astype(half))
        return x.astype(half) if x.ndim == 0 and x.dtype != half else x


def _float32(x):
    """An array operand in float32; a Python number unchanged (numpy reads it at its float32 array's type)."""
    if isinstance(x, numbers.Number):
        return x
    return x if x.dtype == np.float32 else x.astype(np.float32)


def _torch_order(originals):
    """The dims, outermost first, in which torch lays out the result of a pointwise op over ``originals`` (arrays or
    scalars; ``_layout.pointwise_order``); None when every array is row-major (then so is numpy's result)."""
    arrays = [x for x in originals if getattr(x, "ndim", 0)]
    if all(x.flags.c_contiguous for x in arrays):
        return None
    shape = np.broadcast_shapes(*(x.shape for x in arrays))
    return tuple(reversed(_layout.pointwise_order(arrays, shape)))


def _torch_ordered(originals, operands, dtype=None):
    """The array a binary ufunc over ``operands`` (cast from ``originals``, the op's inputs) should write to, laid
    out as torch lays out its result (``_layout.pointwise_order`` of the inputs: the first operand's order, so a
    transposed ``a`` plus a row-major ``b`` stays transposed where numpy goes row-major, and an expanded dim is not
    innermost); ``dtype`` is the result's type, by default the operands' common one. None (numpy allocates, as
    fast) when every input is row-major, the common case, or the operands' types differ."""
    a, b = originals
    if (not hasattr(a, "flags") or a.flags.c_contiguous) and (not hasattr(b, "flags") or b.flags.c_contiguous):
        return None
    if dtype is None:
        dtypes = {x.dtype for x in operands if hasattr(x, "dtype")}
        if len(dtypes) != 1:
            return None
        dtype = dtypes.pop()
    arrays = [x for x in originals if getattr(x, "ndim", 0)]
    shape = np.broadcast_shapes(*(x.shape for x in arrays))
    return _layout.empty_ordered(shape, _torch_order(originals), dtype, xp_of(*arrays))


class Add(_Binary):
    uses_inputs = False
    #: the ufunc combining a with alpha * b, and the sign b's gradient takes
    ufunc, sign = "add", 1

    def __init__(self, dtype, alpha=1):
        super().__init__(dtype)
        self.alpha = alpha

    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b, wide=self.alpha != 1)
        if self.alpha != 1:
            with _quiet():  # an integer scalar times a wrapped alpha may wrap, as in torch
                # a float16 or bfloat16 op's alpha is rounded to its type (its backward's is not)
                b = b * (self.alpha if self.half is None else _rounded(self.alpha, self.half))
        ufunc = getattr(xp_of(a, b), self.ufunc)
        with _streamed(a, b):
            if self.inplace and a.dtype == self.dtype:
                return ufunc(a, b, out=a)
            return self.rounded(ufunc(a, b, out=_torch_ordered(inputs, (a, b))))

    def backward(self, gy):
        gy = self.widened_grad(gy)
        scale = self.sign * self.alpha
        return gy, (gy * scale if scale != 1 else gy)

    def backward_tensors(self, gy):
        scale = self.sign * self.alpha
        return gy, (gy * scale if scale != 1 else gy)


class Sub(Add):
    """a - alpha * b, subtracted (not added negated: -1 does not fit an unsigned type)."""

    ufunc, sign = "subtract", -1


class Mul(_Binary):
    opmath_scalar = True

    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b)
        self.a = a.copy() if self.inplace and self.needs_input_grad[1:2] == (True,) else a
        self.b = b
        with _streamed(a, b), _quiet():  # an overflow to inf passes without a warning, as in torch
            if self.inplace and a.dtype == self.dtype:
                return xp_of(a).multiply(a, b, out=a)
            return self.rounded(xp_of(a, b).multiply(a, b, out=_torch_ordered(inputs, (a, b))))

    def inputs_read(self, inputs):
        """b for a's gradient, a for b's (not when mul_ kept a copy of a), as torch's mul saves them."""
        a, b = inputs
        return tuple(t for t, read in ((a, self.needs_input_grad[1] and not self.inplace),
                                       (b, self.needs_input_grad[0])) if read)

    def backward(self, gy):
        gy = self.widened_grad(gy)
        with _streamed(gy, self.b):
            ga = gy * self.b if self.needs_input_grad[0] else None
        with _streamed(gy, self.a):
            gb = gy * self.a if self.needs_input_grad[1] else None
        return ga, gb

    def backward_tensors(self, gy):
        ga = gy * self.saved_input(1, self.b) if self.needs_input_grad[0] else None
        gb = gy * self.saved_input(0, self.a) if self.needs_input_grad[1] else None
        return ga, gb


class Div(_Binary):
    opmath_scalar = True

    def __init__(self, dtype, rounding_mode=None):
        super().__init__(dtype)
        self.rounding_mode = rounding_mode

    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b)
        xp = xp_of(a, b)
        if self.rounding_mode is None:
            with _streamed(a, b), _quiet():
                y = self.rounded(xp.true_divide(a, b, out=_torch_ordered(inputs, (a, b))))
            if self.needs_input_grad[1:2] == (True,):
                self.b, self.y = b, y.copy() if self.inplace else y
            elif self.needs_input_grad[0:1] == (True,):
                self.b = b
            return y
        if self.rounding_mode not in ("floor", "trunc"):
            raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                             f"'{self.rounding_mode}'")
        _complex_refused(_dtype.from_numpy_dtype(self.dtype), "div_" + self.rounding_mode)
        _check_divisor("div_" + self.rounding_mode, a, b, self.dtype)
        with _quiet():
            if self.rounding_mode == "floor":
                return self.rounded(_floor_divide(xp, a, b, self.half, self.kept))
            if self.dtype.kind == "f" or self.narrow is not None:
                q = a / b
                if self.half is not None and not self.kept:  # torch truncates the quotient rounded to the type
                    q = _stepwise(q, self.half)
                return self.rounded(xp.trunc(q).astype(a.dtype))
            return _int_trunc_div(xp, a, b)

    def inputs_read(self, inputs):
        """Only the divisor: b's gradient reads the output, not a."""
        return inputs[1:] if any(self.needs_input_grad) and self.rounding_mode is None else ()

    def backward(self, gy):
        if self.rounding_mode is not None:
            return _no_grads(gy)
        gy = self.widened_grad(gy)
        with _streamed(gy, self.b), _quiet():
            ga = gy / self.b if self.needs_input_grad[0] else None
            gb = -gy * (self.y / self.b) if self.needs_input_grad[1] else None  # torch's steps
        return ga, gb

    def backward_tensors(self, gy):
        if self.rounding_mode is not None:
            return tuple(constant(g) for g in _no_grads(gy._data))
        b = self.saved_input(1, self.b)
        ga = gy / b if self.needs_input_grad[0] else None
        gb = -gy * (self.saved_output(0, self.y) / b) if self.needs_input_grad[1] else None
        return ga, gb


def _floor_divide(xp, a, b, half, kept):
    """Floor division as torch computes it: numpy's float floor_divide is torch's (1 // 0.1 == 9) in float32 and
    float64, and for a float16 or bfloat16 op with a scalar divisor that torch reads at float32; with a tensor
    divisor torch rounds each step of that algorithm to the type (``_stepwise_floor_divide``)."""
    if half is None or kept or a.dtype.kind != "f":
        return xp.floor_divide(a, b)
    return _stepwise_floor_divide(xp, a, b, half)


def _stepwise(x, half):
    """Float32 ``x`` rounded to ``half`` (bfloat16's values, kept in float32); a ``half`` array as it is (numpy's
    float16 steps round themselves)."""
    return x if x.dtype == half else round_trip(x, half)


def _stepwise_floor_divide(xp, a, b, half):
    """a // b with each step rounded to float16 or bfloat16 ``half``, as torch's kernel computes it in that type:
    the remainder's correction of a - mod over b, floored and moved up where the floor is more than half off."""
    mod = xp.fmod(a, b)
    div = _stepwise(_stepwise(a - mod, half) / b, half)
    div = xp.where((mod != 0) & ((b < 0) != (mod < 0)), _stepwise(div - 1, half), div)
    floor = xp.floor(div)
    floor = xp.where(_stepwise(div - floor, half) > 0.5, _stepwise(floor + 1, half), floor)
    quotient = _stepwise(a / b, half)
    floor = xp.where(div == 0, xp.copysign(xp.zeros_like(floor), quotient), floor)
    return xp.where(b == 0, quotient, floor).astype(a.dtype, copy=False)


def _no_grads(gy):
    """Zero gradients for both operands of a rounding division (even where ``gy`` is inf or NaN)."""
    zeros = xp_of(gy).zeros_like(gy)
    return zeros, zeros


def _int_trunc_div(xp, a, b):
    q = xp.floor_divide(a, b)
    r = a - q * b
    return q + ((r != 0) & ((a < 0) != (b < 0)))


class Remainder(_Binary):
    """a - b * floor(a / b), the sign of the divisor (Python's %)."""

    def forward(self, a, b):
        a, b = self.operands(a, b)
        _check_divisor("remainder", a, b, self.dtype)
        self.b = b
        self.a = a
        xp = xp_of(a, b)
        if self.dtype.kind != "f":
            return xp.remainder(a, b)
        with _quiet():  # torch's steps, whose zeros keep the dividend's sign (numpy's take the divisor's)
            mod = xp.fmod(a, b)
            return xp.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)

    def backward(self, gy):
        xp = xp_of(gy)
        with _quiet():
            return gy, -gy * xp.floor_divide(self.a, self.b)

    def backward_tensors(self, gy):
        """Piecewise a - b k with the quotient k constant: linear in gy."""
        with _quiet():
            k = xp_of(gy._data).floor_divide(self.a, self.b) if self.needs_input_grad[1] else None
        return gy, -gy * constant(xp_of(gy._data).asarray(k)) if k is not None else None


class Fmod(_Binary):
    """a - b * trunc(a / b), the sign of the dividend (C's fmod); exact, unlike that formula in floats."""

    def forward(self, a, b):
        a, b = self.operands(a, b)
        _check_divisor("fmod", a, b, self.dtype)
        self.a, self.b = a, b
        with _quiet():
            return xp_of(a, b).fmod(a, b)

    def backward(self, gy):
        xp = xp_of(gy)
        with _quiet():
            return gy, -gy * xp.trunc(self.a / self.b)

    def backward_tensors(self, gy):
        with _quiet():
            k = xp_of(gy._data).trunc(self.a / self.b) if self.needs_input_grad[1] else None
        return gy, -gy * constant(xp_of(gy._data).asarray(k)) if k is not None else None


class FloorDivide(_Binary):
    opmath_scalar = True

    def forward(self, a, b):
        a, b = self.operands(a, b)
        _check_divisor("div_floor", a, b, self.dtype)
        with _quiet():
            return self.rounded(_floor_divide(xp_of(a, b), a, b, self.half, self.kept))

    def backward(self, gy):
        return _no_grads(gy)

    def backward_tensors(self, gy):
        zeros = constant(xp_of(gy._data).zeros_like(gy._data))
        return zeros, zeros


class Pow(_Binary):
    def inputs_read(self, inputs):
        """Not the base in place: ``pow_`` keeps a copy of it (torch's saves the original self)."""
        return inputs[1:] if self.inplace else inputs

    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b)
        xp = xp_of(a, b)
        self.a, self.b = (a.copy() if self.inplace else a), b
        if self.dtype == np.bool_:
            if not is_scalar(b):
                raise NotImplementedError("\"pow\" not implemented for 'Bool'")
            return a | (not b)  # a bool tensor to a Python bool power: x ** True is x, x ** False is True
        with _quiet():
            if self.dtype.kind == "c":
                y = complex_power(xp, a, b, self.dtype, out=_torch_ordered(inputs, (a, b)))
            elif self.dtype.kind == "f":
                y = xp.power(a, b, out=_torch_ordered(inputs, (a, b)))
            else:
                y = _int_power(xp, a, b, self.dtype)
        self.y = y.copy() if self.inplace else y
        return y

    def backward(self, gy):
        xp = xp_of(gy)
        ga = gb = None
        if self.needs_input_grad[0]:
            b = self.b
            with _quiet():
                power = (complex_power(xp, self.a, b - 1, self.dtype) if self.dtype.kind == "c"
                         else xp.power(self.a, b - 1))
            if is_scalar(b):
                ga = gy * (b * power) if b != 0 else xp.zeros_like(gy)
            else:
                ga = masked_grad(gy * xp.where(b == 0, 0, b * power), b != 0)
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            a = self.a
            with np.errstate(divide="ignore", invalid="ignore"):
                zero = zero_base_real_exponent(a, self.b)
                gb = masked_grad(gy * xp.where(zero, 0, self.y * xp.log(a)), ~zero)
        return ga, gb

    def backward_tensors(self, gy):
        xp = xp_of(gy._data)
        a, b = self.saved_input(0, self.a), self.saved_input(1, self.b)
        ga = gb = None
        if self.needs_input_grad[0]:
            if is_scalar(b):
                ga = gy * (b * a ** (b - 1)) if b != 0 else constant(xp.zeros_like(gy._data))
            else:
                keep = self.b != 0
                ga = masked(gy * masked(b * a ** (b - 1), keep), keep)
        if len(self.needs_input_grad) > 1 and self.needs_input_grad[1]:
            zero = zero_base_real_exponent(self.a, self.b)
            log_a = math.log(a) if is_scalar(a) else a.log()
            gb = masked(gy * masked(self.saved_output(0, self.y) * log_a, ~zero), ~zero)
        return ga, gb


def _int_power(xp, a, b, dtype):
    """Integer ``a ** b`` as PyTorch computes it: a negative Python exponent is an error; a negative
    tensor exponent gives 1 ** b = 1, (-1) ** b = +-1 and 0 for every other base (numpy raises)."""
    if is_scalar(b):
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        return xp.power(a, b)
    y = xp.power(a, xp.maximum(b, 0))
    unit_power = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(b < 0, unit_power, y).astype(dtype, copy=False)


class Maximum(_Binary):
    """The larger operand. Backward as PyTorch's: ties share the gradient equally, the smaller operand gets
    none (0 even where the gradient is inf or NaN), and where a NaN makes the comparison false both get all
    of it."""

    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b)
        xp = xp_of(a, b)
        self.a, self.b = a, b
        return (xp.maximum if type(self) is Maximum else xp.minimum)(a, b, out=_torch_ordered(inputs, (a, b)))

    @staticmethod
    def loses(a, b):
        return a < b

    def backward(self, gy):
        xp = xp_of(gy)
        shared = gy * xp.where(self.a == self.b, 0.5, 1.0).astype(gy.dtype)
        return masked_grad(shared, ~self.loses(self.a, self.b)), masked_grad(shared, ~self.loses(self.b, self.a))

    def backward_tensors(self, gy):
        shared = gy * constant(xp_of(gy._data).where(self.a == self.b, 0.5, 1.0).astype(gy._data.dtype))
        return masked(shared, ~self.loses(self.a, self.b)), masked(shared, ~self.loses(self.b, self.a))


class Minimum(Maximum):
    """The smaller operand (gradients as ``Maximum``'s, mirrored)."""

    @staticmethod
    def loses(a, b):
        return a > b


class Atan2(_Binary):
    def forward(self, a, b):
        inputs = a, b
        a, b = self.operands(a, b)
        self.a, self.b = a, b
        return xp_of(a, b).arctan2(a, b, out=_torch_ordered(inputs, (a, b)))

    def backward(self, gy):
        """gy * (b, -a) / (a^2 + b^2), in torch's steps (a reciprocal, then products), each rounded to the type;
        0 where a^2 + b^2 is 0 (at the origin, or squares too small for the type), as torch's."""
        xp = xp_of(gy)
        with _quiet():
            d = xp.asarray(self.a * self.a + self.b * self.b)
            recip = xp.where(d == 0, 0, 1 / d).astype(d.dtype, copy=False)
        return gy * self.b * recip, gy * -self.a * recip

    def backward_tensors(self, gy):
        a, b = self.saved_input(0, self.a), self.saved_input(1, self.b)
        d = a * a + b * b
        recip = masked(masked(d, d._data != 0, fill=1.0).reciprocal(), d._data != 0)
        return gy * b * recip, gy * -a * recip


def _binary(fn_cls, a, b, *, float_result=False, inplace=False, **params):
    a, b = as_operand(a), as_operand(b, like=a if isinstance(a, Tensor) else None)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{fn_cls.__name__.lower()}(): expected at least one tensor argument")
    dt = result_dtype(a, b)
    if float_result and not dt.is_complex:
        dt = float_dtype(dt)
    if fn_cls in _NO_COMPLEX_BINARY:
        _complex_refused(dt, *_NO_COMPLEX_BINARY[fn_cls])
    a, b = wrap_int(a, dt), (b if fn_cls is Pow and isinstance(b, int) and b < 0 else wrap_int(b, dt))
    if "alpha" in params:
        params["alpha"] = _check_alpha(params["alpha"], dt)
    fn = fn_cls(dt, **params)
    fn.inplace = inplace
    check_broadcast(a, b)
    out = fn(a, b)
    if not inplace:
        _lay_out_as_torch(out, a, b)
    return out


#: binary ops torch has no complex kernels for: (kernel name, message format, error type)
_NO_COMPLEX_BINARY = {
    Remainder: ("remainder",), Fmod: ("fmod",), FloorDivide: ("div_floor",), Atan2: ("atan2",),
    Maximum: ("maximum", "maximum not implemented for complex tensors.", RuntimeError),
    Minimum: ("minimum", "minimum not implemented for complex tensors.", RuntimeError),
}


def _check_alpha(alpha, dt):
    """add's and sub's ``alpha`` as torch takes it for result type ``dt``: no complex alpha for real results, no
    floating one for integers, a bool one for bool results only; an int one wrapped as an operand is."""
    if isinstance(alpha, complex) and not dt.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    if isinstance(alpha, float) and not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, bool) and dt is not _dtype.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    return bool(alpha) if dt is _dtype.bool_ else wrap_int(alpha, dt)


def _check_sub(a, b):
    """torch's refusal of a subtraction with a bool operand (a tensor or a Python bool)."""
    bools = [x is _dtype.bool_ or isinstance(x, (bool, np.bool_))
             for x in (getattr(a, "dtype", a), getattr(b, "dtype", b))]
    if all(bools):
        raise NotImplementedError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                                  "Use the `^` or `logical_xor()` operator instead.")
    if any(bools):
        raise NotImplementedError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def _lay_out_as_torch(out, a, b):
    """Lay a binary op's fresh 4-D output out channels-last where torch does and numpy does not: torch follows its
    first operand's dimension order (a channels-last map plus a row-major one is channels-last), numpy goes
    row-major when its operands disagree. Dropout draws in memory order, so the layout decides which elements it
    drops. The array is replaced, not copied through an op, so traces hold the same ops; operands that are all
    row-major (the usual case) cost one check. Other orders torch would keep (a transposed 3-D operand's) are left
    to numpy: relaying those out cost a second pass over every such sum in the transformers."""
    arrays = [t._data for t in (a, b) if isinstance(t, Tensor)]
    if out._data.ndim != 4 or out._data.size == 0 or all(arr.flags.c_contiguous for arr in arrays):
        return
    order = _layout.pointwise_order(arrays, out._data.shape)
    if order == _CHANNELS_LAST_ORDER and _layout.memory_order(out._data) != order:
        out._data = _layout.in_order(out._data, order, xp_of(out._data))


_CHANNELS_LAST_ORDER = [1, 3, 2, 0]  # innermost first: channels, width, height, batch


def _check_fits(target, result_shape):
    """Raise PyTorch's error when an in-place op's broadcast result would not fit ``target``."""
    if tuple(result_shape) != tuple(target.shape):
        raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the broadcast shape "
                           f"{list(result_shape)}")


def _is_sparse(x):
    """Whether ``x`` is a sparse tensor (engine.sparse): the function forms then run its layout's own code, as
    torch's dispatch does (plain tensors answer on the first test)."""
    return type(x) is not Tensor and isinstance(x, Tensor) and x.layout is not _layout.strided


def _sparse_ops():
    from ..sparse import _ops
    return _ops


def add(input, other, *, alpha=1, out=None):
    if out is None and (_is_sparse(input) or _is_sparse(other)):
        return _sparse_ops().add(input, other, alpha=alpha)
    return _write_out(_binary(Add, input, other, alpha=alpha), out)


def sub(input, other, *, alpha=1, out=None):
    if out is None and (_is_sparse(input) or _is_sparse(other)):
        return _sparse_ops().add(input, other, alpha=-alpha)
    _check_sub(input, other)
    return _write_out(_binary(Sub, input, other, alpha=alpha), out)


def mul(input, other, *, out=None):
    if out is None and _is_sparse(input):
        return _sparse_ops().mul(input, other)
    if out is None and _is_sparse(other):
        return _sparse_ops().mul(other, input)
    return _write_out(_binary(Mul, input, other), out)


def div(input, other, *, rounding_mode=None, out=None):
    if out is None and rounding_mode is None and _is_sparse(input):
        return _sparse_ops().div(input, other)
    return _write_out(_binary(Div, input, other, float_result=rounding_mode is None,
                              rounding_mode=rounding_mode), out)


def true_divide(input, other, *, out=None):
    return div(input, other, out=out)


def floor_divide(input, other, *, out=None):
    return _write_out(_binary(FloorDivide, input, other), out)


def remainder(input, other, *, out=None):
    return _write_out(_binary(Remainder, input, other), out)


def fmod(input, other, *, out=None):
    return _write_out(_binary(Fmod, input, other), out)


def pow(input, exponent, *, out=None):
    return _write_out(_binary(Pow, input, exponent), out)


def maximum(input, other, *, out=None):
    return _write_out(_binary(Maximum, input, other), out)


def minimum(input, other, *, out=None):
    return _write_out(_binary(Minimum, input, other), out)


def atan2(input, other, *, out=None):
    return _write_out(_binary(Atan2, input, other, float_result=True), out)


def _write_out(result, out, name=None, exact=False):
    """``result`` written into ``out`` (returned), refused where its type would fall a category (a float result
    truncated into an integer ``out``), or with ``exact`` where it is another type, as torch refuses it; ``out`` is
    resized first where its shape differs, as torch resizes it. A result autograd records is refused, as torch
    refuses ``out=`` then (``name``: the op's, by default that of the function calling this one)."""
    if out is None:
        return result
    refuse_recorded_out(result, name or sys._getframe(1).f_code.co_name, out)
    if exact and out.dtype != result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_dtype.cpp_name(result.dtype)}, but got "
                           f"{_dtype.cpp_name(out.dtype)} instead")
    _check_into(result.dtype, out.dtype)
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(result.shape)
    out.copy_(result)
    return out


# ---- unary math ----------------------------------------------------------------------------
class _Unary(Function):
    """``y = f(x)`` computed in ``dtype``; subclasses define ``f`` and ``df(gy)``."""

    #: the backward is ``gy * f'(x)``: complex dtypes conjugate around it (complex_grad)
    holomorphic = True

    def __init__(self, dtype):
        self.dtype = dtype.np

    __init_subclass__ = classmethod(lambda cls, **kw: _complex_aware(cls))

    def forward(self, x):
        """``f(x)``, keeping for the backward only what the class reads (``x`` with ``uses_inputs``, ``y`` with
        ``uses_output``): an op that saves nothing (neg, sign, the roundings) backpropagates twice, as torch's."""
        x = cast(x, self.dtype)
        if type(self).uses_inputs:
            self.x = x
        if self.inplace and self.uses_inputs:  # backward reads this copy: later writes to the tensor do not matter
            self.x = x.copy()
            self.uses_inputs = False
        with _quiet():
            y = self.f(xp_of(x), x)
        if self.inplace:
            x[...] = y
            y = x
        if self.uses_output:
            self.y = y.copy() if self.inplace else y
        if self.widened and self.uses_output:  # torch's backward reads the bfloat16 output
            self.y = round_trip(self.y, _dtype.BFLOAT16_NP) if self.y.dtype == np.float32 else self.y
        return y


class Neg(_Unary):
    uses_inputs = False
    f = staticmethod(lambda xp, x: xp.negative(x))

    def backward(self, gy):
        return -gy

    def backward_tensors(self, gy):
        return -gy


class Abs(_Unary):
    """|x|; of a complex x a real magnitude, whose gradient is ``gy * sgn(x)`` (0 at 0)."""

    holomorphic = False
    f = staticmethod(lambda xp, x: xp.abs(x))

    def backward(self, gy):
        return gy * Sign.f(xp_of(gy), self.x)

    def backward_tensors(self, gy):
        if self.x.dtype.kind == "c":  # sgn(x) is no constant there: it is differentiated too
            from .complex_math import sgn
            return gy * sgn(self.saved_input(0, self.x))
        return gy * constant(Sign.f(xp_of(self.x), self.x))


class Sign(_Unary):
    """-1, 0 or 1; 0 for NaN and a bool tensor unchanged, as in PyTorch (numpy gives NaN, or fails)."""

    uses_inputs = False

    @staticmethod
    def f(xp, x):
        if x.dtype == np.bool_:
            return x.copy()
        return xp.where(x == x, xp.sign(x), 0).astype(x.dtype, copy=False)

    def backward(self, gy):
        return xp_of(gy).zeros_like(gy)

    def backward_tensors(self, gy):
        return constant(xp_of(gy._data).zeros_like(gy._data))


class Exp(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.exp(x))

    def backward(self, gy):
        return gy * self.y

    def backward_tensors(self, gy):
        return gy * self.saved_output(0, self.y)


class Exp2(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.exp2(x))

    def backward(self, gy):
        return gy * self.y * math.log(2.0)

    def backward_tensors(self, gy):
        return gy * self.saved_output(0, self.y) * math.log(2.0)


class Expm1(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.expm1(x))

    def backward(self, gy):
        return gy * (self.y + 1)

    def backward_tensors(self, gy):
        return gy * (self.saved_output(0, self.y) + 1)


class Log(_Unary):
    f = staticmethod(lambda xp, x: xp.log(x))

    def backward(self, gy):
        return gy / self.x

    def backward_tensors(self, gy):
        return gy / self.saved_input(0, self.x)


class Log2(_Unary):
    f = staticmethod(lambda xp, x: xp.log2(x))

    def backward(self, gy):
        return gy / (self.x * math.log(2.0))

    def backward_tensors(self, gy):
        return gy / (self.saved_input(0, self.x) * math.log(2.0))


class Log10(_Unary):
    f = staticmethod(lambda xp, x: xp.log10(x))

    def backward(self, gy):
        return gy / (self.x * math.log(10.0))

    def backward_tensors(self, gy):
        return gy / (self.saved_input(0, self.x) * math.log(10.0))


class Log1p(_Unary):
    f = staticmethod(lambda xp, x: xp.log1p(x))

    def backward(self, gy):
        return gy / (1 + self.x)

    def backward_tensors(self, gy):
        return gy / (1 + self.saved_input(0, self.x))


class Sqrt(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.sqrt(x))

    def backward(self, gy):
        return gy / (2 * self.y)

    def backward_tensors(self, gy):
        return gy / (2 * self.saved_output(0, self.y))


class Rsqrt(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: 1 / xp.sqrt(x))

    def backward(self, gy):
        return gy * (-0.5) * self.y ** 3

    def backward_tensors(self, gy):
        return gy * (-0.5) * self.saved_output(0, self.y) ** 3


class Reciprocal(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: 1 / x)

    def backward(self, gy):
        return -gy * self.y * self.y

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return -gy * y * y


class Square(_Unary):
    f = staticmethod(lambda xp, x: x * x)

    def backward(self, gy):
        return gy * 2 * self.x

    def backward_tensors(self, gy):
        return gy * 2 * self.saved_input(0, self.x)


class Sin(_Unary):
    f = staticmethod(lambda xp, x: xp.sin(x))

    def backward(self, gy):
        return gy * xp_of(gy).cos(self.x)

    def backward_tensors(self, gy):
        return gy * self.saved_input(0, self.x).cos()


class Cos(_Unary):
    f = staticmethod(lambda xp, x: xp.cos(x))

    def backward(self, gy):
        return -gy * xp_of(gy).sin(self.x)

    def backward_tensors(self, gy):
        return -gy * self.saved_input(0, self.x).sin()


class Tan(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.tan(x))

    def backward(self, gy):
        return gy * (1 + self.y * self.y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * (1 + y * y)


class Atan(_Unary):
    f = staticmethod(lambda xp, x: xp.arctan(x))

    def backward(self, gy):
        return gy / (1 + self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy / (1 + x * x)


class Asin(_Unary):
    f = staticmethod(lambda xp, x: xp.arcsin(x))

    def backward(self, gy):
        return gy / xp_of(gy).sqrt(1 - self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy / (1 - x * x).sqrt()


class Acos(_Unary):
    f = staticmethod(lambda xp, x: xp.arccos(x))

    def backward(self, gy):
        return -gy / xp_of(gy).sqrt(1 - self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return -gy / (1 - x * x).sqrt()


class Sinh(_Unary):
    f = staticmethod(lambda xp, x: xp.sinh(x))

    def backward(self, gy):
        return gy * xp_of(gy).cosh(self.x)

    def backward_tensors(self, gy):
        return gy * self.saved_input(0, self.x).cosh()


class Cosh(_Unary):
    f = staticmethod(lambda xp, x: xp.cosh(x))

    def backward(self, gy):
        return gy * xp_of(gy).sinh(self.x)

    def backward_tensors(self, gy):
        return gy * self.saved_input(0, self.x).sinh()


def _opmath(x):
    """A float16 array in float32, where torch's fused kernel computes; other arrays unchanged."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


class Tanh(_Unary):
    uses_inputs, uses_output = False, True
    f = staticmethod(lambda xp, x: xp.tanh(x))

    def backward(self, gy):
        gy, y = _opmath(gy), _opmath(self.y)  # torch's tanh_backward kernel rounds once
        return gy * (1 - y * y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * (1 - y * y)


class Sigmoid(_Unary):
    uses_inputs, uses_output = False, True

    @staticmethod
    def f(xp, x):
        if x.dtype.kind == "c":
            return 1 / (1 + xp.exp(-x))
        if x.dtype == np.float16:  # torch's kernel computes in float32 and rounds once
            return _sigmoid(xp, x.astype(np.float32)).astype(np.float16)
        return _sigmoid(xp, x)

    def backward(self, gy):
        gy, y = _opmath(gy), _opmath(self.y)  # torch's sigmoid_backward kernel rounds once
        return gy * y * (1 - y)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy * y * (1 - y)


class Erf(_Unary):
    f = staticmethod(lambda xp, x: erf_array(xp, x))

    def backward(self, gy):
        return gy * (2.0 / math.sqrt(math.pi)) * xp_of(gy).exp(-self.x * self.x)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return gy * (2.0 / math.sqrt(math.pi)) * (-x * x).exp()


class _Rounding(_Unary):
    uses_inputs = False

    def backward(self, gy):
        return xp_of(gy).zeros_like(gy)

    def backward_tensors(self, gy):
        return constant(xp_of(gy._data).zeros_like(gy._data))


class Floor(_Rounding):
    f = staticmethod(lambda xp, x: xp.floor(x))


class Ceil(_Rounding):
    f = staticmethod(lambda xp, x: xp.ceil(x))


class Trunc(_Rounding):
    f = staticmethod(lambda xp, x: xp.trunc(x))


class Round(_Rounding):
    def __init__(self, dtype, decimals=0):
        super().__init__(dtype)
        self.decimals = decimals

    def f(self, xp, x):
        if self.decimals and x.dtype.itemsize < 4:  # half types scale in float32, as torch's (no overflow)
            return xp.round(x.astype(np.float32), self.decimals).astype(x.dtype)
        return xp.round(x, self.decimals)


class Frac(_Unary):
    uses_inputs = False
    f = staticmethod(lambda xp, x: x - xp.trunc(x))

    def backward(self, gy):
        return gy

    def backward_tensors(self, gy):
        return gy


#: unary ops without complex kernels in torch: their refusals (kernel name, or message format, and error type)
_NO_COMPLEX_UNARY = {
    Sign: ("sign", "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn "
                   "instead."),
    Floor: ("floor", "floor is not supported for complex inputs"), Ceil: ("ceil", "ceil is not supported for "
                                                                           "complex inputs"),
    Trunc: ("trunc", "trunc is not supported for complex inputs"), Erf: ("erf_vml",), Round: ("round_vml",),
    Frac: ("frac",),
}


#: unary ops torch has no bool kernel for: the kernel its refusal names (round with decimals: round_cpu)
_NO_BOOL_UNARY = {Abs: "abs", Floor: "floor_vml", Ceil: "ceil_vml", Trunc: "trunc_vml", Round: "round_vml",
                  Frac: "frac"}


def _refuse_kind(fn_cls, x, params):
    """torch's refusals of bool inputs (and integer ones, for frac and round with decimals)."""
    if fn_cls is Neg and x.dtype is _dtype.bool_:
        raise NotImplementedError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.")
    kernel = _NO_BOOL_UNARY.get(fn_cls)
    refused = x.dtype is _dtype.bool_
    if fn_cls is Round and params.get("decimals", 0) != 0:
        kernel, refused = "round", not x.dtype.is_floating_point
    elif fn_cls is Frac:
        refused = not (x.dtype.is_floating_point or x.dtype.is_complex)
    if kernel is not None and refused:
        raise NotImplementedError(f"\"{kernel}_{x.device.type}\" not implemented for '{x.dtype.title}'")


def _unary(fn_cls, x, *, keep_int=False, inplace=False, **params):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn_cls.__name__.lower()}(): argument 'input' must be Tensor, not {type(x).__name__}")
    _refuse_kind(fn_cls, x, params)
    if x.dtype.is_complex:
        if fn_cls in _NO_COMPLEX_UNARY:
            _complex_refused(x.dtype, *_NO_COMPLEX_UNARY[fn_cls])
        if fn_cls is Abs and inplace:
            raise RuntimeError("In-place abs is not supported for complex tensors.")
    dt = x.dtype if keep_int or x.dtype.is_complex else float_dtype(x.dtype)
    if inplace and dt is not x.dtype:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{x.dtype.title}")
    fn = fn_cls(dt, **params)
    fn.inplace = inplace
    return fn(x)


#: the unary ops whose ``out`` torch wants of the result's own dtype (the others take any it casts to)
_SAME_DTYPE_OUT = frozenset({"abs", "ceil", "floor", "frac", "neg", "sgn", "sign", "trunc"})


def _unary_pair(name, fn_cls, keep_int=False):
    """Make ``name(x)`` and ``name_(x)`` for a unary Function class."""
    def op(input, *, out=None):
        if out is None and _is_sparse(input) and getattr(type(input), name, op) is not op:
            return getattr(input, name)()  # the sparse layout's own op (engine/sparse/_unary.py)
        refuse_complex(name, input)
        return _write_out(_unary(fn_cls, input, keep_int=keep_int), out, name, exact=name in _SAME_DTYPE_OUT)

    def op_(input):
        refuse_complex(name, input)
        return _unary(fn_cls, input, keep_int=keep_int, inplace=True)

    op.__name__, op_.__name__ = name, name + "_"
    op.__doc__ = f"Elementwise {name} (as ``torch.{name}``)."
    op_.__doc__ = f"In-place {name}."
    return op, op_


neg, neg_ = _unary_pair("neg", Neg, keep_int=True)
abs, abs_ = _unary_pair("abs", Abs, keep_int=True)
sign, sign_ = _unary_pair("sign", Sign, keep_int=True)
exp, exp_ = _unary_pair("exp", Exp)
exp2, exp2_ = _unary_pair("exp2", Exp2)
expm1, expm1_ = _unary_pair("expm1", Expm1)
log, log_ = _unary_pair("log", Log)
log2, log2_ = _unary_pair("log2", Log2)
log10, log10_ = _unary_pair("log10", Log10)
log1p, log1p_ = _unary_pair("log1p", Log1p)
sqrt, sqrt_ = _unary_pair("sqrt", Sqrt)
rsqrt, rsqrt_ = _unary_pair("rsqrt", Rsqrt)
reciprocal, reciprocal_ = _unary_pair("reciprocal", Reciprocal)
_square, _square_ = _unary_pair("square", Square, keep_int=True)


def square(input, *, out=None):
    """input * input; a bool tensor squares as int64, as torch's ``pow(input, 2)`` promotes it."""
    if isinstance(input, Tensor) and input.dtype is _dtype.bool_:
        return _write_out(_square(input.long()), out)
    return _square(input, out=out)


def square_(input):
    """In-place square; torch refuses a bool tensor, whose square is int64."""
    if input.dtype is _dtype.bool_:
        _check_into(_dtype.int64, input.dtype)
    return _square_(input)
sin, sin_ = _unary_pair("sin", Sin)
cos, cos_ = _unary_pair("cos", Cos)
tan, tan_ = _unary_pair("tan", Tan)
atan, atan_ = _unary_pair("atan", Atan)
asin, asin_ = _unary_pair("asin", Asin)
acos, acos_ = _unary_pair("acos", Acos)
sinh, sinh_ = _unary_pair("sinh", Sinh)
cosh, cosh_ = _unary_pair("cosh", Cosh)
tanh, tanh_ = _unary_pair("tanh", Tanh)
sigmoid, sigmoid_ = _unary_pair("sigmoid", Sigmoid)
erf, erf_ = _unary_pair("erf", Erf)
floor, floor_ = _unary_pair("floor", Floor, keep_int=True)
ceil, ceil_ = _unary_pair("ceil", Ceil, keep_int=True)
trunc, trunc_ = _unary_pair("trunc", Trunc, keep_int=True)
frac, frac_ = _unary_pair("frac", Frac)
negative, absolute, arctan, arcsin, arccos, fix = neg, abs, atan, asin, acos, trunc


def round(input, *, decimals=0):
    return _unary(Round, input, keep_int=True, decimals=decimals)


def round_(input, *, decimals=0):
    return _unary(Round, input, keep_int=True, inplace=True, decimals=decimals)


# ---- clamp and where -------------------------------------------------------------------------
class Clamp(Function):
    """clamp(x, lo, hi); each bound may be a tensor, a scalar or None.

    Gradients where x meets a bound follow torch 2.14: with scalar bounds x gets nothing there (only
    lo < x < hi passes); with tensor bounds, x and the bound it meets share the gradient half and half, x
    takes all of it where x == lo == hi, and the upper bound all of it where lo > hi (the result is hi)."""

    def __init__(self, dtype):
        self.dtype = dtype.np

    def inputs_read(self, inputs):
        """None in place: the masks are taken before the write (torch's clamp_ saves no self)."""
        return () if self.inplace else inputs

    def forward(self, x, lo, hi):
        x = cast(x, self.dtype)
        xp = xp_of(x)
        lo = None if lo is None else cast(lo, self.dtype)
        hi = None if hi is None else cast(hi, self.dtype)
        y = x if lo is None else xp.maximum(x, lo)
        y = y if hi is None else xp.minimum(y, hi)
        self.shares = self._shares(xp, x, lo, hi)
        if self.inplace:
            x[...] = y
            return x
        order = _torch_order((x, lo, hi))  # torch's layout: the first operand's order, bounds breaking ties
        if order is not None and _layout.memory_order(y) != list(reversed(order)):
            return _layout.in_order(y, tuple(reversed(order)), xp)
        return y if y is not x else x.copy()

    def _shares(self, xp, x, lo, hi):
        """The parts of the gradient that go to x, lo and hi (None for an absent bound)."""
        tensors = any(isinstance(b, xp.ndarray) for b in (lo, hi))
        if not tensors:
            inside = True
            if lo is not None:
                inside = inside & (x > lo)
            if hi is not None:
                inside = inside & (x < hi)
            return inside, None, None
        # written so that a NaN in x or a bound gives x all of the gradient and, against one bound, that
        # bound too (torch's results)
        to_x, to_lo, to_hi = 0.0, None, None
        if lo is not None:
            at_lo = x == lo
            to_x = to_x + ~(x < lo) - 0.5 * at_lo
            to_lo = (x < lo) + 0.5 * at_lo if hi is not None else ~(x > lo) - 0.5 * at_lo
        if hi is not None:
            at_hi = x == hi
            to_x = to_x + ~(x > hi) - 0.5 * at_hi
            to_hi = (x > hi) + 0.5 * at_hi if lo is not None else ~(x < hi) - 0.5 * at_hi
        if lo is not None and hi is not None:
            crossed, point = lo > hi, at_lo & at_hi
            # x > lo and x < hi each counted "inside" once; at lo == hi == x, x takes the bounds' halves
            to_x = xp.where(crossed, 0.0, to_x - 1.0 + point)
            to_lo = xp.where(crossed, 0.0, to_lo - 0.5 * point)
            to_hi = xp.where(crossed, 1.0, to_hi - 0.5 * point)
        return to_x, to_lo, to_hi

    def backward(self, gy):
        return tuple(None if share is None else _shared_grad(gy, share) for share in self.shares)

    def backward_tensors(self, gy):
        return tuple(None if share is None else _shared_grad_tensor(gy, share) for share in self.shares)


def _shared_grad(gy, share):
    """``gy * share`` for a boolean or fractional share, 0 where the share is (even where gy is inf or NaN)."""
    if share is True:
        return gy
    if share.dtype == np.bool_:
        return masked_grad(gy, share)
    return masked_grad(gy * share, share != 0)


def _shared_grad_tensor(gy, share):
    """``_shared_grad`` on a gradient tensor: linear in it, the share constant."""
    if share is True or share.dtype == np.bool_:
        return masked(gy, share)
    return masked(gy * constant(share.astype(gy._data.dtype)), share != 0)


def clamp(input, min=None, max=None, *, out=None):
    return _write_out(_clamp(input, min, max, inplace=False), out, "clamp", exact=True)


def clamp_(input, min=None, max=None):
    return _clamp(input, min, max, inplace=True)


def _clamp(input, lo, hi, inplace):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    check_broadcast(input, lo, hi)
    _complex_refused(input.dtype, "clamp", "clamp is not supported for complex types")
    dt = result_dtype(input, *[t for t in (lo, hi) if t is not None])
    if dt.is_complex:  # from a bound: the kernel's refusal for a tensor one
        tensors = isinstance(lo, Tensor) or isinstance(hi, Tensor)
        _complex_refused(dt, "clamp", None if tensors else "clamp is not supported for complex types")
    if dt is _dtype.bool_:
        _refuse_bool_clamp(lo, hi, input.device.type)
    if inplace:
        _check_into(dt, input.dtype)
        dt = input.dtype
    fn = Clamp(dt)
    fn.inplace = inplace
    return fn(input, wrap_int(lo, dt), wrap_int(hi, dt))


def _refuse_bool_clamp(lo, hi, device_type):
    """torch's refusal of a bool clamp, but for one bound that is a tensor (maximum or minimum, which bool has)."""
    if lo is not None and hi is not None:
        kernel = "clamp" if isinstance(lo, Tensor) or isinstance(hi, Tensor) else "clamp_scalar"
    elif isinstance(lo if hi is None else hi, Tensor):
        return
    else:
        kernel = "clamp_min_scalar" if hi is None else "clamp_max_scalar"
    raise NotImplementedError(f"\"{kernel}_{device_type}\" not implemented for 'Bool'")


clip, clip_ = clamp, clamp_


class Where(Function):
    def __init__(self, dtype):
        self.dtype = dtype.np

    def forward(self, cond, a, b):
        self.cond = cond
        operands = (cond, cast(a, self.dtype), cast(b, self.dtype))
        outer_first = _torch_order((cond, a, b))
        if outer_first is not None:  # numpy's where has no out=: run it on the operands seen in torch's order
            operands = tuple(x if is_scalar(x) else x.reshape((1,) * (len(outer_first) - x.ndim) + x.shape)
                             .transpose(outer_first) for x in operands)
        # astype: two Python scalars would give numpy's float64 / int64, not the promoted type
        y = xp_of(cond).where(*operands).astype(self.dtype, copy=False)
        return y if outer_first is None else y.transpose(_layout.inverse_permutation(outer_first))

    def backward(self, gy):
        return real_parts(self, (None, masked_grad(gy, self.cond), masked_grad(gy, ~self.cond)))

    def backward_tensors(self, gy):
        return None, masked(gy, self.cond), masked(gy, ~self.cond)


def where(condition, input=None, other=None):
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    input = as_operand(input)
    other = as_operand(other, like=condition)
    check_broadcast(condition, input, other)
    dt = result_dtype(input, other)
    cond = condition if condition.dtype is _dtype.bool_ else condition.bool()
    return Where(dt)(cond, input, other)


# ---- comparisons and logic (not differentiable) ------------------------------------------------
class _Compare(Function):
    def __init__(self, ufunc, dtype):
        self.ufunc, self.dtype = ufunc, dtype.np

    def forward(self, a, b):
        inputs = a, b
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        return getattr(xp_of(a, b), self.ufunc)(a, b, out=_torch_ordered(inputs, (a, b), np.bool_))


_ORDERING = {"less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge"}


def _compare(ufunc):
    def op(input, other, *, out=None):
        a, b = as_operand(input), as_operand(other, like=input if isinstance(input, Tensor) else None)
        check_broadcast(a, b)
        dt = result_dtype(a, b)
        if ufunc in _ORDERING:
            _complex_refused(dt, _ORDERING[ufunc])
        return _write_out(_Compare(ufunc, dt)(wrap_int(a, dt), wrap_int(b, dt)), out)
    op.__name__ = ufunc
    return op


eq = _compare("equal")
ne = _compare("not_equal")
lt = _compare("less")
le = _compare("less_equal")
gt = _compare("greater")
ge = _compare("greater_equal")
eq.__name__, ne.__name__, lt.__name__, le.__name__, gt.__name__, ge.__name__ = "eq", "ne", "lt", "le", "gt", "ge"
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class _Bitwise(Function):
    def __init__(self, ufunc, dtype):
        self.ufunc, self.dtype = ufunc, dtype.np

    def forward(self, a, b=None):
        fn = getattr(xp_of(a, b), self.ufunc)
        if b is None:
            return fn(a)
        inputs = a, b
        a, b = cast(a, self.dtype), cast(b, self.dtype)
        if self.inplace:
            return fn(a, b, out=a)
        return fn(a, b, out=_torch_ordered(inputs, (a, b), np.bool_ if "logical" in self.ufunc else None))


def _check_bitwise_kind(name, dt):
    """torch's refusal of a bitwise op on a floating or complex type (integers and bool only)."""
    if dt.is_floating_point or dt.is_complex:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{dt.title}'")


def _bitwise(ufunc, name):
    def op(input, other, *, out=None):
        a, b = as_operand(input), as_operand(other, like=input if isinstance(input, Tensor) else None)
        check_broadcast(a, b)
        dt = result_dtype(a, b)
        _check_bitwise_kind(name, dt)
        return _write_out(_Bitwise(ufunc, dt)(wrap_int(a, dt), wrap_int(b, dt)), out)
    op.__name__ = name
    return op


bitwise_and = _bitwise("bitwise_and", "bitwise_and")
bitwise_or = _bitwise("bitwise_or", "bitwise_or")
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor")


def bitwise_not(input):
    _check_bitwise_kind("bitwise_not", input.dtype)
    ufunc = "logical_not" if input.dtype is _dtype.bool_ else "invert"
    return _Bitwise(ufunc, input.dtype)(input)


def _invert(self):
    """``~x``: bitwise_not, with torch's TypeError for floating and complex tensors."""
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return bitwise_not(self)


def logical_not(input):
    return _Bitwise("logical_not", _dtype.bool_)(input)


def _logical(ufunc):
    def op(input, other, *, out=None):
        a, b = as_operand(input), as_operand(other, like=input)
        check_broadcast(a, b)
        return _write_out(_Bitwise(ufunc, result_dtype(a, b))(a, b), out)
    op.__name__ = ufunc
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


class _Predicate(Function):
    def __init__(self, ufunc):
        self.ufunc = ufunc

    def forward(self, x):
        return getattr(xp_of(x), self.ufunc)(x)


def isnan(input):
    return _Predicate("isnan")(input)


def isinf(input):
    return _Predicate("isinf")(input)


def isfinite(input):
    return _Predicate("isfinite")(input)


class NanToNum(Function):
    def __init__(self, nan, posinf, neginf):
        self.args = (nan, posinf, neginf)

    def forward(self, x):
        self.finite = xp_of(x).isfinite(x)
        nan, posinf, neginf = self.args
        xp = xp_of(x)
        out = _layout.copy_preserving_format(x, None, xp)  # laid out as torch's (an expanded x too)
        return xp.nan_to_num(out, copy=False, nan=nan, posinf=posinf, neginf=neginf)

    def backward(self, gy):
        return gy * self.finite

    def backward_tensors(self, gy):
        return gy * constant(self.finite.astype(gy._data.dtype))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if input.is_complex() and input.requires_grad and grad_mode.is_grad_enabled():
        raise RuntimeError("nan_to_num does not support automatic differentiation for outputs with complex dtype.")
    return NanToNum(nan, posinf, neginf)(input)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    from ..tensor import _new
    if isinstance(other, Tensor) and other.dtype is not input.dtype:
        raise RuntimeError(f"{input.dtype.title} did not match {other.dtype.title}")
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tolerance:g}")
    check_broadcast(input, other)
    a, b = input._data, as_operand(other)._data if isinstance(other, Tensor) else other
    return _new(xp_of(a).isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


def equal(input, other):
    return input.shape == other.shape and bool((input._data == other._data).all())


def _check_lerp(input, end, weight):
    """torch's lerp checks: ``end`` (and a dimensioned ``weight`` tensor) of input's dtype, a floating one."""
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, Tensor) and other.dtype is not input.dtype and (name == "end" or other.dim() > 0):
            raise RuntimeError(f"expected dtype {_dtype.cpp_name(input.dtype)} for `{name}` "
                               f"but got dtype {_dtype.cpp_name(other.dtype)}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        kind = "tensor" if isinstance(weight, Tensor) else "scalar"
        raise NotImplementedError(f"\"lerp_kernel_{kind}\" not implemented for '{input.dtype.title}'")


def lerp(input, end, weight):
    _check_lerp(input, end, weight)
    check_broadcast(input, end, weight)
    if input.dtype in _HALF:
        return _in_float32(lerp, input.dtype, input, end, weight)
    return add(input, mul(weight, sub(end, input)))


_HALF = (_dtype.float16, _dtype.bfloat16)


def _in_float32(fn, dtype, *args, **kwargs):
    """``fn`` of ``args`` computed in float32 and rounded once to ``dtype`` (float16 or bfloat16), as torch's fused
    kernels compute lerp, addcmul and addcdiv ("opmath"): ``fn``'s own steps would each round. The ``dtype``
    tensors among ``args`` are cast, differentiably; scalars keep their value."""
    wide = [a.float() if isinstance(a, Tensor) and a.dtype is dtype else a for a in args]
    return fn(*wide, **kwargs).to(dtype)


_ADDCDIV_INTEGERS = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes.")


def addc_operands(name, input, tensor1, tensor2, value):
    """addcmul's and addcdiv's operands as torch computes them: both factors in the result type of all three (a
    float16 times a bfloat16 not rounded to bfloat16 first), ``value`` converted to that type (truncated and wrapped
    for integers); bool results and integer division refused."""
    for position, (arg, x) in enumerate((("input", input), ("tensor1", tensor1), ("tensor2", tensor2)), 1):
        if not isinstance(x, Tensor):
            kind = type(x).__name__ if type(x).__module__ == "builtins" else f"{type(x).__module__}.{type(x).__name__}"
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not {kind}")
    check_broadcast(input, tensor1, tensor2)
    dt = result_dtype(input, tensor1, tensor2)
    if name == "addcdiv" and all(_dtype.category(t.dtype) < 2 for t in (tensor1, tensor2)):
        raise RuntimeError(_ADDCDIV_INTEGERS)
    if dt is _dtype.bool_:
        raise NotImplementedError(f"\"{name}_cpu_out\" not implemented for 'Bool'")
    if isinstance(value, bool) and dt is not _dtype.bool_:
        value = int(value)
    if _dtype.category(dt) == 1 and isinstance(value, float):
        value = int(value)
    return tensor1.to(dt), tensor2.to(dt), value


def addcmul(input, tensor1, tensor2, *, value=1):
    tensor1, tensor2, value = addc_operands("addcmul", input, tensor1, tensor2, value)
    if tensor1.dtype in _HALF:
        return _in_float32(addcmul, tensor1.dtype, input, tensor1, tensor2, value=value)
    # torch's order: value * tensor1 first (a product that overflows gives inf, as in torch)
    return add(input, mul(tensor1 if value == 1 else mul(tensor1, value), tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1):
    tensor1, tensor2, value = addc_operands("addcdiv", input, tensor1, tensor2, value)
    if tensor1.dtype in _HALF:
        return _in_float32(addcdiv, tensor1.dtype, input, tensor1, tensor2, value=value)
    return add(input, div(tensor1 if value == 1 else mul(tensor1, value), tensor2))  # torch's order, as addcmul


# ---- Tensor methods and operators ----------------------------------------------------------------
def _inplace_binary(fn_cls, **fixed):
    def op_(self, other, **params):
        other = as_operand(other, like=self)
        if fn_cls is Sub:
            _check_sub(self, other)
        check_broadcast(self, other)
        _check_fits(self, np.broadcast_shapes(tuple(self.shape), tuple(getattr(other, "shape", ()))))
        dt = result_dtype(self, other)
        if fn_cls is Div and params.get("rounding_mode") is None and not dt.is_complex:
            dt = float_dtype(dt)
        if fn_cls is Pow and _dtype.category(dt) == 1 and is_scalar(other) and other < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")  # checked first, as torch
        _check_into(dt, self.dtype)
        if fn_cls in _NO_COMPLEX_BINARY:
            _complex_refused(dt, *_NO_COMPLEX_BINARY[fn_cls])
        if "alpha" in params:
            params["alpha"] = _check_alpha(params["alpha"], dt)
        # integers compute in the promoted type, then wrap into self, as torch does: uint8 **= an int8 -1 gives
        # 0 (an int16 power), not 35 ** 255
        work = dt if _dtype.category(dt) == 1 else self.dtype
        if not (fn_cls is Pow and isinstance(other, int) and other < 0):
            other = wrap_int(other, work)
        fn = fn_cls(work, **fixed, **params)
        fn.inplace = True
        return fn(self, other)
    return op_


add_ = _inplace_binary(Add)
sub_ = _inplace_binary(Sub)
mul_ = _inplace_binary(Mul)
div_ = _inplace_binary(Div)
_pow_into = _inplace_binary(Pow)


def pow_(self, exponent):
    """In-place ``pow``, its operand named ``exponent`` as torch's."""
    return _pow_into(self, exponent)


remainder_ = _inplace_binary(Remainder)
floor_divide_ = _inplace_binary(FloorDivide)


def refuse_recorded_out(result, name, out=None):
    """torch's refusal of ``out=`` where autograd would record the op (an input, or ``out`` itself, requires grad,
    grad mode is on)."""
    recorded = getattr(result, "requires_grad", False) or getattr(out, "requires_grad", False)
    if recorded and grad_mode.is_grad_enabled():
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")


def _check_into(dt, target):
    """torch's refusal to write a result of type ``dt`` into a tensor of type ``target`` of a lower category."""
    if not _dtype.can_cast(dt, target):
        raise RuntimeError(f"result type {dt.title} can't be cast to the desired output type {target.title}")


def _reflect(fn):
    return lambda self, other: fn(as_operand(other, like=self), self)


def _rmul(self, other):
    """``other * self``: torch multiplies ``self`` by a Python number, its second operand, which float16 and
    bfloat16 kernels read at float32 (a first one they would round to the tensor's type)."""
    return mul(self, other) if is_scalar(other) else mul(as_operand(other, like=self), self)


def _rtruediv(self, other):
    """``other / self`` for a number ``other``: torch's reciprocal of the tensor (rounded to its type) times the
    number (float16 and bfloat16 read it at float32), not a quotient rounded once (1 ulp apart in a quarter of
    float32 cases); the backward saves the reciprocal, not ``self``, which may then change in place."""
    if is_scalar(other):
        return mul(reciprocal(self), other)
    return div(as_operand(other, like=self), self)


def _inplace_bitwise(ufunc):
    def op_(self, other):
        other = as_operand(other, like=self)
        dt = result_dtype(self, other)
        _check_into(dt, self.dtype)
        _check_bitwise_kind(ufunc, dt)
        fn = _Bitwise(ufunc, self.dtype)
        fn.inplace = True
        return fn(self, wrap_int(other, self.dtype))
    return op_


# torch's CUDA autocast runs these in float32 (none of them is on its CPU list)
for _name in ("exp", "expm1", "log", "log2", "log10", "log1p", "rsqrt", "reciprocal", "tan", "asin", "acos", "sinh",
              "cosh", "pow"):
    globals()[_name] = autocast_mode.float32("cuda")(globals()[_name])
for _name in ("add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow",
              "maximum", "minimum", "atan2", "clamp", "clip", "clamp_", "clip_", "eq", "ne",
              "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal",
              "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "logical_not", "logical_and",
              "logical_or", "logical_xor", "isnan", "isinf", "isfinite", "nan_to_num", "isclose",
              "allclose", "equal", "lerp", "addcmul", "addcdiv", "round", "round_",
              "add_", "sub_", "mul_", "div_", "pow_", "remainder_", "floor_divide_"):
    register_method(globals()[_name], _name)
for _name in ("neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
              "rsqrt", "reciprocal", "square", "sin", "cos", "tan", "atan", "asin", "acos", "sinh",
              "cosh", "tanh", "sigmoid", "erf", "floor", "ceil", "trunc", "frac"):
    register_method(globals()[_name], _name)
    register_method(globals()[_name + "_"], _name + "_")
register_method(neg, "negative")
register_method(abs, "absolute")
register_method(div, "divide")
register_method(mul, "multiply")
register_method(sub, "subtract")


def _where_method(self, condition, other):
    return where(condition, self, other)


register_method(_where_method, "where")
register_method(add, "__add__")
register_method(_reflect(add), "__radd__")
register_method(sub, "__sub__")
register_method(_reflect(sub), "__rsub__")
register_method(mul, "__mul__")
register_method(_rmul, "__rmul__")
register_method(div, "__truediv__")
register_method(autocast_mode.float32("cuda")(_rtruediv), "__rtruediv__")
register_method(floor_divide, "__floordiv__")
register_method(_reflect(floor_divide), "__rfloordiv__")
register_method(remainder, "__mod__")
register_method(_reflect(remainder), "__rmod__")
register_method(pow, "__pow__")
register_method(autocast_mode.float32("cuda")(_reflect(pow)), "__rpow__")
register_method(neg, "__neg__")
register_method(abs, "__abs__")


def _comparison_method(op):
    """``op`` as an operator method: NotImplemented for an operand it refuses, as torch's operators do,
    so that Python falls back (``t == None`` is False, ``t < None`` a TypeError from Python)."""
    def method(self, other):
        try:
            return op(self, other)
        except TypeError:
            return NotImplemented
    return method


for _op, _dunder in ((eq, "__eq__"), (ne, "__ne__"), (lt, "__lt__"), (le, "__le__"), (gt, "__gt__"), (ge, "__ge__")):
    register_method(_comparison_method(_op), _dunder)
register_method(bitwise_and, "__and__")
register_method(_reflect(bitwise_and), "__rand__")
register_method(bitwise_or, "__or__")
register_method(_reflect(bitwise_or), "__ror__")
register_method(bitwise_xor, "__xor__")
register_method(_reflect(bitwise_xor), "__rxor__")
register_method(_invert, "__invert__")
register_method(add_, "__iadd__")
register_method(sub_, "__isub__")
register_method(mul_, "__imul__")
register_method(div_, "__itruediv__")
register_method(floor_divide_, "__ifloordiv__")
register_method(remainder_, "__imod__")
register_method(pow_, "__ipow__")
register_method(_inplace_bitwise("bitwise_and"), "__iand__")
register_method(_inplace_bitwise("bitwise_or"), "__ior__")
register_method(_inplace_bitwise("bitwise_xor"), "__ixor__")
register_method(_inplace_bitwise("bitwise_and"), "bitwise_and_")
register_method(_inplace_bitwise("bitwise_or"), "bitwise_or_")


__all__ = [n for n, v in list(globals().items())
           if callable(v) and n[0].islower() and getattr(v, "__module__", None) == __name__]
