"""Indexing by tensors that a trace must see: ``x[key]`` with tensors in the key, and ``nonzero``.

Eager indexing turns index tensors into arrays held in the op's parameters (``AdvancedIndex``),
which is right for one call but would freeze data-dependent indices (boxes above a score, the
survivors of NMS) into a trace. While a trace records (``nn.Graph``, ``engine.onnx.export``),
``getitem`` runs ``TensorIndex`` instead: the index tensors are its arguments, so replays and
exports compute them. ``NonZero`` is ``nonzero`` as a recorded op.
"""
import numpy as np

from ..autograd import tracing
from ..autograd.double_backward import transposed_backward
from ..autograd.function import Function
from ._common import xp_of


class TensorIndex(Function):
    """``x[key]`` where the key entries at ``positions`` are the op's tensor arguments (int or bool arrays)."""

    uses_inputs = False

    def __init__(self, key, positions):
        self.key, self.positions = key, positions

    def full_key(self, indices):
        """The key with the index arrays in their places."""
        key = list(self.key)
        for position, index in zip(self.positions, indices):
            key[position] = index
        return tuple(key)

    def forward(self, x, *indices):
        from .indexing import _as_array, _key_on, _torch_index_error, parse_key
        self.in_shape = x.shape
        indices = [tracing.vary_mask(i) if i.dtype == np.bool_ and i.ndim else i for i in indices]
        self.basic, adv = parse_key(x.shape, self.full_key(indices))
        view = x[self.basic]
        self.view_shape = view.shape
        if adv is None:
            self.adv = Ellipsis
            return view.copy()
        self.adv = _key_on(adv, x)
        try:
            return _as_array(view[self.adv], x)
        except IndexError as err:
            raise _torch_index_error(err) from None

    def backward(self, gy):
        xp = xp_of(gy)
        g_view = xp.zeros(self.view_shape, gy.dtype)
        xp.add.at(g_view, self.adv, gy)
        g = xp.zeros(self.in_shape, gy.dtype)
        g[self.basic] += g_view
        return (g,) + (None,) * len(self.positions)

    def backward_tensors(self, gy):
        """The read at the advanced key, then the view, each undone by its own op's transpose (the indices
        are constants here)."""
        from .indexing import AdvancedIndex
        from .shape import Slice
        g = gy
        if self.adv is not Ellipsis:
            pick = AdvancedIndex(self.adv)
            pick.in_shape = self.view_shape
            g = transposed_backward(pick, g)
        view = Slice(self.basic)
        view.in_shape = self.in_shape
        return (transposed_backward(view, g),) + (None,) * len(self.positions)


class NonZero(Function):
    """Indices of the non-zero entries: (N, ndim) int64, or with ``as_tuple`` one 1-d int64 array per dim."""

    uses_inputs = False

    def __init__(self, as_tuple):
        self.as_tuple = as_tuple

    def forward(self, a):
        xp = xp_of(a)
        if tracing.active is not None:
            a = tracing.vary_mask(a != 0)
        if self.as_tuple:
            return tuple(i.astype(np.int64, copy=False) for i in xp.nonzero(a.reshape(a.shape or (1,))))
        return xp.argwhere(a).astype(np.int64, copy=False)
