"""The memory layout of torch's transform results, so that ours have torch's strides.

torch's CPU kernels (MKL) move the dims they do not transform ("batch" dims) to the front, ordered by the input's
strides (largest first), and the transformed dims behind them in the order they transform them (the complex ones
sorted by the input's strides, largest first; a real-to-complex transform's last dim kept last); the result is
dense in that order. The input they see is the user's after the dtype promotion (``Tensor.to``: a dense layout
kept, another made contiguous or channels-last) and the resizing to ``s`` (a crop keeps the strides; zero padding
lays out in the suggested memory format). A half-spectrum-to-real transform over several dims runs a complex one
over all but the last first, then the 1-d one; ``ihfftn`` the other way round.

Everything here works on ``(shape, strides)`` pairs in elements; ``result_order`` gives the order, outermost dim
first, for ``engine._layout.empty_ordered``.
"""
from collections import namedtuple

from .._layout import _CHANNELS_LAST_ORDER, is_dense, strides_like_channels_last

_Meta = namedtuple("_Meta", "shape strides itemsize ndim")


def _meta(shape, strides):
    """A stand-in for an array of ``shape`` and element ``strides``, for the layout predicates of engine._layout."""
    return _Meta(tuple(shape), tuple(strides), 1, len(shape))


def _dense_in_order(shape, outer_first):
    strides, step = [0] * len(shape), 1
    for d in reversed(outer_first):
        strides[d] = step
        step *= max(shape[d], 1)
    return strides


def _suggested(shape, strides, new_shape):
    """Strides of a fresh array of ``new_shape`` in the memory format torch suggests for (shape, strides)."""
    if strides_like_channels_last(_meta(shape, strides)):
        return _dense_in_order(new_shape, _CHANNELS_LAST_ORDER[len(shape)])
    return _dense_in_order(new_shape, range(len(new_shape)))


def _by_stride(dims, strides):
    """``dims`` largest stride first, ties kept in order (torch sorts a handful of dims by insertion)."""
    return sorted(dims, key=lambda d: -strides[d])


def _partition_batch_first(ndim, transformed):
    """The dims with the batch ones in front as C++'s ``std::partition`` leaves them (it swaps from both ends)."""
    order, first, last = list(range(ndim)), 0, ndim
    while True:
        while first != last and order[first] not in transformed:
            first += 1
        if first == last:
            return order[:first]
        last -= 1
        while first != last and order[last] in transformed:
            last -= 1
        if first == last:
            return order[:first]
        order[first], order[last] = order[last], order[first]
        first += 1


def _execute(strides, out_shape, dims):
    """Strides of a kernel's result: batch dims by the input's ``strides``, then ``dims`` in the order given."""
    batch = _by_stride(_partition_batch_first(len(out_shape), set(dims)), strides)
    return _dense_in_order(out_shape, batch + list(dims))


def _complex_pass(shape, strides, dims):
    return _execute(strides, shape, _by_stride(dims, strides))


def _resized(shape, strides, axes, sizes):
    """(shape, strides) after torch crops or zero-pads each of ``axes`` to ``sizes``."""
    cropped, new_shape = list(shape), list(shape)
    for a, n in zip(axes, sizes):
        cropped[a] = min(n, shape[a])
        new_shape[a] = n
    if any(n > shape[a] for a, n in zip(axes, sizes)):
        return new_shape, _suggested(cropped, strides, new_shape)
    return new_shape, list(strides)


def result_order(kind, shape, strides, axes, sizes, promoted):
    """The dims of torch's result of a ``kind`` transform, outermost first: "c2c" (fftn, ifftn), "r2c" (rfftn),
    "ihfftn" (its last dim first, then the others), "r2c_full" (fft / ifft of a real input: one dim), "c2r"
    (irfftn, hfftn; ``sizes``' last is the output length). ``promoted``: torch converts the input's dtype
    first."""
    shape, strides, axes = list(shape), list(strides), list(axes)
    if promoted and not is_dense(_meta(shape, strides)):
        strides = _suggested(shape, strides, shape)
    if kind == "c2r":
        half = list(sizes[:-1]) + [sizes[-1] // 2 + 1]
        shape, strides = _resized(shape, strides, axes, half)
        if len(axes) > 1:
            strides = _complex_pass(shape, strides, axes[:-1])
        shape[axes[-1]] = sizes[-1]
        result = _execute(strides, shape, axes[-1:])
    else:
        shape, strides = _resized(shape, strides, axes, sizes)
        if kind == "c2c":
            result = _complex_pass(shape, strides, axes)
        elif kind == "r2c_full":
            result = _execute(strides, shape, axes)
        else:
            shape[axes[-1]] = shape[axes[-1]] // 2 + 1
            if kind == "ihfftn":
                result = _execute(strides, shape, axes[-1:])
                if len(axes) > 1:
                    result = _complex_pass(shape, result, axes[:-1])
            else:
                result = _execute(strides, shape, _by_stride(axes[:-1], strides) + axes[-1:])
    return sorted(range(len(shape)), key=lambda d: -result[d])
