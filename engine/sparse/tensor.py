"""The sparse tensor classes: a ``Tensor`` whose ``_data`` is a sparse storage (``COOArray`` or
``CompressedArray``) instead of a dense array. They answer torch's questions about layout (``is_sparse``,
``layout``, ``sparse_dim``...), print as torch prints them, and route the ops torch defines on sparse tensors to
``engine.sparse``'s functions; the dense ops of ``Tensor`` are not meant for them."""
import numbers

from .. import _dtype, _layout
from .._device import device as _device, device_of, move
from ..autograd import grad_mode
from ..tensor import Tensor, _new
from . import _autograd as F
from ._compressed import CompressedArray
from ._coo import COOArray


def wrap(storage, requires_grad=False):
    """A sparse tensor over ``storage`` (no copy)."""
    t = _new(storage, requires_grad)
    t.__class__ = SparseCOOTensor if isinstance(storage, COOArray) else SparseCompressedTensor
    return t


def run(fn, *inputs):
    """Call the Function ``fn`` on ``inputs``: its sparse outputs come back as sparse tensors."""
    out = fn(*inputs)
    if isinstance(out._data, (COOArray, CompressedArray)):
        out.__class__ = SparseCOOTensor if isinstance(out._data, COOArray) else SparseCompressedTensor
    return out


def is_sparse_tensor(x):
    return isinstance(x, SparseTensor)


class SparseTensor(Tensor):
    """What the sparse layouts share."""

    is_sparse = property(lambda self: False)

    @property
    def device(self):
        return device_of(self._data.values)

    @property
    def layout(self):
        return getattr(_layout, self._layout_name())

    def _layout_name(self):
        raise NotImplementedError

    def is_contiguous(self, memory_format=None):
        raise RuntimeError(f"is_contiguous is not implemented for tensors with layout {self._layout_title()}")

    def _layout_title(self):
        return {"sparse_coo": "Sparse", "sparse_csr": "SparseCsr", "sparse_csc": "SparseCsc", "sparse_bsr": "SparseBsr",
                "sparse_bsc": "SparseBsc"}[self._layout_name()]

    @property
    def data(self):
        t = wrap(self._data)
        t._version_counter = self._version_counter
        return t

    def detach(self):
        t = wrap(self._data)
        t._version_counter = self._version_counter
        return t

    def clone(self, *, memory_format=None):
        with grad_mode.no_grad():
            out = wrap(self._data.copy())
        if self.requires_grad and grad_mode.is_grad_enabled():  # a copy with the same gradient path
            return self * 1
        return out

    def to_dense(self, dtype=None, *, masked_grad=None):
        out = run(F.ToDense(), self)
        return out if dtype is None else out.to(dtype)

    def to_sparse_bsr(self, blocksize, dense_dim=None):
        from . import _construct
        return _construct.stored_blocks(self, blocksize, "sparse_bsr")

    def to_sparse_bsc(self, blocksize, dense_dim=None):
        from . import _construct
        return _construct.stored_blocks(self, blocksize, "sparse_bsc")

    def numpy(self, force=False):
        raise TypeError(f"can't convert {self._layout_title()} layout tensor to numpy. Use Tensor.to_dense() first.")

    def _nnz(self):
        return int(self._data.nnz)

    def values(self):
        return run(F.Values(), self)

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(other)`` for sparse tensors (indices stay int64)."""
        dtype, dev = kwargs.get("dtype"), kwargs.get("device")
        for a in args:
            if isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, _dtype.dtype) or a in (float, int, bool, complex):
                dtype = a
            elif a is not None and not isinstance(a, bool):
                dev = a
        data = self._data
        if dev is not None and _device(dev) != self.device:
            data = data.to_device(move, _device(dev))
        if dtype is not None and _dtype.to_dtype(dtype) is not self.dtype:
            data = data.astype(_dtype.to_dtype(dtype).np)
        if data is self._data:
            return self
        if self.requires_grad and dev is None:  # a dtype cast keeps the gradient path (through the values)
            return run(F.Scale(1, _dtype.to_dtype(dtype).np), self)
        return wrap(data, self.requires_grad and _dtype.is_floating(data.dtype))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else _device("cuda", device) if isinstance(device, int) else device)

    def __reduce_ex__(self, protocol):
        from .serialization import reduce_sparse
        return reduce_sparse(self)

    def __deepcopy__(self, memo):
        out = wrap(self._data.copy(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __repr__(self):
        from ._repr import sparse_repr
        return sparse_repr(self)

    # ---- arithmetic shared by the layouts ---------------------------------------------------------------------
    def __mul__(self, other):
        from . import _ops
        return _ops.mul(self, other)

    __rmul__ = mul = __mul__

    def __truediv__(self, other):
        from . import _ops
        return _ops.div(self, other)

    div = __truediv__

    def __add__(self, other):
        from . import _ops
        return _ops.add(self, other)

    def add(self, other, *, alpha=1):
        from . import _ops
        return _ops.add(self, other, alpha=alpha)

    def __radd__(self, other):
        from . import _ops
        return _ops.add(other, self)

    def __sub__(self, other):
        from . import _ops
        return _ops.add(self, other, alpha=-1)

    def sub(self, other, *, alpha=1):
        from . import _ops
        return _ops.add(self, other, alpha=-alpha)

    def __rsub__(self, other):
        from . import _ops
        return _ops.add(other, self, alpha=-1)

    def __matmul__(self, other):
        from . import _ops
        return _ops.matmul(self, other, masked=False)

    mm = matmul = __matmul__

    def sum(self, dim=None, keepdim=False, dtype=None):
        from . import _ops
        return _ops.tensor_sum(self, dim, keepdim, dtype)


class SparseCOOTensor(SparseTensor):
    """A tensor of layout ``engine.sparse_coo``: int64 ``indices`` (sparse_dim, nnz) and ``values``
    (nnz, *dense dims), possibly with duplicates (uncoalesced) until ``coalesce()``."""

    is_sparse = property(lambda self: True)

    def _layout_name(self):
        return "sparse_coo"

    def sparse_dim(self):
        return self._data.sparse_dim

    def dense_dim(self):
        return self._data.dense_dim

    def is_coalesced(self):
        return self._data.coalesced

    def _coalesced_(self, coalesced):
        self._data.coalesced = bool(coalesced)
        return self

    def coalesce(self):
        if self._data.coalesced:
            return self
        return run(F.Coalesce(), self)

    def _indices(self):
        return _new(self._data.indices)

    def indices(self):
        if not self._data.coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices()

    def values(self):
        if not self._data.coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return run(F.Values(), self)

    def _values(self):
        """The stored values as they are (uncoalesced too); not differentiable, as torch's."""
        return _new(self._data.values)

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        if layout in (None, _layout.sparse_coo):
            return self
        from . import _construct
        return _construct.to_layout(self, layout)

    def to_sparse_coo(self):
        return self

    def to_sparse_csr(self, dense_dim=None):
        from . import _construct
        return _construct.to_layout(self, _layout.sparse_csr)

    def to_sparse_csc(self, dense_dim=None):
        from . import _construct
        return _construct.to_layout(self, _layout.sparse_csc)

    def t(self):
        if self._data.sparse_dim > 2 or self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got "
                               f"{self._data.sparse_dim} sparse and {self._data.dense_dim} dense dimensions")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def transpose(self, dim0, dim1):
        n = max(self.ndim, 1)
        dim0, dim1 = dim0 % n, dim1 % n
        if dim0 >= self._data.sparse_dim or dim1 >= self._data.sparse_dim:
            raise RuntimeError("transpose: Transposition of a sparse dimension and a dense dimension is not "
                               "supported")
        return run(F.Transpose(dim0, dim1), self)

    def sparse_mask(self, mask):
        from . import _ops
        return _ops.sparse_mask(self, mask)

    def index_select(self, dim, index):
        from . import _ops
        return _ops.index_select(self, dim, index)

    def narrow_copy(self, dim, start, length):
        from . import _ops
        return _ops.narrow_copy(self, dim, start, length)

    def sparse_resize_(self, size, sparse_dim, dense_dim):
        from . import _ops
        return _ops.sparse_resize_(self, size, sparse_dim, dense_dim)

    def crow_indices(self):
        raise RuntimeError("crow_indices expected sparse row compressed tensor layout but got Sparse")

    def col_indices(self):
        raise RuntimeError("col_indices expected sparse row compressed tensor layout but got Sparse")


class SparseCompressedTensor(SparseTensor):
    """A 2-D tensor of layout ``engine.sparse_csr`` or ``engine.sparse_csc`` (or the block layouts
    ``sparse_bsr``/``sparse_bsc``: construction, conversions, to_dense, products through the element form)."""

    is_sparse_csr = property(lambda self: self._data.layout == "sparse_csr")

    def _layout_name(self):
        return self._data.layout

    def sparse_dim(self):
        return 2

    def dense_dim(self):
        return 0

    def _compressed(self, name, by_rows):
        if self._data.by_rows != by_rows:
            kind = "row" if by_rows else "column"
            raise RuntimeError(f"{name} expected sparse {kind} compressed tensor layout but got "
                               f"{self._layout_title()}")

    def crow_indices(self):
        self._compressed("crow_indices", True)
        return _new(self._data.compressed)

    def col_indices(self):
        self._compressed("col_indices", True)
        return _new(self._data.plain)

    def ccol_indices(self):
        self._compressed("ccol_indices", False)
        return _new(self._data.compressed)

    def row_indices(self):
        self._compressed("row_indices", False)
        return _new(self._data.plain)

    def indices(self):
        raise RuntimeError(f"indices expected sparse coordinate tensor layout but got {self._layout_title()}")

    def t(self):
        """The transpose: the same indices read the other way (CSR <-> CSC, BSR <-> BSC, blocks transposed)."""
        data = self._data
        swapped = {"sparse_csr": "sparse_csc", "sparse_csc": "sparse_csr", "sparse_bsr": "sparse_bsc",
                   "sparse_bsc": "sparse_bsr"}[data.layout]
        values = data.values.swapaxes(1, 2) if data.blocked else data.values
        return wrap(CompressedArray(data.compressed, data.plain, values, data.shape[::-1], swapped))

    def transpose(self, dim0, dim1):
        if {dim0 % 2, dim1 % 2} == {0, 1}:
            return self.t()
        return self

    def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
        from . import _construct
        return _construct.to_layout(self, layout or _layout.sparse_coo)

    def to_sparse_coo(self):
        return self.to_sparse()

    def to_sparse_csr(self, dense_dim=None):
        from . import _construct
        return _construct.to_layout(self, _layout.sparse_csr)

    def to_sparse_csc(self, dense_dim=None):
        from . import _construct
        return _construct.to_layout(self, _layout.sparse_csc)



def scalar_like(x):
    return isinstance(x, numbers.Number) or isinstance(x, Tensor) and not isinstance(x, SparseTensor) and x.ndim == 0
