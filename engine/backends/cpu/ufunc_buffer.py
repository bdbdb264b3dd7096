"""numpy's ufunc buffer size around per-channel (broadcast) arithmetic.

numpy buffers a broadcast operand whenever the innermost run it streams is shorter than its ufunc
buffer (8192 elements by default): an (N*C, L) by (N*C, 1) per-channel product, or an (N, C, H, W) by
(N, C, 1, 1) one, then ran 2-2.5x slower than the same op on full arrays. Run with a buffer no longer
than the run, numpy streams it unbuffered. The size is set around such ops only (numpy keeps it per
thread), not globally: casting ops slow down with a small buffer.
"""
import contextlib

import numpy as np

ROW_BUFFER = 512


def wants_row_buffer(row_length):
    """Whether runs of ``row_length`` elements stream faster with the ROW_BUFFER-element buffer."""
    return ROW_BUFFER <= row_length < np.getbufsize()


@contextlib.contextmanager
def row_buffer(row_length):
    """numpy's ufunc buffer at ROW_BUFFER elements inside, when that speeds up runs of ``row_length``."""
    if not wants_row_buffer(row_length):
        yield
        return
    old = np.setbufsize(ROW_BUFFER)
    try:
        yield
    finally:
        np.setbufsize(old)


def with_row_buffer(fn, row_length):
    """``fn(lo, hi)`` (a block of a thread-pool kernel) run inside ``row_buffer(row_length)``."""
    if not wants_row_buffer(row_length):
        return fn

    def run(lo, hi):
        with row_buffer(row_length):
            fn(lo, hi)
    return run


def broadcast_run(*arrays):
    """The innermost run numpy streams for an elementwise op over ``arrays``: the product of the
    trailing output dims over which each operand is either broadcast or full; 0 when no operand is
    broadcast at all (same shapes coalesce into one run, which numpy does not buffer)."""
    ndim = max(a.ndim for a in arrays)
    shapes = [(1,) * (ndim - a.ndim) + a.shape for a in arrays]
    out = tuple(max(d) for d in zip(*shapes))
    if all(s == out for s in shapes):
        return 0
    run, pattern = 1, None
    for i in range(ndim - 1, -1, -1):
        if out[i] == 1:
            continue
        dims = tuple(s[i] == 1 for s in shapes)
        if pattern is not None and dims != pattern:
            break
        pattern, run = dims, run * out[i]
    return run
