"""The products and views of ``torch.linalg`` that need no factorisation, as compositions of engine ops (so
differentiable): ``multi_dot`` (the chain in the cheapest order), ``vecdot``, ``vander`` (increasing powers),
``cross`` and ``diagonal`` (torch.linalg's defaults: the last dims)."""
from .._dtype import cpp_name
from .linalg import matmul
from .products import cross as _cross
from .shape import diagonal as _diagonal
from .creation import ones_like
from .shape import cat
from .reduction import cumprod
from .linalg_out import writes_out
from ..amp import autocast_mode


def _chain_order(shapes):
    """split[i][j]: where the cheapest product of matrices i..j splits (the classic dynamic programme on the
    number of multiplications)."""
    count = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j], split[i][j] = min((cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                                          for k in range(i, j))
    return split


@writes_out
def multi_dot(tensors, *, out=None):
    """The product of two or more matrices (the first may be a row vector, the last a column vector), multiplied
    in the order with the fewest scalar multiplications."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if i in (0, len(tensors) - 1):
            if t.ndim not in (1, 2):
                which = "first" if i == 0 else "last"
                raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.ndim}D")
        elif t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    shapes = [list(t.shape) for t in tensors]  # as given, for the messages
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    if first_vector:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_vector:
        tensors[-1] = tensors[-1].unsqueeze(-1)
    for i in range(1, len(tensors)):  # each tensor's dtype, then its fit to the previous one, as PyTorch
        if tensors[i].dtype is not tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{cpp_name(tensors[0].dtype)} and tensor {i} {cpp_name(tensors[i].dtype)}")
        if tensors[i - 1].shape[1] != tensors[i].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {shapes[i - 1]} and {shapes[i]} "
                               "cannot be multiplied")
    split = _chain_order([tuple(t.shape) for t in tensors])

    def product(i, j):
        if i == j:
            return tensors[i]
        k = split[i][j]
        return matmul(product(i, k), product(k + 1, j))

    result = product(0, len(tensors) - 1)
    if first_vector:
        result = result.squeeze(0)
    if last_vector:
        result = result.squeeze(-1)
    return result


@writes_out
@autocast_mode.lower_precision("cpu", "cuda")
def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of x and y (broadcast) along ``dim``, x conjugated where complex (two vectors: ``dot``'s
    check of their sizes, which do not broadcast)."""
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got {x.dtype.title}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{x.dtype.title} and y of type {y.dtype.title} instead")
    if x.ndim == y.ndim == 1 and x.shape != y.shape:
        n, m = x.shape[0], y.shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same number "
                           f"of elements, but got {n} and {m} elements respectively")
    return (x.conj() * y).sum(dim)


def vander(x, *, N=None):
    """The Vandermonde matrix of the last dim of x: columns x^0, x^1, ..., x^(N-1) (N defaults to x's last
    size), as a running product so that its gradient at 0 is finite."""
    if x.ndim < 1:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype.name in ("bool", "float16", "bfloat16"):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{x.dtype.title}")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    column = x.unsqueeze(-1)
    powers = cat([ones_like(column), column.expand(*x.shape, n - 1)], -1)
    return cumprod(powers, -1)


@writes_out
def cross(input, other, *, dim=-1, out=None):
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast, not that one)."""
    if input.ndim == other.ndim and -input.ndim <= dim < input.ndim:
        sizes = input.shape[dim], other.shape[dim]
        if sizes != (3, 3):
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {sizes[0]} and "
                               f"{sizes[1]}")
    return _cross(input, other, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal ``offset`` of each matrix over dims ``dim1`` and ``dim2`` (a view)."""
    return _diagonal(A, offset, dim1, dim2)


__all__ = ["multi_dot", "vecdot", "vander", "cross", "diagonal"]
