"""Matrix products on the GPU: cuBLAS through CuPy, or through our own binding while a CUDA graph is being
warmed up and captured (CuPy refuses cuBLAS calls in a capture; ``cublas.py``) and for autocast's bfloat16
GEMMs (``autocast.py``). The twin of ``backends/cpu/gemm.py``."""
import cupy

from . import autocast, cublas, graphs
from .tf32 import gemm_tf32


def matmul(a, b, out=None):
    """``a @ b`` with numpy's broadcasting rules, into ``out`` where given."""
    if graphs.capturing() or graphs.in_graph() and cublas.takes(a, b):  # a warm-up must not fail where eager works
        return cublas.matmul(a, b, out=out, tf32=gemm_tf32())
    return cupy.matmul(a, b, out=out)


def autocast_matmul(a, b, out=None):
    """``matmul`` for the ops autocast covers (linear layers, matmul, the convolutions' GEMMs): under
    ``autocast.bfloat16()``, float32 operands (or bfloat16 bits) are multiplied in bfloat16 into float32."""
    if autocast.rounds(a, b):
        return cublas.matmul_bfloat16(autocast.bfloat16_bits(a), autocast.bfloat16_bits(b), out=out)
    return matmul(a, b, out)
