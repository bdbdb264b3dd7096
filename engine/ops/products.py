"""Products, distances and norms built from the engine's differentiable ops: trace, inner, vdot, kron,
cross, addmv, addr, addbmm, matrix_power, dist, cdist, renorm.

Each is a short composition (``diagonal`` + ``sum``, ``tensordot``, broadcasting products, a norm
of differences), so the gradients are those of its parts, which match PyTorch's.
"""
from ..amp import autocast_mode
from ..tensor import Tensor, register_method
from ._common import wrap_dim
from .elementwise import where
from .linalg import dot, inverse, matmul, mv, outer, tensordot
from .linalg_out import writes_out, writes_out_castable
from .reduction import norm, vector_norm
from .shape import broadcast_tensors, cat, diagonal, narrow, unsqueeze


@autocast_mode.float32("cpu")
def trace(input):
    """The sum of a matrix's main diagonal (integers sum to int64, as ``sum`` does)."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return diagonal(input).sum()


@writes_out
def inner(input, other):
    """The sum of products over the last dims of both (a scalar operand multiplies)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, dims=([-1], [-1]))


@writes_out
def vdot(input, other):
    """The dot product of two 1-d tensors, the first conjugated (sum of conj(input) * other)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return dot(input.conj() if input.is_complex() else input, other)


@writes_out_castable
def kron(input, other):
    """The Kronecker product: every element of ``input`` times a whole block ``other``."""
    n = max(input.ndim, other.ndim)
    a_shape = (1,) * (n - input.ndim) + tuple(input.shape)
    b_shape = (1,) * (n - other.ndim) + tuple(other.shape)
    a = input.reshape([size for d in a_shape for size in (d, 1)])
    b = other.reshape([size for d in b_shape for size in (1, d)])
    return (a * b).reshape([x * y for x, y in zip(a_shape, b_shape)])


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product, where beta == 0 ignores input (NaN included), as PyTorch."""
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


@autocast_mode.lower_precision("cuda")
@writes_out
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec)."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


@autocast_mode.lower_precision("cuda")
@writes_out_castable
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i])."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    return _scaled_sum(input, matmul(batch1, batch2).sum(0), beta, alpha)


@writes_out
def matrix_power(input, n):
    """The ``n``-th power of square matrices by repeated squaring (the inverse's for negative n)."""
    if input.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{input.shape[-2]} by {input.shape[-1]} matrices")
    base = inverse(input) if n < 0 else input
    result = None
    exponent = abs(int(n))
    while exponent:
        if exponent & 1:
            result = base if result is None else matmul(result, base)
        exponent >>= 1
        if exponent:
            base = matmul(base, base)
    if result is None:
        identity = input.new_ones(input.shape[:-1]).diag_embed()
        return identity.where(identity == identity, input)  # still connected to input, with torch's zero gradient
    return result


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
    if input.shape[d] != 3 or other.shape[d] != 3:  # that dim does not broadcast
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
                           f"and {other.shape[d]}")
    a1, a2, a3 = (narrow(a, d, i, 1) for i in range(3))
    b1, b2, b3 = (narrow(b, d, i, 1) for i in range(3))
    return cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


@autocast_mode.float32("cuda")
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast)."""
    return norm(input - other, p)


@autocast_mode.float32("cpu", "cuda")
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


@autocast_mode.float32("cuda")
def renorm(input, p, dim, maxnorm):
    """``input`` with each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to it."""
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = wrap_dim(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = vector_norm(input, p, dim=others, keepdim=True)
    return input * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


for _name in ("trace", "inner", "vdot", "kron", "cross", "addmv", "addr", "addbmm", "matrix_power", "dist",
              "renorm"):
    register_method(globals()[_name], _name)

__all__ = ["trace", "inner", "vdot", "kron", "cross", "addmv", "addr", "addbmm", "matrix_power", "dist", "cdist",
           "renorm"]
