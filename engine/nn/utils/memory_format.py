"""``engine.nn.utils.memory_format``: lay out the weights of every 2-D (or 3-D) convolution of a module tree in
a memory format (``channels_last``), as torch's; values and parameter identities are kept."""
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, classes, memory_format):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, classes, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Re-lay the weight of each Conv2d / ConvTranspose2d in ``module`` (recursively) in ``memory_format``."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """Re-lay the weight of each Conv3d / ConvTranspose3d in ``module`` (recursively) in ``memory_format``."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
