"""Converters of the layer ops: convolutions, linear and matmul, normalisations, pooling, resampling,
embedding, F.normalize and the constant scale-and-shift of dropout's eval paths.

The engine runs 1-D convolutions and pools as 2-D ones over a unit height; ONNX has the 1-D forms,
so the recorded 2-D parameters lose their unit height again here.
"""
import math

import numpy as np

from ..nn.functional.conv import ConvNd, ConvTransposeNd
from ..nn.functional.distance import _Normalize
from ..nn.functional.fold import Fold, Unfold
from ..nn.functional.dropout import _ScaleShift
from ..nn.functional.linear import _Linear
from ..nn.functional.normalization import BatchNorm, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from ..nn.functional.pooling import _Pool
from ..nn.functional.sampling import GridSample
from ..nn.functional.sparse import _Embedding
from ..nn.functional.vision import Interpolate
from ..ops import linalg
from .table import converts


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


# ---- convolutions ------------------------------------------------------------------------------
@converts(ConvNd)
def conv_nd(ctx):
    nd = ctx.state["nd"]
    top, bottom, left, right = ctx.state["pads"]
    stride, dilation = list(ctx.state["stride"]), list(ctx.state["dilation"])
    pads = [top, left, bottom, right]
    if nd == 1:
        stride, dilation, pads = stride[1:], dilation[1:], [left, right]
    inputs = [ctx.input(0), ctx.input(1)] + ([] if ctx.is_none(2) else [ctx.input(2)])
    return ctx.g.node("Conv", inputs, strides=stride, pads=pads, dilations=dilation, group=ctx.state["groups"],
                      kernel_shape=list(ctx.in_shape(1)[2:]))


@converts(ConvTransposeNd)
def conv_transpose_nd(ctx):
    stride, padding, output_padding, dilation, groups = ctx.state["args"]
    stride, padding, output_padding, dilation = (list(v) for v in (stride, padding, output_padding, dilation))
    if ctx.state["nd"] == 1:
        stride, padding, output_padding, dilation = stride[1:], padding[1:], output_padding[1:], dilation[1:]
    inputs = [ctx.input(0), ctx.input(1)] + ([] if ctx.is_none(2) else [ctx.input(2)])
    return ctx.g.node("ConvTranspose", inputs, strides=stride, pads=padding + padding, dilations=dilation,
                      output_padding=output_padding, group=groups, kernel_shape=list(ctx.in_shape(1)[2:]))


def _block_taps(ctx, channels, kernel):
    """One-hot (channels * kh * kw, 1, kh, kw) weights: grouped by channel, output channel c * kh * kw + t of a
    convolution copies tap t of channel c, the column order of unfold."""
    taps = kernel[0] * kernel[1]
    weight = np.zeros((channels, taps, 1, taps), np.dtype(ctx.in_dtype(0)))
    weight[:, np.arange(taps), 0, np.arange(taps)] = 1
    return ctx.g.constant(weight.reshape(channels * taps, 1, *kernel), hint="block_taps")


@converts(Unfold)
def unfold_(ctx):
    """unfold as a grouped Conv with one-hot taps, its (N, C * kh * kw, OH, OW) output flattened to columns."""
    kernel, dilation, padding, stride = (list(v) for v in ctx.state["geometry"])
    channels = ctx.in_shape(0)[1]
    blocks = ctx.g.node("Conv", [ctx.input(0), _block_taps(ctx, channels, kernel)], strides=stride,
                        pads=padding + padding, dilations=dilation, group=channels, kernel_shape=kernel)
    shape = ctx.g.constant(np.asarray([0, channels * kernel[0] * kernel[1], -1], np.int64))
    return ctx.g.node("Reshape", [blocks, shape])


@converts(Fold)
def fold_(ctx):
    """fold as a grouped ConvTranspose with the same one-hot taps (summing overlapping blocks), its output
    padded to ``output_size``."""
    kernel, dilation, padding, stride = (list(v) for v in ctx.state["geometry"])
    size = list(ctx.state["size"])
    taps = kernel[0] * kernel[1]
    channels = ctx.in_shape(0)[1] // taps
    blocks = [(n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride)]
    spans = [s * (b - 1) + d * (k - 1) + 1 - 2 * p for s, b, d, k, p in zip(stride, blocks, dilation, kernel, padding)]
    shape = ctx.g.constant(np.asarray([0, channels * taps] + blocks, np.int64))
    grid = ctx.g.node("Reshape", [ctx.input(0), shape])
    return ctx.g.node("ConvTranspose", [grid, _block_taps(ctx, channels, kernel)], strides=stride,
                      pads=padding + padding, dilations=dilation, group=channels, kernel_shape=kernel,
                      output_padding=[n - span for n, span in zip(size, spans)])


# ---- linear algebra ----------------------------------------------------------------------------
@converts(_Linear)
def linear_(ctx):
    """``Gemm`` for a 2-D input (as torch writes it), else ``MatMul`` by the transposed weight and ``Add``."""
    x = ctx.input(0)
    has_bias = not ctx.is_none(2)
    if len(ctx.in_shape(0)) == 2:
        inputs = [x, ctx.input(1)] + ([ctx.input(2)] if has_bias else [])
        return ctx.g.node("Gemm", inputs, transB=1)
    weight = ctx.value(1)
    if weight is not None:
        transposed = ctx.g.constant(np.ascontiguousarray(np.asarray(weight).T), hint="weight_t")
    else:
        transposed = ctx.g.node("Transpose", [ctx.input(1)], perm=[1, 0])
    y = ctx.g.node("MatMul", [x, transposed])
    return ctx.g.node("Add", [y, ctx.input(2)]) if has_bias else y


@converts(linalg.MatMul)
def matmul(ctx):
    return ctx.g.node("MatMul", [ctx.input(0), ctx.input(1)])


@converts(linalg.Einsum)
def einsum(ctx):
    """Einsum with the equation's letters renamed to lower case (ONNX's alphabet), operands in the op's dtype;
    the index sizes follow the operands' shapes at run time."""
    ctx.varying_under("state", "sizes")
    letters = dict(zip(sorted(set("".join(ctx.state["subs"]) + ctx.state["out"])), "abcdefghijklmnopqrstuvwxyz"))
    if len(letters) > 26:
        ctx.fail("an einsum over more than 26 indices")
    equation = ",".join("".join(letters[c] for c in sub) for sub in ctx.state["subs"])
    equation += "->" + "".join(letters[c] for c in ctx.state["out"])
    return ctx.g.node("Einsum", [ctx.input(i, ctx.state["dtype"]) for i in range(ctx.n_args())], equation=equation)


# ---- normalisation -----------------------------------------------------------------------------
@converts(BatchNorm)
def batch_norm(ctx):
    mean, var = ctx.state["running"]
    if ctx.state["training"] or mean is None or var is None:
        ctx.fail("BatchNorm with batch statistics (training mode or track_running_stats=False); export the "
                 "model in eval mode with running statistics")
    channels = ctx.in_shape(0)[1]
    dtype = ctx.in_dtype(0)
    scale = ctx.input(1) if not ctx.is_none(1) else ctx.g.constant(np.ones(channels, dtype))
    bias = ctx.input(2) if not ctx.is_none(2) else ctx.g.constant(np.zeros(channels, dtype))
    return ctx.g.node("BatchNormalization", [ctx.input(0), scale, bias, ctx.g.array(mean._data),
                                             ctx.g.array(var._data)], epsilon=float(ctx.state["eps"]))


def _affine(ctx, y, weight_index, bias_index, shape=None):
    """``y * weight + bias`` for the optional affine arguments, reshaped to ``shape`` when given."""
    for index, op_type in ((weight_index, "Mul"), (bias_index, "Add")):
        if index is not None and not ctx.is_none(index):
            value = ctx.input(index)
            if shape is not None:
                value = ctx.g.node("Reshape", [value, ctx.g.ints(shape)])
            y = ctx.g.node(op_type, [y, value])
    return y


def _normalize(ctx, x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` (biased variance)."""
    centred = ctx.g.node("Sub", [x, ctx.reduce("ReduceMean", x, axes, True)])
    var = ctx.reduce("ReduceMean", ctx.g.node("Mul", [centred, centred]), axes, True)
    std = ctx.g.node("Sqrt", [ctx.g.node("Add", [var, ctx.scalar(eps, ctx.in_dtype(0))])])
    return ctx.g.node("Div", [centred, std])


@converts(LayerNorm)
def layer_norm(ctx):
    n_dims, eps = ctx.state["n_dims"], float(ctx.state["eps"])
    rank = len(ctx.in_shape(0))
    if ctx.opset >= 17:
        weight = ctx.input(1) if not ctx.is_none(1) else ctx.g.constant(
            np.ones(ctx.in_shape(0)[rank - n_dims:], ctx.in_dtype(0)))
        bias = "" if ctx.is_none(2) else ctx.input(2)
        return ctx.g.node("LayerNormalization", [ctx.input(0), weight, bias] if bias else [ctx.input(0), weight],
                          axis=-n_dims, epsilon=eps)
    y = _normalize(ctx, ctx.input(0), list(range(rank - n_dims, rank)), eps)
    return _affine(ctx, y, 1, 2)


@converts(GroupNorm)
def group_norm(ctx):
    groups, eps = ctx.state["groups"], float(ctx.state["eps"])
    x = ctx.input(0)
    rank = len(ctx.in_shape(0))
    grouped = ctx.g.node("Reshape", [x, ctx.g.ints([0, groups, -1])])
    y = ctx.g.node("Reshape", [_normalize(ctx, grouped, [2], eps), ctx.shape_of(x)])
    return _affine(ctx, y, 1, 2, shape=[-1] + [1] * (rank - 2))


@converts(RMSNorm)
def rms_norm(ctx):
    n_dims, eps = ctx.state["n_dims"], ctx.state["eps"]
    x = ctx.input(0)
    rank = len(ctx.in_shape(0))
    if eps is None:
        eps = float(np.finfo(ctx.in_dtype(0)).eps)
    mean_square = ctx.reduce("ReduceMean", ctx.g.node("Mul", [x, x]), list(range(rank - n_dims, rank)), True)
    y = ctx.g.node("Div", [x, ctx.g.node("Sqrt", [ctx.g.node("Add", [mean_square, ctx.scalar(eps, ctx.in_dtype(0))])])])
    return _affine(ctx, y, 1, None)


@converts(LocalResponseNorm)
def local_response_norm(ctx):
    if len(ctx.in_shape(0)) != 4:
        ctx.fail("local_response_norm of a tensor that is not 4-D")
    return ctx.g.node("LRN", [ctx.input(0)], size=int(ctx.state["size"]), alpha=float(ctx.state["alpha"]),
                      beta=float(ctx.state["beta"]), bias=float(ctx.state["k"]))


# ---- pooling -----------------------------------------------------------------------------------
@converts(_Pool)
def pool(ctx):
    """Max/average pools (1-D through a unit height, as the engine runs them) and adaptive pools; the
    indices of max pools are not written (reading them fails where they are read)."""
    x = ctx.input(0)
    one_d = ctx.state["nd"] == 1
    if one_d:
        x = ctx.unsqueeze(x, [2])
    kind = ctx.state["kind"]
    args = ctx.state["args"]
    if kind in ("max_pool2d", "max_pool2d_values"):
        y = _max_pool(ctx, x, *args)
    elif kind == "avg_pool2d":
        y = _avg_pool(ctx, x, *args)
    else:
        y = _adaptive_pool(ctx, x, kind, args[0])
    y = ctx.squeeze(y, [2]) if one_d else y
    return (y, None) if ctx.state["with_indices"] else y


def _window(kernel, stride, padding):
    kernel = _pair(kernel)
    stride = kernel if stride is None else _pair(stride)
    padding = _pair(padding)
    return list(kernel), list(stride), [padding[0], padding[1], padding[0], padding[1]]


def _max_pool(ctx, x, kernel, stride, padding, dilation, ceil_mode):
    kernel, stride, pads = _window(kernel, stride, padding)
    return ctx.g.node("MaxPool", [x], kernel_shape=kernel, strides=stride, pads=pads,
                      dilations=list(_pair(dilation)), ceil_mode=int(bool(ceil_mode)))


def _avg_pool(ctx, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    if divisor_override is not None:
        ctx.fail("avg_pool2d with divisor_override")
    kernel, stride, pads = _window(kernel, stride, padding)
    return ctx.g.node("AveragePool", [x], kernel_shape=kernel, strides=stride, pads=pads,
                      ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)))


def _adaptive_pool(ctx, x, kind, output_size):
    """Global pools for a 1x1 output; fixed windows where the output divides the input; otherwise (average
    only) one constant averaging matrix per axis, since ONNX has no adaptive pooling."""
    spatial = ctx.in_shape(0)[-2:] if ctx.state["nd"] == 2 else (1,) + ctx.in_shape(0)[-1:]
    out = [n if o is None else o for n, o in zip(spatial, output_size)]
    is_max = kind == "adaptive_max_pool2d"
    dynamic = {a for a in ctx.dynamic(0) if a >= 2}
    if out == [1, 1]:
        return ctx.g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [x])
    if dynamic:
        ctx.fail(f"adaptive pooling to {tuple(out)} of an input whose height or width follows the input size "
                 "(ONNX has no adaptive pooling; export with a fixed image size)")
    if all(n % o == 0 for n, o in zip(spatial, out)):
        kernel = [n // o for n, o in zip(spatial, out)]
        return ctx.g.node("MaxPool" if is_max else "AveragePool", [x], kernel_shape=kernel, strides=kernel)
    if is_max:
        ctx.fail(f"adaptive max pooling from {tuple(spatial)} to {tuple(out)} (windows of unequal sizes)")
    rows = ctx.g.constant(_averaging_matrix(spatial[0], out[0], ctx.in_dtype(0)))
    cols = ctx.g.constant(_averaging_matrix(spatial[1], out[1], ctx.in_dtype(0)).T.copy())
    return ctx.g.node("MatMul", [rows, ctx.g.node("MatMul", [x, cols])])


def _averaging_matrix(n_in, n_out, dtype):
    """(n_out, n_in): row i averages torch's adaptive window [floor(i n_in / n_out), ceil((i+1) n_in / n_out))."""
    matrix = np.zeros((n_out, n_in), np.float64)
    for i in range(n_out):
        start, stop = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        matrix[i, start:stop] = 1.0 / (stop - start)
    return matrix.astype(dtype)


# ---- resampling --------------------------------------------------------------------------------
_RESIZE = {"nearest": ("nearest", "asymmetric"), "nearest-exact": ("nearest", "half_pixel"),
           "linear": ("linear", None), "bilinear": ("linear", None), "bicubic": ("cubic", None)}


@converts(Interpolate)
def interpolate(ctx):
    """Resize. With antialias (opset 18 on): Resize's ``antialias`` stretches the filter by the downscale as
    torch does; ``exclude_outside`` renormalises the weights over the taps inside the image (torch's
    clipped support), half_pixel is torch's centring s * (i + 0.5), and the cubic filter has a = -0.5."""
    size, mode, align_corners, scale_factor, recompute, antialias = ctx.state["args"]
    if mode not in _RESIZE:
        ctx.fail(f"interpolate mode '{mode}'")
    onnx_mode, coordinates = _RESIZE[mode]
    if coordinates is None:
        coordinates = "align_corners" if align_corners else "pytorch_half_pixel"
    attrs = {"mode": onnx_mode, "coordinate_transformation_mode": coordinates}
    if onnx_mode == "nearest":
        attrs["nearest_mode"] = "floor" if mode == "nearest" else "round_prefer_ceil"
    if onnx_mode == "cubic":
        attrs["cubic_coeff_a"] = -0.75
    if antialias:
        if ctx.opset < 18:
            ctx.fail("interpolate(antialias=True) needs ONNX opset 18 (Resize's antialias attribute)")
        if align_corners:
            ctx.fail("interpolate(antialias=True, align_corners=True) (no ONNX Resize coordinate mode centres "
                     "torch's antialiasing filter at (in - 1) / (out - 1) * (i + 0.5))")
        attrs.update(antialias=1, exclude_outside=1, coordinate_transformation_mode="half_pixel")
        if onnx_mode == "cubic":
            attrs["cubic_coeff_a"] = -0.5
    x = ctx.input(0)
    spatial = len(ctx.in_shape(0)) - 2
    if size is None and not recompute:
        factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * spatial
        if antialias:  # torch copies an axis whose size the factor leaves unchanged
            factors = [1.0 if math.floor(n * f) == n else f for n, f in zip(ctx.in_shape(0)[2:], factors)]
        scales = ctx.g.constant(np.asarray([1.0, 1.0] + [float(f) for f in factors], np.float32))
        return ctx.g.node("Resize", [x, "", scales], **attrs)
    return ctx.g.node("Resize", [x, "", "", _output_sizes(ctx, x, spatial, size, scale_factor)], **attrs)


def _output_sizes(ctx, x, spatial, size, scale_factor):
    """The int64 (N, C, *spatial) sizes of a resize to ``size`` (or to floor(in * scale_factor))."""
    out = list(ctx.out_shape()[2:])
    lead = ctx.shape_of(x, 0, 2)
    varying = ctx.varying_under("state", "args", 0)
    dynamic = {a - 2 for a in ctx.out_dynamic() if a >= 2}
    if size is not None or not dynamic:
        pairs = {k[0] if isinstance(k, tuple) and k else 0: pair for k, pair in varying.items()}
        if isinstance(size, int) and varying:
            pairs = {k: varying[()] for k in range(spatial)}
        return ctx.g.node("Concat", [lead, ctx.ints(None, out, pairs=pairs)], axis=0)
    factors = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * spatial
    dims = ctx.g.node("Cast", [ctx.shape_of(x, 2, 2 + spatial)], to=ctx.g.elem_type(np.float64))
    scaled = ctx.g.node("Floor", [ctx.g.node("Mul", [dims, ctx.g.constant(np.asarray(factors, np.float64))])])
    return ctx.g.node("Concat", [lead, ctx.g.node("Cast", [scaled], to=ctx.g.elem_type(np.int64))], axis=0)


# ONNX's GridSample mode names: opset 16's, renamed in opset 20
_GRID_MODES = {16: {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic"},
               20: {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}}


@converts(GridSample)
def grid_sample(ctx):
    """GridSample (opset 16 on): the same modes, paddings and ``align_corners`` as torch's grid_sample; its
    nearest mode rounds half to even, as ours (ONNX Runtime's does too)."""
    if ctx.opset < 16:
        ctx.fail("grid_sample needs ONNX opset 16 (GridSample)")
    modes = _GRID_MODES[20 if ctx.opset >= 20 else 16]
    return ctx.g.node("GridSample", [ctx.input(0), ctx.input(1, ctx.in_dtype(0))], mode=modes[ctx.state["mode"]],
                      padding_mode=ctx.state["padding"], align_corners=int(ctx.state["align_corners"]))


# ---- lookups and constant affine maps ----------------------------------------------------------
@converts(_Embedding)
def embedding(ctx):
    return ctx.g.node("Gather", [ctx.input(1), ctx.input(0, np.int64)], axis=0)


@converts(_ScaleShift)
def scale_shift(ctx):
    y = ctx.g.node("Mul", [ctx.input(0), ctx.input(1, ctx.in_dtype(0))])
    return y if ctx.is_none(2) else ctx.g.node("Add", [y, ctx.input(2, ctx.in_dtype(0))])


@converts(_Normalize)
def normalize(ctx):
    """x / max(||x||_p, eps) along ``dim`` (F.normalize)."""
    x = ctx.input(0)
    p, dim = ctx.state["p"], ctx.state["dim"]
    if p == 2.0:
        norm = ctx.reduce("ReduceL2", x, [dim], True)
    elif p == 1.0:
        norm = ctx.reduce("ReduceL1", x, [dim], True)
    else:
        powered = ctx.reduce("ReduceSum", ctx.g.node("Pow", [ctx.g.node("Abs", [x]), ctx.scalar(p)]), [dim], True)
        norm = ctx.g.node("Pow", [powered, ctx.scalar(1.0 / p)])
    return ctx.g.node("Div", [x, ctx.g.node("Max", [norm, ctx.scalar(ctx.state["eps"])])])
