"""``engine.fx.passes.utils``: helpers of graph passes (``matcher_utils``: subgraph matching)."""
