"""``hash_tensor``: a 64-bit hash of a tensor's values (all of them, or over ``dim``), as torch's: each element
widened to 64 bits (a float to float64, an integer or bool to int64), its bits read as uint64, and the words
combined by exclusive or. Equal values give equal hashes whatever the dtype's width; the result is uint64 and
outside autograd.

The xor is folded pairwise (the halves of the reduced axis combined until one word is left), a handful of
elementwise steps that run the same on numpy and CuPy.
"""
import numpy as np

from .. import _dtype
from ..tensor import _new, register_method
from ._common import xp_of
from .reduction import _axes

#: dtypes torch's xor reduction has no kernel for
_NO_KERNEL = ("uint16", "uint32", "uint64")


def _as_words(a):
    """The elements of ``a`` widened to 64 bits and read as uint64."""
    wide = np.float64 if a.dtype.kind == "f" or a.dtype == _dtype.bfloat16.np else np.int64
    return a.astype(wide).view(np.uint64)


def _xor_fold(words, n_axes, keepdim, shape):
    """The xor of ``words`` over its last ``n_axes`` axes (the reduced ones, moved last)."""
    kept = words.shape[:words.ndim - n_axes]
    flat = words.reshape(kept + (-1,))
    while flat.shape[-1] > 1:
        half = flat.shape[-1] // 2
        folded = flat[..., :half] ^ flat[..., half:2 * half]
        if flat.shape[-1] % 2:
            folded[..., :1] ^= flat[..., -1:]
        flat = folded
    return flat.reshape(shape if keepdim else kept)


def hash_tensor(input, dim=None, *, keepdim=False, mode=0):
    """The xor of ``input``'s elements as 64-bit words, over ``dim`` (all dims by default), as uint64."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    if input.dtype.is_complex or input.dtype.name in _NO_KERNEL:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{input.dtype.title}'")
    axes = _axes(dim, input.ndim)
    if (dim is None or dim == () or dim == []) and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    for d in [dim] if isinstance(dim, (int, np.integer)) else dim or ():
        if input.ndim and input.shape[int(d) % input.ndim] == 0:
            raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    a = input._data
    others = [d for d in range(a.ndim) if d not in axes]
    words = _as_words(a).transpose(others + list(axes)).copy()  # row-major (ascontiguousarray makes 0-d 1-d)
    shape = tuple(1 if d in axes else n for d, n in enumerate(a.shape))
    if words.size == 0:  # nothing to combine along a kept empty dim
        return _new(xp_of(a).zeros(shape if keepdim else tuple(a.shape[d] for d in others), np.uint64))
    return _new(_xor_fold(words, len(axes), keepdim, shape))


register_method(hash_tensor)

__all__ = ["hash_tensor"]
