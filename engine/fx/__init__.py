"""``engine.fx``: torch.fx's symbolic tracing for engine modules: ``symbolic_trace`` records a module's ``forward``
as a ``Graph`` of ``Node``s, ``GraphModule`` runs the Python code generated from a graph, ``Interpreter`` and
``Transformer`` run or rewrite it node by node, ``replace_pattern`` rewrites subgraphs, ``passes`` holds
``ShapeProp`` and ``split_module``. Tracing patches engine functions only while a trace runs; nothing here adds
work to eager execution."""
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from . import experimental, immutable_collections, passes, subgraph_rewriter  # loaded with fx, as torch's
from .codegen import CodeGen
from .node import Node, has_side_effect, map_aggregate, map_arg
from .proxy import Attribute, Proxy, TraceError
from .subgraph_rewriter import replace_pattern
from .tracer import PH, Tracer, symbolic_trace, wrap

__all__ = ["Attribute", "CodeGen", "Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "TraceError",
           "Tracer", "Transformer", "experimental", "has_side_effect", "immutable_collections", "map_aggregate",
           "map_arg", "passes", "replace_pattern", "subgraph_rewriter", "symbolic_trace", "wrap"]
