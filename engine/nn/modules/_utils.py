"""Argument helpers shared by the layer modules: ``_pair`` and friends, factory kwargs."""
import collections.abc
import operator
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
    """Uninitialised storage for a parameter/buffer (``device``/``dtype`` factory kwargs). A size that is not an
    integer (``Linear(3.5, 2)``) raises PyTorch's error instead of being truncated."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):  # one sequence of sizes, as ``empty`` takes it
        shape = tuple(shape[0])
    for pos, size in enumerate(shape):
        try:
            operator.index(size)
        except TypeError:
            kind = type(size).__name__
            if pos:  # the words of PyTorch's argument parser, which reads a non-int first size as the whole size
                message = (f"failed to unpack the object at pos {pos + 1} with error \"type must be tuple of "
                           f"ints,but got {kind}\"")
            elif len(shape) == 1:
                message = f"(position 1) must be tuple of ints, not {kind}"
            else:
                message = f"(position 1) must be tuple of ints, but found element of type {kind} at pos 0"
            raise TypeError(f"empty(): argument 'size' {message}") from None
    return empty(*shape, dtype=dtype or _dtype.get_default_dtype(), device=device)
