"""2-D convolution and transposed convolution on the GPU: im2col into one column matrix for the whole
batch, one cuBLAS GEMM per group, and one output pass that turns the GEMM's (O, N*OH*OW) result into
NCHW with the bias or the fused epilogue applied (the twin of ``backends/cpu/conv.py``).

Folding the batch into the GEMM's columns keeps the GEMMs large at any batch: resnet50's late layers
have 49 output pixels per image, far too few for a GEMM per image. Depthwise layers, whose GEMMs would
be 1 x k*k, run as direct kernels. The backward rebuilds the column matrix for the weight gradient
(``gw = gy @ col^T``), and the input gradient is one GEMM (``dcol = w^T @ gy``) followed by col2im.
Where the whole batch's column matrix would pass ``COLUMN_BYTES``, the batch runs in groups of images,
one column matrix and GEMM each, written into their images of the output or of the input gradient (the
weight gradient sums over the groups). A 1x1 stride-1 convolution over planes of ``BATCHED_1X1_PLANE`` pixels or
more is one strided-batched GEMM, the weight times each image, read from and written into NCHW with no column
matrix (its input gradient too; the weight gradient still folds the batch into columns).
float16 inputs are computed in float32. Under autocast (``autocast.py``) every GEMM here takes bfloat16
operands, the column matrices written as bfloat16 by im2col itself.
"""
from collections import namedtuple

import cupy
import numpy as np

from ..epilogue import Epilogue
from .autocast import bfloat16_bits, rounds
from .gemm import autocast_matmul
from .source import launch
from .tf32 import convolution_math

ConvSaved = namedtuple("ConvSaved", "x w stride pads dilation groups")
ConvSaved.__doc__ = "What conv2d_backward needs: the input, the weight and the geometry."

ConvTransposeSaved = namedtuple("ConvTransposeSaved", "x w stride padding output_padding dilation groups")
ConvTransposeSaved.__doc__ = "What conv_transpose2d_backward needs: the input, the weight and the geometry."

_ACTIVATION_CODES = {None: 0, "relu": 1, "hardswish": 2, "silu": 4, "hardsigmoid": 5, "gelu": 6}  # 3: clip

#: The most bytes a column matrix (im2col's, or the input gradient's columns) may take before the batch is cut
#: into groups of images, one GEMM each. Whole-batch columns are most of a graph's memory at large batches
#: (resnet50 at batch 64: 472 MB for the stem's, 462 MB in layer1, against 205 MB for its largest
#: activation); at this size every GEMM of resnet50 still has over 3500 columns (not yet timed on a GPU).
COLUMN_BYTES = 64 << 20

#: The smallest output plane (pixels per image) at which a 1x1 stride-1 convolution multiplies each image in place
#: (one strided-batched GEMM, no transposed copy of the input or the output) instead of folding the batch into one
#: GEMM's columns. Smaller planes fold: a GEMM 49 columns wide (resnet50's last stage) would leave most of each of
#: cuBLAS's 128-column tiles empty. At 256, resnet50's first two stages (3136 and 784 pixels) multiply in place,
#: its 196- and 49-pixel stages fold. Not yet timed on a GPU.
BATCHED_1X1_PLANE = 256


def _pair(v):
    return (int(v), int(v)) if np.isscalar(v) else (int(v[0]), int(v[1]))


def _out_size(size, k, stride, dilation):
    return (size - dilation * (k - 1) - 1) // stride + 1


def _computable(a, dtype=None):
    """A C-contiguous array of ``dtype`` (default: a's), float16 raised to float32."""
    a = a.astype(dtype or a.dtype, copy=False)
    return cupy.ascontiguousarray(a.astype(cupy.float32) if a.dtype == cupy.float16 else a)


def _geometry(x_shape, w_shape, stride, pad_top_left, dilation, out_hw):
    """The kernels' geometry arguments (N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW)."""
    return (*x_shape, *w_shape[2:], *stride, *pad_top_left, *dilation, *out_hw)


def _is_depthwise(c, o, groups):
    return groups > 1 and groups == c and o % c == 0


def _plain_1x1(geo):
    """Whether the column matrix is the input itself, transposed (1x1, stride 1, no padding)."""
    N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW = geo
    return KH == KW == SH == SW == 1 and PT == PL == 0 and (OH, OW) == (H, W)


def _in_place_1x1(geo, groups):
    """Whether the convolution is the weight times each image as it lies (see ``BATCHED_1X1_PLANE``)."""
    return groups == 1 and _plain_1x1(geo) and geo[2] * geo[3] >= BATCHED_1X1_PLANE


def _times_each_image(a, x):
    """a (R, K) times each image of x (N, K, *plane): (N, R, *plane), one strided-batched GEMM (under autocast in
    bfloat16)."""
    n, k = x.shape[:2]
    plane = x.shape[2:]
    with convolution_math():
        y = autocast_matmul(a, x.reshape(n, k, int(np.prod(plane))))
    return y.reshape((n, a.shape[0]) + plane)


def _to_cols(a):
    """(N, K, *plane) -> (K, N * plane): the batch folded into the columns (no copy for one image)."""
    n, k = a.shape[:2]
    plane = int(np.prod(a.shape[2:]))  # spelled out: -1 cannot stand for it in an empty batch
    if n == 1:
        return a.reshape(k, plane)
    return cupy.ascontiguousarray(a.reshape(n, k, plane).transpose(1, 0, 2)).reshape(k, n * plane)


def _image_groups(n, column_bytes_per_image):
    """(start, stop) of consecutive groups of the batch's n images whose columns fit in ``COLUMN_BYTES``
    (one image at least)."""
    per_group = max(1, COLUMN_BYTES // max(column_bytes_per_image, 1))
    return [(start, min(n, start + per_group)) for start in range(0, n, per_group)] or [(0, 0)]


def _im2col(x, geo):
    """The column matrix of x; under autocast, bfloat16 bits written in the same pass."""
    N, C, H, W, KH, KW, SH, SW, PT, PL, DH, DW, OH, OW = geo
    rounded = rounds(x)
    if _plain_1x1(geo) and not rounded:
        return _to_cols(x)
    col = cupy.empty((C * KH * KW, N * OH * OW), np.uint16 if rounded else x.dtype)
    launch("conv", "im2col_bfloat16" if rounded else "im2col", x.dtype, col.size, x, col, *geo)
    return col


def _col2im(col, geo, out=None):
    """The input-shaped sums of the column matrix ``col``, into ``out`` where given."""
    N, C, H, W = geo[:4]
    if _plain_1x1(geo):
        return _from_cols(col, N, C, H, W, out=out)
    x = cupy.empty((N, C, H, W), col.dtype) if out is None else out
    launch("conv", "col2im", col.dtype, x.size, col, x, *geo)
    return x


def _output(y, out, n, channels, cols_layout, epilogue):
    """``out`` (N, O, ...) = the epilogue applied to y, read in the GEMM's (O, N*L) layout or as NCHW."""
    scale, shift, residual, activation = epilogue
    dtype = out.dtype
    placeholder = cupy.empty(1, dtype)
    code = _ACTIVATION_CODES[activation] if activation is None or isinstance(activation, str) else 3
    lo, hi = (activation[1], activation[2]) if code == 3 else (0.0, 0.0)
    flags = (scale is not None) | (shift is not None) << 1 | (residual is not None) << 2
    launch("conv", "conv_output", dtype, out.size, y, out,
           placeholder if scale is None else cupy.ascontiguousarray(scale.astype(dtype, copy=False)),
           placeholder if shift is None else cupy.ascontiguousarray(shift.astype(dtype, copy=False)),
           placeholder if residual is None else _computable(residual, dtype),
           n, channels, out.size // max(n * channels, 1), int(cols_layout), int(flags), code,
           dtype.type(lo), dtype.type(hi))
    return out


def _from_cols(y, n, channels, h, w, epilogue=None, out=None):
    """A GEMM result (O, N*H*W) as an NCHW array (fresh, or ``out``), with the epilogue applied on the way."""
    if out is None and n == 1 and (epilogue is None or epilogue.is_empty()):
        return y.reshape(1, channels, h, w)
    if out is None:
        out = cupy.empty((n, channels, h, w), y.dtype)
    return _output(y, out, n, channels, True, epilogue or Epilogue())


def _grouped_matmul(a, b, groups, out_rows, a_t=False, b_t=False):
    """Row-stacked products of group g's row block of ``a`` with group g's row block of ``b`` (either
    transposed, as a view: cuBLAS reads transposed operands in place). Under autocast, both are rounded to
    bfloat16 once for all groups and the products are float32."""
    rounded = rounds(a, b)
    if rounded:
        a, b = bfloat16_bits(a), bfloat16_bits(b)
    a_rows, b_rows = a.shape[0] // groups, b.shape[0] // groups
    cols = b_rows if b_t else b.shape[1]
    out = cupy.empty((out_rows * groups, cols), np.float32 if rounded else a.dtype)
    with convolution_math():
        for g in range(groups):
            ga, gb = a[g * a_rows:(g + 1) * a_rows], b[g * b_rows:(g + 1) * b_rows]
            autocast_matmul(ga.T if a_t else ga, gb.T if b_t else gb, out=out[g * out_rows:(g + 1) * out_rows])
    return out


def _corr(x, w, stride, pads, dilation, groups, epilogue):
    """Cross-correlation of contiguous x (N,C,H,W) with w (O,C/groups,KH,KW), epilogue applied."""
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    OH = _out_size(H + pads[0] + pads[1], KH, stride[0], dilation[0])
    OW = _out_size(W + pads[2] + pads[3], KW, stride[1], dilation[1])
    geo = _geometry(x.shape, w.shape, stride, (pads[0], pads[2]), dilation, (OH, OW))
    if _is_depthwise(C, O, groups):
        y = cupy.empty((N, O, OH, OW), x.dtype)
        launch("conv", "depthwise_forward", x.dtype, y.size, x, w, y, N, C, H, W, O // C, *geo[4:])
        return _epilogue_in_place(y, epilogue)
    if _in_place_1x1(geo, groups):
        return _epilogue_in_place(_times_each_image(w.reshape(O, C), x), epilogue)
    groups_of_images = _image_groups(N, w[0].size * groups * OH * OW * x.itemsize)
    out = cupy.empty((N, O, OH, OW), x.dtype) if len(groups_of_images) > 1 else None
    for start, stop in groups_of_images:  # each column matrix freed after its GEMM
        y = _grouped_matmul(w.reshape(O, -1), _im2col(x[start:stop], (stop - start,) + geo[1:]), groups, O // groups)
        if out is None:  # the whole batch at once
            return _from_cols(y, N, O, OH, OW, epilogue)
        _from_cols(y, stop - start, O, OH, OW, _images_of(epilogue, start, stop), out=out[start:stop])
        del y  # before the next group's is made
    return out


def _epilogue_in_place(y, epilogue):
    """y (N, O, ...), written as NCHW by a kernel or GEMM of its own, with the epilogue applied where it lies."""
    if epilogue is not None and not epilogue.is_empty():
        _output(y, y, y.shape[0], y.shape[1], False, epilogue)
    return y


def _images_of(epilogue, start, stop):
    """The epilogue of images start:stop of the batch (its residual's rows)."""
    if epilogue is None or epilogue.residual is None:
        return epilogue
    return epilogue._replace(residual=epilogue.residual[start:stop])


def conv2d_forward(x, w, b, stride, padding, dilation, groups, weight_grad=True, epilogue=None):
    """conv2d of x (N,C,H,W) with w (O,C/groups,KH,KW) and optional bias b (O,); padding is (top,
    bottom, left, right). The bias joins the ``epilogue`` (an Epilogue, applied to the output) in the
    output pass. Returns (y, ConvSaved). ``weight_grad`` is the CPU kernel's memory hint (the GPU
    always rebuilds the column matrix in the backward)."""
    stride, dilation = _pair(stride), _pair(dilation)
    xc, wc = _computable(x), _computable(w, x.dtype)
    if b is not None:
        b = b.astype(xc.dtype, copy=False)
        epilogue = Epilogue(shift=b) if epilogue is None else epilogue.with_bias(b)
    y = _corr(xc, wc, stride, tuple(padding), dilation, groups, epilogue)
    return y.astype(x.dtype, copy=False), ConvSaved(x, w, stride, tuple(padding), dilation, groups)


def conv2d_backward(gy, saved, needs_x=True, needs_w=True, needs_b=True):
    """Gradients (gx, gw, gb) of conv2d from the output gradient gy; entries not needed are None."""
    s = saved
    x, w = _computable(s.x), _computable(s.w, s.x.dtype)
    g = _computable(gy, s.x.dtype)
    N, C, H, W = x.shape
    O, _, KH, KW = w.shape
    OH, OW = g.shape[2:]
    geo = _geometry(x.shape, w.shape, s.stride, (s.pads[0], s.pads[2]), s.dilation, (OH, OW))
    gx = gw = gb = None
    if _is_depthwise(C, O, s.groups):
        if needs_x:
            gx = cupy.empty(x.shape, x.dtype)
            launch("conv", "depthwise_backward_input", x.dtype, gx.size, g, w, gx, N, C, H, W, O // C, *geo[4:])
        if needs_w:
            partial = cupy.empty((O * KH * KW, N * OH), x.dtype)
            launch("conv", "depthwise_weight_partials", x.dtype, partial.size, g, x, partial, N, C, H, W, O // C,
                   *geo[4:])
            gw = partial.sum(axis=1).reshape(w.shape)
    else:
        k = w[0].size
        cols_x = needs_x  # the input gradient through columns and col2im
        if needs_x and _in_place_1x1(geo, s.groups):
            gx = _times_each_image(w.reshape(O, C).T, g)
            cols_x = False
        groups_of_images = _image_groups(N, k * s.groups * OH * OW * x.itemsize)
        if cols_x and len(groups_of_images) > 1:
            gx = cupy.empty(x.shape, x.dtype)
        for start, stop in groups_of_images if needs_w or cols_x else ():
            part = (stop - start,) + geo[1:]
            g_cols = _to_cols(g[start:stop])
            if rounds(g_cols):
                g_cols = bfloat16_bits(g_cols)  # once for both GEMMs
            if needs_w:
                part_gw = _grouped_matmul(g_cols, _im2col(x[start:stop], part), s.groups, O // s.groups, b_t=True)
                gw = part_gw if gw is None else gw + part_gw
            if cols_x:
                dcol = _grouped_matmul(w.reshape(O, k), g_cols, s.groups, k, a_t=True)
                if len(groups_of_images) == 1:
                    gx = _col2im(dcol, part)
                else:
                    _col2im(dcol, part, out=gx[start:stop])
                del dcol  # before the next group's is made
            del g_cols
        if needs_w:
            gw = gw.reshape(w.shape)
    if needs_b:
        gb = g.sum(axis=(0, 2, 3))
    return tuple(None if a is None else a.astype(s.x.dtype, copy=False) for a in (gx, gw, gb))


def conv_transpose2d_forward(x, w, b, stride, padding, output_padding, dilation, groups):
    """conv_transpose2d of x (N,C_in,H,W) with torch's weight layout w (C_in,C_out/groups,KH,KW): the
    input gradient of the convolution it transposes (one GEMM, then col2im; in groups of images past
    ``COLUMN_BYTES``). Returns (y, saved)."""
    stride, padding, output_padding, dilation = map(_pair, (stride, padding, output_padding, dilation))
    xc, wc = _computable(x), _computable(w, x.dtype)
    N, c_in, H, W = xc.shape
    c_out = wc.shape[1] * groups
    out_hw = tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1 for n, s, p, d, k, op in
                   zip((H, W), stride, padding, dilation, wc.shape[2:], output_padding))
    geo = _geometry((N, c_out) + out_hw, wc.shape, stride, padding, dilation, (H, W))
    k = wc[0].size
    groups_of_images = _image_groups(N, k * groups * H * W * xc.itemsize)
    y = cupy.empty((N, c_out) + out_hw, xc.dtype) if len(groups_of_images) > 1 else None
    for start, stop in groups_of_images:  # each column matrix freed after its col2im
        dcol = _grouped_matmul(wc.reshape(c_in, k), _to_cols(xc[start:stop]), groups, k, a_t=True)
        if y is None:  # the whole batch at once
            y = _col2im(dcol, geo)
        else:
            _col2im(dcol, (stop - start,) + geo[1:], out=y[start:stop])
        del dcol  # before the next group's is made
    if b is not None:
        y += b.astype(y.dtype, copy=False).reshape(-1, 1, 1)
    return y.astype(x.dtype, copy=False), ConvTransposeSaved(x, w, stride, padding, output_padding, dilation, groups)


def conv_transpose2d_backward(gy, saved, needs_x=True, needs_w=True, needs_b=True):
    """Gradients (gx, gw, gb) of conv_transpose2d: gx is the convolution of gy with w, gw the product
    of x with gy's column matrix (both in groups of images past ``COLUMN_BYTES``)."""
    s = saved
    x, w = _computable(s.x), _computable(s.w, s.x.dtype)
    g = _computable(gy, s.x.dtype)
    N, c_in, H, W = x.shape
    geo = _geometry(g.shape, w.shape, s.stride, s.padding, s.dilation, (H, W))
    gx = gw = gb = None
    k = w[0].size
    groups_of_images = _image_groups(N, k * s.groups * H * W * x.itemsize)
    if needs_x and len(groups_of_images) > 1:
        gx = cupy.empty(x.shape, x.dtype)
    for start, stop in groups_of_images if needs_x or needs_w else ():
        col = _im2col(g[start:stop], (stop - start,) + geo[1:])
        if needs_x:
            part_gx = _grouped_matmul(w.reshape(c_in, k), col, s.groups, c_in // s.groups)
            if len(groups_of_images) == 1:
                gx = _from_cols(part_gx, N, c_in, H, W)
            else:
                _from_cols(part_gx, stop - start, c_in, H, W, out=gx[start:stop])
            del part_gx
        if needs_w:
            part_gw = _grouped_matmul(_to_cols(x[start:stop]), col, s.groups, c_in // s.groups, b_t=True)
            gw = part_gw if gw is None else gw + part_gw
        del col  # before the next group's is made
    if needs_w:
        gw = gw.reshape(w.shape)
    if needs_b:
        gb = g.sum(axis=(0, 2, 3))
    return tuple(None if a is None else a.astype(s.x.dtype, copy=False) for a in (gx, gw, gb))
