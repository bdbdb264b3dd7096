"""Thread count of the BLAS library that runs the heavy math (``torch.set_num_threads``)."""
import os

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
    return os.cpu_count() or 1


def set_num_threads(n):
    ctl = _controller()
    if not ctl:
        raise RuntimeError("set_num_threads needs threadpoolctl (pip install threadpoolctl)")
    ctl.limit(limits=int(n), user_api="blas")
