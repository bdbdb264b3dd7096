"""torch.fx.passes.utils.matcher_utils's names: the subgraph matcher ``replace_pattern`` uses."""
from ...subgraph_rewriter import InternalMatch, SubgraphMatcher

__all__ = ["InternalMatch", "SubgraphMatcher"]
