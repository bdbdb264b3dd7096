"""aten's convolution entry points: ``convolution`` (one signature for every convolution, plain or transposed,
1d, 2d or 3d) and ``conv_tbc`` (a 1d convolution over time-major (time, batch, channel) inputs).

Both map onto ``nn.functional``'s convolutions, which do the work (and the gradients): one implementation.
"""
from ..nn import functional as F

_PLAIN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_TRANSPOSED = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution (``transposed``: its transpose) of a batched input whose spatial rank is the weight's
    (1 to 3), with aten's arguments, all positional."""
    if input.dim() != weight.dim():
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.dim()}-dimensional input of size "
                           f"{list(input.shape)} instead")
    rank = weight.dim() - 2
    if rank not in _PLAIN:
        raise RuntimeError(f"convolution: expected a weight with 3 to 5 dims, got {weight.dim()}")
    stride, padding, dilation = list(stride), list(padding), list(dilation)
    if transposed:
        return _TRANSPOSED[rank](input, weight, bias, stride, padding, list(output_padding), groups, dilation)
    return _PLAIN[rank](input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad=0):
    """1d convolution of ``input`` (time, batch, in_channels) with ``weight`` (kernel_width, in_channels,
    out_channels) plus ``bias`` (out_channels,), zero-padded by ``pad`` steps at both ends of time; the
    output is (time', batch, out_channels)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


__all__ = ["convolution", "conv_tbc"]
