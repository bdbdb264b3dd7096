"""The factorisations of ``torch.linalg`` for (batches of) real or complex matrices, each one ``Function`` with
its gradient: ``cholesky``/``cholesky_ex``, ``qr``, ``eigh``/``eigvalsh`` and ``svd``/``svdvals`` (``eig`` and
``eigvals`` are in linalg_eig). The forwards are the array module's LAPACK (numpy) or cuSOLVER (CuPy) routines.

Gradients (the standard results, written here for real matrices; for complex ones every transpose is the
conjugate transpose, as in torch; E_ij = x_j - x_i for eigenvalues or squared singular values x, off-diagonal,
skew(M) = M - M^T):
- Cholesky A = L L^H: gA = L^-H Phi(L^H gL) L^-1, Phi(X) = (tril(X, -1) + tril(X, -1)^H + diag(X)) / 2
  (symmetric for real A; torch keeps the imaginary diagonal for complex A);
- QR A = QR (m >= n): gA = Q (gR + tril(skew(Q^T gQ) + skew(R gR^T)) R^-T) + (I - Q Q^T) gQ R^-T; for m < n,
  A = [X Y], R = [U V]: X's gradient is the square case's with gQ + Y gV^T, and gY = Q gV;
- eigh A = V diag(L) V^T: gA = V (diag(gL) + skew(V^T gV) / (2E)) V^T (symmetric: A's two triangles share it);
- SVD A = U diag(S) V^T: gA = U (skew(U^T gU) / E S + S skew(V^T gV) / E + diag(gS)) V^T
  + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T); with full matrices only the first min(m, n) columns of
  U and V carry gradient, as in torch.
Complex matrices add what their phases bring: QR's skew part keeps half of its imaginary diagonal; the SVD adds
U diag(i (Im diag(U^H gU) - Im diag(V^H gV)) / 2S) V^H; and a loss that depends on the phases of eigh's or the
SVD's vectors (each fixed only up to e^(i phi)) raises torch's error (check_gauge).
"""
import math

import numpy as np

from ..autograd.double_backward import constant, masked, recomputed_backward
from ..autograd.function import Function
from .linalg_checks import (LinAlgError, adjoint as _h, check_floating, check_gauge, check_matrix, check_square,
                            raise_on_info)
from ._common import xp_of
from .reduction import return_type
from .linalg_out import writes_out
from ..amp import autocast_mode


def _tensor_eye(n, dtype, like):
    """A constant identity tensor of ``like``'s array module."""
    return constant(xp_of(like._data).eye(n, dtype=dtype))


def _tensor_gaps(x):
    """``_reciprocal_gaps`` on a tensor, differentiably (the diagonal masked to 0, never divided by)."""
    gaps = x[..., None, :] - x[..., :, None]
    off = ~xp_of(x._data).eye(x.shape[-1], dtype=bool)
    return masked(1 / masked(gaps, off, 1.0), off)


def _solve_tensors(a, b):
    from .. import linalg
    return linalg.solve(a, b)


def _right_solve(x, r):
    """x R^-H for square R (batched)."""
    return _h(xp_of(x).linalg.solve(r, _h(x)))


# ---- Cholesky ----------------------------------------------------------------------------------
def _cholesky_info(a):
    """LAPACK potrf's info for each matrix of ``a`` (lower triangle read): the order of the first leading minor
    that is not positive-definite, 0 where there is none; column by column, vectorised over the batch."""
    xp = xp_of(a)
    n = a.shape[-1]
    flat = a.reshape(math.prod(a.shape[:-2]), n, n)
    lower = xp.zeros_like(flat)
    info = xp.zeros(flat.shape[0], np.int32)
    for j in range(n):
        pivot = flat[:, j, j].real - (abs(lower[:, j, :j]) ** 2).sum(-1)
        bad = ~(pivot > 0)
        info[(info == 0) & bad] = j + 1
        root = xp.sqrt(xp.where(bad, 1, pivot))
        lower[:, j, j] = root
        below = flat[:, j + 1:, j] - (lower[:, j + 1:, :j] @ lower[:, j, :j, None].conj())[..., 0]
        lower[:, j + 1:, j] = below / root[:, None]
    return info.reshape(a.shape[:-2])


class Cholesky(Function):
    """(L, info): L L^T = A from A's lower triangle (U^T U from its upper one with ``upper``); info as LAPACK's.
    Where a matrix is not positive-definite its factor holds NaN."""

    uses_inputs, uses_output = False, True

    def __init__(self, upper):
        self.upper = upper

    def forward(self, a):
        xp = xp_of(a)
        source = _h(a) if self.upper else a
        try:
            lower = xp.linalg.cholesky(source)
            # numpy raises; CuPy returns the partial factor, whose failing pivot (left on the diagonal) is not
            # positive
            failed = xp is not np and not bool((xp.diagonal(lower, 0, -2, -1) > 0).all())
        except np.linalg.LinAlgError:
            failed = True
        if failed:
            info = _cholesky_info(source)
            eye = xp.eye(a.shape[-1], dtype=a.dtype)
            lower = xp.linalg.cholesky(xp.where((info == 0)[..., None, None], source, eye))
            lower = xp.where((info == 0)[..., None, None], lower, xp.nan)
        else:
            info = xp.zeros(a.shape[:-2], np.int32)
        self.lower = lower.astype(a.dtype, copy=False)
        return (_h(self.lower) if self.upper else self.lower), info

    def backward(self, g, g_info):
        xp, lower = xp_of(g), self.lower
        if self.upper:
            g = _h(g)
        phi = _h(lower) @ g
        strict = xp.tril(phi, -1)
        # Phi's Hermitian part; torch keeps the imaginary half-diagonal as well (zero for real matrices)
        middle = 0.5 * (strict + _h(strict) + xp.tril(xp.triu(phi)))
        inv_h = xp.linalg.solve(_h(lower), middle)  # L^-H Phi
        return _h(xp.linalg.solve(_h(lower), _h(inv_h)))  # (L^-H (L^-H Phi)^H)^H = L^-H Phi L^-1

    def backward_tensors(self, g, g_info):
        """``backward`` in engine ops on the factor rebuilt as this op's output (so differentiable again)."""
        from .. import tril, triu
        out = self.saved_output(0, _h(self.lower) if self.upper else self.lower)
        lower = out.mH if self.upper else out
        if self.upper:
            g = g.mH
        phi = lower.mH @ g
        strict = tril(phi, -1)
        middle = 0.5 * (strict + strict.mH + tril(triu(phi)))
        inv_h = _solve_tensors(lower.mH, middle)
        return _solve_tensors(lower.mH, inv_h.mH).mH


@writes_out
@autocast_mode.float32("cpu")
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor and LAPACK's status (the order of the first leading minor that is not
    positive-definite; 0 on success) of each matrix; ``check_errors`` raises LinAlgError instead."""
    check_square(A, "linalg.cholesky")
    factor, info = Cholesky(upper)(A)
    if check_errors:
        raise_on_info(info._data, "linalg.cholesky_ex", _not_positive_definite)
    return return_type("linalg_cholesky_ex", ("L", "info"))(factor, info)


def _not_positive_definite(order):
    return (f"The factorization could not be completed because the input is not positive-definite (the leading "
            f"minor of order {order} is not positive-definite).")


@writes_out
@autocast_mode.float32("cpu")
def cholesky(A, *, upper=False, out=None):
    """L with A = L L^T (U with A = U^T U when ``upper``) for symmetric positive-definite A; LinAlgError
    otherwise."""
    check_square(A, "linalg.cholesky")
    factor, info = Cholesky(upper)(A)
    raise_on_info(info._data, "linalg.cholesky", _not_positive_definite)
    return factor


# ---- QR ----------------------------------------------------------------------------------------
def _tril_skew(x):
    """The lower triangle of x - x^H with its (imaginary) diagonal halved."""
    xp = xp_of(x)
    skew = xp.tril(x - _h(x))
    if skew.dtype.kind == "c":
        diagonal = xp.diagonal(skew, 0, -2, -1)
        skew = skew - xp.eye(x.shape[-1], dtype=skew.dtype) * (0.5 * diagonal)[..., None, :]
    return skew


def _tril_skew_tensor(x):
    """``_tril_skew`` in engine ops."""
    from .. import tril
    skew = tril(x - x.mH)
    if skew.dtype.is_complex:
        skew = skew - _tensor_eye(x.shape[-1], skew._data.dtype, x) * (0.5 * skew.diagonal(0, -2, -1))[..., None, :]
    return skew


def _qr_square_grad_tensors(q, r, g_q, g_r):
    """``_qr_square_grad`` in engine ops."""
    qgq = q.mH @ g_q
    inner = _tril_skew_tensor(qgq + r @ g_r.mH)
    return q @ (g_r + _solve_tensors(r, inner.mH).mH) + _solve_tensors(r, (g_q - q @ qgq).mH).mH


def _qr_square_grad(q, r, g_q, g_r):
    """The gradient of A = QR for m >= n (Q reduced or square)."""
    qgq = _h(q) @ g_q
    rgr = r @ _h(g_r)
    inner = _tril_skew(qgq + rgr)
    return q @ (g_r + _right_solve(inner, r)) + _right_solve(g_q - q @ qgq, r)


class Qr(Function):
    uses_inputs, uses_output = True, True

    def __init__(self, mode):
        self.mode = mode

    def forward(self, a):
        xp = xp_of(a)
        self.a = a
        if self.mode == "r":
            r = xp.linalg.qr(a, mode="r").astype(a.dtype, copy=False)
            return xp.zeros((0,), a.dtype), r
        q, r = xp.linalg.qr(a, mode=self.mode)
        self.q, self.r = q.astype(a.dtype, copy=False), r.astype(a.dtype, copy=False)
        return self.q, self.r

    def _check_differentiable(self):
        """torch's errors for the modes without a gradient; the input's (m, n) otherwise."""
        m, n = self.a.shape[-2:]
        if self.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                               "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                               "linalg.qr.")
        if self.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        return m, n

    def backward(self, g_q, g_r):
        m, n = self._check_differentiable()
        xp = xp_of(self.q)
        q, r = self.q, self.r
        g_q = xp.zeros_like(q) if g_q is None else g_q
        g_r = xp.zeros_like(r) if g_r is None else g_r
        if m >= n:
            return _qr_square_grad(q, r, g_q, g_r)
        y, g_v = self.a[..., m:], g_r[..., m:]
        g_x = _qr_square_grad(q, r[..., :m], g_q + y @ _h(g_v), g_r[..., :m])
        return xp.concatenate([g_x, q @ g_v], -1)

    def backward_tensors(self, g_q, g_r):
        """``backward`` in engine ops on the rebuilt input and outputs."""
        from .shape import cat
        m, n = self._check_differentiable()
        q, r = self.saved_output(0, self.q), self.saved_output(1, self.r)
        if m >= n:
            return _qr_square_grad_tensors(q, r, g_q, g_r)
        y, g_v = self.saved_input(0, self.a)[..., m:], g_r[..., m:]
        g_x = _qr_square_grad_tensors(q, r[..., :m], g_q + y @ g_v.mH, g_r[..., :m])
        return cat([g_x, q @ g_v], -1)


@writes_out
@autocast_mode.float32("cpu")
def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = QR, Q with orthonormal columns and R upper triangular: ``reduced`` (Q m x k, R k x n,
    k = min(m, n)), ``complete`` (Q m x m) or ``r`` (R alone, Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           f"or 'complete'")
    check_matrix(A, "linalg.qr")
    q, r = Qr(mode)(A)
    return return_type("linalg_qr", ("Q", "R"))(q, r)


# ---- eigh --------------------------------------------------------------------------------------
def _reciprocal_gaps(x):
    """1 / (x_j - x_i) at (i, j) off the diagonal, 0 on it."""
    xp = xp_of(x)
    gaps = x[..., None, :] - x[..., :, None]
    off = ~xp.eye(x.shape[-1], dtype=bool)
    return xp.where(off, 1 / xp.where(off, gaps, 1), 0)


class Eigh(Function):
    uses_inputs, uses_output = False, True

    def __init__(self, uplo, vectors):
        self.uplo, self.vectors = uplo, vectors

    def forward(self, a):
        xp = xp_of(a)
        values, vectors = xp.linalg.eigh(a, UPLO=self.uplo)
        self.values, self.v = values.astype(a.real.dtype, copy=False), vectors.astype(a.dtype, copy=False)
        return (self.values, self.v) if self.vectors else self.values

    def backward(self, g_values, g_vectors=None):
        xp, v = xp_of(self.v), self.v
        inner = xp.zeros(v.shape, v.dtype)
        if g_values is not None:
            inner += xp.eye(v.shape[-1], dtype=v.dtype) * g_values[..., None, :]
        if g_vectors is not None:
            vgv = _h(v) @ g_vectors
            if vgv.dtype.kind == "c":
                check_gauge(xp.diagonal(vgv, 0, -2, -1).imag, "linalg_eigh_backward", "eigenvectors",
                            "quantity, so it is ill-defined.")
            inner += 0.5 * (vgv - _h(vgv)) * _reciprocal_gaps(self.values)
        return v @ inner @ _h(v)

    def backward_tensors(self, g_values, g_vectors=None):
        """``backward`` in engine ops on the rebuilt outputs; eigvalsh's as eigh's first output's (its
        gradient depends on the eigenvectors too), on A rebuilt from its factors (the input is not kept)."""
        if not self.vectors:
            rebuilt = (self.v * self.values[..., None, :]) @ _h(self.v)  # A (its read triangle) from the factors
            return recomputed_backward(self, lambda a: Eigh(self.uplo, True)(a)[0], (rebuilt,), g_values)
        values, v = self.saved_output(0, self.values), self.saved_output(1, self.v)
        n = v.shape[-1]
        vgv = v.mH @ g_vectors
        if vgv.dtype.is_complex:
            check_gauge(xp_of(vgv._data).diagonal(vgv._data, 0, -2, -1).imag, "linalg_eigh_backward",
                        "eigenvectors", "quantity, so it is ill-defined.")
        inner = _tensor_eye(n, v._data.dtype, v) * g_values[..., None, :] \
            + 0.5 * (vgv - vgv.mH) * _tensor_gaps(values)
        return v @ inner @ v.mH


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@writes_out
@autocast_mode.float32("cpu")
def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, read from its ``UPLO`` triangle."""
    _check_uplo(UPLO)
    check_square(A, "linalg.eigh", dtype=False)
    check_floating(A, "linalg.eigh")
    values, vectors = Eigh(UPLO, True)(A)
    return return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))(values, vectors)


@writes_out
@autocast_mode.float32("cpu")
def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of symmetric A, read from its ``UPLO`` triangle."""
    _check_uplo(UPLO)
    check_square(A, "linalg.eigh", dtype=False)
    check_floating(A, "linalg.eigh")
    return Eigh(UPLO, False)(A)


# ---- SVD ---------------------------------------------------------------------------------------
class Svd(Function):
    """(U, S, Vh), or S alone without ``vectors`` (its gradient still needs U and V)."""

    uses_inputs, uses_output = False, True

    def __init__(self, full_matrices, vectors):
        self.full_matrices, self.vectors = full_matrices, vectors

    def forward(self, a):
        xp = xp_of(a)
        u, s, vh = xp.linalg.svd(a, full_matrices=self.full_matrices and self.vectors)
        u, vh = u.astype(a.dtype, copy=False), vh.astype(a.dtype, copy=False)
        s = s.astype(a.real.dtype, copy=False)
        k = s.shape[-1]
        self.u, self.s, self.v = u[..., :k], s, _h(vh[..., :k, :])
        self.u_full, self.vh_full = u, vh
        return (u, s, vh) if self.vectors else s

    def backward(self, g_u, g_s=None, g_vh=None):
        if not self.vectors:
            g_u, g_s = None, g_u
        u, s, v = self.u, self.s, self.v
        xp = xp_of(s)
        k = s.shape[-1]
        inner = xp.zeros(s.shape + (k,), u.dtype)
        phase_u = phase_v = 0  # Im diag(U^H gU), Im diag(V^H gV): zero but for complex matrices
        if g_s is not None:
            inner += xp.eye(k, dtype=s.dtype) * g_s[..., None, :]
        g_a = 0
        if g_u is not None:
            g_u = g_u[..., :k]
            ugu = _h(u) @ g_u
            inner += (ugu - _h(ugu)) * _reciprocal_gaps(s ** 2) * s[..., None, :]
            phase_u = xp.diagonal(ugu, 0, -2, -1).imag
            if u.shape[-2] > k:
                g_a = (g_u - u @ ugu) / s[..., None, :] @ _h(v)
        if g_vh is not None:
            g_v = _h(g_vh[..., :k, :])
            vgv = _h(v) @ g_v
            inner += s[..., :, None] * ((vgv - _h(vgv)) * _reciprocal_gaps(s ** 2))
            phase_v = xp.diagonal(vgv, 0, -2, -1).imag
            if v.shape[-2] > k:
                g_a = g_a + u @ _h((g_v - v @ vgv) / s[..., None, :])
        if inner.dtype.kind == "c" and (g_u is not None or g_vh is not None):
            check_gauge(phase_u + phase_v, "svd_backward", "singular vectors", "phase term, making it ill-defined.")
            # A = U S V^H is unchanged by U D, V D for a diagonal unitary D: half of the phase each
            inner += xp.eye(k, dtype=inner.dtype) * (0.5j * (phase_u - phase_v) / s)[..., None, :]
        return g_a + u @ inner @ _h(v)

    def backward_tensors(self, g_u, g_s=None, g_vh=None):
        """``backward`` in engine ops on the rebuilt outputs; svdvals' as svd's second output's (its gradient
        depends on the singular vectors too), on A rebuilt from its factors (the input is not kept)."""
        if not self.vectors:
            rebuilt = (self.u * self.s[..., None, :]) @ _h(self.v)  # A from the factors
            return recomputed_backward(self, lambda a: Svd(False, True)(a)[1], (rebuilt,), g_u)
        k = self.s.shape[-1]
        u_full, s = self.saved_output(0, self.u_full), self.saved_output(1, self.s)
        u, v = u_full[..., :k], self.saved_output(2, self.vh_full)[..., :k, :].mH
        g_u, g_v = g_u[..., :k], g_vh[..., :k, :].mH
        ugu, vgv = u.mH @ g_u, v.mH @ g_v
        gaps = _tensor_gaps(s ** 2)
        inner = _tensor_eye(k, u._data.dtype, u) * g_s[..., None, :] + (ugu - ugu.mH) * gaps * s[..., None, :] \
            + s[..., :, None] * ((vgv - vgv.mH) * gaps)
        if inner.dtype.is_complex:
            phase_u, phase_v = ugu.diagonal(0, -2, -1).imag, vgv.diagonal(0, -2, -1).imag
            check_gauge((phase_u + phase_v)._data, "svd_backward", "singular vectors",
                        "phase term, making it ill-defined.")
            inner = inner + _tensor_eye(k, inner._data.dtype, u) * (0.5j * (phase_u - phase_v) / s)[..., None, :]
        g_a = u @ inner @ v.mH
        if u.shape[-2] > k:
            g_a = g_a + (g_u - u @ ugu) / s[..., None, :] @ v.mH
        if v.shape[-2] > k:
            g_a = g_a + u @ ((g_v - v @ vgv) / s[..., None, :]).mH
        return g_a


@writes_out
@autocast_mode.float32("cpu")
def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending: U m x m and Vh n x n with ``full_matrices``, else
    m x k and k x n (k = min(m, n)). ``driver`` (a cuSOLVER choice in torch) is accepted and ignored."""
    check_matrix(A, "linalg.svd")
    u, s, vh = Svd(full_matrices, True)(A)
    return return_type("linalg_svd", ("U", "S", "Vh"))(u, s, vh)


@writes_out
@autocast_mode.float32("cpu")
def svdvals(A, *, driver=None, out=None):
    """The singular values of A, descending."""
    check_matrix(A, "linalg.svd")
    return Svd(False, False)(A)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "qr", "eigh", "eigvalsh", "svd", "svdvals"]
