"""Making sparse tensors: ``sparse_coo_tensor``, ``sparse_csr_tensor``/``sparse_csc_tensor``/
``sparse_compressed_tensor``, a dense tensor's ``to_sparse*``, and conversions between the layouts, with torch's
checks and messages."""
from .. import _dtype, _layout
from .._device import array_module
from ..autograd import grad_mode
from ..tensor import Tensor, _new, register_method, to_array
from . import _autograd as F
from ._compressed import CompressedArray, blocks_from_dense, from_coo
from ._coo import COOArray
from .invariants import check_sparse_tensor_invariants
from .tensor import SparseTensor, run, wrap


def _index_array(indices, device):
    arr = to_array(indices, device=device)
    return arr.astype(array_module(arr).int64, copy=False)


def _values_tensor(values, dtype, device):
    """``values`` as a tensor of ``dtype`` on ``device``, keeping a tensor's gradient path."""
    if isinstance(values, Tensor) and not isinstance(values, SparseTensor):
        out = values
        if device is not None:
            out = out.to(device)
        return out if dtype is None else out.to(_dtype.to_dtype(dtype))
    if dtype is None:  # inferred as ``tensor(values)`` infers it (int64 for ints), not as ``Tensor(values)``
        return _new(to_array(values, None, device))
    return Tensor(to_array(values, dtype, device), dtype=dtype)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A COO tensor of ``values`` at ``indices`` (sparse_dim x nnz); values may carry dense dims (a hybrid
    tensor). Differentiable in ``values`` when they require grad; ``requires_grad=True`` makes a leaf."""
    vals = _values_tensor(values, dtype, device)
    idx = _index_array(indices, vals.device)
    xp = array_module(idx)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim == 0:
        vals = vals.reshape(1)
    sparse_dim, nnz, dense_shape = idx.shape[0], idx.shape[1], tuple(vals.shape[1:])
    if vals.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {vals.shape[0]}")
    if size is None:
        lead = tuple(int(m) + 1 for m in idx.max(axis=1)) if nnz else (0,) * sparse_dim
        size = lead + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_shape):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}")
    if size[sparse_dim:] != dense_shape:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, got "
                           f"{list(vals.shape)}")
    if _checking(check_invariants) and nnz:
        _check_coo_bounds(idx, size, xp)
    coalesced = bool(is_coalesced) or nnz <= 1
    if vals.requires_grad and grad_mode.is_grad_enabled() and not requires_grad:
        return run(F.FromValues(idx, size, coalesced), vals)
    return wrap(COOArray(idx, vals._data, size, coalesced), requires_grad)


def _checking(check_invariants):
    return check_sparse_tensor_invariants.is_enabled() if check_invariants is None else bool(check_invariants)


def _check_coo_bounds(idx, size, xp):
    low, high = idx.min(axis=1), idx.max(axis=1)
    for d in range(idx.shape[0]):
        if int(low[d]) < 0:
            raise RuntimeError(f"found negative index {int(low[d])} for dim {d}")
        if int(high[d]) >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found index "
                               f"{int(high[d])}")


def sparse_compressed_tensor(compressed_indices, plain_indices, values, size=None, *, dtype=None, layout=None,
                             device=None, pin_memory=False, requires_grad=False, check_invariants=None):
    """A 2-D CSR (``layout=engine.sparse_csr``) or CSC tensor from its compressed and plain indices."""
    if layout not in _COMPRESSED:
        raise RuntimeError(f"sparse_compressed_tensor: expected a compressed layout (sparse_csr, sparse_csc, "
                           f"sparse_bsr or sparse_bsc), got {layout}")
    blocked = layout in (_layout.sparse_bsr, _layout.sparse_bsc)
    vals = _values_tensor(values, dtype, device)
    compressed = _index_array(compressed_indices, vals.device)
    plain = _index_array(plain_indices, vals.device)
    if compressed.ndim != 1 or plain.ndim != 1 or vals.ndim != (3 if blocked else 1):
        raise RuntimeError("engine's compressed sparse tensors are 2-D without batch or dense dims")
    if size is None:
        block = tuple(vals.shape[1:3]) if blocked else (1, 1)
        other = int(plain.max()) + 1 if plain.size else 0
        n = compressed.shape[0] - 1
        by_rows = layout in (_layout.sparse_csr, _layout.sparse_bsr)
        size = (n * block[0], other * block[1]) if by_rows else (other * block[0], n * block[1])
    size = tuple(int(s) for s in size)
    if _checking(check_invariants):
        _check_compressed(compressed, plain, vals, size, layout)
    return wrap(CompressedArray(compressed, plain, vals._data, size, layout.name), requires_grad)


def _check_compressed(compressed, plain, vals, size, layout):
    """The invariants torch checks when asked (``check_invariants=True``), of CSR and CSC tensors."""
    if layout not in (_layout.sparse_csr, _layout.sparse_csc):
        return
    by_rows = layout is _layout.sparse_csr
    outer = size[0] if by_rows else size[1]
    names = ("crow_indices", "col_indices", "rows") if by_rows else ("ccol_indices", "row_indices", "columns")
    if compressed.shape[0] != outer + 1:
        raise RuntimeError(f"{names[0]}.shape[-1] must be equal to the number of {names[2]} + 1 (={outer + 1}), "
                           f"but got {compressed.shape[0]}")
    if plain.shape[0] != vals.shape[0]:
        raise RuntimeError(f"{names[1]}.shape[-1] must be equal to nnz (={vals.shape[0]}) as defined by "
                           f"values.shape[0], but got {plain.shape[0]}")
    if compressed.size and int(compressed[-1]) != plain.shape[0]:
        raise RuntimeError(f"`{names[0]}[..., -1] == nnz` is not satisfied.")
    inner = size[1] if by_rows else size[0]
    if plain.size and (int(plain.min()) < 0 or int(plain.max()) >= inner):
        kind = "ncols" if by_rows else "nrows"
        raise RuntimeError(f"`0 <= {names[1]} < {kind}` is not satisfied.")


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, **kwargs):
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, layout=_layout.sparse_csr, **kwargs)


def sparse_csc_tensor(ccol_indices, row_indices, values, size=None, **kwargs):
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, layout=_layout.sparse_csc, **kwargs)


def sparse_bsr_tensor(crow_indices, col_indices, values, size=None, **kwargs):
    """A BSR tensor: ``values`` holds one (bh, bw) block per (block row, block column) entry."""
    return sparse_compressed_tensor(crow_indices, col_indices, values, size, layout=_layout.sparse_bsr, **kwargs)


def sparse_bsc_tensor(ccol_indices, row_indices, values, size=None, **kwargs):
    return sparse_compressed_tensor(ccol_indices, row_indices, values, size, layout=_layout.sparse_bsc, **kwargs)


_COMPRESSED = (_layout.sparse_csr, _layout.sparse_csc, _layout.sparse_bsr, _layout.sparse_bsc)


def to_layout(t, layout):
    """A sparse tensor in another sparse layout (no gradient path through the conversion)."""
    data = t._data
    coo = data if isinstance(data, COOArray) else data.to_coo()
    if layout is _layout.sparse_coo:
        return wrap(COOArray(coo.indices, coo.values.copy(), coo.shape, coo.coalesced))
    if layout in (_layout.sparse_csr, _layout.sparse_csc):
        if coo.dense_dim:
            raise RuntimeError("engine's compressed sparse tensors have no dense dims")
        return wrap(from_coo(coo, layout.name))
    raise RuntimeError(f"to_sparse: the engine has no layout {layout}")


def spdiags(diagonals, offsets, shape, layout=None):
    """``torch.sparse.spdiags``: row ``i`` of ``diagonals`` along the diagonal ``offsets[i]`` of a (m, n) matrix,
    element ``j`` of it at column ``j`` (row ``j - offset``), those that fall inside; zeros are stored too, and
    the COO result is uncoalesced, as torch's."""
    if diagonals.ndim != 2 or offsets.ndim != 1 or diagonals.shape[0] != offsets.shape[0]:
        raise RuntimeError("spdiags: expected 2-D diagonals and 1-D offsets of one length, the number of diagonals")
    xp = array_module(diagonals._data)
    m, n = (int(s) for s in shape)
    rows, cols, picks = [], [], []
    for i, k in enumerate(int(k) for k in offsets._data.tolist()):
        j = xp.arange(max(0, k), min(n, m + k, diagonals.shape[1]), dtype=xp.int64)
        rows.append(j - k), cols.append(j), picks.append(xp.full(j.shape, i, xp.int64))
    rows, cols, picks = (xp.concatenate(a) if a else xp.zeros(0, xp.int64) for a in (rows, cols, picks))
    out = sparse_coo_tensor(_new(xp.stack([rows, cols])), diagonals[_new(picks), _new(cols)], (m, n))
    return out if layout in (None, _layout.sparse_coo) else to_layout(out, layout)


def with_values(sparse, values):
    """A COO tensor with ``sparse``'s entries and the (graph-connected) ``values`` tensor."""
    data = sparse._data
    if not isinstance(data, COOArray):
        data = data.to_coo()
    return run(F.FromValues(data.indices, data.shape, data.coalesced), values)


# ---- dense tensors' conversions --------------------------------------------------------------------------------
def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """A dense tensor as a COO tensor with ``sparse_dim`` sparse dims (all by default), or in ``layout``."""
    if layout in (_layout.sparse_bsr, _layout.sparse_bsc):
        return _blocks(self, blocksize, layout.name)
    if layout is not None and layout is not _layout.sparse_coo:
        return to_layout(to_sparse(self), layout) if self.ndim == 2 else _bad_rank(layout, self.ndim)
    n = self.ndim
    if sparse_dim is None:
        sparse_dim = n
    if not 0 <= sparse_dim <= n:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{n}] range, but {sparse_dim} is "
                           f"given")
    return run(F.FromDense(sparse_dim), self)


def to_sparse_bsr(self, blocksize, dense_dim=None):
    """A 2-D dense tensor as a BSR tensor of (bh, bw) blocks (those holding a nonzero)."""
    return _blocks(self, blocksize, "sparse_bsr")


def to_sparse_bsc(self, blocksize, dense_dim=None):
    return _blocks(self, blocksize, "sparse_bsc")


def _blocks(t, blocksize, layout):
    if t.ndim != 2:
        _bad_rank(layout, t.ndim)
    return wrap(blocks_from_dense(t.detach()._data, blocksize, layout, array_module(t._data)))


def stored_blocks(t, blocksize, layout):
    """A 2-D sparse tensor in BSR or BSC form: the blocks holding one of its stored entries (a stored zero
    too, as torch keeps them)."""
    data = t._data
    if data.ndim != 2 or (data.dense_dim if isinstance(data, COOArray) else data.blocked):
        raise RuntimeError(f"to_sparse: the engine converts only 2-D COO, CSR and CSC tensors to {layout}")
    coo = data if isinstance(data, COOArray) else data.to_coo()
    xp = coo.xp
    stored = xp.zeros(coo.shape, bool)
    stored[tuple(coo.indices)] = True
    origin = "coo" if isinstance(data, COOArray) else "sparse_compressed"
    return wrap(blocks_from_dense(coo.to_dense(), blocksize, layout, xp, stored, origin))


def _bad_rank(layout, ndim):
    raise RuntimeError(f"to_sparse: the engine's {layout} tensors are 2-D, got a {ndim}-D tensor")


def to_sparse_csr(self, dense_dim=None):
    return to_sparse(self, layout=_layout.sparse_csr)


def to_sparse_csc(self, dense_dim=None):
    return to_sparse(self, layout=_layout.sparse_csc)


def to_sparse_coo(self):
    return to_sparse(self)


def sparse_mask(self, mask):
    """This dense tensor's values at the entries of the sparse ``mask`` (a sparse tensor of mask's layout)."""
    from . import _ops
    return _ops.sparse_mask(self, mask)


for _fn in (to_sparse, to_sparse_csr, to_sparse_csc, to_sparse_coo, to_sparse_bsr, to_sparse_bsc, sparse_mask):
    register_method(_fn)

__all__ = ["spdiags", "sparse_coo_tensor", "sparse_compressed_tensor", "sparse_csr_tensor", "sparse_csc_tensor",
           "sparse_bsr_tensor", "sparse_bsc_tensor", "to_layout", "with_values"]
