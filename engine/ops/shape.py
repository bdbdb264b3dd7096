"""Shape ops: views (view, reshape, permute, expand, slicing), joins, splits, flips, triangles.

View ops return array views of their input and set ``is_view`` so that the output shares the
input's version counter; their backward maps the gradient back through the same geometry.
"""
import collections.abc
import math
import numbers
import warnings

import numpy as np

from .. import _dtype, _layout
from .._layout import empty_preserving, in_suggested_format, row_major
from ..autograd import grad_mode
from ..autograd.double_backward import transposed_backward
from ..autograd.function import Function
from ..tensor import Size, Tensor, _new, register_method
from .convert import clone, contiguous
from ._common import (as_operand, cast, check_same_device, dims_tuple, int_arg, one_of, result_dtype, shape_arg,
                      wrap_dim, xp_of)


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _share_version(outputs, source):
    """Every output of a multi-output view op shares ``source``'s storage and version counter."""
    base = source._base if source._base is not None else source
    for out in outputs:
        out._version_counter = source._version_counter
        out._base = base
    return outputs


def infer_shape(shape, numel):
    """``shape`` with its single -1 filled in; PyTorch's errors for impossible shapes."""
    shape = tuple(int(s) for s in shape)
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {_shape_str(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{_shape_str(shape)}' is invalid for input of size {numel}")
        i = unknown[0]
        return shape[:i] + (numel // known,) + shape[i + 1:]
    if known != numel:
        raise RuntimeError(f"shape '{_shape_str(shape)}' is invalid for input of size {numel}")
    return shape


# ---- reshaping views ---------------------------------------------------------------------------
class Reshape(Function):
    """``x.reshape(shape)``: a view when the layout allows, else a copy (``view`` forbids the copy)."""

    uses_inputs, moves_only = False, True

    def __init__(self, shape, must_view=False):
        self.shape, self.must_view = shape, must_view

    def forward(self, x):
        self.in_shape = x.shape
        y = x.reshape(self.shape)
        self.is_view = y.size == 0 or xp_of(x).may_share_memory(y, x)
        if self.must_view and not self.is_view:
            raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                               "least one dimension spans across two contiguous subspaces). Use "
                               ".reshape(...) instead.")
        return y

    def backward(self, gy):
        return gy.reshape(self.in_shape)

    def backward_tensors(self, gy):
        return gy.reshape(self.in_shape)


def _reshape(x, shape, must_view=False):
    return Reshape(infer_shape(shape, x.numel()), must_view)(x)


def view(input, *shape, size=None, dtype=None):
    """A view with a new shape that must not copy (``Tensor.view``); ``view(dtype)`` views the same bytes as
    another dtype (``_view_as_dtype``)."""
    if dtype is None and len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        dtype = shape[0]
    if dtype is not None:
        return _view_as_dtype(input, _dtype.to_dtype(dtype))
    return _reshape(input, shape_arg(shape, size, "size"), must_view=True)


def _view_as_dtype(input, target):
    """The tensor's bytes read as ``target`` (``x.view(torch.int16)``): the last dim scales by the ratio of
    the element sizes, with torch's conditions where they differ. Not differentiable, as in torch (run under
    no_grad); a Function, so that nn.Graph traces it."""
    arr, source = input._data, input.dtype
    if target.itemsize != arr.itemsize:
        what = f"to view {source.title} as {target.title} (different element sizes)"
        if arr.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        ratio = target.itemsize // arr.itemsize
        if ratio > 1 and arr.shape[-1] % ratio:  # checked before the stride, as torch does
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {arr.shape[-1]}")
        if input.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {input.stride(-1)}")
        if ratio > 1:
            if input.storage_offset() % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got "
                                   f"{input.storage_offset()}")
            for d in range(arr.ndim - 1):
                if input.stride(d) % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got "
                                       f"{input.stride(d)}")
    with grad_mode.no_grad():
        return ViewAsDtype(target.np)(input.detach())  # never requires grad, as torch's view(dtype)


class ViewAsDtype(Function):
    """The same bytes as another dtype: a view, never differentiable (``_view_as_dtype``)."""

    is_view, uses_inputs = True, False

    def __init__(self, np_dtype):
        self.np_dtype = np_dtype

    def forward(self, x):
        return x.view(self.np_dtype)


def view_as(input, other):
    return view(input, tuple(other.shape))


def reshape(input, *sizes, shape=None):
    """A view with a new shape when possible, otherwise a copy (``torch.reshape``)."""
    return _reshape(input, shape_arg(sizes, shape, "shape"))


def reshape_as(input, other):
    return reshape(input, tuple(other.shape))


def ravel(input):
    """The elements in row-major order as a 1-d tensor: a view where ``input`` is contiguous, else a contiguous
    copy (torch's ``contiguous().view(-1)``; a reshape could view a uniformly strided input)."""
    if not getattr(input, "is_quantized", False) and not input.is_contiguous():
        input = contiguous(input)
    return reshape(input, -1)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one (a 0-d tensor becomes 1-d)."""
    if getattr(input, "is_quantized", False):
        return input.flatten(start_dim, end_dim)
    start, end = wrap_dim(start_dim, input.ndim), wrap_dim(end_dim, input.ndim)
    if input.ndim == 0:
        return reshape(input, 1)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:  # nothing to merge: torch hands back the tensor itself, not a view of it
        return input
    shape = tuple(input.shape)
    merged = math.prod(shape[start:end + 1])
    return reshape(input, shape[:start] + (merged,) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        raise RuntimeError(f"unflatten got an unexpected error:\nDimension specified as {d} but tensor has no "
                           "dimensions")
    shape = tuple(input.shape)
    sizes = tuple(int(s) for s in sizes)
    try:
        sizes = infer_shape(sizes, shape[d])
    except RuntimeError:
        raise RuntimeError(f"unflatten: Provided sizes {_shape_str(sizes)} don't multiply up to the "
                           f"size of dim {d} ({shape[d]}) in the input tensor") from None
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


def squeeze(input, dim=None):
    """Drop size-1 dims (all, one, or a tuple of them); other dims are left alone."""
    shape = tuple(input.shape)
    if dim is None:
        dims = set(range(len(shape)))
    elif isinstance(dim, (tuple, list)):  # an empty tuple squeezes nothing, as torch's
        dims = [wrap_dim(int(d), input.ndim) for d in dim]
        for d in dims:
            if dims.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = set(dims)
    else:
        dims = set(dims_tuple(dim, input.ndim))
    return reshape(input, tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)))


def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim`` (in range ``[-ndim-1, ndim]``)."""
    d = wrap_dim(dim, input.ndim + 1)
    shape = tuple(input.shape)
    return reshape(input, shape[:d] + (1,) + shape[d:])


def _atleast(n, tensors):
    """Reshape each tensor to at least ``n`` dims the way numpy/PyTorch's atleast_nd do."""
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        shape = tuple(t.shape)
        if len(shape) < n:
            if n == 3 and len(shape) == 2:
                shape = shape + (1,)
            elif n == 3 and len(shape) == 1:
                shape = (1,) + shape + (1,)
            else:
                shape = (1,) * (n - len(shape)) + shape
            t = reshape(t, shape)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    return _atleast(3, tensors)


# ---- dim reordering ------------------------------------------------------------------------------
class Permute(Function):
    is_view, uses_inputs = True, False

    def __init__(self, dims):
        self.dims = dims

    def forward(self, x):
        return x.transpose(self.dims)

    def backward(self, gy):
        return gy.transpose(tuple(np.argsort(self.dims)))

    def backward_tensors(self, gy):
        return gy.permute(*(int(d) for d in np.argsort(self.dims)))


def permute(input, *order, dims=None):
    """Reorder dims (a view)."""
    dims = shape_arg(order, dims, "dims")
    if len(dims) != input.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. input.dim() "
                           f"= {input.ndim} is not equal to len(dims) = {len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return Permute(dims)(input)


def transpose(input, dim0, dim1):
    """Swap two dims (a view)."""
    if getattr(input, "is_quantized", False):
        return input.transpose(dim0, dim1)
    dims = list(range(input.ndim))
    if input.ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return Permute(())(input)
    a, b = wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim)
    dims[a], dims[b] = dims[b], dims[a]
    return Permute(tuple(dims))(input)


swapdims = transpose


def swapaxes(input, axis0, axis1):
    """``transpose``, under numpy's name and with its argument names (``axis0``, ``axis1``) as torch's."""
    return transpose(input, axis0, axis1)


def t(input):
    """Transpose a matrix; 0-d and 1-d tensors come back as they are."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, -1) if input.ndim == 2 else Permute(tuple(range(input.ndim)))(input)


def _T(self):
    return Permute(tuple(reversed(range(self.ndim))))(self)


def _mT(self):
    if self.ndim == 0:  # torch's identity (the tensor itself), deprecated
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.")
        return self
    if self.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def movedim(input, source, destination):
    """Move dims ``source`` to positions ``destination``; the others keep their order."""
    source, destination = int_arg(source), int_arg(destination)
    src = (source,) if isinstance(source, numbers.Integral) else tuple(source)
    dst = (destination,) if isinstance(destination, numbers.Integral) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
                           f"should contain the same number of dims as destination ({list(dst)} dims)")
    n = input.ndim
    src = [wrap_dim(d, n) for d in src]
    dst = [wrap_dim(d, n) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    rest = iter(d for d in range(n) if d not in src)
    placed = dict(zip(dst, src))
    order = tuple(placed[i] if i in placed else next(rest) for i in range(n))
    return Permute(order)(input)


moveaxis = movedim


# ---- broadcasting views --------------------------------------------------------------------------
class Expand(Function):
    """A broadcast view (stride 0 along the expanded dims); backward sums back to the input."""

    is_view, uses_inputs = True, False

    def __init__(self, shape):
        self.shape = shape

    def forward(self, x):
        """A strided view with torch's strides: 0 along the new and the grown dims, the input's own along the
        others (numpy's broadcast_to gives every size-1 dim stride 0, which ``stride()`` shows); read-only where
        elements overlap, as numpy's broadcasts are (torch refuses such writes too)."""
        lead = len(self.shape) - x.ndim
        strides = (0,) * lead + tuple(st if n == m else 0
                                      for n, m, st in zip(x.shape, self.shape[lead:], x.strides))
        y = xp_of(x).lib.stride_tricks.as_strided(x, self.shape, strides)
        if isinstance(y, np.ndarray) and any(st == 0 and n > 1 for st, n in zip(strides, self.shape)):
            y = y.view()  # read-only over a writeable array, so that writeable_view can lift it for its views
            y.flags.writeable = False
        return y

    def backward(self, gy):
        return gy

    def backward_tensors(self, gy):
        return gy


def _expand_shape(shape, sizes):
    """The target of ``expand(sizes)`` with -1 kept, checked with PyTorch's messages."""
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(torch.FloatTensor{{{_shape_str(shape)}}}, size={_shape_str(sizes)}): "
                           "the number of sizes provided "
                           f"({len(sizes)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shape)})")
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            out.append(s)
            continue
        have = shape[i - lead]
        if s == -1:
            s = have
        elif have != 1 and s != have:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size "
                               f"({have}) at non-singleton dimension {i}.  Target sizes: "
                               f"{_shape_str(sizes)}.  Tensor sizes: {_shape_str(shape)}")
        out.append(s)
    return tuple(out)


def expand(input, *sizes, size=None, implicit=False):
    """Broadcast size-1 dims (and new leading dims) to ``sizes`` without copying (``implicit``, torch's flag for
    expansions it inserted itself, changes nothing)."""
    shape = _expand_shape(tuple(input.shape), shape_arg(sizes, size, "size"))
    return Expand(shape)(input)


def expand_as(input, other):
    return expand(input, tuple(other.shape))


def broadcast_to(input, size):
    return expand(input, tuple(size))


def broadcast_sizes(*shapes):
    """The broadcast of the shapes of several tensors, with the error that PyTorch's tensor ops give (naming the
    mismatching sizes as those of tensors a and b)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, s in enumerate(shape):
            j = ndim - len(shape) + i
            if out[j] == 1:
                out[j] = s
            elif s != 1 and s != out[j]:
                raise RuntimeError(f"The size of tensor a ({out[j]}) must match the size of tensor b "
                                   f"({s}) at non-singleton dimension {j}")
    return Size(out)


def broadcast_shapes(*shapes):
    """The broadcast of several shapes (``torch.broadcast_shapes``): an int stands for a 1-d shape, None is
    skipped, and a mismatch names the argument and the shape broadcast so far, as torch's does."""
    shapes = [(s,) if isinstance(s, numbers.Integral) else s for s in shapes if s is not None]
    for shape in shapes:
        if not isinstance(shape, collections.abc.Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got "
                               f"{shape}")
    out = [1] * max((len(s) for s in shapes), default=0)
    for index, shape in enumerate(shapes):
        for i in range(-1, -len(shape) - 1, -1):
            s = shape[i]
            if s == out[i]:
                continue
            if out[i] == 1:
                if s < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                out[i] = s
            elif s != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s} at {i}! Mismatching "
                                   f"argument at index {index} had {shape}; but expected shape should be "
                                   f"broadcastable to {out}")
    return Size(out)


def broadcast_tensors(*tensors):
    """Expand all tensors to their common broadcast shape (views)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    shape = broadcast_sizes(*(tuple(t.shape) for t in tensors))
    return tuple(t if tuple(t.shape) == shape else expand(t, shape) for t in tensors)  # torch's: no view needed


# ---- repeating -------------------------------------------------------------------------------------
class Repeat(Function):
    uses_inputs = False

    def __init__(self, reps):
        self.reps = reps

    def forward(self, x):
        self.in_shape = x.shape
        return xp_of(x).tile(x, self.reps)

    def backward(self, gy):
        padded = (1,) * (len(self.reps) - len(self.in_shape)) + tuple(self.in_shape)
        interleaved = tuple(n for pair in zip(self.reps, padded) for n in pair)
        g = gy.reshape(interleaved).sum(axis=tuple(range(0, 2 * len(padded), 2)))
        return g.reshape(self.in_shape)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def repeat(input, *sizes, repeats=None):
    """Tile the tensor ``sizes`` times along each dim (``Tensor.repeat``)."""
    reps = shape_arg(sizes, repeats, "repeats")
    if len(reps) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    return Repeat(reps)(input)


def tile(input, *reps, dims=None):
    """Like ``repeat``, with missing leading repeats taken as 1; ``dims`` as a sequence or, like
    ``Tensor.tile``, as separate integers."""
    reps = shape_arg(reps, dims, "dims")
    return Repeat((1,) * (input.ndim - len(reps)) + reps)(input)


class RepeatInterleave(Function):
    uses_inputs = False

    def __init__(self, repeats, dim):
        self.repeats, self.dim = repeats, dim

    def forward(self, x):
        self.in_shape = x.shape
        return xp_of(x).repeat(x, self.repeats, axis=self.dim)

    def backward(self, gy):
        xp = xp_of(gy)
        n = self.in_shape[self.dim]
        reps = self.repeats if not isinstance(self.repeats, numbers.Integral) else xp.full(n, self.repeats)
        owner = xp.repeat(xp.arange(n), reps)
        g = xp.zeros(self.in_shape, gy.dtype)
        xp.add.at(g, (slice(None),) * self.dim + (owner,), gy)
        return g

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int or one count per element) along ``dim``."""
    if repeats is None:
        counts = input._data
        return _new(xp_of(counts).repeat(xp_of(counts).arange(counts.shape[0]), counts))
    if dim is None:
        input, dim = reshape(input, -1), 0
    elif input.ndim == 0:  # torch's errors: its tensor path, or its int path's unsqueeze after the dim
        if isinstance(repeats, Tensor):
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        wrap_dim(dim, 0)
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    given, dim = dim, wrap_dim(dim, input.ndim)
    if isinstance(repeats, Tensor):
        check_same_device(input, repeats)  # torch's index_select of the repeated positions
        reps = repeats._data.reshape(-1)
        if reps.size == 1:
            reps = int(reps[0])
        elif reps.size != input.shape[dim]:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.size} and input.size({given}) = {input.shape[dim]}")
    else:
        reps = int(repeats)
    return RepeatInterleave(reps, dim)(input)


# ---- joining ----------------------------------------------------------------------------------------
def _as_tensor_list(tensors, name):
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not Tensor")
    tensors = [as_operand(t) for t in tensors]
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


def _channels_last(x):
    """Whether a 4-d or 5-d array is laid out channels-last (channels adjacent in memory) and not also contiguous."""
    return x.ndim in (4, 5) and x.strides[1] == x.itemsize and not x.flags.c_contiguous


class Cat(Function):
    """Concatenate along ``dim`` in ``dtype``; legacy empty 1-d inputs are skipped.

    The result is contiguous, or channels-last where every input is, as torch lays it out (numpy would follow
    the inputs' strides: a transposed input gave a transposed result, so a dropout after it, which draws its
    mask in memory order, dropped other elements than torch's with the same seed)."""

    uses_inputs = False

    def __init__(self, dim, dtype, skip):
        self.dim, self.dtype, self.skip = dim, dtype.np, skip

    def forward(self, *xs):
        self.shapes = [x.shape for x in xs]
        parts = [cast(x, self.dtype) for x, s in zip(xs, self.skip) if not s]
        xp = xp_of(*xs)
        if all(_channels_last(x) for x in parts):
            return xp.concatenate(parts, axis=self.dim)
        shape = list(parts[0].shape)
        shape[self.dim] = sum(x.shape[self.dim] for x in parts)
        return xp.concatenate(parts, axis=self.dim, out=xp.empty(shape, self.dtype))

    def backward(self, gy):
        xp = xp_of(gy)
        grads, start = [], 0
        for shape, skip in zip(self.shapes, self.skip):
            if skip:
                grads.append(xp.zeros(shape, gy.dtype))
                continue
            n = shape[self.dim]
            grads.append(gy[(slice(None),) * self.dim + (slice(start, start + n),)])
            start += n
        return tuple(grads)

    def backward_tensors(self, gy):
        grads, start = [], 0
        for shape, skip in zip(self.shapes, self.skip):
            if skip:
                grads.append(None)
                continue
            n = shape[self.dim]
            grads.append(gy[(slice(None),) * self.dim + (slice(start, start + n),)])
            start += n
        return tuple(grads)


def _sparse_join(tensors):
    """engine.sparse's joins when the first tensor is sparse (they return a sparse tensor, as torch's), else None."""
    first = tensors[0] if isinstance(tensors, (list, tuple)) and tensors else None
    if isinstance(first, Tensor) and type(first) is not Tensor and first.layout is not _layout.strided:
        from .. import sparse
        return sparse
    return None


def cat(tensors, dim=0, *, out=None):
    """Concatenate tensors along an existing dim, promoting their dtypes (``torch.cat``)."""
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    sparse = _sparse_join(tensors)
    if sparse is not None and out is None:
        return sparse.cat(tensors, dim)
    tensors = _as_tensor_list(tensors, "cat")
    for i, x in enumerate(tensors):
        if x.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    skip = [tuple(x.shape) == (0,) for x in tensors]
    kept = [(i, x) for i, x in enumerate(tensors) if not skip[i]]
    if not kept:
        kept, skip = [(0, tensors[0])], [False] + skip[1:]
    ref = kept[0][1]
    d = wrap_dim(dim, ref.ndim)
    for i, x in kept[1:]:
        if x.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {x.ndim}")
        for k in range(ref.ndim):
            if k != d and x.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {x.shape[k]} for tensor number {i} in "
                                   "the list.")
    dtype = result_dtype(*tensors)  # the skipped empty 1-d tensors take part in the promotion, as in torch
    return _into_out(Cat(d, dtype, skip)(*tensors), out)


concat = cat


def _into_out(result, out):
    """``result`` written into ``out`` (returned; ``result`` where None): refused where a type would fall a category,
    with torch's message for its joins (stack's too), and ``out`` resized first where its shape differs."""
    if out is None:
        return result
    if not _dtype.can_cast(result.dtype, out.dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {out.dtype.title}")
    if tuple(out.shape) != tuple(result.shape):
        out.resize_(tuple(result.shape))
    out.copy_(result)
    return out


def concatenate(tensors, axis=0, out=None, *, dim=None):
    """``cat`` under numpy's name, its dim named ``axis`` (``dim=`` taken too, as torch takes it)."""
    return cat(tensors, axis if dim is None else dim, out=out)


class Stack(Function):
    uses_inputs = False

    def __init__(self, dim, dtype):
        self.dim, self.dtype = dim, dtype.np

    def forward(self, *xs):
        xp = xp_of(*xs)  # torch's result is contiguous; numpy's keeps the inputs' order (transposed inputs)
        return xp.ascontiguousarray(xp.stack([cast(x, self.dtype) for x in xs], axis=self.dim))

    def backward(self, gy):
        return tuple(gy[(slice(None),) * self.dim + (i,)] for i in range(gy.shape[self.dim]))

    def backward_tensors(self, gy):
        return tuple(gy[(slice(None),) * self.dim + (i,)] for i in range(gy.shape[self.dim]))


def stack(tensors, dim=0, *, out=None):
    """Join equally shaped tensors along a new dim."""
    sparse = _sparse_join(tensors)
    if sparse is not None and out is None:
        return sparse.stack(tensors, dim)
    tensors = _as_tensor_list(tensors, "stack")
    ref = tuple(tensors[0].shape)
    d = wrap_dim(dim, len(ref) + 1)  # checked before the shapes, as torch does
    for i, x in enumerate(tensors[1:], 1):
        if tuple(x.shape) != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {_shape_str(ref)} at "
                               f"entry 0 and {_shape_str(x.shape)} at entry {i}")
    return _into_out(Stack(d, result_dtype(*tensors))(*tensors), out)


def hstack(tensors):
    tensors = _atleast(1, (_as_tensor_list(tensors, "hstack"),))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat(_atleast(2, (_as_tensor_list(tensors, "vstack"),)), 0)


row_stack = vstack


def dstack(tensors):
    return cat(_atleast(3, (_as_tensor_list(tensors, "dstack"),)), 2)


def column_stack(tensors):
    tensors = _as_tensor_list(tensors, "column_stack")
    return hstack([reshape(x, -1, 1) if x.ndim <= 1 else x for x in tensors])


# ---- splitting ----------------------------------------------------------------------------------------
class SplitViews(Function):
    """Several views of the input along ``dim``: slices ``(start, stop)`` or single indices."""

    is_view, uses_inputs = True, False

    def __init__(self, dim, parts):
        self.dim, self.parts = dim, parts

    def forward(self, x):
        self.in_shape = x.shape
        lead = (slice(None),) * self.dim
        return tuple(writeable_view(x[lead + (p if isinstance(p, int) else slice(*p),) + (Ellipsis,)])
                     for p in self.parts)

    def backward(self, *grads):
        g = xp_of(grads[0]).zeros(self.in_shape, grads[0].dtype)
        lead = (slice(None),) * self.dim
        for p, gp in zip(self.parts, grads):
            g[lead + (p if isinstance(p, int) else slice(*p),)] += gp
        return g

    def backward_tensors(self, *gys):
        return transposed_backward(self, *gys)


def _split_views(input, dim, parts):
    if not parts:  # unbind along an empty dim
        return ()
    return _share_version(SplitViews(dim, parts)(input), input)


def split(tensor, split_size_or_sections=None, dim=0, *, split_size=None):
    """Split into chunks of one size (the last may be smaller) or of the given sizes (``split_size=``: the name
    ``Tensor.split`` gives it)."""
    split_size_or_sections = int_arg(one_of("split", "split_size_or_sections", split_size_or_sections, split_size))
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, numbers.Integral):
        size = int(split_size_or_sections)
        if size < 0 or (size == 0 and n != 0):
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                               f"size of {n}")
        starts = range(0, n, size) if size and n else [0]  # an empty dim splits into one empty piece
        parts = [(s, min(s + size, n)) for s in starts]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
        bounds = np.cumsum([0] + sizes).tolist()
        parts = list(zip(bounds[:-1], bounds[1:]))
    return _split_views(tensor, d, parts)


def chunk(input, chunks, dim=0):
    """Split into at most ``chunks`` pieces of size ``ceil(n / chunks)``."""
    chunks = int_arg(chunks)
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if n == 0:
        return _split_views(input, d, [(0, 0)] * chunks)
    return split(input, -(-n // chunks), d)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """numpy's array_split: ``n`` near-equal sections, or cuts at the given indices (by keyword under torch's
    names: ``sections``, ``indices`` or ``tensor_indices_or_sections``)."""
    indices_or_sections = one_of("tensor_split", "indices_or_sections", indices_or_sections, sections, indices,
                                 tensor_indices_or_sections)
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, numbers.Integral):
        k = int(indices_or_sections)
        if k <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {k}")
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        bounds = np.cumsum([0] + sizes).tolist()
        parts = list(zip(bounds[:-1], bounds[1:]))
    else:
        cuts = [min(max(int(i) if i >= 0 else int(i) + n, 0), n) for i in indices_or_sections]
        starts, stops = [0] + cuts, cuts + [n]
        parts = [(a, max(a, b)) for a, b in zip(starts, stops)]
    return _split_views(input, d, parts)


def unbind(input, dim=0):
    """All slices along ``dim``, with that dim removed."""
    d = wrap_dim(dim, input.ndim)
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return _split_views(input, d, list(range(input.shape[d])))


def narrow(input, dim, start, length):
    """The view ``input[..., start:start+length, ...]`` along ``dim``."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if isinstance(start, Tensor) and (start.ndim != 0 or start._data.dtype.kind not in "iu"):
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    start, length = int(start), int(length)
    if length < 0:  # checked before start's range, as torch does
        raise RuntimeError("narrow(): length must be non-negative.")
    d, start = _narrow_start(input, dim, start)
    n = input.shape[d]
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return Slice((slice(None),) * d + (slice(start, start + length),))(input)


def _narrow_start(input, dim, start):
    """(the wrapped ``dim``, ``start`` wrapped in it), or torch's IndexError for a start outside ``[-n, n]``."""
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    return d, start + n if start < 0 else start


class Slice(Function):
    """Basic indexing (ints, slices, None, Ellipsis): a view; backward scatters into zeros."""

    is_view, uses_inputs = True, False

    def __init__(self, key):
        self.key = key if any(k is Ellipsis for k in key) else key + (Ellipsis,)

    def forward(self, x):
        self.in_shape = x.shape
        y = x[self.key]
        if any(k is None for k in self.key):
            y = _with_unsqueezed_strides(y, x, self.key)
        return writeable_view(y)

    def backward(self, gy):
        g = xp_of(gy).zeros(self.in_shape, gy.dtype)
        g[self.key] = gy
        return g

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def writeable_view(y):
    """``y``, writeable again where it is a view of an expanded (broadcast) array whose own elements do not
    overlap: numpy marks every view of a broadcast read-only, while torch writes through ``x.expand(2, 3)[1]``
    into ``x``. A view with overlapping elements stays read-only, as does one of read-only memory."""
    if isinstance(y, np.ndarray) and not y.flags.writeable and \
            not any(step == 0 and n > 1 for step, n in zip(y.strides, y.shape)):
        try:
            y.flags.writeable = True
        except ValueError:  # made by as_strided (a diagonal): numpy cannot tell that its memory is writeable
            y = over_root(y)
    return y


def over_root(y):
    """The view ``y`` rebuilt over the array that owns its memory, writeable where that one is (a tensor over a
    bytes object is not)."""
    root = y
    while not isinstance(root, np.ndarray) or root.base is not None:
        root = root.base if isinstance(root, np.ndarray) else getattr(root, "base", None)
        if root is None:
            return y
    if not (root.flags.writeable and root.flags.c_contiguous):
        return y
    offset = y.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return np.ndarray(y.shape, y.dtype, buffer=root, offset=offset, strides=y.strides)


def _with_unsqueezed_strides(y, x, key):
    """``y = x[key]`` with torch's strides for the dims that ``None`` inserted: torch unsqueezes one index item
    at a time, giving the new dim the extent (size * stride) of the dim it lands before, or 1 at the end;
    numpy gives 0. Only ``stride()`` can tell them apart."""
    items = []
    for k in key:
        if k is Ellipsis:
            items.extend([slice(None)] * (x.ndim - sum(k is not None and k is not Ellipsis for k in key)))
        else:
            items.append(k)
    dims = [[n, st // x.itemsize, False] for n, st in zip(x.shape, x.strides)]
    d = 0
    for k in items:
        if k is None:
            dims.insert(d, [1, dims[d][0] * dims[d][1] if d < len(dims) else 1, True])
            d += 1
        elif isinstance(k, slice):
            dims[d][0] = len(range(*k.indices(dims[d][0])))
            dims[d][1] *= k.step or 1
            d += 1
        else:
            del dims[d]
    strides = tuple(n * y.itemsize if inserted else st for (_, n, inserted), st in zip(dims, y.strides))
    return xp_of(y).lib.stride_tricks.as_strided(y, y.shape, strides)


# ---- flips, rolls, triangles, diagonals -------------------------------------------------------------
class Flip(Function):
    """``flip``: a copy laid out as torch lays out its result (the input's layout, ``empty_preserving``); it only
    moves elements, so a bfloat16 input is laid out as itself, not as its widened float32 copy."""

    uses_inputs, moves_only = False, True

    def __init__(self, dims):
        self.dims = dims

    def forward(self, x):
        xp = xp_of(x)
        out = empty_preserving(x, xp, x.dtype)
        out[...] = xp.flip(x, self.dims)
        return out

    def backward(self, gy):
        return xp_of(gy).flip(gy, self.dims)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def flip(input, *order, dims=None):
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    dims = tuple(wrap_dim(d, input.ndim) for d in shape_arg(order, dims, "dims"))
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return Flip(dims if input.ndim else ())(input)  # a 0-d tensor's dim 0 (or -1) flips nothing


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


class Roll(Function):
    """``roll``; its result is channels-last where the input reads so, else row-major, as torch's is (read off
    the input itself: it only moves elements), but row-major where a shift is a whole number of turns (torch's
    cat with an empty piece). ``dims`` None rolls the flattened elements into a row-major result."""

    uses_inputs, moves_only = False, True

    def __init__(self, shifts, dims):
        self.shifts, self.dims = shifts, dims

    def forward(self, x):
        xp = xp_of(x)
        if self.dims is None:
            return xp.roll(x, self.shifts[0]).reshape(x.shape)  # row-major; numpy's of a 0-d array is 1-d
        rolled = xp.roll(x, self.shifts, self.dims)
        if any(s % x.shape[d] == 0 for s, d in zip(self.shifts, self.dims) if x.shape[d]):
            return xp.ascontiguousarray(rolled)  # torch's roll by a whole turn: a cat with an empty piece, row-major
        return in_suggested_format(rolled, x, xp)

    def backward(self, gy):
        if self.dims is None:
            return xp_of(gy).roll(gy, -self.shifts[0]).reshape(gy.shape)
        return xp_of(gy).roll(gy, tuple(-s for s in self.shifts), self.dims)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def roll(input, shifts, dims=None):
    """Rotate elements along ``dims`` (over the flattened tensor when ``dims`` is None)."""
    shifts = (shifts,) if isinstance(shifts, numbers.Integral) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return Roll((int(shifts[0]),), None)(input)
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if input.numel() == 0:  # torch's returns a copy before it reads the dims
        return clone(input)
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return Roll(tuple(int(s) for s in shifts), tuple(wrap_dim(d, input.ndim) for d in dims))(input)


class Triangle(Function):
    """tril/triu over the last two dims; backward applies the same mask."""

    uses_inputs = False

    def __init__(self, upper, diagonal):
        self.upper, self.diagonal = upper, diagonal

    def _apply(self, a):
        xp = xp_of(a)
        return xp.triu(a, self.diagonal) if self.upper else xp.tril(a, self.diagonal)

    def forward(self, x):
        y = self._apply(x)
        if self.inplace:
            x[...] = y
            return x
        return row_major(y)  # torch's result is row-major whatever the input's layout

    def backward(self, gy):
        return self._apply(gy)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def _triangle(input, upper, diagonal, inplace):
    if input.ndim < 2:
        raise RuntimeError(f"{'triu' if upper else 'tril'}: input tensor must have at least 2 dimensions")
    fn = Triangle(upper, int(diagonal))
    fn.inplace = inplace
    return fn(input)


def tril(input, diagonal=0):
    return _triangle(input, False, diagonal, False)


def triu(input, diagonal=0):
    return _triangle(input, True, diagonal, False)


def tril_(input, diagonal=0):
    return _triangle(input, False, diagonal, True)


def triu_(input, diagonal=0):
    return _triangle(input, True, diagonal, True)


def _diag_view(a, offset, dim1, dim2):
    """A writable strided view of the ``offset`` diagonal of ``a`` over ``dim1``/``dim2`` (last dim)."""
    xp = xp_of(a)
    a = xp.moveaxis(a, (dim1, dim2), (-2, -1))
    a = a[..., :, offset:] if offset >= 0 else a[..., -offset:, :]
    n = max(min(a.shape[-2], a.shape[-1]), 0)
    return xp.lib.stride_tricks.as_strided(a, a.shape[:-2] + (n,),
                                           a.strides[:-2] + (a.strides[-2] + a.strides[-1],))


class Diagonal(Function):
    is_view, uses_inputs = True, False

    def __init__(self, offset, dim1, dim2):
        self.args = (offset, dim1, dim2)

    def forward(self, x):
        self.in_shape = x.shape
        return writeable_view(_diag_view(x, *self.args))

    def backward(self, gy):
        g = xp_of(gy).zeros(self.in_shape, gy.dtype)
        _diag_view(g, *self.args)[...] = gy
        return g

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The view of a diagonal over ``dim1``/``dim2``, appended as the last dim."""
    a, b = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal(int(offset), a, b)(input)


class DiagEmbed1d(Function):
    """``diag`` of a vector: a square matrix with the vector on the ``offset`` diagonal."""

    uses_inputs = False

    def __init__(self, offset):
        self.offset = offset

    def forward(self, x):
        return xp_of(x).diag(x, self.offset)

    def backward(self, gy):
        return xp_of(gy).diagonal(gy, self.offset).copy()

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def diag(input, diagonal=0):
    """Vector -> matrix with it on a diagonal; matrix -> copy of a diagonal."""
    if input.ndim == 1:
        return DiagEmbed1d(int(diagonal))(input)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return clone(Diagonal(int(diagonal), 0, 1)(input))


register_method(view)
register_method(view_as)
register_method(reshape)
register_method(reshape_as)
register_method(ravel)
register_method(flatten)
register_method(unflatten)
register_method(squeeze)
register_method(unsqueeze)
register_method(permute)
register_method(transpose)
register_method(transpose, "swapdims")
register_method(swapaxes)
register_method(t)
register_method(property(_T), "T")
register_method(property(_mT), "mT")
register_method(movedim, "movedim", "moveaxis")
register_method(expand)
register_method(expand_as)
register_method(broadcast_to)
register_method(repeat)
register_method(tile)
register_method(repeat_interleave)
register_method(split)
register_method(chunk)
register_method(tensor_split)
register_method(unbind)
register_method(narrow)
register_method(flip)
register_method(fliplr)
register_method(flipud)
register_method(roll)
register_method(tril)
register_method(triu)
register_method(tril_)
register_method(triu_)
register_method(diagonal)
register_method(diag)

__all__ = ["view_as", "reshape", "ravel", "flatten", "unflatten", "squeeze", "unsqueeze",
           "atleast_1d", "atleast_2d", "atleast_3d", "permute", "transpose", "swapaxes", "swapdims",
           "t", "movedim", "moveaxis", "expand_as", "broadcast_to", "broadcast_shapes",
           "broadcast_tensors", "tile", "repeat_interleave", "cat", "concat", "concatenate", "stack",
           "hstack", "vstack", "row_stack", "dstack", "column_stack", "split", "chunk",
           "tensor_split", "unbind", "narrow", "flip", "fliplr", "flipud", "roll", "tril", "triu",
           "diagonal", "diag"]
