"""``torch.compiler``'s markers that tell Dynamo how to treat a function: ``allow_in_graph`` and
``assume_constant_result``, and the ``is_dynamo_compiling`` / ``is_exporting`` queries.

engine.compile traces by running code (``_compile.py``), so there is no bytecode analysis for a marker to steer:
each marker returns its function as it is, which is what running it eagerly computes.
"""
from ._compile import is_compiling

__all__ = ["allow_in_graph", "assume_constant_result", "is_dynamo_compiling", "is_exporting"]


def allow_in_graph(fn):
    """``torch.compiler.allow_in_graph``: ``fn`` itself (a trace records the ops it runs, as Dynamo records a
    call of an allowed function); a list or tuple of functions is taken too, as torch takes it."""
    if isinstance(fn, (list, tuple)):
        return [allow_in_graph(f) for f in fn]
    if not callable(fn):
        raise AssertionError("allow_in_graph expects a callable")
    return fn


def assume_constant_result(fn):
    """``torch.compiler.assume_constant_result``: ``fn`` itself (its result is recomputed on every eager call
    and read when a trace runs, as Dynamo reads it once)."""
    return fn


def is_dynamo_compiling():
    """``torch.compiler.is_dynamo_compiling``: ``is_compiling()``: the engine has one tracer for Dynamo's and
    export's roles."""
    return is_compiling()


def is_exporting():
    """``torch.compiler.is_exporting``: False: engine.export does not exist (ONNX export traces through
    ``is_compiling``)."""
    return False
