"""MaxViT (Tu et al. 2022, "MaxViT: Multi-Axis Vision Transformer"), tiny.

Each layer is an MBConv block (inverted bottleneck with squeeze-excitation) followed by two attention
layers on the (B, C, H, W) map: block attention within non-overlapping P x P windows (local) and grid
attention among the tokens one H/P, W/P stride apart (a sparse global mix), both with a learned bias per
relative offset. The partition sizes are fixed at construction from ``input_size``, so a model runs
on that input size only (224 x 224 for the published weights).

Module names, buffers, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``)
follows timm.
"""
import math
from collections import OrderedDict
from functools import partial

import numpy as np

import engine as torch
from engine import fx, nn
from engine.nn import functional as F

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ._helpers import build_model
from ._utils import linear_or_identity
from .registry import register_model
from .swin_transformer import _relative_position_index

__all__ = ["MaxVit"]


def _get_conv_output_shape(input_size, kernel_size, stride, padding):
    """(H, W) after a convolution with these settings."""
    return tuple((size - kernel_size + 2 * padding) // stride + 1 for size in input_size)


def _make_block_input_shapes(input_size, n_blocks):
    """The map size inside each block (after the stem's and the block's own stride-2 3x3 convolutions)."""
    shapes = []
    shape = _get_conv_output_shape(input_size, 3, 2, 1)
    for _ in range(n_blocks):
        shape = _get_conv_output_shape(shape, 3, 2, 1)
        shapes.append(shape)
    return shapes


class MBConv(nn.Module):
    """Pre-normalized inverted bottleneck: BN, 1x1 expand, 3x3 depthwise (strided), squeeze-excitation,
    1x1 project; the shortcut is average-pooled and projected when the shape changes."""

    def __init__(self, in_channels, out_channels, expansion_ratio, squeeze_ratio, stride, activation_layer, norm_layer,
                 p_stochastic_dropout=0.0):
        super().__init__()
        if stride != 1 or in_channels != out_channels:
            shortcut = [nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, bias=True)]
            if stride == 2:
                shortcut.insert(0, nn.AvgPool2d(kernel_size=3, stride=stride, padding=1))
            self.proj = nn.Sequential(*shortcut)
        else:
            self.proj = nn.Identity()
        mid_channels = int(out_channels * expansion_ratio)
        squeeze_channels = int(out_channels * squeeze_ratio)
        if p_stochastic_dropout:
            self.stochastic_depth = StochasticDepth(p_stochastic_dropout, mode="row")
        else:
            self.stochastic_depth = nn.Identity()
        self.layers = nn.Sequential(OrderedDict([
            ("pre_norm", norm_layer(in_channels)),
            ("conv_a", Conv2dNormActivation(in_channels, mid_channels, kernel_size=1, stride=1, padding=0,
                                            activation_layer=activation_layer, norm_layer=norm_layer, inplace=None)),
            ("conv_b", Conv2dNormActivation(mid_channels, mid_channels, kernel_size=3, stride=stride, padding=1,
                                            activation_layer=activation_layer, norm_layer=norm_layer,
                                            groups=mid_channels, inplace=None)),
            ("squeeze_excitation", SqueezeExcitation(mid_channels, squeeze_channels, activation=nn.SiLU)),
            ("conv_c", nn.Conv2d(mid_channels, out_channels, kernel_size=1, bias=True)),
        ]))

    def forward(self, x):
        shortcut = self.proj(x)
        x = self.stochastic_depth(self.layers(x))
        return shortcut + x


class RelativePositionalMultiHeadAttention(nn.Module):
    """Multi-head self-attention over the P tokens of each of G partitions of (B, G, P, D) inputs, with a
    learned bias per relative offset inside the sqrt(P) x sqrt(P) partition.

    As in the published model the keys are scaled by ``feat_dim ** -0.5`` (all heads' width, not one head's).
    """

    def __init__(self, feat_dim, head_dim, max_seq_len):
        super().__init__()
        if feat_dim % head_dim != 0:
            raise ValueError(f"feat_dim: {feat_dim} must be divisible by head_dim: {head_dim}")
        self.n_heads = feat_dim // head_dim
        self.head_dim = head_dim
        self.size = int(math.sqrt(max_seq_len))
        self.max_seq_len = max_seq_len
        self.to_qkv = nn.Linear(feat_dim, self.n_heads * self.head_dim * 3)
        self.scale_factor = feat_dim ** -0.5
        self.merge = nn.Linear(self.head_dim * self.n_heads, feat_dim)
        self.relative_position_bias_table = nn.Parameter(
            torch.empty((2 * self.size - 1) * (2 * self.size - 1), self.n_heads, dtype=torch.float32))
        self.register_buffer("relative_position_index",
                             torch.from_numpy(_relative_position_index((self.size, self.size))))
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def get_relative_positional_bias(self):
        """The (1, heads, P, P) bias added to the attention logits."""
        index = self.relative_position_index.view(-1)
        bias = self.relative_position_bias_table[index].view(self.max_seq_len, self.max_seq_len, -1)
        return bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x):
        batch, groups, tokens, dim = x.shape
        heads, head_dim = self.n_heads, self.head_dim
        qkv = self.to_qkv(x)
        q, k, v = torch.chunk(qkv, 3, dim=-1)
        q = q.reshape(batch, groups, tokens, heads, head_dim).permute(0, 1, 3, 2, 4)
        k = k.reshape(batch, groups, tokens, heads, head_dim).permute(0, 1, 3, 2, 4)
        v = v.reshape(batch, groups, tokens, heads, head_dim).permute(0, 1, 3, 2, 4)
        k = k * self.scale_factor
        logits = torch.einsum("B G H I D, B G H J D -> B G H I J", q, k)
        attn = F.softmax(logits + self.get_relative_positional_bias(), dim=-1)
        out = torch.einsum("B G H I J, B G H J D -> B G H I D", attn, v)
        out = out.permute(0, 1, 3, 2, 4).reshape(batch, groups, tokens, dim)
        return self.merge(out)


class SwapAxes(nn.Module):
    """``x.swapaxes(a, b)`` as a layer."""

    def __init__(self, a, b):
        super().__init__()
        self.a = a
        self.b = b

    def forward(self, x):
        return torch.swapaxes(x, self.a, self.b)


class WindowPartition(nn.Module):
    """(B, C, H, W) -> (B, H/p * W/p, p * p, C): the map cut into p x p windows, each a token sequence."""

    def forward(self, x, p):
        batch, channels, height, width = x.shape
        x = x.reshape(batch, channels, height // p, p, width // p, p)
        x = x.permute(0, 2, 4, 3, 5, 1)
        return x.reshape(batch, (height // p) * (width // p), p * p, channels)


class WindowDepartition(nn.Module):
    """Inverse of ``WindowPartition``: (B, h_partitions * w_partitions, p * p, C) -> (B, C, H, W)."""

    def forward(self, x, p, h_partitions, w_partitions):
        batch, _, _, channels = x.shape
        x = x.reshape(batch, h_partitions, w_partitions, p, p, channels)
        x = x.permute(0, 5, 1, 3, 2, 4)
        return x.reshape(batch, channels, h_partitions * p, w_partitions * p)


class PartitionAttentionLayer(nn.Module):
    """Attention and MLP (both pre-norm, residual, with stochastic depth) over partitions of the map.

    ``"window"``: windows of ``partition_size`` x ``partition_size`` neighbouring tokens. ``"grid"``: the map
    is cut into grid_size / partition_size windows and the tokens at the same place in each window form a
    partition (a dilated ``partition_size`` x ``partition_size`` grid spanning the map).
    """

    def __init__(self, in_channels, head_dim, partition_size, partition_type, grid_size, mlp_ratio, activation_layer,
                 norm_layer, attention_dropout, mlp_dropout, p_stochastic_dropout):
        super().__init__()
        self.n_heads = in_channels // head_dim
        self.head_dim = head_dim
        self.n_partitions = grid_size[0] // partition_size
        self.partition_type = partition_type
        self.grid_size = grid_size
        if partition_type not in ["grid", "window"]:
            raise ValueError("partition_type must be either 'grid' or 'window'")
        if partition_type == "window":
            self.p, self.g = partition_size, self.n_partitions
        else:
            self.p, self.g = self.n_partitions, partition_size
        self.partition_op = WindowPartition()
        self.departition_op = WindowDepartition()
        self.partition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.departition_swap = SwapAxes(-2, -3) if partition_type == "grid" else nn.Identity()
        self.attn_layer = nn.Sequential(
            norm_layer(in_channels),
            RelativePositionalMultiHeadAttention(in_channels, head_dim, partition_size ** 2),
            nn.Dropout(attention_dropout),
        )
        self.mlp_layer = nn.Sequential(
            nn.LayerNorm(in_channels),
            nn.Linear(in_channels, in_channels * mlp_ratio),
            activation_layer(),
            nn.Linear(in_channels * mlp_ratio, in_channels),
            nn.Dropout(mlp_dropout),
        )
        self.stochastic_dropout = StochasticDepth(p_stochastic_dropout, mode="row")

    def forward(self, x):
        _check_map_size(x, self.grid_size)
        if self.grid_size[0] % self.p or self.grid_size[1] % self.p:
            raise ValueError(f"Grid size must be divisible by partition size. Got grid size of {self.grid_size} "
                             f"and partition size of {self.p}")
        x = self.partition_op(x, self.p)
        x = self.partition_swap(x)
        x = x + self.stochastic_dropout(self.attn_layer(x))
        x = x + self.stochastic_dropout(self.mlp_layer(x))
        x = self.departition_swap(x)
        return self.departition_op(x, self.p, self.grid_size[0] // self.p, self.grid_size[1] // self.p)


@fx.has_side_effect  # kept by dead-code elimination, as torchvision's ``_assert`` nodes
def _check_map_size(x, grid_size):
    """A partition layer takes the (H, W) map its model's ``input_size`` made it for."""
    if tuple(x.shape[-2:]) != tuple(grid_size):
        raise ValueError(f"this layer partitions a {tuple(grid_size)} map (the model's input_size fixes it), "
                         f"got {tuple(x.shape[-2:])}")


fx.wrap("_check_map_size")  # branches on the input's size: one node when traced


class MaxVitLayer(nn.Module):
    """MBConv, then block (window) attention, then grid attention."""

    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, stride, norm_layer, activation_layer,
                 head_dim, mlp_ratio, mlp_dropout, attention_dropout, p_stochastic_dropout, partition_size, grid_size):
        super().__init__()
        attention = partial(PartitionAttentionLayer, in_channels=out_channels, head_dim=head_dim,
                            partition_size=partition_size, grid_size=grid_size, mlp_ratio=mlp_ratio,
                            activation_layer=activation_layer, norm_layer=nn.LayerNorm,
                            attention_dropout=attention_dropout, mlp_dropout=mlp_dropout,
                            p_stochastic_dropout=p_stochastic_dropout)
        self.layers = nn.Sequential(OrderedDict([
            ("MBconv", MBConv(in_channels=in_channels, out_channels=out_channels, expansion_ratio=expansion_ratio,
                              squeeze_ratio=squeeze_ratio, stride=stride, activation_layer=activation_layer,
                              norm_layer=norm_layer, p_stochastic_dropout=p_stochastic_dropout)),
            ("window_attention", attention(partition_type="window")),
            ("grid_attention", attention(partition_type="grid")),
        ]))

    def forward(self, x):
        return self.layers(x)


class MaxVitBlock(nn.Module):
    """``n_layers`` MaxViT layers, the first one halving the map; ``p_stochastic`` gives each layer's drop rate."""

    def __init__(self, in_channels, out_channels, squeeze_ratio, expansion_ratio, norm_layer, activation_layer,
                 head_dim, mlp_ratio, mlp_dropout, attention_dropout, partition_size, input_grid_size, n_layers,
                 p_stochastic):
        super().__init__()
        if not len(p_stochastic) == n_layers:
            raise ValueError(f"p_stochastic must have length n_layers={n_layers}, got p_stochastic={p_stochastic}.")
        self.layers = nn.ModuleList()
        self.grid_size = _get_conv_output_shape(input_grid_size, kernel_size=3, stride=2, padding=1)
        for idx, p in enumerate(p_stochastic):
            self.layers.append(MaxVitLayer(
                in_channels=in_channels if idx == 0 else out_channels, out_channels=out_channels,
                squeeze_ratio=squeeze_ratio, expansion_ratio=expansion_ratio, stride=2 if idx == 0 else 1,
                norm_layer=norm_layer, activation_layer=activation_layer, head_dim=head_dim, mlp_ratio=mlp_ratio,
                mlp_dropout=mlp_dropout, attention_dropout=attention_dropout, p_stochastic_dropout=p,
                partition_size=partition_size, grid_size=self.grid_size))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def _classifier_linear(in_features, num_classes):
    """The final, bias-free linear layer with N(0, 0.02) weights, or an identity for ``num_classes=0``."""
    if num_classes <= 0:
        return nn.Identity()
    linear = nn.Linear(in_features, num_classes, bias=False)
    nn.init.normal_(linear.weight, std=0.02)
    return linear


class MaxVit(nn.Module):
    """A two-conv stem (stride 2), four blocks of MaxViT layers (each halving the map), and a head of
    average pooling, LayerNorm, linear + tanh (pre-logits) and a bias-free linear classifier.

    ``norm_layer`` (default BatchNorm2d with eps 1e-3, momentum 0.01) is used in the convolutions; the
    attention layers use LayerNorm. Stochastic depth grows linearly from 0 to ``stochastic_depth_prob``
    over all layers. ``input_size`` must give maps divisible by ``partition_size`` in every block.
    """

    default_cfg = {"first_conv": "stem.0.0", "classifier": "classifier.5"}

    def __init__(self, input_size, stem_channels, partition_size, block_channels, block_layers, head_dim,
                 stochastic_depth_prob, norm_layer=None, activation_layer=nn.GELU, squeeze_ratio=0.25,
                 expansion_ratio=4, mlp_ratio=4, mlp_dropout=0.0, attention_dropout=0.0, num_classes=1000, in_chans=3):
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.BatchNorm2d, eps=1e-3, momentum=0.01)
        block_input_sizes = _make_block_input_shapes(input_size, len(block_channels))
        for idx, size in enumerate(block_input_sizes):
            if size[0] % partition_size != 0 or size[1] % partition_size != 0:
                raise ValueError(
                    f"Input size {size} of block {idx} is not divisible by partition size {partition_size}. "
                    f"Consider changing the partition size or the input size.\n"
                    f"Current configuration yields the following block input sizes: {block_input_sizes}.")
        self.num_classes = num_classes
        self.stem = nn.Sequential(
            Conv2dNormActivation(in_chans, stem_channels, 3, stride=2, norm_layer=norm_layer,
                                 activation_layer=activation_layer, bias=False, inplace=None),
            Conv2dNormActivation(stem_channels, stem_channels, 3, stride=1, norm_layer=None, activation_layer=None,
                                 bias=True),
        )
        grid_size = _get_conv_output_shape(input_size, kernel_size=3, stride=2, padding=1)
        self.partition_size = partition_size
        self.blocks = nn.ModuleList()
        p_stochastic = np.linspace(0, stochastic_depth_prob, sum(block_layers)).tolist()
        first = 0
        for in_channel, out_channel, n_layers in zip([stem_channels] + block_channels[:-1], block_channels,
                                                     block_layers):
            self.blocks.append(MaxVitBlock(
                in_channels=in_channel, out_channels=out_channel, squeeze_ratio=squeeze_ratio,
                expansion_ratio=expansion_ratio, norm_layer=norm_layer, activation_layer=activation_layer,
                head_dim=head_dim, mlp_ratio=mlp_ratio, mlp_dropout=mlp_dropout, attention_dropout=attention_dropout,
                partition_size=partition_size, input_grid_size=grid_size, n_layers=n_layers,
                p_stochastic=p_stochastic[first:first + n_layers]))
            grid_size = self.blocks[-1].grid_size
            first += n_layers
        self.num_features = block_channels[-1]
        self.head_hidden_size = self.num_features
        self.classifier = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.LayerNorm(block_channels[-1]),
            nn.Linear(block_channels[-1], block_channels[-1]),
            nn.Tanh(),
            linear_or_identity(block_channels[-1], num_classes, bias=False),
        )
        self._init_weights()

    def _init_weights(self):
        """N(0, 0.02) convolutions and linears with zero biases, unit/zero BatchNorms."""
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[5]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return the pre-logits)."""
        self.num_classes = num_classes
        self.classifier[5] = _classifier_linear(self.num_features, num_classes)

    def forward_features(self, x):
        """The last block's map (N, block_channels[-1], H/32, W/32)."""
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pool, flatten, LayerNorm, linear and tanh; then the classifier unless ``pre_logits``."""
        for layer in self.classifier[:5]:
            x = layer(x)
        if pre_logits:
            return x
        return self.classifier[5](x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def maxvit_t(pretrained=False, progress=True, **kwargs):
    """MaxViT-T: stem 64, blocks of widths (64, 128, 256, 512) and depths (2, 2, 5, 2), 7x7 partitions,
    for ``input_size`` (224, 224) by default (``kwargs`` may override any of it)."""
    options = dict(input_size=(224, 224), stem_channels=64, block_channels=[64, 128, 256, 512],
                   block_layers=[2, 2, 5, 2], head_dim=32, stochastic_depth_prob=0.2, partition_size=7)
    options.update(kwargs)
    return build_model(MaxVit, "maxvit_t", pretrained, progress=progress, **options)
