"""``torch.ao.nn.quantized``: quantized layers and their functional ops (``functional``)."""
from . import functional  # noqa: F401
from .modules import (Conv2d, DeQuantize, FloatFunctional, Hardswish, Linear, LinearPackedParams,  # noqa: F401
                      QFunctional, Quantize)
