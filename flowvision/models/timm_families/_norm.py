"""timm's norms with its defaults: LayerNorms (epsilon 1e-6) over the last axis (channels-last tokens and maps) and
over the channels of an NCHW map, the norm of ConvNeXt, the MetaFormers and global context attention's MLP; and
GroupNorm with one group (``GroupNorm1``: over all channels and pixels), PoolFormer's and MobileViTv2's norm.
"""
import engine.nn.functional as F
from engine import nn

__all__ = ["LayerNorm", "LayerNorm2d", "GroupNorm1"]


class LayerNorm(nn.LayerNorm):
    """LayerNorm over the last axis, eps 1e-6 by default (timm's default, where PyTorch's is 1e-5): the norm of
    blocks that run channels-last."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__(num_channels, eps=eps)


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an (N, C, H, W) map, at every pixel, eps 1e-6 by default: timm's channel norm
    for maps kept channels-first (the map is viewed channels-last, normalised over its last axis, and put back)."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__(num_channels, eps=eps)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class GroupNorm1(nn.GroupNorm):
    """GroupNorm with a single group: each sample normalised over all its channels and pixels (timm's
    ``GroupNorm1``, PoolFormer's and MobileViTv2's norm), then a per-channel scale and shift."""

    def __init__(self, num_channels, eps=1e-5, bias=True):
        super().__init__(1, num_channels, eps=eps, bias=bias)
