"""Converters of the pools: max and average pools, adaptive pools and interpolate's 'area' mode (an adaptive
average pool to the output size).

ONNX has no adaptive pooling: where the output divides the input the windows are fixed; otherwise an average is
one constant averaging matrix per axis, and a maximum is taken per axis (a maximum over a rectangle is the maximum
over its rows of the maxima over its columns), one slice per output row and column. ``divisor_override`` sums
each window with a grouped convolution of ones, then divides. Max pools' indices are MaxPool's (taken modulo
the plane size); adaptive max pools give them where the output divides the input, as torch's exporter.
"""
import numpy as np

from ..nn.functional.pooling import _Pool
from .table import converts


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


@converts(_Pool)
def pool(ctx):
    """Max/average pools (1-D through a unit height, as the engine runs them) and adaptive pools. The indices of
    max pools are ONNX MaxPool's, which count over the whole (N, C, H, W) input: modulo H * W they are torch's
    flat indices into each plane."""
    x = ctx.input(0)
    one_d = ctx.state["nd"] == 1
    if one_d:
        x = ctx.unsqueeze(x, [2])
    kind = ctx.state["kind"]
    args = ctx.state["args"]
    indices = None
    with_indices = ctx.state["with_indices"] and ctx.used(1)
    if kind in ("max_pool2d", "max_pool2d_values"):
        y = _max_pool(ctx, x, *args, with_indices=with_indices)
    elif kind == "avg_pool2d":
        y = _avg_pool(ctx, x, *args)
    else:
        spatial = ctx.in_shape(0)[-2:] if not one_d else (1,) + ctx.in_shape(0)[-1:]
        out = [n if o is None else o for n, o in zip(spatial, args[0])]
        if with_indices:
            y = _adaptive_max_with_indices(ctx, x, spatial, out)
        else:
            y = adaptive_pool(ctx, x, kind == "adaptive_max_pool2d", spatial, out)
    if with_indices:
        y, indices = y
        indices = ctx.g.node("Mod", [indices, _plane_size(ctx, x)])
    if one_d:
        y, indices = ctx.squeeze(y, [2]), indices if indices is None else ctx.squeeze(indices, [2])
    return (y, indices) if ctx.state["with_indices"] else y


def _plane_size(ctx, x):
    """H * W of the 4-D input ``x`` (int64 [1]; computed at run time when they follow the input)."""
    if not {a for a in ctx.dynamic(0) if a >= 2}:
        return ctx.g.ints([int(np.prod(ctx.in_shape(0)[2:]))])
    return ctx.reduce("ReduceProd", ctx.shape_of(x, 2, 4), [0], True)


def _adaptive_max_with_indices(ctx, x, spatial, out):
    """adaptive_max_pool2d(return_indices=True) as a MaxPool with indices: possible where the output divides the
    input (fixed windows), as in torch's exporter."""
    if {a for a in ctx.dynamic(0) if a >= 2}:
        ctx.fail(f"adaptive max pooling with return_indices to {tuple(out)} of an input whose height or width "
                 "follows the input size (export with a fixed image size)")
    if not all(n % o == 0 for n, o in zip(spatial, out)):
        ctx.fail(f"adaptive max pooling with return_indices from {tuple(spatial)} to {tuple(out)}, an output size "
                 "that does not divide the input size (ONNX has no adaptive pooling)")
    kernel = [n // o for n, o in zip(spatial, out)]
    return ctx.g.node("MaxPool", [x], outputs=2, kernel_shape=kernel, strides=kernel)


def _window(kernel, stride, padding):
    kernel = _pair(kernel)
    stride = kernel if stride is None else _pair(stride)
    padding = _pair(padding)
    return list(kernel), list(stride), [padding[0], padding[1], padding[0], padding[1]]


def _max_pool(ctx, x, kernel, stride, padding, dilation, ceil_mode, with_indices=False):
    kernel, stride, pads = _window(kernel, stride, padding)
    return ctx.g.node("MaxPool", [x], outputs=2 if with_indices else 1, kernel_shape=kernel, strides=stride,
                      pads=pads, dilations=list(_pair(dilation)), ceil_mode=int(bool(ceil_mode)))


def _avg_pool(ctx, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    kernel, stride, pads = _window(kernel, stride, padding)
    if divisor_override is not None:
        return _window_sums(ctx, x, kernel, stride, pads[:2], divisor_override)
    return ctx.g.node("AveragePool", [x], kernel_shape=kernel, strides=stride, pads=pads,
                      ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)))


def _window_sums(ctx, x, kernel, stride, padding, divisor):
    """avg_pool2d with ``divisor_override``: each window's sum (zero padding included) by a grouped ``Conv`` of ones,
    padded at the end as far as the recorded output reaches (ceil_mode's last windows), divided by the divisor."""
    if {1, 2, 3} & ctx.dynamic(0):
        ctx.fail("avg_pool2d with divisor_override of an input whose channels, height or width follow the input")
    channels = ctx.in_shape(0)[1]
    spatial = (1,) + ctx.in_shape(0)[-1:] if ctx.state["nd"] == 1 else ctx.in_shape(0)[-2:]
    out = (1,) + ctx.out_shape()[-1:] if ctx.state["nd"] == 1 else ctx.out_shape()[-2:]
    ends = [max((o - 1) * s + k - n - p, 0) for o, s, k, n, p in zip(out, stride, kernel, spatial, padding)]
    ones = ctx.g.constant(np.ones((channels, 1, *kernel), ctx.in_dtype(0)), hint="window_ones")
    sums = ctx.g.node("Conv", [x, ones], kernel_shape=kernel, strides=stride, pads=list(padding) + ends,
                      group=channels)
    return ctx.g.node("Div", [sums, ctx.scalar(float(divisor), ctx.in_dtype(0))])


def adaptive_pool(ctx, x, is_max, spatial, out):
    """Adaptive max or average pooling of 4-D ``x`` from ``spatial`` (its traced height and width) to ``out``."""
    if out == [1, 1]:
        return ctx.g.node("GlobalMaxPool" if is_max else "GlobalAveragePool", [x])
    if {a for a in ctx.dynamic(0) if a >= 2}:
        ctx.fail(f"adaptive pooling to {tuple(out)} of an input whose height or width follows the input size "
                 "(ONNX has no adaptive pooling; export with a fixed image size)")
    if all(n % o == 0 for n, o in zip(spatial, out)):
        kernel = [n // o for n, o in zip(spatial, out)]
        return ctx.g.node("MaxPool" if is_max else "AveragePool", [x], kernel_shape=kernel, strides=kernel)
    if is_max:
        for axis, n, o in ((3, spatial[1], out[1]), (2, spatial[0], out[0])):
            x = _window_maxima(ctx, x, axis, n, o)
        return x
    rows = ctx.g.constant(_averaging_matrix(spatial[0], out[0], ctx.in_dtype(0)))
    cols = ctx.g.constant(_averaging_matrix(spatial[1], out[1], ctx.in_dtype(0)).T.copy())
    return ctx.g.node("MatMul", [rows, ctx.g.node("MatMul", [x, cols])])


def _windows(n_in, n_out):
    """torch's adaptive windows along one axis: [floor(i n_in / n_out), ceil((i + 1) n_in / n_out)) for each i."""
    return [((i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)) for i in range(n_out)]


def _window_maxima(ctx, x, axis, n_in, n_out):
    """The maximum over each adaptive window along ``axis``: one Slice and ReduceMax per window, concatenated."""
    if n_in == n_out:
        return x
    maxima = [ctx.reduce("ReduceMax", ctx.g.node("Slice", [x, ctx.g.ints([start]), ctx.g.ints([stop]),
                                                          ctx.g.ints([axis])]), [axis], True)
              for start, stop in _windows(n_in, n_out)]
    return ctx.g.node("Concat", maxima, axis=axis)


def _averaging_matrix(n_in, n_out, dtype):
    """(n_out, n_in): row i averages the values of window i."""
    matrix = np.zeros((n_out, n_in), np.float64)
    for i, (start, stop) in enumerate(_windows(n_in, n_out)):
        matrix[i, start:stop] = 1.0 / (stop - start)
    return matrix.astype(dtype)
