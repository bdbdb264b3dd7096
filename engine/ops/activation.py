"""Activation functions and softmax: each a fused elementwise ``Function``, forward beside backward.

The torch-level functions (``engine.relu``, ``engine.softmax`` ...) and Tensor methods live here;
``engine.nn.functional.activation`` wraps them with ``F``'s signatures (``inplace=`` flags).
In-place variants write into the input's array and keep for backward only what they need
(the output, a boolean mask, or a copy of the input when nothing cheaper is exact).
"""
import math

import numpy as np

from .. import _dtype, _layout, backends
from ..amp import autocast_mode
from ..autograd.function import Function
from ..autograd.double_backward import constant, masked
from ..backends.special import erf as erf_array
from ..tensor import Tensor, register_method
from ._common import masked_grad, wrap_dim, xp_of
from .complex_refusals import refuse_complex
from .type_info import finfo

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


_FLOAT16 = np.dtype(np.float16)


def _widening(backward):
    """``backward`` taking its gradient in float32 where the forward computed a float16 input in float32."""
    def run(self, gy):
        return backward(self, gy.astype(np.float32) if self.opmath else gy)
    run.__doc__ = backward.__doc__
    return run


def round_trip(y, half):
    """Float32 array ``y`` rounded to ``half`` (float16 or bfloat16) and back: the output a fused op returns,
    which torch's backward reads where it saves it."""
    return y.astype(half).astype(np.float32)


def _check_input(x, name, allow_int=False):
    """PyTorch's argument errors: a tensor is required; most activations need a float one, and those in
    complex_refusals' table refuse complex input with torch's message."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    refuse_complex(name, x)
    if not allow_int and not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}\" not implemented for '{x.dtype.title}'")


def _run(fn, x, inplace=False):
    fn.inplace = inplace
    return fn(x)


class _Activation(Function):
    """Elementwise ``y = f(x)``: subclasses define ``compute(xp, x)`` (saving what backward needs).

    A float16 input is computed in float32 and the result rounded once, and so is its gradient, as torch's fused
    kernels compute float16 ("opmath"), unless the op is ``composite`` in torch (rounded after each step, as
    numpy's float16 steps are). bfloat16 ops compute in float32 anyway (autograd/bfloat16.py). A saved output is
    the rounded one, which torch's backward reads."""

    uses_inputs = False
    #: torch computes the op as several ops, each rounding to the input's type
    composite = False
    #: the forward widened a float16 input: the backward widens its gradient
    opmath = False
    #: torch allocates the (out-of-place) result row-major whatever the input's layout (log_sigmoid, rrelu)
    row_major_result = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "backward" in cls.__dict__:
            cls.backward = _widening(cls.__dict__["backward"])

    def forward(self, x):
        if self.row_major_result and not self.inplace:
            return _layout.row_major(self._forward(x))
        return self._forward(x)

    def _forward(self, x):
        if x.dtype == _FLOAT16 and not self.composite:
            return self._opmath_forward(x)
        y = self.compute(xp_of(x), x)
        if self.widened and self.uses_output and getattr(self, "y", None) is not None:
            self.y = round_trip(self.y, _dtype.BFLOAT16_NP)
        if self.inplace and y is not x:
            x[...] = y
            return x
        return y

    def _opmath_forward(self, x):
        """The forward of float16 ``x``, computed in float32 and rounded once."""
        self.opmath = True
        y = self.compute(xp_of(x), x.astype(np.float32)).astype(_FLOAT16)
        if self.uses_output and getattr(self, "y", None) is not None:
            self.y = y
        if self.inplace:
            x[...] = y
            return x
        return y

    def keep_input(self, x):
        """The input as backward will need it: copied when the op overwrites it. No later in-place
        change reaches the copy, so the overwritten tensor's version is then not checked (as in torch,
        where ``hardswish_`` followed by MobileNetV3's in-place dropout back-propagates)."""
        if self.inplace and self.needs_input_grad:
            self.uses_inputs = False
            return x.copy()
        return x


# ---- piecewise-linear family -----------------------------------------------------------------
class ReLU(_Activation):
    """max(x, 0); gradient 1 where the output is positive (0 at x == 0, like PyTorch)."""

    uses_output = True

    def compute(self, xp, x):
        if x.dtype.kind != "f":
            self.y = xp.maximum(x, 0, out=x if self.inplace else None)
        else:
            self.y = backends.kernels(x, "pointwise").relu(x, self.inplace)
        return self.y

    def backward(self, gy):
        return backends.kernels(gy, "pointwise").relu_backward(gy, self.y)

    def backward_tensors(self, gy):
        return masked(gy, self.y > 0)


class Hardtanh(_Activation):
    """clamp(x, lo, hi) with zero gradient at and beyond the bounds (relu6 is (0, 6))."""

    uses_output = True

    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def compute(self, xp, x):
        lo, hi = (self.lo, self.hi) if x.dtype.kind == "f" else (int(self.lo), int(self.hi))
        y = xp.clip(x, lo, hi, out=x if self.inplace else None)
        if self.inplace and self.needs_input_grad:
            # torch lets an in-place hardtanh's output change afterwards: keep the mask, not the output
            self.inside, self.uses_output = self._inside(y), False
        else:
            self.y = y
        return y

    def _inside(self, y):
        """Where the gradient passes: strictly between the bounds."""
        return (y > self.lo) & (y < self.hi)

    def backward(self, gy):
        return masked_grad(gy, self.inside if not self.uses_output else self._inside(self.y))

    def backward_tensors(self, gy):
        return masked(gy, self.inside if not self.uses_output else self._inside(self.y))


class LeakyReLU(_Activation):
    """x for x > 0, slope * x otherwise."""

    def __init__(self, slope):
        self.slope = slope

    def compute(self, xp, x):
        if self.inplace and self.needs_input_grad and self.slope < 0:
            raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative "
                               "slope which is not supported. This is caused by calling in-place forward "
                               "function with a negative slope, please call out-of-place version instead.")
        pos = x > 0
        if self.needs_input_grad:
            self.pos = pos
        return xp.where(pos, x, x * self.slope)

    def backward(self, gy):
        return xp_of(gy).where(self.pos, gy, gy * self.slope)

    def backward_tensors(self, gy):
        return gy.where(constant(self.pos), gy * self.slope)


class Threshold(_Activation):
    """value where x <= threshold, else x: a NaN input (or threshold) keeps x and its gradient, as in torch."""

    def __init__(self, threshold, value):
        self.threshold, self.value = threshold, value

    def compute(self, xp, x):
        keep = ~(x <= self.threshold)
        if self.needs_input_grad:
            self.keep = keep
        return xp.where(keep, x, xp.asarray(self.value, dtype=x.dtype))

    def backward(self, gy):
        return masked_grad(gy, self.keep)

    def backward_tensors(self, gy):
        return masked(gy, self.keep)


class Hardshrink(_Activation):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd):
        self.lambd = lambd

    def compute(self, xp, x):
        self.keep = xp.abs(x) > self.lambd
        return x * self.keep

    def backward(self, gy):
        return masked_grad(gy, self.keep)

    def backward_tensors(self, gy):
        return masked(gy, self.keep)


class Softshrink(_Activation):
    """x - lambd * sign(x) where |x| > lambd, else 0."""

    def __init__(self, lambd):
        self.lambd = lambd

    def compute(self, xp, x):
        self.keep = xp.abs(x) > self.lambd
        return (x - self.lambd * xp.sign(x)) * self.keep

    def backward(self, gy):
        return masked_grad(gy, self.keep)

    def backward_tensors(self, gy):
        return masked(gy, self.keep)


class RReLU(_Activation):
    """Randomized leaky ReLU (training): each non-positive element gets a slope ~ U(lower, upper)."""

    uses_inputs = False
    row_major_result = True

    def __init__(self, lower, upper, generator=None):
        self.lower, self.upper, self.generator = lower, upper, generator

    def compute(self, xp, x):
        # torch's CPU stream: a float64 uniform per element <= 0, in C order; the input times the unrounded slope
        from .._rng.continuous import rrelu_noise
        from ..random import generator_or_default
        host = x if xp is np else xp.asnumpy(x)
        slopes = xp.asarray(rrelu_noise(generator_or_default(self.generator), host, self.lower, self.upper))
        self.noise = slopes.astype(x.dtype)
        return (x.astype(slopes.dtype) * slopes).astype(x.dtype)

    def backward(self, gy):
        return gy * self.noise

    def backward_tensors(self, gy):
        return gy * constant(self.noise)


# ---- smooth activations ----------------------------------------------------------------------
class ELU(_Activation):
    """scale * (x if x > 0 else alpha * (exp(x * input_scale) - 1)): elu, selu and celu."""

    uses_output = True

    def __init__(self, alpha, scale=1.0, input_scale=1.0):
        self.alpha, self.scale, self.input_scale = alpha, scale, input_scale

    def compute(self, xp, x):
        pos = x > 0
        neg = xp.expm1(x * self.input_scale) * (self.scale * self.alpha)
        y = xp.where(pos, x * self.scale if self.scale != 1 else x, neg)
        if self.needs_input_grad:
            self.pos = pos
            if self.inplace:
                x[...] = y
                y = x
            else:  # torch's backward reads the input, not the output, as elu_ does (rounded in float16)
                self.x, self.uses_inputs = x, True
            self.y = y
        return y

    def backward(self, gy):
        # for x <= 0 the derivative is input_scale * scale * alpha * exp(x * input_scale), or from the output
        # input_scale * (y + scale * alpha)
        xp = xp_of(gy)
        if self.inplace:
            neg = (self.y + self.scale * self.alpha) * self.input_scale
        else:
            neg = xp.exp(self.x * self.input_scale) * (self.input_scale * self.scale * self.alpha)
        d = xp.where(self.pos, self.scale, neg)
        return gy * d.astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return (gy * self.scale).where(constant(self.pos), gy * ((y + self.scale * self.alpha) * self.input_scale))


class GELU(_Activation):
    """x * Phi(x) (exact, via erf) or its tanh approximation."""

    uses_inputs = True

    def __init__(self, approximate="none"):
        if approximate not in ("none", "tanh"):
            raise RuntimeError("approximate argument must be either none or tanh.")
        self.approximate = approximate

    def compute(self, xp, x):
        self.x = self.keep_input(x)
        if self.approximate == "tanh":
            return 0.5 * x * (1 + xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
        return 0.5 * x * (1 + erf_array(xp, x * (1 / math.sqrt(2.0))))

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        if self.approximate == "tanh":
            t = xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x)
            return gy * d
        cdf = 0.5 * (1 + erf_array(xp, x * (1 / math.sqrt(2.0))))
        pdf = xp.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi))
        return gy * (cdf + x * pdf)

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        if self.approximate == "tanh":
            t = (_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh()
            return gy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x * x))
        cdf = 0.5 * (1 + (x * (1 / math.sqrt(2.0))).erf())
        pdf = (-0.5 * x * x).exp() * (1 / math.sqrt(2 * math.pi))
        return gy * (cdf + x * pdf)


def _sigmoid(xp, x):
    """1 / (1 + exp(-x)), as PyTorch computes it (below about -88 exp overflows to inf and the result is 0)."""
    if x.dtype.kind != "f":
        e = xp.exp(-xp.abs(x))
        return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)
    return backends.kernels(x, "pointwise").sigmoid(x)


def _softplus(xp, x):
    """log(1 + exp(x)) without overflow."""
    return xp.maximum(x, 0) + xp.log1p(xp.exp(-xp.abs(x)))


class SiLU(_Activation):
    """x * sigmoid(x)."""

    uses_inputs = True

    def compute(self, xp, x):
        self.x = self.keep_input(x)
        return x * _sigmoid(xp, x)

    def backward(self, gy):
        s = _sigmoid(xp_of(gy), self.x)
        return gy * (s * (1 + self.x * (1 - s)))

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        s = x.sigmoid()
        return gy * (s * (1 + x * (1 - s)))


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    uses_inputs = True

    def compute(self, xp, x):
        self.x = self.keep_input(x)
        return x * xp.tanh(_softplus(xp, x))

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        t = xp.tanh(_softplus(xp, x))
        return gy * (t + x * (1 - t * t) * _sigmoid(xp, x))

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        t = softplus(x).tanh()
        return gy * (t + x * (1 - t * t) * x.sigmoid())


class Hardswish(_Activation):
    """x * relu6(x + 3) / 6."""

    uses_inputs = True

    def compute(self, xp, x):
        self.x = self.keep_input(x)
        return x * xp.clip(x + 3, 0, 6) * (1 / 6)

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        d = xp.where(x <= -3, 0, xp.where(x < 3, x * (1 / 3) + 0.5, 1))
        return masked_grad(gy * d.astype(gy.dtype, copy=False), ~(x <= -3))

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        return masked(gy * (x * (1 / 3) + 0.5).where(constant(self.x < 3), 1.0), ~(self.x <= -3))


# torch's Hardsigmoid backward scales by 1/6 rounded to float32 (1.0f / 6.0f) at every precision, float64 too
_ONE_SIXTH_FLOAT32 = 0.1666666716337204


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3)."""

    def compute(self, xp, x):
        if self.needs_input_grad:
            self.inside = (x > -3) & (x < 3)
        return xp.clip(x + 3, 0, 6) * (1 / 6)

    def backward(self, gy):
        return masked_grad(gy, self.inside) * _ONE_SIXTH_FLOAT32

    def backward_tensors(self, gy):
        return masked(gy, self.inside) * _ONE_SIXTH_FLOAT32


class Softplus(_Activation):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""

    uses_inputs = True

    def __init__(self, beta, threshold):
        self.beta, self.threshold = beta, threshold

    def compute(self, xp, x):
        self.x = x
        bx = x * self.beta
        return xp.where(bx > self.threshold, x, _softplus(xp, bx) / self.beta)

    def backward(self, gy):
        xp = xp_of(gy)
        bx = self.x * self.beta
        return gy * xp.where(bx > self.threshold, 1, _sigmoid(xp, bx)).astype(gy.dtype, copy=False)

    def backward_tensors(self, gy):
        linear = self.x * self.beta > self.threshold
        return gy * (self.saved_input(0, self.x) * self.beta).sigmoid().where(constant(~linear), 1.0)


class Softsign(_Activation):
    """x / (1 + |x|)."""

    composite = True  # torch's F computes it as separate ops

    uses_inputs = True

    def compute(self, xp, x):
        self.x = x
        return x / (1 + xp.abs(x))

    def backward(self, gy):
        d = 1 + xp_of(gy).abs(self.x)
        return gy / (d * d)

    def backward_tensors(self, gy):
        d = 1 + self.saved_input(0, self.x).abs()
        return gy / (d * d)


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    composite = True  # torch's F computes it as separate ops

    def compute(self, xp, x):
        self.t, self.x = xp.tanh(x), x
        return x - self.t

    def backward(self, gy):
        return gy * self.t * self.t

    def backward_tensors(self, gy):
        t = self.saved_input(0, self.x).tanh()
        return gy * t * t


class LogSigmoid(_Activation):
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""

    uses_inputs = True
    row_major_result = True

    def compute(self, xp, x):
        self.x = x
        return -_softplus(xp, -x)

    def backward(self, gy):
        return gy * _sigmoid(xp_of(gy), -self.x)

    def backward_tensors(self, gy):
        return gy * (-self.saved_input(0, self.x)).sigmoid()


class PReLU(Function):
    """x for x > 0, else weight[c] * x with one learned slope per channel (dim 1)."""

    def forward(self, x, w):
        shape = [1] * x.ndim
        if w.size > 1:
            shape[1] = w.size
        self.x, self.w = x, w.reshape(shape)
        return xp_of(x).where(x > 0, x, self.w * x)

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        pos = x > 0
        gx = xp.where(pos, gy, gy * self.w) if self.needs_input_grad[0] else None
        gw = None
        if self.needs_input_grad[1]:
            contrib = xp.where(pos, 0, x * gy)
            axes = tuple(i for i in range(x.ndim) if i != 1 or self.w.size == 1)
            gw = contrib.sum(axis=axes).reshape(self.input_meta[1][0])
        return gx, gw

    def backward_tensors(self, gy):
        x = self.saved_input(0, self.x)
        pos = constant(self.x > 0)
        w_shape = self.input_meta[1][0] if self.input_meta[1] is not None else self.w.shape
        w = self.saved_input(1, self.w.reshape(w_shape)).reshape(self.w.shape)
        gx = gy.where(pos, gy * w) if self.needs_input_grad[0] else None
        gw = None
        if self.needs_input_grad[1]:
            contrib = (x * gy).where(constant(self.x <= 0), 0.0)
            axes = tuple(i for i in range(x.ndim) if i != 1 or self.w.size == 1)
            gw = contrib.sum(axes).reshape(w_shape)
        return gx, gw


class GLU(Function):
    """a * sigmoid(b) where (a, b) are the two halves of the input along ``dim``."""

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x):
        xp = xp_of(x)
        self.a, self.b = xp.split(x, 2, axis=self.dim)
        self.s = _sigmoid(xp, self.b)
        return self.a * self.s

    def backward(self, gy):
        xp = xp_of(gy)
        ga = gy * self.s
        gb = ga * self.a * (1 - self.s)
        return xp.concatenate([ga, gb], axis=self.dim)

    def backward_tensors(self, gy):
        from .shape import cat
        x = self.saved_input(0, xp_of(self.a).concatenate([self.a, self.b], axis=self.dim))
        a, b = x.chunk(2, self.dim)
        s = b.sigmoid()
        ga = gy * s
        return cat([ga, ga * a * (1 - s)], self.dim)


# ---- softmax ---------------------------------------------------------------------------------
class Softmax(Function):
    """exp(x - max) / sum(exp(x - max)) along ``dim``; the result is contiguous whatever the input's layout, as
    torch's (a dropout after it, as in attention, draws its mask in memory order)."""

    uses_inputs, uses_output = False, True

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x):
        xp, axis = xp_of(x), self.dim if x.ndim else None
        if x.size == 0:  # nothing to normalise (torch's empty result; numpy's max has no identity)
            self.y = xp.empty_like(x, order="C")
            return self.y
        if not x.flags.c_contiguous:
            x = xp.ascontiguousarray(x)
        e = xp.asarray(_opmath(x) - x.max(axis=axis, keepdims=True))  # 0-d inputs may arrive as numpy scalars
        xp.exp(e, out=e)
        e /= e.sum(axis=axis, keepdims=True)
        self.y, e = _rounded_once(self, x, e)
        return e

    def backward(self, gy):
        axis = self.dim if gy.ndim else None
        gy, y = _opmath(gy), _opmath(self.y)
        gx = gy * y
        gx -= y * gx.sum(axis=axis, keepdims=True)
        return gx

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        gx = gy * y
        return gx - y * (gx.sum(self.dim, keepdim=True) if gy.ndim else gx)


class LogSoftmax(Function):
    """x - max - log(sum(exp(x - max))) along ``dim``; contiguous, as Softmax."""

    uses_inputs, uses_output = False, True

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x):
        if x.size == 0:  # as Softmax
            self.y = xp_of(x).empty_like(x, order="C")
            return self.y
        if not x.flags.c_contiguous:
            x = xp_of(x).ascontiguousarray(x)
        self.y, y = _rounded_once(self, x, log_softmax_array(xp_of(x), _opmath(x), self.dim if x.ndim else None))
        return y

    def backward(self, gy):
        axis = self.dim if gy.ndim else None
        gy, y = _opmath(gy), _opmath(self.y)
        return gy - xp_of(gy).exp(y) * gy.sum(axis=axis, keepdims=True)

    def backward_tensors(self, gy):
        y = self.saved_output(0, self.y)
        return gy - y.exp() * (gy.sum(self.dim, keepdim=True) if gy.ndim else gy)


def _opmath(x):
    """A float16 array in float32, where torch's softmax kernels compute it; other arrays unchanged."""
    return x.astype(np.float32) if x.dtype == _FLOAT16 else x


def _rounded_once(fn, x, y):
    """(saved output, result) of a softmax of ``x`` computed as ``y``: a float16 one rounded once to float16,
    a bfloat16 one (computed in float32 throughout) saved as the bfloat16 values that torch's backward reads."""
    if x.dtype == _FLOAT16:
        y = y.astype(_FLOAT16)
        return y, y
    return (round_trip(y, _dtype.BFLOAT16_NP) if fn.widened else y), y


def log_softmax_array(xp, x, axis):
    """log_softmax of a raw array (shared with the fused cross-entropy)."""
    y = x - x.max(axis=axis, keepdims=True)
    y -= xp.log(xp.exp(y).sum(axis=axis, keepdims=True))
    return y


def _softmax_input(input, dim, dtype, name):
    _check_input(input, name, allow_int=True)
    if dtype is not None:
        input = input.to(_dtype.to_dtype(dtype))
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{name}_lastdim_kernel_impl\" not implemented for '{input.dtype.title}'")
    return input, wrap_dim(dim, input.ndim)


# ---- torch-level functions -----------------------------------------------------------------------
def _quantized():
    """The quantized ops (``engine.ao``, imported on first use: it builds on this module's layers)."""
    from ..ao.nn.quantized import functional

    return functional


def relu(input):
    """max(input, 0) (``torch.relu``)."""
    if getattr(input, "is_quantized", False):
        return input.relu()
    _check_relu_input(input)
    return _run(ReLU(), input)


def relu_(input):
    """In-place relu (``torch.relu_``)."""
    if getattr(input, "is_quantized", False):
        return input.relu_()
    _check_relu_input(input)
    return _run(ReLU(), input, inplace=True)


def _check_relu_input(input):
    """relu takes integers but not booleans (and refuses complex input, by its kernel's name), as torch's."""
    if input.dtype is _dtype.bool_:
        raise NotImplementedError("Boolean inputs not supported for relu")
    _check_input(input, "relu", allow_int=True)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val] (``F.hardtanh``)."""
    _check_input(input, "hardtanh", allow_int=True)
    if max_val < min_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _run(Hardtanh(float(min_val), float(max_val)), input, inplace)


def relu6(input, inplace=False):
    """min(max(input, 0), 6) (``F.relu6``)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _check_input(input, "leaky_relu")
    return _run(LeakyReLU(float(negative_slope)), input, inplace)


def threshold(input, threshold, value):
    """``torch.threshold``: input where input > threshold, else value."""
    _check_input(input, "threshold", allow_int=True)
    return _run(Threshold(threshold, value), input)


def threshold_(input, threshold, value):
    _check_input(input, "threshold_", allow_int=True)
    return _run(Threshold(threshold, value), input, inplace=True)


def hardshrink(input, lambd=0.5):
    _check_input(input, "hardshrink")
    return _run(Hardshrink(float(lambd)), input)


def softshrink(input, lambd=0.5):
    _check_input(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, {finfo(input.dtype).max:g}] for input dtype "
                           f"{input.dtype.title}, but found {lambd:g}")
    return _run(Softshrink(float(lambd)), input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU; in eval it is leaky_relu with slope (lower + upper) / 2."""
    return _rrelu(input, lower, upper, training, generator, inplace=False)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(input, lower, upper, training, generator, inplace=True)


def _rrelu(input, lower, upper, training, generator, inplace):
    _check_input(input, "rrelu")
    if not training:  # leaky_relu, but with rrelu's row-major result
        fn = LeakyReLU((lower + upper) / 2)
        fn.row_major_result = True
        return _run(fn, input, inplace)
    if input.dtype is _dtype.float16 and input.device.type == "cpu":
        raise NotImplementedError('"rrelu_with_noise_out_cpu" not implemented for \'Half\'')
    return _run(RReLU(float(lower), float(upper), generator), input, inplace)


def elu(input, alpha=1.0, inplace=False):
    _check_input(input, "elu")
    return _run(ELU(float(alpha)), input, inplace)


def selu(input):
    """scale * elu(input, alpha) with the self-normalizing constants."""
    _check_input(input, "selu")
    return _run(ELU(_SELU_ALPHA, _SELU_SCALE), input)


def selu_(input):
    _check_input(input, "selu_")
    return _run(ELU(_SELU_ALPHA, _SELU_SCALE), input, inplace=True)


def _celu(input, alpha, name):
    """CELU as ELU with the input scaled by 1 / alpha, after torch's refusal of alpha = 0."""
    _check_input(input, name)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return ELU(float(alpha), 1.0, 1.0 / alpha)


def celu(input, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return _run(_celu(input, alpha, "celu"), input)


def celu_(input, alpha=1.0):
    return _run(_celu(input, alpha, "celu_"), input, inplace=True)


def gelu(input, approximate="none"):
    _check_input(input, "GeluKernelImpl")
    return _run(GELU(approximate), input)


def silu(input, inplace=False):
    _check_input(input, "silu")
    return _run(SiLU(), input, inplace)


def mish(input, inplace=False):
    _check_input(input, "mish")
    return _run(Mish(), input, inplace)


def hardswish(input, inplace=False):
    if getattr(input, "is_quantized", False):  # torch keeps the input's quantization
        return _quantized().hardswish(input, input.q_scale(), input.q_zero_point())
    _check_input(input, "hardswish")
    return _run(Hardswish(), input, inplace)


def hardsigmoid(input, inplace=False):
    if getattr(input, "is_quantized", False):
        return _quantized().hardsigmoid(input, inplace)
    _check_input(input, "hardsigmoid")
    return _run(Hardsigmoid(), input, inplace)


@autocast_mode.float32("cuda")
def softplus(input, beta=1.0, threshold=20.0):
    _check_input(input, "softplus")
    return _run(Softplus(float(beta), float(threshold)), input)


def softsign(input):
    _check_input(input, "softsign")
    return _run(Softsign(), input)


def tanhshrink(input):
    _check_input(input, "tanhshrink")
    return _run(Tanhshrink(), input)


def logsigmoid(input):
    _check_input(input, "log_sigmoid")
    return _run(LogSigmoid(), input)


@autocast_mode.lower_precision("cpu", "cuda")
def prelu(input, weight):
    """x for x > 0 else weight * x, ``weight`` holding one slope or one per channel (dim 1)."""
    _check_input(input, "prelu")
    n = weight.numel()
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1 or (n != 1 and n != channels):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter "
                           f"numbers = {n} and channel size = {channels}.")
    return PReLU()(input, weight)


def glu(input, dim=-1):
    """First half of ``input`` along ``dim`` gated by the sigmoid of the second half."""
    _check_input(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = wrap_dim(dim, input.ndim)
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {input.shape[d]}")
    return GLU(d)(input)


def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (``torch.softmax``), computed stably."""
    input, d = _softmax_input(input, dim, dtype, "softmax")
    return Softmax(d)(input)


def log_softmax(input, dim, dtype=None):
    """log(softmax(x)) along ``dim`` (``torch.log_softmax``), computed stably."""
    input, d = _softmax_input(input, dim, dtype, "log_softmax")
    return LogSoftmax(d)(input)


def _softmax_method(self, dim, dtype=None):
    return softmax(self, dim, dtype)


def _log_softmax_method(self, dim, dtype=None):
    return log_softmax(self, dim, dtype)


register_method(relu, "relu")
register_method(relu_, "relu_")
register_method(prelu, "prelu")
register_method(hardshrink, "hardshrink")
register_method(_softmax_method, "softmax")
register_method(_log_softmax_method, "log_softmax")

__all__ = ["relu", "relu_", "selu", "selu_", "celu", "celu_", "threshold", "threshold_", "prelu",
           "rrelu", "rrelu_", "hardshrink", "softmax", "log_softmax"]
