"""``gradient``: a function's derivative estimated from its samples by second-order central differences inside and
first- or second-order one-sided differences at the edges, as torch's (numpy.gradient's formulas); made of engine
ops, so it is differentiable."""
import numbers

from .. import _dtype
from .shape import cat
from ..tensor import Tensor


def _part(t, dim, start, stop=None):
    """``t[..., start:stop, ...]`` along ``dim`` (Python slice bounds, negatives from the end)."""
    size = t.shape[dim]
    begin = start + size if start < 0 else start
    end = size if stop is None else (stop + size if stop < 0 else stop)
    return t.narrow(dim, begin, end - begin)


def _uniform(t, dim, h, edge_order):
    """Samples ``h`` apart: central differences over 2h, edges of order ``edge_order``."""
    center = (_part(t, dim, 2) - _part(t, dim, 0, -2)) / h
    if edge_order == 1:
        first = (_part(t, dim, 1, 2) - _part(t, dim, 0, 1)) / h
        last = (_part(t, dim, -1) - _part(t, dim, -2, -1)) / h
    else:
        first = (_part(t, dim, 0, 1) * -1.5 + _part(t, dim, 1, 2) * 2 - _part(t, dim, 2, 3) * 0.5) / h
        last = (_part(t, dim, -3, -2) * 0.5 + _part(t, dim, -2, -1) * -2 + _part(t, dim, -1) * 1.5) / h
    return cat([first, center / 2, last], dim)


def _coordinates(t, dim, x, edge_order):
    """Samples at the 1-d ``x`` coordinates: the three-point formulas for uneven spacing."""
    shape = [1] * t.dim()
    shape[dim] = -1
    dx = x[1:] - x[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _part(t, dim, 0, -2) + b * _part(t, dim, 1, -1) + c * _part(t, dim, 2)
    if edge_order == 1:
        first = (_part(t, dim, 1, 2) - _part(t, dim, 0, 1)) / dx[0]
        last = (_part(t, dim, -1) - _part(t, dim, -2, -1)) / dx[-1]
    else:
        h0, h1 = dx[0], dx[1]
        first = (-(2.0 * h0 + h1) / (h0 * (h0 + h1)) * _part(t, dim, 0, 1) + (h0 + h1) / (h0 * h1) * _part(t, dim, 1, 2)
                 + (-h0) / (h1 * (h0 + h1)) * _part(t, dim, 2, 3))
        h0, h1 = dx[-1], dx[-2]
        last = (h0 / (h1 * (h0 + h1)) * _part(t, dim, -3, -2) - (h0 + h1) / (h0 * h1) * _part(t, dim, -2, -1)
                + (2 * h0 + h1) / (h0 * (h0 + h1)) * _part(t, dim, -1))
    return cat([first, center, last], dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """The estimated partial derivatives of ``input`` along ``dim`` (an int, a list, or every dimension), one
    tensor each: ``spacing`` is one sample distance for all, one per dimension, or each dimension's 1-d
    coordinates (tensors)."""
    if input.dtype is _dtype.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.dim())) if dim is None else [dim] if isinstance(dim, numbers.Integral) else list(dim)
    dims = [d + input.dim() if d < 0 else d for d in dims]
    spacings = [spacing] * len(dims) if isinstance(spacing, numbers.Number) else list(spacing)
    if len(spacings) != len(dims):
        if dim is None:
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                               f"to 'self.dim() = {input.dim()}', since dim argument was not given, but got a list of "
                               f"length {len(spacings)}")
        raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {len(spacings)} "
                           f"and a dim argument of length {len(dims)}.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    results = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.dim() == 1:
            if h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be the same size as the input along its "
                                   f"dimension, but got coordinates of size {h.shape[0]} for dimension {d} of size "
                                   f"{input.shape[d]}")
            results.append(_coordinates(input, d, h, edge_order))
        else:
            results.append(_uniform(input, d, h.item() if isinstance(h, Tensor) else h, edge_order))
    return tuple(results)


__all__ = ["gradient"]
