"""Index sets and set membership: isin, tril_indices, triu_indices, cartesian_prod, combinations,
unravel_index, and ``put`` (writing at flat indices).

The index builders return int64 coordinates in PyTorch's order; cartesian_prod and combinations
select from their inputs with ``meshgrid``/``index_select``, so gradients flow back to them.
"""
import itertools
import numbers

import numpy as np

from .. import _dtype
from .._device import factory_device, move
from ..tensor import Tensor, _new, register_method
from ._common import one_of, xp_of
from .indexing import index_select, meshgrid
from .shape import stack


def isin(elements=None, test_elements=None, *, assume_unique=False, invert=False, element=None, test_element=None):
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a scalar: by keyword torch names a
    scalar one ``element`` or ``test_element``)."""
    elements = one_of("isin", "elements", elements, element)
    test_elements = one_of("isin", "test_elements", test_elements, test_element)
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() expected at least one of elements or test_elements to be a Tensor")
    for operand in (elements, test_elements):
        dtype = operand.dtype if isinstance(operand, Tensor) else _dtype.scalar_dtype(operand)
        if isinstance(operand, complex):  # torch wraps a Python complex as a double one
            dtype = _dtype.complex128
        if dtype is _dtype.bool_ or dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {dtype.title}")
    like = elements if isinstance(elements, Tensor) else test_elements
    xp = xp_of(like._data)
    common = _dtype.result_type(elements, test_elements)  # torch compares in it: -2 wraps into uint8
    values, tests = (_new(xp.asarray(x)).to(common)._data if not isinstance(x, Tensor) else x.to(common)._data
                     for x in (elements, test_elements))
    return _new(xp.isin(values, tests.reshape(-1), assume_unique=assume_unique, invert=invert))


def _triangle_indices(row, col, offset, upper, dtype, device):
    rows, cols = np.indices((row, col))
    keep = cols - rows >= offset if upper else cols - rows <= offset
    out = np.stack([rows[keep], cols[keep]]).astype(_dtype.to_dtype(dtype or _dtype.int64).np)
    return _new(move(out, factory_device(device) or "cpu"))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the lower triangle of a row x col matrix, row by row."""
    return _triangle_indices(row, col, offset, False, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The (2, N) coordinates of the upper triangle of a row x col matrix, row by row."""
    return _triangle_indices(row, col, offset, True, dtype, device)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows (a single tensor is returned)."""
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], dim=1)


def combinations(input, r=2, with_replacement=False):
    """Every length-``r`` combination of the elements of a 1-d tensor, in order, as rows."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if not isinstance(r, numbers.Integral) or r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_zeros((0,))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    chosen = np.asarray(list(pick(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    index = _new(move(chosen.reshape(-1), input.device))
    return index_select(input, 0, index).reshape(chosen.shape)


def unravel_index(indices, shape):
    """The coordinates in ``shape`` of flat (row-major) ``indices``: one int64 tensor per dim."""
    if not isinstance(indices, Tensor):
        indices = _new(np.asarray(indices))
    if indices.dtype.is_floating_point or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {_torch_name(indices.dtype)}")
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    flat = indices._data.astype(np.int64)
    coordinates = []
    for n in reversed(shape):
        coordinates.append(flat % n if n else flat * 0)
        flat = flat // n if n else flat
    return tuple(_new(c) for c in reversed(coordinates))


def _torch_name(dtype):
    return "torch." + dtype.name


def put(input, index, source, accumulate=False):
    """``input`` (as 1-d, row-major) with ``source`` written, or added, at ``index`` (negative counts
    from the end)."""
    flat = input.reshape(-1)
    n = flat.shape[0]
    wrapped = _new(index._data.reshape(-1) % max(n, 1))
    if index.numel() and (int(index._data.min()) < -n or int(index._data.max()) >= n):
        bad = int(index._data.max()) if int(index._data.max()) >= n else int(index._data.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return flat.index_put((wrapped,), source.reshape(-1), accumulate).reshape(input.shape)


register_method(put)

__all__ = ["isin", "tril_indices", "triu_indices", "cartesian_prod", "combinations", "unravel_index"]
