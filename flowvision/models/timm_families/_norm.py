"""timm's LayerNorms with its defaults (epsilon 1e-6): over the last axis (channels-last tokens and maps), and over
the channels of an NCHW map, the norm of ConvNeXt, the MetaFormers and global context attention's MLP.
"""
import engine.nn.functional as F
from engine import nn

__all__ = ["LayerNorm", "LayerNorm2d"]


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
