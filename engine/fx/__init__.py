"""``engine.fx``: torch.fx's symbolic tracing for engine modules: ``symbolic_trace`` records a module's ``forward``
as a ``Graph`` of ``Node``s, ``GraphModule`` runs the Python code generated from a graph, ``Interpreter`` and
``Transformer`` run or rewrite it node by node. Tracing patches engine functions only while a trace runs."""
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_aggregate, map_arg
from .proxy import Attribute, Proxy, TraceError
from .tracer import Tracer, symbolic_trace, wrap

__all__ = ["Attribute", "Graph", "GraphModule", "Interpreter", "Node", "Proxy", "TraceError", "Tracer",
           "Transformer", "map_aggregate", "map_arg", "symbolic_trace", "wrap"]
