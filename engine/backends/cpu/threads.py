"""A small shared thread pool that splits memory-bound numpy work (copies, ufunc loops) into chunks.

numpy releases the GIL inside large copies and ufunc loops, so chunks of one such operation run on
several cores at once.  The chunk count follows the BLAS thread count (``engine.set_num_threads``);
work below _MIN_BYTES (or a call's own bound, where it measured otherwise) stays on the calling thread,
where thread hand-off would cost more than it saves.
Chunks cover disjoint slices of an axis, so results are bit-identical to the single-threaded run.
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from . import blas

_MIN_BYTES = 1 << 20
# One core's L2 here. Each block costs a few numpy calls (~20 us with the row-buffer switch), which
# 256 KB blocks paid too often: the conv epilogue (BN + residual + ReLU) on 8x256x56x56 took 4.0 ms in
# 256 KB blocks against 3.2 in 1 MB ones, BatchNorm training 10% less over ResNet's shapes, a resnet50
# training step 4% less (alternating runs); whole arrays per thread lose the cache again for BatchNorm.
_BLOCK_BYTES = 1 << 20

_pool = None
_pool_size = 0
_pool_pid = None
_pool_lock = threading.Lock()
_worker = threading.local()


def _mark_worker():
    """Pool initializer: flag the thread so work it runs never fans out again (no nested waits)."""
    _worker.active = True


def _executor(n):
    """The shared pool, grown to at least n - 1 workers (the caller runs one chunk itself); a forked
    child (DataLoader worker) gets its own, as the parent's threads do not exist there. A process's first
    pool also has OpenBLAS's idle threads stop spinning soon, so that they leave the pool's threads
    the cores (``blas.shorten_idle_spin``; no BLAS call runs elsewhere at that point)."""
    global _pool, _pool_size, _pool_pid
    with _pool_lock:
        first_in_process = _pool_pid != os.getpid()
        if first_in_process:
            blas.shorten_idle_spin()
        if _pool is None or _pool_size < n - 1 or first_in_process:
            _pool = ThreadPoolExecutor(n - 1, thread_name_prefix="engine-cpu", initializer=_mark_worker)
            _pool_size, _pool_pid = n - 1, os.getpid()
        return _pool


def chunk_count(nbytes, length, min_bytes=_MIN_BYTES):
    """How many chunks to split work of nbytes along an axis of this length into (1: run inline, as
    work below min_bytes does)."""
    if nbytes < min_bytes or length < 2 or getattr(_worker, "active", False):
        return 1
    return max(1, min(blas.num_threads(), length))


def parallel_chunks(fn, length, nbytes, min_bytes=_MIN_BYTES):
    """Call fn(lo, hi) over contiguous [lo, hi) pieces covering range(length), in parallel when big."""
    n = chunk_count(nbytes, length, min_bytes)
    if n == 1:
        fn(0, length)
        return
    bounds = [length * i // n for i in range(n + 1)]
    futures = [_executor(n).submit(fn, bounds[i], bounds[i + 1]) for i in range(1, n)]
    fn(bounds[0], bounds[1])
    for f in futures:
        f.result()


def parallel_blocks(fn, length, row_bytes, min_bytes=_MIN_BYTES):
    """Call fn(lo, hi) over cache-sized [lo, hi) row blocks of range(length), the blocks shared out
    among the threads: a multi-pass update of one block (multiply, then add) then stays in cache."""
    def chunk(lo, hi):
        for a, b in cache_blocks(lo, hi, row_bytes):
            fn(a, b)
    parallel_chunks(chunk, length, length * row_bytes, min_bytes)


def cache_blocks(lo, hi, row_bytes):
    """[lo, hi) as consecutive cache-sized [a, b) blocks of rows of ``row_bytes`` each."""
    step = max(1, _BLOCK_BYTES // max(row_bytes, 1))
    return [(a, min(a + step, hi)) for a in range(lo, hi, step)]


def run_concurrently(fns):
    """Call every ``fn()`` at once, one per thread (the caller runs the first), and return their results.
    Kernels inside run whole on their thread: none of them fans out into the pool, which is busy."""
    futures = [_executor(len(fns)).submit(fn) for fn in fns[1:]]
    nested = getattr(_worker, "active", False)
    _worker.active = True
    try:
        first = fns[0]()
    finally:
        _worker.active = nested
        wait(futures)
    return [first] + [f.result() for f in futures]


def split_axis(shape):
    """The first axis longer than 1 (the axis chunks are cut along), or 0 if there is none."""
    return next((i for i, n in enumerate(shape) if n > 1), 0)


def copyto(dst, src, min_bytes=_MIN_BYTES):
    """np.copyto(dst, src) for same-shape arrays, split along their first non-trivial axis when big."""
    if dst.ndim == 0:
        np.copyto(dst, src)
        return
    ax = split_axis(dst.shape)
    idx = (slice(None),) * ax

    def part(lo, hi):
        np.copyto(dst[idx + (slice(lo, hi),)], src[idx + (slice(lo, hi),)])
    parallel_chunks(part, dst.shape[ax], dst.nbytes, min_bytes)
