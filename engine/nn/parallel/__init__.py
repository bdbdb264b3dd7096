"""``engine.nn.parallel``: ``DataParallel`` (one GPU, or none) and the name ``DistributedDataParallel``."""
from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
