"""The op table: which converter writes each engine op (a ``Function`` class) as ONNX nodes.

Converters register with ``@converts(cls, ...)`` in the ``ops_*`` modules; an op class defined outside
the engine (``flowvision.ops``' RoIAlign) is named by ``"module:QualName"`` so that the engine never
imports it. A converter takes an ``OpContext`` and returns the ONNX name of each of the op's outputs.
"""
import importlib

CONVERTERS = {}
_CONVERTER_MODULES = ("ops_elementwise", "ops_activation", "ops_shape", "ops_index", "ops_nn", "ops_pool",
                      "ops_dropout", "ops_setitem", "ops_pointwise", "ops_reduction", "ops_loss", "detection")


def op_key(cls):
    """``"module:QualName"``: how an op class is named in the table and in saved graphs."""
    return f"{cls.__module__}:{cls.__qualname__}"


def converts(*classes):
    """Register the decorated function as the converter of ``classes`` (classes or "module:QualName")."""
    def register(fn):
        for cls in classes:
            CONVERTERS[cls if isinstance(cls, str) else op_key(cls)] = fn
        return fn
    return register


def converter_of(cls):
    """The converter of op class ``cls``, or None."""
    return CONVERTERS.get(op_key(cls))


def load_converters():
    """Import the modules that fill the table (Python imports each once)."""
    for name in _CONVERTER_MODULES:
        importlib.import_module(f"{__package__}.{name}")
