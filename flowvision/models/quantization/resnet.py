"""Quantizable ResNet and ResNeXt (torchvision's ``quantization.resnet``): int8 inference with fbgemm weights.

The float blocks of ``flowvision.models.resnet`` with their residual add and ReLU through one
``FloatFunctional.add_relu`` (a single requantization, as the fused int8 kernel has it) and separate ReLUs where
a block reused one; the state_dict keys are the float model's, or torchvision's quantized ones after conversion.
"""
from engine import nn

from ..registry import register_model
from ..resnet import BasicBlock, Bottleneck, ResNet
from .utils import QuantStubbed, _fuse_modules, build_quantizable

__all__ = ["QuantizableBasicBlock", "QuantizableBottleneck", "QuantizableResNet"]


class QuantizableBasicBlock(BasicBlock):
    """``BasicBlock`` whose residual add and ReLU are one observed op."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_relu = nn.quantized.FloatFunctional()

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        return self.add_relu.add_relu(out, identity)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, [["conv1", "bn1", "relu"], ["conv2", "bn2"]], is_qat)
        if self.downsample is not None:
            _fuse_modules(self.downsample, ["0", "1"], is_qat)


class QuantizableBottleneck(Bottleneck):
    """``Bottleneck`` with one ReLU per conv (each fuses into its conv) and an observed residual add + ReLU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.skip_add_relu = nn.quantized.FloatFunctional()
        self.relu1 = nn.ReLU(inplace=False)
        self.relu2 = nn.ReLU(inplace=False)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu1(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu2(out)
        out = self.conv3(out)
        out = self.bn3(out)
        return self.skip_add_relu.add_relu(out, identity)

    def fuse_model(self, is_qat=None):
        _fuse_modules(self, [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3"]], is_qat)
        if self.downsample is not None:
            _fuse_modules(self.downsample, ["0", "1"], is_qat)


class QuantizableResNet(QuantStubbed, ResNet):
    """``ResNet`` between a ``QuantStub`` (float in) and a ``DeQuantStub`` (float logits out)."""

    def fuse_model(self, is_qat=None):
        """Fold every batch norm into its conv and fuse the ReLUs that follow (in place; same float outputs)."""
        _fuse_modules(self, ["conv1", "bn1", "relu"], is_qat)
        for m in self.modules():
            if type(m) in (QuantizableBasicBlock, QuantizableBottleneck):
                m.fuse_model(is_qat)


def _resnet(name, float_name, block, layers, pretrained, progress, **kwargs):
    return build_quantizable(QuantizableResNet, name, float_name, pretrained=pretrained, progress=progress,
                             block=block, layers=layers, **kwargs)


@register_model
def quantized_resnet18(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ResNet-18; ``quantize=True``: int8 (fbgemm)."""
    return _resnet("quantized_resnet18", "resnet18", QuantizableBasicBlock, [2, 2, 2, 2], pretrained, progress,
                   quantize=quantize, **kwargs)


@register_model
def quantized_resnet50(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ResNet-50; ``quantize=True``: int8 (fbgemm)."""
    return _resnet("quantized_resnet50", "resnet50", QuantizableBottleneck, [3, 4, 6, 3], pretrained, progress,
                   quantize=quantize, **kwargs)


@register_model
def quantized_resnext101_32x8d(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ResNeXt-101 32x8d; ``quantize=True``: int8 (fbgemm)."""
    return _resnet("quantized_resnext101_32x8d", "resnext101_32x8d", QuantizableBottleneck, [3, 4, 23, 3],
                   pretrained, progress, quantize=quantize, groups=32, width_per_group=8, **kwargs)


@register_model
def quantized_resnext101_64x4d(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable ResNeXt-101 64x4d; ``quantize=True``: int8 (fbgemm)."""
    return _resnet("quantized_resnext101_64x4d", "resnext101_64x4d", QuantizableBottleneck, [3, 4, 23, 3],
                   pretrained, progress, quantize=quantize, groups=64, width_per_group=4, **kwargs)
