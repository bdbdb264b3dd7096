"""Rearranging ops beyond ``shape``'s: rot90, sliding windows (``Tensor.unfold``), diag_embed,
diagflat, split_with_sizes, hsplit/vsplit/dsplit, sum_to_size and fill_diagonal_.

Most are compositions of ``shape``'s views and copies; ``Unfold`` is a strided view of its own.
"""
import numbers

from ..autograd.double_backward import transposed_backward
from ..autograd.function import Function
from ..tensor import register_method
from ._common import one_of, shape_arg, wrap_dim, xp_of
from .. import _dtype, _layout
from .creation import zeros
from .ranges import arange
from .reduction import sum as _sum
from .shape import Diagonal, _narrow_start, chunk, diag, flatten, flip, narrow, split, tensor_split


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the second."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    turns = k % 4
    if turns == 2:
        return flip(input, first, second)
    if turns == 0:
        return input.clone()
    # transposed in place, as torch's: the result is the flip's own tensor, not a view of it
    return flip(input, second if turns == 1 else first).transpose_(first, second)


class Unfold(Function):
    """Windows of ``size`` every ``step`` along ``dim``: a view whose new last dim runs in a window.
    Backward adds each window tap's gradient back (one strided pass per tap)."""

    is_view, uses_inputs = True, False

    def __init__(self, dim, size, step):
        self.dim, self.size, self.step = dim, size, step

    def forward(self, x):
        xp = xp_of(x)
        self.in_shape = x.shape
        base = x.reshape(1) if x.ndim == 0 else x
        count = (base.shape[self.dim] - self.size) // self.step + 1
        shape = base.shape[:self.dim] + (count,) + base.shape[self.dim + 1:] + (self.size,)
        stride = base.strides[self.dim]
        strides = base.strides[:self.dim] + (stride * self.step,) + base.strides[self.dim + 1:] + (stride,)
        windows = xp.lib.stride_tricks.as_strided(base, shape, strides)
        return windows.reshape(self.size) if x.ndim == 0 else windows

    def backward(self, gy):
        xp = xp_of(gy)
        g = xp.zeros(self.in_shape or (1,), gy.dtype)
        windows = gy.reshape(1, self.size) if not self.in_shape else gy
        count = windows.shape[self.dim]
        lead = (slice(None),) * self.dim
        for tap in range(self.size):
            taken = slice(tap, tap + self.step * (count - 1) + 1, self.step)
            g[lead + (taken,)] += windows[..., tap]
        return g.reshape(self.in_shape)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def unfold(input, dimension, size, step):
    """Every window of ``size`` elements, ``step`` apart, along ``dimension`` (``Tensor.unfold``: a
    view; the windows form a new last dim)."""
    d = wrap_dim(dimension, input.ndim)
    length = input.shape[d] if input.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return Unfold(d, int(size), int(step))(input)


class DiagEmbed(Function):
    """A zero tensor with ``input``'s last dim on the ``offset`` diagonal of the plane ``dim1, dim2``."""

    uses_inputs = False

    def __init__(self, offset, dim1, dim2):
        self.args = (offset, dim1, dim2)

    def forward(self, x):
        xp = xp_of(x)
        offset, dim1, dim2 = self.args
        n = x.shape[-1] + abs(offset)
        shape = list(x.shape[:-1])
        for d in sorted((dim1, dim2)):
            shape.insert(d, n)
        out = xp.zeros(tuple(shape), x.dtype)
        Diagonal(offset, dim1, dim2).forward(out)[...] = x
        return out

    def backward(self, gy):
        return Diagonal(*self.args).forward(gy).copy()

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Square matrices (in the plane ``dim1, dim2`` of the result) with ``input``'s last dim on their
    ``offset`` diagonal."""
    ndim = input.ndim + 1
    a, b = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input.ndim == 0:
        raise RuntimeError("diag_embed(): input must be at least 1-dimensional")
    return DiagEmbed(int(offset), a, b)(input)


def diagflat(input, offset=0):
    """``input`` flattened, on the ``offset`` diagonal of a square matrix."""
    return diag(flatten(input), offset)


def block_diag(*tensors):
    """The tensors (scalars, vectors as rows, matrices) along the diagonal of one zero matrix, in the
    promoted dtype."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    dtype = _dtype.result_type(*tensors) if tensors else _dtype.get_default_dtype()
    rows = sum(b.shape[0] for b in blocks) if blocks else 1  # torch's result for no blocks is 1 x 0
    cols = sum(b.shape[1] for b in blocks)
    out = zeros(rows, cols, dtype=dtype, device=tensors[0].device if tensors else None)
    top = left = 0
    for b in blocks:
        block_rows = arange(top, top + b.shape[0]).reshape(-1, 1)
        out = out.index_put((block_rows, arange(left, left + b.shape[1])), b.to(dtype))
        top, left = top + b.shape[0], left + b.shape[1]
    return out


def narrow_copy(input, dim, start, length):
    """A copy of ``input.narrow(dim, start, length)``; its checks are torch's for narrow_copy (a negative length
    reads as exceeding the dim, after start's range)."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d, start = _narrow_start(input, dim, int(start))
    length, n = int(length), input.shape[d]
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return narrow(input, dim, start, length).clone(memory_format=_layout.contiguous_format)


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of the given sizes along ``dim`` (they must add up to its length)."""
    if isinstance(split_sizes, numbers.Integral):
        raise TypeError("split_with_sizes(): argument 'split_sizes' must be a sequence of ints, not int")
    return split(input, list(split_sizes), dim)


def _split_along(name, dim, min_dims):
    def op(input, indices_or_sections=None, *, sections=None, indices=None):
        indices_or_sections = one_of(name, "indices_or_sections", indices_or_sections, sections, indices)
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
                               f"tensor with {input.ndim} dimensions!")
        d = 0 if name == "hsplit" and input.ndim == 1 else dim
        if isinstance(indices_or_sections, numbers.Integral):
            n = input.shape[d]
            if indices_or_sections == 0 or n % indices_or_sections:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of "
                                   f"the dimension {n} is not divisible by the split_size "
                                   f"{indices_or_sections}!")
        return tensor_split(input, indices_or_sections, d)
    op.__name__ = name
    op.__doc__ = f"``tensor_split`` along dim {dim}, into equal sections or at the given indices."
    return op


hsplit = _split_along("hsplit", 1, 1)
vsplit = _split_along("vsplit", 0, 2)
dsplit = _split_along("dsplit", 2, 3)


def sum_to_size(input, *sizes, size=None):
    """The sum of ``input`` over the dims by which it is broadcast from ``sizes`` (or ``size=``)."""
    target = shape_arg(sizes, size, "size")
    lead = input.ndim - len(target)
    expandable = lead >= 0 and all(n == 1 or n == m for n, m in zip(target, input.shape[lead:]))
    if not expandable:
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(input.shape)}}}.")
    if not target:  # torch sums every element, even of a 0-d tensor (an integer one becomes int64)
        return _sum(input)
    out = _sum(input, tuple(range(lead))) if lead else input
    kept = tuple(d for d, n in enumerate(target) if n == 1 and out.shape[d] != 1)
    return _sum(out, kept, keepdim=True) if kept else out


def fill_diagonal_(input, fill_value, wrap=False):
    """Write ``fill_value`` on the main diagonal (all dims equal beyond 2-d); with ``wrap`` a tall
    matrix's diagonal starts again below every square block, as in PyTorch."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    rows, cols = input.shape[0], input.shape[1]
    if input.ndim > 2 or not wrap:
        k = min(input.shape)
        index = arange(k, device=input.device)
        input[(index,) * input.ndim] = fill_value
        return input
    positions = arange(0, rows * cols, cols + 1, device=input.device)
    input[positions // cols, positions % cols] = fill_value
    return input


unsafe_chunk, unsafe_split_with_sizes = chunk, split_with_sizes  # PyTorch's unchecked twins


def unsafe_split(input, split_size, dim=0):
    """``split``'s unchecked twin, with torch's argument names for it."""
    return split(input, split_size, dim)


register_method(unfold)
for _alias, _op in (("unsafe_chunk", chunk), ("unsafe_split", split), ("unsafe_split_with_sizes", split_with_sizes)):
    register_method(_op, _alias)
for _name in ("rot90", "diag_embed", "diagflat", "narrow_copy", "split_with_sizes", "hsplit", "vsplit", "dsplit",
              "sum_to_size", "fill_diagonal_"):
    register_method(globals()[_name], _name)

__all__ = ["rot90", "diag_embed", "diagflat", "block_diag", "narrow_copy", "split_with_sizes", "hsplit", "vsplit",
           "dsplit", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes"]
