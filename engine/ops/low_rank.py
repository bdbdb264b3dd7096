"""Randomized low-rank factorizations (Halko, Martinsson and Tropp 2009): ``svd_lowrank`` and ``pca_lowrank``, as
torch's: the same Gaussian test matrix from the global generator (the engine draws torch's numbers), power
iterations with QR re-orthogonalization, then an exact SVD of the small projected matrix. Engine ops throughout,
so they are differentiable (through QR and SVD) as torch's. Dense real or complex matrices (conjugate
transposes)."""
from .. import _dtype
from .creation import randn
from .legacy_linalg import svd
from .linalg_decompositions import qr


def _reduced_q(a):
    """Q of the reduced QR of a (..., m, k) matrix (``linalg.qr``, differentiable): min(m, k) columns, so that a
    ``q`` larger than a dimension of A gives a basis of that dimension's size, as torch's."""
    return qr(a).Q


def _floating(dtype):
    """The test matrix's dtype: A's where floating or complex (torch's), else float32."""
    return dtype if dtype.is_floating_point or dtype.is_complex else _dtype.float32


def _approximate_basis(a, q, niter, m_matrix):
    """An orthonormal (..., m, q) basis whose span approximates ``a - m_matrix``'s range."""
    def centered(x_of):
        return x_of(a) if m_matrix is None else x_of(a) - x_of(m_matrix)

    r = randn(a.shape[-1], q, dtype=_floating(a.dtype), device=a.device)
    basis = _reduced_q(centered(lambda t: t @ r))
    for _ in range(niter):
        basis = _reduced_q(centered(lambda t: t.mH @ basis))
        basis = _reduced_q(centered(lambda t: t @ basis))
    return basis


def _svd_lowrank(a, q, niter, m_matrix):
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    rows, cols = a.shape[-2:]
    if m_matrix is not None:
        m_matrix = m_matrix.broadcast_to(a.shape)
    if rows < cols:
        a = a.mH
        m_matrix = None if m_matrix is None else m_matrix.mH
    basis = _approximate_basis(a, q, niter, m_matrix)
    projected = basis.mH @ a
    if m_matrix is not None:
        projected = projected - basis.mH @ m_matrix
    u, s, v = svd(projected)
    u = basis @ u
    return (v, s, u) if rows < cols else (u, s, v)


def svd_lowrank(A, q=6, niter=2, M=None):
    """(U, S, V) with ``A - M ~ U diag(S) V^T`` of rank ``q`` (``M`` broadcast to A; ``niter`` power iterations
    sharpen the basis for slowly decaying spectra)."""
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A, q=None, center=True, niter=2):
    """(U, S, V): ``svd_lowrank`` of ``A`` with each column's mean subtracted (``center``); V's columns are the
    principal directions. ``q`` defaults to min(6, m, n)."""
    rows, cols = A.shape[-2:]
    if q is None:
        q = min(6, rows, cols)
    elif not 0 <= q <= min(rows, cols):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(rows, cols)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter, None)


__all__ = ["pca_lowrank", "svd_lowrank"]
