"""Thread count of the BLAS library that runs the heavy math on the CPU (``torch.set_num_threads``)."""
from .. import backends


def get_num_threads():
    return backends.runtime("cpu").num_threads()


def set_num_threads(n):
    """Through threadpoolctl where installed (any BLAS), else through OpenBLAS's own C API."""
    backends.runtime("cpu").set_num_threads(n)


__all__ = ["get_num_threads", "set_num_threads"]
