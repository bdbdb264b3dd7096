"""``scatter``, ``scatter_kwargs`` and ``gather`` of ``nn.parallel``: split a call's arguments over devices
and join the replicas' outputs, through any nesting of tuples, named tuples, lists and dicts, as torch's.

Every tensor is split along ``dim`` by ``comm.scatter`` (one piece per device); any other object is passed to
every device as it is. Gathering concatenates the tensors at each position of the outputs on the target
device with ``comm.gather`` (0-d tensors become a vector, with torch's warning).
"""
import warnings

from ...tensor import Tensor
from . import comm


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """A list with, for each of ``target_gpus``, ``inputs`` with every tensor replaced by its piece."""
    def split(obj):
        if isinstance(obj, Tensor):
            return list(comm.scatter(obj, target_gpus, None, dim))
        if _is_namedtuple(obj):
            return [type(obj)(*parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(split, obj)))
        if isinstance(obj, list) and obj:
            return [list(parts) for parts in zip(*map(split, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(parts) for parts in zip(*map(split, obj.items()))]
        return [obj for _ in target_gpus]
    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """``(inputs, kwargs)`` scattered: a tuple of positional-argument tuples and one of keyword dicts, as
    many of each (the shorter padded with empty ones)."""
    scattered = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    scattered += [()] * (len(scattered_kwargs) - len(scattered))
    scattered_kwargs += [{}] * (len(scattered) - len(scattered_kwargs))
    return tuple(scattered), tuple(scattered_kwargs)


def _gather_tensors(tensors, dim, target_device):
    if all(t.dim() == 0 for t in tensors) and dim == 0:
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                      "unsqueeze and return a vector.", UserWarning, stacklevel=4)
        tensors = [t.unsqueeze(0) for t in tensors]
    return comm.gather(tensors, dim, target_device)


def gather(outputs, target_device, dim=0):
    """The replicas' ``outputs`` joined into one output of the same structure on ``target_device`` (-1: the
    CPU): tensors concatenated along ``dim``, dicts key by key, sequences position by position."""
    def join(outs):
        first = outs[0]
        if isinstance(first, Tensor):
            return _gather_tensors(outs, dim, target_device)
        if first is None:
            return None
        if isinstance(first, dict):
            if not all(len(first) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(first)((key, join([d[key] for d in outs])) for key in first)
        if _is_namedtuple(first):
            return type(first)._make(map(join, zip(*outs)))
        return type(first)(map(join, zip(*outs)))
    return join(outputs)


__all__ = ["scatter", "scatter_kwargs", "gather"]
