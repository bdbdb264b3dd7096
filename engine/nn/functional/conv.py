"""Convolutions: conv1d, conv2d, conv3d, conv_transpose1d/2d — argument handling around the backend kernels.

1-D convolutions run as 2-D ones over a height of 1; the kernels (im2col + one GEMM) live in
``engine.backends``.
"""
import copy
import operator

from ... import backends, ops
from ...amp import autocast_mode
from ...autograd.function import Function
from ...tensor import Tensor
from . import _memory_format
from .padding import pad


def _tuple(value, n, name):
    if not isinstance(value, (tuple, list)):  # an int, a numpy integer or a 0-dim integer tensor, as torch takes
        return (operator.index(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values to match "
                           f"the convolution dimensions, but got {name}={list(value)}")
    return value


class _Conv(Function):
    """Runs a conv kernel pair of the backend; 1-D runs as 2-D with a unit height axis."""

    kernel = None  # "conv2d" or "conv_transpose2d"

    def forward_options(self):
        return {}

    def forward(self, x, w, b):
        self.inputs = x, w  # for the differentiable backward (create_graph)
        if self.nd == 1:
            x, w = x[:, :, None, :], w[:, :, None, :]
        self.kernels = backends.kernels(x, "conv")
        run = getattr(self.kernels, self.kernel + "_forward")
        y, self.saved = run(x, w, b, *self.args, **self.forward_options())
        return y[:, :, 0, :] if self.nd == 1 else y

    def backward(self, gy):
        if self.nd == 1:
            gy = gy[:, :, None, :]
        needs = tuple(self.needs_input_grad) + (False,) * (3 - len(self.needs_input_grad))
        gx, gw, gb = getattr(self.kernels, self.kernel + "_backward")(gy, self.saved, *needs)
        if self.nd == 1:
            gx = None if gx is None else gx[:, :, 0, :]
            gw = None if gw is None else gw[:, :, 0, :]
        return gx, gw, gb

    def backward_tensors(self, gy):
        """The input and weight gradients through ``_ConvGrads`` (the convolution is bilinear in x and w), the
        bias gradient a differentiable sum."""
        x, w = self.saved_input(0, self.inputs[0]), self.saved_input(1, self.inputs[1])
        gx, gw = _ConvGrads(self)(gy, x, w)
        gb = None
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            gb = gy.sum(dim=(0,) + tuple(range(2, gy.ndim)))
        return gx, gw, gb


def _conv_array(node, x, w):
    """``node``'s convolution (no bias) of arrays ``x`` and ``w``, on a copy of the node."""
    conv = copy.copy(node)
    conv.needs_input_grad = (False, False, False)
    return conv.forward(x, w, None)


def _conv_vjp(node, gy, x, w):
    """(d<gy, conv(x, w)>/dx, d<gy, conv(x, w)>/dw): the first depends on ``w`` only, the second on ``x``."""
    conv = copy.copy(node)
    conv.needs_input_grad = (True, True, False)
    conv.forward(x, w, None)
    gx, gw, _ = conv.backward(gy)
    return gx, gw


class _ConvGrads(Function):
    """(gx, gw) = the input and weight gradients of the convolution ``conv`` for output gradient ``gy`` at
    (x, w), as an op of (gy, x, w), for higher-order gradients. A convolution f(x, w) is bilinear, so gx is
    linear in (gy, w) and gw in (gy, x), and for cotangents (cx, cw) of (gx, gw):
    d/dgy = f(cx, w) + f(x, cw); d/dx = the input gradient for gy at weight cw; d/dw = the weight gradient for
    gy at input cx, that is ``_ConvGrads(gy, cx, cw)``. Everything stays within the convolution and this op,
    so any order is differentiable."""

    def __init__(self, conv):
        self.conv = copy.copy(conv)

    def forward(self, gy, x, w):
        self.gy, self.x, self.w = gy, x, w
        return _conv_vjp(self.conv, gy, x, w)

    def backward(self, cx, cw):
        d_gy = _conv_array(self.conv, cx, self.w) + _conv_array(self.conv, self.x, cw)
        d_x, d_w = _conv_vjp(self.conv, self.gy, cx, cw)
        return d_gy, d_x, d_w

    def backward_tensors(self, cx, cw):
        gy, x, w = (self.saved_input(i, a) for i, a in enumerate((self.gy, self.x, self.w)))
        d_gy = copy.copy(self.conv)(cx, w, None) + copy.copy(self.conv)(x, cw, None)
        d_x, d_w = _ConvGrads(self.conv)(gy, cx, cw)
        return d_gy, d_x, d_w


class ConvNd(_Conv):
    """conv1d/conv2d."""

    kernel = "conv2d"

    def forward_options(self):
        return {"weight_grad": self.needs_input_grad[1:2] == (True,)}

    def __init__(self, nd, stride, pads, dilation, groups):
        self.nd, self.stride, self.pads, self.dilation, self.groups = nd, stride, pads, dilation, groups
        self.args = (stride, pads, dilation, groups)


class ConvTransposeNd(_Conv):
    """conv_transpose1d/conv_transpose2d."""

    kernel = "conv_transpose2d"

    def __init__(self, nd, stride, padding, output_padding, dilation, groups):
        self.nd = nd
        self.args = (stride, padding, output_padding, dilation, groups)


def _check_geometry(weight, nd, groups, stride, padding, output_padding):
    """torch's refusals of negative paddings, non-positive strides and groups, and of a weight whose first dim
    the groups do not divide (made before the checks of shapes)."""
    if not isinstance(padding, str) and min(_tuple(padding, nd, "padding")) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(_tuple(output_padding, nd, "output_padding")) < 0:
        raise RuntimeError("negative output_padding is not supported")
    if min(_tuple(stride, nd, "stride")) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.dim() >= 1 and weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size [{list(weight.shape)}] instead")


def _check(input, weight, bias, nd, groups, transposed=False, stride=1, padding=0, dilation=1, output_padding=0):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"conv{nd}d(): input and weight must be Tensors")
    _check_geometry(weight, nd, groups, stride, padding, output_padding)
    if weight.dim() != nd + 2:
        raise RuntimeError("weight should have at least three dimensions" if weight.dim() < 3 else
                           f"Expected {nd + 2}-dimensional weight for conv{nd}d, but got "
                           f"{weight.dim()}-dimensional weight of size {list(weight.shape)}")
    if not transposed and weight.shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got "
                           f"weight of size {list(weight.shape)} instead")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to conv{nd}d, but got "
                           f"input of size: {list(input.shape)}")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"Input type ({input.dtype.title}) and weight type ({weight.dtype.title}) "
                           "should be the same")
    if not input.is_floating_point():
        raise RuntimeError(f"\"conv{nd}d\" not implemented for '{input.dtype.title}'")
    channels = input.shape[-nd - 1]
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if channels != expected:
        if transposed:
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                               f"{list(input.shape)} to have {weight.shape[0]} channels, but got {channels} "
                               "channels instead")
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[1] * groups} channels, but got "
                           f"{channels} channels instead")
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size {list(weight.shape)}, "
                           "expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    if min(_tuple(dilation, nd, "dilation")) <= 0:
        raise RuntimeError("non-positive dilation is not supported")


def _pads(padding, kernel, dilation, stride, nd):
    """(before, after) per spatial dim, flat ((top, bottom, left, right) in 2-D; 1-D gets a unit height), from
    torch's int / tuple / 'same' / 'valid'."""
    if isinstance(padding, str):
        if padding == "valid":
            pairs = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
            pairs = [(t // 2, t - t // 2) for t in totals]
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pairs = [(p, p) for p in _tuple(padding, nd, "padding")]
    if nd == 1:
        pairs = [(0, 0)] + pairs
    return tuple(amount for pair in pairs for amount in pair)


def _kernel_extents(spatial, pads, kernel, dilation):
    """The dilated kernel's extent per dim, with torch's error where it is larger than the padded input.
    ``pads`` is ``_pads``'s flat (before, after) per entry of ``spatial``; the last ``len(kernel)`` count."""
    padded = [n + pads[2 * i] + pads[2 * i + 1] for i, n in enumerate(spatial)][-len(kernel):]
    extents = [d * (k - 1) + 1 for d, k in zip(dilation, kernel)]
    if any(p < e for p, e in zip(padded, extents)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, extents))}). Kernel size can't be greater "
                           "than actual input size")
    return extents


def _conv(input, weight, bias, stride, padding, dilation, groups, nd):
    _check(input, weight, bias, nd, groups, stride=stride, padding=padding, dilation=dilation)
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    kernel = tuple(weight.shape[2:])
    pads = _pads(padding, kernel, dilation, stride, nd)
    _kernel_extents(([1] if nd == 1 else []) + list(input.shape[-nd:]), pads, kernel, dilation)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    fn = ConvNd(nd, (1,) + stride if nd == 1 else stride, pads, (1,) + dilation if nd == 1 else dilation, groups)
    out = fn(x, weight, bias)
    if nd == 2:
        out = _memory_format.like_conv_input(x, weight, out)
    return out.squeeze(0) if unbatched else out


@autocast_mode.lower_precision("cpu", "cuda")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over (N, C, L) inputs (as ``torch.nn.functional.conv1d``)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


@autocast_mode.lower_precision("cpu", "cuda")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over (N, C, H, W) inputs (as ``torch.nn.functional.conv2d``)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


@autocast_mode.lower_precision("cpu", "cuda")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over (N, C, D, H, W) inputs (as ``torch.nn.functional.conv3d``).

    A sum over the kernel's depth taps of 2-D convolutions, each over every output depth at once (folded into
    the batch): the 2-D kernels' im2col and GEMMs on the CPU and the GPU, and their gradients through autograd.
    """
    _check(input, weight, bias, 3, groups, stride=stride, padding=padding, dilation=dilation)
    stride, dilation = _tuple(stride, 3, "stride"), _tuple(dilation, 3, "dilation")
    kernel = tuple(weight.shape[2:])
    pads = _pads(padding, kernel, dilation, stride, 3)
    x = input.unsqueeze(0) if input.dim() == 4 else input
    extents = _kernel_extents(x.shape[2:], pads, kernel, dilation)
    if any(pads):
        x = pad(x, pads[4:6] + pads[2:4] + pads[0:2])
    n, c, depth, height, width = x.shape
    out_depth = (depth - extents[0]) // stride[0] + 1
    out = None
    for i in range(kernel[0]):
        start = i * dilation[0]
        planes = x[:, :, start:start + stride[0] * (out_depth - 1) + 1:stride[0]]
        planes = planes.transpose(1, 2).reshape(n * out_depth, c, height, width)
        term = conv2d(planes, weight[:, :, i], None, stride[1:], 0, dilation[1:], groups)
        out = term if out is None else out + term
    out = out.reshape((n, out_depth) + tuple(out.shape[1:])).transpose(1, 2).contiguous()
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if input.dim() == 4 else out


def _transposed_geometry(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    """torch's checks of a transposed convolution, and its (stride, padding, output_padding, dilation) tuples."""
    _check(input, weight, bias, nd, groups, True, stride, padding, dilation, output_padding)
    stride, padding = _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding")
    output_padding, dilation = _tuple(output_padding, nd, "output_padding"), _tuple(dilation, nd, "dilation")
    for op, s, d in zip(output_padding, stride, dilation):
        if op >= s and op >= d:
            axes = ("depth", "height", "width")[-max(nd, 2):]  # 1-D as 2-D over a unit height
            got = " ".join(f"{name}_{axis}: {v}" for name, values, fill in (
                ("output_padding", output_padding, 0), ("stride", stride, 1), ("dilation", dilation, 1))
                for axis, v in zip(axes, (fill,) * (len(axes) - nd) + values))
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got {got}")
    spatial = ([1] if nd == 1 else []) + list(input.shape[-nd:])
    extents = list(zip(stride, padding, output_padding, dilation, weight.shape[2:]))
    sizes = ([1] if nd == 1 else []) + [(n - 1) * s - 2 * p + d * (k - 1) + op + 1
                                        for n, (s, p, op, d, k) in zip(spatial[-nd:], extents)]
    if min(sizes) < 1:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, sizes))}). Output size is too small")
    return stride, padding, output_padding, dilation


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    stride, padding, output_padding, dilation = _transposed_geometry(input, weight, bias, stride, padding,
                                                                     output_padding, groups, dilation, nd)
    if nd == 1:
        stride, padding, output_padding, dilation = ((1,) + stride, (0,) + padding, (0,) + output_padding,
                                                     (1,) + dilation)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    out = ConvTransposeNd(nd, stride, padding, output_padding, dilation, groups)(x, weight, bias)
    if nd == 2:
        out = _memory_format.like_conv_input(x, weight, out)
    return out.squeeze(0) if unbatched else out


@autocast_mode.lower_precision("cpu", "cuda")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


@autocast_mode.lower_precision("cpu", "cuda")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-D convolution with torch's weight layout (C_in, C_out/groups, KH, KW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@autocast_mode.lower_precision("cpu", "cuda")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-D convolution with torch's weight layout (C_in, C_out/groups, KD, KH, KW).

    A sum over the kernel's depth taps of transposed 2-D convolutions of every input depth at once (folded into
    the batch): tap i of input depth d lands on output depth d * stride + i * dilation, before the padding is
    cropped from both ends. The 2-D kernels and autograd do the rest, as for ``conv3d``.
    """
    stride, padding, output_padding, dilation = _transposed_geometry(input, weight, bias, stride, padding,
                                                                     output_padding, groups, dilation, 3)
    x = input.unsqueeze(0) if input.dim() == 4 else input
    n, c, depth, height, width = x.shape
    planes = x.transpose(1, 2).reshape(n * depth, c, height, width)
    taps = weight.shape[2]
    full_depth = (depth - 1) * stride[0] + dilation[0] * (taps - 1) + 1 + output_padding[0]
    out = None
    for i in range(taps):
        term = conv_transpose2d(planes, weight[:, :, i], None, stride[1:], padding[1:], output_padding[1:], groups,
                                dilation[1:])
        term = _spread_depth(term.reshape((n, depth) + tuple(term.shape[1:])).transpose(1, 2), stride[0])
        start = i * dilation[0]
        term = pad(term, (0, 0, 0, 0, start, full_depth - start - term.shape[2]))
        out = term if out is None else out + term
    out = out[:, :, padding[0]:full_depth - padding[0]].contiguous()
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1, 1)
    return out.squeeze(0) if input.dim() == 4 else out


def _spread_depth(x, stride):
    """(N, C, D, H, W) with ``stride - 1`` zero planes after each depth but the last: (N, C, (D - 1) * stride + 1,
    H, W), the depths a strided transposed convolution writes."""
    if stride == 1:
        return x
    n, c, depth, height, width = x.shape
    gaps = ops.zeros(n, c, depth, stride - 1, height, width, dtype=x.dtype, device=x.device)
    spread = ops.cat([x.unsqueeze(3), gaps], 3).reshape(n, c, depth * stride, height, width)
    return spread[:, :, :(depth - 1) * stride + 1]


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
