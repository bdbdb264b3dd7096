"""``torch.ao.nn.quantized.functional``: the quantized ops on ``QuantizedTensor``s, around the CPU kernels.

Each takes quint8 activations and gives quint8 results; conv and linear take qint8 weights (per tensor or per
output channel) and a float bias, and requantize to the ``scale``/``zero_point`` given. Pooling and ``relu`` keep
their input's quantization; ``hardsigmoid`` gives torch's fixed one (scale 1/256, zero point 0). The arithmetic
follows the quantized engine selected in ``engine.backends.quantized.engine``, the input's layout (convolutions
give channels-last results, the others keep their input's) and, for the elementwise ops, the thread count.
"""
import numpy as np

from ...._dtype import quint8
from ....backends import quantized as _switch
from ....quantized_tensor import QuantizedTensor, _kernels
from ....utils.threads import get_num_threads

__all__ = ["conv2d", "linear", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "hardswish", "hardsigmoid", "relu"]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v) * (2 // len(v))


def _activation(input, what):
    """The int array and (scale, zero point) of a per-tensor quint8 input; one line naming ``what`` otherwise."""
    if not isinstance(input, QuantizedTensor) or input.dtype is not quint8 or input._per_channel:
        kind = input.dtype if isinstance(input, QuantizedTensor) else type(input).__name__
        raise RuntimeError(f"quantized {what} expects a per-tensor quint8 quantized input, got {kind}")
    return input._data, input._scale, input._zero_point


def _weight_qparams(weight):
    """A qint8 weight's scales and zero points as arrays (one entry when quantized per tensor)."""
    if weight._per_channel:
        return weight._scales, weight._zero_points
    return np.array([weight._scale]), np.array([weight._zero_point])


def _bias(bias):
    return None if bias is None else np.asarray(bias.detach()._data, dtype=np.float32)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros", scale=1.0,
           zero_point=0, dtype=quint8, *, relu=False):
    """A quantized 2-d convolution (``relu=True``: with the ReLU fused, as ``ConvReLU2d``)."""
    x, x_scale, x_zp = _activation(input, "conv2d")
    if padding_mode != "zeros":
        raise NotImplementedError(f"quantized conv2d supports padding_mode='zeros' only, got '{padding_mode}'")
    if x.ndim != 4:
        raise ValueError(f"Input shape must be `(N, C, H, W)`!, got {tuple(x.shape)}")
    w_scales, w_zps = _weight_qparams(weight)
    bound = weight._memo("conv2d_weight_bound", lambda: _kernels.conv2d_weight_bound(weight._data, w_zps))
    out = _kernels.conv2d(x, x_scale, x_zp, weight._data, w_scales, w_zps, _bias(bias), _pair(stride),
                          _pair(padding), _pair(dilation), groups, float(scale), int(zero_point), relu,
                          _switch.engine, weight_bound=bound)
    return QuantizedTensor(out, quint8, scale, zero_point, channels_last=True)


def linear(input, weight, bias=None, scale=None, zero_point=None, *, relu=False):
    """A quantized ``x W^T + b`` over the last dim (``relu=True``: ``LinearReLU``)."""
    x, x_scale, x_zp = _activation(input, "linear")
    w_scales, w_zps = _weight_qparams(weight)
    flat = x.reshape(-1, x.shape[-1])
    out = _kernels.linear(flat, x_scale, x_zp, weight._data, w_scales, w_zps, _bias(bias), float(scale),
                          int(zero_point), relu, _switch.engine)
    return QuantizedTensor(out.reshape(x.shape[:-1] + (out.shape[-1],)), quint8, scale, zero_point)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max pooling of the integers (exact: the order of quantized values is their real order)."""
    if return_indices:
        raise NotImplementedError("return_indices=True is not implemented for quantized max_pool2d")
    x, scale, zp = _activation(input, "max_pool2d")
    stride = kernel_size if stride is None or stride == () or stride == [] else stride
    out = _kernels.max_pool2d(x, _pair(kernel_size), _pair(stride), _pair(padding), _pair(dilation), ceil_mode,
                              engine_name=_switch.engine)
    return input._like(out)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Average pooling, rounded back to the input's quantization."""
    x, scale, zp = _activation(input, "avg_pool2d")
    stride = kernel_size if stride is None or stride == () or stride == [] else stride
    out = _kernels.avg_pool2d(x, scale, zp, _pair(kernel_size), _pair(stride), _pair(padding), ceil_mode,
                              count_include_pad, divisor_override, engine_name=_switch.engine,
                              channels_last=input.is_channels_last)
    return input._like(out)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive average pooling, rounded back to the input's quantization."""
    x, scale, zp = _activation(input, "adaptive_avg_pool2d")
    size = _pair(output_size)
    size = tuple(x.shape[-2 + i] if s is None else s for i, s in enumerate(size))
    return input._like(_kernels.adaptive_avg_pool2d(x, scale, zp, size, engine_name=_switch.engine,
                                                    channels_last=input.is_channels_last))


def hardswish(input, scale, zero_point):
    """``x * relu6(x + 3) / 6`` requantized to ``scale``/``zero_point``."""
    x, x_scale, x_zp = _activation(input, "hardswish")
    out = _kernels.hardswish(x, x_scale, x_zp, float(scale), int(zero_point), engine_name=_switch.engine,
                             channels_last=input.is_channels_last, threads=get_num_threads())
    return QuantizedTensor(out, quint8, scale, zero_point, channels_last=input._channels_last)


HARDSIGMOID_SCALE, HARDSIGMOID_ZERO_POINT = 1.0 / 256, 0  # torch's fixed output quantization of hardsigmoid


def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6`` in torch's fixed quantization (scale 1/256, zero point 0)."""
    x, scale, zp = _activation(input, "hardsigmoid")
    data = _kernels.hardsigmoid(x, scale, zp, engine_name=_switch.engine, channels_last=input.is_channels_last,
                                threads=get_num_threads())
    out = QuantizedTensor(data, quint8, HARDSIGMOID_SCALE, HARDSIGMOID_ZERO_POINT,
                          channels_last=input._channels_last)
    return input._adopt(out) if inplace else out


def relu(input, inplace=False):
    """``max(x, 0)``: integers below the zero point become it; the quantization is kept."""
    return input.relu_() if inplace else input.relu()
