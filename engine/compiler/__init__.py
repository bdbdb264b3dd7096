"""``torch.compiler``: ``compile`` (``engine.compile``), ``reset``, ``is_compiling``, ``disable``, ``list_backends``
and ``cudagraph_mark_step_begin``, on the engine's static graphs (``_compile.py`` says what is graphed)."""
from ._compile import (OptimizedModule, compile, cudagraph_mark_step_begin, disable, is_compiling,
                       list_backends, reset)

__all__ = ["OptimizedModule", "compile", "cudagraph_mark_step_begin", "disable", "is_compiling", "list_backends",
           "reset"]
