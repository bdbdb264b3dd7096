"""``COOArray``: the storage of a sparse COO tensor (torch.sparse_coo), written against the array module.

It holds ``indices`` (an int64 array of shape (sparse_dim, nnz)), ``values`` (shape (nnz, *dense_shape)), the full
``shape`` and whether the entries are coalesced (sorted row-major, no duplicates). It is "dense-array compatible"
where the autograd walker needs it: ``shape``, ``dtype``, ``ndim``, ``+`` (sparse + sparse concatenates, as torch
accumulates sparse gradients; sparse + dense gives dense), ``copy`` and ``astype``, so that a sparse gradient can
travel through the walker's slots to a leaf without the dense path paying for it.
"""
import math

from .. import _dtype
from .._device import array_module


def promoted(a, b):
    """The numpy dtype torch's type promotion gives two arrays' dtypes (int64 with float32 is float32)."""
    return _dtype.promote_types(_dtype.from_numpy_dtype(a), _dtype.from_numpy_dtype(b)).np


class SparseStorage:
    """What the sparse storages share: the dense-array attributes the walker and Tensor read, taken from ``values``
    and ``shape``, and dtype changes through the storage's ``with_values``."""

    __array_ufunc__ = None  # numpy defers ``dense + sparse`` to ``__radd__``

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def itemsize(self):
        return self.values.itemsize

    @property
    def xp(self):
        return array_module(self.values)

    def astype(self, dtype, copy=True):
        return self.with_values(self.values.astype(dtype, copy=copy))


class COOArray(SparseStorage):
    """Indices, values and shape of a sparse COO tensor, and whether its entries are coalesced (flagged by
    the op that made them, as torch flags them; always with fewer than two entries)."""

    def __init__(self, indices, values, shape, coalesced=False):
        self.indices, self.values, self.shape = indices, values, tuple(int(s) for s in shape)
        self.coalesced = bool(coalesced) or indices.shape[1] < 2  # as torch: fewer than two entries are

    # ---- what the walker and Tensor read ----------------------------------------------------------------------
    @property
    def sparse_dim(self):
        return self.indices.shape[0]

    @property
    def dense_dim(self):
        return self.values.ndim - 1

    @property
    def nnz(self):
        return self.indices.shape[1]

    def copy(self):
        return COOArray(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def with_values(self, values):
        """The same pattern holding other values."""
        return COOArray(self.indices, values, self.shape, self.coalesced)

    # ---- arithmetic the walker uses ---------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, COOArray):
            return concat(self, other)
        return other + self.to_dense()

    __radd__ = __add__

    def __neg__(self):
        return self.with_values(-self.values)

    # ---- conversions -------------------------------------------------------------------------------------------
    def linear_index(self):
        """Each entry's row-major position over the sparse dims (an int64 array of length nnz)."""
        xp = self.xp
        lin = xp.zeros(self.nnz, xp.int64)
        for d in range(self.sparse_dim):
            lin = lin * self.shape[d] + self.indices[d]
        return lin

    def coalesce(self):
        """Entries sorted row-major with duplicates summed (``Tensor.coalesce``)."""
        if self.coalesced:
            return self
        xp = self.xp
        lin = self.linear_index()
        unique, inverse = xp.unique(lin, return_inverse=True)
        values = xp.zeros((unique.size,) + self.values.shape[1:], self.values.dtype)
        xp.add.at(values, inverse.reshape(-1), self.values)
        return COOArray(unravel(unique, self.shape[:self.sparse_dim], xp), values, self.shape, True)

    def to_dense(self):
        xp = self.xp
        if self.values.dtype.kind == "b":  # duplicates or together: count the true ones
            counts = xp.zeros(self.shape, xp.int64)
            xp.add.at(counts, tuple(self.indices), self.values.astype(xp.int64))
            return counts != 0
        out = xp.zeros(self.shape, self.values.dtype)
        xp.add.at(out, tuple(self.indices), self.values)
        return out

    def gather(self, dense):
        """The values of ``dense`` at this array's entries (shape (nnz, *dense_shape))."""
        return dense[tuple(self.indices)]

    def to_device(self, move, dev):
        return COOArray(move(self.indices, dev), move(self.values, dev), self.shape, self.coalesced)


def unravel(linear, sizes, xp):
    """Row-major positions back to an index array of shape (len(sizes), n)."""
    out = xp.empty((len(sizes), linear.size), xp.int64)
    for d in range(len(sizes) - 1, -1, -1):
        out[d] = linear % max(sizes[d], 1)
        linear = linear // max(sizes[d], 1)
    return out


def concat(a, b):
    """``a + b`` as torch's CPU kernel adds two COO tensors (``add_out_sparse_contiguous``): one merge pass over
    both entry lists, as if both were sorted, that takes the smaller position first and sums the two heads when
    they are equal; the result counts as coalesced when both were. Both coalesced: a vectorized union; else the
    pass runs in Python over the entries (uncoalesced sums are rare: gradient accumulation)."""
    xp = a.xp
    if a.shape != b.shape:
        raise RuntimeError(f"sizes do not match: {list(a.shape)} vs {list(b.shape)}")
    dtype = promoted(a.values.dtype, b.values.dtype)
    if b.nnz == 0 or a.nnz == 0:
        kept = a if b.nnz == 0 else b
        return COOArray(kept.indices.copy(), kept.values.astype(dtype), a.shape, kept.coalesced)
    ka, kb = a.linear_index(), b.linear_index()
    if a.coalesced and b.coalesced:
        keys = xp.union1d(ka, kb)
        ia, ib = xp.searchsorted(ka, keys), xp.searchsorted(kb, keys)
        from_a = (ia < ka.size) & (ka[xp.minimum(ia, ka.size - 1)] == keys)
        from_b = (ib < kb.size) & (kb[xp.minimum(ib, kb.size - 1)] == keys)
        ia, ib = xp.where(from_a, ia, -1), xp.where(from_b, ib, -1)
        indices = unravel(keys, a.shape[:a.sparse_dim], xp)
    else:
        ia, ib = _merge_order(ka.tolist(), kb.tolist())
        ia, ib = xp.asarray(ia, xp.int64), xp.asarray(ib, xp.int64)
        indices = xp.where(ia >= 0, a.indices[:, ia], b.indices[:, ib])
    values = (_pick(a.values, ia, dtype, xp) + _pick(b.values, ib, dtype, xp))
    return COOArray(indices, values, a.shape, a.coalesced and b.coalesced)


def _pick(values, where, dtype, xp):
    """Rows ``where`` of ``values`` (zeros where -1)."""
    rows = values[xp.maximum(where, 0)].astype(dtype, copy=False)
    keep = (where >= 0).reshape((-1,) + (1,) * (values.ndim - 1))
    return xp.where(keep, rows, xp.zeros((), dtype))


def _merge_order(ka, kb):
    """The merge pass over two position lists: per output entry, the entry of each list it takes (-1: none)."""
    ia, ib = [], []
    i = j = 0
    while i < len(ka) and j < len(kb):
        if ka[i] == kb[j]:
            ia.append(i), ib.append(j)
            i, j = i + 1, j + 1
        elif ka[i] < kb[j]:
            ia.append(i), ib.append(-1)
            i += 1
        else:
            ia.append(-1), ib.append(j)
            j += 1
    ia += list(range(i, len(ka))) + [-1] * (len(kb) - j)
    ib += [-1] * (len(ka) - i) + list(range(j, len(kb)))
    return ia, ib


def from_dense(dense, sparse_dim, xp):
    """The COO form of a dense array with ``sparse_dim`` sparse dims: an entry for each position whose dense
    slice holds a nonzero (coalesced)."""
    lead = dense.shape[:sparse_dim]
    flat = dense.reshape((math.prod(lead),) + dense.shape[sparse_dim:])
    nonzero = flat != 0
    if flat.ndim > 1:
        nonzero = nonzero.reshape(flat.shape[0], math.prod(flat.shape[1:])).any(axis=1)
    lin = xp.flatnonzero(nonzero)
    return COOArray(unravel(lin.astype(xp.int64), lead, xp), flat[lin], dense.shape, True)


def values_at(grad, pattern):
    """The values of ``grad`` (a dense array or a COOArray of the same shape) at ``pattern``'s entries, one row
    per entry (duplicates each read the same position): what a gradient with respect to ``pattern``'s values
    is when the values feed the tensor additively."""
    if not isinstance(grad, COOArray):
        return pattern.gather(grad)
    xp = pattern.xp
    grad = grad.coalesce()
    keys, wanted = grad.linear_index(), pattern.linear_index()
    where = xp.searchsorted(keys, wanted)
    where = xp.minimum(where, max(keys.size - 1, 0))
    found = keys[where] == wanted if keys.size else xp.zeros(wanted.size, bool)
    out = xp.zeros((pattern.nnz,) + grad.values.shape[1:], grad.values.dtype)
    if keys.size:
        out[found] = grad.values[where[found]]
    return out
