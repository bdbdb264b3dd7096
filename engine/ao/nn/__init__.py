"""``torch.ao.nn``: the layers of eager-mode quantization."""
from . import intrinsic, quantized  # noqa: F401
from .intrinsic import quantized as _intrinsic_quantized  # noqa: F401
