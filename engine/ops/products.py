"""Products and distances built from the engine's differentiable ops: trace, inner, cross, dist, cdist.

Each is a short composition (``diagonal`` + ``sum``, ``tensordot``, ``narrow`` + ``mul``, a norm
of differences), so the gradients are those of its parts, which match PyTorch's.
"""
from ..tensor import Tensor, register_method
from ._common import wrap_dim
from .linalg import tensordot
from .reduction import norm, vector_norm
from .shape import broadcast_tensors, cat, diagonal, narrow, unsqueeze


def trace(input):
    """The sum of a matrix's main diagonal (integers sum to int64, as ``sum`` does)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal(input).sum()


def inner(input, other):
    """The sum of products over the last dims of both (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (default: the first dim of size 3), broadcasting
    the two inputs; ``linalg.cross``'s default dim is -1."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = broadcast_tensors(input, other)
    if dim is None:
        dim = next((d for d, n in enumerate(a.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = wrap_dim(dim, a.ndim)
    if a.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
                           f"and {other.shape[d]}")
    a1, a2, a3 = (narrow(a, d, i, 1) for i in range(3))
    b1, b2, b3 = (narrow(b, d, i, 1) for i in range(3))
    return cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast)."""
    return norm(input - other, p)


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M),
    computed from the differences (PyTorch may use a matrix product for p=2 on large inputs, equal up
    to rounding); batch dims broadcast. The gradient at a zero distance is 0, as in PyTorch."""
    for name, x in (("X1", x1), ("X2", x2)):
        if not isinstance(x, Tensor) or x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{getattr(x, 'ndim', 0)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if not x1.is_floating_point() or not x2.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {x1.dtype.title}")
    differences = unsqueeze(x1, -2) - unsqueeze(x2, -3)
    return vector_norm(differences, p, dim=-1)


for _name in ("trace", "inner", "cross", "dist"):
    register_method(globals()[_name], _name)

__all__ = ["trace", "inner", "cross", "dist", "cdist"]
