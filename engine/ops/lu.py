"""LU factorisation with partial pivoting, its solves and its unpacking (``torch.linalg.lu_factor``,
``lu_factor_ex``, ``lu``, ``lu_solve``, ``torch.lu_unpack``), with gradients, on (batches of) real matrices.

numpy has no LU (and scipy is not a dependency), so the factorisation is written here once for numpy and CuPy:
one step per column, each step vectorised over the batch and the rows. It chooses the pivots LAPACK's getrf
chooses (the first largest magnitude in the column; 1-based, as LAPACK's and torch's), so that results match torch's
wherever no two candidates tie. The triangular solves are substitutions, one step per row, vectorised over the batch
and the right-hand sides: a zero on U's diagonal gives infinities as LAPACK's getrs does, not an error.

Gradients (real matrices, A = P L U with L unit lower m x k, U upper k x n, k = min(m, n)), derived from
dA = P (dL U + L dU), where L^-1 dL is strictly lower and dU U^-1 upper:
- square and wide (m <= n, U = [U1 U2]): gA = P L^-T [phi U1^-T, gU2],
  phi = tril_-1(L^T gL - gU2 U2^T) + triu(gU1 U1^T);
- tall (m > n, L = [L1; L2]): gA = P [L1^-T phi; gL2] U^-T, phi = tril_-1(L1^T gL1) + triu(gU U^T - L2^T gL2);
- lu_solve, X = A^-1 B: gB = A^-T gX, gA = -gB X^T, then gLU = tril_-1(P^T gA U^T) + triu(L^T P^T gA).
"""
import math
import warnings

import numpy as np

from .. import _dtype
from .._device import device_of, move
from ..autograd.function import Function
from ..tensor import _new
from ._common import xp_of
from .creation import eye
from .linalg_out import writes_out
from .reduction import return_type


# ---- array kernels -----------------------------------------------------------------------------
def _t(x):
    """The conjugate transpose of the last two dims (the transpose of a real array)."""
    x = x.swapaxes(-1, -2)
    return x.conj() if x.dtype.kind == "c" else x


def factor(a, pivot=True):
    """``(lu, pivots, info)`` of a (batch of) m x n array(s): L's strict lower part and U packed in ``lu``,
    ``pivots`` (int32, 1-based) the row each step swapped in, ``info`` the 1-based index of U's first zero
    diagonal entry (0 where there is none), as LAPACK's getrf."""
    xp = xp_of(a)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    lu = a.reshape(math.prod(batch), m, n).copy()
    count = lu.shape[0]
    pivots = xp.empty((count, k), np.int32)
    info = xp.zeros(count, np.int32)
    rows = xp.arange(count)
    for j in range(k):
        if pivot:
            column = lu[:, j:, j]
            # LAPACK's i?amax: |re| + |im| for complex columns
            size = xp.abs(column.real) + xp.abs(column.imag) if column.dtype.kind == "c" else xp.abs(column)
            p = j + xp.argmax(size, axis=1)
            swapped = lu[rows, p].copy()
            lu[rows, p] = lu[:, j]
            lu[:, j] = swapped
            pivots[:, j] = p + 1
        else:
            pivots[:, j] = j + 1
        diagonal = lu[:, j, j]
        zero = diagonal == 0
        info[(info == 0) & zero] = j + 1
        lu[:, j + 1:, j] /= xp.where(zero, 1, diagonal)[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(a.shape), pivots.reshape(*batch, k), info.reshape(batch)


def permutation(pivots, m, xp):
    """``perm`` with row i of P^T A = row perm[i] of A, for the row swaps ``pivots`` (1-based) of an m-row LU."""
    batch = pivots.shape[:-1]
    flat = pivots.reshape(math.prod(batch), pivots.shape[-1]).astype(np.int64) - 1
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        target = flat[:, j]
        held = perm[:, j].copy()
        perm[:, j] = perm[rows, target]
        perm[rows, target] = held
    return perm.reshape(*batch, m)


def permutation_matrix(perm, dtype, xp):
    """P (with A = P L U) as a dense matrix of ``dtype``: P[perm[i], i] = 1."""
    m = perm.shape[-1]
    eye = xp.eye(m, dtype=dtype)
    return _t(eye[perm])


def _rows(x, perm):
    """Rows ``perm`` of each matrix of ``x`` (P^T x); ``perm``'s batch dims broadcast against x's."""
    xp = xp_of(x)
    index = xp.broadcast_to(perm, np.broadcast_shapes(perm.shape[:-1], x.shape[:-2]) + perm.shape[-1:])
    x = xp.broadcast_to(x, index.shape[:-1] + x.shape[-2:])
    return xp.take_along_axis(x, index[..., None], -2)


def _unpermute(x, perm):
    """P x: row perm[i] of the result is row i of x."""
    return _rows(x, xp_of(perm).argsort(perm, axis=-1))


def triangular_solve(t, b, lower, unit):
    """X with T X = B for the lower or upper triangle of T (ones on its diagonal when ``unit``), by
    substitution; batch dims broadcast."""
    xp = xp_of(t, b)
    n = t.shape[-1]
    batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    t = xp.broadcast_to(t, batch + t.shape[-2:])
    x = xp.broadcast_to(b, batch + b.shape[-2:]).astype(np.result_type(t.dtype, b.dtype), copy=True)
    for i in range(n) if lower else range(n - 1, -1, -1):
        known = slice(0, i) if lower else slice(i + 1, n)
        x[..., i, :] -= (t[..., i, None, known] @ x[..., known, :])[..., 0, :]
        if not unit:
            x[..., i, :] /= t[..., i, i, None]
    return x


def unpack(lu):
    """(L, U) of a packed ``lu``: L unit lower m x k, U upper k x n."""
    xp = xp_of(lu)
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = xp.tril(lu[..., :, :k], -1) + xp.eye(m, k, dtype=lu.dtype)
    return lower, xp.triu(lu[..., :k, :])


def factor_backward(lu, perm, g_lower, g_upper):
    """gA from the gradients of L and U (either may be None) of A = P L U."""
    xp = xp_of(lu)
    lower, upper = unpack(lu)
    m, n = lu.shape[-2:]
    g_lower = xp.zeros_like(lower) if g_lower is None else g_lower
    g_upper = xp.zeros_like(upper) if g_upper is None else g_upper
    if m <= n:
        u1, u2, gu1, gu2 = upper[..., :m], upper[..., m:], g_upper[..., :m], g_upper[..., m:]
        phi = xp.tril(_t(lower) @ g_lower - gu2 @ _t(u2), -1) + xp.triu(gu1 @ _t(u1))
        right = _t(triangular_solve(u1, _t(phi), lower=False, unit=False))
        g_perm = triangular_solve(_t(lower), xp.concatenate([right, gu2], -1), lower=False, unit=True)
    else:
        l1, l2, gl1, gl2 = lower[..., :n, :], lower[..., n:, :], g_lower[..., :n, :], g_lower[..., n:, :]
        phi = xp.tril(_t(l1) @ gl1, -1) + xp.triu(g_upper @ _t(upper) - _t(l2) @ gl2)
        left = xp.concatenate([triangular_solve(_t(l1), phi, lower=False, unit=True), gl2], -2)
        g_perm = _t(triangular_solve(upper, _t(left), lower=False, unit=False))
    return _unpermute(g_perm, perm)


def _factor_backward_tensors(lu, g_lower, g_upper):
    """``factor_backward`` before its row permutation, in engine ops (the gradient of L U)."""
    from ..autograd.double_backward import constant
    from .linalg_solvers import solve_triangular
    from .shape import cat
    m, n = lu.shape[-2:]
    k = min(m, n)
    lower = lu[..., :, :k].tril(-1) + constant(xp_of(lu._data).eye(m, k, dtype=lu._data.dtype))
    upper = lu[..., :k, :].triu()
    if m <= n:
        u1, u2, gu1, gu2 = upper[..., :m], upper[..., m:], g_upper[..., :m], g_upper[..., m:]
        phi = (lower.mH @ g_lower - gu2 @ u2.mH).tril(-1) + (gu1 @ u1.mH).triu()
        right = solve_triangular(u1, phi.mH, upper=True).mH
        return solve_triangular(lower.mH, cat([right, gu2], -1), upper=True, unitriangular=True)
    l1, l2, gl1, gl2 = lower[..., :n, :], lower[..., n:, :], g_lower[..., :n, :], g_lower[..., n:, :]
    phi = (l1.mH @ gl1).tril(-1) + (g_upper @ upper.mH - l2.mH @ gl2).triu()
    left = cat([solve_triangular(l1.mH, phi, upper=True, unitriangular=True), gl2], -2)
    return solve_triangular(upper, left.mH, upper=True).mH


def solve(lu, perm, b, transposed):
    """X with A X = B (A^H X = B when ``transposed``) for A = P L U packed in ``lu``."""
    if transposed:  # U^H L^H P^T X = B
        y = triangular_solve(_t(xp_of(lu).triu(lu)), b, lower=True, unit=False)
        return _unpermute(triangular_solve(_t(lu), y, lower=False, unit=True), perm)
    y = triangular_solve(lu, _rows(b, perm), lower=True, unit=True)
    return triangular_solve(lu, y, lower=False, unit=False)


# ---- autograd ops --------------------------------------------------------------------------------
class LuFactor(Function):
    """(LU, pivots, info) of A; the gradient reaches A through LU."""

    uses_inputs, uses_output = False, True

    def __init__(self, pivot):
        self.pivot = pivot

    def forward(self, a):
        self.lu, pivots, info = factor(a, self.pivot)
        self.pivots = pivots
        return self.lu, pivots, info

    def backward(self, g_lu, g_pivots, g_info):
        xp = xp_of(g_lu)
        m = self.lu.shape[-2]
        k = min(self.lu.shape[-2:])
        perm = permutation(self.pivots, m, xp)
        return factor_backward(self.lu, perm, xp.tril(g_lu[..., :, :k], -1), xp.triu(g_lu[..., :k, :]))

    def backward_tensors(self, g_lu, g_pivots, g_info):
        """``factor_backward`` in engine ops on the factor rebuilt as this op's output (P constant)."""
        from ..autograd.double_backward import constant
        xp = xp_of(self.lu)
        m = self.lu.shape[-2]
        perm = permutation(self.pivots, m, xp)
        p = constant(permutation_matrix(perm, self.lu.dtype, xp))
        k = min(self.lu.shape[-2:])
        return p @ _factor_backward_tensors(self.saved_output(0, self.lu), g_lu[..., :, :k].tril(-1),
                                            g_lu[..., :k, :].triu())


class LuSolve(Function):
    """X with op(A) X = B for A = P L U given as (LU, pivots); ``transposed``: op(A) = A^T."""

    uses_output = True

    def __init__(self, transposed):
        self.transposed = transposed

    def forward(self, lu, pivots, b):
        xp = xp_of(lu, b)
        self.lu, self.perm, self.b = lu, permutation(pivots, lu.shape[-1], xp), b
        self.x = solve(lu, self.perm, b, self.transposed)
        return self.x

    def backward(self, g):
        xp = xp_of(g)
        g_b = solve(self.lu, self.perm, g, not self.transposed)
        g_lu = None
        if self.needs_input_grad[0]:
            g_a = -(self.x @ _t(g_b) if self.transposed else g_b @ _t(self.x))
            lower, upper = unpack(self.lu)
            g_pa = _rows(g_a, self.perm)
            g_lu = xp.tril(g_pa @ _t(upper), -1) + xp.triu(_t(lower) @ g_pa)
        return g_lu, None, g_b

    def backward_tensors(self, g):
        """Recomputed as a dense solve with A = P L U built from the packed factor (P constant) and
        differentiated: the same gradients as above, on the graph."""
        from ..autograd.double_backward import constant, recomputed_backward
        from .linalg import solve as dense_solve

        def lu_solve(lu, _, b):
            n = self.lu.shape[-1]
            ones = constant(xp_of(self.lu).eye(n, dtype=self.lu.dtype))
            a = constant(permutation_matrix(self.perm, self.lu.dtype, xp_of(self.lu))) @ \
                ((lu.tril(-1) + ones) @ lu.triu())
            return dense_solve(a.mT if self.transposed else a, b)
        return recomputed_backward(self, lu_solve, [self.lu, None, self.b], g)


# ---- public functions ----------------------------------------------------------------------------
def _check_factorable(A, name, caller="torch.lu_factor"):
    if A.ndim < 2:
        raise RuntimeError(f"{caller}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    if A.dtype not in (_dtype.float32, _dtype.float64, _dtype.complex64, _dtype.complex128):
        raise NotImplementedError(f'"{name}" not implemented for \'{A.dtype.title}\'')


def _check_pivot(A, pivot):
    if not pivot and A.device.type == "cpu" and A.numel():  # torch factors empty matrices all the same
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def _check_info(info, name):
    """torch's error for a singular factor: the first matrix whose U has a zero on its diagonal."""
    flat = move(info._data, "cpu").reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size:
        where = f"(Batch element {bad[0]}): " if info.ndim else ""
        i = flat[bad[0]]
        raise RuntimeError(f"torch.{name}: {where}U[{i},{i}] is zero and using it on lu_solve would result in a "
                           "division by zero. If you still want to perform the factorization, consider calling "
                           "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@writes_out
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)``: the packed LU factors of A (P^T A = L U), the 1-based row swaps and, per matrix,
    the 1-based index of U's first zero diagonal entry (0 where U is invertible)."""
    _check_factorable(A, "lu_cpu")
    _check_pivot(A, pivot)
    lu, pivots, info = LuFactor(pivot)(A)
    if check_errors:
        _check_info(info, "linalg.lu_factor_ex")
    return return_type("linalg_lu_factor_ex", ("LU", "pivots", "info"))(lu, pivots, info)


@writes_out
def lu_factor(A, *, pivot=True):
    """``(LU, pivots)`` of A; raises where a matrix is singular (``lu_factor_ex`` reports that instead)."""
    _check_factorable(A, "lu_cpu")
    _check_pivot(A, pivot)
    lu, pivots, info = LuFactor(pivot)(A)
    _check_info(info, "linalg.lu_factor")
    return return_type("linalg_lu_factor", ("LU", "pivots"))(lu, pivots)


@writes_out
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from packed factors; an empty tensor for what is not unpacked. Differentiable in LU_data."""
    if LU_pivots.dtype != _dtype.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if tuple(LU_pivots.shape[-1:]) != (k,):
        raise ValueError(f"Expected LU_pivots to have shape [{k}] but got {list(LU_pivots.shape[-1:])} instead.")
    empty = LU_data.new_empty(0)
    lower = upper = empty
    if unpack_data:
        lower = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        upper = LU_data[..., :k, :].triu()
    p = empty
    if unpack_pivots:
        xp = xp_of(LU_pivots._data)
        perm = permutation(LU_pivots._data, m, xp)
        p = _new(permutation_matrix(perm, LU_data._data.dtype, xp))
    return return_type("lu_unpack", ("P", "L", "U"))(p, lower, upper)


@writes_out
def linalg_lu(A, *, pivot=True):
    """``(P, L, U)`` with A = P L U (P empty where ``pivot=False``); differentiable in A through L and U."""
    _check_factorable(A, "lu_cpu", "linalg.lu")
    _check_pivot(A, pivot)
    lu, pivots, _ = LuFactor(pivot)(A)
    p, lower, upper = lu_unpack(lu, pivots, unpack_pivots=pivot)
    return return_type("linalg_lu", ("P", "L", "U"))(p, lower, upper)


def _check_solve(LU, pivots, B, left):
    """torch's checks, in its order: the pivots' dtype, then LU's dims and dtype, then the shapes."""
    if pivots.dtype != _dtype.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if LU.ndim < 2:
        raise RuntimeError("torch.linalg.lu_solve: The input tensor A must have at least 2 dimensions.")
    if not (LU.dtype.is_floating_point or LU.dtype.is_complex):
        raise RuntimeError(f"torch.linalg.lu_solve: Expected a floating point or complex tensor as input. "
                           f"Got {LU.dtype.title}")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"torch.linalg.lu_solve: A must be batches of square matrices, but they are "
                           f"{LU.shape[-2]} by {LU.shape[-1]} matrices")
    if pivots.ndim < 1 or pivots.shape[-1] != LU.shape[-1]:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
                           "matrix")
    if LU.dtype != B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{LU.dtype.title} and B of type {B.dtype.title} instead")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if B.ndim < 2 or rows != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({n}x{n} and {'x'.join(map(str, B.shape[-2:]))})")


@writes_out
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (X A = B when not ``left``; A^T for ``adjoint``) for A = P L U given as (LU, pivots) from
    ``lu_factor``; batch dims broadcast."""
    _check_solve(LU, pivots, B, left)
    if device_of(pivots._data) != device_of(LU._data):
        pivots = pivots.to(LU.device)
    if left:
        return LuSolve(adjoint)(LU, pivots, B)
    return LuSolve(not adjoint)(LU, pivots, B.mH).mH


def lu(A, pivot=True, get_infos=False):
    """``torch.lu`` (deprecated, with torch's warning): ``(LU, pivots)``, and ``info`` with ``get_infos``."""
    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                  "removed in a future PyTorch release.", stacklevel=2)
    lu_, pivots, info = lu_factor_ex(A, pivot=pivot)
    if get_infos:
        return return_type("_lu_with_info", ("LU", "pivots", "info"))(lu_, pivots, info)
    return lu_, pivots


@writes_out
def legacy_lu_solve(b, LU_data, LU_pivots):
    """``torch.lu_solve(b, LU_data, LU_pivots)`` (deprecated, with torch's warning): ``linalg.lu_solve`` with its
    arguments in the old order."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solve and will be removed in a future "
                  "PyTorch release. Note that torch.linalg.lu_solve has its arguments reversed.", stacklevel=2)
    return lu_solve(LU_data, LU_pivots, b)

