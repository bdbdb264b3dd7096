"""``torch.ao.quantization.fake_quantize``: quantize-then-dequantize in float, for quantization-aware training.

A fake quantize module observes the float tensors it is called on (its ``activation_post_process`` observer), keeps
the resulting ``scale`` and ``zero_point`` as buffers and returns the tensor rounded onto that integer grid, still in
float: the network trains with the rounding it will have once converted. Gradients pass straight through inside the
quantization range and are zero where the value was clamped (the straight-through estimator with torch's mask).

``FusedMovingAvgObsFakeQuantize`` (the default of ``get_default_qat_qconfig``) is torch's one-kernel version: a
moving-average min/max update, the qparams of fbgemm's ``ChooseQuantizationParams`` and the fake quantization; its
observer's ``calculate_qparams`` (what ``convert`` reads) is the observer's own. The arithmetic is torch's, step for
step in float32 (and float64 where its C++ uses double), so the results are torch's bit for bit.
"""
from abc import ABC, abstractmethod

import numpy as np

from ... import _dtype
from ...autograd.double_backward import masked
from ...autograd.function import Function
from ...nn.modules.module import Module
from ...ops._common import xp_of
from ...quantized_tensor import per_channel_affine, per_channel_symmetric, per_tensor_affine, per_tensor_symmetric
from ...tensor import Tensor, _new
from .observer import (FixedQParamsObserver, MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                       _default_qrange, _with_args, default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize", "FusedMovingAvgObsFakeQuantize",
           "disable_fake_quant", "disable_observer", "enable_fake_quant", "enable_observer", "default_fake_quant",
           "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
           "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]

_PER_CHANNEL = (per_channel_affine, per_channel_symmetric)
_SYMMETRIC = (per_tensor_symmetric, per_channel_symmetric)
SMALL_SCALE_THRESHOLD = np.float32(6.1e-5)  # fbgemm's smallest scale (fp16's smallest normal)


# ---- the fake quantization op ------------------------------------------------------------------------------
class FakeQuantizeAffine(Function):
    """``(clamp(round(x / scale) + zp, qmin, qmax) - zp) * scale`` with per-element (broadcast) ``scale`` and
    integer ``zero_point`` arrays: torch's CPU kernel, ``x * float32(1 / scale)`` rounded half to even (in float32
    for a float32 input) and the product in float32. Backward: the gradient where the unclamped integer was inside
    ``[qmin, qmax]``, else 0."""

    uses_inputs = False

    def __init__(self, scale, zero_point, quant_min, quant_max):
        self.scale, self.zero_point = scale, zero_point
        self.quant_min, self.quant_max = quant_min, quant_max

    def forward(self, x):
        xp = xp_of(x)
        scale, zero_point = xp.asarray(self.scale), xp.asarray(self.zero_point)  # host qparams to x's device
        work = np.promote_types(x.dtype, np.float32)  # half precision computes in float32, as torch's kernel
        inv_scale = (np.float32(1) / scale).astype(work, copy=False)
        q = xp.rint(x.astype(work, copy=False) * inv_scale) + zero_point
        self.mask = (q >= self.quant_min) & (q <= self.quant_max)
        steps = (xp.clip(q, self.quant_min, self.quant_max) - zero_point).astype(np.float32, copy=False)
        return (steps * scale).astype(x.dtype, copy=False)

    def backward(self, gy):
        return gy * self.mask

    def backward_tensors(self, gy):
        """The same mask on the gradient tensor: linear, so differentiable to any order."""
        return masked(gy, self.mask)


class FakeQuantizeAffineFloatZeroPoint(FakeQuantizeAffine):
    """``FakeQuantizeAffine`` with floating point zero points (torch's per-channel kernel for them): the integer is
    ``rint(zero_point + x * float32(1 / scale))`` rounded from float32 (``lrintf``), and the output
    ``(clamp(q) - zero_point) * scale`` is computed in float64 and rounded once to the input's dtype."""

    def forward(self, x):
        xp = xp_of(x)
        scale, zero_point = xp.asarray(self.scale), xp.asarray(self.zero_point)
        product = x.astype(np.promote_types(x.dtype, np.float32), copy=False) * (np.float32(1) / scale)
        q = xp.rint((product + zero_point).astype(np.float32, copy=False))
        self.mask = (q >= self.quant_min) & (q <= self.quant_max)
        clamped = xp.clip(q, self.quant_min, self.quant_max).astype(np.float64)
        steps = clamped - zero_point.astype(np.float64)
        return (steps * scale.astype(np.float64)).astype(x.dtype, copy=False)


def _check_range(quant_min, quant_max, zero_points):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")
    if np.any(zero_points < quant_min) or np.any(zero_points > quant_max):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _float_input(input, name):
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        kind = input.dtype if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"{name}: expected a floating point tensor, got {kind}")


def _host(x):
    """A tensor's values as a host numpy array (qparams are read on the host, wherever they live)."""
    return np.asarray(x.detach().cpu()._data)


def _value(x, kind):
    """A Python number or one-element tensor as a numpy scalar of ``kind`` (float32 scale, int zero point)."""
    array = (_host(x) if isinstance(x, Tensor) else np.asarray(x)).reshape(-1)
    if array.size != 1:
        raise RuntimeError(f"expected a one-element scale and zero_point, got {array.size} elements")
    return kind(array[0])


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """``input`` rounded onto the integer grid ``scale * (q - zero_point)``, ``q`` in ``[quant_min, quant_max]``,
    returned in float (``torch.fake_quantize_per_tensor_affine``; scale and zero point numbers or one-element
    tensors). Gradient: straight through where ``q`` needed no clamping."""
    _float_input(input, "fake_quantize_per_tensor_affine")
    scale, zero_point = _value(scale, np.float32), _value(zero_point, np.int64)
    _check_range(quant_min, quant_max, zero_point)
    return FakeQuantizeAffine(scale, np.float32(zero_point), quant_min, quant_max)(input)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """``fake_quantize_per_tensor_affine`` with one scale (float32 or bfloat16) and zero point (int32, or float32
    or float16: then not rounded first, ``FakeQuantizeAffineFloatZeroPoint``) per slice along ``axis``
    (``torch.fake_quantize_per_channel_affine``)."""
    _float_input(input, "fake_quantize_per_channel_affine")
    if scale.dtype not in (_dtype.float32, _dtype.bfloat16):
        raise RuntimeError(f"Scale must be Float or BFloat16, found {scale.dtype.title}")
    if zero_point.dtype not in (_dtype.int32, _dtype.float32, _dtype.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {zero_point.dtype.title}")
    scales, zero_points = _host(scale).astype(np.float32), _host(zero_point)
    if not 0 <= axis < input.ndim:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scales.shape != (input.shape[axis],) or zero_points.shape != scales.shape:
        raise RuntimeError(f"dimensions of scale and zero-point must be ({input.shape[axis]},), got "
                           f"{scales.shape} and {zero_points.shape}")
    _check_range(quant_min, quant_max, zero_points)
    shape = [1] * input.ndim
    shape[axis] = -1
    kind = FakeQuantizeAffineFloatZeroPoint if zero_point.dtype.is_floating_point else FakeQuantizeAffine
    return kind(scales.reshape(shape), zero_points.astype(np.float32).reshape(shape), quant_min, quant_max)(input)


# ---- the fused observer + fake quantization ------------------------------------------------------------------
def _symmetric_range(lo, hi, qmin, qmax):
    """fbgemm's symmetric extremes ``m * sq_min`` and ``m * sq_max`` (``sq_min = -(span // 2 + 1)``,
    ``sq_max = span // 2``), ``m`` the larger of ``|lo / sq_min|`` and ``|hi / sq_max|`` (float32 quotients,
    double products rounded to float32)."""
    symmetric_qmin, symmetric_qmax = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
    max_scale = np.maximum(np.abs(lo / np.float32(symmetric_qmin)), np.abs(hi / np.float32(symmetric_qmax)))
    max_scale = max_scale.astype(np.float64)
    return (max_scale * symmetric_qmin).astype(np.float32), (max_scale * symmetric_qmax).astype(np.float32)


def _raise_small_scales(lo, hi, scale, qmin, qmax):
    """fbgemm's extremes and scales once a scale below ``SMALL_SCALE_THRESHOLD`` is raised to it (the extremes
    stretched by the same factor, or the non-zero one set to the threshold's full range)."""
    small = scale < SMALL_SCALE_THRESHOLD
    span = SMALL_SCALE_THRESHOLD * np.float32(qmax - qmin)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        amplifier = SMALL_SCALE_THRESHOLD / scale
        new_lo = np.where(lo == 0, lo, np.where(hi == 0, -span, lo * amplifier))
        new_hi = np.where(lo == 0, span, np.where(hi == 0, hi, hi * amplifier))
    return (np.where(small, new_lo, lo), np.where(small, new_hi, hi),
            np.where(small, SMALL_SCALE_THRESHOLD, scale))


def _nudged_zero_points(lo, hi, scale, qmin, qmax, preserve_sparsity):
    """fbgemm's zero points (double arithmetic): from whichever extreme gives the smaller error (the middle of the
    range for symmetric), rounded half to even and clamped to the range."""
    lo_steps, hi_steps = lo.astype(np.float64) / scale, hi.astype(np.float64) / scale
    from_min = np.where(abs(qmin) + np.abs(lo_steps) < abs(qmax) + np.abs(hi_steps), qmin - lo_steps,
                        qmax - hi_steps)
    if preserve_sparsity:
        from_min = np.where((lo < 0) & (hi > 0), (qmin + qmax) / 2, from_min)
    return np.clip(np.rint(from_min), qmin, qmax).astype(np.int64)


def choose_qparams(min_vals, max_vals, qmin, qmax, preserve_sparsity):
    """``(scales, zero_points)`` (float32, int64 arrays) of the ranges ``[min_vals, max_vals]`` as fbgemm's
    ``ChooseQuantizationParams``, what torch's fused observer + fake quantize kernel uses; ``preserve_sparsity``
    is symmetric quantization."""
    lo, hi = np.asarray(min_vals, dtype=np.float32), np.asarray(max_vals, dtype=np.float32)
    if preserve_sparsity:
        both_signs = (lo < 0) & (hi > 0)
        sym_lo, sym_hi = _symmetric_range(lo, hi, qmin, qmax)
        lo, hi = np.where(both_signs, sym_lo, lo), np.where(both_signs, sym_hi, hi)
    lo, hi = np.minimum(lo, np.float32(0)), np.maximum(hi, np.float32(0))
    scale = ((hi.astype(np.float64) - lo) / (qmax - qmin)).astype(np.float32)
    with np.errstate(divide="ignore"):
        degenerate = (scale == 0) | np.isinf(np.float32(1) / scale)
    scale = np.where(degenerate, np.float32(0.1), scale)
    lo, hi, scale = _raise_small_scales(lo, hi, scale, qmin, qmax)
    return scale, _nudged_zero_points(lo, hi, scale, qmin, qmax, preserve_sparsity)


def _moving_average(running, current, constant):
    """torch's fused update, per element: the current value where the running one is infinite (never observed),
    else ``running + c * (current - running)`` in float32."""
    with np.errstate(invalid="ignore"):
        averaged = running + np.float32(constant) * (current - running)
    return np.where(np.isinf(running), current, averaged).astype(np.float32)


def _copy_into(buffer, values):
    """Write ``values`` into ``buffer`` in place (torch's ``copy_``: tensors sharing it see them), resizing it
    first when the shapes differ (torch's ``resize_``); the buffer keeps its dtype."""
    values = np.asarray(values)
    if buffer._data.shape == values.shape:
        buffer._data[...] = values
    else:
        buffer._data = values.astype(buffer._data.dtype)


def _per_channel_rows(x, ch_axis):
    """``x`` with ``ch_axis`` first, flattened to one row per channel (torch's fused kernel's view)."""
    moved = np.swapaxes(x, 0, ch_axis) if x.ndim != 2 else x
    return moved.reshape(moved.shape[0], -1)


# ---- modules -----------------------------------------------------------------------------------------------
class FakeQuantizeBase(Module, ABC):
    """The base of fake quantize modules: the ``fake_quant_enabled`` and ``observer_enabled`` switches (uint8
    buffers of one element, as torch's, so that they are saved and replicated with the model)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", _new(np.array([1], dtype=np.uint8)))
        self.register_buffer("observer_enabled", _new(np.array([1], dtype=np.uint8)))

    @abstractmethod
    def forward(self, x):
        """Observe and fake-quantize ``x`` as the switches say."""

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        """The ``(scale, zero_point)`` of what was observed."""

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled._data[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled._data[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)

    with_args = classmethod(_with_args)


def _observer_dtype(observer, observer_kwargs):
    """The quantized dtype the observer factory will have (for checking a user's quant range)."""
    keywords = getattr(getattr(observer, "p", None), "keywords", {})
    return keywords.get("dtype", observer_kwargs.get("dtype", _dtype.quint8))


class FakeQuantize(FakeQuantizeBase):
    """Observe (``observer``, built with ``observer_kwargs`` and the quant range) and fake-quantize: in forward,
    while ``observer_enabled``, the observer records the tensor and ``scale``/``zero_point`` take its qparams;
    while ``fake_quant_enabled``, the tensor is returned fake-quantized with them (per channel along the observer's
    ``ch_axis`` for a per-channel observer)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None, is_dynamic=False,
                 **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype_min, dtype_max = _default_qrange(_observer_dtype(observer, observer_kwargs), False)
            if dtype_min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > dtype_max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        self.register_buffer("scale", _new(np.array([1.0], dtype=np.float32)))
        self.register_buffer("zero_point", _new(np.array([0], dtype=np.int32)))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def _set_qparams(self, scale, zero_point):
        """Copy qparams into the buffers (resized, as torch's ``resize_`` + ``copy_``; dtypes kept)."""
        _copy_into(self.scale, np.reshape(scale, -1))
        _copy_into(self.zero_point, np.reshape(zero_point, -1))

    def forward(self, X):
        if self.observer_enabled._data[0] == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.calculate_qparams()
            self._set_qparams(scale._data, zero_point._data)
        if self.fake_quant_enabled._data[0] == 1:
            if self.is_per_channel:
                return fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                        self.activation_post_process.quant_min,
                                                        self.activation_post_process.quant_max)
            return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                   self.activation_post_process.quant_min,
                                                   self.activation_post_process.quant_max)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        """A checkpoint's ``scale``/``zero_point`` resize the buffers first (per-channel ones start with one
        element), as torch's loading does."""
        for name in ("scale", "zero_point"):
            shape = getattr(state_dict.get(prefix + name), "shape", None)
            if shape is not None:
                buffer = self._buffers[name]
                buffer._data = np.zeros(tuple(shape), dtype=buffer._data.dtype)
        super()._plan_load(state_dict, prefix, plan, missing, unexpected, errors)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with constant qparams (a ``FixedQParamsObserver``'s, whose buffers it shares): what the
    outputs of sigmoid-like activations get, whose range is known (``[0, 1]``: scale 1/256, zero point 0)."""

    def __init__(self, observer):
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise AssertionError(f"{type(self).__name__}'s observer must be a FixedQParamsObserver")
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point
        if self.qscheme not in (per_tensor_affine, per_tensor_symmetric):
            raise AssertionError(f"Only per tensor quantization is supported FixedQParamsFakeQuantize module, got "
                                 f"qscheme:{self.qscheme}")

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """``FakeQuantize`` with a moving-average min/max observer, in torch's single fused step: the observer's
    extrema updated, then the ``scale``/``zero_point`` buffers chosen by fbgemm's ``ChooseQuantizationParams``
    (symmetric when the observer's scheme is) and the tensor fake-quantized with them. Its ``calculate_qparams``,
    which ``convert`` reads, is the observer's. The switches are int64 buffers here, as torch's."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", _new(np.array([1], dtype=np.int64)))
        self.register_buffer("observer_enabled", _new(np.array([1], dtype=np.int64)))
        self.is_symmetric_quant = self.activation_post_process.qscheme in _SYMMETRIC

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, qscheme={self.qscheme}, "
                f"reduce_range={self.activation_post_process.reduce_range}")

    def _observe(self, x):
        """The moving-average update of the observer's extrema with ``x``'s, while ``observer_enabled`` (per
        channel, empty extrema are first sized to the channels, and the qparam buffers with them)."""
        observer = self.activation_post_process
        if self.is_per_channel:
            x = _per_channel_rows(x, self.ch_axis)
            if observer.min_val._data.size == 0:
                _copy_into(observer.min_val, np.full(x.shape[0], np.inf))
                _copy_into(observer.max_val, np.full(x.shape[0], -np.inf))
                self._set_qparams(np.ones(x.shape[0]), np.zeros(x.shape[0]))
        if not self.observer_enabled._data[0]:
            return
        if self.is_per_channel and self.ch_axis != 0:
            raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on "
                               "axis == 0")
        axis = 1 if self.is_per_channel else None
        constant = observer.averaging_constant
        _copy_into(observer.min_val, _moving_average(observer.min_val._data, x.min(axis=axis), constant))
        _copy_into(observer.max_val, _moving_average(observer.max_val._data, x.max(axis=axis), constant))

    def forward(self, X):
        if X.numel() == 0:
            return X.clone()
        self._observe(np.asarray(X.detach()._data, dtype=np.float32))
        if not self.fake_quant_enabled._data[0]:
            return X.clone()
        observer = self.activation_post_process
        self._set_qparams(*choose_qparams(observer.min_val._data, observer.max_val._data, observer.quant_min,
                                          observer.quant_max, self.is_symmetric_quant))
        if self.is_per_channel:
            return fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                    observer.quant_min, observer.quant_max)
        return fake_quantize_per_tensor_affine(X, self.scale, self.zero_point, observer.quant_min,
                                               observer.quant_max)


def _is_fake_quant(mod):
    return isinstance(mod, FakeQuantizeBase)


def disable_fake_quant(mod):
    """Stop fake-quantizing (``model.apply(disable_fake_quant)``: every fake quantize module of a model)."""
    if _is_fake_quant(mod):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    """Fake-quantize again (``model.apply(enable_fake_quant)``)."""
    if _is_fake_quant(mod):
        mod.enable_fake_quant()


def disable_observer(mod):
    """Freeze the observed ranges, hence the qparams (``model.apply(disable_observer)``)."""
    if _is_fake_quant(mod):
        mod.disable_observer()


def enable_observer(mod):
    """Observe again (``model.apply(enable_observer)``)."""
    if _is_fake_quant(mod):
        mod.enable_observer()


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=_dtype.quint8, qscheme=per_tensor_affine, reduce_range=True)
"""Activations: quint8 in 0..127 (reduce_range), moving-average extrema."""
default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                                   dtype=_dtype.qint8, qscheme=per_tensor_symmetric,
                                                   reduce_range=False)
"""Weights: symmetric qint8 per tensor."""
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dtype.qint8,
    qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
"""Weights: symmetric qint8 per output channel."""
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
"""Outputs in [-1, 1] (tanh): scale 2/256, zero point 128."""
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
"""Outputs in [0, 1] (sigmoid, hardsigmoid, softmax): scale 1/256, zero point 0."""
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                                                       quant_min=0, quant_max=255, dtype=_dtype.quint8)
"""Fused activation fake quant: quint8 in 0..255."""
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dtype.qint8,
    qscheme=per_tensor_symmetric)
"""Fused weight fake quant: symmetric qint8 per tensor (qnnpack's)."""
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=_dtype.qint8,
    qscheme=per_channel_symmetric)
"""Fused weight fake quant: symmetric qint8 per output channel (fbgemm's and x86's)."""
