"""Matrix products on the CPU: numpy's matmul on OpenBLAS (the twin of ``backends/cuda/gemm.py``)."""
import numpy as np


def matmul(a, b, out=None):
    """``a @ b`` with numpy's broadcasting rules, into ``out`` where given."""
    return np.matmul(a, b, out=out)


def autocast_matmul(a, b, out=None):
    """``matmul``: the CPU has no autocast (numpy has no bfloat16 GEMM), so every product is in its dtype."""
    return np.matmul(a, b, out=out)
