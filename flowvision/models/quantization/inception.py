"""Quantizable Inception v3 (torchvision's ``quantization.inception``): int8 inference with fbgemm weights.

The float modules of ``flowvision.models.inception`` with quantizable conv blocks (a ReLU module each, fused into
its conv), every concatenation through a ``FloatFunctional`` (``myop``; ``myop1``-``myop3`` in ``InceptionE``,
whose split branches are joined first) and the network between a ``QuantStub`` (after the float
``transform_input``) and a ``DeQuantStub``. The published quantized checkpoint has no auxiliary head: with weights
it is left out unless ``aux_logits=True`` is asked (float weights: loaded, then removed), as torchvision's builder.
"""
from engine import nn
from engine.ao import quantization as tq

from ..inception import (Inception3, InceptionA, InceptionAux, InceptionB, InceptionC, InceptionD, InceptionE,
                         InceptionOutputs)
from ..registry import register_model
from .googlenet import QuantizableBasicConv2d
from .utils import build_quantizable

__all__ = ["QuantizableInception3"]  # the blocks stay in this module, as torchvision's


class _ObservedCat:
    """Mixin of the Inception modules: quantizable conv blocks, and the branches concatenated by ``myop``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.myop = nn.quantized.FloatFunctional()

    def forward(self, x):
        return self.myop.cat(self._forward(x), 1)


class QuantizableInceptionA(_ObservedCat, InceptionA):
    """``InceptionA`` with quantizable conv blocks and an observed concatenation."""


class QuantizableInceptionB(_ObservedCat, InceptionB):
    """``InceptionB`` with quantizable conv blocks and an observed concatenation."""


class QuantizableInceptionC(_ObservedCat, InceptionC):
    """``InceptionC`` with quantizable conv blocks and an observed concatenation."""


class QuantizableInceptionD(_ObservedCat, InceptionD):
    """``InceptionD`` with quantizable conv blocks and an observed concatenation."""


class QuantizableInceptionE(InceptionE):
    """``InceptionE`` with quantizable conv blocks; the two split-branch joins (``myop1``, ``myop2``) and the final
    concatenation (``myop3``) are each observed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.myop1 = nn.quantized.FloatFunctional()
        self.myop2 = nn.quantized.FloatFunctional()
        self.myop3 = nn.quantized.FloatFunctional()

    def _join(self, pair, split):
        return (self.myop1, self.myop2)[split].cat(pair, 1)

    def forward(self, x):
        return self.myop3.cat(self._forward(x), 1)


class QuantizableInceptionAux(InceptionAux):
    """``InceptionAux`` with quantizable conv blocks."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)


class QuantizableInception3(Inception3):
    """``Inception3`` of quantizable modules, quantized after the input transform and dequantized at the logits
    (the training-mode auxiliary logits are returned as computed)."""

    def __init__(self, *args, **kwargs):
        blocks = [QuantizableBasicConv2d, QuantizableInceptionA, QuantizableInceptionB, QuantizableInceptionC,
                  QuantizableInceptionD, QuantizableInceptionE, QuantizableInceptionAux]
        super().__init__(*args, inception_blocks=blocks, **kwargs)
        self.quant = tq.QuantStub()
        self.dequant = tq.DeQuantStub()

    def _transform_input(self, x):
        """The float input transform, then the ``QuantStub``: from the stem on, the network runs quantized."""
        return self.quant(super()._transform_input(x))

    def forward(self, x):
        x, aux = self._forward_features(x)
        x = self.dequant(self.forward_head(x))
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x

    def fuse_model(self, is_qat=None):
        """Fold every batch norm into its conv with the ReLU after it (in place; same float outputs)."""
        for m in self.modules():
            if type(m) is QuantizableBasicConv2d:
                m.fuse_model(is_qat)


@register_model
def quantized_inception_v3(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable Inception v3 for 299x299 inputs; ``quantize=True``: int8 (fbgemm). Weights bring
    ``transform_input=True`` (unless given) and no auxiliary head unless ``aux_logits=True``."""
    name = "quantized_inception_v3"
    if not (pretrained or kwargs.get("weights") is not None):
        return build_quantizable(QuantizableInception3, name, "inception_v3", progress=progress, quantize=quantize,
                                 **kwargs)
    keep_aux = kwargs.pop("aux_logits", False)
    kwargs.setdefault("transform_input", True)
    model = build_quantizable(QuantizableInception3, name, "inception_v3", pretrained=pretrained,
                              progress=progress, quantize=quantize, aux_logits=keep_aux or not quantize, **kwargs)
    if not keep_aux:
        model.aux_logits = False
        model.AuxLogits = None
    return model
