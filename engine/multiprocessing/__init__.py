"""``engine.multiprocessing``: Python's ``multiprocessing`` (every name of it: ``Process``, ``Queue``,
``SimpleQueue``, ``Pool``, ``get_context``, ``set_start_method``, ``cpu_count`` ...) with tensors
that travel between processes as PyTorch's do, and ``spawn`` / ``start_processes`` as
``torch.multiprocessing``.

Importing it (``import engine`` does) registers how tensors are pickled by multiprocessing, for every
queue, pipe and process argument: a tensor in shared memory (``tensor.share_memory_()``,
``module.share_memory()``) arrives as the same memory, so in-place updates made by one process are seen
by the others; see ``reductions`` for the rest.
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (as torch.multiprocessing, every name of it)

from . import reductions
from .spawn import ProcessContext, ProcessExitedException, ProcessRaisedException, spawn, start_processes

_SHARING_STRATEGIES = {"file_descriptor"}


def get_all_sharing_strategies():
    """How tensors can be shared: by file descriptor only (an anonymous shared-memory file)."""
    return set(_SHARING_STRATEGIES)


def get_sharing_strategy():
    return "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Accepts ``"file_descriptor"``, the one strategy here."""
    if new_strategy not in _SHARING_STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported; the strategies are "
                         f"{sorted(_SHARING_STRATEGIES)}")


reductions.register()

__all__ = multiprocessing.__all__ + [
    "ProcessContext", "ProcessExitedException", "ProcessRaisedException", "spawn",
    "start_processes", "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"]
