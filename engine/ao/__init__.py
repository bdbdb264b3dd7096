"""``torch.ao``: eager-mode quantization (``quantization``) and the layers it makes (``nn``).

Post-training: a float model is fused (``fuse_modules``: conv + batch norm + ReLU into one conv), prepared
(observers record the ranges of activations on calibration data), then converted (each layer replaced by its int8
quantized layer). Quantization-aware training (``fuse_modules_qat``, ``prepare_qat``) trains through fake
quantization before the same conversion. Quantized tensors and their kernels reproduce PyTorch's fbgemm and
qnnpack engines exactly, so torchvision's quantized checkpoints give torchvision's results.
"""
from . import nn, quantization  # noqa: F401
