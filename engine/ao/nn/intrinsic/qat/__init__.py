"""``torch.ao.nn.intrinsic.qat``: fused layers for quantization-aware training, weights fake-quantized.

``ConvBn2d``/``ConvBnReLU2d`` keep the batch norm trainable (torch's ``_forward_approximate``): the conv runs with
``weight_fake_quant(weight * gamma / running_std)``, its output is divided back by that factor and normalized by
the ``bn`` child, with batch statistics (updating the running ones) in training and running statistics once frozen
(``freeze_bn_stats``) or in eval. ``convert`` folds the batch norm into the conv and quantizes the folded weight.
``ConvReLU2d``/``LinearReLU`` are the QAT layers with the ReLU applied after.

``engine.ao.quantization`` imports this package for its mappings, once its ``fuse`` module (used here) is loaded.
"""
import math

from .....nn import functional as F
from .....nn import init
from .....nn.modules.activation import ReLU
from .....nn.modules.conv import Conv2d as _FloatConv2d
from .....nn.modules.normalization import BatchNorm2d
from .....nn.parameter import Parameter
from .....ops.creation import empty, zeros, zeros_like
from ....quantization.fuse import fuse_conv_bn_weights
from ... import qat as nnqat
from ... import intrinsic as nni

__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU", "freeze_bn_stats", "update_bn_stats"]


class ConvBn2d(_FloatConv2d, nni._FusedModule):
    """``Conv2d`` + ``BatchNorm2d`` (child ``bn``) with the weight fake-quantized as the folded conv will have it;
    the batch norm trains (batch statistics) until ``freeze_bn_stats()``."""

    _version = 2  # torch's: the batch norm's state under ``bn.`` (version 1 had it at the top level)
    _FLOAT_MODULE = nni.ConvBn2d
    _FLOAT_CONV_MODULE = _FloatConv2d
    _FLOAT_BN_MODULE = BatchNorm2d
    _FLOAT_RELU_MODULE = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=None,
                 padding_mode="zeros", eps=1e-05, momentum=0.1, freeze_bn=False, qconfig=None):
        _FloatConv2d.__init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, False,
                              padding_mode)
        self.qconfig = nnqat._require_qconfig(qconfig)
        self.freeze_bn = freeze_bn if self.training else True
        self.bn = BatchNorm2d(out_channels, eps, momentum, True, True)
        self.weight_fake_quant = qconfig.weight()
        if bias:
            self.bias = Parameter(empty(out_channels))
        self.reset_bn_parameters()
        if self.training and not freeze_bn:
            self.update_bn_stats()
        else:
            self.freeze_bn_stats()

    def reset_running_stats(self):
        self.bn.reset_running_stats()

    def reset_bn_parameters(self):
        """torch's QAT init: fresh running statistics, ``gamma ~ U(0, 1)``, ``beta = 0`` and the conv bias (if
        any) ``~ U(+-1/sqrt(fan_in))``."""
        self.bn.reset_running_stats()
        init.uniform_(self.bn.weight)
        init.zeros_(self.bn.bias)
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in)
            init.uniform_(self.bias, -bound, bound)

    def update_bn_stats(self):
        """Train the batch norm: batch statistics in training mode, running ones updated."""
        self.freeze_bn = False
        self.bn.training = True
        return self

    def freeze_bn_stats(self):
        """Freeze the batch norm: running statistics only, whatever the mode."""
        self.freeze_bn = True
        self.bn.training = False
        return self

    def _forward(self, input):
        """torch's ``_forward_approximate``: one conv with the weight scaled by ``gamma / running_std`` and
        fake-quantized, scaled back, the conv bias added, then the batch norm."""
        running_std = (self.bn.running_var + self.bn.eps).sqrt()
        scale_factor = self.bn.weight / running_std
        weight_shape = [-1] + [1] * (self.weight.ndim - 1)
        bias_shape = [1, -1] + [1] * (self.weight.ndim - 2)
        scaled_weight = self.weight_fake_quant(self.weight * scale_factor.reshape(weight_shape))
        if self.bias is not None:
            zero_bias = zeros_like(self.bias, dtype=input.dtype)
        else:
            zero_bias = zeros(self.out_channels, dtype=input.dtype)
        conv = self._conv_forward(input, scaled_weight, zero_bias)
        conv_orig = conv / scale_factor.reshape(bias_shape)
        if self.bias is not None:
            conv_orig = conv_orig + self.bias.reshape(bias_shape)
        return self.bn(conv_orig)

    def forward(self, input):
        return self._forward(input)

    def train(self, mode=True):
        """Set the mode; the children follow unless the batch norm is frozen (so ``model.train()`` keeps a frozen
        batch norm on its running statistics)."""
        self.training = mode
        if not self.freeze_bn:
            for module in self.children():
                module.train(mode)
        return self

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The QAT layer of a float fused ``ConvBn2d``/``ConvBnReLU2d`` with its qconfig, sharing the conv's and
        the batch norm's parameters and statistics."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        conv, bn = mod[0], mod[1]
        qat_convbn = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                         conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode, bn.eps, bn.momentum,
                         False, mod.qconfig)
        qat_convbn.weight, qat_convbn.bias = conv.weight, conv.bias
        for name in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
            setattr(qat_convbn.bn, name, getattr(bn, name))
        return qat_convbn

    def to_float(self):
        """The float conv with the batch norm folded in (a fused ``ConvReLU2d`` for ``ConvBnReLU2d``)."""
        conv = nnqat._float_conv(self)
        conv.weight, conv.bias = fuse_conv_bn_weights(conv.weight, conv.bias, self.bn.running_mean,
                                                      self.bn.running_var, self.bn.eps, self.bn.weight, self.bn.bias)
        if self._FLOAT_RELU_MODULE is None:
            conv.train(self.training)
            return conv
        fused = self._FUSED_FLOAT_MODULE(conv, self._FLOAT_RELU_MODULE())
        fused.train(self.training)
        return fused


class ConvBnReLU2d(ConvBn2d):
    """``ConvBn2d`` then ``ReLU``."""

    _FLOAT_MODULE = nni.ConvBnReLU2d
    _FLOAT_RELU_MODULE = ReLU
    _FUSED_FLOAT_MODULE = nni.ConvReLU2d

    def forward(self, input):
        return F.relu(self._forward(input))


class ConvReLU2d(nnqat.Conv2d, nni._FusedModule):
    """The QAT ``Conv2d`` then ``ReLU``."""

    _FLOAT_MODULE = nni.ConvReLU2d

    def forward(self, input):
        return F.relu(self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias))


class LinearReLU(nnqat.Linear, nni._FusedModule):
    """The QAT ``Linear`` then ``ReLU``."""

    _FLOAT_MODULE = nni.LinearReLU

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self):
        """The float fused ``LinearReLU``, parameters detached."""
        return nni.LinearReLU(super().to_float(), ReLU())


_CONV_BN = (ConvBn2d, ConvBnReLU2d)


def update_bn_stats(mod):
    """Train the batch norms again (``model.apply(update_bn_stats)``)."""
    if type(mod) in _CONV_BN:
        mod.update_bn_stats()


def freeze_bn_stats(mod):
    """Freeze the batch norms' statistics (``model.apply(freeze_bn_stats)``, late in QAT)."""
    if type(mod) in _CONV_BN:
        mod.freeze_bn_stats()
