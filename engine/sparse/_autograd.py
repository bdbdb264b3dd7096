"""The differentiable sparse ops, each a ``Function`` on storages (``COOArray``, ``CompressedArray``) and dense
arrays. Gradients with respect to a sparse input are sparse, on the input's (coalesced) pattern, as torch gives
them; a gradient arriving at a sparse output may be sparse or dense (``values_at`` reads either)."""
from ..autograd.double_backward import Transposed
from ..autograd.function import Function
from ._compressed import CompressedArray
from ._coo import COOArray, promoted, values_at


def _transposed(node, *grads):
    """The differentiable backward of a linear op on sparse or dense gradients: ``Transposed`` (its forward is
    the node's backward, its backward the node's forward), sparse results as sparse tensors."""
    from .tensor import SparseCOOTensor, SparseCompressedTensor
    outs = Transposed(node)(*grads)
    for out in outs if isinstance(outs, tuple) else (outs,):
        if isinstance(out._data, COOArray):
            out.__class__ = SparseCOOTensor
        elif isinstance(out._data, CompressedArray):
            out.__class__ = SparseCompressedTensor
    return outs


class _Linear(Function):
    """An op linear in its inputs with constant parameters: differentiable to any order through
    ``Transposed``."""

    def backward_tensors(self, *grads):
        return _transposed(self, *grads)


def _masked(grad, pattern):
    """``grad`` restricted to ``pattern``'s entries, coalesced for COO (torch's masked gradient of a sparse
    input)."""
    if isinstance(pattern, COOArray):
        return _on_entries(pattern, values_at(grad, pattern.coalesce()))
    return pattern.with_values(pattern.gather(grad))


def _on_entries(sparse, values):
    """A gradient with ``values`` on ``sparse``'s coalesced entries, flagged coalesced only when ``sparse`` was
    (torch's masked gradients of an uncoalesced input are sorted but not flagged)."""
    merged = sparse.coalesce()
    return COOArray(merged.indices, values, merged.shape, sparse.coalesced)


class ToDense(_Linear):
    """``Tensor.to_dense`` of a sparse tensor; the gradient is the dense gradient masked to the input's pattern."""

    uses_inputs = False

    def forward(self, sparse):
        self.pattern = sparse
        return sparse.to_dense()

    def backward(self, grad):
        return _masked(grad, self.pattern)


class Values(_Linear):
    """``values()`` / ``_values()``: the stored values; the gradient is sparse on the same entries."""

    uses_inputs = False

    def forward(self, sparse):
        self.pattern = sparse
        return sparse.values

    def backward(self, grad):
        return self.pattern.with_values(grad)


class FromValues(_Linear):
    """``sparse_coo_tensor(indices, values, size)`` differentiable in ``values``: each value's gradient is the
    output gradient at its entry (duplicates each read the same one)."""

    uses_inputs = False

    def __init__(self, indices, shape, coalesced):
        self.indices, self.shape, self.coalesced = indices, shape, coalesced

    def forward(self, values):
        self.out = COOArray(self.indices, values, self.shape, self.coalesced)
        return self.out

    def backward(self, grad):
        return values_at(grad, self.out)


class Coalesce(_Linear):
    """``coalesce()``: duplicates summed. The result stands for the same dense tensor, so its gradient passes
    through as it is, as torch's does."""

    uses_inputs = False

    def forward(self, sparse):
        return sparse.coalesce()

    def backward(self, grad):
        return grad


class Scale(_Linear):
    """The values times a Python number (``mul``/``div`` by a scalar, ``neg``; 1 for ``to(dtype)``), cast to
    ``dtype`` (torch's promotion: an int64 tensor times 2.5 is float32)."""

    uses_inputs = False

    def __init__(self, factor, dtype):
        self.factor, self.dtype = factor, dtype

    def forward(self, sparse):
        self.source = sparse.dtype
        values = sparse.values * self.factor if self.factor != 1 else sparse.values
        return sparse.with_values(values.astype(self.dtype, copy=False))

    def backward(self, grad):
        """``grad * factor`` in the input's dtype (a cast's gradient goes back to the source type)."""
        if hasattr(grad, "with_values"):
            return grad.with_values((grad.values * self.factor).astype(self.source, copy=False))
        return (grad * self.factor).astype(self.source, copy=False)


class AddSparse(_Linear):
    """``a + alpha * b`` of two COO tensors of one shape: torch's merge of the two entry lists (``_coo.concat``)."""

    uses_inputs = False

    def __init__(self, alpha):
        self.alpha = alpha

    def forward(self, a, b):
        dtype = promoted(a.values.dtype, b.values.dtype)
        scaled = b.with_values((b.values * self.alpha).astype(dtype, copy=False) if self.alpha != 1 else b.values)
        return a.astype(dtype, copy=False) + scaled

    def backward(self, grad):
        other = grad.with_values(grad.values * self.alpha) if hasattr(grad, "with_values") else grad * self.alpha
        return grad, other


class MulSparse(Function):
    """Elementwise ``a * b`` of two COO tensors: the product on the entries both specify (sorted; flagged
    coalesced when both inputs were, as torch flags it)."""

    uses_inputs = False

    def forward(self, a, b):
        xp = a.xp
        self.a, self.b = a.coalesce(), b.coalesce()
        common, ia, ib = _intersect(self.a.linear_index(), self.b.linear_index(), xp)
        dtype = promoted(a.dtype, b.dtype)
        self.va, self.vb = self.a.values[ia].astype(dtype, copy=False), self.b.values[ib].astype(dtype, copy=False)
        self.out = COOArray(self.a.indices[:, ia], self.va * self.vb, a.shape, a.coalesced and b.coalesced)
        return self.out

    def backward(self, grad):
        g = values_at(grad, self.out)
        return self.out.with_values(g * self.vb), self.out.with_values(g * self.va)


def _intersect(x, y, xp):
    """Sorted unique ``x`` and ``y`` positions held in both: (common, where in x, where in y)."""
    where = xp.searchsorted(y, x)
    where = xp.minimum(where, max(y.size - 1, 0))
    hit = (y[where] == x) if y.size else xp.zeros(x.size, bool)
    ia = xp.flatnonzero(hit)
    return x[ia], ia, where[ia]


class MulDense(Function):
    """Elementwise ``sparse * dense``: a sparse result on the sparse operand's entries (the dense one broadcast)."""

    uses_inputs = False

    def forward(self, sparse, dense):
        xp = sparse.xp
        self.pattern = sparse  # the entries as stored, duplicates too, as torch keeps them
        self.full = xp.broadcast_to(dense, sparse.shape)
        dtype = promoted(sparse.dtype, dense.dtype)
        self.picked = self.pattern.gather(self.full).astype(dtype, copy=False)
        return self.pattern.with_values(self.pattern.values.astype(dtype, copy=False) * self.picked)

    def backward(self, grad):
        g = values_at(grad, self.pattern)
        gd = None
        if self.needs_input_grad[1]:
            gd = self.pattern.with_values(g * self.pattern.values).to_dense()
        scaled = (grad.with_values(grad.values * grad.gather(self.full)) if isinstance(grad, COOArray)
                  else grad * self.full)
        return _masked(scaled, self.pattern), gd  # on the coalesced entries, as torch's


class Transpose(_Linear):
    """Swap two sparse dims (``t()``, ``transpose``) by swapping their index rows; the result is uncoalesced."""

    uses_inputs = False

    def __init__(self, dim0, dim1):
        self.dim0, self.dim1 = dim0, dim1

    def forward(self, sparse):
        return _swap(sparse, self.dim0, self.dim1)

    def backward(self, grad):
        if isinstance(grad, COOArray):
            return _swap(grad, self.dim0, self.dim1)
        return grad.swapaxes(self.dim0, self.dim1)


def _swap(coo, d0, d1):
    order = list(range(coo.sparse_dim))
    order[d0], order[d1] = order[d1], order[d0]
    shape = list(coo.shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    out = COOArray(coo.indices[order], coo.values, shape)
    out.coalesced = coo.nnz == 0  # torch flags a transpose with entries uncoalesced, even a single one
    return out


class SparseMM(Function):
    """``sparse.mm(S, D)``: a 2-D COO matrix times a dense matrix; S's gradient is masked to its entries
    (coalesced), or dense for ``S.mm(D)``/``S @ D`` (``masked=False``, as torch's native mm gives it); D's is
    ``S^T @ grad``."""

    uses_inputs = False

    def __init__(self, masked=True):
        self.masked = masked

    def forward(self, sparse, dense):
        xp = sparse.xp
        self.input, self.s, self.d = sparse, sparse.coalesce(), dense
        rows, cols = self.s.indices
        out = xp.zeros((sparse.shape[0], dense.shape[1]), xp.result_type(sparse.dtype, dense.dtype))
        xp.add.at(out, rows, self.s.values[:, None] * dense[cols])
        return out

    def backward(self, grad):
        xp = self.s.xp
        rows, cols = self.s.indices
        gs = gd = None
        if self.needs_input_grad[0]:
            gs = (_on_entries(self.input, (grad[rows] * self.d[cols]).sum(axis=1)) if self.masked
                  else grad @ self.d.T)
        if self.needs_input_grad[1]:
            gd = xp.zeros(self.d.shape, grad.dtype)
            xp.add.at(gd, cols, self.s.values[:, None] * grad[rows])
        return gs, gd


class SumAll(_Linear):
    """The sum of every stored value (a dense 0-d result); the gradient is that value on every entry (coalesced,
    as torch.sparse.sum's), or everywhere (dense, as ``Tensor.sum()``'s) with ``dense_grad``."""

    uses_inputs = False

    def __init__(self, dense_grad=False):
        self.dense_grad = dense_grad

    def forward(self, sparse):
        self.shape = sparse.shape
        self.pattern = sparse.coalesce()  # duplicates merged first: bool ones or together, as torch's
        return self.pattern.values.sum(axis=tuple(range(sparse.values.ndim)))

    def backward(self, grad):
        xp = self.pattern.xp
        if self.dense_grad:
            return xp.broadcast_to(grad, self.shape).copy()
        return self.pattern.with_values(xp.broadcast_to(grad, self.pattern.values.shape).copy())


class SumDims(_Linear):
    """``sparse.sum(S, dims)``: sparse dims summed out of the index, dense dims out of the values; the result is
    sparse while a sparse dim remains, else dense. The gradient reads the output gradient at each entry."""

    uses_inputs = False

    def __init__(self, dims):
        self.dims = dims

    def forward(self, sparse):
        self.input = sparse
        s = self.pattern = sparse.coalesce()
        self.kept = [d for d in range(s.sparse_dim) if d not in self.dims]
        self.dense_axes = tuple(1 + d - s.sparse_dim for d in self.dims if d >= s.sparse_dim)
        values = s.values.sum(axis=self.dense_axes) if self.dense_axes else s.values
        shape = tuple(n for d, n in enumerate(s.shape) if d not in self.dims)
        if not self.kept:
            return values.sum(axis=0)
        return COOArray(s.indices[self.kept], values, shape).coalesce()

    def backward(self, grad):
        xp = self.pattern.xp
        dense = grad.to_dense() if isinstance(grad, COOArray) else grad
        if self.kept:
            picked = dense[tuple(self.pattern.indices[self.kept])]
        else:
            picked = xp.broadcast_to(dense, (self.pattern.nnz,) + dense.shape)
        for axis in self.dense_axes:
            picked = xp.expand_dims(picked, axis)
        return _on_entries(self.input, xp.broadcast_to(picked, self.pattern.values.shape).copy())


class Softmax(Function):
    """``sparse.softmax`` / ``sparse.log_softmax`` along ``dim`` over the specified entries only (coalesced
    result on the input's entries); unspecified entries take no part, as if they were -inf."""

    uses_inputs = False

    def __init__(self, dim, log):
        self.dim, self.log = dim, log

    def forward(self, sparse):
        xp = sparse.xp
        self.input = sparse
        s = self.pattern = sparse.coalesce()
        if self.dim >= s.sparse_dim:  # a dense dim: an ordinary softmax inside each entry's values
            self.group, self.n_groups, axis = None, 0, self.dim - s.sparse_dim + 1
            shifted = s.values - s.values.max(axis=axis, keepdims=True)
            total = xp.exp(shifted).sum(axis=axis, keepdims=True)
        else:
            others = [d for d in range(s.sparse_dim) if d != self.dim]
            key = COOArray(s.indices[others], s.values, [s.shape[d] for d in others]).linear_index()
            _, self.group = xp.unique(key, return_inverse=True)
            self.group = self.group.reshape(-1)
            self.n_groups = int(self.group.max()) + 1 if self.group.size else 0
            top = xp.full((self.n_groups,) + s.values.shape[1:], -xp.inf, s.values.dtype)
            xp.maximum.at(top, self.group, s.values)
            shifted = s.values - top[self.group]
            total = xp.zeros_like(top)
            xp.add.at(total, self.group, xp.exp(shifted))
            total = total[self.group]
            axis = None
        self.axis = axis
        out = shifted - xp.log(total) if self.log else xp.exp(shifted) / total
        self.out = out
        return s.with_values(out)

    def _group_sum(self, x):
        xp = self.pattern.xp
        if self.group is None:
            return x.sum(axis=self.axis, keepdims=True)
        total = xp.zeros((self.n_groups,) + x.shape[1:], x.dtype)
        xp.add.at(total, self.group, x)
        return total[self.group]

    def backward(self, grad):
        xp = self.pattern.xp
        g = values_at(grad, self.pattern)
        if self.log:
            gin = g - xp.exp(self.out) * self._group_sum(g)
        else:
            gin = self.out * (g - self._group_sum(g * self.out))
        return _on_entries(self.input, gin)


class FromDense(_Linear):
    """``Tensor.to_sparse(sparse_dim)`` of a dense tensor: its nonzero slices as a coalesced COO tensor; the
    gradient is the sparse gradient made dense."""

    uses_inputs = False

    def __init__(self, sparse_dim):
        self.sparse_dim = sparse_dim

    def forward(self, dense):
        from ._coo import from_dense
        from .._device import array_module
        return from_dense(dense, self.sparse_dim, array_module(dense))

    def backward(self, grad):
        return grad.to_dense() if hasattr(grad, "to_dense") else grad


class Mask(_Linear):
    """``dense.sparse_mask(mask)``: the dense values at the mask's (coalesced) entries; the gradient is the
    sparse gradient made dense."""

    uses_inputs = False

    def __init__(self, pattern):
        self.pattern = pattern

    def forward(self, dense):
        return self.pattern.with_values(self.pattern.gather(dense).astype(dense.dtype, copy=False))

    def backward(self, grad):
        return grad.to_dense() if hasattr(grad, "to_dense") else grad
