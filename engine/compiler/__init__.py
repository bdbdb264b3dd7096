"""``torch.compiler``: ``compile`` (``engine.compile``), ``reset``, ``is_compiling``, ``disable``, ``list_backends``
and ``cudagraph_mark_step_begin``, on the engine's static graphs (``_compile.py`` says what is graphed); Dynamo's
markers (``markers.py``) and ``set_stance`` (``stance.py``)."""
from ._compile import (OptimizedModule, compile, cudagraph_mark_step_begin, disable, is_compiling,
                       list_backends, reset)
from .markers import allow_in_graph, assume_constant_result, is_dynamo_compiling, is_exporting
from .stance import set_stance

__all__ = ["OptimizedModule", "allow_in_graph", "assume_constant_result", "compile", "cudagraph_mark_step_begin",
           "disable", "is_compiling", "is_dynamo_compiling", "is_exporting", "list_backends", "reset", "set_stance"]
