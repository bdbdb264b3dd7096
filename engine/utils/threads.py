"""Thread count of the BLAS library that runs the heavy math on the CPU (``torch.set_num_threads``)."""
from ..backends.cpu.blas import num_threads as get_num_threads, set_num_threads

__all__ = ["get_num_threads", "set_num_threads"]
