"""Thread count of the BLAS library that runs the heavy math on the CPU (``torch.set_num_threads``)."""
import os

from .. import backends


def get_num_threads():
    return backends.runtime("cpu").num_threads()


def set_num_threads(n):
    """Through threadpoolctl where installed (any BLAS), else through OpenBLAS's own C API."""
    backends.runtime("cpu").set_num_threads(n)


_interop = {"threads": None}


def get_num_interop_threads():
    """``torch.get_num_interop_threads``: the count set by ``set_num_interop_threads``, else one per core as
    torch's default. The engine runs independent ops one after another (it has no inter-op pool), so the count is
    kept for scripts that set and read it and changes no work."""
    return _interop["threads"] or os.cpu_count() or 1


def set_num_interop_threads(n):
    """Set the inter-op thread count once, before any parallel work, as torch allows (see above)."""
    if not isinstance(n, int) or n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    if _interop["threads"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop["threads"] = n


__all__ = ["get_num_interop_threads", "get_num_threads", "set_num_interop_threads", "set_num_threads"]
