"""Converters of the layer ops: convolutions, linear, bilinear, matmul and addmm, normalisations, resampling,
embedding and embedding_bag, F.normalize, cosine similarity and the constant scale-and-shift of dropout's eval paths (the pools:
ops_pool.py).

The engine runs 1-D convolutions and pools as 2-D ones over a unit height; ONNX has the 1-D forms,
so the recorded 2-D parameters lose their unit height again here.
"""
import math

import numpy as np

from ..nn.functional.conv import ConvNd, ConvTransposeNd
from ..nn.functional.distance import _CosineEmbedding, _CosineSimilarity, _Normalize, _PairwiseDistance
from ..nn.functional.fold import Fold, Unfold
from ..nn.functional.dropout import _ScaleShift
from ..nn.functional.linear import _Bilinear, _Linear
from ..nn.functional.normalization import BatchNorm, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm
from ..nn.functional.sampling import GridSample
from ..nn.functional.sparse import _Embedding, _EmbeddingBag
from ..nn.functional.vision import Interpolate
from ..ops import linalg
from .ops_pool import adaptive_pool
from .table import converts


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
    """ConvTranspose. ONNX Runtime refuses an ``output_padding`` not below the stride, which torch allows up to the
    dilation: then the rows it adds are cropped less at the end (``pads``), zeros beyond the full output (``Pad``),
    and the bias added afterwards."""
    stride, padding, output_padding, dilation, groups = ctx.state["args"]
    stride, padding, output_padding, dilation = (list(v) for v in (stride, padding, output_padding, dilation))
    if ctx.state["nd"] == 1:
        stride, padding, output_padding, dilation = stride[1:], padding[1:], output_padding[1:], dilation[1:]
    kernel = list(ctx.in_shape(1)[2:])
    has_bias = not ctx.is_none(2)
    if all(o < s for o, s in zip(output_padding, stride)):
        inputs = [ctx.input(0), ctx.input(1)] + ([ctx.input(2)] if has_bias else [])
        return ctx.g.node("ConvTranspose", inputs, strides=stride, pads=padding + padding, dilations=dilation,
                          output_padding=output_padding, group=groups, kernel_shape=kernel)
    ends = [max(p - o, 0) for p, o in zip(padding, output_padding)]
    y = ctx.g.node("ConvTranspose", [ctx.input(0), ctx.input(1)], strides=stride, pads=padding + ends,
                   dilations=dilation, group=groups, kernel_shape=kernel)
    zeros = [max(o - p, 0) for p, o in zip(padding, output_padding)]
    if any(zeros):
        y = ctx.g.node("Pad", [y, ctx.g.ints([0] * (2 + len(zeros)) + [0, 0] + zeros)])
    if has_bias:
        y = ctx.g.node("Add", [y, ctx.unsqueeze(ctx.input(2), list(range(1, 1 + len(kernel))))])
    return y


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



@converts(_Bilinear)
def bilinear(ctx):
    """y[..., o] = x1 A[o] x2 + b[o] as one ``Einsum``."""
    dtype = ctx.out_dtype()
    y = ctx.g.node("Einsum", [ctx.input(0, dtype), ctx.input(2, dtype), ctx.input(1, dtype)],
                   equation="...i,oij,...j->...o")
    return y if ctx.is_none(3) else ctx.g.node("Add", [y, ctx.input(3, dtype)])

@converts(linalg.MatMul)
def matmul(ctx):
    return ctx.g.node("MatMul", [ctx.input(0), ctx.input(1)])


@converts(linalg.AddMatMul)
def add_matmul(ctx):
    """addmm/baddbmm: beta * c + alpha * (a @ b); with beta 0, ``c`` is not read (its NaNs do not propagate)."""
    dtype = ctx.out_dtype()
    beta, alpha = ctx.state["beta"], ctx.state["alpha"]
    y = ctx.g.node("MatMul", [ctx.input(1, dtype), ctx.input(2, dtype)])
    if alpha != 1:
        y = ctx.g.node("Mul", [y, ctx.scalar(alpha, dtype)])
    if beta == 0:
        return y
    c = ctx.input(0, dtype)
    if beta != 1:
        c = ctx.g.node("Mul", [c, ctx.scalar(beta, dtype)])
    return ctx.g.node("Add", [y, c])


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
        return _batch_statistics_norm(ctx)
    channels = ctx.in_shape(0)[1]
    dtype = ctx.in_dtype(0)
    scale = ctx.input(1) if not ctx.is_none(1) else ctx.g.constant(np.ones(channels, dtype))
    bias = ctx.input(2) if not ctx.is_none(2) else ctx.g.constant(np.zeros(channels, dtype))
    return ctx.g.node("BatchNormalization", [ctx.input(0), scale, bias, ctx.g.array(mean._data),
                                             ctx.g.array(var._data)], epsilon=float(ctx.state["eps"]))


def _batch_statistics_norm(ctx):
    """BatchNorm with the batch's statistics (training mode, or no running statistics): each channel normalized
    by its mean and biased variance over the batch and spatial axes, then scaled and shifted. The running
    statistics a training step would update are not outputs of the file."""
    rank = len(ctx.in_shape(0))
    y = _normalize(ctx, ctx.input(0), [0] + list(range(2, rank)), ctx.state["eps"])
    return _affine(ctx, y, 1, 2, [1, -1] + [1] * (rank - 2))


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
    """ONNX's LRN for a 4-D input and an odd window (ONNX Runtime takes no other); otherwise torch's definition,
    x / (k + alpha * mean of the squares over a zero-padded channel window)^beta, with the window mean an
    ``AveragePool`` over the channel axis (size // 2 channels before, (size - 1) // 2 after)."""
    size, alpha, beta, k = ctx.state["size"], float(ctx.state["alpha"]), float(ctx.state["beta"]), float(ctx.state["k"])
    rank = len(ctx.in_shape(0))
    x = ctx.input(0)
    if rank == 4 and size % 2 == 1:
        return ctx.g.node("LRN", [x], size=int(size), alpha=alpha, beta=beta, bias=k)
    if rank not in (3, 4):
        ctx.fail(f"local_response_norm of a {rank}-D tensor with an even window")
    squares = ctx.unsqueeze(ctx.g.node("Mul", [x, x]), [1])
    window = [size] + [1] * (rank - 2)
    zeros = [0] * (rank - 2)
    mean = ctx.g.node("AveragePool", [squares], kernel_shape=window, count_include_pad=1,
                      pads=[size // 2] + zeros + [(size - 1) // 2] + zeros)
    scale = ctx.g.node("Add", [ctx.g.node("Mul", [ctx.squeeze(mean, [1]), ctx.scalar(alpha)]), ctx.scalar(k)])
    return ctx.g.node("Div", [x, ctx.g.node("Pow", [scale, ctx.scalar(beta)])])


# ---- resampling --------------------------------------------------------------------------------
_RESIZE = {"nearest": ("nearest", "asymmetric"), "nearest-exact": ("nearest", "half_pixel"),
           "linear": ("linear", None), "bilinear": ("linear", None), "bicubic": ("cubic", None)}


@converts(Interpolate)
def interpolate(ctx):
    """Resize. With antialias (opset 18 on): Resize's ``antialias`` stretches the filter by the downscale as
    torch does; ``exclude_outside`` renormalises the weights over the taps inside the image (torch's
    clipped support), half_pixel is torch's centring s * (i + 0.5), and the cubic filter has a = -0.5."""
    size, mode, align_corners, scale_factor, recompute, antialias = ctx.state["args"]
    if mode == "area":
        return _area(ctx)
    if mode not in _RESIZE:
        ctx.fail(f"interpolate mode '{mode}'")
    onnx_mode, coordinates = _RESIZE[mode]
    if coordinates is None:  # half_pixel: torch's centring, also for an output of size 1 (pytorch_half_pixel's
        coordinates = "align_corners" if align_corners else "half_pixel"  # 0 is not torch's in / 2 - 0.5)
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



def _area(ctx):
    """interpolate(mode='area'): an adaptive average pool to the output size (1-D through a unit height)."""
    x = ctx.input(0)
    rank = len(ctx.in_shape(0))
    if rank == 5:
        ctx.fail("interpolate mode 'area' of a 5-D input")
    spatial, out = list(ctx.in_shape(0)[2:]), list(ctx.out_shape()[2:])
    if rank == 3:
        y = adaptive_pool(ctx, ctx.unsqueeze(x, [2]), False, [1] + spatial, [1] + out)
        return ctx.squeeze(y, [2])
    return adaptive_pool(ctx, x, False, spatial, out)

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


@converts(_EmbeddingBag)
def embedding_bag(ctx):
    """Per bag the sum, mean or max of the picked rows: a (bags, indices) membership mask (each index's bag, -1 for
    none, and ``padding_idx`` entries left out) times the rows (sum, mean over max(count, 1)), or the rows' maximum
    under the mask (max; an empty bag gives 0). Bags of a 2-D input (one per row of L indices) follow its batch
    size: index i's bag is i // L, computed at run time."""
    if ctx.varying("args", 0) is not None:
        ctx.fail("embedding_bag's indices are read as raw values (they follow the input but the trace holds "
                 "them as a constant)")
    weight = ctx.input(1)
    indices = ctx.input(0, np.int64)
    rows = ctx.g.node("Gather", [weight, indices], axis=0)
    dtype = ctx.in_dtype(1)
    bag_of, bags = _bags(ctx, indices)
    member = ctx.g.node("Equal", [ctx.unsqueeze(bag_of, [0]), ctx.unsqueeze(bags, [1])])
    if ctx.state["padding_idx"] is not None:
        kept = ctx.g.node("Not", [ctx.g.node("Equal", [indices, ctx.scalar(ctx.state["padding_idx"], np.int64)])])
        member = ctx.g.node("And", [member, ctx.unsqueeze(kept, [0])])
    mode = ctx.state["mode"]
    if mode == "max":
        lowest = ctx.g.constant(np.asarray(-np.inf, dtype))
        candidates = ctx.g.node("Where", [ctx.unsqueeze(member, [2]), ctx.unsqueeze(rows, [0]), lowest])
        best = ctx.reduce("ReduceMax", candidates, [1], False)
        count = ctx.reduce("ReduceSum", ctx.g.node("Cast", [member], to=ctx.g.elem_type(np.int64)), [1], True)
        empty = ctx.g.node("Equal", [count, ctx.g.constant(np.int64(0))])
        return ctx.g.node("Where", [empty, ctx.g.constant(np.zeros((), dtype)), best])
    if not ctx.is_none(2):
        rows = ctx.g.node("Mul", [rows, ctx.unsqueeze(ctx.input(2, dtype), [1])])
    share = ctx.g.node("Cast", [member], to=ctx.g.elem_type(dtype))
    out = ctx.g.node("MatMul", [share, rows])
    if mode == "mean":
        count = ctx.g.node("Max", [ctx.reduce("ReduceSum", share, [1], True), ctx.g.constant(np.ones((), dtype))])
        out = ctx.g.node("Div", [out, count])
    return out


def _bags(ctx, indices):
    """(each index's bag, the bag numbers 0..n_bags-1) as int64 values: the traced constants, or i // L when the
    number of bags follows the input."""
    bag = np.asarray(ctx.state["bag"], np.int64)
    bag_pair, count_pair = ctx.varying("state", "bag"), ctx.varying("state", "n_bags")
    if bag_pair is None and count_pair is None:
        return ctx.g.constant(bag), ctx.g.constant(np.arange(ctx.state["n_bags"], dtype=np.int64))
    lengths = {_row_length(b) for b in bag_pair or ()}
    if bag_pair is None or len(lengths) != 1 or None in lengths:
        ctx.fail("embedding_bag whose offsets follow the input's values (only one bag per row of a 2-D input "
                 "follows its batch size)")
    length = ctx.g.constant(np.int64(lengths.pop()))
    zero, one = ctx.g.constant(np.int64(0)), ctx.g.constant(np.int64(1))
    n = ctx.g.node("Squeeze", [ctx.shape_of(indices, 0, 1), ctx.g.ints([0])])
    positions = ctx.g.node("Range", [zero, n, one])
    return ctx.g.node("Div", [positions, length]), ctx.g.node("Range", [zero, ctx.g.node("Div", [n, length]), one])


def _row_length(bag):
    """L when ``bag`` is 0, ..., 0, 1, ..., 1, ... in runs of L (a 2-D input's bags), else None."""
    bag = np.asarray(bag)
    if bag.size == 0 or bag[-1] < 0:
        return None
    length = bag.size // (int(bag[-1]) + 1)
    return length if np.array_equal(bag, np.arange(bag.size) // length) else None


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


@converts(_CosineSimilarity)
def cosine_similarity(ctx):
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim`` of the broadcast operands."""
    x1, x2 = ctx.input(0), ctx.input(1)
    x1, x2 = ctx.g.node("Expand", [x1, ctx.shape_of(x2)]), ctx.g.node("Expand", [x2, ctx.shape_of(x1)])
    dim, eps = ctx.state["dim"], ctx.scalar(ctx.state["eps"])
    dot = ctx.reduce("ReduceSum", ctx.g.node("Mul", [x1, x2]), [dim], False)
    n1, n2 = (ctx.g.node("Max", [ctx.reduce("ReduceL2", x, [dim], False), eps]) for x in (x1, x2))
    return ctx.g.node("Div", [dot, ctx.g.node("Mul", [n1, n2])])


@converts(_CosineEmbedding)
def cosine_embedding(ctx):
    """cosine_embedding_loss's cosine: sum(x1 x2) / sqrt((||x1||^2 + 1e-12)(||x2||^2 + 1e-12)) along ``dim``."""
    x1, x2 = ctx.input(0), ctx.input(1)
    dim, tiny = ctx.state["dim"], ctx.scalar(1e-12)
    m1, m2 = (ctx.g.node("Add", [ctx.reduce("ReduceSum", ctx.g.node("Mul", [x, x]), [dim], False), tiny])
              for x in (x1, x2))
    dot = ctx.reduce("ReduceSum", ctx.g.node("Mul", [x1, x2]), [dim], False)
    return ctx.g.node("Div", [dot, ctx.g.node("Sqrt", [ctx.g.node("Mul", [m1, m2])])])


@converts(_PairwiseDistance)
def pairwise_distance(ctx):
    """||x1 - x2 + eps||_p over the last dim (p 2, 1, inf, 0 or any other)."""
    p, keep = ctx.state["p"], ctx.state["keepdim"]
    d = ctx.g.node("Add", [ctx.g.node("Sub", [ctx.input(0), ctx.input(1)]), ctx.scalar(ctx.state["eps"])])
    if p == 2:
        return ctx.g.node("Sqrt", [ctx.reduce("ReduceSum", ctx.g.node("Mul", [d, d]), [-1], keep)])
    if p == math.inf:
        return ctx.reduce("ReduceMax", ctx.g.node("Abs", [d]), [-1], keep)
    if p == 1:
        return ctx.reduce("ReduceSum", ctx.g.node("Abs", [d]), [-1], keep)
    if p == 0:
        nonzero = ctx.g.node("Cast", [ctx.g.node("Not", [ctx.g.node("Equal", [d, ctx.scalar(0)])])],
                             to=ctx.g.elem_type(ctx.out_dtype()))
        return ctx.reduce("ReduceSum", nonzero, [-1], keep)
    powered = ctx.reduce("ReduceSum", ctx.g.node("Pow", [ctx.g.node("Abs", [d]), ctx.scalar(p)]), [-1], keep)
    return ctx.g.node("Pow", [powered, ctx.scalar(1.0 / p)])
