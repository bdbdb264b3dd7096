"""``histogram`` and ``histogramdd``: counts (or summed weights) of values in bins given by their count over a range
or by their edges, with the edges returned, as torch's (not differentiable: the counts are piecewise constant)."""
import numpy as np

from .. import _dtype
from .linalg_out import write_result
from .ranges import linspace
from .reduction import return_type
from ..tensor import Tensor, _new, register_method
from ._common import xp_of


#: the C++ names torch's histogram messages give dtypes
_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _cpp_name(dtype):
    return _CPP_NAMES.get(dtype.name, dtype.name)


def _outer_edges(points, dims, range, dtype):
    """[(leftmost, rightmost)] per dimension: ``range``'s pairs or the data's extremes ([0, 1] without data),
    widened by 0.5 each way where they coincide; both must be finite with leftmost <= rightmost."""
    if range is not None and len(range) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have {2 * dims} "
                           f"elements, but got {len(range)}")
    xp = xp_of(points)
    edges = []
    for d, column in enumerate(points.T):
        if range is not None:
            low, high = float(range[2 * d]), float(range[2 * d + 1])
        elif column.size:
            if dtype not in (_dtype.float32, _dtype.float64):  # torch's data range (aminmax): these floats only
                raise NotImplementedError(f"\"histogramdd\" not implemented for '{dtype.title}'")
            low, high = float(xp.min(column)), float(xp.max(column))
        else:
            low, high = 0.0, 1.0  # no data: numpy's and torch's unit range
        if not (np.isfinite(low) and np.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{low:g}, {high:g}] is not finite")
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} for "
                               f"dimension {d}")
        edges.append((low - 0.5, high + 0.5) if low == high else (low, high))
    return edges


def _bin_edges(input, points, bins, range):
    """One 1-d edge tensor per dimension of the points (``bins``: an int, one int per dimension, or edge
    tensors), checked in torch's order."""
    dims = points.shape[1]
    if isinstance(bins, Tensor) or isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        given = [bins] if isinstance(bins, Tensor) else list(bins)
        if len(given) != dims:
            raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for a {dims}-dimensional "
                               f"histogram but got {len(given)}")
        for d, edges in enumerate(given):
            if edges.dtype is not input.dtype:
                raise RuntimeError("torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                                   f"got input with dtype {_cpp_name(input.dtype)} and bins for dimension {d} with "
                                   f"dtype {_cpp_name(edges.dtype)}")
            if edges.dim() != 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{edges.dim()} dimensions in the bins tensor for dimension {d}")
            if edges.numel() == 0:
                raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                                   f"in the bins tensor for dimension {d}")
        return [edges.detach().clone() for edges in given]
    counts = [int(bins)] * dims if isinstance(bins, (int, np.integer)) else [int(b) for b in bins]
    if len(counts) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    for d, count in enumerate(counts):
        if count <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for dimension {d}")
    outer = _outer_edges(points, dims, range, input.dtype)
    if input.dtype is _dtype.bool_:  # torch spaces the edges with linspace, which has no bool kernel
        raise NotImplementedError(f"\"linspace_{input.device.type}\" not implemented for 'Bool'")
    return [linspace(low, high, count + 1, dtype=input.dtype, device=input.device)
            for (low, high), count in zip(outer, counts)]


def _counts(points, weight, edges, density):
    """The histogram array of ``points`` (n, D) over the edge arrays: a point on a bin's left edge counts in that
    bin, on the last edge in the last bin; points outside any dimension's edges are left out."""
    xp = xp_of(points)
    shape = tuple(e.shape[0] - 1 for e in edges)
    inside = xp.ones(points.shape[0], bool)
    flat = xp.zeros(points.shape[0], np.int64)
    for d, e in enumerate(edges):
        column = points[:, d]
        inside &= (column >= e[0]) & (column <= e[-1])
        position = xp.clip(xp.searchsorted(e, column, side="right") - 1, 0, max(shape[d] - 1, 0))
        flat = flat * shape[d] + position
    total = int(np.prod(shape))
    if weight is None:
        hist = xp.bincount(flat[inside], minlength=total).astype(points.dtype)
    else:
        hist = xp.bincount(flat[inside], weights=weight[inside].astype(np.float64), minlength=total)
        hist = hist.astype(points.dtype)
    hist = hist[:total].reshape(shape)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            widths = (e[1:] - e[:-1]).reshape((-1,) + (1,) * (len(edges) - d - 1))
            hist = hist / widths
    return hist


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """The D-dimensional histogram of ``input``'s points (its last dimension, D, holds each point's coordinates):
    (hist, bin_edges), ``bin_edges`` one edge tensor per dimension; ``weight`` (input's shape less its last
    dimension) sums weights instead of counting; ``density`` divides by the total and each bin's volume. Only
    floating inputs are counted; torch's checks of the other arguments come first."""
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    points = input._data.reshape(-1, input.shape[-1])
    edges = _bin_edges(input, points, bins, range)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               "the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        if weight.dtype is not input.dtype:
            raise RuntimeError("torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({_cpp_name(input.dtype)}), and "
                               f"weight({_cpp_name(weight.dtype)})")
    for d, e in enumerate(edges):
        if e.numel() == 1:  # one edge, no bin
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got 0 for dimension {d}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_{input.device.type}\" not implemented for '{input.dtype.title}'")
    hist = _counts(points, None if weight is None else weight._data.reshape(-1), [e._data for e in edges], density)
    return return_type("histogramdd", ("hist", "bin_edges"))(_new(hist), tuple(edges))


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """The histogram of all of ``input``'s values: (hist, bin_edges); ``bins`` is a count of equal bins over
    ``range`` (default: the values' extremes) or a 1-d tensor of increasing edges (which torch takes without a
    range). ``out``: a (hist, bin_edges) pair of tensors of ``input``'s dtype, resized and written."""
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram() received an invalid combination of arguments - got (Tensor, Tensor, "
                        f"range={type(range).__name__}), but expected one of:")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           f"input tensor excluding its innermost dimension, but got input with shape "
                           f"{[input.numel(), 1]} and weight with shape {list(weight.shape)}")
    result = histogramdd(input.reshape(-1, 1), [bins] if isinstance(bins, Tensor) else bins, range=range,
                         weight=None if weight is None else weight.reshape(-1), density=density)
    result = return_type("histogram", ("hist", "bin_edges"))(result.hist, result.bin_edges[0])
    if isinstance(out, (tuple, list)):  # write_result refuses any other out
        for name, target in zip(("hist", "bin_edges"), out):
            if target.dtype is not input.dtype:
                raise RuntimeError(f"torch.histogram: input tensor and {name} tensor should have the same dtype, but "
                                   f"got input {_cpp_name(input.dtype)} and {name} {_cpp_name(target.dtype)}")
    return write_result(result, out, exact=True, name="histogram")


register_method(histogram)

__all__ = ["histogram", "histogramdd"]
