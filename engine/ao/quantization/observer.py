"""``torch.ao.quantization.observer``: modules that watch float tensors and choose their quantization parameters.

An observer is called on every tensor it watches (a layer's output during calibration, a weight at ``convert``)
and records their range; ``calculate_qparams()`` then gives the ``(scale, zero_point)`` that map that range onto
the integers of its ``dtype``. The arithmetic is PyTorch's, step for step in float32 (round half to even, the
``eps`` floor on the scale, ``reduce_range`` halving, zero point 128 for symmetric quint8), so a model calibrated
here gets the scales and zero points PyTorch gives it, bit for bit.

Observers are built from factories: ``MinMaxObserver.with_args(quant_min=0, quant_max=127)`` is a callable that
makes a fresh observer each call, which is what a ``QConfig`` holds.
"""
import bisect
import functools
import struct
import warnings
from abc import ABC, abstractmethod

import numpy as np

from ... import _dtype
from ...nn.modules.module import Module
from ...quantized_tensor import per_channel_affine, per_channel_symmetric, per_tensor_affine, per_tensor_symmetric
from ...tensor import _new

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "HistogramObserver",
           "PlaceholderObserver", "NoopObserver", "FixedQParamsObserver", "default_fixed_qparams_range_0to1_observer",
           "default_fixed_qparams_range_neg1to1_observer", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_histogram_observer", "default_placeholder_observer",
           "weight_observer_range_neg_127_to_127", "per_channel_weight_observer_range_neg_127_to_127",
           "calculate_qmin_qmax", "validate_qmin_qmax", "check_min_max_valid"]

FLOAT32_EPS = float(np.finfo(np.float32).eps)  # torch.finfo(torch.float32).eps, the default floor of a scale
_PER_TENSOR = (per_tensor_affine, per_tensor_symmetric)
_PER_CHANNEL = (per_channel_affine, per_channel_symmetric)
_SYMMETRIC = (per_tensor_symmetric, per_channel_symmetric)
_ALLOWED_DTYPES = (_dtype.qint8, _dtype.quint8, _dtype.qint32, _dtype.int8, _dtype.uint8, _dtype.int16,
                   _dtype.int32, _dtype.uint16)


# ---- observer factories (torch's ``_with_args``) -----------------------------------------------------------
class _PartialWrapper:
    """A ``functools.partial`` of an observer class whose ``callable_args`` are computed afresh at each call;
    ``with_args`` layers more fixed keywords on top, as torch's factories do."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        for name, make in self.callable_args.items():
            if name not in keywords:
                keywords = {**keywords, name: make()}
        return self.p(*args, **keywords)

    def __repr__(self):
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    """A factory making ``cls_or_self(**kwargs)`` anew at each call (a QConfig needs one observer per layer)."""
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs):
    """A factory whose keyword values are the results of calling ``kwargs``' values at each construction."""
    result = _PartialWrapper(functools.partial(cls_or_self))
    return result.with_callable_args(**kwargs)


def _partial_wrapper_equals(obs1, obs2):
    """Whether two factories build the same observer: same class (or inner factory), arguments and keywords."""
    return obs1.p.func == obs2.p.func and obs1.p.args == obs2.p.args and obs1.p.keywords == obs2.p.keywords


# ---- quantization ranges -------------------------------------------------------------------------------------
def validate_qmin_qmax(quant_min, quant_max):
    """A user-given quantization range must contain 0 and be non-empty (torch's checks and messages)."""
    if not quant_min <= 0 <= quant_max:
        raise AssertionError("Used-specified quantization range must include 0.")
    if quant_min >= quant_max:
        raise AssertionError("qmin must be strictly less than qmax for user-specified quantization range.")


def _customized_qrange(quant_min, quant_max, dtype, reduce_range):
    """A user-given range, checked against the bit width of ``dtype`` and halved by ``reduce_range``."""
    wide = dtype in (_dtype.qint32, _dtype.int32)
    qrange_len = quant_max - quant_min + 1
    if dtype in (_dtype.qint8, _dtype.int8) and not 0 < qrange_len <= 256:
        raise AssertionError("quantization range should be positive and not exceed the maximum bit range (=256).")
    if wide and not 0 < qrange_len <= 2 ** 32:
        raise AssertionError("quantization range should be positive and not exceed the maximum bit range "
                             "(=4294967296).")
    if reduce_range:
        quant_min, quant_max = quant_min // 2, quant_max // 2
    return quant_min, quant_max


def _default_qrange(dtype, reduce_range):
    """The full range of ``dtype`` (one bit less with ``reduce_range`` for the 8-bit types)."""
    if dtype in (_dtype.qint8, _dtype.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (_dtype.quint8, _dtype.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (_dtype.qint32, _dtype.int32):
        return -(2 ** 31), 2 ** 31 - 1
    if dtype is _dtype.uint16:
        return 0, 2 ** 16 - 1
    if dtype is _dtype.int16:
        return -(2 ** 15), 2 ** 15 - 1
    return 0, 15


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange, dtype, reduce_range):
    """The integer range an observer maps onto: the user's (halved by ``reduce_range``) or ``dtype``'s."""
    if has_customized_qrange:
        return _customized_qrange(quant_min, quant_max, dtype, reduce_range)
    return _default_qrange(dtype, reduce_range)


def check_min_max_valid(min_val, max_val):
    """Whether recorded extrema (numpy arrays) can give qparams: False (with torch's warning) before any data,
    an AssertionError when a minimum exceeds its maximum."""
    if min_val.size == 0 or max_val.size == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                      stacklevel=3)
        return False
    if min_val.ndim == 0 or max_val.ndim == 0:
        if min_val == float("inf") and max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                          stacklevel=3)
            return False
        if min_val > max_val:
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif np.any(min_val > max_val):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


def _default_qparams():
    """What torch returns for an observer that saw nothing: scale [1.] (float32), zero point [0] (int64)."""
    return _new(np.array([1.0], dtype=np.float32)), _new(np.array([0], dtype=np.int64))


def _observed_array(x):
    """A watched tensor's values as a float32 numpy array (torch casts to the float32 of its buffers)."""
    return np.asarray(x.detach().cpu()._data).astype(np.float32, copy=False)


def _per_channel_rows(array, ch_axis):
    """``array`` with ``ch_axis`` swapped to the front and the rest flattened: one row per channel."""
    swapped = np.swapaxes(array, 0, ch_axis)
    return swapped.reshape(swapped.shape[0], -1)


# ---- observers -----------------------------------------------------------------------------------------------
class ObserverBase(Module, ABC):
    """The base of every observer: ``forward`` records statistics of a tensor and returns it unchanged,
    ``calculate_qparams`` turns them into quantization parameters for ``dtype``."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @abstractmethod
    def forward(self, x):
        """Record ``x`` and return it."""

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        """The quantization parameters of what was recorded."""

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class UniformQuantizationObserverBase(ObserverBase):
    """Observers of an affine or symmetric uniform quantization: they hold ``qscheme``, the integer range
    ``quant_min``..``quant_max`` and the ``eps`` buffer (the smallest scale), and compute qparams from extrema."""

    _version = 3  # torch's: eps is a buffer (2), per-channel buffers are min_val/max_val (3)

    def __init__(self, dtype=_dtype.quint8, qscheme=per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected keyword arguments {sorted(kwargs)}")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. reduce_range "
                          "will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", _new(np.array([eps], dtype=np.float32)))
        if qscheme not in _PER_TENSOR + _PER_CHANNEL:
            raise AssertionError("Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 "per_channel_affine and per_channel_symmetric quantization scheme")
        if dtype not in _ALLOWED_DTYPES:
            raise AssertionError(f"Default Observer only works for {_ALLOWED_DTYPES} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            validate_qmin_qmax(quant_min, quant_max)
        self.quant_min, self.quant_max = calculate_qmin_qmax(quant_min, quant_max, self.has_customized_qrange,
                                                             dtype, reduce_range)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Checkpoints of version 1 have no ``eps``: torch fills in float32's epsilon."""
        if version is None or version == 1:
            state_dict.setdefault(prefix + "eps", _new(np.array([FLOAT32_EPS], dtype=np.float32)))

    def _symmetric_zero_point(self, shape):
        """The zero point of a symmetric scheme: the middle of an unsigned range, 0 for a signed one."""
        if self.dtype in (_dtype.quint8, _dtype.uint8):
            middle = (self.quant_min + self.quant_max) // 2 if self.has_customized_qrange else 128
            return np.full(shape, middle, dtype=np.int64)
        if self.dtype is _dtype.uint16:
            return np.full(shape, 2 ** 15, dtype=np.int64)
        return np.zeros(shape, dtype=np.int64)

    def _symmetric_qparams(self, min_val_neg, max_val_pos):
        """Scale ``max(|min|, max) / ((qmax - qmin) / 2)`` (floored at eps); int64 zero point."""
        max_val_pos = np.maximum(-min_val_neg, max_val_pos)
        scale = max_val_pos / np.float32((self.quant_max - self.quant_min) / 2)
        scale = np.maximum(scale, self.eps._data)
        return scale, self._symmetric_zero_point(min_val_neg.shape)

    def _affine_qparams(self, min_val_neg, max_val_pos):
        """Scale ``(max - min) / (qmax - qmin)`` (floored at eps); zero point ``qmin - round(min / scale)``,
        clamped to the range, int32 (torch's ``.to(torch.int)``)."""
        scale = (max_val_pos - min_val_neg) / np.float32(self.quant_max - self.quant_min)
        scale = np.maximum(scale, self.eps._data)
        rounded = np.round(min_val_neg / scale).astype(np.int32)
        zero_point = np.subtract(np.int32(self.quant_min), rounded, dtype=np.int32)
        return scale, np.clip(zero_point, self.quant_min, self.quant_max).astype(np.int32)

    def _calculate_qparams(self, min_val, max_val):
        """``(scale, zero_point)`` tensors (float32; int64 symmetric or int32 affine, as torch's) for extrema
        ``min_val``/``max_val`` (float32 arrays: 0-d per tensor, one entry per channel)."""
        if not check_min_max_valid(min_val, max_val):
            return _default_qparams()
        min_val_neg = np.minimum(min_val, np.zeros_like(min_val))
        max_val_pos = np.maximum(max_val, np.zeros_like(max_val))
        if self.qscheme in _SYMMETRIC:
            scale, zero_point = self._symmetric_qparams(min_val_neg, max_val_pos)
        else:
            scale, zero_point = self._affine_qparams(min_val_neg, max_val_pos)
        scale = np.asarray(scale, dtype=np.float32).reshape(scale.shape or (1,))
        zero_point = np.asarray(zero_point).reshape(zero_point.shape or (1,))
        return _new(scale), _new(zero_point)

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Records the running minimum and maximum of every tensor it sees (per tensor): the range quantized is
    exactly the range observed."""

    def __init__(self, dtype=_dtype.quint8, qscheme=per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("MinMaxObserver's qscheme only support torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.register_buffer("min_val", _new(np.array(np.inf, dtype=np.float32)))
        self.register_buffer("max_val", _new(np.array(-np.inf, dtype=np.float32)))
        if qscheme is per_tensor_symmetric and reduce_range and dtype is _dtype.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def _update(self, min_cur, max_cur):
        """The new running extrema given this tensor's."""
        return np.minimum(min_cur, self.min_val._data), np.maximum(max_cur, self.max_val._data)

    def forward(self, x_orig):
        """Records the running minimum and maximum of ``x_orig``; returns it unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = _observed_array(x_orig)
        min_val, max_val = self._update(x.min(), x.max())
        self.min_val._data[...] = min_val
        self.max_val._data[...] = max_val
        return x_orig

    def calculate_qparams(self):
        """``(scale, zero_point)`` of the range recorded so far."""
        return self._calculate_qparams(self.min_val._data, self.max_val._data)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        """Forget the recorded range."""
        self.min_val._data[...] = np.inf
        self.max_val._data[...] = -np.inf


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Like ``MinMaxObserver``, but the extrema are moving averages: ``m + c * (m_new - m)`` after the first
    tensor (``c`` = ``averaging_constant``)."""

    def __init__(self, averaging_constant=0.01, dtype=_dtype.quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(f"MovingAverageMinMaxObserver's qscheme only support "
                                      f"torch.per_tensor_symmetric and torch.per_tensor_affine. but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError(f"MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                                      f"averaging constant of {averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def _update(self, min_cur, max_cur):
        min_val, max_val = self.min_val._data, self.max_val._data
        if min_val == np.inf and max_val == -np.inf:
            return min_cur, max_cur
        return _moving_average(min_val, min_cur, self.averaging_constant), \
            _moving_average(max_val, max_cur, self.averaging_constant)


def _moving_average(old, new, constant):
    """``old + c * (new - old)`` in float32, as torch computes it (the constant rounded to float32)."""
    return old + np.float32(constant) * (new - old)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Records the running minimum and maximum of each slice along ``ch_axis`` (the output channels of a conv
    or linear weight): one scale and zero point per channel."""

    def __init__(self, ch_axis=0, dtype=_dtype.quint8, qscheme=per_channel_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric "
                                      "and torch.per_channel_affine.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", _new(np.zeros(0, dtype=np.float32)))
        self.register_buffer("max_val", _new(np.zeros(0, dtype=np.float32)))
        if qscheme is per_channel_symmetric and reduce_range and dtype is _dtype.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def _update(self, min_cur, max_cur):
        """The new running extrema given this tensor's (the first tensor's own)."""
        if self.min_val._data.size == 0 or self.max_val._data.size == 0:
            return min_cur, max_cur
        return np.minimum(min_cur, self.min_val._data), np.maximum(max_cur, self.max_val._data)

    def forward(self, x_orig):
        """Records the per-channel running minimum and maximum of ``x_orig``; returns it unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        if x_orig.dim() < 2:  # torch flattens all but the channel dim from dim 1
            raise IndexError(f"Dimension out of range (expected to be in range of [-{max(x_orig.dim(), 1)}, "
                             f"{max(x_orig.dim(), 1) - 1}], but got 1)")
        rows = _per_channel_rows(_observed_array(x_orig), self.ch_axis)
        min_val, max_val = self._update(rows.min(axis=1), rows.max(axis=1))
        self.min_val._data = np.array(min_val, dtype=np.float32)  # resized, as torch's resize_ + copy_
        self.max_val._data = np.array(max_val, dtype=np.float32)
        return x_orig

    def calculate_qparams(self):
        """``(scales, zero_points)``, one per channel recorded."""
        return self._calculate_qparams(self.min_val._data, self.max_val._data)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        """A checkpoint's per-channel extrema resize the (possibly empty) buffers first, as torch's loading."""
        for name in ("min_val", "max_val"):
            shape = getattr(state_dict.get(prefix + name), "shape", None)
            if shape is not None:
                self._buffers[name]._data = np.zeros(tuple(shape), dtype=np.float32)
        super()._plan_load(state_dict, prefix, plan, missing, unexpected, errors)

    def reset_min_max_vals(self):
        """Forget the recorded ranges (the buffers become empty again)."""
        self.min_val._data = np.zeros(0, dtype=np.float32)
        self.max_val._data = np.zeros(0, dtype=np.float32)


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """``PerChannelMinMaxObserver`` with moving-average extrema (``averaging_constant``), as
    ``MovingAverageMinMaxObserver`` per tensor."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=_dtype.quint8, qscheme=per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only support "
                                      "torch.per_channel_symmetric and torch.per_channel_affine.")
        if is_dynamic:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _update(self, min_cur, max_cur):
        if self.min_val._data.size == 0 or self.max_val._data.size == 0:
            return min_cur, max_cur
        return _moving_average(self.min_val._data, min_cur, self.averaging_constant), \
            _moving_average(self.max_val._data, max_cur, self.averaging_constant)


# ---- HistogramObserver --------------------------------------------------------------------------------------
def _histc(x, bins, lo, hi):
    """``torch.histc(x, bins, min=lo, max=hi)`` of a float32 array, as torch's CPU kernel bins it: bin
    ``int((v - lo) * bins / (hi - lo))`` in float32, the top edge in the last bin, values outside (and NaN)
    dropped; an empty range becomes the data's range, then ``[lo - 1, hi + 1]``."""
    left, right = float(lo), float(hi)
    if left == right and x.size:
        left, right = float(x.min()), float(x.max())
    if left == right:
        left, right = left - 1, right + 1
    if not (np.isfinite(left) and np.isfinite(right)):
        raise RuntimeError(f"torch.histc: range of [{left}, {right}] is not finite")
    if not left < right:
        raise RuntimeError("torch.histc: max must be larger than min")
    lo32, hi32 = np.float32(left), np.float32(right)
    values = x[(x >= lo32) & (x <= hi32)]
    pos = ((values - lo32) * np.float32(bins) / (hi32 - lo32)).astype(np.int64)
    return np.bincount(np.minimum(pos, bins - 1), minlength=bins).astype(np.float32)


def _int_to_float(ints):
    """Integers as C++ converts them to float (rounded to float32), held in float64 for exact products."""
    return ints.astype(np.float32).astype(np.float64)


def _linspace(start, end, steps):
    """``torch.linspace`` in float32 as torch's CPU kernel computes it: ``start + step * i`` for the first half
    and ``end - step * (steps - 1 - i)`` for the rest, each a fused multiply-add (one rounding; float64 holds
    the exact product)."""
    start, end = np.float32(start), np.float32(end)
    step = (end - start) / np.float32(steps - 1)
    index = np.arange(steps)
    low = np.float64(start) + np.float64(step) * _int_to_float(index)
    high = np.float64(end) - np.float64(step) * _int_to_float(steps - 1 - index)
    return np.where(index < steps // 2, low, high).astype(np.float32)


def _bincount_float32(index, weights, length):
    """``torch.bincount(index, weights)`` with float32 weights: summed in float32, in input order."""
    out = np.zeros(length, dtype=np.float32)
    np.add.at(out, index, weights)
    return out


_FLOAT32 = struct.Struct("f")


def _to_float32(value):
    """A Python float rounded to float32 (a fast ``float(np.float32(value))``)."""
    return _FLOAT32.unpack(_FLOAT32.pack(value))[0]


def _norm(delta_begin, delta_end, density):
    """``density * (end^3 - begin^3) / 3``: the L2 error of values spread evenly over [begin, end] (float32)."""
    return density * ((delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / np.float32(3))


class HistogramObserver(UniformQuantizationObserverBase):
    """Records a running histogram (``bins`` bins over the range seen so far, re-binned as the range grows) and
    picks the ``min``/``max`` to quantize by minimizing the L2 quantization error over the histogram (torch's
    non-linear search, which clips outliers), then computes qparams as ``MinMaxObserver`` does.

    The arithmetic follows torch's float32 steps (``histc`` binning, ``linspace``, float32 ``bincount``,
    double-accumulated ``cumsum``); the error sums of the search are float32 sums whose last bit may differ from
    torch's vectorized order, which can only matter where two candidate ranges tie to the last bit."""

    def __init__(self, bins=2048, dtype=_dtype.quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=FLOAT32_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("HistogramObserver's qscheme only support torch.per_tensor_symmetric and "
                                      "torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.bins = bins
        self.register_buffer("histogram", _new(np.zeros(bins, dtype=np.float32)))
        self.register_buffer("min_val", _new(np.array(np.inf, dtype=np.float32)))
        self.register_buffer("max_val", _new(np.array(-np.inf, dtype=np.float32)))
        self.dst_nbins = 2 ** (dtype.np.itemsize * 8)
        self.upsample_rate = 16  # source bins split 16 ways when re-binned, to reduce the re-binning error

    # -- recording --
    def _upscale_histogram(self, histogram, orig_min, orig_max, update_min, update_max):
        """``histogram`` (over ``orig_min..orig_max``) re-binned onto ``update_min..update_max``: each bin split
        into ``upsample_rate`` parts, each part moved whole to the new bin holding its midpoint."""
        rate = self.upsample_rate
        parts = np.repeat(histogram, rate) / np.float32(rate)
        bin_size = (orig_max - orig_min) / np.float32(self.bins * rate)
        mid_points = _linspace(orig_min, orig_max, self.bins * rate + 1)[:-1] + np.float32(0.5) * bin_size
        boundaries = _linspace(update_min, update_max, self.bins + 1)
        bucket = np.searchsorted(boundaries, mid_points, side="right") - 1
        return _bincount_float32(np.clip(bucket, 0, self.bins - 1), parts, self.bins)

    def _combine_histograms(self, orig_hist, orig_min, orig_max, update_hist, update_min, update_max):
        """The recorded histogram moved onto the new range and added to the new tensor's."""
        if update_min == orig_min and update_max == orig_max:
            return orig_hist + update_hist
        if orig_min == orig_max:  # everything seen so far was one value: one bin of the new range
            bin_value = np.sum(orig_hist, dtype=np.float32)
            return _histc(np.asarray(orig_min).reshape(1), self.bins, update_min, update_max) * bin_value \
                + update_hist
        if update_min > orig_min:
            raise AssertionError("update_min must be <= orig_min")
        if update_max < orig_max:
            raise AssertionError("update_max must be >= orig_max")
        return update_hist + self._upscale_histogram(orig_hist, orig_min, orig_max, update_min, update_max)

    def _set_range(self, min_val, max_val):
        self.min_val._data = np.array(min_val, dtype=np.float32)
        self.max_val._data = np.array(max_val, dtype=np.float32)

    def forward(self, x_orig):
        """Adds ``x_orig``'s values (infinities ignored) to the histogram; returns ``x_orig`` unchanged."""
        if x_orig.numel() == 0:
            return x_orig
        x = _observed_array(x_orig).reshape(-1)
        x_min, x_max = x.min(), x.max()
        if x_min == -np.inf or x_max == np.inf:
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[np.abs(x) != np.inf]
            if x.size == 0:
                return x_orig
            x_min, x_max = x.min(), x.max()
        self._record(x, x_min, x_max)
        return x_orig

    def _record(self, x, x_min, x_max):
        current_min, current_max = self.min_val._data, self.max_val._data
        if current_min == np.inf or current_max == -np.inf:
            self._set_range(x_min, x_max)
            self.histogram._data = _histc(x, self.bins, x_min, x_max)
            return
        new_min, new_max = np.minimum(current_min, x_min), np.maximum(current_max, x_max)
        update = _histc(x, self.bins, new_min, new_max)
        if new_min == current_min and new_max == current_max:
            self.histogram._data = self.histogram._data + update
            return
        self.histogram._data = self._combine_histograms(self.histogram._data, current_min, current_max, update,
                                                        new_min, new_max)
        self._set_range(new_min, new_max)

    # -- choosing the range --
    def _compute_quantization_error(self, next_start_bin, next_end_bin):
        """The L2 error of quantizing the histogram with the range of bins ``next_start_bin..next_end_bin``
        into ``dst_nbins`` levels (float32, as torch's)."""
        bin_width = (float(self.max_val._data) - float(self.min_val._data)) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        f32 = np.float32
        width32, dst32, last = f32(bin_width), f32(dst_bin_width), f32(self.dst_nbins - 1)
        src_bin_begin = (np.arange(self.bins) - next_start_bin).astype(f32) * width32
        src_bin_end = src_bin_begin + width32
        dst_bin_of_begin = np.clip(np.floor_divide(src_bin_begin, dst32), f32(0), last)
        dst_bin_of_begin_center = (dst_bin_of_begin + f32(0.5)) * dst32
        dst_bin_of_end = np.clip(np.floor_divide(src_bin_end, dst32), f32(0), last)
        density = self.histogram._data / width32
        norm = np.zeros(self.bins, dtype=f32)
        norm += _norm(src_bin_begin - dst_bin_of_begin_center, np.full(self.bins, f32(dst_bin_width / 2)), density)
        inner = _norm(f32(-dst_bin_width / 2), f32(dst_bin_width / 2), density)
        norm += (dst_bin_of_end - dst_bin_of_begin - f32(1)) * inner
        dst_bin_of_end_center = dst_bin_of_end * dst32 + f32(dst_bin_width / 2)
        norm += _norm(f32(-dst_bin_width / 2), src_bin_end - dst_bin_of_end_center, density)
        return float(np.sum(norm, dtype=f32))

    def _search_bins(self):
        """The first and last bins of the error-minimizing range: moving in from whichever end of the histogram
        holds less mass, in quantile steps of 1e-5, until the error grows (torch's loop; its bin scans are
        searches of the non-decreasing cumulative sum, its float32 comparisons exact on Python floats)."""
        total = float(np.sum(self.histogram._data, dtype=np.float32))
        c_sum = np.cumsum(self.histogram._data, dtype=np.float64).astype(np.float32).tolist()
        stepsize, alpha, beta = 1e-5, 0.0, 1.0
        start_bin, end_bin, norm_min = 0, self.bins - 1, float("inf")
        while alpha < beta:
            next_alpha, next_beta = alpha + stepsize, beta - stepsize
            left = bisect.bisect_left(c_sum, _to_float32(next_alpha * total))
            right = bisect.bisect_right(c_sum, _to_float32(next_beta * total)) - 1
            left, right = min(max(left, start_bin), end_bin), min(max(right, start_bin), end_bin)
            next_start_bin, next_end_bin = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin, alpha = left, next_alpha
            else:
                next_end_bin, beta = right, next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min, start_bin, end_bin = norm, next_start_bin, next_end_bin
        return start_bin, end_bin

    def _non_linear_param_search(self):
        """The ``(min, max)`` to quantize: the edges of the error-minimizing range of bins (float32)."""
        if self.histogram._data.shape[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val._data - self.min_val._data) / np.float32(self.bins)
        start_bin, end_bin = self._search_bins()
        new_min = self.min_val._data + bin_width * np.float32(start_bin)
        new_max = self.min_val._data + bin_width * np.float32(end_bin + 1)
        return new_min, new_max

    def calculate_qparams(self):
        """``(scale, zero_point)`` of the error-minimizing range found in the histogram."""
        if self.min_val._data == np.inf and self.max_val._data == -np.inf:
            warnings.warn("must run observer before calling calculate_qparams. Returning default scale and zero "
                          "point ", stacklevel=2)
            return _default_qparams()
        if self.bins != len(self.histogram._data):
            raise AssertionError("The number of bins in histogram should be equal to the number of bins supplied "
                                 "while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(np.asarray(new_min, np.float32), np.asarray(new_max, np.float32))

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        """A checkpoint's extrema replace the buffers whatever their shape (version 2 saved empty ones for an
        observer that saw nothing: those mean inf/-inf), as torch's loading does."""
        for name, empty in (("min_val", np.inf), ("max_val", -np.inf)):
            shape = getattr(state_dict.get(prefix + name), "shape", None)
            if shape is None:
                continue
            if tuple(shape) == (0,):
                shape, state_dict[prefix + name] = (), _new(np.array(empty, dtype=np.float32))
            self._buffers[name]._data = np.zeros(tuple(shape), np.float32)
        super()._plan_load(state_dict, prefix, plan, missing, unexpected, errors)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class PlaceholderObserver(ObserverBase):
    """Observes nothing: it only carries a configuration (``dtype``, ``qscheme``, range) to ``from_float``."""

    def __init__(self, dtype=_dtype.float32, custom_op_name="", compute_dtype=None, quant_min=None, quant_max=None,
                 qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.quant_min, self.quant_max = quant_min, quant_max
        self.eps = FLOAT32_EPS if eps is None else eps
        self.custom_op = custom_op_name
        if compute_dtype:
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` will be deprecated "
                          "in a future release of PyTorch.", stacklevel=2)

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


class NoopObserver(ObserverBase):
    """Observes nothing and has no qparams (a weight left in float, ``dtype`` float16 by default)."""

    def __init__(self, dtype=_dtype.float16, custom_op_name=""):
        super().__init__(dtype=dtype)
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")  # noqa: TRY002


class FixedQParamsObserver(ObserverBase):
    """Observes nothing: its qparams are the constant ``scale`` and ``zero_point`` it was made with (buffers of one
    element), for outputs whose range is known (sigmoid's [0, 1])."""

    def __init__(self, scale, zero_point, dtype=_dtype.quint8, qscheme=per_tensor_affine, quant_min=0, quant_max=255,
                 is_dynamic=False):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", _new(np.array([scale], dtype=np.float32)))
        self.register_buffer("zero_point", _new(np.array([zero_point], dtype=np.int32)))
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


def _is_activation_post_process(module):
    """Whether ``module`` is an observer or a fake quantize module (what ``prepare`` inserts and ``convert``
    removes)."""
    from .fake_quantize import FakeQuantizeBase  # that module builds on this one

    return isinstance(module, (ObserverBase, FakeQuantizeBase))


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
"""Activations in 0..127 (torch's default: room for fbgemm's 16-bit accumulation)."""
default_placeholder_observer = PlaceholderObserver
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
"""A histogram (error-minimizing range) observer for activations in 0..127."""
default_weight_observer = MinMaxObserver.with_args(dtype=_dtype.qint8, qscheme=per_tensor_symmetric)
"""Symmetric qint8 weights, one scale per tensor (qnnpack's)."""
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(dtype=_dtype.qint8,
                                                                         qscheme=per_channel_symmetric)
"""Symmetric qint8 weights, one scale per output channel (fbgemm's and x86's)."""
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=_dtype.qint8, qscheme=per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=_dtype.qint8, qscheme=per_channel_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=_dtype.quint8, quant_min=0, quant_max=255)
"""Outputs in [-1, 1] (tanh)."""
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=_dtype.quint8, quant_min=0, quant_max=255)
"""Outputs in [0, 1] (sigmoid, hardsigmoid, softmax)."""
