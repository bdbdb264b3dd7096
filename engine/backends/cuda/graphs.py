"""CUDA graph capture and replay of a function of arrays (``nn.Graph``'s inference plans on the GPU).

``CapturedGraph(fn, arrays)`` runs ``fn`` once on a private stream (a warm-up: kernels compile, the memory
pool grows to the run's size; ``warm_up=False`` where the caller has just run it, as a training step that
must not run twice), then again under stream capture, and from then on replays the captured
graph: one launch instead of a Python call per op.

- Memory: every allocation of the warm-up and of the capture comes from a memory pool of the graph's own,
  so the buffers the graph reads and writes are never handed to anything else, and a replay allocates
  nothing. The capture reuses the warm-up's freed blocks, so the pool holds about one eager run's peak.
- Inputs and outputs: the graph reads static input buffers (each call copies its arrays into them) and
  writes the capture's output arrays; each call hands back copies of those, so results stay valid after
  the next call.
- GEMMs: CuPy refuses cuBLAS calls during capture; while ``capturing()`` is true, ``gemm.matmul`` calls
  cuBLAS through ``cublas.py``, whose handle is set to the capture stream before the capture begins.

Anything that needs the host during capture (a device-to-host copy, a synchronisation, a data-dependent
size) makes CuPy or CUDA raise; the capture is then ended and the error passed on, for the caller to fall
back to replaying op by op.
"""
import cupy

from . import cublas

_capturing = False


def capturing():
    """Whether a ``CapturedGraph`` is being captured now."""
    return _capturing


class CapturedGraph:
    """``fn(list of arrays) -> list of arrays`` captured into a CUDA graph (see the module docstring)."""

    def __init__(self, fn, arrays, warm_up=True):
        cupy.cuda.get_current_stream().synchronize()  # the inputs are ready before the private stream reads them
        self.pool = cupy.cuda.MemoryPool()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        with cupy.cuda.using_allocator(self.pool.malloc), self.stream:
            self.inputs = [cupy.array(a, copy=True) for a in arrays]
            if warm_up:
                fn(self.inputs)
            self.stream.synchronize()
            cublas.set_stream(self.stream)
            self.outputs, self.graph = _capture(self.stream, fn, self.inputs)

    def __call__(self, arrays):
        """The outputs of ``fn(arrays)``: inputs copied in, one graph launch, outputs copied out (all on the
        current stream)."""
        for buffer, array in zip(self.inputs, arrays):
            buffer[...] = array
        self.graph.launch()
        return [out.copy() for out in self.outputs]

    def pool_bytes(self):
        """Device memory the graph's pool holds (its buffers)."""
        return self.pool.total_bytes()


def _capture(stream, fn, inputs):
    """(fn's outputs, the CUDA graph) of ``fn(inputs)`` captured on ``stream``."""
    global _capturing
    stream.begin_capture()
    _capturing = True
    try:
        outputs = fn(inputs)
    except BaseException:
        _capturing = False
        try:
            stream.end_capture()
        except Exception:  # an invalidated capture also fails to end; the first error is the one to report
            pass
        raise
    _capturing = False
    return outputs, stream.end_capture()
