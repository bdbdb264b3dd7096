"""Building blocks shared by the model families: convolution-norm-activation stacks and squeeze-excitation.

Constructor arguments, submodule order and names match ``torchvision.ops.misc``, so state_dict keys
of models built from them (MobileNet, EfficientNet, detection heads) equal torchvision's.
"""
from engine import nn

__all__ = ["ConvNormActivation", "Conv2dNormActivation", "SqueezeExcitation"]


class ConvNormActivation(nn.Sequential):
    """A convolution, an optional norm and an optional activation, as one ``Sequential``.

    ``padding=None`` keeps the size at stride 1 (``(kernel_size - 1) // 2 * dilation``); ``bias=None``
    gives the convolution a bias only when there is no norm layer to absorb it.
    """

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True,
                 bias=None, conv_layer=nn.Conv2d):
        if padding is None:
            padding = _same_padding(kernel_size, dilation)
        if bias is None:
            bias = norm_layer is None
        layers = [conv_layer(in_channels, out_channels, kernel_size, stride, padding, dilation=dilation,
                             groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None else activation_layer(inplace=inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


def _same_padding(kernel_size, dilation):
    """Padding that keeps the spatial size at stride 1, per dimension when sizes are tuples."""
    if isinstance(kernel_size, int) and isinstance(dilation, int):
        return (kernel_size - 1) // 2 * dilation
    dims = len(kernel_size) if not isinstance(kernel_size, int) else len(dilation)
    kernel_size = (kernel_size,) * dims if isinstance(kernel_size, int) else tuple(kernel_size)
    dilation = (dilation,) * dims if isinstance(dilation, int) else tuple(dilation)
    return tuple((k - 1) // 2 * d for k, d in zip(kernel_size, dilation))


class Conv2dNormActivation(ConvNormActivation):
    """``ConvNormActivation`` with a 2-d convolution (the common case)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv2d)


class SqueezeExcitation(nn.Module):
    """Squeeze-and-Excitation (Hu et al. 2017): rescale channels by a gate computed from their global average.

    The gate is ``scale_activation(fc2(activation(fc1(avgpool(x)))))`` with 1x1 convolutions as the
    fully connected layers.
    """

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU, scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input):
        """The per-channel gate, shape (N, C, 1, 1)."""
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        scale = self._scale(input)
        return scale * input
