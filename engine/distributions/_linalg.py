"""The two factorisations the distributions need, differentiable, under the names they use: ``cholesky`` (the
lower factor of a symmetric positive-definite matrix, ``linalg.cholesky``) and ``solve_triangular`` with a
lower-triangular matrix (``linalg.solve_triangular``), batches broadcast."""
from engine.ops.linalg_decompositions import cholesky
from engine.ops.linalg_solvers import solve_triangular as _solve_triangular


def solve_triangular(lower, rhs):
    """``lower^-1 rhs`` for lower-triangular ``lower`` (the gradient reaches only its lower triangle)."""
    return _solve_triangular(lower, rhs, upper=False)


__all__ = ["cholesky", "solve_triangular"]
