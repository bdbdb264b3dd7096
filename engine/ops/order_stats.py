"""Order statistics along a dim: mode and nanmedian (``median`` lives in ``reduction``).

Both pick one element per slice with ``reduction``'s ``Select`` (values and int64 indices; the
gradient goes to the picked element).
"""
import numpy as np

from .reduction import Select, _check_nonempty, _one_axis, return_type
from .scan import inclusive_scan
from ..tensor import register_method
from .shape import flatten
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
    refuse_complex("mode", input)
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), "mode")
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


def nanmedian(input, dim=None, keepdim=False):
    """The lower median ignoring NaN: of all elements (a 0-d tensor) or along ``dim`` with indices."""
    if dim is None:
        values, _ = NanMedianDim(0, True)(flatten(input))
        return values
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), "nanmedian")
    values, indices = NanMedianDim(axis, not keepdim)(input)
    return return_type("nanmedian")(values, indices)


register_method(mode)
register_method(nanmedian)

__all__ = ["mode", "nanmedian"]
