"""Utilities: data loading, thread control and DLPack exchange."""
from . import checkpoint, data  # noqa: F401  (reachable after ``import engine``, as torch's)
from . import dlpack  # noqa: F401  (torch.utils.dlpack)
