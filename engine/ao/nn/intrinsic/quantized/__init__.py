"""``torch.ao.nn.intrinsic.quantized``: quantized layers with a fused ReLU (applied while requantizing)."""
from ...quantized.modules import Conv2d, Linear

__all__ = ["ConvReLU2d", "LinearReLU"]


class ConvReLU2d(Conv2d):
    """A quantized ``Conv2d`` whose output is ``max(conv, 0)``, from a fused float ``ConvReLU2d``."""

    _relu = True


class LinearReLU(Linear):
    """A quantized ``Linear`` whose output is ``max(linear, 0)``, from a fused float ``LinearReLU``."""

    _relu = True
