"""``nonzero_static``: ``nonzero``'s indices in a result of fixed length (padded or cut), so its shape does not depend
on the data (what compiled and exported graphs need)."""
import numpy as np

from ..tensor import _new, register_method
from ._common import int_arg, xp_of


def nonzero_static(input, *, size, fill_value=-1):
    """The (size, input.dim()) int64 indices of ``input``'s nonzero elements in row-major order: the first ``size``
    of them, rows past the last filled with ``fill_value``."""
    size = int_arg(size)
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    x = input._data
    xp = xp_of(x)
    found = xp.stack(xp.nonzero(x), axis=1)[:size] if x.ndim else None
    out = xp.full((int(size), x.ndim), fill_value, np.int64)
    if found is not None:
        out[:found.shape[0]] = found
    return _new(out)


register_method(nonzero_static)

__all__ = ["nonzero_static"]
