"""Quantizable MobileNetV3 (torchvision's ``quantization.mobilenetv3``): int8 inference with qnnpack weights.

The float blocks of ``flowvision.models.mobilenetv3`` with the residual add and the squeeze-excitation's channel
scaling through ``FloatFunctional`` (observed ops) and the network between a ``QuantStub`` and a ``DeQuantStub``.
torchvision's published weights are a quantization-aware-training state (fused conv + batch norm layers, fake
quantize modules with their observed ranges), so ``quantize=True`` follows its builder step for step: QAT fusion,
the backend's QAT qconfig, ``prepare_qat``, the weights loaded, ``convert`` (batch norms folded, weights quantized
with their fake quantize's qparams), eval. The int8 outputs follow ``engine.backends.quantized.engine`` (the
weights were trained for qnnpack), which the builder leaves as it is, as torchvision's does.
"""
import engine as torch
from engine import nn
from engine.ao import quantization as tq

from ...ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..mobilenetv3 import InvertedResidual, MobileNetV3, _mobilenet_v3_conf
from ..registry import register_model
from .utils import QuantStubbed, _fuse_modules, _quantizable_weights, _replace_relu

__all__ = ["QuantizableMobileNetV3"]  # the blocks stay in this module, as torchvision's


class QuantizableSqueezeExcitation(SqueezeExcitation):
    """``SqueezeExcitation`` with a hard-sigmoid gate whose product with the input is one observed op."""

    _version = 2  # checkpoints of version 1 lack the hard-sigmoid's fake quantize state

    def __init__(self, *args, **kwargs):
        kwargs["scale_activation"] = nn.Hardsigmoid
        super().__init__(*args, **kwargs)
        self.skip_mul = nn.quantized.FloatFunctional()

    def forward(self, input):
        return self.skip_mul.mul(self._scale(input), input)

    def fuse_model(self, is_qat=None):
        """Fuse the squeeze conv with its ReLU."""
        _fuse_modules(self, ["fc1", "activation"], is_qat)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """A version-1 checkpoint loaded into a prepared model: torchvision's defaults for the hard-sigmoid's fake
        quantize state it lacks (its fixed qparams are not used once converted)."""
        if not hasattr(self, "qconfig") or (version is not None and version >= 2):
            return
        fake_quant = prefix + "scale_activation.activation_post_process."
        defaults = {"scale": torch.tensor([1.0]), "activation_post_process.scale": torch.tensor([1.0]),
                    "zero_point": torch.tensor([0], dtype=torch.int32),
                    "activation_post_process.zero_point": torch.tensor([0], dtype=torch.int32),
                    "fake_quant_enabled": torch.tensor([1]), "observer_enabled": torch.tensor([1])}
        for name, value in defaults.items():
            state_dict.setdefault(fake_quant + name, value)


class QuantizableInvertedResidual(InvertedResidual):
    """``InvertedResidual`` with the quantizable squeeze-excitation and an observed residual add."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, se_layer=QuantizableSqueezeExcitation, **kwargs)
        self.skip_add = nn.quantized.FloatFunctional()

    def forward(self, x):
        if self.use_res_connect:
            return self.skip_add.add(x, self.block(x))
        return self.block(x)


class QuantizableMobileNetV3(QuantStubbed, MobileNetV3):
    """``MobileNetV3`` between a ``QuantStub`` and a ``DeQuantStub`` (build it with
    ``block=QuantizableInvertedResidual``, as the builder does)."""

    def fuse_model(self, is_qat=None):
        """Fuse each conv with its batch norm (and ReLU; not the hard-swishes) and each squeeze conv with its
        ReLU, in place: for QAT (``is_qat``, by default in training mode) the batch norms stay trainable."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                modules_to_fuse = ["0", "1"]
                if len(m) == 3 and type(m[2]) is nn.ReLU:
                    modules_to_fuse.append("2")
                _fuse_modules(m, modules_to_fuse, is_qat)
            elif type(m) is QuantizableSqueezeExcitation:
                m.fuse_model(is_qat)


def _mobilenet_v3_model(name, float_name, pretrained, progress, quantize, weights=None, width_mult=1.0,
                        reduced_tail=False, dilated=False, **kwargs):
    """torchvision's ``_mobilenet_v3_model``: the model (ReLUs not in place); with ``quantize``, QAT fusion, the
    backend's QAT qconfig and ``prepare_qat`` before the weights load, ``convert`` and eval after."""
    kwargs.setdefault("backend", "qnnpack")
    weights, backend = _quantizable_weights(name, float_name, pretrained, weights, quantize, kwargs)
    setting, last_channel = _mobilenet_v3_conf(float_name, width_mult, reduced_tail, dilated)
    model = QuantizableMobileNetV3(setting, last_channel, block=QuantizableInvertedResidual, **kwargs)
    _replace_relu(model)
    if quantize:
        model.fuse_model(is_qat=True)
        model.qconfig = tq.get_default_qat_qconfig(backend)
        tq.prepare_qat(model, inplace=True)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    if quantize:
        tq.convert(model, inplace=True)
        model.eval()
    return model


@register_model
def quantized_mobilenet_v3_large(pretrained=False, progress=True, quantize=False, **kwargs):
    """Quantizable MobileNetV3-Large; ``quantize=True``: int8 from the QAT state (qnnpack unless ``backend=``
    says otherwise)."""
    return _mobilenet_v3_model("quantized_mobilenet_v3_large", "mobilenet_v3_large", pretrained, progress, quantize,
                               **kwargs)
