"""``engine.nn.parallel``: ``DataParallel`` (one GPU, or none), ``DistributedDataParallel`` (one process
per replica over ``engine.distributed``), and data parallelism's building blocks: ``replicate``, ``scatter``,
``gather``, ``parallel_apply`` and the ``comm`` module."""
from . import comm
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["replicate", "scatter", "parallel_apply", "gather", "data_parallel", "DataParallel",
           "DistributedDataParallel", "comm", "scatter_kwargs"]
