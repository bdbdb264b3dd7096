"""``torch.ao.nn.qat``: float layers that fake-quantize their weight, for quantization-aware training.

Each is its float layer (same parameters and keys) with a ``weight_fake_quant`` child made by its qconfig's weight
factory: the forward uses the weight rounded onto its int8 grid, gradients pass straight through. ``prepare_qat``
swaps float layers for them (``from_float``, sharing the parameters); ``convert`` quantizes the weight with the
``weight_fake_quant``'s qparams; ``to_float`` gives the plain float layer back.

``engine.ao.quantization`` imports this package (and ``engine.ao.nn.intrinsic.qat``) for its mappings.
"""
from ....nn import functional as F
from ....nn.modules.activation import ReLU
from ....nn.modules.conv import Conv2d as _FloatConv2d
from ....nn.modules.linear import Linear as _FloatLinear
from ....nn.parameter import Parameter
from .. import intrinsic as nni

__all__ = ["Conv2d", "Linear"]


def _check_float_module(mod, cls):
    """``from_float``'s checks: the float module's exact type and a qconfig."""
    if type(mod) is not cls._FLOAT_MODULE:
        raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}, got "
                             f"{type(mod).__name__}")
    if not getattr(mod, "qconfig", None):
        raise AssertionError("Input float module must have a valid qconfig")


def _require_qconfig(qconfig):
    if not qconfig:
        raise AssertionError("qconfig must be provided for QAT module")
    return qconfig


def _detached_parameter(tensor):
    return None if tensor is None else Parameter(tensor.detach())


def _float_conv(qat_conv):
    """A float conv (``_FLOAT_CONV_MODULE``) with new parameters over a QAT conv's (detached) data, as torch's
    ``to_float``."""
    conv = qat_conv._FLOAT_CONV_MODULE(qat_conv.in_channels, qat_conv.out_channels, qat_conv.kernel_size,
                                       qat_conv.stride, qat_conv.padding, qat_conv.dilation, qat_conv.groups,
                                       qat_conv.bias is not None, qat_conv.padding_mode)
    conv.weight = _detached_parameter(qat_conv.weight)
    conv.bias = _detached_parameter(qat_conv.bias)
    return conv


class Conv2d(_FloatConv2d):
    """A ``Conv2d`` whose forward convolves with ``weight_fake_quant(weight)``."""

    _FLOAT_MODULE = _FloatConv2d
    _FLOAT_CONV_MODULE = _FloatConv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", qconfig=None, device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)
        self.qconfig = _require_qconfig(qconfig)
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT layer of a float conv (or of a fused ``ConvReLU2d``'s conv) with its qconfig, sharing its
        parameters."""
        _check_float_module(mod, cls)
        if isinstance(mod, nni._FusedModule):
            mod = mod[0]
        qat_conv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride, padding=mod.padding,
                       dilation=mod.dilation, groups=mod.groups, bias=mod.bias is not None,
                       padding_mode=mod.padding_mode, qconfig=mod.qconfig)
        qat_conv.weight = mod.weight
        qat_conv.bias = mod.bias
        return qat_conv

    def to_float(self):
        """The float layer (a fused ``ConvReLU2d`` for the fused QAT class), parameters detached."""
        if not isinstance(self, nni._FusedModule):
            return _float_conv(self)
        fused = self._FLOAT_MODULE(_float_conv(self), ReLU())
        fused.train(self.training)
        return fused


class Linear(_FloatLinear):
    """A ``Linear`` whose forward multiplies by ``weight_fake_quant(weight)``."""

    _FLOAT_MODULE = _FloatLinear

    def __init__(self, in_features, out_features, bias=True, qconfig=None, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self.qconfig = _require_qconfig(qconfig)
        self.weight_fake_quant = qconfig.weight()

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT layer of a float linear (or of a fused ``LinearReLU``'s linear), sharing its parameters."""
        _check_float_module(mod, cls)
        if type(mod) is nni.LinearReLU:
            mod = mod[0]
        qat_linear = cls(mod.in_features, mod.out_features, bias=mod.bias is not None, qconfig=mod.qconfig)
        qat_linear.weight = mod.weight
        qat_linear.bias = mod.bias
        return qat_linear

    def to_float(self):
        """The float ``Linear``, parameters detached."""
        linear = _FloatLinear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = _detached_parameter(self.weight)
        linear.bias = _detached_parameter(self.bias)
        linear.train(self.training)
        return linear
