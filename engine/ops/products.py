"""Products, distances and norms built from the engine's differentiable ops: trace, inner, vdot, kron,
cross, addmv, addr, addbmm, matrix_power, dist, cdist, renorm.

Each is a short composition (``diagonal`` + ``sum``, ``tensordot``, broadcasting products, a norm
of differences), so the gradients are those of its parts, which match PyTorch's.
"""
from .. import _dtype
from ..amp import autocast_mode
from ..tensor import Tensor, register_method
from ._common import as_operand, wrap_dim
from .creation import zeros_like
from .elementwise import where
from .linalg import _check_dtypes, _integral_scalars, dot, inverse, matmul, mv, outer, tensordot
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
    if input.ndim == other.ndim == 1 and input.dtype is other.dtype:
        _check_dtypes(input, other, "dot")
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


def _keep(values, other):
    """``values``, with ``other`` (broadcast to them) connected to the result by a zero gradient: what PyTorch's
    ``beta == 0`` and ``alpha == 0`` give the operand they ignore."""
    return where(values.new_ones((), dtype=_dtype.bool_), values, other)


def _scaled_sum(input, product, beta, alpha):
    """beta * input + alpha * product, input expanded to the product's shape; ``beta == 0`` ignores input and
    ``alpha == 0`` the product (NaN included), as PyTorch's BLAS calls."""
    input = input.expand(tuple(product.shape))
    if alpha == 0:
        product = _keep(zeros_like(product), product)
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return _keep(scaled, input)
    return scaled + (input if beta == 1 else input * beta)


@autocast_mode.lower_precision("cuda")
@writes_out
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec), with PyTorch's checks (one dtype, not bool) and integer scalars."""
    input = as_operand(input)
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or input.numel() not in (1, mat.shape[0]):
        size = input.shape[0] if input.ndim else input.numel()
        raise RuntimeError(f"size mismatch, got input ({size}), mat ({mat.shape[0]}x{mat.shape[1]}), vec "
                           f"({vec.shape[0]})")
    if not (input.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {input.dtype.title}, "
                           f"{mat.dtype.title}, and {vec.dtype.title}")
    beta, alpha = _integral_scalars(mat.dtype, beta, alpha)
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def _addr_scalar(name, value, dtype):
    """PyTorch's checks of addr's ``beta``/``alpha`` against the result dtype."""
    integral = not (dtype.is_floating_point or dtype.is_complex)
    if integral and isinstance(value, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point number.")
    if dtype is not _dtype.bool_ and isinstance(value, bool):
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")


@autocast_mode.lower_precision("cuda")
@writes_out_castable
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2); for bool, ``(beta and input) or (alpha and outer)``."""
    input = as_operand(input)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    dtype = _dtype.result_type(input, vec1, vec2)
    _addr_scalar("beta", beta, dtype)
    _addr_scalar("alpha", alpha, dtype)
    product = outer(vec1, vec2)
    if dtype is not _dtype.bool_:
        return _scaled_sum(input, product, beta, alpha)
    input = input.expand(tuple(product.shape))
    result = product if alpha else zeros_like(product)
    return result | input if beta else result


@autocast_mode.lower_precision("cpu", "cuda")
@writes_out
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum over the batch of batch1[i] @ batch2[i]), in the batches' dtype."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and "
                           f"{batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
                           f"{batch2.shape[1]}x{batch2.shape[2]})")
    input = as_operand(input)
    for name, m in (("self", input), ("mat1", batch1)):
        if m.dtype is not batch2.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {m.dtype.title} and "
                               f"{batch2.dtype.title}")
    _check_dtypes(batch1, batch2, "addmm")
    beta, alpha = _integral_scalars(batch1.dtype, beta, alpha)
    return _scaled_sum(input, matmul(batch1, batch2).sum(0, dtype=batch1.dtype), beta, alpha)


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
    if input.dtype is _dtype.bool_:  # the kernel is chosen by input's dtype, then other's is checked
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found {other.dtype.title}")
    a1, a2, a3 = (narrow(a, d, i, 1) for i in range(3))
    b1, b2, b3 = (narrow(b, d, i, 1) for i in range(3))
    return cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], d)


@autocast_mode.float32("cuda")
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast)."""
    return norm(input - other, p)


_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@autocast_mode.float32("cpu", "cuda")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M),
    computed from the differences (PyTorch may use a matrix product for p=2, equal up to rounding: its
    ``compute_mode`` only picks the dtype check's message here); batch dims broadcast. The gradient at a zero
    distance is 0, as in PyTorch; rows of no column are at distance 0."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if not isinstance(x, Tensor) or x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{getattr(x, 'ndim', 0)}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    for name, x in (("X1", x1), ("X2", x2)):
        if not x.is_floating_point():
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {x.dtype.title}")
    if x1.dtype in (_dtype.float16, _dtype.bfloat16):
        raise NotImplementedError(f"\"cdist\" not implemented for '{x1.dtype.title}'")
    if x1.dtype is not x2.dtype:
        rows = max(x1.shape[-2], x2.shape[-2])
        if p == 2 and (compute_mode == _CDIST_MODES[1] or compute_mode == _CDIST_MODES[0] and rows > 25):
            _check_dtypes(x1, x2)  # the matrix product's message
        raise RuntimeError(f"expected scalar type {x1.dtype.title} but found {x2.dtype.title}")
    differences = unsqueeze(x1, -2) - unsqueeze(x2, -3)
    return vector_norm(differences, p if x1.shape[-1] else 1, dim=-1)


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
