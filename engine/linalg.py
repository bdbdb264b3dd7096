"""``engine.linalg``: PyTorch's ``torch.linalg`` namespace (norms, inv, det, solve, LU)."""
import math

import numpy as np

from ._dtype import to_dtype
from .ops.elementwise import abs as _abs
from .ops.linalg import det, inverse, matmul, solve
from .ops.lu import linalg_lu as lu, lu_factor, lu_factor_ex, lu_solve
from .ops.reduction import amax, amin, vector_norm
from .tensor import _wrap_dim

inv = inverse


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Frobenius, 1, -1, inf and -inf matrix norms over the two dims ``dim``."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if dtype is not None:
        A = A.to(to_dtype(dtype))
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported (supported: 'fro', 1, -1, inf, -inf).")
    row, col = (_wrap_dim(d, A.ndim) for d in dim)
    if ord in (math.inf, -math.inf):
        row, col = col, row
    sums = _abs(A).sum(row, keepdim=keepdim)
    col = col if keepdim or col < row else col - 1
    return amax(sums, col, keepdim) if ord > 0 else amin(sums, col, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector norm over one dim (or everything when ``ord`` is None), matrix norm over two."""
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if dim is not None and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "solve", "matmul", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve"]
