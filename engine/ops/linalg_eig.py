"""``linalg.eig`` and ``linalg.eigvals``: the eigen-decomposition A V = V diag(L) of a general (batch of) square
matrices, real or complex, as torch computes it (LAPACK's geev: eigenvectors of unit norm, each with its largest
component real; results complex, complex64 for float32 input). numpy's ``eig`` on the CPU, CuPy's (cuSOLVER's
geev, CuPy 14 on) on the GPU; an older CuPy has none and the engine says so.

The gradient is torch's: with E_ij = L_j - L_i off the diagonal,
gA = V^-H (diag(gL) + (V^H gV - V^H V diag(Re diag(V^H gV))) / conj(E)) V^H, its real part for real A. The
eigenvectors are fixed only up to a phase each, so a loss that depends on the phases (Im diag(V^H gV) not zero)
has no gradient: torch's error.
"""
import numpy as np

from ..autograd.double_backward import constant, recomputed_backward
from ..autograd.function import Function
from ._common import xp_of
from .linalg_checks import adjoint, check_gauge, check_square
from .reduction import return_type
from .linalg_out import writes_out_castable
from ..amp import autocast_mode


def _complex_type(dtype):
    """The complex numpy type of eig's results for an input of ``dtype`` (float32 -> complex64)."""
    return np.result_type(dtype, np.complex64)


class Eig(Function):
    """(L, V), or L alone without ``vectors`` (its gradient still needs V)."""

    uses_inputs, uses_output = False, True

    def __init__(self, vectors):
        self.vectors = vectors

    def forward(self, a):
        xp = xp_of(a)
        solver = getattr(xp.linalg, "eig", None)
        if solver is None:
            raise RuntimeError("linalg.eig: this CuPy has no linalg.eig (CuPy 14 with cuSOLVER's geev has it); "
                               "compute it on the CPU")
        values, vectors = solver(a)
        kind = _complex_type(a.dtype)
        self.real_input = a.dtype.kind != "c"
        self.values, self.v = values.astype(kind, copy=False), vectors.astype(kind, copy=False)
        return (self.values, self.v) if self.vectors else self.values

    def backward(self, g_values, g_vectors=None):
        xp, v, values = xp_of(self.v), self.v, self.values
        n = values.shape[-1]
        eye = xp.eye(n, dtype=v.dtype)
        inner = xp.zeros(v.shape, v.dtype)
        if g_vectors is not None:
            vhgv = adjoint(v) @ g_vectors
            diagonal = xp.diagonal(vhgv, 0, -2, -1)
            check_gauge(diagonal.imag, "linalg_eig_backward", "eigenvectors", "quantity, so it is ill-defined.")
            along = diagonal.real
            inner = vhgv - adjoint(v) @ (v * along[..., None, :])
            gaps = (values[..., None, :] - values[..., :, None]).conj()
            inner = inner * (1 - eye) / xp.where(eye.astype(bool), 1, gaps)
        if g_values is not None:
            inner = inner + eye * g_values[..., None, :]
        g = xp.linalg.solve(adjoint(v), inner @ adjoint(v))  # V^-H inner V^H
        return g.real if self.real_input else g

    def backward_tensors(self, g_values, g_vectors=None):
        """``backward`` in engine ops on the rebuilt outputs; eigvals' as eig's first output's, on A rebuilt
        from its factors (the input is not kept)."""
        from .. import linalg
        if not self.vectors:
            xp = xp_of(self.v)
            rebuilt = adjoint(xp.linalg.solve(adjoint(self.v), adjoint(self.v * self.values[..., None, :])))
            rebuilt = rebuilt.real if self.real_input else rebuilt  # A = V diag(L) V^-1, from the factors
            return recomputed_backward(self, lambda a: Eig(True)(a)[0], (rebuilt,), g_values)
        values, v = self.saved_output(0, self.values), self.saved_output(1, self.v)
        xp = xp_of(self.v)
        n = values.shape[-1]
        eye = xp.eye(n, dtype=self.v.dtype)
        vhgv = v.mH @ g_vectors
        check_gauge(xp.diagonal(vhgv._data, 0, -2, -1).imag, "linalg_eig_backward", "eigenvectors",
                    "quantity, so it is ill-defined.")
        inner = vhgv - v.mH @ (v * vhgv.diagonal(0, -2, -1).real[..., None, :])
        gaps = (values[..., None, :] - values[..., :, None]).conj()
        off = ~eye.astype(bool)
        inner = (inner / gaps.where(constant(off), 1.0)).where(constant(off), 0.0)
        inner = inner + constant(eye) * g_values[..., None, :]
        g = linalg.solve(v.mH, inner @ v.mH)
        return g.real if self.real_input else g


def _check_eig_input(A, name):
    """torch's checks: a floating or complex dtype LAPACK takes (its messages for the others), square matrices."""
    if not A.dtype.is_complex:
        if not A.dtype.is_floating_point:
            raise RuntimeError(f"Unknown Complex ScalarType for {A.dtype.title}")
        if A.dtype.name in ("float16", "bfloat16"):
            raise NotImplementedError(f"\"linalg_eig_out_{A.device.type}\" not implemented for '{A.dtype.title}'")
    check_square(A, name)


@writes_out_castable
@autocast_mode.float32("cpu")
def eig(A, *, out=None):
    """(eigenvalues, eigenvectors as columns) of each square matrix, complex, unordered (LAPACK's order)."""
    _check_eig_input(A, "linalg.eig")
    values, vectors = Eig(True)(A)
    return return_type("linalg_eig", ("eigenvalues", "eigenvectors"))(values, vectors)


@writes_out_castable
@autocast_mode.float32("cpu")
def eigvals(A, *, out=None):
    """The eigenvalues of each square matrix, complex, in ``eig``'s order."""
    _check_eig_input(A, "linalg.eigvals")
    return Eig(False)(A)


__all__ = ["eig", "eigvals"]
