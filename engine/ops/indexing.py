"""Indexing: ``x[key]``, ``x[key] = v``, gather/scatter, index_* ops, masks, nonzero, take, meshgrid.

``x[key]`` follows PyTorch: integers, slices, None and Ellipsis are applied first as a view
(``Slice``); integer tensors and boolean masks are then applied to that view as numpy advanced
indexing, which copies. Backward of every gather-like op accumulates with ``add.at`` so that
repeated indices add up.
"""
import copy
import numbers
import operator

import numpy as np

from .. import _dtype, _layout
from .._layout import RowMajorResults, copy_preserving_format
from .._device import device_of, is_cuda_array, move
from ..autograd import tracing
from ..autograd.double_backward import constant, masked, transposed_backward
from ..autograd.function import Function
from ..tensor import Tensor, _new, register_method
from ._common import as_operand, check_broadcast, check_broadcast_shapes, masked_grad, wrap_dim, xp_of
from .linalg_out import write_result
from .python_data import _C_TYPE_NAMES, _fits_int
from .shape import Slice, broadcast_shapes, expand, reshape, writeable_view
from .tensor_index import NonZero, TensorIndex
from ..amp import autocast_mode

_INDEX_DTYPE_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def fit_scalar(value, dtype):
    """A Python number written into a tensor of integer ``dtype`` as torch writes it: a negative integer wraps into
    an unsigned type (-1 is 255 in uint8) when its magnitude fits, else torch's overflow error; others pass."""
    np_dtype = np.dtype(getattr(dtype, "np", dtype))
    if np_dtype.kind not in "iu" or isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return value
    if not _fits_int(value, np_dtype):
        raise RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES[np_dtype.name]} without overflow")
    if np_dtype.kind == "u" and value < 0 and isinstance(value, numbers.Integral):
        return int(value) % (1 << (8 * np_dtype.itemsize))
    return value


def _as_array(y, like):
    """numpy returns scalars for 0-d results of advanced indexing; keep arrays."""
    return xp_of(like).asarray(y) if isinstance(y, np.generic) else y


# ---- key parsing -----------------------------------------------------------------------------
def _is_sequence_key(key):
    """PyTorch treats a list holding tensors, sequences, slices, None or ... as a tuple of indices."""
    return any(isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis for k in key)


def _index_item(k):
    """One index item normalised: None, Ellipsis, slice (of ints), int, or an int/bool array."""
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, slice):
        return slice(*(None if b is None else operator.index(b) for b in (k.start, k.stop, k.step)))
    if isinstance(k, (bool, np.bool_)):
        return np.asarray(bool(k))
    if isinstance(k, numbers.Integral):
        return int(k)
    if isinstance(k, Tensor):
        arr = k._data
    elif isinstance(k, (list, tuple, range)):
        arr = np.asarray(k) if len(k) else np.zeros(0, np.int64)
        if arr.dtype.kind in "iu" and arr.dtype != np.uint8:
            arr = arr.astype(np.int64)
    elif isinstance(k, np.ndarray) or is_cuda_array(k):
        arr = k
    else:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(k).__name__})")
    if arr.dtype == np.bool_ or arr.dtype == np.uint8:
        return arr.astype(np.bool_, copy=False)
    if arr.dtype not in (np.int64, np.int32):
        raise IndexError(_INDEX_DTYPE_ERROR)
    if arr.ndim == 0 and isinstance(k, Tensor):
        return int(arr)
    return arr


def _key_on(key, like):
    """An advanced key with its index arrays on the device of array ``like`` (lists become host arrays)."""
    if key is None or key is Ellipsis or device_of(like).type == "cpu":
        return key
    return tuple(move(k, device_of(like)) if isinstance(k, np.ndarray) else k for k in key)


def _consumed(k):
    if k is None or k is Ellipsis:
        return 0
    if isinstance(k, (int, slice)):
        return 1
    return k.ndim if k.dtype == np.bool_ else 1


def parse_key(shape, key):
    """Split ``key`` for a tensor of ``shape`` into a basic key and advanced indices.

    Returns ``(basic, advanced)``: ``basic`` is a tuple of ints/slices/None for a view, and
    ``advanced`` a tuple over the view's dims (slices and index arrays), or None when absent.
    """
    if not shape and isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    if not shape and isinstance(key, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if isinstance(key, list) and _is_sequence_key(key):
        key = tuple(key)
    elif not isinstance(key, tuple):
        key = (key,)
    items = [_index_item(k) for k in key]
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(k) for k in items)
    if used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    places = list(range(len(items)))  # each item's place in the key: torch's error names it as the dimension
    at = next((i for i, k in enumerate(items) if k is Ellipsis), None)
    if at is not None:
        items[at:at + 1] = [slice(None)] * (len(shape) - used)
        places[at:at + 1] = [at] * (len(shape) - used)
    basic, adv = [], {}
    d = v = 0
    for k, place in zip(items, places):
        if k is None:
            basic.append(None)
            v += 1
        elif isinstance(k, int):
            if not -shape[d] <= k < shape[d]:
                raise IndexError(f"index {k} is out of bounds for dimension {place} with size {shape[d]}")
            basic.append(k)
            d += 1
        elif isinstance(k, slice):
            basic.append(k)
            d, v = d + 1, v + 1
        elif k.dtype != np.bool_:
            basic.append(slice(None))
            adv[v] = k
            d, v = d + 1, v + 1
        elif k.ndim == 0:
            basic.append(None)
            adv[v] = xp_of(k).zeros(1 if bool(k) else 0, np.int64)
            v += 1
        else:
            _check_mask(k, shape, d)
            basic.extend([slice(None)] * k.ndim)
            for j, idx in enumerate(xp_of(k).nonzero(k)):
                adv[v + j] = idx
            d, v = d + k.ndim, v + k.ndim
    if not adv:
        return tuple(basic), None
    last = max(adv)
    return tuple(basic), tuple(adv.get(i, slice(None)) for i in range(last + 1))


def _check_mask(mask, shape, d):
    for j, n in enumerate(mask.shape):
        if shape[d + j] != n:
            raise IndexError(f"The shape of the mask {_shape_str(mask.shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {_shape_str(shape)} at index {d + j}")


def _is_identity(basic):
    return all(isinstance(k, slice) and k == slice(None) for k in basic)


def _torch_index_error(err, key=None, shape=None):
    """numpy's IndexError for the advanced ``key`` into an array of ``shape`` worded as PyTorch's: index arrays
    that do not broadcast (their shapes), or an index out of range (torch counts the dimension among the indexed
    dims only, as its kernel moves them to the front)."""
    if key is None:
        return IndexError(str(err).replace(" axis ", " dimension "))
    arrays = [(axis, k) for axis, k in enumerate(key) if not isinstance(k, slice)]
    if "could not be broadcast" in str(err):
        shapes = ", ".join(_shape_str(k.shape) for _, k in arrays)
        return IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}")
    for rank, (axis, k) in enumerate(arrays):
        n = shape[axis]
        outside = ((k < -n) | (k >= n)).reshape(-1)
        if bool(outside.any()):
            bad = int(k.reshape(-1)[outside][0])
            return IndexError(f"index {bad} is out of bounds for dimension {rank} with size {n}")
    return IndexError(str(err).replace(" axis ", " dimension "))


# ---- x[key] ------------------------------------------------------------------------------------
class AdvancedIndex(Function):
    """Advanced (integer array) indexing: a copy; backward accumulates repeated indices."""

    uses_inputs = False

    def __init__(self, key):
        self.key = key

    def forward(self, x):
        self.in_shape = x.shape
        self.key = _key_on(self.key, x)
        try:
            out = _as_array(x[self.key], x)
        except IndexError as err:
            raise _torch_index_error(err, self.key, x.shape) from None
        if x.flags.c_contiguous and out.flags.c_contiguous or out.ndim < 2:
            return out  # torch's layout too: the common case costs two flag checks
        order = _index_result_order(x, self.key, out.shape)
        if _layout.memory_order(out) == order:
            return out
        return _layout.in_order(out, order, xp_of(out))

    def backward(self, gy):
        g = xp_of(gy).zeros(self.in_shape, gy.dtype)
        xp_of(gy).add.at(g, self.key, gy)
        return g

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def _index_result_order(x, key, shape):
    """The order (innermost first) of the dims of ``x[key]``'s result as torch lays it out: its index kernel runs a
    TensorIterator over ``x`` viewed with the indexed dims (moved to the front when not adjacent) replaced by the
    broadcast index shape at stride 0, and over each broadcast index viewed in that place; the iterator orders the
    dims by those operands' strides (``_layout.pointwise_order``)."""
    axes = [axis for axis, k in enumerate(key) if not isinstance(k, slice)]
    xp = xp_of(x)
    indices = xp.broadcast_arrays(*[key[axis] for axis in axes])
    if axes != list(range(axes[0], axes[-1] + 1)):
        x = x.transpose(axes + [d for d in range(x.ndim) if d not in axes])
        axes = list(range(len(axes)))
    before, after = axes[0], x.ndim - axes[-1] - 1
    index_shape = indices[0].shape
    strided = xp.lib.stride_tricks.as_strided
    source = strided(x, x.shape[:before] + index_shape + x.shape[x.ndim - after:],
                     x.strides[:before] + (0,) * len(index_shape) + x.strides[x.ndim - after:])
    placed = [strided(i, (1,) * before + index_shape + (1,) * after, (0,) * before + i.strides + (0,) * after)
              for i in indices]
    return _layout.pointwise_order([source, *placed], shape)


def _index_on(index, tensor):
    """An index tensor on the CPU moved to CUDA ``tensor``'s device (torch takes such indices); else itself."""
    if tensor.device.type == "cuda" and index.device.type == "cpu":
        return index.to(tensor.device)
    return index


def getitem(self, key):
    """``self[key]`` with PyTorch's semantics: basic parts give a view, tensors/masks a copy.

    While a trace records, index tensors are the op's arguments (``TensorIndex``), not frozen arrays; index tensors
    on the CPU index a CUDA tensor as in eager mode and torch (copied to its device: a step a CUDA graph cannot
    capture, so models keep their constant indices on their device)."""
    if tracing.active is not None:
        items = tuple(key) if isinstance(key, list) and _is_sequence_key(key) else key if isinstance(key, tuple) \
            else (key,)
        positions = [i for i, k in enumerate(items) if isinstance(k, Tensor)]
        if positions:
            template = tuple(None if i in positions else k for i, k in enumerate(items))
            indices = [_index_on(items[i], self) for i in positions]
            return TensorIndex(template, positions)(self, *indices)
    basic, adv = parse_key(tuple(self.shape), key)
    out = self if _is_identity(basic) and adv is not None else Slice(basic)(self)
    return out if adv is None else AdvancedIndex(adv)(out)


class IndexPut(Function):
    """``x[key] = v`` / ``x.index_put_(indices, v, accumulate)``: writes through the basic view."""

    uses_inputs = False
    writes_a_region = True

    def __init__(self, basic, adv, accumulate=False, inplace=True):
        self.basic = basic + (Ellipsis,)
        self.adv, self.accumulate, self.inplace = adv, accumulate, inplace

    def _region(self, a):
        """The view of ``a`` that the advanced key addresses (or the written region itself)."""
        return writeable_view(a[self.basic])

    def forward(self, x, value):
        out = x if self.inplace else copy_preserving_format(x, None, xp_of(x))  # x's layout, as torch's clone
        view = self._region(out)
        self.adv = _key_on(self.adv, x)
        key = self.adv if self.adv is not None else Ellipsis
        if not isinstance(value, numbers.Number):
            self.value_shape = value.shape
            value = value.astype(x.dtype, copy=False)
        try:
            if self.accumulate:
                xp_of(x).add.at(view, key, value)
            else:
                view[key] = value
        except IndexError as err:
            raise _torch_index_error(err, self.adv, view.shape) from None
        except ValueError:
            if isinstance(view, np.ndarray) and not view.flags.writeable:  # an expanded tensor (see writeable_view)
                raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to "
                                   "a single memory location. Please clone() the tensor before performing the "
                                   "operation.") from None
            target = _as_array(view[key], x).shape
            raise RuntimeError(f"shape mismatch: value tensor of shape {_shape_str(value.shape)} cannot "
                               f"be broadcast to indexing result of shape {_shape_str(target)}") from None
        return out

    def backward(self, gy):
        key = self.adv if self.adv is not None else Ellipsis
        gx = gv = None
        if self.needs_input_grad[0]:
            gx = gy
            if not self.accumulate:
                gx = gy.copy()
                self._region(gx)[key] = 0
        if self.needs_input_grad[1]:
            gv = _as_array(self._region(gy)[key], gy)
            lead = len(self.value_shape) - gv.ndim
            if lead > 0:
                gv = gv.reshape((1,) * lead + gv.shape)
        return gx, gv

    def backward_tensors(self, gy):
        """Linear in ``gy`` with the key as data: the old tensor's gradient is this op writing zeros (out of
        place), the value's a read at the key (a view and an advanced index)."""
        gx = gv = None
        if self.needs_input_grad[0]:
            gx = gy
            if not self.accumulate:
                node = copy.copy(self)
                node.inplace = False
                gx = node(gy, 0.0)
        if self.needs_input_grad[1]:
            gv = Slice(self.basic)(gy)
            if self.adv is not None:
                gv = AdvancedIndex(self.adv)(gv)
            lead = len(self.value_shape) - gv.ndim
            if lead > 0:
                gv = gv.reshape((1,) * lead + tuple(gv.shape))
        return gx, gv


def setitem(self, key, value):
    """``self[key] = value`` (in place; differentiable w.r.t. both the old tensor and ``value``)."""
    basic, adv = parse_key(tuple(self.shape), key)
    if not isinstance(value, Tensor):
        value = fit_scalar(value, self.dtype) if isinstance(value, numbers.Number) else as_operand(value, like=self)
    elif value.device != self.device and (adv is None or value.ndim == 0):
        value = value.to(self.device)  # as torch: a slice is copied into across devices, a 0-dim value anywhere
    IndexPut(basic, adv)(self, value)


def index_put_(input, indices, values, accumulate=False):
    return _index_put(input, indices, values, accumulate, True)


def index_put(input, indices, values, accumulate=False):
    return _index_put(input, indices, values, accumulate, False)


def _index_put(input, indices, values, accumulate, inplace):
    basic, adv = parse_key(tuple(input.shape), tuple(indices))
    values = as_operand(values, like=input)
    if isinstance(values, Tensor) and values.dtype is not input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{input.dtype.title} for the destination and {values.dtype.title} for "
                           "the source.")
    return IndexPut(basic, adv, accumulate, inplace)(input, values)


def select(input, dim, index):
    """The view ``input[..., index, ...]`` along ``dim`` (the dim is removed)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    n, index = input.shape[d], int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {_shape_str(input.shape)} at "
                         f"dimension {d}")
    return getitem(input, (slice(None),) * d + (index,))


# ---- gather / scatter ----------------------------------------------------------------------------
def _index_array(index, name):
    if not isinstance(index, Tensor):
        index = as_operand(index)
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
    return index


def _check_bounds(idx, size, dim, name=""):
    """PyTorch's error for an index outside ``[0, size)`` (negative indices are rejected)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise RuntimeError(f"{name}index {bad} is out of bounds for dimension {dim} with size {size}")


def _check_along(name, input_shape, dim, index_shape, src_shape=None):
    if len(index_shape) != len(input_shape) and not (len(index_shape) <= 1 and len(input_shape) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, n in enumerate(index_shape):
        if d != dim and d < len(input_shape) and n > input_shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{_shape_str(index_shape)} to be no larger than self "
                               f"{_shape_str(input_shape)} apart from dimension {dim}")
        if src_shape is not None and d < len(src_shape) and n > src_shape[d]:
            raise RuntimeError(f"Expected index {_shape_str(index_shape)} to be no larger than src "
                               f"{_shape_str(src_shape)} apart from dimension {dim}")


def _along_key(index, dim):
    """The advanced-index tuple addressing ``a[i][j][index[i][j][k]]...`` along ``dim``."""
    xp = xp_of(index)
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


def _head(a, shape):
    """The leading block of ``a`` with ``shape``."""
    return a[tuple(slice(0, n) for n in shape)]


def _into_head(g, shape):
    """The tensor ``g`` as the leading block of zeros of ``shape`` (``_head``'s transpose, differentiably)."""
    if tuple(g.shape) == tuple(shape):
        return g
    node = Slice(tuple(slice(0, n) for n in g.shape))
    node.in_shape = tuple(shape)
    return transposed_backward(node, g)


def _zeros_like_meta(g, shape):
    """Zeros of ``shape`` with the gradient tensor ``g``'s dtype and device, as a constant."""
    return constant(xp_of(g._data).zeros(shape, g._data.dtype))


class Gather(RowMajorResults, Function):
    """``gather``; its result is row-major whatever the layouts of input and index, as torch's is."""

    uses_inputs = False

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x, index):
        self.in_shape = x.shape
        flat = index.reshape(index.shape or (1,))
        self.key, self.index_shape = _along_key(flat, self.dim), flat.shape
        return x.reshape(x.shape or (1,))[self.key].reshape(index.shape)

    def backward(self, gy):
        xp = xp_of(gy)
        g = xp.zeros(self.in_shape or (1,), gy.dtype)
        xp.add.at(g, self.key, gy.reshape(self.index_shape))
        return g.reshape(self.in_shape), None

    def backward_tensors(self, gy):
        zeros = _zeros_like_meta(gy, self.in_shape or (1,))
        g = Scatter(self.dim, "add", False)(zeros, constant(self.key[self.dim]), gy.reshape(self.index_shape))
        return g.reshape(self.in_shape), None


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """``out[i][j] = input[i][index[i][j]]`` along ``dim`` (index may be smaller than input)."""
    index = _index_array(index, "gather")
    d = wrap_dim(dim, input.ndim)
    _check_along("gather", tuple(input.shape), d, tuple(index.shape))
    _check_bounds(index._data, input.shape[d] if input.ndim else 1, d)
    return write_result(Gather(d)(input, index), out, exact=True)


class Scatter(Function):
    """scatter / scatter_add (out of place or in place): write or add ``src`` at ``index``."""

    uses_inputs = False

    def __init__(self, dim, reduce, inplace):
        self.dim, self.reduce, self.inplace = dim, reduce, inplace

    def forward(self, x, index, src):
        out = x if self.inplace else x.copy()
        self.key = _along_key(index, self.dim)
        self.index_shape = index.shape
        if not isinstance(src, numbers.Number):
            self.src_shape = src.shape
            src = _head(src, index.shape)
        xp = xp_of(x)
        if self.reduce == "add":
            xp.add.at(out, self.key, xp.broadcast_to(xp.asarray(src, out.dtype), index.shape))
        elif self.reduce == "multiply":
            xp.multiply.at(out, self.key, xp.broadcast_to(xp.asarray(src, out.dtype), index.shape))
        else:
            out[self.key] = src
        return out

    def backward(self, gy):
        if self.reduce == "multiply":
            raise RuntimeError("derivative for aten::scatter is not implemented")
        gx = gsrc = None
        if self.needs_input_grad[0]:
            gx = gy
            if self.reduce is None:
                gx = gy.copy()
                gx[self.key] = 0
        if self.needs_input_grad[2]:
            gsrc = xp_of(gy).zeros(self.src_shape, gy.dtype)
            _head(gsrc, self.index_shape)[...] = gy[self.key]
        return gx, None, gsrc

    def backward_tensors(self, gy):
        if self.reduce == "multiply":
            raise RuntimeError("derivative for aten::scatter is not implemented")
        index = constant(self.key[self.dim])
        gx = gsrc = None
        if self.needs_input_grad[0]:
            gx = gy if self.reduce == "add" else Scatter(self.dim, None, False)(gy, index, 0.0)
        if self.needs_input_grad[2]:
            gsrc = _into_head(Gather(self.dim)(gy, index), self.src_shape)
        return gx, None, gsrc


def _scatter(input, dim, index, src, reduce, inplace, name):
    index = _index_array(index, name)
    d = wrap_dim(dim, input.ndim)
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        if src.dtype is not input.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
        _check_along(name, tuple(input.shape), d, tuple(index.shape), tuple(src.shape))
    else:
        src = as_operand(fit_scalar(src, input.dtype))
        _check_along(name, tuple(input.shape), d, tuple(index.shape))
    _check_bounds(index._data, input.shape[d], d)
    return Scatter(d, reduce, inplace)(input, index, src)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """Out-of-place scatter of a tensor ``src`` or a scalar ``value`` (a 0-dim tensor as ``value=`` is the scalar
    it holds, as torch reads it)."""
    return _scatter(input, dim, index, _scalar_value(value) if src is None else src, reduce, False, "scatter")


def scatter_(input, dim, index, src=None, value=None, *, reduce=None):
    return _scatter(input, dim, index, _scalar_value(value) if src is None else src, reduce, True, "scatter")


def _scalar_value(value):
    return value.item() if isinstance(value, Tensor) and value.ndim == 0 else value


def scatter_add(input, dim, index, src):
    return _scatter(input, dim, index, src, "add", False, "scatter_add")


def scatter_add_(input, dim, index, src):
    return _scatter(input, dim, index, src, "add", True, "scatter_add")


def take_along_dim(input, indices, dim=None):
    """gather with broadcasting between ``input`` and ``indices`` outside ``dim``."""
    if dim is None:
        return gather(reshape(input, -1), 0, reshape(indices, -1))
    if input.ndim != indices.ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {input.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    d = wrap_dim(dim, input.ndim)
    in_shape, idx_shape = list(input.shape), list(indices.shape)
    in_shape[d] = idx_shape[d] = 1
    check_broadcast_shapes(tuple(in_shape), tuple(idx_shape))
    shape = broadcast_shapes(tuple(in_shape), tuple(idx_shape))
    in_shape, idx_shape = list(shape), list(shape)
    in_shape[d], idx_shape[d] = input.shape[d], indices.shape[d]
    return gather(expand(input, in_shape), d, expand(indices, idx_shape))


# ---- index_* along one dim ------------------------------------------------------------------------
def _dim_index(input, dim, index, name):
    """Check a 1-d index along ``dim``; returns the wrapped dim and the index tensor. An index out of range raises
    each op's error as torch words it; index_fill takes negative indices (they count from the end), the others do
    not; the writing ops take any index into a tensor without elements (they write nothing)."""
    index = _index_array(index, name)
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    d = wrap_dim(dim, input.ndim)
    size, idx = input.shape[d] if input.ndim else 1, index._data
    if idx.size == 0 or (input.numel() == 0 and size and name != "index_select"):  # writes nothing: as torch's
        return d, index
    low = -size if name == "index_fill_" else 0
    outside = (idx < low) | (idx >= size)
    if bool(outside.any()):
        bad = int(idx.reshape(-1)[outside.reshape(-1)][0])
        where = f"index {bad} is out of bounds for dimension {d} with size {size}"
        if name == "index_select":
            raise IndexError("index out of range in self")
        if name in ("index_add", "index_add_"):
            raise RuntimeError(where)
        raise IndexError(f"{name}(): {where}" if name == "index_copy_" else where)
    if low < 0 and bool((idx < 0).any()):
        index = _new(idx % size)
    return d, index


def _lead(dim):
    return (slice(None),) * dim


class IndexSelect(Function):
    uses_inputs = False

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x, index):
        self.in_shape, self.index = x.shape, index.reshape(-1)
        return xp_of(x).take(x, self.index, axis=self.dim)

    def backward(self, gy):
        g = xp_of(gy).zeros(self.in_shape, gy.dtype)
        xp_of(gy).add.at(g, _lead(self.dim) + (self.index,), gy)
        return g, None

    def backward_tensors(self, gy):
        return IndexAdd(self.dim, 1, False)(_zeros_like_meta(gy, self.in_shape), constant(self.index), gy), None


def index_select(input, dim, index, *, out=None):
    """The entries ``index`` along ``dim`` (a copy)."""
    d, index = _dim_index(input, dim, index, "index_select")
    return write_result(IndexSelect(d)(input, index), out, exact=True)


class IndexAdd(Function):
    """``out[..., index[i], ...] += alpha * source[..., i, ...]`` (repeated indices add up)."""

    uses_inputs = False

    def __init__(self, dim, alpha, inplace):
        self.dim, self.alpha, self.inplace = dim, alpha, inplace

    def forward(self, x, index, source):
        out = x if self.inplace else x.copy()
        self.index, self.source_shape = index.reshape(-1), source.shape
        src = source * self.alpha if self.alpha != 1 else source
        if out.size:  # a tensor without elements takes any index (see _dim_index)
            xp_of(x).add.at(out, _lead(self.dim) + (self.index,), src)
        return out

    def backward(self, gy):
        gsrc = None
        if self.needs_input_grad[2] and not gy.size:  # nothing was written (the index was not checked)
            gsrc = xp_of(gy).zeros(self.source_shape, gy.dtype)
        elif self.needs_input_grad[2]:
            gsrc = xp_of(gy).take(gy, self.index, axis=self.dim)
            if self.alpha != 1:
                gsrc = gsrc * self.alpha
        return gy, None, gsrc

    def backward_tensors(self, gy):
        gsrc = None
        if self.needs_input_grad[2]:
            gsrc = IndexSelect(self.dim)(gy, constant(self.index))
            if self.alpha != 1:
                gsrc = gsrc * self.alpha
        return gy, None, gsrc


def _index_add(input, dim, index, source, alpha, inplace):
    name = "index_add_" if inplace else "index_add"
    d, index = _dim_index(input, dim, index, name)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_add_(): self ({input.dtype.title}) and source "
                           f"({source.dtype.title}) must have the same scalar type")
    n = source.shape[d] if source.ndim else 1
    if index.numel() != n:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({n}), for dim: {d}")
    return IndexAdd(d, alpha, inplace)(input, index, source)


def index_add(input, dim, index, source, *, alpha=1):
    return _index_add(input, dim, index, source, alpha, False)


def index_add_(input, dim, index, source, *, alpha=1):
    return _index_add(input, dim, index, source, alpha, True)


class IndexCopy(Function):
    """``out[..., index[i], ...] = source[..., i, ...]``."""

    uses_inputs = False

    def __init__(self, dim, inplace):
        self.dim, self.inplace = dim, inplace

    def forward(self, x, index, source):
        out = x if self.inplace else x.copy()
        self.key, self.source_shape = _lead(self.dim) + (index.reshape(-1),), source.shape
        if out.size:
            out[self.key] = source
        return out

    def backward(self, gy):
        if not gy.size:  # nothing was written (the index was not checked)
            return gy, None, xp_of(gy).zeros(self.source_shape, gy.dtype) if self.needs_input_grad[2] else None
        gx = gsrc = None
        if self.needs_input_grad[0]:
            gx = gy.copy()
            gx[self.key] = 0
        if self.needs_input_grad[2]:
            gsrc = gy[self.key]
        return gx, None, gsrc

    def backward_tensors(self, gy):
        index = constant(self.key[-1])
        gsrc = IndexSelect(self.dim)(gy, index)
        gx = IndexCopy(self.dim, False)(gy, index, constant(xp_of(gy._data).zeros_like(gsrc._data))) \
            if self.needs_input_grad[0] else None
        return gx, None, gsrc if self.needs_input_grad[2] else None


def _index_copy(input, dim, index, source, inplace):
    d, index = _dim_index(input, dim, index, "index_copy_")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got "
                           f"(self) {input.dtype.title} and (source) {source.dtype.title}")
    return IndexCopy(d, inplace)(input, index, source)


@autocast_mode.policy(cpu=autocast_mode.PROMOTE)
def index_copy(input, dim, index, source):
    return _index_copy(input, dim, index, source, False)


def index_copy_(input, dim, index, source):
    return _index_copy(input, dim, index, source, True)


class IndexFill(Function):
    """``out[..., index, ...] = value`` (a scalar or a 0-d tensor)."""

    uses_inputs = False

    def __init__(self, dim, inplace):
        self.dim, self.inplace = dim, inplace

    def forward(self, x, index, value):
        out = x if self.inplace else _layout.copy_preserving(x, xp_of(x), x.dtype)  # torch's clone
        self.key = _lead(self.dim) + (xp_of(index).unique(index.reshape(-1)),)
        if out.size:
            out[self.key] = value
        return out

    def backward(self, gy):
        if not gy.size:  # nothing was written (the index was not checked)
            return gy, None, xp_of(gy).zeros((), gy.dtype) if self.needs_input_grad[2] else None
        gx = gv = None
        if self.needs_input_grad[0]:
            gx = gy.copy()
            gx[self.key] = 0
        if self.needs_input_grad[2]:
            gv = xp_of(gy).asarray(gy[self.key].sum())
        return gx, None, gv

    def backward_tensors(self, gy):
        index = constant(self.key[-1])
        gx = IndexFill(self.dim, False)(gy, index, 0.0) if self.needs_input_grad[0] else None
        gv = IndexSelect(self.dim)(gy, index).sum() if self.needs_input_grad[2] else None
        return gx, None, gv


def _index_fill(input, dim, index, value, inplace):
    d, index = _dim_index(input, dim, index, "index_fill_")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    return IndexFill(d, inplace)(input, index, fit_scalar(value, input.dtype))


def index_fill(input, dim, index, value):
    return _index_fill(input, dim, index, value, False)


def index_fill_(input, dim, index, value):
    return _index_fill(input, dim, index, value, True)


# ---- masks ------------------------------------------------------------------------------------------
def _check_bool_mask(mask, name):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        got = {"float32": "float", "float64": "double", "int64": "long", "int32": "int"}.get(got, got)
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {got}")


def _mask_shape(input, mask, inplace):
    """The result shape: input's own shape in place (the mask must fit it), else the broadcast; torch's errors (its
    out-of-place ops broadcast the mask first, its in-place ones the input)."""
    if inplace:
        check_broadcast(input, mask)
    else:
        check_broadcast(mask, input)
    shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    if inplace and shape != tuple(input.shape):
        raise RuntimeError(f"output with shape {_shape_str(input.shape)} doesn't match the broadcast shape "
                           f"{_shape_str(shape)}")
    return shape


class MaskedFill(Function):
    uses_inputs = False

    def __init__(self, shape, inplace):
        self.shape, self.inplace = shape, inplace

    def forward(self, x, mask, value):
        xp = xp_of(x)
        out = x if self.inplace else xp.array(xp.broadcast_to(x, self.shape), order="C")  # row-major, as torch's
        self.mask = xp.broadcast_to(mask, self.shape)
        out[self.mask] = value
        return out

    def backward(self, gy):
        gv = xp_of(gy).asarray(gy[self.mask].sum()) if self.needs_input_grad[2] else None
        return masked_grad(gy, ~self.mask), None, gv

    def backward_tensors(self, gy):
        gv = masked(gy, self.mask).sum() if self.needs_input_grad[2] else None
        return masked(gy, ~self.mask), None, gv


def _masked_fill(input, mask, value, inplace):
    _check_bool_mask(mask, "masked_fill_")
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    shape = _mask_shape(input, mask, inplace)
    return MaskedFill(shape, inplace)(input, mask, fit_scalar(value, input.dtype))


def masked_fill(input, mask, value):
    """``value`` where ``mask`` is True, ``input`` elsewhere (mask broadcasts)."""
    return _masked_fill(input, mask, value, False)


def masked_fill_(input, mask, value):
    return _masked_fill(input, mask, value, True)


class MaskedSelect(Function):
    uses_inputs = False

    def forward(self, x, mask):
        xp = xp_of(x)
        shape = np.broadcast_shapes(x.shape, mask.shape)
        self.mask = xp.broadcast_to(tracing.vary_mask(mask), shape)  # an export's count stays dynamic
        return xp.broadcast_to(x, shape)[self.mask]

    def backward(self, gy):
        g = xp_of(gy).zeros(self.mask.shape, gy.dtype)
        g[self.mask] = gy
        return g, None

    def backward_tensors(self, gy):
        zeros = _zeros_like_meta(gy, self.mask.shape)
        return MaskedScatter(self.mask.shape, False)(zeros, constant(self.mask), gy), None


def masked_select(input, mask):
    """The entries of ``input`` where the (broadcast) mask is True, as a 1-d tensor."""
    _check_bool_mask(mask, "masked_select:")
    check_broadcast(mask, input)
    return MaskedSelect()(input, mask)


class MaskedScatter(Function):
    """Copy ``source``'s leading elements, in order, to where ``mask`` is True."""

    uses_inputs = False

    def __init__(self, shape, inplace):
        self.shape, self.inplace = shape, inplace

    def forward(self, x, mask, source):
        xp = xp_of(x)
        out = x if self.inplace else xp.array(xp.broadcast_to(x, self.shape), order="C")  # row-major, as torch's
        self.mask = xp.broadcast_to(mask, self.shape)
        self.count = int(self.mask.sum())
        if source.size < self.count:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        self.source_shape = source.shape
        out[self.mask] = source.reshape(-1)[:self.count]
        return out

    def backward(self, gy):
        gsrc = None
        if self.needs_input_grad[2]:
            xp = xp_of(gy)
            gsrc = xp.zeros(int(np.prod(self.source_shape)), gy.dtype)
            gsrc[:self.count] = gy[self.mask]
            gsrc = gsrc.reshape(self.source_shape)
        return masked_grad(gy, ~self.mask), None, gsrc

    def backward_tensors(self, gy):
        gsrc = None
        if self.needs_input_grad[2]:
            picked = MaskedSelect()(gy, constant(self.mask))
            gsrc = _into_head(picked, (int(np.prod(self.source_shape)),)).reshape(self.source_shape)
        return masked(gy, ~self.mask), None, gsrc


def _masked_scatter(input, mask, source, inplace):
    _check_bool_mask(mask, "masked_scatter_")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{input.dtype.title} and {source.dtype.title}")
    shape = _mask_shape(input, mask, inplace)
    return MaskedScatter(shape, inplace)(input, mask, source)


def masked_scatter(input, mask, source):
    return _masked_scatter(input, mask, source, False)


def masked_scatter_(input, mask, source):
    return _masked_scatter(input, mask, source, True)


# ---- positions ------------------------------------------------------------------------------------
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero entries: an (N, ndim) int64 tensor, or one 1-d tensor per dim."""
    return NonZero(bool(as_tuple))(input)


def argwhere(input):
    return nonzero(input)


class Take(Function):
    uses_inputs = False

    def forward(self, x, index):
        self.in_shape, self.index = x.shape, index
        return _as_array(x.reshape(-1)[index], x)

    def backward(self, gy):
        xp = xp_of(gy)
        g = xp.zeros(int(np.prod(self.in_shape)), gy.dtype)
        xp.add.at(g, self.index, gy)
        return g.reshape(self.in_shape), None

    def backward_tensors(self, gy):
        zeros = _zeros_like_meta(gy, (int(np.prod(self.in_shape)),))
        return IndexPut((), (self.index,), accumulate=True, inplace=False)(zeros, gy).reshape(self.in_shape), None


def take(input, index):
    """``input`` treated as 1-d, read at ``index`` (negative indices count from the end)."""
    index = _index_array(index, "take")
    n = input.numel()
    idx = index._data
    if idx.size and (int(idx.min()) < -n or int(idx.max()) >= n):
        bad = int(idx.max()) if int(idx.max()) >= n else int(idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return Take()(input, index)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids (expanded views) from 1-d tensors; ``indexing='xy'`` swaps the first two."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: "
                           f"{indexing}")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    n = len(tensors)
    order = list(range(n))
    if indexing == "xy" and n >= 2:
        order[0], order[1] = 1, 0
    shape = [0] * n
    for i, t in enumerate(tensors):
        shape[order[i]] = t.numel()
    out = []
    for i, t in enumerate(tensors):
        view_shape = [1] * n
        view_shape[order[i]] = -1
        out.append(expand(reshape(t, view_shape), shape))
    return tuple(out)


register_method(getitem, "__getitem__")
register_method(setitem, "__setitem__")
for _name in ("index_put_", "index_put", "select", "gather", "scatter", "scatter_", "scatter_add",
              "scatter_add_", "take_along_dim", "index_select", "index_add", "index_add_",
              "index_copy", "index_copy_", "index_fill", "index_fill_", "masked_fill",
              "masked_fill_", "masked_select", "masked_scatter", "masked_scatter_", "nonzero",
              "argwhere", "take"):
    register_method(globals()[_name], _name)

__all__ = ["index_put", "index_put_", "select", "gather", "scatter", "scatter_add", "take_along_dim",
           "index_select", "index_add", "index_copy", "index_fill", "masked_fill", "masked_select",
           "masked_scatter", "nonzero", "argwhere", "take", "meshgrid"]
