"""The CUDA backend's kernel sources (``kernels/*.cu``): compiled by NVRTC through CuPy once per source
and element type, and launched over a grid-stride loop.

Every source is prefixed with ``typedef <element> T;`` and ``typedef <accumulator> A;`` (float for
float32, double for float64) and with ``kernels/common.cuh``. Kernels are ``extern "C"``, take
``index_t`` (64-bit) integers and loop over their index range with ``GRID_LOOP``, so any grid size
covers any problem size. float16 arrays are computed in float32 by the Python wrappers.
"""
import functools
import pathlib

import cupy
import numpy as np

KERNEL_DIR = pathlib.Path(__file__).parent / "kernels"
#: element dtype -> (C type of T, C type of A)
C_TYPES = {np.dtype(np.float32): ("float", "float"), np.dtype(np.float64): ("double", "double")}
# Threads per block: a multiple of the 32-thread warp that keeps several blocks resident per SM for
# these memory-bound loops (the usual choice; the grid-stride loop makes any size correct).
THREADS = 256
MAX_BLOCKS = 1 << 24


def source(name, dtype):
    """The full text NVRTC compiles for ``kernels/<name>.cu`` specialised to ``dtype``."""
    element, accumulator = C_TYPES[np.dtype(dtype)]
    common = (KERNEL_DIR / "common.cuh").read_text()
    body = (KERNEL_DIR / f"{name}.cu").read_text()
    return f"typedef {element} T;\ntypedef {accumulator} A;\n{common}\n{body}"


@functools.lru_cache(maxsize=None)
def _module(name, dtype_str):
    return cupy.RawModule(code=source(name, np.dtype(dtype_str)), options=("--std=c++14",))


@functools.lru_cache(maxsize=None)
def function(name, kernel, dtype_str):
    """The compiled kernel ``kernel`` of ``kernels/<name>.cu`` for the dtype named ``dtype_str``."""
    return _module(name, dtype_str).get_function(kernel)


def launch(name, kernel, dtype, n, *args):
    """Run ``kernel`` of ``kernels/<name>.cu`` (element type ``dtype``) over ``n`` indices. Python
    integers are passed as 64-bit ``index_t``; arrays must be C-contiguous."""
    if n <= 0:
        return
    fn = function(name, kernel, np.dtype(dtype).str)
    blocks = min(-(-n // THREADS), MAX_BLOCKS)
    fn((blocks,), (THREADS,), tuple(np.int64(a) if type(a) is int else a for a in args))
