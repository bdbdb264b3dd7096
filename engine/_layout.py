"""``engine.layout`` and ``engine.memory_format``: the named constants PyTorch code passes around, and torch's
memory-format rules for dense arrays.

A dense tensor's ``x.layout`` is ``engine.strided``; the sparse tensors of ``engine.sparse`` report
``sparse_coo``, ``sparse_csr`` or ``sparse_csc`` (``sparse_bsr`` and ``sparse_bsc`` exist as names only).
The memory formats are
honoured as torch honours them: ``contiguous``, ``is_contiguous``, ``clone``, ``Tensor.to`` and ``Module.to`` take
``memory_format=``, and the functions below read a numpy (or CuPy) array's strides the way torch reads a tensor's
(``suggest_memory_format``), so that ops can give their outputs torch's layout (``nn/functional/_memory_format.py``).
"""
from ._device import array_module


class _Named:
    """A singleton constant that prints as ``engine.<name>`` (PyTorch prints ``torch.<name>``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"engine.{self.name}"

    def __reduce__(self):
        return self.name


class layout(_Named):
    """How a tensor's elements are stored (``torch.layout``)."""


class memory_format(_Named):
    """An order of a tensor's dimensions in memory (``torch.memory_format``)."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")

contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc",
           "sparse_bsr", "sparse_bsc", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]


# ---- memory formats of dense arrays, with torch's rules ---------------------------------------------------------
# The dimension orders, outermost first, of the channels-last formats; torch names each by the rank it applies to.
_CHANNELS_LAST_ORDER = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}
_CHANNELS_LAST_RANK = {"channels_last": 4, "channels_last_3d": 5}


def _element_strides(array):
    return tuple(s // array.itemsize for s in array.strides)


def inverse_permutation(order):
    """The permutation that undoes ``order`` (a transpose's axes)."""
    return tuple(order.index(d) for d in range(len(order)))


def strides_like_channels_last(array):
    """Whether torch would read ``array``'s strides as channels-last (``suggest_memory_format``): a 4-D or 5-D array
    whose dimensions lie, innermost first, as channels, then width, height (depth) and batch, where the strides of
    size-1 dimensions may be anything. Ambiguous cases (N111, a sliced N11W) count as contiguous, as in torch."""
    order = _CHANNELS_LAST_ORDER.get(array.ndim)
    if order is None:
        return False
    shape, strides = array.shape, _element_strides(array)
    if strides[1] == 0:
        return False
    smallest = 0
    for d in reversed(order):
        if shape[d] == 0 or strides[d] < smallest:
            return False
        if d == 0 and smallest == strides[1]:
            return False
        smallest = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def is_contiguous_as(array, fmt):
    """``Tensor.is_contiguous(memory_format=fmt)``: the array's strides are exactly those of a dense array laid out
    in ``fmt`` (size-1 dimensions ignored, as in torch); ``preserve_format`` asks for row-major, as torch's does."""
    if fmt is None or fmt is contiguous_format or fmt is preserve_format:
        return bool(array.flags.c_contiguous)
    if array.ndim != _CHANNELS_LAST_RANK[fmt.name]:
        return False
    expected = 1
    strides = _element_strides(array)
    for d in reversed(_CHANNELS_LAST_ORDER[array.ndim]):
        if array.shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= array.shape[d]
    return True


def in_memory_format(array, fmt, xp):
    """``array`` laid out in ``fmt`` (contiguous or channels-last), as ``Tensor.contiguous(fmt)`` gives: the array
    itself (or a view of it) where it already is, else a copy."""
    if fmt is None or fmt is contiguous_format:
        return xp.ascontiguousarray(array)
    if fmt is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    rank = _CHANNELS_LAST_RANK[fmt.name]
    if array.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    order = _CHANNELS_LAST_ORDER[rank]
    return xp.ascontiguousarray(array.transpose(order)).transpose(inverse_permutation(order))


def is_dense(array):
    """Whether the array's elements fill its memory without gaps or overlaps, in some order of its dimensions."""
    expected = 1
    for size, stride in sorted(((s, abs(st)) for s, st in zip(array.shape, _element_strides(array)) if s != 1),
                               key=lambda pair: pair[1]):
        if stride != expected:
            return False
        expected *= size
    return True


def empty_in_format(array, fmt, xp, dtype):
    """An uninitialised array of ``array``'s shape and ``dtype``, laid out as ``*_like(array, memory_format=fmt)``
    lays out torch's: ``preserve_format`` as ``empty_preserving``, another format in that format."""
    if fmt is None or fmt is preserve_format:
        return empty_preserving(array, xp, dtype)
    if fmt is contiguous_format:
        return xp.empty(array.shape, dtype)
    rank = _CHANNELS_LAST_RANK[fmt.name]
    if array.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    return empty_ordered(array.shape, _CHANNELS_LAST_ORDER[rank], dtype, xp)


def empty_preserving(array, xp, dtype):
    """An uninitialised array of ``array``'s shape and ``dtype`` laid out as torch's ``preserve_format`` lays out a
    copy of it (``empty_like``, ``clone``, ``to``, ``flip``): a dense array's strides kept, else its dimensions in
    the order torch's TensorIterator reads them (``pointwise_order``: a gap-strided array keeps its order, an
    expanded dimension does not count as innermost, where numpy's ``order="K"`` puts it there)."""
    if is_dense(array):
        return xp.empty_like(array, dtype=dtype)
    return empty_ordered(array.shape, tuple(reversed(pointwise_order([array], array.shape))), dtype, xp)


def empty_ordered(shape, outer_first, dtype, xp):
    """An uninitialised array of ``shape`` whose dims lie in memory in the order ``outer_first`` (outermost first)."""
    return xp.empty(tuple(shape[d] for d in outer_first), dtype).transpose(inverse_permutation(outer_first))


def empty_in_suggested_format(shape, like, dtype, xp):
    """An uninitialised array of ``shape`` (of ``like``'s rank) laid out in ``like``'s suggested memory format, as
    torch allocates the results of its padding and pixel-shuffle kernels."""
    if suggested_format(like) is contiguous_format:
        return xp.empty(shape, dtype)
    return empty_ordered(shape, _CHANNELS_LAST_ORDER[len(shape)], dtype, xp)


def copy_preserving(array, xp, dtype):
    """``array`` converted to ``dtype`` in a fresh array laid out as ``empty_preserving`` (``Tensor.to(dtype)``)."""
    if array.flags.c_contiguous or is_dense(array):
        return array.astype(dtype)
    out = empty_preserving(array, xp, dtype)
    out[...] = array
    return out


def suggested_format(array):
    """The memory format torch reads ``array``'s strides as (``suggest_memory_format``)."""
    if not strides_like_channels_last(array):
        return contiguous_format
    return channels_last if array.ndim == 4 else channels_last_3d


def copy_preserving_format(array, fmt, xp):
    """``clone(memory_format=fmt)``: ``preserve_format`` lays the copy out as ``empty_preserving``; another format lays
    it out in that format."""
    if fmt is None or fmt is preserve_format:
        return copy_preserving(array, xp, array.dtype)
    if is_contiguous_as(array, fmt):  # in_memory_format would hand back the array itself
        return array.copy(order="K")
    return in_memory_format(array, fmt, xp)


def pointwise_order(arrays, shape):
    """The order, innermost dimension first, in which torch lays out the result of a pointwise op over ``arrays``
    broadcast to ``shape`` (its TensorIterator's ``reorder_dimensions``): the first operand's stride order decides,
    a later operand breaks its ties, and broadcast dimensions abstain."""
    ndim = len(shape)
    strides = []
    for array in arrays:
        lead = ndim - array.ndim
        own = _element_strides(array)
        strides.append([0 if d < lead or (array.shape[d - lead] == 1 and shape[d] != 1) else own[d - lead]
                        for d in range(ndim)])

    def should_swap(dim0, dim1):
        for operand in strides:
            stride0, stride1 = operand[dim0], operand[dim1]
            if stride0 == 0 or stride1 == 0:
                continue
            if stride0 != stride1:
                return -1 if stride0 < stride1 else 1
            if shape[dim0] > shape[dim1]:
                return 1
        return 0

    order = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(order[dim0], order[dim1])
            if comparison > 0:
                order[dim0], order[dim1] = order[dim1], order[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return order


def in_order(array, order, xp):
    """A copy of ``array`` whose dimensions lie in memory in ``order`` (innermost first)."""
    outer_first = tuple(reversed(order))
    return xp.ascontiguousarray(array.transpose(outer_first)).transpose(inverse_permutation(outer_first))


def memory_order(array):
    """The order, innermost first, of ``array``'s dimensions in memory (ties kept in row-major order)."""
    strides = _element_strides(array)
    return sorted(range(array.ndim), key=lambda d: (strides[d], -d))


def contiguous_strides(shape):
    """The element strides of a row-major (contiguous) array of ``shape``, as torch gives them (a size-0 or size-1
    dim steps as if it were 1 long)."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def strides_in_format(shape, fmt):
    """The element strides of a dense array of ``shape`` laid out in ``fmt`` (contiguous or channels-last), as
    torch's ``resize_(..., memory_format=fmt)`` gives them."""
    if fmt is None or fmt is contiguous_format:
        return contiguous_strides(shape)
    rank = _CHANNELS_LAST_RANK[fmt.name]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    strides, step = [0] * rank, 1
    for d in reversed(_CHANNELS_LAST_ORDER[rank]):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def row_major(outs):
    """``outs`` (an array or a tuple of them) with each array row-major, as torch allocates the results of its
    reductions, scans and selections whatever their input's layout; numpy follows the input's order. An array
    already row-major (every result of a row-major input) is handed back as it is, so the common case costs one
    flag check."""
    if isinstance(outs, tuple):
        return tuple(row_major(o) for o in outs)
    if not hasattr(outs, "flags") or outs.flags.c_contiguous:
        return outs
    return array_module(outs).ascontiguousarray(outs)


def in_suggested_format(out, like, xp):
    """``out`` laid out as torch lays out a result it allocates in ``like``'s suggested format (its
    ``LEGACY_CONTIGUOUS_MEMORY_FORMAT``: ``roll``): channels-last where ``like`` reads as channels-last, else
    row-major; ``out`` itself where it already is."""
    fmt = suggested_format(like)
    return out if is_contiguous_as(out, fmt) else in_memory_format(out, fmt, xp)


class RowMajorResults:
    """A ``Function`` mixin: the arrays each subclass's ``forward`` returns come out row-major (``row_major``), but
    for a subclass that sets ``lays_out_results`` (its forward lays them out itself)."""

    lays_out_results = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        forward = cls.__dict__.get("forward")
        if forward is not None and not cls.__dict__.get("lays_out_results", False):
            def row_major_forward(self, *arrays):
                return row_major(forward(self, *arrays))
            row_major_forward.__doc__ = forward.__doc__
            cls.forward = row_major_forward
