"""``torch.ao.nn.quantized``'s layers: what ``engine.ao.quantization.convert`` turns a calibrated model into.

Their state is not parameters: a conv or linear layer holds a qint8 weight (a ``QuantizedTensor``), a float bias
and its output's scale and zero point, saved under torch's keys (``weight``, ``bias``, ``scale``, ``zero_point``;
a linear layer's weight and bias as the pair ``_packed_params._packed_params``), so a torchvision quantized
checkpoint loads with ``load_state_dict`` and ``state_dict`` gives its keys back.
"""
import functools
from collections import OrderedDict

import numpy as np

from ...._dtype import qint8, quint8
from ....nn.modules.linear import Identity
from ....nn.modules.module import Module
from ....nn.modules._utils import _pair
from ....quantized_tensor import QuantizedTensor, _kernels, quantize_per_channel, quantize_per_tensor
from ....tensor import Size, Tensor, _new, to_array
from . import functional as qF

__all__ = ["Quantize", "DeQuantize", "Conv2d", "Linear", "LinearPackedParams", "FloatFunctional", "QFunctional",
           "Hardswish"]


def _scalar(value, kind, key):
    """A checkpoint's 0-d (or one-element) tensor as a Python ``kind``; one line naming ``key`` otherwise."""
    array = np.asarray(value._data if isinstance(value, Tensor) else value)
    if array.size != 1:
        raise ValueError(f"{key}: expected one value, got shape {tuple(array.shape)}")
    return kind(array.reshape(()))


class _OwnState(Module):
    """A module whose state entries are not parameters or buffers: ``_state()`` names them (name -> value) and
    ``_set_state(values)`` adopts checked checkpoint values; ``_check(name, value)`` says what is wrong, if
    anything."""

    def _state(self):
        raise NotImplementedError

    def _set_state(self, values):
        raise NotImplementedError

    def _check(self, name, value):
        return None

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for name, value in self._state().items():
            destination[prefix + name] = value

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        names = self._state()
        found = {}
        for name in names:
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            problem = self._check(name, state_dict[key])
            if problem and problem.startswith("copying a param with shape"):  # torch's two kinds of message
                errors.append(f"size mismatch for {key}: {problem}")
            elif problem:
                errors.append(f'While copying the parameter named "{key}", {problem}')
            else:
                found[name] = state_dict[key]
        for key in state_dict:
            head, dot, _ = key[len(prefix):].partition(".")
            if key.startswith(prefix) and ((dot and head not in self._modules) or (not dot and head not in names)):
                unexpected.append(key)
        if len(found) == len(names):
            plan.append(functools.partial(self._set_state, found))


class _OutputQParams(_OwnState):
    """A layer that requantizes its result to its own ``scale`` and ``zero_point`` (saved as 0-d tensors)."""

    def _state(self):
        return OrderedDict(scale=_new(np.array(self.scale, dtype=np.float32)),
                           zero_point=_new(np.array(self.zero_point, dtype=np.int64)))

    def _set_state(self, values):
        self.scale = _scalar(values["scale"], float, "scale")
        self.zero_point = _scalar(values["zero_point"], int, "zero_point")


def _output_qparams(observed):
    """The (scale, zero point) a calibrated float module's output observer chose."""
    scale, zero_point = observed.activation_post_process.calculate_qparams()
    return float(np.asarray(scale._data).reshape(-1)[0]), int(np.asarray(zero_point._data).reshape(-1)[0])


def _quantized_weight(observed, observer, observe=True):
    """A float layer's weight quantized with the qparams of ``observer`` (its qconfig's weight observer, or a QAT
    layer's ``weight_fake_quant``) once it has seen the weight (unless ``observe`` is False), as torch's
    ``from_float``."""
    if observe:
        observer(observed.weight)
    scales, zero_points = observer.calculate_qparams()
    if observer.qscheme.name.startswith("per_channel"):
        return quantize_per_channel(observed.weight, scales, zero_points, observer.ch_axis, observer.dtype)
    return quantize_per_tensor(observed.weight, float(scales._data.reshape(-1)[0]),
                               int(zero_points._data.reshape(-1)[0]), observer.dtype)


def _weighted_layer(cls, mod):
    """The layer of an observed module whose weight and bias the quantized layer takes, and the observer that
    quantizes the weight: a QAT layer itself (its batch norm folded into the weight and bias first, in place, as
    torch's ``from_float`` does) with its ``weight_fake_quant``, else the float layer (a fused module's first)
    with a fresh weight observer of the module's qconfig."""
    if hasattr(mod, "weight_fake_quant"):
        if hasattr(mod, "bn"):
            from ...quantization.fuse import fuse_conv_bn_weights  # engine.ao.quantization imports this module

            mod.weight, mod.bias = fuse_conv_bn_weights(mod.weight, mod.bias, mod.bn.running_mean,
                                                        mod.bn.running_var, mod.bn.eps, mod.bn.weight, mod.bn.bias)
        return mod, mod.weight_fake_quant
    layer = mod[0] if cls._relu else mod
    return layer, mod.qconfig.weight()


def _check_weight(value, current):
    if not isinstance(value, QuantizedTensor) or value.dtype is not qint8:
        kind = type(value)
        return (f"expected an engine qint8 quantized tensor, got a {kind.__module__}.{kind.__qualname__} of dtype "
                f"{getattr(value, 'dtype', None)} (torch's tensors load through a checkpoint file: engine.load)")
    if value.shape != current.shape:
        return (f"copying a param with shape {value.shape} from checkpoint, the shape in current model is "
                f"{current.shape}.")
    return None


def _check_bias(value, out_features):
    if value is None:
        return None
    try:
        shape = np.shape(to_array(value))
    except (TypeError, ValueError):
        return f"expected a float tensor as the bias, got a {type(value).__module__}.{type(value).__qualname__}"
    if shape != (out_features,):
        return (f"copying a param with shape {Size(shape)} from checkpoint, the shape in current model is "
                f"{Size((out_features,))}.")
    return None


def _float_bias(value):
    """A bias as given (a tensor, an array...) as an engine float32 tensor of its own, or None."""
    return None if value is None else _new(np.array(to_array(value), dtype=np.float32))


class Quantize(Module):
    """Float input -> quint8 with a fixed ``scale`` and ``zero_point`` (buffers of shape (1,), as torch's)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None):
        super().__init__()
        self.register_buffer("scale", _new(np.array([scale], dtype=np.float32)))
        self.register_buffer("zero_point", _new(np.array([zero_point], dtype=np.int64)))
        self.dtype = dtype

    def forward(self, X):
        return quantize_per_tensor(X, float(self.scale._data[0]), int(self.zero_point._data[0]), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        scale, zero_point = _output_qparams(mod)
        return Quantize(scale, zero_point, mod.activation_post_process.dtype)

    def extra_repr(self):
        return f"scale={self.scale!r}, zero_point={self.zero_point!r}, dtype={self.dtype!r}"


class DeQuantize(Module):
    """A quantized tensor -> its float32 values."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return DeQuantize()


class Conv2d(_OutputQParams):
    """A quantized 2-d convolution: quint8 in, qint8 weight (per tensor or per output channel), quint8 out."""

    _FLOAT_MODULE = "Conv2d"
    _relu = False

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.dilation = _pair(padding), _pair(dilation)
        self.groups, self.padding_mode = groups, padding_mode
        self.scale, self.zero_point = 1.0, 0
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self._weight = QuantizedTensor(np.zeros(shape, np.int8), qint8, 1.0, 0)
        self._bias = _new(np.zeros(out_channels, np.float32)) if bias else None

    def _get_name(self):
        return "Quantized" + type(self).__name__

    def weight(self):
        return self._weight

    def bias(self):
        return self._bias

    def set_weight_bias(self, w, b):
        problem = _check_weight(w, self._weight) or _check_bias(b, self.out_channels)
        if problem:
            raise ValueError(problem)
        self._weight, self._bias = w, _float_bias(b)

    def _state(self):
        state = OrderedDict(weight=self._weight, bias=self._bias)
        state.update(super()._state())
        return state

    def _check(self, name, value):
        if name == "weight":
            return _check_weight(value, self._weight)
        if name == "bias":
            return _check_bias(value, self.out_channels)
        return None

    def _set_state(self, values):
        self.set_weight_bias(values["weight"], values["bias"])
        super()._set_state(values)

    def forward(self, input):
        return qF.conv2d(input, self._weight, self._bias, self.stride, self.padding, self.dilation, self.groups,
                         self.padding_mode, self.scale, self.zero_point, relu=self._relu)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self._bias is None:
            text += ", bias=False"
        return text

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized layer of a calibrated float conv (a fused ConvReLU2d's conv, for ``ConvReLU2d``) or of a
        trained QAT conv (batch norm folded in, weight quantized with its fake quantize's qparams)."""
        conv, weight_observer = _weighted_layer(cls, mod)
        qconv = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                    conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode)
        qconv.set_weight_bias(_quantized_weight(conv, weight_observer), conv.bias)
        qconv.scale, qconv.zero_point = _output_qparams(mod)
        return qconv


class LinearPackedParams(_OwnState):
    """A quantized linear layer's weight and bias, saved as torch's ``dtype`` and ``_packed_params`` pair."""

    _version = 3  # torch's: its loader reads this layout only from checkpoints that say version 3

    def __init__(self, dtype=qint8):
        super().__init__()
        self.dtype = dtype
        self._weight = None
        self._bias = None

    def _state(self):
        return OrderedDict(dtype=self.dtype, _packed_params=(self._weight, self._bias))

    def _check(self, name, value):
        if name == "dtype":
            return None if value is qint8 else f"quantized linear weights are qint8, the checkpoint says {value!r}"
        if not isinstance(value, tuple) or len(value) != 2:
            return f"expected the pair (weight, bias), got {type(value).__name__}"
        return _check_weight(value[0], self._weight) or _check_bias(value[1], self._weight.shape[0])

    def _set_state(self, values):
        weight, bias = values["_packed_params"]
        self._weight, self._bias = weight, _float_bias(bias)  # a copy: a checkpoint's Parameter stays unregistered


class Linear(_OutputQParams):
    """A quantized ``x W^T + b``: quint8 in, qint8 weight, quint8 out."""

    _version = 3  # torch's: its loader reads this layout only from checkpoints that say version 3

    _relu = False

    def __init__(self, in_features, out_features, bias_=True, dtype=qint8):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.scale, self.zero_point = 1.0, 0
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params._weight = QuantizedTensor(np.zeros((out_features, in_features), np.int8), qint8, 1.0, 0)
        self._packed_params._bias = _new(np.zeros(out_features, np.float32)) if bias_ else None

    def _get_name(self):
        return "Quantized" + type(self).__name__

    def weight(self):
        return self._packed_params._weight

    def bias(self):
        return self._packed_params._bias

    def set_weight_bias(self, w, b):
        problem = _check_weight(w, self.weight()) or _check_bias(b, self.out_features)
        if problem:
            raise ValueError(problem)
        self._packed_params._weight, self._packed_params._bias = w, _float_bias(b)

    def forward(self, x):
        return qF.linear(x, self.weight(), self.bias(), self.scale, self.zero_point, relu=self._relu)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={self.scale}, "
                f"zero_point={self.zero_point}, qscheme={self.weight().qscheme()!r}")

    def __repr__(self):  # torch prints no child: the packed parameters are part of the layer
        return f"{self._get_name()}({self.extra_repr()})"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized layer of a calibrated float linear (a fused LinearReLU's linear, for ``LinearReLU``) or of
        a trained QAT linear (weight quantized with its fake quantize's qparams)."""
        linear, weight_observer = _weighted_layer(cls, mod)
        qlinear = cls(linear.in_features, linear.out_features, linear.bias is not None)
        weight = _quantized_weight(linear, weight_observer, observe=not use_precomputed_fake_quant)
        qlinear.set_weight_bias(weight, linear.bias)
        qlinear.scale, qlinear.zero_point = _output_qparams(mod)
        return qlinear


class FloatFunctional(Module):
    """The float tensor ops a quantizable model calls through a module (so calibration observes their results):
    ``convert`` replaces it with a ``QFunctional`` that runs them on quantized tensors."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying operation")

    def add(self, x, y):
        return self.activation_post_process(x + y)

    def add_scalar(self, x, y):
        return x + y  # torch does not observe it: the result's range is the input's, shifted

    def mul(self, x, y):
        return self.activation_post_process(x * y)

    def mul_scalar(self, x, y):
        return x * y

    def cat(self, x, dim=0):
        from ....ops.shape import cat

        return self.activation_post_process(cat(x, dim=dim))

    def add_relu(self, x, y):
        return self.activation_post_process((x + y).relu())


class QFunctional(_OutputQParams):
    """``FloatFunctional``'s ops on quantized tensors, each result requantized to ``scale``/``zero_point``
    (``add_scalar``/``mul_scalar`` keep their input's, as in torch)."""

    def __init__(self):
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        self.activation_post_process = Identity()

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the underlying operation")

    def _binary(self, kernel, x, y, **kw):
        """``kernel`` on two quantized tensors, requantized to this module's scale and zero point; the result is
        channels last where ``x`` is and has its shape (torch's layout rule; a broadcast result is contiguous)."""
        out = kernel(x._data, x._scale, x._zero_point, y._data, y._scale, y._zero_point, self.scale,
                     self.zero_point, **kw)
        return QuantizedTensor(out, quint8, self.scale, self.zero_point,
                               channels_last=x._channels_last and out.shape == x._data.shape)

    def _add(self, x, y, relu):
        if x.shape != y.shape:  # the fbgemm kernel's vectorised lanes follow one shape
            raise RuntimeError(f"quantized add expects tensors of one shape, got {tuple(x.shape)} and "
                               f"{tuple(y.shape)}")
        return self._binary(_kernels.add, x, y, relu=relu, engine_name=qF._switch.engine,
                            channels_last=x.is_channels_last, threads=qF.get_num_threads())

    def add(self, x, y):
        return self._add(x, y, relu=False)

    def add_relu(self, x, y):
        return self._add(x, y, relu=True)

    def mul(self, x, y):
        return self._binary(_kernels.mul, x, y)

    def add_scalar(self, x, y):
        data, scale, zero_point = _kernels.add_scalar(x._data, x._scale, x._zero_point, float(y))
        return QuantizedTensor(data, quint8, scale, zero_point, channels_last=x._channels_last)

    def mul_scalar(self, x, y):
        data, scale, zero_point = _kernels.mul_scalar(x._data, x._scale, x._zero_point, float(y))
        return QuantizedTensor(data, quint8, scale, zero_point, channels_last=x._channels_last)

    def cat(self, x, dim=0):
        """The tensors joined along ``dim``, requantized; torch's channels-last path when all of them are."""
        layout = all(t.is_channels_last for t in x)
        out = _kernels.cat([(t._data, t._scale, t._zero_point) for t in x], dim, self.scale, self.zero_point,
                              channels_last=layout)
        return QuantizedTensor(out, quint8, self.scale, self.zero_point, channels_last=layout)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        qf = cls()
        qf.scale, qf.zero_point = _output_qparams(mod)
        return qf


class Hardswish(_OutputQParams):
    """Quantized ``hardswish``, requantized to ``scale``/``zero_point``."""

    def __init__(self, scale, zero_point, device=None, dtype=None):
        super().__init__()
        self.scale, self.zero_point = float(scale), int(zero_point)

    def _get_name(self):
        return "QuantizedHardswish"

    def forward(self, input):
        return qF.hardswish(input, self.scale, self.zero_point)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant=False):
        return Hardswish(*_output_qparams(mod))
