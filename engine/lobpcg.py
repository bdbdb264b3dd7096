"""``torch.lobpcg``: a few extreme eigenpairs of a symmetric positive definite (generalized) problem
``A x = lambda B x`` by the locally optimal block preconditioned conjugate gradient method (Knyazev 2001).

Each iteration searches the span of the current block ``X``, the (preconditioned) residuals ``W = iK (A X - B X
theta)`` and the previous step ``P``; the span is given a B-orthonormal basis (SVQB: the eigendecomposition of its
Gram matrix, dropping directions that became dependent, which is what makes "ortho" robust where plain Cholesky
fails) and the Rayleigh-Ritz problem on it gives the next block. ``method="basic"`` and ``"ortho"`` both run this
robust form. Written against the array module, so it runs on CuPy too; batches loop over their matrices.
The result carries no gradient (torch differentiates it for ``B=None``; the engine does not).
"""
from ._device import array_module
from .tensor import Tensor, _new


def _b_orthonormal(xp, S, B, drop):
    """A B-orthonormal basis of span(S): S V diag(1/sqrt(d)) over the eigenpairs (d, V) of S^T B S, without the
    directions whose d is below ``drop`` times the largest."""
    BS = S if B is None else B @ S
    gram = S.T @ BS
    gram = (gram + gram.T) / 2
    d, V = xp.linalg.eigh(gram)
    keep = d > drop * max(float(d[-1]), 0.0)
    return (S @ V[:, keep]) / xp.sqrt(d[keep])


def _one(A, B, X, iK, k, largest, niter, tol):
    xp = array_module(A)
    n = X.shape[1]
    drop = float(xp.finfo(A.dtype).eps) * 10
    order = (lambda vals: vals[::-1]) if largest else (lambda vals: vals)
    X = _b_orthonormal(xp, X, B, drop)
    theta, C = xp.linalg.eigh(X.T @ A @ X)
    idx = order(xp.arange(theta.shape[0]))[:n]
    theta, X = theta[idx], X @ C[:, idx]
    P = None
    scale = None
    for _ in range(niter):
        AX = A @ X
        BX = X if B is None else B @ X
        R = AX - BX * theta
        scale = float(xp.abs(theta).max()) if scale is None else max(scale, float(xp.abs(theta).max()))
        if float(xp.linalg.norm(R[:, :k], axis=0).max()) <= tol * max(scale, 1.0):
            break
        W = R if iK is None else iK @ R
        blocks = [X, W] if P is None else [X, W, P]
        Q = _b_orthonormal(xp, xp.concatenate(blocks, axis=1), B, drop)
        T = Q.T @ A @ Q
        vals, Z = xp.linalg.eigh((T + T.T) / 2)
        idx = order(xp.arange(vals.shape[0]))[:n]
        theta, X_new = vals[idx], Q @ Z[:, idx]
        P = X_new - X @ (BX.T @ X_new)  # the step: the part of the new block B-orthogonal to the old one
        X = X_new
    return theta[:k], X[:, :k]


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The ``k`` largest (``largest=False``: smallest) eigenvalues of the SPD problem ``A x = lambda B x`` and
    their eigenvectors, from ``X`` (or ``n`` random columns) over at most ``niter`` iterations (default 1000;
    -1: until converged) to residual tolerance ``tol`` (default: the square root of the dtype's epsilon)."""
    if A.shape[-1] != A.shape[-2]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and B.shape != A.shape:
        raise AssertionError(f"A and B must have the same shapes, got {A.shape} and {B.shape}")
    m = A.shape[-1]
    if X is not None:
        n = X.shape[-1]
        k = n if k is None else min(k, n)
    else:
        k = 1 if k is None else k
        n = k if n is None else n
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than 3 x "
                         f"the number of requested eigenpairs (={n})")
    largest = True if largest is None else largest
    niter = 1000 if niter is None else (10 ** 9 if niter < 0 else niter)
    if X is None:
        from .ops.creation import randn
        X = randn(*A.shape[:-1], n, dtype=A.dtype, device=A.device)
    a = A.detach()._data
    xp = array_module(a)
    tol = float(xp.finfo(a.dtype).eps) ** 0.5 if tol is None else tol

    def arr(t):
        return None if t is None else (t.detach()._data if isinstance(t, Tensor) else xp.asarray(t))

    b, x, ik = arr(B), arr(X).astype(a.dtype), arr(iK)
    batch = a.shape[:-2]
    if not batch:
        vals, vecs = _one(a, b, x, ik, k, largest, niter, tol)
    else:
        a2, x2 = a.reshape(-1, m, m), x.reshape(-1, m, n)
        b2 = None if b is None else xp.broadcast_to(b, a.shape).reshape(-1, m, m)
        ik2 = None if ik is None else xp.broadcast_to(ik, a.shape).reshape(-1, m, m)
        pairs = [_one(a2[i], None if b2 is None else b2[i], x2[i], None if ik2 is None else ik2[i], k, largest,
                      niter, tol) for i in range(a2.shape[0])]
        vals = xp.stack([p[0] for p in pairs]).reshape(*batch, k)
        vecs = xp.stack([p[1] for p in pairs]).reshape(*batch, m, k)
    return _new(xp.ascontiguousarray(vals.astype(a.dtype))), _new(xp.ascontiguousarray(vecs.astype(a.dtype)))
