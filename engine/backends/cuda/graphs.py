"""CUDA graph capture and replay of a function of arrays (``nn.Graph``'s inference plans on the GPU).

``CapturedGraph(fn, arrays)`` runs ``fn`` once on a private stream (a warm-up: kernels compile, and its
allocations are recorded), then again under stream capture, and from then on replays the captured graph:
one launch instead of a Python call per op. The warm-up's outputs go to ``on_warm_up`` where one is given: a
training step's warm-up is that call's step, which must not run twice.

- Memory: every allocation of the warm-up and of the capture comes from a memory pool of the graph's own,
  so the buffers the graph reads and writes are never handed to anything else, and a replay allocates
  nothing. The warm-up records each buffer's size and lifetime; its freed blocks are then given back, and
  the capture takes its buffers from one arena in which those lifetimes are packed (``arena.py``): the
  graph holds that arena, its inputs and outputs (and the warm-up's buffers still in use: a training
  step's outputs, state it created).
- Inputs and outputs: the graph reads static input buffers (each call copies its arrays into them) and
  writes the capture's output arrays; each call hands back copies of those, so results stay valid after
  the next call.
- GEMMs: CuPy refuses cuBLAS calls during capture; while ``in_graph()`` is true (the capture and its
  warm-up), ``gemm.matmul`` calls cuBLAS through ``cublas.py``, whose handle is set to the private stream
  before the warm-up.

Anything that needs the host during capture (a device-to-host copy, a synchronisation, a data-dependent
size) makes CuPy or CUDA raise; the capture is then ended and the error passed on, for the caller to fall
back to replaying op by op.
"""
import contextlib

import cupy

from . import cublas
from .arena import ArenaAllocator, Lifetimes

_mode = None  # "warm-up" or "capture" while a CapturedGraph runs its function


def capturing():
    """Whether a ``CapturedGraph`` is being captured now."""
    return _mode == "capture"


def in_graph():
    """Whether a ``CapturedGraph`` is being captured or warmed up. The warm-up runs the code the capture will
    run, so that both make the same allocations: GEMMs through ``cublas.py``, no checks reading the host."""
    return _mode is not None


@contextlib.contextmanager
def _running(mode):
    global _mode
    _mode = mode
    try:
        yield
    finally:
        _mode = None


class CapturedGraph:
    """``fn(list of arrays) -> list of arrays`` captured into a CUDA graph (see the module docstring)."""

    def __init__(self, fn, arrays, on_warm_up=None):
        cupy.cuda.get_current_stream().synchronize()  # the inputs are ready before the private stream reads them
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            self.inputs = [cupy.array(a, copy=True) for a in arrays]
        cublas.set_stream(self.stream)
        lifetimes = Lifetimes(self.pool)
        with cupy.cuda.using_allocator(lifetimes.malloc), self.stream, _running("warm-up"):
            outputs = fn(self.inputs)
        self.stream.synchronize()
        if on_warm_up is not None:
            on_warm_up(outputs)
        del outputs  # unless the caller keeps them, their lifetimes end with the run
        self.pool.free_all_blocks()  # the warm-up's freed blocks go back before the arena is drawn
        self.arena = ArenaAllocator(self.pool, lifetimes)
        with cupy.cuda.using_allocator(self.arena.malloc), self.stream:
            self.outputs, self.graph = _capture(self.stream, fn, self.inputs)

    def __call__(self, arrays):
        """The outputs of ``fn(arrays)``: inputs copied in, one graph launch, outputs copied out (all on the
        current stream)."""
        for buffer, array in zip(self.inputs, arrays):
            buffer[...] = array
        self.graph.launch()
        return [out.copy() for out in self.outputs]

    def pool_bytes(self):
        """Device memory the graph's pool holds: its arena, inputs and outputs, and whatever the arena could
        not place."""
        return self.pool.total_bytes()


def _capture(stream, fn, inputs):
    """(fn's outputs, the CUDA graph) of ``fn(inputs)`` captured on ``stream``."""
    stream.begin_capture()
    try:
        with _running("capture"):
            outputs = fn(inputs)
    except BaseException:
        try:
            stream.end_capture()
        except Exception:  # an invalidated capture also fails to end; the first error is the one to report
            pass
        raise
    return outputs, stream.end_capture()
