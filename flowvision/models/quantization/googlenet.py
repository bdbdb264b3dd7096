"""Quantizable GoogLeNet (torchvision's ``quantization.googlenet``): int8 inference with fbgemm weights.

The float modules of ``flowvision.models.googlenet`` with a ReLU module in each conv block (fused into its conv),
the branch concatenations through ``FloatFunctional.cat`` and the network between a ``QuantStub`` (after the float
``transform_input``) and a ``DeQuantStub``. With weights, as torchvision's builder: ``transform_input`` on unless
given, the checkpoint's auxiliary heads (untrained) loaded and then removed unless ``aux_logits=True`` is asked.
"""

import engine as torch
import engine.nn.functional as F
from engine import nn
from engine.ao import quantization as tq

from ..googlenet import (BasicConv2d, GoogLeNet, GoogLeNetOutputs, Inception, InceptionAux,
                         build_with_weights_defaults)
from ..registry import register_model
from .utils import _fuse_modules, build_quantizable

__all__ = ["QuantizableGoogLeNet"]  # the blocks stay in this module, as torchvision's


class QuantizableBasicConv2d(BasicConv2d):
    """``BasicConv2d`` whose ReLU is a module, so that conv, batch norm and ReLU fuse into one layer."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return self.relu(x)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, ["conv", "bn", "relu"], is_qat)


class QuantizableInception(Inception):
    """``Inception`` with quantizable conv blocks and its concatenation observed (one output quantization)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, x):
        return self.cat.cat(self._forward(x), 1)


class QuantizableInceptionAux(InceptionAux):
    """``InceptionAux`` with quantizable conv blocks and a ReLU module after its first linear layer."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = F.adaptive_avg_pool2d(x, (4, 4))
        x = self.conv(x)
        x = torch.flatten(x, 1)
        x = self.relu(self.fc1(x))
        x = self.dropout(x)
        return self.fc2(x)


class QuantizableGoogLeNet(GoogLeNet):
    """``GoogLeNet`` of quantizable blocks, quantized after the input transform and dequantized at the logits
    (the training-mode auxiliary logits are returned as computed)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, blocks=[QuantizableBasicConv2d, QuantizableInception, QuantizableInceptionAux],
                         **kwargs)
        self.quant = tq.QuantStub()
        self.dequant = tq.DeQuantStub()

    def _transform_input(self, x):
        """The float input transform, then the ``QuantStub``: from the stem on, the network runs quantized."""
        return self.quant(super()._transform_input(x))

    def forward(self, x):
        x, aux2, aux1 = self._forward_features(x)
        x = self.dequant(self.forward_head(x))
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x

    def fuse_model(self, is_qat=None):
        """Fold every batch norm into its conv with the ReLU after it (in place; same float outputs)."""
        for m in self.modules():
            if type(m) is QuantizableBasicConv2d:
                m.fuse_model(is_qat)


@register_model
def quantized_googlenet(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable GoogLeNet; ``quantize=True``: int8 (fbgemm). Weights bring ``transform_input=True`` (unless
    given) and drop the auxiliary heads after loading unless ``aux_logits=True``."""
    return build_with_weights_defaults(
        lambda **options: build_quantizable(QuantizableGoogLeNet, "quantized_googlenet", "googlenet",
                                            pretrained=pretrained, progress=progress, quantize=quantize, **options),
        pretrained, kwargs)
