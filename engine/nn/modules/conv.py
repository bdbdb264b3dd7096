"""Convolutions: Conv1d, Conv2d, Conv3d and the transposed ConvTranspose1d/2d."""
import math

from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._utils import _pair, _reverse_repeat_tuple, _single, _triple, new_param_data
from .module import Module

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """Shared state, checks, initialisation and repr of the convolution layers."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._pad_for_mode()
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(new_param_data(shape, device, dtype))
        if bias:
            self.bias = Parameter(new_param_data((out_channels,), device, dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_for_mode(self):
        """F.pad amounts (last dim first) that a non-'zeros' padding_mode applies before the conv."""
        if self.padding == "valid":
            return [0, 0] * len(self.kernel_size)
        if self.padding == "same":
            amounts = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                amounts += [total // 2, total - total // 2]
            return amounts
        return list(_reverse_repeat_tuple(self.padding, 2))

    def reset_parameters(self):
        """Weight: kaiming_uniform_(a=sqrt(5)); bias: U(+-1/sqrt(fan_in))."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):  # each against its own length, as PyTorch compares
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("padding_mode", "zeros")


class _Conv(_ConvNd):
    """The forward of Conv1d/2d/3d: F.conv{n}d, after F.pad for a padding_mode other than 'zeros'."""

    def _conv_forward(self, input, weight, bias):
        conv = getattr(F, f"conv{len(self.kernel_size)}d")
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode),
                        weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C, L) inputs."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _single(padding)
        super().__init__(in_channels, out_channels, _single(kernel_size), _single(stride), padding,
                         _single(dilation), False, _single(0), groups, bias, padding_mode, device, dtype)


class Conv2d(_Conv):
    """2-D convolution over (N, C, H, W) inputs; padding int, tuple, 'same' or 'valid'."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _pair(padding)
        super().__init__(in_channels, out_channels, _pair(kernel_size), _pair(stride), padding,
                         _pair(dilation), False, _pair(0), groups, bias, padding_mode, device, dtype)


class Conv3d(_Conv):
    """3-D convolution over (N, C, D, H, W) inputs (video, volumes); padding int, tuple, 'same' or 'valid'."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        padding = padding if isinstance(padding, str) else _triple(padding)
        super().__init__(in_channels, out_channels, _triple(kernel_size), _triple(stride), padding,
                         _triple(dilation), False, _triple(0), groups, bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolutions: only 'zeros' padding; ``output_size`` picks the output padding."""

    def _output_padding(self, input, output_size, num_spatial_dims):
        """The output_padding that makes the output ``output_size`` (or the configured one)."""
        if output_size is None:
            return self.output_padding
        has_batch = input.dim() == num_spatial_dims + 2
        output_size = output_size if isinstance(output_size, (list, tuple)) else list(output_size)  # shown as given
        num_non_spatial = 2 if has_batch else 1
        if len(output_size) == num_non_spatial + num_spatial_dims:
            output_size = output_size[num_non_spatial:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial + num_spatial_dims} elements "
                             f"(got {len(output_size)})")
        spatial = tuple(input.shape)[-num_spatial_dims:]
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            size = ((spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
                    + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            min_sizes.append(size)
            max_sizes.append(size + self.stride[d] - 1)
        for d in range(num_spatial_dims):
            if not min_sizes[d] <= output_size[d] <= max_sizes[d]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {input.shape[2:]})")
        return tuple(output_size[d] - min_sizes[d] for d in range(num_spatial_dims))


class _ConvTransposeOf(_ConvTransposeNd):
    """The constructor and forward of ConvTranspose1d/2d/3d: ``_expand`` makes the size arguments tuples of the
    class's dimension, ``_conv_transpose`` is its functional op."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        expand = self._expand
        super().__init__(in_channels, out_channels, expand(kernel_size), expand(stride), expand(padding),
                         expand(dilation), True, expand(output_padding), groups, bias, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size, len(self.kernel_size))
        return self._conv_transpose(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeOf):
    """1-D transposed convolution (the gradient of Conv1d w.r.t. its input)."""

    _expand = staticmethod(_single)
    _conv_transpose = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeOf):
    """2-D transposed convolution (the gradient of Conv2d w.r.t. its input)."""

    _expand = staticmethod(_pair)
    _conv_transpose = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeOf):
    """3-D transposed convolution (the gradient of Conv3d w.r.t. its input)."""

    _expand = staticmethod(_triple)
    _conv_transpose = staticmethod(F.conv_transpose3d)


__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
