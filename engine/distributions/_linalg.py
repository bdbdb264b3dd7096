"""The two matrix factorisations the distributions need, differentiable: ``cholesky`` (the lower factor of a
symmetric positive-definite matrix) and ``solve_triangular`` (with a lower-triangular matrix, through the solve of
``triangular_solve``). The engine's top-level ``cholesky`` is torch's removed alias (it raises), and ``engine.linalg``
has neither.
"""
import numpy as np

from engine.autograd.function import Function
from engine.ops._common import xp_of
from engine.ops.legacy_linalg import _solve_triangle


def _lower_solve(xp, lower, rhs, transpose=False):
    """``lower^-1 rhs`` (or ``lower^-T rhs``) for batches of lower-triangular matrices."""
    matrix = xp.swapaxes(lower, -1, -2) if transpose else lower
    return xp.linalg.solve(matrix, rhs)


class _Cholesky(Function):
    """L with L L^T = A; the gradient symmetrised as torch's (A's two triangles share it)."""

    uses_inputs = False
    uses_output = True

    def forward(self, a):
        xp = xp_of(a)
        try:
            self.lower = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            raise RuntimeError("linalg.cholesky: The factorization could not be completed because the input is "
                               "not positive-definite.") from None
        return self.lower

    def backward(self, g):
        xp, lower = xp_of(g), self.lower
        phi = xp.tril(xp.swapaxes(lower, -1, -2) @ g)
        phi = phi - 0.5 * xp.tril(xp.triu(phi))  # the diagonal halved
        # S = L^-T phi L^-1, then the symmetric part
        s = _lower_solve(xp, lower, xp.swapaxes(_lower_solve(xp, lower, phi, transpose=True), -1, -2),
                         transpose=True)
        s = xp.swapaxes(s, -1, -2)
        return 0.5 * (s + xp.swapaxes(s, -1, -2))


def cholesky(a):
    """The lower Cholesky factor of the (batch of) symmetric positive-definite matrices ``a``."""
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.cholesky: A must be batches of square matrices, but they are "
                           f"{tuple(a.shape[-2:])} matrices")
    return _Cholesky()(a)


def solve_triangular(lower, rhs):
    """``lower^-1 rhs`` for lower-triangular ``lower`` (the gradient reaches only its lower triangle), batches
    broadcast: ``triangular_solve``'s solve, without its deprecation warning."""
    return _solve_triangle(rhs, lower, upper=False, transpose=False, unitriangular=False)[0]
