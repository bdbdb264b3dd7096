"""The exporter's errors: each says in one line what cannot be exported and where."""


class ExportError(RuntimeError):
    """A model that cannot be written as ONNX (the message names the op, the module and the opset)."""


class UnsupportedOperatorError(ExportError):
    """An engine op with no ONNX mapping at the requested opset (or in the configuration it was called with)."""


class OnnxNotInstalledError(ImportError):
    """``engine.onnx.export`` needs the optional ``onnx`` package (``pip install flowvision[onnx]``)."""


def missing_onnx():
    """The one-line error for a missing ``onnx`` package, naming the extra that installs it."""
    return OnnxNotInstalledError("engine.onnx.export needs the 'onnx' package, which is not installed: "
                                 "pip install flowvision[onnx] (or pip install onnx)")
