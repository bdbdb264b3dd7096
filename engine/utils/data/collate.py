"""Turning lists of samples into batches: ``default_collate`` and ``default_convert`` (torch's rules)."""
import collections.abc
import copy

import numpy as np

from ...ops.creation import as_tensor, tensor
from ...ops.shape import stack
from ...tensor import Tensor
from ... import _dtype, _layout

__all__ = ["default_collate", "default_convert"]

_COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                "found {}")


def _is_string_array(arr):
    return arr.dtype.kind in "SUO"


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _rebuild_mapping(elem, values):
    """A mapping like ``elem`` holding ``values``: a copy of it (so a defaultdict keeps its factory, a subclass
    its attributes) when it is mutable, else one built from ``values``, else a plain dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return dict(values)


def _rebuild_sequence(elem, values):
    """A sequence like ``elem`` holding ``values``: a copy of it when it is mutable, else one built from
    ``values``, else a list."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, value in enumerate(values):
                clone[i] = value
            return clone
        return type(elem)(values)
    except TypeError:
        return list(values)


def _type_name(obj):
    """``obj``'s type as torch's argument errors spell it: ``int``, ``numpy.ndarray``."""
    kind = type(obj)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


_SPARSE_LAYOUTS = (_layout.sparse_coo, _layout.sparse_csr, _layout.sparse_csc, _layout.sparse_bsr,
                   _layout.sparse_bsc)


def _stack_tensors(batch):
    """``stack(batch)``, with torch's errors for sparse or nested tensors and for an element that is not a
    tensor."""
    for kind, refused in (("nested", batch[0].is_nested), ("sparse", batch[0].layout in _SPARSE_LAYOUTS)):
        if refused:
            raise RuntimeError(f"Batches of {kind} tensors are not currently supported by the default collate_fn; "
                               "please provide a custom collate_fn to handle them appropriately.")
    for i, item in enumerate(batch):
        if not isinstance(item, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {_type_name(item)}")
    return stack(list(batch), 0)


def default_collate(batch):
    """Stack tensors/arrays/numbers into batch tensors, recursing into dicts, namedtuples and sequences.

    ``batch`` is a list (or, when recursing, a tuple of the samples' fields); strings and bytes come back as
    that same list or tuple, as torch returns them."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack_tensors(batch)
    if isinstance(elem, np.ndarray):
        if _is_string_array(elem):
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return _stack_tensors([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        # as_tensor on the list itself: torch's dtype inference over mixed numpy and Python scalars.
        return as_tensor(list(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [default_collate(samples) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return collated
        return _rebuild_sequence(elem, collated)
    raise TypeError(_COLLATE_ERR.format(type(elem)))


def default_convert(data):
    """Numpy arrays (not of strings) become tensors, recursing into containers; batches are not formed."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_string_array(data) else as_tensor(data)
    if type(data).__module__ == "numpy" and not isinstance(data, (np.str_, np.bytes_)):
        return as_tensor(data)  # numpy scalars (torch's own errors for the kinds it cannot hold)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
