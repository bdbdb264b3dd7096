"""``vmap``'s watch over the inputs it does not map (``in_dims`` None) that the function writes in place.

torch runs the function once on batched tensors: an in-place op on an unmapped input happens once, and it is an
error when what it writes depends on the batch (the input would need a batch dimension it does not have). Here
the function runs once per element, so the same op would happen once per element. The watch keeps each unmapped
input's values from before the call, puts them back before every element, and compares what the elements leave
behind: the same values everywhere are the one write torch makes; different values are torch's error.
"""
from ..tensor import Tensor

INPLACE_ERROR = ("vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` "
                 "in extra_args that has more elements than `self`. This happened due to `other` being vmapped over "
                 "but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead of "
                 "inplace arithmetic. If said operator is being called inside the PyTorch framework, please file a "
                 "bug report instead.")


class UnmappedWrites:
    """The unmapped tensor inputs (those sharing no storage with a mapped one), their values and versions."""

    def __init__(self, flat_args, dims):
        mapped = {id(a._version_counter) for a, d in zip(flat_args, dims) if d is not None}
        self.tensors = [a for a, d in zip(flat_args, dims)
                        if d is None and isinstance(a, Tensor) and id(a._version_counter) not in mapped]
        self.start = [t._data.copy() for t in self.tensors]
        self.first = None  # what the first element left in each tensor

    def __bool__(self):
        return bool(self.tensors)

    def before(self):
        """Every watched tensor back to its values from before the call (a raw write: no new version)."""
        self.versions = [t._version_counter[0] for t in self.tensors]
        if self.first is not None:
            for t, start, first in zip(self.tensors, self.start, self.first):
                if first is not start:
                    t._data[...] = start

    def after(self):
        """Records the first element's writes; raises when a later element wrote other values."""
        left = [t._data.copy() if t._version_counter[0] != v else s
                for t, v, s in zip(self.tensors, self.versions, self.start)]
        if self.first is None:
            self.first = left
            return
        for t, mine, first, start in zip(self.tensors, left, self.first, self.start):
            if mine is not first and not _same(mine, first):
                t._data[...] = start
                raise RuntimeError(INPLACE_ERROR)


def _same(a, b):
    """Equal arrays, NaNs in the same places counting as equal."""
    return a.shape == b.shape and bool(((a == b) | ((a != a) & (b != b))).all())
