"""Static graphs: ``nn.Graph`` traces ``build`` once, optimises the op list, and replays it."""
from .graph import Graph, GraphConfig

__all__ = ["Graph", "GraphConfig"]
