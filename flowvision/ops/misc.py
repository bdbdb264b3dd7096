"""Building blocks shared by the model families: convolution-norm-activation stacks and squeeze-excitation.

Constructor arguments, submodule order and names match ``torchvision.ops.misc``, so state_dict keys
of models built from them (MobileNet, EfficientNet, detection heads) equal torchvision's.
"""
import engine
from engine import nn

__all__ = ["ConvNormActivation", "Conv2dNormActivation", "Conv3dNormActivation", "SqueezeExcitation",
           "FrozenBatchNorm2d", "MLP", "Permute"]


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


class Conv3dNormActivation(ConvNormActivation):
    """``ConvNormActivation`` with a 3-d convolution and, by default, a 3-d batch norm (video models)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None, groups=1,
                 norm_layer=nn.BatchNorm3d, activation_layer=nn.ReLU, dilation=1, inplace=True, bias=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, groups, norm_layer,
                         activation_layer, dilation, inplace, bias, nn.Conv3d)


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


class FrozenBatchNorm2d(nn.Module):
    """BatchNorm2d with fixed statistics and affine parameters, all buffers (detection backbones).

    Checkpoints of a trained ``BatchNorm2d`` load into it: their ``num_batches_tracked`` is dropped.
    """

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", engine.ones(num_features))
        self.register_buffer("bias", engine.zeros(num_features))
        self.register_buffer("running_mean", engine.zeros(num_features))
        self.register_buffer("running_var", engine.ones(num_features))

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Drop the batch counter a BatchNorm2d checkpoint carries; this layer never counts."""
        state_dict.pop(prefix + "num_batches_tracked", None)

    def forward(self, x):
        scale = self.weight.reshape(1, -1, 1, 1) * (self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        bias = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + bias

    def __repr__(self):
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


class MLP(nn.Sequential):
    """Linear layers of widths ``hidden_channels``, each but the last followed by norm, activation and dropout."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU, inplace=None,
                 bias=True, dropout=0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers, in_dim = [], in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)


class Permute(nn.Module):
    """``input.permute(*dims)`` as a layer (channels-last blocks)."""

    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return engine.permute(x, self.dims)
