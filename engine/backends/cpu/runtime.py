"""The CPU runtime: what autograd and ``nn.Graph`` ask of the device, without knowing which it is.

- ``prepare_backward()``: a backward pass means training, whose next step allocates the same arrays
  again, so from the first one on the C allocator keeps freed blocks in the process (allocator.py).
- ``release_scratch()``: drop the per-thread scratch buffers (sized by the largest call so far).
- ``stream_count(batch)`` and ``run_streams(fns)``: an inference batch whose samples are computed each
  on its own may run as one stream per BLAS thread, each stream with single-threaded BLAS.
- ``captures_graphs()``, ``capture(fn, arrays)`` and ``capturing()``: a replayable capture of a plan's run
  (CUDA graphs; none on the CPU), and whether one is under way.
- ``autocast()`` and ``gemm_settings()``: mixed-precision GEMMs (none on the CPU), and the GEMM settings a
  capture depends on. ``generator(seed)``: a device generator (none: the CPU draws from ``engine.random``'s).
- ``parallel_chunks``, ``num_threads``, ``set_num_threads``: the thread pool and the BLAS thread count,
  for host work outside the kernels (random draws, ``engine.set_num_threads``).
"""
from . import blas, scratch
from .allocator import retain_freed_memory
from .blas import num_threads, set_num_threads
from .threads import parallel_chunks, run_concurrently

__all__ = ["prepare_backward", "release_scratch", "stream_count", "run_streams", "capturing", "captures_graphs",
           "capture", "autocast", "gemm_settings", "generator", "parallel_chunks", "num_threads", "set_num_threads"]


def prepare_backward():
    """Keep freed memory for the next step; returns whether the allocator does (False without glibc)."""
    return retain_freed_memory()


def release_scratch():
    scratch.release()


def stream_count(batch):
    """How many streams a batch of ``batch`` independent samples may run as: one per BLAS thread."""
    return min(blas.threads() or 1, batch)


def run_streams(fns):
    """Every ``fn()`` at once, one per thread, each with single-threaded BLAS; their results, or None
    where BLAS cannot be held to one thread (then the caller runs the batch as one plan)."""
    with blas.limited(1) as single:
        if not single:
            return None
        return run_concurrently(fns)


def capturing():
    """Whether a graph capture is under way: never on the CPU."""
    return False


def captures_graphs():
    """Whether ``capture`` makes replayable graphs here: not on the CPU (plans replay op by op)."""
    return False


def capture(fn, arrays, on_warm_up=None):
    raise NotImplementedError("no graph capture on the CPU")


def autocast():
    """None: no mixed precision on the CPU (numpy has no bfloat16 GEMM); products stay in their dtype."""
    return None


def gemm_settings():
    """Nothing a capture depends on: the CPU captures nothing."""
    return ()


def generator(seed):
    """None: CPU tensors draw from ``engine.random``'s generators (PyTorch's mt19937 stream)."""
    return None
