"""The solvers of ``torch.linalg`` for (batches of) real or complex matrices, written on the engine's
differentiable ops: ``det``, ``solve_triangular``, ``inv``/``inv_ex``, ``solve``/``solve_ex`` (with LAPACK's
status ``info`` and ``LinAlgError`` for a singular matrix), ``tensorinv``, ``tensorsolve`` and the LDL^T
factorisation of symmetric (L D L^H of Hermitian) matrices (``ldl_factor``/``ldl_factor_ex``/``ldl_solve``:
LAPACK's sytrf/sytrs or hetrf/hetrs through scipy, forward only as in torch).

``info`` costs nothing when every matrix is invertible: it is computed (by ``lu.factor``, which picks LAPACK's
pivots) only after the fast path failed (numpy's LinAlgError, CuPy's non-finite results), then the singular
matrices' results are NaN. The check reads arrays, not tensors, so that a traced (exported) model sees only the
op itself.
"""
import math

import numpy as np

from .._device import device_of, move
from ..amp import autocast_mode
from ..tensor import _new
from . import linalg as _products
from .linalg_checks import adjoint, check_floating, check_matrix, check_square, raise_on_info
from .lu import factor
from ._common import xp_of
from .reduction import return_type
from .linalg_out import writes_out, writes_out_castable


# ---- inverse, determinant and solve of complex matrices too ------------------------------------
class Inverse(_products.Inverse):
    """A^-1; the gradient -A^-H G A^-H (for real A, -A^-T G A^-T)."""

    def backward(self, g):
        yh = adjoint(self.y)
        return -(yh @ g @ yh)


class Det(_products.Det):
    """det A; the gradient g conj(det A) A^-H, 0 where det A is 0 (torch's, not the adjugate)."""

    def backward(self, g):
        xp = xp_of(g)
        singular = (self.y == 0)[..., None, None]
        invertible = xp.where(singular, xp.eye(self.a.shape[-1], dtype=self.a.dtype), self.a)
        return (g * self.y.conj())[..., None, None] * adjoint(xp.linalg.inv(invertible))


class Solve(_products.Solve):
    """X with A X = B; the gradients gB = A^-H G and gA = -gB X^H."""

    def backward(self, g):
        xp = xp_of(g)
        g2 = g[..., None] if self.vector else g
        gb = xp.linalg.solve(adjoint(self.a), g2)
        ga = -gb @ adjoint(self.x) if self.needs_input_grad[0] else None
        return ga, (gb[..., 0] if self.vector else gb)


@writes_out
def det(A, *, out=None):
    """The determinant of each square matrix (real or complex)."""
    check_square(A, "linalg.det")
    return Det()(A)


# ---- triangular solves -------------------------------------------------------------------------
def _triangle(a, upper, unitriangular):
    """The triangle of ``a`` a triangular solve reads (with ones on the diagonal when ``unitriangular``)."""
    if not unitriangular:
        return a.triu() if upper else a.tril()
    strict = a.triu(1) if upper else a.tril(-1)
    return strict + a.new_ones(a.shape[-1]).diag()


def _broadcast_batches(a, b):
    """``a`` and ``b`` expanded to their common batch shape (all dims but the last two); torch's error, which names
    b's size first, where they do not broadcast."""
    batch = _products._broadcast_batch(tuple(b.shape[:-2]), tuple(a.shape[:-2]))
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


@writes_out
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with T X = B (X T = B when not ``left``) for the upper or lower triangle T of A (unit diagonal with
    ``unitriangular``); batch dims broadcast. The gradient reaches only the triangle read."""
    if B.ndim < 2:
        check_matrix(A, "linalg.solve_triangular", dtype=False)
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    check_square(A, "linalg.solve_triangular", dtype=False)
    if (B.shape[-2] if left else B.shape[-1]) != A.shape[-1]:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation {equation} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    check_floating(A, "linalg.solve_triangular")
    a, b = _broadcast_batches(A, B)
    t = _triangle(a, upper, unitriangular)
    if left:
        return Solve(False)(t, b)
    return Solve(False)(t.mT, b.mT).mT


# ---- inverse and solve with LAPACK's status ----------------------------------------------------
def _lu_info(a):
    """getrf's info for each matrix: the 1-based index of U's first zero diagonal entry, 0 when invertible.
    Asked only after LAPACK refused a matrix, so a pivot that rounding left tiny instead of zero
    (|u_jj| <= n eps max|A|, as complex elimination mostly leaves it) counts as the zero LAPACK met."""
    data = a.detach()._data
    xp = xp_of(data)
    lu, _, info = factor(data)
    n = data.shape[-1]
    scale = xp.abs(data).max((-2, -1)) if data.size else xp.zeros(data.shape[:-2], data.real.dtype)
    tiny = xp.abs(xp.diagonal(lu, 0, -2, -1)) <= n * np.finfo(data.dtype).eps * scale[..., None]
    first = xp.where(tiny.any(-1), tiny.argmax(-1) + 1, 0)
    return xp.where(info != 0, info, first).astype(np.int32)


def _with_info(compute, a, *others):
    """``(compute(a, *others), info)``: the fast path first; after a failure, the singular matrices of ``a``
    swapped for the identity (their results NaN), so that the others' results and gradients stand."""
    xp = xp_of(a._data)
    try:
        result = compute(a, *others)
        # numpy raises; CuPy gives non-finite values (reading them waits for the GPU, as torch's check does)
        if xp is np or bool(xp.isfinite(result._data).all()):
            return result, _new(xp.zeros(a.shape[:-2], np.int32))
    except np.linalg.LinAlgError:
        pass
    info = _new(_lu_info(a))
    eye = a.new_ones(a.shape[-1]).diag()
    result = compute(a.where(~(info != 0)[..., None, None], eye), *others)
    singular = (info != 0).reshape(tuple(info.shape) + (1,) * (result.ndim - info.ndim))
    return result.masked_fill(singular, math.nan), info


def _singular_inverse(index):
    return (f"The diagonal element {index} is zero, the inversion could not be completed because the input matrix "
            f"is singular.")


@writes_out
def inv_ex(A, *, check_errors=False, out=None):
    """(A^-1, info): info as LAPACK's getrf (the index of a zero pivot; 0 when invertible)."""
    check_square(A, "linalg.inv")
    inverse, info = _with_info(lambda a: Inverse()(a), A)
    if check_errors:
        raise_on_info(info._data, "linalg.inv_ex", _singular_inverse)
    return return_type("linalg_inv_ex", ("inverse", "info"))(inverse, info)


@autocast_mode.float32("cpu")
@writes_out
def inv(A, *, out=None):
    """A^-1; LinAlgError for a singular matrix."""
    inverse, info = inv_ex(A)
    raise_on_info(info._data, "linalg.inv", _singular_inverse)
    return inverse


def _is_vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _check_solve_shapes(A, B, left):
    """torch's checks of B against A for ``solve``: a vector B (see _is_vector_rhs) only on the left, B's rows
    (columns when not ``left``) of A's size, batch dims that broadcast."""
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    n, vector = A.shape[-1], _is_vector_rhs(A, B)
    rows, cols = (B.shape[-1], 1) if vector else tuple(B.shape[-2:])
    if (rows if left else cols) != n:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'} "
                           f"= B ({n}x{n} and {rows}x{cols})")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    if not vector:
        _products._broadcast_batch(tuple(B.shape[:-2]), tuple(A.shape[:-2]))


def _solve(a, b, left):
    if left:
        return Solve(_is_vector_rhs(a, b))(a, b)
    return Solve(False)(a.mT, b.mT).mT


@writes_out
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(X, info) with A X = B (X A = B when not ``left``); B a (batch of) vector(s) where torch reads it so."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex):  # torch's first check, before the shapes
        check_floating(A, "linalg.solve")
    check_square(A, "linalg.solve", dtype=False)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{A.dtype.title} and B of type {B.dtype.title} instead")
    _check_solve_shapes(A, B, left)
    check_floating(A, "linalg.solve")  # the half types: refused by the kernel, after the shapes
    result, info = _with_info(lambda a, b: _solve(a, b, left), A, B)
    if check_errors:
        raise_on_info(info._data, "torch.linalg.solve_ex", _singular_solve)
    return return_type("linalg_solve_ex", ("result", "info"))(result, info)


def _singular_solve(index):
    return "The solver failed because the input matrix is singular."


@autocast_mode.float32("cpu")
@writes_out
def solve(A, B, *, left=True, out=None):
    """X with A X = B (X A = B when not ``left``); LinAlgError for a singular A."""
    result, info = solve_ex(A, B, left=left)
    raise_on_info(info._data, "torch.linalg.solve", _singular_solve)
    return result


# ---- tensor forms ------------------------------------------------------------------------------
@writes_out_castable
def tensorinv(A, ind=2, *, out=None):
    """The inverse of A for ``tensordot(A, ., ind)``: shape A.shape[ind:] + A.shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])


@writes_out_castable
def tensorsolve(A, B, dims=None, *, out=None):
    """X with ``tensordot(A, X, X.ndim) = B``; ``dims`` of A are moved to its end first."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    rows, shape = B.numel(), tuple(A.shape[B.ndim:])
    if rows != math.prod(shape):  # torch's message, its numbers those of this check
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {math.prod(shape)} != {rows}")
    return solve(A.reshape(rows, rows), B.reshape(rows)).reshape(shape)


# ---- LDL^T (Bunch-Kaufman) ---------------------------------------------------------------------
def _lapack(kind, dtype, hermitian):
    """scipy's LAPACK routine ``kind`` ('trf' or 'trs') for ``dtype``: the Hermitian (he) one for complex
    Hermitian matrices, else the symmetric (sy) one."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        raise RuntimeError("engine.linalg.ldl_factor and ldl_solve need scipy (pip install scipy)") from None
    prefix = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}[np.dtype(dtype).name]
    return getattr(lapack, prefix + ("he" if hermitian and prefix in "cz" else "sy") + kind)


@writes_out
def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    """(LD, pivots, info): LAPACK sytrf's compact L D L^T of symmetric A (hetrf's L D L^H of Hermitian A with
    ``hermitian``; lower triangle read): L's strict lower part and the 1x1 and 2x2 blocks of D in LD, the
    interchanges in ``pivots`` (1-based, negative for 2x2 blocks). Not differentiable, as in torch."""
    check_square(A, "torch.linalg.ldl_factor_ex")
    check_floating(A, "torch.linalg.ldl_factor_ex")
    a = move(A.detach()._data, "cpu")
    n = a.shape[-1]
    flat = a.reshape(math.prod(a.shape[:-2]), n, n)
    trf = _lapack("trf", a.dtype, hermitian)
    ld, pivots, info = np.empty_like(flat), np.empty(flat.shape[:2], np.int32), np.empty(len(flat), np.int32)
    for i, matrix in enumerate(flat):
        packed, pivots[i], info[i] = trf(matrix, lower=1)
        ld[i] = np.tril(packed)
    if check_errors:
        raise_on_info(info.reshape(a.shape[:-2]), "torch.linalg.ldl_factor",
                      lambda index: f"The factorization could not be completed because D[{index}, {index}] is zero.")
    device = device_of(A._data)
    return return_type("linalg_ldl_factor_ex", ("LD", "pivots", "info"))(
        _new(move(ld.reshape(a.shape), device)), _new(move(pivots.reshape(a.shape[:-1]), device)),
        _new(move(info.reshape(a.shape[:-2]), device)))


@writes_out
def ldl_factor(A, *, hermitian=False, out=None):
    """(LD, pivots) of ``ldl_factor_ex``, raising LinAlgError where D is singular."""
    ld, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return return_type("linalg_ldl_factor", ("LD", "pivots"))(ld, pivots)


@writes_out
def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ``ldl_factor``'s (LD, pivots) of A (LAPACK's sytrs, or hetrs with ``hermitian``;
    batch dims broadcast)."""
    check_square(LD, "torch.linalg.ldl_solve")
    if B.ndim == 0:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions")
    if B.ndim == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {LD.shape[-2]} by "
                           f"{LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if B.dtype is not LD.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {B.dtype.title} and A of "
                           f"type {LD.dtype.title} instead.")
    ld, piv, b = (move(t.detach()._data, "cpu") for t in (LD, pivots, B))
    batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
    n, k = ld.shape[-1], b.shape[-1]
    count = math.prod(batch)
    ld = np.broadcast_to(ld, batch + (n, n)).reshape(count, n, n)
    piv = np.broadcast_to(piv, batch + (n,)).reshape(count, n)
    b = np.broadcast_to(b, batch + (n, k)).reshape(count, n, k)
    trs = _lapack("trs", ld.dtype, hermitian)
    solvable = len(ld) and n and k  # LAPACK refuses empty matrices: their solution is empty too
    x = np.stack([trs(ld[i], piv[i], b[i], lower=1)[0] for i in range(len(ld))]) if solvable else b.copy()
    return _new(move(x.reshape(batch + (n, k)).astype(B._data.dtype, copy=False), device_of(B._data)))


__all__ = ["det", "solve_triangular", "inv", "inv_ex", "solve", "solve_ex", "tensorinv", "tensorsolve", "ldl_factor",
           "ldl_factor_ex", "ldl_solve"]
