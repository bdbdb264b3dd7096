"""Pickling sparse tensors in torch's layout: ``_rebuild_sparse_tensor(layout, data)`` with ``data`` =
(indices, values, size, is_coalesced) for COO and (compressed indices, plain indices, values, size) for CSR/CSC,
the index and value parts as dense tensors."""
import weakref

from .. import _layout
from .._device import move
from ..tensor import Size, _new
from ._compressed import CompressedArray
from ._coo import COOArray
from .tensor import wrap


def sparse_parts(t):
    """(layout, data) as torch pickles a sparse tensor. The part tensors are the same objects on each call for an
    unchanged storage, as a checkpoint writer that plans its storages in a first pass needs."""
    d = t._data
    arrays = (d.indices, d.values) if isinstance(d, COOArray) else (d.compressed, d.plain, d.values)
    cached = _PARTS.get(d)
    if cached is None or any(a is not b for a, b in zip(cached[0], arrays)):
        cached = _PARTS[d] = (arrays, tuple(_new(move(a, "cpu")) for a in arrays))
    tail = (Size(d.shape), d.coalesced) if isinstance(d, COOArray) else (Size(d.shape),)
    return t.layout, cached[1] + tail


_PARTS = weakref.WeakKeyDictionary()  # storage -> (its arrays, their tensors)


def rebuild_sparse_tensor(layout, data, requires_grad=False):
    """``torch._utils._rebuild_sparse_tensor``: a sparse tensor from its pickled parts."""
    if layout is _layout.sparse_coo:
        indices, values, size = data[:3]
        coalesced = bool(data[3]) if len(data) > 3 else False
        return wrap(COOArray(indices._data, values._data, size, coalesced), requires_grad)
    compressed, plain, values, size = data
    return wrap(CompressedArray(compressed._data, plain._data, values._data, size, layout.name), requires_grad)


def reduce_sparse(t):
    layout, data = sparse_parts(t)
    return rebuild_sparse_tensor, (layout, data, t.requires_grad)
