"""Structural re-parameterisation, shared by the families whose training form folds into plain convolutions for
inference (RepVGG and MobileOne in ``byobnet``, FastViT, GhostNetV3, RepGhost, RepViT, TinyViT, EfficientViT-MSRA).

An eval-mode BatchNorm is an affine map per channel, so a convolution followed by it is one biased convolution
(``fold_batchnorm``; ``batchnorm_scale_shift`` gives the affine map itself, for linear layers); a skip connection is
a convolution by the pass-through kernel (``identity_kernel``); a smaller kernel is the larger one with zeros
around it (``pad_kernel``). Parallel branches of the same geometry then sum into one kernel and bias
(``sum_branches``), held by a biased convolution with the training form's geometry (``biased_conv_like``).
``ConvNorm`` is the bias-free convolution + BatchNorm pair that TinyViT and EfficientViT-MSRA build everything from
and fold with ``fuse()``. Keeping one copy of this arithmetic keeps every family's folded outputs computed the same
way.
"""
import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

__all__ = ["batchnorm_scale_shift", "fold_batchnorm", "identity_kernel", "pad_kernel", "sum_branches",
           "biased_conv_like",
           "ConvNorm"]


def batchnorm_scale_shift(bn):
    """The per-channel (scale, shift) with which BatchNorm ``bn`` maps x to x * scale + shift in eval mode (its
    running statistics)."""
    scale = bn.weight / (bn.running_var + bn.eps).sqrt()
    return scale, bn.bias - bn.running_mean * scale


def fold_batchnorm(kernel, bn, bias=None):
    """A convolution ``kernel`` (with ``bias``, or none) followed by BatchNorm ``bn`` in eval mode, as one
    (kernel, bias)."""
    scale, shift = batchnorm_scale_shift(bn)
    kernel = kernel * scale.reshape(-1, 1, 1, 1)
    if bias is None:
        return kernel, shift
    return kernel, bn.bias + (bias - bn.running_mean) * scale


def identity_kernel(channels, group_chs, kernel_size, dtype):
    """The (channels, group_chs, kh, kw) kernel through which each channel passes unchanged: a 1 at the centre of
    its own input channel within its group (``kernel_size`` one number or a (kh, kw) pair)."""
    height, width = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    kernel = np.zeros((channels, group_chs, height, width))
    rows = np.arange(channels)
    kernel[rows, rows % group_chs, height // 2, width // 2] = 1.0
    return torch.from_numpy(kernel).to(dtype)


def pad_kernel(kernel, size):
    """A square kernel zero-padded evenly on every side to ``size`` x ``size`` (the same convolution when the
    padding of the input grows to match)."""
    pad = (size - kernel.shape[-1]) // 2
    return F.pad(kernel, [pad, pad, pad, pad])


def sum_branches(branches):
    """The (kernel, bias) of parallel convolutions of one geometry, given as (kernel, bias) pairs, summed in
    order."""
    kernel, bias = 0, 0
    for branch_kernel, branch_bias in branches:
        kernel = kernel + branch_kernel
        bias = bias + branch_bias
    return kernel, bias


def biased_conv_like(template, kernel, bias):
    """A biased convolution with ``template``'s channels, kernel size, stride, padding, dilation and groups,
    holding ``kernel`` and ``bias``, in their dtype."""
    conv = nn.Conv2d(template.in_channels, template.out_channels, template.kernel_size, stride=template.stride,
                     padding=template.padding, dilation=template.dilation, groups=template.groups, bias=True)
    conv = conv.to(kernel.dtype)
    with torch.no_grad():
        conv.weight.copy_(kernel)
        conv.bias.copy_(bias)
    return conv


class ConvNorm(nn.Sequential):
    """A bias-free convolution (``conv``) followed by BatchNorm (``bn``) whose scale starts at ``bn_weight_init``
    and shift at 0: timm's ``ConvNorm`` of TinyViT and EfficientViT-MSRA."""

    def __init__(self, in_chs, out_chs, ks=1, stride=1, pad=0, dilation=1, groups=1, bn_weight_init=1.0):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, ks, stride, pad, dilation, groups, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        nn.init.constant_(self.bn.weight, bn_weight_init)
        nn.init.constant_(self.bn.bias, 0)

    def fuse(self):
        """A new biased convolution giving this pair's eval-mode output: the BatchNorm's scale folded into the
        filters and its shift into the bias (timm's ``ConvNorm.fuse``; the pair itself is left unchanged)."""
        with torch.no_grad():
            kernel, bias = fold_batchnorm(self.conv.weight, self.bn)
        return biased_conv_like(self.conv, kernel, bias)
