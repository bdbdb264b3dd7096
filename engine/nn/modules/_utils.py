"""Argument helpers shared by the layer modules: ``_pair`` and friends, factory kwargs."""
import collections.abc
from itertools import repeat

from ... import _dtype
from ...ops.creation import empty


def _ntuple(n, name):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n=2: F.pad's last-dim-first order."""
    return tuple(x for x in reversed(t) for _ in range(n))


def new_param_data(shape, device=None, dtype=None):
    """Uninitialised storage for a parameter/buffer (``device``/``dtype`` factory kwargs)."""
    return empty(*shape, dtype=dtype or _dtype.get_default_dtype(), device=device)
