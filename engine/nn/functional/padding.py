"""``pad``: constant, reflect, replicate and circular padding with PyTorch's argument order.

``pad`` lists (before, after) amounts from the last dim backwards. Non-constant modes map each
padded dim through an index map (output position -> input position) that splits into a few
contiguous runs (identity, mirrored, repeated edge, wrapped); forward copies the runs with slices
and backward adds each run's gradient back with slices, so nothing loops per element. The result is
laid out in the input's suggested memory format (channels-last stays channels-last), as torch's
(circular padding: row-major).
"""
import copy
import numbers

from ... import _layout
from ...amp import autocast_mode
from ...autograd.double_backward import transposed_backward
from ...autograd.function import Function
from ...ops._common import xp_of

_MODES = ("constant", "reflect", "replicate", "circular")


def _along(axis, ndim, index):
    """An indexing tuple that applies ``index`` to ``axis`` only."""
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _runs(n, before, after, mode):
    """The index map of one padded dim as runs (out_start, out_stop, in_start, step), step in {1, -1, 0}.

    Output position ``o`` reads input position ``in_start + step * (o - out_start)``.
    """
    lo, hi = -before, n + after  # output covers input positions [lo, hi)
    if mode == "circular":
        return _circular_runs(n, before, after, lo, hi)
    mid_start, right_start = max(lo, 0), max(lo, n)
    if mode == "reflect":
        left, right = (-lo, -1), (2 * (n - 1) - right_start, -1)
    else:  # replicate
        left, right = (0, 0), (n - 1, 0)
    pieces = ((lo, min(0, hi)) + left, (mid_start, min(n, hi), mid_start, 1), (right_start, hi) + right)
    return [(start - lo, stop - lo, src, step) for start, stop, src, step in pieces if start < stop]


def _circular_runs(n, before, after, lo, hi):
    """Circular padding wraps around the input after its negative pads crop it."""
    first, last = max(lo, 0), n - max(-after, 0)
    period = last - first
    runs = []
    p = lo
    while p < hi:
        start = first + (p - first) % period
        stop = min(hi, p + last - start)
        runs.append((p - lo, stop - lo, start, 1))
        p = stop
    return runs


def _source(start, step, length):
    """The input positions a run reads: a slice (reversed for step -1, one element for step 0)."""
    if step == 1:
        return slice(start, start + length)
    if step == -1:
        return slice(start, start - length if start - length >= 0 else None, -1)
    return slice(start, start + 1)


class Pad(Function):
    """Pads (or crops, for negative amounts) the trailing dims of a tensor."""

    uses_inputs = False

    def __init__(self, pairs, mode, value):
        self.pairs, self.mode, self.value = pairs, mode, value  # pairs: (axis, before, after)

    def forward(self, x):
        self.in_shape = x.shape
        if self.mode == "constant":
            return self._constant(x)
        for axis, before, after in self.pairs:
            x = self._pad_axis(x, axis, before, after)
        return x

    def backward(self, gy):
        if self.mode == "constant":
            return self._constant_backward(gy)
        for axis, before, after in reversed(self.pairs):
            gy = self._unpad_axis(gy, axis, before, after)
        return gy

    def backward_tensors(self, gy):
        """The backward is linear with the geometry as its data: its transpose is the padding itself, with a fill
        of 0 (the fill value is no part of the linear map)."""
        node = copy.copy(self)
        node.value = 0
        return transposed_backward(node, gy)

    def _regions(self):
        """Constant mode: matching (input, output) slices of the part of the input that survives."""
        ndim = len(self.in_shape)
        src, dst = [slice(None)] * ndim, [slice(None)] * ndim
        for axis, before, after in self.pairs:
            start = max(-before, 0)
            length = max(self.in_shape[axis] - start - max(-after, 0), 0)
            src[axis] = slice(start, start + length)
            dst[axis] = slice(max(before, 0), max(before, 0) + length)
        return tuple(src), tuple(dst)

    def _empty(self, shape, x):
        """The result's memory: in ``x``'s suggested format, but row-major for circular padding (torch builds that
        one from slices and ``cat``)."""
        if self.mode == "circular":
            return xp_of(x).empty(shape, x.dtype)
        return _layout.empty_in_suggested_format(shape, x, x.dtype, xp_of(x))

    def _constant(self, x):
        shape = list(x.shape)
        for axis, before, after in self.pairs:
            shape[axis] += before + after
        out = self._empty(shape, x)
        out.fill(self.value)
        src, dst = self._regions()
        out[dst] = x[src]
        return out

    def _constant_backward(self, gy):
        src, dst = self._regions()
        gx = xp_of(gy).zeros(self.in_shape, gy.dtype)
        gx[src] = gy[dst]
        return gx

    def _pad_axis(self, x, axis, before, after):
        n = x.shape[axis]
        shape = list(x.shape)
        shape[axis] = n + before + after
        out = self._empty(shape, x)
        for o0, o1, start, step in _runs(n, before, after, self.mode):
            out[_along(axis, x.ndim, slice(o0, o1))] = x[_along(axis, x.ndim, _source(start, step, o1 - o0))]
        return out

    def _unpad_axis(self, gy, axis, before, after):
        n = self.in_shape[axis]
        shape = list(gy.shape)
        shape[axis] = n
        gx = xp_of(gy).zeros(shape, gy.dtype)
        for o0, o1, start, step in _runs(n, before, after, self.mode):
            part = gy[_along(axis, gy.ndim, slice(o0, o1))]
            if step == 0:
                part = part.sum(axis=axis, keepdims=True)
            gx[_along(axis, gy.ndim, _source(start, step, o1 - o0))] += part
        return gx


def _check_pad(input, pad, mode, value):
    """PyTorch's argument checks for ``pad``; returns (axis, before, after) triples."""
    for i, p in enumerate(pad):
        if not isinstance(p, numbers.Integral):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
                            f"type {type(p).__name__} at pos {i}")
    ndim, shape = input.dim(), list(input.shape)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) > 2 * ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but "
                           f"got padding length {len(pad)} and input of dimension {ndim}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = [(ndim - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]
    if mode == "constant":
        for axis, before, after in pairs:
            if shape[axis] + min(before, 0) + min(after, 0) < 0:
                raise RuntimeError(f"The input size {shape[axis]}, plus negative padding {before} and {after} "
                                   f"resulted in a negative output size, which is invalid. Check dimension "
                                   f"{axis} of your input.")
        return pairs
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pairs)
    if not 1 <= k <= 3 or ndim not in (k + 1, k + 2):
        raise NotImplementedError(f"Padding size {len(pad)} is not supported for {ndim}D input tensor.")
    if mode in ("reflect", "replicate") and 0 in shape[ndim - k - 1:]:
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {shape}")
    for i, (axis, before, after) in enumerate(pairs):
        if mode == "reflect" and (before >= shape[axis] or after >= shape[axis]):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({before}, {after}) at dimension {axis} of "
                               f"input {shape}")
        kept = shape[axis] - max(-before, 0) - max(-after, 0)
        if mode == "circular" and max(before, after) > min(shape[axis], kept):
            raise RuntimeError("Padding value causes wrapping around more than once.")
    return pairs


def pad(input, pad, mode="constant", value=None):
    """Pad (or crop, with negative amounts) ``input``; ``pad`` goes (left, right, top, bottom, ...)."""
    pairs = _check_pad(input, tuple(pad), mode, value)
    if mode == "replicate" or (mode == "reflect" and len(pairs) < 3):  # torch lists no reflection_pad3d
        return _pad_from_edges(input, pairs, mode)
    return Pad(pairs, mode, 0 if value is None else value)(input)


@autocast_mode.float32("cpu")
def _pad_from_edges(input, pairs, mode):
    """Reflect and replicate padding: on torch's float32 list of CPU autocast, unlike the other modes."""
    return Pad(pairs, mode, 0)(input)


__all__ = ["pad"]
