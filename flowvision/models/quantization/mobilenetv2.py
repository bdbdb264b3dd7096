"""Quantizable MobileNetV2 (torchvision's ``quantization.mobilenetv2``): int8 inference with qnnpack weights.

The float blocks of ``flowvision.models.mobilenetv2`` with the residual add through ``FloatFunctional.add`` and
the network between a ``QuantStub`` and a ``DeQuantStub``; its ReLU6s become ReLUs (the quantized activations'
range is calibrated instead). The published weights are qnnpack's (per-tensor weights), so qnnpack is the default
backend.
"""
from engine import nn

from ...ops.misc import Conv2dNormActivation
from ..mobilenetv2 import InvertedResidual, MobileNetV2
from ..registry import register_model
from .utils import QuantStubbed, _fuse_modules, build_quantizable

__all__ = ["QuantizableMobileNetV2"]  # the blocks stay in this module, as torchvision's


class QuantizableInvertedResidual(InvertedResidual):
    """``InvertedResidual`` whose residual add is observed (one output quantization)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        if self.use_res_connect:
            return self.skip_add.add(x, self.conv(x))
        return self.conv(x)

    def fuse_model(self, is_qat=None):
        """Fold the projection's batch norm into its 1x1 conv (the other convs are ``Conv2dNormActivation``s)."""
        for idx in range(len(self.conv)):
            if type(self.conv[idx]) is nn.Conv2d:
                _fuse_modules(self.conv, [str(idx), str(idx + 1)], is_qat)


class QuantizableMobileNetV2(QuantStubbed, MobileNetV2):
    """``MobileNetV2`` between a ``QuantStub`` and a ``DeQuantStub`` (build it with
    ``block=QuantizableInvertedResidual``, as the builder does, for observed residual adds)."""

    def fuse_model(self, is_qat=None):
        """Fuse every conv, batch norm and ReLU (in place; same float outputs)."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                _fuse_modules(m, ["0", "1", "2"], is_qat)
            if type(m) is QuantizableInvertedResidual:
                m.fuse_model(is_qat)


@register_model
def quantized_mobilenet_v2(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable MobileNetV2; ``quantize=True``: int8 (qnnpack unless ``backend=`` says otherwise)."""
    kwargs.setdefault("backend", "qnnpack")
    return build_quantizable(QuantizableMobileNetV2, "quantized_mobilenet_v2", "mobilenet_v2", pretrained=pretrained,
                             progress=progress, quantize=quantize, block=QuantizableInvertedResidual, **kwargs)
