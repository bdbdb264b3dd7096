"""What ``torch.linalg`` computes from singular values or eigenvalues, for (batches of) real or complex matrices:
``pinv`` (pseudo-inverse, singular values at or below max(atol, rtol * largest) counted as zero),
``matrix_rank``, ``cond``, the spectral norms (2, -2, nuclear) of ``matrix_norm``, ``polar`` and
``matrix_sqrth``.

``pinv`` is one ``Function`` with the gradient of the pseudo-inverse of a matrix of constant rank (Golub and
Pereyra): gA = -P^H G P^H + (I - A P) G^H P P^H + P^H P G^H (I - P A), P = A^+, as torch's (its hermitian form
too); the others are compositions of ``svd``, ``eigh`` and ``svdvals``, differentiable through them.
"""
import math

import numpy as np

from ..autograd.double_backward import constant
from ..autograd.function import Function
from ..tensor import Tensor, _new
from ._common import xp_of
from .linalg import _broadcast_batch
from .linalg_checks import adjoint, check_floating, check_square
from .linalg_decompositions import eigh, eigvalsh, svd, svdvals
from .linalg_solvers import inv_ex
from .reduction import amax, amin, return_type
from .linalg_out import writes_out_castable
from ..amp import autocast_mode


class Pinv(Function):
    """A^+ from the SVD, or from the eigen-decomposition of symmetric A (lower triangle read) with ``hermitian``;
    the same gradient for both, as torch's."""

    uses_inputs, uses_output = True, True

    def __init__(self, atol, rtol, hermitian):
        self.atol, self.rtol, self.hermitian = atol, rtol, hermitian

    def forward(self, a):
        xp = xp_of(a)
        self.a = a
        if self.hermitian:
            values, u = xp.linalg.eigh(a)
            s, vh = xp.abs(values), adjoint(u)
            u = u * xp.sign(values)[..., None, :]
        else:
            u, s, vh = xp.linalg.svd(a, full_matrices=False)
        largest = s.max(-1, keepdims=True) if s.shape[-1] else xp.zeros(s.shape[:-1] + (1,), s.dtype)
        keep = s > _tolerance_array(largest, self.atol, self.rtol)
        s_inv = xp.where(keep, 1 / xp.where(keep, s, 1), 0)
        self.p = ((adjoint(vh) * s_inv[..., None, :]) @ adjoint(u)).astype(a.dtype, copy=False)
        return self.p

    def backward(self, g):
        a, p = self.a, self.p
        xp = xp_of(g)
        left = xp.eye(a.shape[-2], dtype=g.dtype) - a @ p  # I - A A+
        right = xp.eye(a.shape[-1], dtype=g.dtype) - p @ a  # I - A+ A
        return -adjoint(p) @ g @ adjoint(p) + left @ adjoint(g) @ p @ adjoint(p) + adjoint(p) @ p @ adjoint(g) @ right

    def backward_tensors(self, g):
        """``backward`` in engine ops on the rebuilt input and output."""
        a, p = self.saved_input(0, self.a), self.saved_output(0, self.p)
        xp = xp_of(g._data)
        left = constant(xp.eye(a.shape[-2], dtype=g._data.dtype)) - a @ p
        right = constant(xp.eye(a.shape[-1], dtype=g._data.dtype)) - p @ a
        ph = p.mH
        return -ph @ g @ ph + left @ g.mH @ p @ ph + ph @ p @ g.mH @ right


def _tolerance_array(largest, atol, rtol):
    """max(atol, rtol * largest): (..., 1) thresholds for (..., k) values whose largest is ``largest``; atol and
    rtol numbers or arrays of the batch shape."""
    xp = xp_of(largest)
    atol, rtol = (x[..., None] if getattr(x, "ndim", 0) else float(x) for x in (atol, rtol))
    return xp.maximum(atol, largest * rtol)


def _tolerances(A, atol, rtol):
    """(atol, rtol), numbers or arrays, with torch's defaults: rtol = eps * max(m, n) unless only a positive atol
    is given (then rtol = 0)."""
    if rtol is None:
        given = atol is not None and (isinstance(atol, Tensor) or atol > 0)
        rtol = 0.0 if given else float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    atol = 0.0 if atol is None else atol
    return tuple(x._data.astype(A.dtype.to_real().np) if isinstance(x, Tensor) else float(x) for x in (atol, rtol))


def _check_pinv_input(A):
    if A.ndim < 2 or not (A.dtype.is_floating_point or A.dtype.is_complex) or A.dtype.itemsize < 4:
        raise RuntimeError(f"linalg.pinv({A.dtype.title}{{{list(A.shape)}}}): expected a tensor with 2 or more "
                           f"dimensions of float, double, cfloat or cdouble types")


def _check_lapack_dtype(A):
    """torch's refusal (matrix_rank's, lstsq's) of a dtype LAPACK does not take: integers, bool, the half types."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or A.dtype.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")


@writes_out_castable
@autocast_mode.float32("cpu")
def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse: singular values (eigenvalue magnitudes with ``hermitian``) at or below
    max(atol, rtol * the largest) count as zero."""
    _check_pinv_input(A)
    atol, rtol = _tolerances(A, atol, rtol)
    return Pinv(atol, rtol, hermitian)(A)


@writes_out_castable
@autocast_mode.float32("cpu")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular values (eigenvalue magnitudes with ``hermitian``) above max(atol, rtol * the
    largest); ``tol`` is torch's older name for ``atol`` (with rtol = 0)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    _check_lapack_dtype(A)
    if tol is not None:
        atol, rtol = tol, 0.0
    atol, rtol = _tolerances(A, atol, rtol)
    values = (eigvalsh(A).abs() if hermitian else svdvals(A)).detach()._data
    xp = xp_of(values)
    largest = values.max(-1, keepdims=True) if values.shape[-1] else xp.zeros(values.shape[:-1] + (1,), values.dtype)
    return _new((values > _tolerance_array(largest, atol, rtol)).sum(-1).astype(np.int64))


def spectral_norm(A, ord, dim, keepdim):
    """``matrix_norm`` for ord 2 (the largest singular value), -2 (the smallest) and 'nuc' (their sum) over the
    two dims ``dim``."""
    row, col = (d % A.ndim for d in dim)
    values = svdvals(A.movedim((row, col), (-2, -1)))
    result = {2: amax, -2: amin}[ord](values, -1) if ord != "nuc" else values.sum(-1)
    if keepdim:
        for d in sorted((row, col)):
            result = result.unsqueeze(d)
    return result


@writes_out_castable
def cond(A, p=None, *, out=None):
    """The condition number of A in the norm ``p``: the ratio of its extreme singular values for None, 2 and -2
    (any shape), ||A|| ||A^-1|| for 'fro', 'nuc', inf, -inf, 1 and -1 (square A; inf where singular)."""
    from ..linalg import matrix_norm
    if p not in (None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1):
        raise ValueError(f"linalg.cond got an invalid norm type: {p}")
    if A.ndim < 2:
        if p in ("fro", "nuc"):  # torch checks these through their matrix norm
            raise RuntimeError(f"linalg.cond(ord={p}): The input tensor A must have at least 2 dimensions.")
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if p in (None, 2, -2):
        values = svdvals(A)
        if values.shape[-1] == 0:  # an empty matrix's condition number is 0, as torch's
            return values.sum(-1)
        ratio = values[..., 0] / values[..., -1]
        return 1 / ratio if p == -2 else ratio
    check_floating(A, "linalg.inv")
    check_square(A, f"linalg.cond(ord={p})")
    if A.shape[-1] == 0:
        return svdvals(A).sum(-1)
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse.masked_fill((info != 0)[..., None, None], 0), p)
    return value.masked_fill(info != 0, math.inf)


@writes_out_castable
def polar(A, *, out=None):
    """(U, H) with A = U H for m >= n: U with orthonormal columns (the closest to A), H symmetric
    positive-semidefinite; from the reduced SVD, so differentiable where A has full column rank."""
    if A.ndim < 2 or A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"linalg.polar: expected a tensor of shape (*, m, n) with m >= n, but got "
                           f"{list(A.shape)}")
    w, s, vh = svd(A, full_matrices=False)
    return return_type("linalg_polar", ("U", "H"))(w @ vh, (vh.mH * s.unsqueeze(-2)) @ vh)


@writes_out_castable
def matrix_sqrth(A, *, out=None):
    """The symmetric positive-definite square root of symmetric positive-definite A (lower triangle read),
    from ``eigh``."""
    check_square(A, "linalg.matrix_sqrth")
    values, vectors = eigh(A)
    return (vectors * values.sqrt().unsqueeze(-2)) @ vectors.mH


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@autocast_mode.float32("cpu")
def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values): X minimising ||A X - B|| (the least-norm one), as the
    pseudo-inverse's product with B (singular values at or below ``rcond`` times the largest count as zero;
    default eps * max(m, n)). The other fields are filled as torch's CPU drivers fill them: ``rank`` except for
    'gels', ``singular_values`` for 'gelsd' and 'gelss', ``residuals`` (the squared residual norms) for drivers
    but 'gelsy' where m > n and every matrix has full rank; the rest are empty. ``driver`` defaults to 'gelsy'."""
    driver = "gelsy" if driver is None else driver
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    _broadcast_batch(tuple(A.shape[:-2]), tuple(b.shape[:-2]))
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _check_lapack_dtype(A)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {A.dtype.title} and other's dtype {B.dtype.title}")
    m, n = A.shape[-2:]
    rcond = float(np.finfo(A.dtype.np).eps) * max(m, n) if rcond is None else rcond
    solution = pinv(A, atol=0.0, rtol=rcond) @ b
    empty = A.new_zeros(0, dtype=A.dtype.to_real())  # residuals and singular values are real
    rank = matrix_rank(A, atol=0.0, rtol=rcond) if driver != "gels" else empty.long()
    values = svdvals(A).detach() if driver in ("gelsd", "gelss") else empty
    residuals = empty
    if driver != "gelsy" and m > n and bool((matrix_rank(A, atol=0.0, rtol=rcond) == n).all()):
        residuals = ((A @ solution - b).abs() ** 2).sum(-2)
    solution = solution.squeeze(-1) if vector else solution
    return return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))(
        solution, residuals, rank, values)


__all__ = ["lstsq", "pinv", "matrix_rank", "cond", "polar", "matrix_sqrth"]
