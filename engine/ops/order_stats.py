"""Order statistics along a dim: mode and nanmedian (``median`` lives in ``reduction``).

Both pick one element per slice with ``reduction``'s ``Select`` (values and int64 indices; the
gradient goes to the picked element).
"""
import numpy as np

from ._common import xp_of
from .reduction import MedianAll, Select, _check_nonempty, _one_axis, median, refuse_bool, return_type
from .scan import inclusive_scan
from ..tensor import register_method
from .complex_refusals import refuse_complex


def _positions(xp, shape, axis):
    """0, 1, ... along ``axis`` broadcast against an array of ``shape``."""
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return xp.arange(shape[axis]).reshape(view)


class ModeDim(Select):
    """The most frequent value of each slice (the smallest among equally frequent ones) at its last
    position, as PyTorch picks on the CPU: runs of equal values in sorted order, the first longest."""

    def indices(self, xp, x):
        order = xp.argsort(x, axis=self.axis, kind="stable")
        ordered = xp.take_along_axis(x, order, self.axis)
        lead = (slice(None),) * self.axis
        changes = ordered[lead + (slice(1, None),)] != ordered[lead + (slice(None, -1),)]
        edge = xp.ones_like(ordered[lead + (slice(0, 1),)], bool)
        starts = xp.concatenate([edge, changes], axis=self.axis)
        ends = xp.concatenate([changes, edge], axis=self.axis)
        positions = _positions(xp, x.shape, self.axis)
        run_start = inclusive_scan(xp, xp.maximum, xp.where(starts, positions, 0), self.axis)
        length_at_end = xp.where(ends, positions - run_start + 1, -1)
        best_end = xp.expand_dims(xp.argmax(length_at_end, axis=self.axis), self.axis)
        return xp.take_along_axis(order, best_end, self.axis)


def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` and where it last occurs: ``(values, indices)``."""
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), "mode")
    if input.ndim and input.numel():  # torch's kernel, which refuses complex input, runs on elements along a dim
        refuse_complex("mode", input)
    values, indices = ModeDim(axis, not keepdim)(input)
    return return_type("mode")(values, indices)


class NanMedianDim(Select):
    """The lower median of each slice's non-NaN values (NaN when all are NaN)."""

    def indices(self, xp, x):
        order = xp.argsort(x, axis=self.axis, kind="stable")
        valid = (~xp.isnan(x)).sum(axis=self.axis, keepdims=True) if x.dtype.kind == "f" else x.shape[self.axis]
        middle = xp.maximum(valid - 1, 0) // 2
        middle = xp.broadcast_to(xp.asarray(middle), order.shape[:self.axis] + (1,) + order.shape[self.axis + 1:])
        return xp.take_along_axis(order, middle.astype(np.int64), self.axis)


class NanMedianAll(MedianAll):
    """The lower median of all non-NaN elements (NaN when all are NaN); ties, and NaN inputs when all are NaN,
    share the gradient, as torch's."""

    def forward(self, x):
        xp = xp_of(x)
        self.x = x
        flat = x.reshape(-1)
        if x.dtype.kind == "f":
            flat = flat[~xp.isnan(flat)]
        if flat.size == 0:
            self.y = xp.asarray(np.nan, x.dtype)
        else:
            k = (flat.size - 1) // 2
            self.y = xp.partition(flat, k)[k].reshape(())
        return self.y


def nanmedian(input, dim=None, keepdim=False):
    """The lower median ignoring NaN: of all elements (a 0-d tensor; NaN when empty, as ``median``) or along
    ``dim`` with indices. torch's errors name ``median``."""
    if dim is None:
        if input.numel() == 0:
            return median(input)
        refuse_bool(input, "median_cpu")
        _refuse_complex(input, "median_cpu")
        return NanMedianAll()(input)
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), "median")
    refuse_bool(input, "median_out")
    _refuse_complex(input, "median_out")
    values, indices = NanMedianDim(axis, not keepdim)(input)
    return return_type("nanmedian")(values, indices)


def _refuse_complex(input, kernel):
    """torch's NotImplementedError for a complex input's nanmedian (its kernels are ``median``'s)."""
    if input.dtype.is_complex:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.title}'")


register_method(mode)
register_method(nanmedian)

__all__ = ["mode", "nanmedian"]
