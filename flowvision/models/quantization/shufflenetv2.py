"""Quantizable ShuffleNetV2 (torchvision's ``quantization.shufflenetv2``): int8 inference with fbgemm weights.

The float units of ``flowvision.models.shufflenetv2`` with their concatenation through ``FloatFunctional.cat``
(the channel shuffle and the head's spatial mean run on quantized tensors as they are) and the network between a
``QuantStub`` and a ``DeQuantStub``.
"""
import engine as torch
from engine import nn

from ..registry import register_model
from ..shufflenetv2 import InvertedResidual, ShuffleNetV2
from .utils import QuantStubbed, _fuse_modules, build_quantizable

__all__ = ["QuantizableShuffleNetV2"]  # the blocks stay in this module, as torchvision's


class QuantizableInvertedResidual(InvertedResidual):
    """``InvertedResidual`` whose concatenation of the two halves is observed (one output quantization)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = self.cat.cat([x1, self.branch2(x2)], dim=1)
        else:
            out = self.cat.cat([self.branch1(x), self.branch2(x)], dim=1)
        return torch.channel_shuffle(out, 2)

    def fuse_model(self, is_qat=None):
        """Fold the batch norms into their convs, with the ReLU that follows (stride 1 has no ``branch1``)."""
        if len(self.branch1) > 0:
            _fuse_modules(self.branch1, [["0", "1"], ["2", "3", "4"]], is_qat)
        _fuse_modules(self.branch2, [["0", "1", "2"], ["3", "4"], ["5", "6", "7"]], is_qat)


class QuantizableShuffleNetV2(QuantStubbed, ShuffleNetV2):
    """``ShuffleNetV2`` of quantizable units between a ``QuantStub`` and a ``DeQuantStub``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, inverted_residual=QuantizableInvertedResidual, **kwargs)

    def fuse_model(self, is_qat=None):
        """Fold every batch norm into its conv and fuse the ReLUs that follow (in place; same float outputs)."""
        _fuse_modules(self.conv1, ["0", "1", "2"], is_qat)
        _fuse_modules(self.conv5, ["0", "1", "2"], is_qat)
        for m in self.modules():
            if type(m) is QuantizableInvertedResidual:
                m.fuse_model(is_qat)


def _shufflenetv2(name, float_name, stages_out_channels, pretrained, progress, **kwargs):
    return build_quantizable(QuantizableShuffleNetV2, name, float_name, pretrained=pretrained, progress=progress,
                             stages_repeats=[4, 8, 4], stages_out_channels=stages_out_channels, **kwargs)


@register_model
def quantized_shufflenet_v2_x0_5(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ShuffleNetV2 0.5x; ``quantize=True``: int8 (fbgemm)."""
    return _shufflenetv2("quantized_shufflenet_v2_x0_5", "shufflenet_v2_x0_5", [24, 48, 96, 192, 1024], pretrained,
                         progress, quantize=quantize, **kwargs)


@register_model
def quantized_shufflenet_v2_x1_0(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ShuffleNetV2 1.0x; ``quantize=True``: int8 (fbgemm)."""
    return _shufflenetv2("quantized_shufflenet_v2_x1_0", "shufflenet_v2_x1_0", [24, 116, 232, 464, 1024],
                         pretrained, progress, quantize=quantize, **kwargs)


@register_model
def quantized_shufflenet_v2_x1_5(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ShuffleNetV2 1.5x; ``quantize=True``: int8 (fbgemm)."""
    return _shufflenetv2("quantized_shufflenet_v2_x1_5", "shufflenet_v2_x1_5", [24, 176, 352, 704, 1024],
                         pretrained, progress, quantize=quantize, **kwargs)


@register_model
def quantized_shufflenet_v2_x2_0(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ShuffleNetV2 2.0x; ``quantize=True``: int8 (fbgemm)."""
    return _shufflenetv2("quantized_shufflenet_v2_x2_0", "shufflenet_v2_x2_0", [24, 244, 488, 976, 2048],
                         pretrained, progress, quantize=quantize, **kwargs)
