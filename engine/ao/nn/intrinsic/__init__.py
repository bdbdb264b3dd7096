"""``torch.ao.nn.intrinsic``: float layers fused with what follows them, which quantize as one layer.

``fuse_modules`` builds ``ConvReLU2d``/``LinearReLU`` (folding an eval BatchNorm into the conv first); ``convert``
turns each into its ``engine.ao.nn.intrinsic.quantized`` layer, whose kernel applies the ReLU while requantizing.
``fuse_modules_qat`` keeps the batch norm trainable instead: ``ConvBn2d``/``ConvBnReLU2d``, which ``prepare_qat``
turns into their ``engine.ao.nn.intrinsic.qat`` layers.
"""
from ....nn.modules.container import Sequential

__all__ = ["ConvReLU2d", "LinearReLU", "ConvBn2d", "ConvBnReLU2d"]


class _FusedModule(Sequential):
    """Fused float layers, run in order (a ``Sequential`` as torch's, so keys are ``0.weight`` ...)."""


class ConvReLU2d(_FusedModule):
    """A float ``Conv2d`` then ``ReLU``."""


class LinearReLU(_FusedModule):
    """A float ``Linear`` then ``ReLU``."""


class ConvBn2d(_FusedModule):
    """A float ``Conv2d`` then ``BatchNorm2d`` (for quantization-aware training)."""


class ConvBnReLU2d(_FusedModule):
    """A float ``Conv2d``, ``BatchNorm2d`` then ``ReLU`` (for quantization-aware training)."""
