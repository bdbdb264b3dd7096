"""What every quantizable family shares: ReLU replacement, fusion, calibration and the builders' weight logic.

A quantizable model is its float family with a ``QuantStub``/``DeQuantStub`` around the network, residual adds
and concatenations through ``FloatFunctional`` (so calibration observes them) and a ``fuse_model`` that merges
each conv with its batch norm and ReLU. ``quantize=True`` fuses, calibrates on one random image and converts,
as torchvision's ``quantize_model`` does; published quantized weights then replace every weight and scale.
(MobileNetV3's weights are a quantization-aware-training state instead: its builder prepares for QAT, loads
them, then converts.)
"""
import engine as torch
from engine import nn
from engine.ao import quantization as tq

from ..weights import get_model_weights, resolve_weights

__all__ = ["QuantStubbed", "quantize_model", "build_quantizable"]


class QuantStubbed:
    """Mixin of a quantizable classifier (``class QuantizableResNet(QuantStubbed, ResNet)``): a ``QuantStub``
    (float images in) before the float family's ``forward_features`` and ``forward_head``, a ``DeQuantStub``
    (float logits out) after them."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.quant = tq.QuantStub()
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.forward_features(x)
        x = self.forward_head(x)
        return self.dequant(x)


def _replace_relu(module):
    """Every ``ReLU``/``ReLU6`` (exactly those types) becomes ``ReLU(inplace=False)``: quantized activations are
    rescaled so that 6 is no bound, and an in-place op would write into the observed input."""
    for name, child in list(module.named_children()):
        _replace_relu(child)
        if type(child) in (nn.ReLU, nn.ReLU6):
            module._modules[name] = nn.ReLU(inplace=False)


def _fuse_modules(model, modules_to_fuse, is_qat=None):
    """Fuse in place: for quantization-aware training (``is_qat``; by default when ``model`` is training) the
    batch norms stay trainable, else they are folded into the convs (eval-mode fusion)."""
    if is_qat is None:
        is_qat = model.training
    fuse = tq.fuse_modules_qat if is_qat else tq.fuse_modules
    fuse(model, modules_to_fuse, inplace=True)


CALIBRATION_SIZE = (1, 3, 299, 299)  # torchvision's dummy calibration input: one uniform random image


def quantize_model(model, backend):
    """Fuse, observe one random image and convert ``model`` to int8 in place, with torchvision's qconfig for
    ``backend`` (per-channel weights for fbgemm, per-tensor for qnnpack)."""
    if backend not in torch.backends.quantized.supported_engines:
        raise RuntimeError(f"quantized backend {backend} is not supported (supported: "
                           f"{', '.join(torch.backends.quantized.supported_engines)})")
    calibration = torch.rand(*CALIBRATION_SIZE)
    torch.backends.quantized.engine = backend
    model.eval()
    weight_observer = tq.default_per_channel_weight_observer if backend == "fbgemm" else tq.default_weight_observer
    model.qconfig = tq.QConfig(activation=tq.default_observer, weight=weight_observer)
    model.fuse_model()
    tq.prepare(model, inplace=True)
    model(calibration)
    tq.convert(model, inplace=True)


def _quantizable_weights(name, float_name, pretrained, weights, quantize, kwargs):
    """The weights a quantizable builder loads (``name``'s quantized ones when ``quantize``, ``float_name``'s float
    ones otherwise; ``pretrained=True`` alone: the first quantized tag, or the float IMAGENET1K_V1) and the
    quantized backend (the weights', else ``kwargs["backend"]``, else fbgemm). ``kwargs`` loses ``backend`` and
    gets the weights' ``num_classes``."""
    variant = name if quantize else float_name
    if pretrained and weights is None and quantize:
        weights = next(iter(get_model_weights(name).__members__))
    weights = resolve_weights(variant, pretrained, weights)
    backend = kwargs.pop("backend", "fbgemm")
    if weights is not None:
        kwargs["num_classes"] = len(weights.meta["categories"])
        backend = weights.meta.get("backend", backend)
    return weights, backend


def build_quantizable(model_cls, name, float_name, *, pretrained=False, weights=None, progress=True, quantize=False,
                      **kwargs):
    """A ``model_cls`` (quantized when ``quantize``) with the weights asked for: ``name``'s quantized weights when
    ``quantize``, ``float_name``'s float ones otherwise, as torchvision's quantized builders take them.
    ``pretrained=True`` alone loads the first quantized tag (or the float IMAGENET1K_V1)."""
    weights, backend = _quantizable_weights(name, float_name, pretrained, weights, quantize, kwargs)
    model = model_cls(**kwargs)
    _replace_relu(model)
    if quantize:
        quantize_model(model, backend)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress))
    return model
