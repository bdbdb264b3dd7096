"""Thread count of the BLAS library that runs the heavy math (``torch.set_num_threads``)."""
import os

from ..backends.cpu import blas

_limits = None


def _controller():
    global _limits
    if _limits is None:
        try:
            from threadpoolctl import ThreadpoolController
            _limits = ThreadpoolController()
        except ImportError:
            _limits = False
    return _limits


def get_num_threads():
    ctl = _controller()
    if ctl:
        for info in ctl.info():
            if info.get("user_api") == "blas":
                return info["num_threads"]
    return blas.threads() or os.cpu_count() or 1


def set_num_threads(n):
    """Through threadpoolctl where installed (any BLAS), else through OpenBLAS's own C API."""
    ctl = _controller()
    if ctl:
        ctl.limit(limits=int(n), user_api="blas")
    elif not blas.set_threads(int(n)):
        raise RuntimeError("set_num_threads needs numpy built with OpenBLAS, or threadpoolctl for other BLAS "
                           "libraries (pip install threadpoolctl)")
