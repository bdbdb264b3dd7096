"""Matrix products on the GPU: cuBLAS through CuPy, or through our own binding while a CUDA graph is being
captured (CuPy refuses cuBLAS calls then; ``cublas.py``). The twin of ``backends/cpu/gemm.py``."""
import cupy

from . import cublas, graphs
from .tf32 import gemm_tf32


def matmul(a, b, out=None):
    """``a @ b`` with numpy's broadcasting rules, into ``out`` where given."""
    if graphs.capturing():
        return cublas.matmul(a, b, out=out, tf32=gemm_tf32())
    return cupy.matmul(a, b, out=out)
