"""Math on sparse tensors with torch's semantics: scalar and elementwise products, sums of sparse and dense
operands, sparse @ dense products, reductions, softmax over the specified entries, and the index ops."""
import builtins
import numbers

from .. import _dtype
from .._device import array_module
from ..tensor import Tensor, _new
from . import _autograd as F, _unary
from ._compressed import CompressedArray, from_coo
from ._coo import COOArray
from .tensor import SparseTensor, run, wrap


def _scalar(x):
    if isinstance(x, numbers.Number):
        return x
    if isinstance(x, Tensor) and not isinstance(x, SparseTensor) and x.ndim == 0:
        return x.item()
    return None


def _as_coo(t):
    """A sparse tensor's COO form (a compressed one converted; no gradient path through the conversion)."""
    return t if isinstance(t._data, COOArray) else wrap(t._data.to_coo())


def _same_layout(result, like):
    """``result`` (COO) back in ``like``'s compressed layout when ``like`` is compressed."""
    if isinstance(like._data, CompressedArray):
        return wrap(from_coo(result._data, like._data.layout))
    return result


def mul(a, b):
    """``a * b``: by a scalar (values scaled), sparse * sparse (the common entries), sparse * dense (sparse)."""
    if not isinstance(a, SparseTensor):
        a, b = b, a
    if _scalar(b) is not None:
        return _unary.scale(a, b)
    if isinstance(b, SparseTensor):
        _check_sizes("mul", a, b)
        return _same_layout(run(F.MulSparse(), _as_coo(a), _as_coo(b)), a)
    return _same_layout(run(F.MulDense(), _as_coo(a), b), a)


def div(a, b):
    if _scalar(b) is None:
        raise RuntimeError("div: the engine divides sparse tensors by scalars only")
    return _unary.scale(a, b, divide=True)


def _check_sizes(name, a, b):
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"{name}: expected sizes of 'self' and 'other' to match, but {list(a.shape)} != "
                           f"{list(b.shape)}")


def add(a, b, alpha=1):
    """``a + alpha * b``: sparse + sparse is sparse; dense + sparse is dense; sparse + dense is torch's error."""
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        _check_sizes("add", a, b)
        if a.dtype is _dtype.bool_ and b.dtype is _dtype.bool_ and isinstance(a._data, COOArray):
            if alpha == -1:
                raise NotImplementedError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                                          "Use the `^` or `logical_xor()` operator instead.")
            if a._nnz() and b._nnz():
                raise NotImplementedError("\"cadd_sparse\" not implemented for 'Bool'")
        return _same_layout(run(F.AddSparse(alpha), _as_coo(a), _as_coo(b)), a)
    if isinstance(a, SparseTensor):
        if isinstance(a._data, CompressedArray):
            return a.to_dense() + b * alpha if alpha != 1 else a.to_dense() + b
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    dense = b.to_dense()
    return a + (dense * alpha if alpha != 1 else dense)


def matmul(a, b, masked=True):
    """``a @ b`` with ``a`` a 2-D sparse matrix and ``b`` a dense matrix or vector: dense result (``a``'s gradient
    masked to its entries, or dense with ``masked=False``)."""
    if isinstance(b, SparseTensor):
        return wrap(COOArray(*_spspmm(_as_coo(a)._data, _as_coo(b)._data)))
    if b.ndim == 1:
        return matmul(a, b.reshape(-1, 1), masked).reshape(-1)
    return mm(a, b, masked)


def _spspmm(x, y):
    """(indices, values, shape, coalesced) of the product of two 2-D COO matrices (coalesced)."""
    xp = x.xp
    x, y = x.coalesce(), y.coalesce()
    # pair every entry (i, k) of x with every entry (k, j) of y: y's rows are sorted, so each k is a range
    starts = xp.searchsorted(y.indices[0], x.indices[1], side="left")
    ends = xp.searchsorted(y.indices[0], x.indices[1], side="right")
    counts = ends - starts
    left = xp.repeat(xp.arange(x.nnz), counts)
    offset = xp.arange(left.size) - xp.repeat(xp.cumsum(counts) - counts, counts)
    right = xp.repeat(starts, counts) + offset
    pairs = COOArray(xp.stack([x.indices[0][left], y.indices[1][right]]), x.values[left] * y.values[right],
                     (x.shape[0], y.shape[1])).coalesce()
    return pairs.indices, pairs.values, pairs.shape, True


def mm(mat1, mat2, masked=True):
    """``sparse.mm``: a sparse COO (or CSR/CSC) matrix times a dense matrix, or sparse times sparse (sparse)."""
    if isinstance(mat2, SparseTensor):
        return matmul(mat1, mat2)
    if mat1.ndim != 2 or mat1.sparse_dim() != 2:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix without dense dims, got {mat1.sparse_dim()} sparse "
                           f"and {mat1.dense_dim()} dense dims")
    if mat2.ndim != 2:
        raise RuntimeError(f"mm: expected a 2-D dense matrix, got a {mat2.ndim}-D one")
    if mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {mat1.shape[1]}, got {mat2.shape[0]}")
    return run(F.SparseMM(masked), _as_coo(mat1), mat2)


def addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * input + alpha * (mat1 @ mat2)`` with ``mat1`` sparse and ``input``, ``mat2`` dense."""
    product = mm(mat1, mat2)
    if isinstance(input, SparseTensor):
        input = input.to_dense()
    dtype = _dtype.promote_types(input.dtype, product.dtype)
    if not (dtype.is_floating_point or dtype.is_complex):  # integral results take the factors cast, as torch's
        cast = bool if dtype is _dtype.bool_ else int
        beta, alpha = cast(beta), cast(alpha)
    out = input * beta + product * alpha if (beta, alpha) != (1, 1) else input + product
    return out if out.dtype is dtype else out.to(dtype)


def smm(input, mat):
    """``torch.smm``: sparse @ dense as an uncoalesced COO result holding every column of each row of ``input``
    that has entries (zeros included), as torch's kernel gives it."""
    out, rows = _product_rows(input, mat)
    n = out.shape[1]
    xp = array_module(rows)
    indices = xp.stack([xp.repeat(rows, n), xp.tile(xp.arange(n, dtype=xp.int64), rows.size)])
    return run(F.FromValues(indices, tuple(out.shape), False), out[_new(rows)].reshape(-1))


def hspmm(mat1, mat2):
    """``torch.hspmm``: sparse @ dense as a hybrid COO tensor (one sparse dim: the rows that have entries)."""
    out, rows = _product_rows(mat1, mat2)
    return run(F.FromValues(rows[None], tuple(out.shape), False), out[_new(rows)])


def _product_rows(sparse, dense):
    """``sparse @ dense`` (dense, differentiable) and the sorted rows of ``sparse`` that hold entries."""
    out = mm(sparse, dense)
    xp = array_module(out._data)
    return out, xp.unique(_as_coo(sparse)._data.indices[0]).astype(xp.int64)


def tensor_sum(t, dim=None, keepdim=False, dtype=None):
    """``Tensor.sum`` of a sparse tensor: all (a dense 0-d tensor) or over ``dim`` (torch.sparse.sum's result)."""
    if dtype is None and not (t.dtype.is_floating_point or t.dtype.is_complex):
        dtype = _dtype.int64  # integral values promote to int64 before summing (bool duplicates count each)
    out = sum(t, dim, dtype=dtype, dense_grad=True)
    if keepdim:
        raise RuntimeError("sum: keepdim is not supported for sparse tensors")
    return out


def sum(input, dim=None, dtype=None, dense_grad=False):
    """``torch.sparse.sum``: the sum of all stored values (dense 0-d), or over ``dim``: sparse while a sparse dim
    remains, else dense."""
    t = _as_coo(input)
    if dtype is not None:
        t = t.to(dtype)
    if dim is None:
        return run(F.SumAll(dense_grad), t)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    n = max(t.ndim, 1)
    dims = tuple(sorted({d % n for d in dims}))
    return run(F.SumDims(dims), t)


def softmax(input, dim, *, dtype=None):
    """``torch.sparse.softmax``: softmax along ``dim`` over the specified entries (a sparse result on them)."""
    return _softmax(input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    """``torch.sparse.log_softmax``: log-softmax along ``dim`` over the specified entries."""
    return _softmax(input, dim, dtype, log=True)


def _softmax(input, dim, dtype, log):
    t = input if dtype is None else input.to(dtype)
    return run(F.Softmax(dim % max(t.ndim, 1), log), _as_coo(t))


def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.sampled_addmm``: ``beta * input + alpha * (mat1 @ mat2)`` at ``input``'s (CSR) entries only
    (not differentiable here)."""
    coo = _as_coo(input)._data.coalesce()
    rows, cols = coo.indices
    a, b = mat1.detach()._data, mat2.detach()._data
    product = (a[rows] * b[:, cols].T).sum(axis=1)
    out = coo.with_values(beta * coo.values + alpha * product)
    return wrap(from_coo(out, input._data.layout) if isinstance(input._data, CompressedArray) else out)


def sparse_mask(dense, mask):
    """``dense.sparse_mask(mask)``: ``dense``'s values at ``mask``'s entries (coalesced), in ``mask``'s layout.
    Differentiable in ``dense``."""
    coo = _as_coo(mask)._data.coalesce()
    source = dense.to_dense() if isinstance(dense, SparseTensor) else dense
    return _same_layout(run(F.Mask(coo), source), mask)


def index_select(t, dim, index):
    """Entries whose index along sparse dim ``dim`` is in ``index``, renumbered by position in ``index`` (an entry
    picked twice appears twice); uncoalesced, as torch gives it. Not differentiable."""
    data = t._data
    xp = data.xp
    idx = index._data.reshape(-1).astype(xp.int64)
    dim %= max(t.ndim, 1)
    if idx.size and int(idx.max()) >= data.shape[dim]:
        raise IndexError(f"index_select(): index contains {int(idx.max())} that is out of range for tensor of size "
                         f"{list(data.shape)} at dimension {dim}")
    if dim >= data.sparse_dim:
        values = xp.take(data.values, idx, axis=dim - data.sparse_dim + 1)
        shape = list(data.shape)
        shape[dim] = idx.size
        return wrap(COOArray(data.indices, values, shape, False))  # torch flags it uncoalesced
    hit = idx[:, None] == data.indices[dim][None, :]
    position, entry = xp.nonzero(hit)  # ordered by position in ``index``, then by entry, as torch orders them
    indices = data.indices[:, entry]
    indices[dim] = position
    shape = list(data.shape)
    shape[dim] = idx.size
    return wrap(COOArray(indices, data.values[entry], shape, False))


def narrow_copy(t, dim, start, length):
    """The entries with ``start <= index < start + length`` along ``dim``, shifted to start at 0. Not
    differentiable."""
    data = t._data
    xp = data.xp
    dim %= max(t.ndim, 1)
    if start < 0 or length < 0 or start + length > data.shape[dim]:
        raise RuntimeError(f"Invalid range to narrow. range(start, start+length) must be a subset of range(0, "
                           f"{data.shape[dim]}).")
    shape = list(data.shape)
    shape[dim] = length
    if dim >= data.sparse_dim:
        axis = dim - data.sparse_dim + 1
        values = xp.take(data.values, xp.arange(start, start + length), axis=axis)
        return wrap(COOArray(data.indices.copy(), values, shape, data.coalesced))
    keep = xp.flatnonzero((data.indices[dim] >= start) & (data.indices[dim] < start + length))
    indices = data.indices[:, keep]
    indices[dim] -= start
    return wrap(flagged(COOArray(indices, data.values[keep], shape), data.coalesced))


def flagged(coo, coalesced):
    """``coo`` flagged as torch flags an op's result, also with fewer than two entries (which a new COOArray
    counts as coalesced)."""
    coo.coalesced = coalesced
    return coo


def cat(tensors, dim=0):
    """``cat`` of COO tensors along a sparse dim (indices shifted) or a dense dim (every tensor's entries, zero
    outside its own slice, as torch joins them). Uncoalesced result. Not differentiable."""
    datas = [_as_coo(t)._data for t in tensors]
    first = datas[0]
    xp = first.xp
    dim %= max(first.ndim, 1)
    for d in datas[1:]:
        if d.sparse_dim != first.sparse_dim or d.dense_dim != first.dense_dim:
            raise RuntimeError("All tensors must have the same sparse_dim and dense_dim")
    shape = list(first.shape)
    shape[dim] = builtins.sum(d.shape[dim] for d in datas)
    if dim >= first.sparse_dim:  # each tensor's entries, their values placed in its slice of the joined dim
        axis, offset, blocks = dim - first.sparse_dim + 1, 0, []
        for d in datas:
            block = xp.zeros((d.nnz,) + tuple(shape[first.sparse_dim:]), d.values.dtype)
            where = [slice(None)] * block.ndim
            where[axis] = slice(offset, offset + d.shape[dim])
            block[tuple(where)] = d.values
            blocks.append(block)
            offset += d.shape[dim]
        return wrap(COOArray(xp.concatenate([d.indices for d in datas], axis=1), xp.concatenate(blocks), shape,
                             False))
    parts, offset = [], 0
    for d in datas:
        moved = d.indices.copy()
        moved[dim] += offset
        offset += d.shape[dim]
        parts.append(moved)
    return wrap(COOArray(xp.concatenate(parts, axis=1), xp.concatenate([d.values for d in datas]), shape, False))


def stack(tensors, dim=0):
    """``stack`` of COO tensors: each given a new dim of size 1 at ``dim`` (a sparse dim up to ``sparse_dim``, else
    a dense one), then joined by ``cat`` along it, as torch stacks them. Not differentiable."""
    first = _as_coo(tensors[0])._data
    dim %= first.ndim + 1
    return cat([wrap(_unsqueeze(_as_coo(t)._data, dim)) for t in tensors], dim)


def _unsqueeze(data, dim):
    xp = data.xp
    shape = data.shape[:dim] + (1,) + data.shape[dim:]
    if dim <= data.sparse_dim:
        zeros = xp.zeros((1, data.nnz), xp.int64)
        indices = xp.concatenate([data.indices[:dim], zeros, data.indices[dim:]])
        return COOArray(indices, data.values, shape, data.coalesced)
    return COOArray(data.indices, xp.expand_dims(data.values, dim - data.sparse_dim + 1), shape, data.coalesced)


def sparse_resize_(t, size, sparse_dim, dense_dim):
    """Change a COO tensor's shape in place (entries kept): dims may only grow, the split into sparse and dense
    dims only change when it holds no entries, as torch requires."""
    data = t._data
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({sparse_dim}) + dense_dim ({dense_dim}), but "
                           f"got {len(size)}")
    if data.nnz and sparse_dim == data.sparse_dim and any(a < b for a, b in zip(size[:sparse_dim], data.shape)):
        raise RuntimeError(f"shrinking the size of sparse dimensions (from {list(data.shape[:sparse_dim])} to "
                           f"{list(size[:sparse_dim])}) on a non-empty sparse tensor is not supported.")
    if data.nnz and (sparse_dim != data.sparse_dim or dense_dim != data.dense_dim
                     or any(a < b for a, b in zip(size, data.shape))):
        raise RuntimeError("resizing a sparse tensor with entries may only grow its dims")
    if not data.nnz:
        xp = data.xp
        data.indices = xp.zeros((sparse_dim, 0), xp.int64)
        data.values = xp.zeros((0,) + size[sparse_dim:], data.values.dtype)
    data.shape = size
    return t


