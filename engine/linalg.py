"""``engine.linalg``: PyTorch's ``torch.linalg`` namespace for real and complex dtypes. The functions live in ``ops``:
factorisations in ``linalg_decompositions``, solvers in ``linalg_solvers``, what derives from singular values in
``linalg_spectral``, plain products in ``linalg_products``, LU in ``lu``; the norms are here."""
import math

import numpy as np

from ._dtype import promote_types, to_dtype
from .ops.elementwise import abs as _abs
from .ops.householder import orgqr
from .ops.legacy_linalg import matrix_exp, slogdet as _slogdet
from .ops.linalg import matmul
from .ops.linalg_checks import LinAlgError, check_floating, check_square
from .ops.linalg_decompositions import cholesky, cholesky_ex, eigh, eigvalsh, qr, svd, svdvals
from .ops.linalg_eig import eig, eigvals
from .ops.linalg_out import writes_out, writes_out_castable
from .ops.linalg_products import cross, diagonal, multi_dot, vander, vecdot
from .ops.linalg_solvers import (det, inv, inv_ex, ldl_factor, ldl_factor_ex, ldl_solve, solve, solve_ex,
                                 solve_triangular, tensorinv, tensorsolve)
from .ops.linalg_spectral import cond, lstsq, matrix_rank, matrix_sqrth, pinv, polar, spectral_norm
from .ops.lu import linalg_lu as lu, lu_factor, lu_factor_ex, lu_solve
from .ops.products import matrix_power as _matrix_power
from .ops.reduction import amax, amin, return_type, vector_norm as _vector_norm
from .tensor import _wrap_dim
from .amp import autocast_mode

householder_product = writes_out_castable(orgqr)


def _cast_for_norm(A, dtype, name):
    """``A`` in the ``dtype=`` of a norm (unchanged without one), with torch's checks: a floating or complex input,
    a floating or complex ``dtype`` of the input's kind (complex for complex input) that does not narrow it. The
    cast comes first, so a complex input's magnitudes are taken in the wider type, as torch's."""
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {A.dtype.title}")
    if dtype is None:
        return A
    dtype = to_dtype(dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype.title}")
    if A.dtype.is_complex != dtype.is_complex:
        kind = "complex for complex" if A.dtype.is_complex else "real for real"
        raise RuntimeError(f"{name}: dtype should be {kind} inputs, but got {dtype.title}")
    if promote_types(A.dtype, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({A.dtype.title}) should be convertible without "
                           f"narrowing to the specified dtype ({dtype.title})")
    return A.to(dtype)


@writes_out
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The ``ord``-norm of the values over ``dim`` (all of them by default), computed in ``dtype``."""
    return _vector_norm(_cast_for_norm(x, dtype, "linalg.vector_norm"), ord, dim, keepdim)


@writes_out
def matrix_power(A, n, *, out=None):
    """A^n for square matrices (n an integer; the inverse's power for negative n)."""
    return _matrix_power(A, n)


@writes_out
def slogdet(A, *, out=None):
    """(sign, logabsdet) of the determinant of each matrix (sign 0 where singular)."""
    check_square(A, "linalg.slogdet")
    return return_type("linalg_slogdet", ("sign", "logabsdet"))(*_slogdet(A))


@autocast_mode.float32("cuda")
@writes_out
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Frobenius, nuclear, 1, -1, 2, -2, inf and -inf matrix norms over the two dims ``dim``."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if ord not in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    A = _cast_for_norm(A, dtype, "linalg.matrix_norm")
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord in (2, 1, math.inf) and A.numel() == 0:  # the largest of no values: torch's 0
        return vector_norm(A, 2, dim, keepdim)
    if ord in ("nuc", 2, -2):
        check_floating(A, "linalg.matrix_norm")
        return spectral_norm(A, ord, dim, keepdim)
    row, col = (_wrap_dim(d, A.ndim) for d in dim)
    if ord in (math.inf, -math.inf):
        row, col = col, row
    sums = _abs(A).sum(row, keepdim=keepdim)
    col = col if keepdim or col < row else col - 1
    return amax(sums, col, keepdim) if ord > 0 else amin(sums, col, keepdim)


@writes_out
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector norm over one dim (or everything when ``ord`` is None), matrix norm over two."""
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if isinstance(ord, str) or (dim is not None and len(dim) == 2):
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "matrix_sqrth", "multi_dot", "norm", "pinv", "polar", "qr", "slogdet", "solve",
           "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm"]
