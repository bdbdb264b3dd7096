"""Norms torch keeps at the top level for old code and the JIT: ``frobenius_norm`` and ``nuclear_norm``
(deprecated, with torch's warnings, for ``linalg.vector_norm`` and ``linalg.matrix_norm``), ``norm_except_dim``
(weight norm's per-slice norm), ``embedding_renorm_`` (``embedding``'s ``max_norm`` step) and
``chain_matmul`` (deprecated for ``linalg.multi_dot``). Each calls the op that does the work."""
import warnings

from ..autograd import grad_mode
from ..nn.functional.sparse import _renorm_rows
from ..tensor import _wrap_dim
from .linalg_products import multi_dot
from .reduction import vector_norm


def _deprecated(name, replacement):
    warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will be removed in a "
                  f"future PyTorch release. Please use `{replacement}` instead", UserWarning, stacklevel=3)


def frobenius_norm(input, dim=(), keepdim=False):
    """sqrt of the sum of squares over ``dim`` (at most two dims; all of them when empty)."""
    _deprecated("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    return vector_norm(input, 2, dim or None, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of the matrices over the two dims ``dim`` (dims 0 and 1 when omitted);
    ``nuclear_norm(input, keepdim)`` is accepted as torch's overload."""
    from .. import linalg
    _deprecated("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return linalg.matrix_norm(input, "nuc", (0, 1) if dim is None else tuple(dim), keepdim)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of each slice of ``v`` along ``dim``, shaped like ``v`` with every other dim of size 1
    (``dim=-1``: the norm of all of ``v``, a 0-d tensor), as weight norm uses it."""
    if dim == -1:
        return vector_norm(v, pow)
    dim = _wrap_dim(dim, v.dim())
    others = tuple(d for d in range(v.dim()) if d != dim)
    if not others:  # a 1-d v: each element's own norm (an empty dim list would mean all of v)
        return vector_norm(v.reshape(-1, 1), pow, 1)
    return vector_norm(v, pow, others, True)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale in place, without gradient, the rows of ``input`` (an embedding weight) that ``indices`` names and
    whose ``norm_type``-norm exceeds ``max_norm`` to that norm; returns ``input``."""
    with grad_mode.no_grad():
        _renorm_rows(input, indices._data, max_norm, norm_type)
    return input


def chain_matmul(*matrices):
    """The product of the 2-d ``matrices``, in the cheapest order (deprecated: ``linalg.multi_dot``)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                  "multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    return matrices[0].clone() if len(matrices) == 1 else multi_dot(list(matrices))


__all__ = ["frobenius_norm", "nuclear_norm", "norm_except_dim", "embedding_renorm_", "chain_matmul"]
