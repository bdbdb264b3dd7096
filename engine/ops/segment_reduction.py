"""``segment_reduce``: a reduction over consecutive runs (segments) of a tensor's first dimension, the runs given by
their lengths or offsets, as torch's. Each segment is a slice reduced by engine ops, so the result is differentiable
in ``data``; tied maxima (minima) share their gradient equally (torch's CPU kernel does so for the first
column of a 2-d input but gives each tie the whole gradient in later columns; the engine shares in every column)."""
import math

import numpy as np

from .shape import stack

REDUCTIONS = {"max": "amax", "min": "amin", "amax": "amax", "amin": "amin", "sum": "sum", "mean": "mean",
              "prod": "prod"}
EMPTY = {"amax": -math.inf, "amin": math.inf, "sum": 0.0, "mean": math.nan, "prod": 1.0}  # an empty segment's value


def _reduced(part, kind, initial):
    """One nonempty segment (its rows in dimension 0) reduced, ``initial`` folded in as torch folds it."""
    if kind == "mean":
        total = part.sum(0) if initial is None else part.sum(0) + initial
        return total / part.shape[0]
    result = getattr(part, kind)(0)
    if initial is None:
        return result
    if kind == "sum":
        return result + initial
    if kind == "prod":
        return result * initial
    bound = result.new_full(tuple(result.shape), initial)
    return result.maximum(bound) if kind == "amax" else result.minimum(bound)


def segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """``reduce`` ("sum", "mean", "max", "min", "prod"; "amax"/"amin" too) of each segment of ``data`` along
    dimension 0: segment i holds ``lengths[i]`` rows (or rows ``offsets[i]`` to ``offsets[i + 1]``). An empty
    segment gives ``initial``, else 0 for sum, 1 for prod, NaN for mean, -inf/inf for max/min. 1-d lengths and
    offsets only (torch's N-d lengths, reducing a later axis, are not supported)."""
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not data.dtype.is_floating_point:
        raise NotImplementedError(f"\"_segment_reduce_{data.device.type}\" not implemented for '{data.dtype.title}'")
    given = lengths if lengths is not None else offsets
    axis = axis + data.dim() if axis < 0 else axis
    if axis != given.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if given.dim() != 1:
        raise NotImplementedError("segment_reduce: lengths or offsets of more than one dimension (reducing axis "
                                  f"{axis}) are not supported; got {given.dim()} dimensions")
    bounds = np.asarray(given.cpu().numpy(), np.int64)
    if lengths is not None:
        if not unsafe and (bounds < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if not unsafe and bounds.sum() != data.shape[0]:
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
        bounds = np.concatenate([[0], np.cumsum(bounds)])
    kind = REDUCTIONS[reduce]
    results = []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if stop > start:
            results.append(_reduced(data.narrow(0, start, stop - start), kind, initial))
        else:
            results.append(data.new_full(tuple(data.shape[1:]), EMPTY[kind] if initial is None else initial))
    if not results:
        return data.new_empty((0,) + tuple(data.shape[1:]))
    return stack(results)


__all__ = ["segment_reduce"]
