"""Views as fresh tensors, and their inverses: ``torch.*_copy`` (``permute_copy``, ``diagonal_copy`` ...), the
``*_scatter`` ops that write ``src`` into a copy of ``input`` where a view would sit (``slice_scatter``,
``select_scatter``, ``diagonal_scatter``, ``as_strided_scatter``), and ``as_strided`` itself.

A copy is the view followed by a contiguous clone, so it owns its memory and its gradient is the view's. A
scatter finds the flat positions its view covers by taking that view of ``arange(numel)``, so one op
(``ScatterAt``) serves every kind of view: its gradient is the upstream gradient with those positions zeroed for
``input``, and read at them for ``src``.
"""
import numpy as np

from .. import _dtype
from .._device import array_module
from ..autograd.double_backward import constant
from ..autograd.function import Function
from ..tensor import _new, register_method
from ._common import shape_arg, wrap_dim
from .convert import clone
from .inplace import _become


def _fresh(view):
    """``view`` (or each of a list of views) as a contiguous tensor with memory of its own; the gradient flows
    back through the view."""
    if isinstance(view, (list, tuple)):
        return tuple(_fresh(v) for v in view)
    return clone(view).contiguous()  # clone(memory_format=contiguous_format) returns a contiguous input itself


def expand_copy(input, size, *, implicit=False):
    return _fresh(input.expand(shape_arg((size,))))


def permute_copy(input, dims):
    return _fresh(input.permute(tuple(dims)))


def view_copy(input, size=None, *, dtype=None):
    """``input.view(size)`` copied; a dtype (as ``dtype=`` or as ``size``) reinterprets the bytes, as
    ``Tensor.view(dtype)``. A copy needs no compatible strides: any layout reshapes, as in torch."""
    if dtype is not None:
        if size is not None:
            raise TypeError("view_copy() takes a size or a dtype, not both")
        size = dtype
    if isinstance(size, _dtype.dtype):
        return _fresh(input.view(size))
    return _fresh(input.reshape(shape_arg((size,))))


def transpose_copy(input, dim0, dim1):
    return _fresh(input.transpose(dim0, dim1))


def t_copy(input):
    return _fresh(input.t())


def squeeze_copy(input, dim=None):
    return _fresh(input.squeeze() if dim is None else input.squeeze(dim))


def unsqueeze_copy(input, dim):
    return _fresh(input.unsqueeze(dim))


def select_copy(input, dim, index):
    return _fresh(input.select(dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    return _fresh(input[_slice_key(input, dim, start, end, step)])


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _fresh(input.diagonal(offset, dim1, dim2))


def detach_copy(input):
    return _fresh(input.detach())


def alias_copy(input):
    return _fresh(input)


def unbind_copy(input, dim=0):
    return _fresh(input.unbind(dim))


def split_copy(input, split_size, dim=0):
    return _fresh(input.split(split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim=0):
    return _fresh(input.split_with_sizes(split_sizes, dim))


def unfold_copy(input, dimension, size, step):
    return _fresh(input.unfold(dimension, size, step))


def _slice_key(input, dim, start, end, step):
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise RuntimeError(f"slice step must be positive, got {step}")
    dim = wrap_dim(dim, input.ndim)
    return (slice(None),) * dim + (slice(start, end, step),)


# ---- scatters: a copy of input with src written where the view sits ------------------------------------------
class ScatterAt(Function):
    """``input`` with ``src`` written at the flat ``positions`` (an array shaped like ``src``): it only moves
    elements, so bfloat16 arrays are taken as they are (laid out as themselves)."""

    uses_inputs, moves_only = False, True

    def __init__(self, positions):
        self.positions = positions

    def forward(self, x, src):
        out = _copy_keeping_strides(x)
        if out.flags.c_contiguous:
            out.reshape(-1)[self.positions] = src
        else:
            out[array_module(x).unravel_index(self.positions, out.shape)] = src
        return out

    def backward(self, gy):
        g_src = gy.reshape(-1)[self.positions] if self.needs_input_grad[1] else None
        g_x = None
        if self.needs_input_grad[0]:
            g_x = gy.copy()
            g_x.reshape(-1)[self.positions] = 0
        return g_x, g_src

    def backward_tensors(self, gy):
        """Both gradients are linear in ``gy`` with the positions as data: ``src``'s is a read at them (an index
        op), ``input``'s this op again with zeros written there."""
        g_src = gy.reshape(-1)[constant(self.positions)] if self.needs_input_grad[1] else None
        g_x = None
        if self.needs_input_grad[0]:
            zeros = constant(array_module(gy._data).zeros(self.positions.shape, gy._data.dtype))
            g_x = ScatterAt(self.positions)(gy, zeros)
        return g_x, g_src


def _copy_keeping_strides(array):
    """A copy of ``array`` with its strides, as torch's scatters copy their input (gaps included: a copy of the
    span of memory it covers); row-major where its elements overlap (an expanded array), as torch's."""
    xp = array_module(array)
    if array.size == 0 or array.flags.c_contiguous or _overlaps(array) or any(step < 0 for step in array.strides):
        return array.copy()
    span = 1 + sum((n - 1) * step for n, step in zip(array.shape, array.strides)) // array.itemsize
    out = xp.lib.stride_tricks.as_strided(xp.empty(span, array.dtype), array.shape, array.strides)
    out[...] = array
    return out


def _scatter(name, input, src, view_of_positions):
    """Write ``src`` where ``view_of_positions(positions)`` picks out of ``input``'s flat positions."""
    xp = array_module(input._data)
    positions = view_of_positions(_new(xp.arange(input.numel()).reshape(input.shape)))
    if tuple(positions.shape) != tuple(src.shape):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(positions.shape)}")
    if src.dtype is not input.dtype:  # torch copies src into the result, converting it
        src = src.to(input.dtype)
    return ScatterAt(positions._data)(input, src)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with ``src`` written at ``input[..., start:end:step]`` along ``dim``."""
    key = _slice_key(input, dim, start, end, step)
    return _scatter("slice_scatter", input, src, lambda p: p[key])


def select_scatter(input, src, dim, index):
    """``input`` with ``src`` written at ``input.select(dim, index)``."""
    return _scatter("select_scatter", input, src, lambda p: p.select(dim, index))


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``src`` written on the diagonal ``input.diagonal(offset, dim1, dim2)``."""
    return _scatter("diagonal_scatter", input, src, lambda p: p.diagonal(offset, dim1, dim2))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """``input`` with ``src`` written at ``input.as_strided(size, stride, storage_offset)``, the geometry read over
    the memory of input as torch reads it: input's own memory (its gaps and offset included; what lands in a gap
    is not seen), or a contiguous copy where its elements overlap (an expanded input)."""
    size, stride = tuple(shape_arg((size,))), tuple(int(s) for s in stride)
    xp = array_module(input._data)
    if _overlaps(input._data):
        flat, offset = xp.arange(input.numel()), 0
    else:
        memory, offset, own_strides = _storage(input._data)
        flat = xp.full(memory.size, -1, np.int64)  # each memory slot's row-major index in input, -1 in a gap
        _strided(flat, input.shape, own_strides, offset)[...] = xp.arange(input.numel()).reshape(input.shape)
    offset = offset if storage_offset is None else int(storage_offset)
    _check_bounds(flat.size, input.itemsize, size, stride, offset)
    positions = _strided(flat, size, stride, offset)
    if _overlaps(positions):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")
    if positions.shape != tuple(src.shape):
        raise RuntimeError(f"as_strided_scatter: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(positions.shape)}")
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    keep = positions >= 0
    if not keep.all():  # src's elements that land in input's gaps are dropped
        src, positions = src.reshape(-1)[_new(keep.reshape(-1))], positions[keep]
    return ScatterAt(positions.copy())(input, src)


def _overlaps(array):
    """Whether some elements of ``array`` share memory (a stride 0 along a dim of more than one element)."""
    return array.size > 1 and any(step == 0 and n > 1 for step, n in zip(array.strides, array.shape))


# ---- in-place ops on views: the base's history -------------------------------------------------------------
def _element_offsets(array):
    """Each element's distance in bytes from the element ``[0, ..., 0]`` of ``array`` (an int array of its shape)."""
    xp = array_module(array)
    offsets = xp.zeros(array.shape, np.int64)
    for d, (n, step) in enumerate(zip(array.shape, array.strides)):
        offsets += (xp.arange(n, dtype=np.int64) * step).reshape((n,) + (1,) * (array.ndim - d - 1))
    return offsets


def _positions_in(view, base):
    """For each element of the array ``view`` (of ``base``'s memory), the row-major flat index of the element of
    ``base`` at the same address."""
    xp = array_module(base)
    start = _offset_in(view, base) * view.itemsize
    wanted = _element_offsets(view) + start
    if base.flags.c_contiguous:
        return wanted // base.itemsize
    offsets = _element_offsets(base).reshape(-1)
    order = xp.argsort(offsets)
    return order[xp.searchsorted(offsets[order], wanted)]


class CopySlices(ScatterAt):
    """The node of a base written in place through one of its views (torch's ``CopySlices``)."""

    def name(self):
        return "CopySlices"


def rebase_history(view):
    """After an in-place op recorded on ``view``, give its base the history torch's CopySlices gives it: the base's
    old values outside the view, the view's new values (and their history) inside. The base's memory already holds
    the result, so the scatter's own output is dropped: only its graph node is kept, for the base."""
    base = view._base
    old = _new(base._data, base.requires_grad)
    old.grad_fn, old._output_index, old._version_counter = base.grad_fn, base._output_index, base._version_counter
    positions = _positions_in(view._data, base._data)
    scattered = CopySlices(positions)(old, view)
    base.grad_fn, base._output_index, base.requires_grad = scattered.grad_fn, 0, True
    if base._accumulator is not None:  # a leaf that did not require grad becomes a computed tensor
        base._accumulator = None


# ---- as_strided: any geometry over the tensor's memory ------------------------------------------------------
def _storage(array):
    """(the flat memory ``array`` views, where its first element lies in it, its element strides in it): the
    outermost array its views come from, when that one is contiguous; else a contiguous copy of ``array`` (whose
    memory it then no longer shares)."""
    xp = array_module(array)
    root = _root(array)
    if root.flags.c_contiguous:
        strides = tuple(s // array.itemsize for s in array.strides)
        return root.reshape(-1), _offset_in(array, root), strides
    copy = xp.ascontiguousarray(array)
    return copy.reshape(-1), 0, tuple(s // copy.itemsize for s in copy.strides)


def _root(array):
    """The outermost array of ``array``'s type that ``array`` views: its ``base`` chain followed through numpy's
    stride-tricks wrappers (an expanded tensor's array is one), up to memory that is not an array (bytes)."""
    root, node = array, array
    while True:
        node = getattr(node, "base", None)
        if isinstance(node, type(array)):
            root = node
        elif node is None or not hasattr(node, "__array_interface__"):
            return root


def _offset_in(array, root):
    """Elements from ``root``'s first element to ``array``'s (the data pointers of numpy or CuPy arrays)."""
    if isinstance(array, np.ndarray):
        return (array.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // array.itemsize
    return (array.data.ptr - root.data.ptr) // array.itemsize


def _check_bounds(numel, itemsize, size, stride, offset):
    """torch's errors for a geometry that a memory of ``numel`` elements of ``itemsize`` bytes cannot hold."""
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size {list(size)}, stride {list(stride)}")
    if any(s < 0 for s in stride) or any(n < 0 for n in size) or offset < 0:
        raise RuntimeError(f"as_strided: negative sizes, strides or storage offset are not supported, got size "
                           f"{list(size)}, stride {list(stride)}, storage offset {offset}")
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > numel:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out "
                           f"of bounds for storage of size {numel * itemsize}")


def _strided(flat, size, stride, offset):
    """The view of the 1-d ``flat`` with element strides ``stride`` starting at ``offset``, bounds-checked."""
    _check_bounds(flat.size, flat.itemsize, size, stride, offset)
    xp = array_module(flat)
    start = flat[offset:] if offset < flat.size else flat[:0]
    return xp.lib.stride_tricks.as_strided(start, tuple(size), tuple(s * flat.itemsize for s in stride))


class AsStrided(Function):
    """A view of the input's memory in any geometry; the gradient sums the output's gradient into that memory
    (where the view repeats an element, each use adds) and reads the input's elements back out of it."""

    is_view = True
    moves_only = True
    uses_inputs = False

    def __init__(self, size, stride, storage_offset):
        self.size, self.stride, self.storage_offset = size, stride, storage_offset

    def forward(self, x):
        flat, own_offset, own_strides = _storage(x)
        self.offset = own_offset if self.storage_offset is None else self.storage_offset
        self.memory_size, self.own_geometry = flat.size, (x.shape, own_strides, own_offset)
        return _strided(flat, self.size, self.stride, self.offset)

    def _gradient(self):
        return _StridedMove(self.memory_size, (self.size, self.stride, self.offset), self.own_geometry,
                            self.own_geometry)

    def backward(self, gy):
        return (self._gradient().forward(gy),)

    def backward_tensors(self, gy):
        return self._gradient()(gy)


class _StridedMove(Function):
    """Elements moved between two geometries over one memory: summed into the memory from the ``source``
    geometry's positions (repeats add), read back out at the ``target``'s. ``as_strided``'s gradient is one (view
    to input), and its transpose the other way round: differentiable to any order. Where the input's own geometry
    (``own``) reaches a memory slot from several of its elements (an expanded input), the memory is divided by
    that count on the way, as torch's is: the backward of the expand before sums the copies back."""

    uses_inputs = False

    def __init__(self, memory_size, source, target, own):
        self.memory_size, self.source, self.target, self.own = memory_size, source, target, own

    def forward(self, g):
        xp = array_module(g)
        memory = xp.zeros(self.memory_size, g.dtype)
        every = xp.arange(self.memory_size)
        xp.add.at(memory, _strided(every, *self.source).reshape(-1), g.reshape(-1))
        shape, strides, _ = self.own
        if any(step == 0 and n > 1 for n, step in zip(shape, strides)):
            counts = xp.zeros(self.memory_size, np.int64)
            xp.add.at(counts, _strided(every, *self.own).reshape(-1), 1)
            memory /= xp.maximum(counts, 1)
        return _strided(memory, *self.target).copy()

    def backward(self, g):
        return self._transposed().forward(g)

    def backward_tensors(self, g):
        return self._transposed()(g)

    def _transposed(self):
        return _StridedMove(self.memory_size, self.target, self.source, self.own)


def as_strided(input, size, stride, storage_offset=None):
    """The view of ``input``'s memory with ``size`` and element ``stride`` from ``storage_offset`` (default:
    input's own), sharing that memory."""
    return AsStrided(tuple(shape_arg((size,))), tuple(int(s) for s in stride),
                     None if storage_offset is None else int(storage_offset))(input)


def as_strided_(input, size, stride, storage_offset=None):
    """``input`` becomes ``input.as_strided(size, stride, storage_offset)``."""
    return _become(input, as_strided(input, size, stride, storage_offset))


def as_strided_copy(input, size, stride, storage_offset=None):
    return _fresh(as_strided(input, size, stride, storage_offset))


for _fn in (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter, as_strided, as_strided_):
    register_method(_fn)

__all__ = ["expand_copy", "permute_copy", "view_copy", "transpose_copy", "t_copy", "squeeze_copy", "unsqueeze_copy",
           "select_copy", "slice_copy", "diagonal_copy", "detach_copy", "alias_copy", "unbind_copy", "split_copy",
           "split_with_sizes_copy", "unfold_copy", "slice_scatter", "select_scatter", "diagonal_scatter",
           "as_strided_scatter", "as_strided", "as_strided_", "as_strided_copy"]
