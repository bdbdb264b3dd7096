"""Deformable convolution (DCN v1/v2) on the GPU with torchvision's semantics, the twin of
``backends/cpu/deform_conv.py``: a RawKernel builds the im2col matrix of (masked) bilinear samples at the
offset positions, one batched GEMM per weight group applies the weights, and the backward runs the
adjoint kernels (input by atomicAdd scatter, offsets and mask per sample) around the transposed GEMMs.
float16 is computed in float32."""
from collections import namedtuple

import cupy

from .gemm import matmul
from .source import launch

DeformSaved = namedtuple("DeformSaved", "x weight offset mask has_bias dtype args groups")
DeformSaved.__doc__ = ("The computable inputs (mask: a 1-element placeholder for DCN v1), whether a bias was "
                       "added, the inputs' dtype, the kernels' geometry arguments and the weight groups.")


def _computable(a):
    a = cupy.ascontiguousarray(a)
    return a.astype(cupy.float32) if a.dtype == cupy.float16 else a


def _output_size(x_shape, weight_shape, stride, padding, dilation):
    return tuple((x_shape[2 + a] + 2 * padding[a] - dilation[a] * (weight_shape[2 + a] - 1) - 1) // stride[a] + 1
                 for a in range(2))


def _im2col(x, offset, mask, args):
    n, c = x.shape[:2]
    k, ho, wo = args[6], args[7], args[8]
    cols = cupy.empty((c * k, n * ho * wo), x.dtype)
    launch("deform_conv", "deform_im2col", x.dtype, cols.size, x, offset, mask, cols, *args)
    return cols


def deform_conv2d_forward(x, weight, offset, mask, bias, stride, padding, dilation, groups, offset_groups):
    """(N, O, Ho, Wo) deformable convolution (see the CPU twin for the shapes), and what the backward needs."""
    xc, wc, oc = _computable(x), _computable(weight), _computable(offset)
    mc = cupy.zeros(1, xc.dtype) if mask is None else _computable(mask)
    n, c, h, w = xc.shape
    o, _, kh, kw = wc.shape
    ho, wo = _output_size(xc.shape, wc.shape, stride, padding, dilation)
    args = (n, c, h, w, int(offset_groups), kw, kh * kw, ho, wo, *map(int, (*stride, *padding, *dilation)),
            int(mask is not None))
    cols = _im2col(xc, oc, mc, args).reshape(groups, c * kh * kw // groups, n * ho * wo)
    y = matmul(wc.reshape(groups, o // groups, -1), cols).reshape(o, n, ho, wo).transpose(1, 0, 2, 3)
    if bias is not None:
        y = y + _computable(bias).reshape(1, o, 1, 1)
    saved = DeformSaved(xc, wc, oc, mc, bias is not None, x.dtype, args, int(groups))
    return cupy.ascontiguousarray(y).astype(x.dtype, copy=False), saved


def deform_conv2d_backward(gy, saved):
    """Gradients of x, weight, offset, mask (None for DCN v1) and bias (None without one)."""
    x, wc, args, groups = saved.x, saved.weight, saved.args, saved.groups
    o, n, (ho, wo) = wc.shape[0], x.shape[0], gy.shape[2:]
    g = _computable(gy).astype(x.dtype, copy=False)
    grad_rows = cupy.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(groups, o // groups, n * ho * wo)
    cols = _im2col(x, saved.offset, saved.mask, args).reshape(groups, x.shape[1] * args[6] // groups, n * ho * wo)
    grad_weight = matmul(grad_rows, cols.transpose(0, 2, 1)).reshape(wc.shape)
    grad_cols = cupy.ascontiguousarray(matmul(wc.reshape(groups, o // groups, -1).transpose(0, 2, 1), grad_rows))
    grad_x = cupy.zeros(x.shape, x.dtype)
    launch("deform_conv", "deform_col2im", x.dtype, grad_cols.size, grad_cols, saved.offset, saved.mask, grad_x,
           *args)
    use_mask = bool(args[-1])
    grad_offset = cupy.empty(saved.offset.shape, x.dtype)
    grad_mask = cupy.empty(saved.mask.shape if use_mask else 1, x.dtype)
    launch("deform_conv", "deform_col2coord", x.dtype, saved.offset.size // 2, x, grad_cols, saved.offset,
           saved.mask, grad_offset, grad_mask, *args)
    grad_bias = g.sum((0, 2, 3)).astype(saved.dtype, copy=False) if saved.has_bias else None
    return (grad_x.astype(saved.dtype, copy=False), grad_weight.astype(saved.dtype, copy=False),
            grad_offset.astype(saved.dtype, copy=False),
            grad_mask.astype(saved.dtype, copy=False) if use_mask else None, grad_bias)
