"""The linear algebra PyTorch keeps under top-level names beside ``torch.linalg``, for (batches of) real matrices:

- ``slogdet`` (sign and log|det|) and ``logdet`` (NaN for a negative determinant, -inf for a singular matrix); the
  gradient of log|det A| is A^-T (nonsingular inputs);
- ``triangular_solve`` (deprecated, with PyTorch's warning): a solve with the triangle of a matrix, written with
  the engine's differentiable ``solve`` on that triangle, so its gradient reaches only the triangle it reads;
- ``cholesky_solve`` and ``cholesky_inverse``: solves with L L^T for a Cholesky factor L, read from its triangle,
  with PyTorch's gradient (that of the product with the whole factor);
- ``lu``, ``lu_solve`` and ``lu_unpack`` (``lu.py``; the first two deprecated, with PyTorch's warnings);
- ``matrix_exp`` (scipy's ``expm``; its gradient is the top-right block of the exponential of
  [[A^T, G], [0, A^T]]) and ``pinverse`` (numpy's ``pinv``; the gradient of the pseudo-inverse of a matrix of
  full rank).
"""
import warnings

import numpy as np

from .._device import device_of, move
from ..autograd.function import Function
from ..tensor import register_method
from ._common import xp_of
from .linalg import _check_square, _t, solve
from .lu import legacy_lu_solve as lu_solve, lu, lu_unpack
from .reduction import return_type


class Slogdet(Function):
    def forward(self, a):
        self.a = a
        sign, logabsdet = xp_of(a).linalg.slogdet(a)
        return xp_of(a).asarray(sign, a.dtype), xp_of(a).asarray(logabsdet, a.dtype)

    def backward(self, g_sign, g_logabsdet):
        if g_logabsdet is None:
            return (None,)
        return (g_logabsdet[..., None, None] * _t(xp_of(self.a).linalg.inv(self.a)),)


def _checked(input, name):
    _check_square(input, name)
    if not input.is_floating_point():
        raise RuntimeError(f"{name}: Expected a floating point tensor as input. Got {input.dtype}")


def slogdet(input):
    """``(sign, logabsdet)``: the determinant's sign (0 when singular) and the log of its magnitude."""
    _checked(input, "linalg.slogdet")
    sign, logabsdet = Slogdet()(input)
    return return_type("slogdet", ("sign", "logabsdet"))(sign, logabsdet)


def logdet(input):
    """log det A: NaN where the determinant is negative, -inf where it is zero."""
    _checked(input, "logdet")
    sign, logabsdet = Slogdet()(input)
    nan = logabsdet.new_tensor(np.nan)
    return logabsdet.where(sign >= 0, nan)


def _broadcast_batches(b, a):
    """``b`` and ``a`` expanded to their common batch shape (all dims but the last two)."""
    batch = tuple(np.broadcast_shapes(tuple(b.shape[:-2]), tuple(a.shape[:-2])))
    return b.expand(*batch, *b.shape[-2:]), a.expand(*batch, *a.shape[-2:])


def _triangle(a, upper, unitriangular):
    """The triangle of ``a`` a triangular solve reads (with ones on the diagonal when ``unitriangular``)."""
    if not unitriangular:
        return a.triu() if upper else a.tril()
    strict = a.triu(1) if upper else a.tril(-1)
    return strict + a.new_ones(a.shape[-1]).diag()


def _solve_triangle(b, a, upper, transpose, unitriangular):
    b, a = _broadcast_batches(b, a)
    t = _triangle(a, upper, unitriangular)
    return solve(t.mT if transpose else t, b), a


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: X with T X = b (T^T X = b with ``transpose``) for the upper or lower
    triangle T of ``A``, and a copy of ``A`` in the batch shape of both."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    if b.ndim < 2 or A.ndim < 2:
        raise RuntimeError(f"triangular_solve: b ({list(b.shape)}) and A ({list(A.shape)}) must be batches of "
                           f"matrices")
    _check_square(A, "triangular_solve")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"triangular_solve: incompatible shapes of A ({list(A.shape)}) and b ({list(b.shape)})")
    solution, a = _solve_triangle(b, A, upper, transpose, unitriangular)
    return return_type("triangular_solve", ("solution", "cloned_coefficient"))(solution, a.clone())


class CholeskySolve(Function):
    """X = (L L^T)^-1 B from the triangle of L (U^T U with ``upper``). PyTorch's gradient for the factor is that of
    the product with the whole of L, -(G_B X^T + X G_B^T) L, and so is this one."""

    def __init__(self, upper):
        self.upper = upper

    def forward(self, b, l):
        xp = xp_of(b, l)
        batch = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
        b, l = xp.broadcast_to(b, batch + b.shape[-2:]), xp.broadcast_to(l, batch + l.shape[-2:])
        t = xp.triu(l) if self.upper else xp.tril(l)
        self.product = _t(t) @ t if self.upper else t @ _t(t)
        self.l = l
        self.x = xp.linalg.solve(self.product, b)
        return self.x

    def backward(self, g):
        g_b = xp_of(g).linalg.solve(self.product, g)
        common = g_b @ _t(self.x)
        common = common + _t(common)
        return g_b, -(self.l @ common) if self.upper else -(common @ self.l)


def cholesky_solve(B, L, upper=False):
    """X with A X = B for A = L L^T (``upper``: A = U^T U), from the Cholesky factor alone."""
    _check_square(L, "cholesky_solve")
    if B.ndim < 2 or L.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"cholesky_solve: incompatible shapes of B ({list(B.shape)}) and L ({list(L.shape)})")
    return CholeskySolve(upper)(B, L)


def cholesky_inverse(L, upper=False):
    """(L L^T)^-1 (``upper``: (U^T U)^-1) from the Cholesky factor."""
    _check_square(L, "cholesky_inverse")
    return CholeskySolve(upper)(L.new_ones(L.shape[-1]).diag().detach(), L)


def _expm(a):
    """scipy's matrix exponential of a (batch of) matrices, computed on the host."""
    try:
        from scipy.linalg import expm
    except ImportError:
        raise RuntimeError("engine.matrix_exp needs scipy (pip install scipy)") from None
    return move(expm(move(a, "cpu")).astype(a.dtype, copy=False), device_of(a))


class MatrixExp(Function):
    def forward(self, a):
        self.a = a
        return _expm(a)

    def backward(self, g):
        n = self.a.shape[-1]
        xp = xp_of(g)
        block = xp.zeros(self.a.shape[:-2] + (2 * n, 2 * n), g.dtype)
        block[..., :n, :n] = block[..., n:, n:] = _t(self.a)
        block[..., :n, n:] = g
        return _expm(block)[..., :n, n:]


def matrix_exp(A):
    """e^A = sum A^k / k!."""
    _check_square(A, "linalg.matrix_exp")
    return MatrixExp()(A)


class Pinverse(Function):
    uses_inputs, uses_output = True, True

    def __init__(self, rcond):
        self.rcond = rcond

    def forward(self, a):
        self.a = a
        self.p = xp_of(a).linalg.pinv(a, rcond=self.rcond).astype(a.dtype, copy=False)
        return self.p

    def backward(self, g):
        a, p = self.a, self.p
        xp = xp_of(g)
        left = xp.eye(a.shape[-2], dtype=g.dtype) - a @ p  # I - A A+
        right = xp.eye(a.shape[-1], dtype=g.dtype) - p @ a  # I - A+ A
        return -_t(p) @ g @ _t(p) + left @ _t(g) @ p @ _t(p) + _t(p) @ p @ _t(g) @ right


def pinverse(input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse; singular values below ``rcond`` times the largest count as zero."""
    if input.ndim < 2:
        raise RuntimeError(f"pinverse: expected a tensor with 2 or more dimensions of float type, got shape "
                           f"{list(input.shape)}")
    return Pinverse(rcond)(input)


class Svd(Function):
    """``torch.svd``'s (U, S, V) from numpy's SVD (V, not V^T). The gradient is that of the reduced factors
    (distinct nonzero singular values): with full matrices the columns past min(m, n) get none, as in PyTorch."""

    def __init__(self, some, compute_uv):
        self.some, self.compute_uv = some, compute_uv

    def forward(self, a):
        xp = xp_of(a)
        m, n = a.shape[-2:]
        u, s, vh = xp.linalg.svd(a, full_matrices=not self.some)
        k = min(m, n)
        self.u, self.s, self.v = u[..., :k], s, _t(vh)[..., :k]
        if not self.compute_uv:
            batch = a.shape[:-2]
            return xp.zeros(batch + (m, m), a.dtype), s.astype(a.dtype), xp.zeros(batch + (n, n), a.dtype)
        return u.astype(a.dtype), s.astype(a.dtype), _t(vh).astype(a.dtype)

    def backward(self, g_u, g_s, g_v):
        u, s, v = self.u, self.s, self.v
        xp = xp_of(s)
        k = s.shape[-1]
        inner = xp.zeros(s.shape + (k,), s.dtype)
        if g_s is not None:
            inner += xp.eye(k, dtype=s.dtype) * g_s[..., None, :]
        if self.compute_uv and (g_u is not None or g_v is not None):
            squares = s[..., None, :] ** 2 - s[..., :, None] ** 2  # s_j^2 - s_i^2 at (i, j)
            off = ~xp.eye(k, dtype=bool)
            f = xp.where(off, 1 / xp.where(off, squares, 1), 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                s_inv = 1 / s
            if g_u is not None:
                g_u = g_u[..., :k]
                ut_gu = _t(u) @ g_u
                inner += (f * (ut_gu - _t(ut_gu))) * s[..., None, :]
            if g_v is not None:
                g_v = g_v[..., :k]
                vt_gv = _t(v) @ g_v
                inner += s[..., :, None] * (f * (vt_gv - _t(vt_gv)))
        g_a = u @ inner @ _t(v)
        if self.compute_uv and g_u is not None and u.shape[-2] > k:
            g_a += (g_u - u @ (_t(u) @ g_u)) * s_inv[..., None, :] @ _t(v)
        if self.compute_uv and g_v is not None and v.shape[-2] > k:
            g_a += u @ (_t(g_v - v @ (_t(v) @ g_v)) * s_inv[..., :, None])
        return g_a


def svd(input, some=True, compute_uv=True):
    """``(U, S, V)`` with input = U diag(S) V^T: reduced factors with ``some``, square ones without; with
    ``compute_uv=False`` only S, U and V being zeros of the full shapes."""
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: The input tensor A must have at least 2 dimensions, got shape "
                           f"{list(input.shape)}")
    u, s, v = Svd(some, compute_uv)(input)
    return return_type("svd", ("U", "S", "V"))(u, s, v)


for _fn in (slogdet, logdet, triangular_solve, cholesky_solve, cholesky_inverse, matrix_exp, pinverse, svd, lu):
    register_method(_fn)
register_method(lu_solve, "lu_solve")

__all__ = ["slogdet", "logdet", "triangular_solve", "cholesky_solve", "cholesky_inverse", "matrix_exp", "pinverse",
           "svd", "lu", "lu_solve", "lu_unpack"]
