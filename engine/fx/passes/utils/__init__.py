"""``engine.fx.passes.utils``: helpers of graph passes (``matcher_utils``: subgraph matching)."""
from . import matcher_utils

__all__ = ["matcher_utils"]
