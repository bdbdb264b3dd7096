"""Turning lists of samples into batches: ``default_collate`` and ``default_convert`` (torch's rules)."""
import collections.abc

import numpy as np

from ...ops.creation import as_tensor, tensor
from ...ops.shape import stack
from ...tensor import Tensor
from ... import _dtype

__all__ = ["default_collate", "default_convert"]

_COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
                "found {}")


def _is_string_array(arr):
    return arr.dtype.kind in "SUO"


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _rebuild_mapping(elem, values):
    """A mapping of ``elem``'s type holding ``values``, or a plain dict when that type can't be built so."""
    try:
        return type(elem)(values)
    except TypeError:
        return dict(values)


def default_collate(batch):
    """Stack tensors/arrays/numbers into batch tensors, recursing into dicts, namedtuples and sequences."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray):
        if _is_string_array(elem):
            raise TypeError(_COLLATE_ERR.format(elem.dtype))
        return stack([as_tensor(b) for b in batch], 0)
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=_dtype.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        collated = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return collated
        try:
            return type(elem)(collated)
        except TypeError:
            return collated
    raise TypeError(_COLLATE_ERR.format(type(elem)))


def default_convert(data):
    """Numpy arrays (not of strings) become tensors, recursing into containers; batches are not formed."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _is_string_array(data) else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data
