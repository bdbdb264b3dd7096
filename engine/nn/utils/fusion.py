"""``engine.nn.utils.fusion``: fold an eval-mode batch norm into the convolution or linear layer before it, as
torch's: ``bn(conv(x)) == fused(x)`` with ``W' = W * gamma / sqrt(var + eps)`` (per output channel) and
``b' = (b - mean) * gamma / sqrt(var + eps) + beta``."""
import copy

from ... import ops as _ops
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` that computes ``bn(conv(x))`` (both in eval mode); ``transpose`` for a transposed
    convolution, whose output channels are its weight's dim 1."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_conv = copy.deepcopy(conv)
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused (weight, bias) Parameters; a missing conv bias or bn affine part counts as 0 (1 for the scale).
    Each keeps its input's dtype and ``requires_grad``."""
    conv_weight_dtype = conv_w.dtype
    conv_bias_dtype = conv_weight_dtype if conv_b is None else conv_b.dtype
    if conv_b is None:
        conv_b = _ops.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = _ops.ones_like(bn_rm)
    if bn_b is None:
        bn_b = _ops.zeros_like(bn_rm)
    bn_var_rsqrt = _ops.rsqrt(bn_rv + bn_eps)
    channel_first = [1, -1] if transpose else [-1, 1]
    shape = channel_first + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(dtype=conv_weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(dtype=conv_bias_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` that computes ``bn(linear(x))`` (both in eval mode; bn over linear's outputs, or a
    single-feature bn)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The fused (weight, bias) Parameters of a linear layer followed by a batch norm."""
    linear_weight_dtype = linear_w.dtype
    linear_bias_dtype = linear_weight_dtype if linear_b is None else linear_b.dtype
    if linear_b is None:
        linear_b = _ops.zeros_like(bn_rm)
    bn_scale = bn_w * _ops.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=linear_weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=linear_bias_dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)
