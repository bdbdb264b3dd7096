"""``engine.nn.parallel``: ``DataParallel`` (one GPU, or none) and ``DistributedDataParallel`` (one process
per replica over ``engine.distributed``)."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
