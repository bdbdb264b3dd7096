"""``CompressedArray``: the storage of a 2-D sparse CSR, CSC, BSR or BSC tensor (torch.sparse_csr ...).

CSR keeps ``compressed`` = crow_indices (rows + 1 offsets), ``plain`` = col_indices; CSC keeps ccol_indices and
row_indices. BSR and BSC index blocks the same way, their values holding one (bh, bw) block per entry. Math goes
through the COO form (``to_coo``, element by element), which is sorted (coalesced) by construction for CSR.
"""
from . import _coo


class CompressedArray(_coo.SparseStorage):
    """compressed indices, plain indices, values, shape and layout name ('sparse_csr' or 'sparse_csc')."""

    def __init__(self, compressed, plain, values, shape, layout):
        self.compressed, self.plain, self.values = compressed, plain, values
        self.shape, self.layout = tuple(int(s) for s in shape), layout

    @property
    def nnz(self):
        return self.plain.shape[0]

    @property
    def by_rows(self):
        return self.layout in ("sparse_csr", "sparse_bsr")

    @property
    def blocked(self):
        return self.layout in ("sparse_bsr", "sparse_bsc")

    def copy(self):
        return CompressedArray(self.compressed.copy(), self.plain.copy(), self.values.copy(), self.shape, self.layout)

    def with_values(self, values):
        return CompressedArray(self.compressed, self.plain, values, self.shape, self.layout)

    def __add__(self, other):
        if isinstance(other, CompressedArray):
            return from_coo((self.to_coo() + other.to_coo()).coalesce(), self.layout)
        return other + self.to_dense()

    __radd__ = __add__

    def entries(self):
        """(rows, cols) of the entries (of the blocks, for the block layouts), in storage order."""
        xp = self.xp
        outer = xp.repeat(xp.arange(self.compressed.size - 1), xp.diff(self.compressed).astype(xp.int64))
        rows, cols = (outer, self.plain) if self.by_rows else (self.plain, outer)
        return rows.astype(xp.int64), cols.astype(xp.int64)

    def to_coo(self):
        """The same elements as a COOArray (coalesced for CSR; CSC's come column-major, blocks block by block)."""
        xp = self.xp
        rows, cols = self.entries()
        if not self.blocked:
            return _coo.COOArray(xp.stack([rows, cols]), self.values, self.shape, coalesced=self.by_rows)
        bh, bw = self.values.shape[1:3]
        inner_r, inner_c = xp.meshgrid(xp.arange(bh), xp.arange(bw), indexing="ij")
        rows = (rows[:, None, None] * bh + inner_r).reshape(-1)
        cols = (cols[:, None, None] * bw + inner_c).reshape(-1)
        return _coo.COOArray(xp.stack([rows, cols]), self.values.reshape(-1), self.shape)

    def to_dense(self):
        return self.to_coo().to_dense()

    def gather(self, dense):
        return self.to_coo().gather(dense).reshape(self.values.shape)

    def to_device(self, move, dev):
        return CompressedArray(move(self.compressed, dev), move(self.plain, dev), move(self.values, dev), self.shape,
                               self.layout)


def from_coo(coo, layout):
    """A 2-D COOArray (any order, duplicates summed) in CSR or CSC form."""
    xp = coo.xp
    if coo.sparse_dim != 2:
        raise RuntimeError(f"Only tensors with two sparse dimensions can be converted to the Sparse{_NAMES[layout]} "
                           f"layout, got self with {coo.sparse_dim} sparse dimensions.")
    if layout == "sparse_csc":
        swapped = _coo.COOArray(coo.indices[::-1], coo.values, coo.shape[::-1]).coalesce()
        outer, plain, n = swapped.indices[0], swapped.indices[1], coo.shape[1]
        values = swapped.values
    else:
        coo = coo.coalesce()
        outer, plain, n, values = coo.indices[0], coo.indices[1], coo.shape[0], coo.values
    compressed = xp.zeros(n + 1, xp.int64)
    compressed[1:] = xp.cumsum(xp.bincount(outer, minlength=n))
    return CompressedArray(compressed, plain.copy(), values, coo.shape, layout)


_NAMES = {"sparse_csr": "Csr", "sparse_csc": "Csc"}


def blocks_from_dense(dense, blocksize, layout, xp, stored=None, origin="dense"):
    """A 2-D dense array in BSR or BSC form: its (bh, bw) blocks that hold a nonzero (or, given the boolean
    array ``stored``, a stored entry of the sparse tensor it came from), row- or column-major. ``origin`` names
    the source layout in torch's message ("dense", "coo", "sparse_compressed")."""
    bh, bw = (int(b) for b in blocksize)
    rows, cols = dense.shape
    if rows % bh or cols % bw:
        raise RuntimeError(f"{origin}_to_{layout}: tensor sparse size ({rows},{cols}) must be divisible by given "
                           f"blocksize ({bh},{bw})")
    stored = dense != 0 if stored is None else stored
    grid = dense.reshape(rows // bh, bh, cols // bw, bw).transpose(0, 2, 1, 3)
    held = stored.reshape(rows // bh, bh, cols // bw, bw).transpose(0, 2, 1, 3).any(axis=(2, 3))
    if layout == "sparse_bsc":
        grid, held = grid.transpose(1, 0, 2, 3), held.T
    outer, inner = xp.nonzero(held)
    compressed = xp.zeros(grid.shape[0] + 1, xp.int64)
    compressed[1:] = xp.cumsum(xp.bincount(outer, minlength=grid.shape[0]))
    return CompressedArray(compressed, inner.astype(xp.int64), grid[outer, inner], dense.shape, layout)
