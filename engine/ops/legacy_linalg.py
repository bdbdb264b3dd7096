"""The linear algebra PyTorch keeps under top-level names beside ``torch.linalg``, for (batches of) real or
complex matrices (the conjugate transposes where the real formulas transpose):

- ``slogdet`` (sign and log|det|) and ``logdet`` (NaN for a negative determinant, -inf for a singular matrix); the
  gradient of log|det A| is A^-T (nonsingular inputs);
- ``triangular_solve`` (deprecated, with PyTorch's warning): ``linalg.solve_triangular`` with the old signature
  (the gradient reaches only the triangle it reads);
- ``cholesky_solve`` and ``cholesky_inverse``: solves with L L^T for a Cholesky factor L, read from its triangle,
  with PyTorch's gradient (that of the product with the whole factor);
- ``lu``, ``lu_solve`` and ``lu_unpack`` (``lu.py``; the first two deprecated, with PyTorch's warnings);
- ``matrix_exp`` (scipy's ``expm``; its gradient is the top-right block of the exponential of
  [[A^T, G], [0, A^T]]);
- ``pinverse`` and ``svd`` (the old signatures of ``linalg.pinv`` and ``linalg.svd``: V, not V^T).
"""
import warnings

import numpy as np

from .._device import device_of, move
from ..autograd.double_backward import constant, recomputed_backward
from ..autograd.function import Function
from ..tensor import register_method
from ._common import xp_of
from .linalg import _broadcast_batch, _check_square, inverse, solve
from .linalg_checks import adjoint, check_floating, not_implemented
from .linalg_decompositions import svd as linalg_svd, svdvals
from .linalg_out import writes_out, writes_out_castable
from .linalg_solvers import solve_triangular
from .linalg_spectral import Pinv, _check_pinv_input
from .lu import legacy_lu_solve as lu_solve, lu, lu_unpack
from .reduction import return_type
from ..amp import autocast_mode


class Slogdet(Function):
    def forward(self, a):
        self.a = a
        sign, logabsdet = xp_of(a).linalg.slogdet(a)
        self.sign = xp_of(a).asarray(sign, a.dtype)
        return self.sign, xp_of(a).asarray(logabsdet, a.real.dtype)

    def backward(self, g_sign, g_logabsdet):
        # complex A: (g_logabsdet + i Im(g_sign conj(sign))) A^-H (the sign's phase moves with Im tr(A^-1 dA))
        weight = g_logabsdet
        if g_sign is not None and g_sign.dtype.kind == "c":
            phase = 1j * (g_sign * self.sign.conj()).imag
            weight = phase if weight is None else weight + phase
        if weight is None:
            return (None,)
        return (weight[..., None, None] * adjoint(xp_of(self.a).linalg.inv(self.a)),)

    def backward_tensors(self, g_sign, g_logabsdet):
        """Real matrices: g_logabsdet A^-T on the graph (the sign is piecewise constant)."""
        if self.a.dtype.kind == "c":
            raise RuntimeError("double backward (create_graph=True) is not implemented for SlogdetBackward of "
                               "complex matrices")
        return g_logabsdet[..., None, None] * inverse(self.saved_input(0, self.a)).mT


def _checked(input, name):
    _check_square(input, name)
    check_floating(input, name)


@writes_out
def slogdet(input):
    """``(sign, logabsdet)``: the determinant's sign (0 when singular) and the log of its magnitude."""
    _checked(input, "linalg.slogdet")
    sign, logabsdet = Slogdet()(input)
    return return_type("slogdet", ("sign", "logabsdet"))(sign, logabsdet)


def logdet(input):
    """log det A: NaN where the determinant is negative, -inf where it is zero; for complex A the complex
    logarithm log|det A| + i arg(det A)."""
    _checked(input, "logdet")
    sign, logabsdet = Slogdet()(input)
    if input.is_complex():
        from .complex_math import angle, complex
        return complex(logabsdet, angle(sign))
    nan = logabsdet.new_tensor(np.nan)
    return logabsdet.where(sign >= 0, nan)


@writes_out
@autocast_mode.float32("cpu")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: X with T X = b (T^T X = b with ``transpose``) for the upper or lower
    triangle T of ``A``, and a copy of ``A`` in the batch shape of both."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    for name, t in (("b", b), ("A", A)):
        if t.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.ndim} dimensions instead")
    _check_square_system("triangular_solve", b, A)
    batch = _broadcast_batch(tuple(b.shape[:-2]), tuple(A.shape[:-2]))
    a = A.expand(*batch, *A.shape[-2:])
    solution = solve_triangular(a.mT if transpose else a, b, upper=upper != transpose, unitriangular=unitriangular)
    return return_type("triangular_solve", ("solution", "cloned_coefficient"))(solution, a.clone())


class CholeskySolve(Function):
    """X = (L L^H)^-1 B from the triangle of L (U^H U with ``upper``). PyTorch's gradient for the factor is that of
    the product with the whole of L, -(G_B X^H + X G_B^H) L, and so is this one."""

    def __init__(self, upper):
        self.upper = upper

    def forward(self, b, l):
        xp = xp_of(b, l)
        batch = np.broadcast_shapes(b.shape[:-2], l.shape[:-2])
        self.inputs = b, l
        b, l = xp.broadcast_to(b, batch + b.shape[-2:]), xp.broadcast_to(l, batch + l.shape[-2:])
        t = xp.triu(l) if self.upper else xp.tril(l)
        self.product = adjoint(t) @ t if self.upper else t @ adjoint(t)
        self.l = l
        self.x = xp.linalg.solve(self.product, b)
        return self.x

    def backward(self, g):
        g_b = xp_of(g).linalg.solve(self.product, g)
        common = g_b @ adjoint(self.x)
        common = common + adjoint(common)
        return g_b, -(self.l @ common) if self.upper else -(common @ self.l)

    def backward_tensors(self, g):
        """Recomputed from engine ops and differentiated: the factor's triangle in value, with the whole factor's
        derivative (torch's gradient, above, is that of the product with the whole of L)."""
        def cholesky_solve(b, l):
            xp = xp_of(l._data)
            t = l + constant((xp.triu(l._data) if self.upper else xp.tril(l._data)) - l._data)
            return solve(t.mT @ t if self.upper else t @ t.mT, b)
        return recomputed_backward(self, cholesky_solve, self.inputs, g)


def _check_same_dtype(b, A):
    if b.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {b.dtype.title} and A of "
                           f"type {A.dtype.title} instead.")


def _check_square_system(op, b, A):
    """torch's checks of ``op``'s right-hand sides ``b`` against the square matrices ``A``: one dtype, square
    matrices, and as many rows in ``b`` as ``A`` has columns."""
    _check_same_dtype(b, A)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           f"matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {A.shape[-2]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")


def _check_lapack_kernel(A, kernel):
    """torch's dispatch error where ``kernel`` (a LAPACK routine's) has no version for A's dtype."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex) or A.dtype.itemsize < 4:
        raise not_implemented(kernel, A)


@writes_out_castable
@autocast_mode.float32("cpu")
def cholesky_solve(B, L, upper=False):
    """X with A X = B for A = L L^T (``upper``: A = U^T U), from the Cholesky factor alone."""
    for name, t in (("b", B), ("u", L)):
        if t.ndim < 2:
            raise RuntimeError(f"{name} should have at least 2 dimensions, but has {t.ndim} dimensions instead")
    _check_square_system("cholesky_solve", B, L)
    _broadcast_batch(tuple(B.shape[:-2]), tuple(L.shape[:-2]))
    _check_lapack_kernel(L, "cholesky_solve")
    return CholeskySolve(upper)(B, L)


@writes_out_castable
@autocast_mode.float32("cpu")
def cholesky_inverse(L, upper=False):
    """(L L^T)^-1 (``upper``: (U^T U)^-1) from the Cholesky factor."""
    _check_square(L, "cholesky_inverse")
    _check_lapack_kernel(L, "cholesky_inverse_out")
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
        block[..., :n, :n] = block[..., n:, n:] = adjoint(self.a)
        block[..., :n, n:] = g
        return _expm(block)[..., :n, n:]

    def backward_tensors(self, g):
        """The same block exponential, built and exponentiated with engine ops (so differentiable again)."""
        from .shape import cat
        n = self.a.shape[-1]
        at = self.saved_input(0, self.a).mT
        zeros = constant(xp_of(g._data).zeros(self.a.shape, g._data.dtype))
        block = cat([cat([at, g], -1), cat([zeros, at], -1)], -2)
        return matrix_exp(block)[..., :n, n:]


def matrix_exp(A):
    """e^A = sum A^k / k!."""
    _check_square(A, "linalg.matrix_exp")
    if not (A.dtype.is_floating_point or A.dtype.is_complex):  # integers would be truncated
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {A.dtype.title}")
    return MatrixExp()(A)


@autocast_mode.float32("cpu")
def pinverse(input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse; singular values below ``rcond`` times the largest count as zero."""
    _check_pinv_input(input)
    return Pinv(0.0, rcond, False)(input)


@writes_out
@autocast_mode.float32("cpu")
def svd(input, some=True, compute_uv=True):
    """``(U, S, V)`` with input = U diag(S) V^T: reduced factors with ``some``, square ones without; with
    ``compute_uv=False`` only S, U and V being zeros of the full shapes."""
    if input.ndim < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has {input.ndim} dimensions "
                           f"instead")
    result = return_type("svd", ("U", "S", "V"))
    if not compute_uv:
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return result(input.new_zeros(*batch, m, m), svdvals(input), input.new_zeros(*batch, n, n))
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return result(u, s, vh.mH)


for _fn in (slogdet, logdet, triangular_solve, cholesky_solve, cholesky_inverse, matrix_exp, pinverse, svd, lu):
    register_method(_fn)
register_method(lu_solve, "lu_solve")

__all__ = ["slogdet", "logdet", "triangular_solve", "cholesky_solve", "cholesky_inverse", "matrix_exp", "pinverse",
           "svd", "lu", "lu_solve", "lu_unpack"]
