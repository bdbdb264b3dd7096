"""ONNX export of engine models (``engine.onnx.export``, as ``torch.onnx.export``).

The model is traced with ``nn.Graph``'s tracer; each recorded op is written as ONNX nodes through the
op table (``table.py`` and the ``ops_*`` converters), with eval BatchNorm folded into convolutions and
ops on constants computed at export time (``folding.py``). Needs the optional ``onnx`` package
(``pip install flowvision[onnx]``).
"""
from .errors import ExportError, OnnxNotInstalledError, UnsupportedOperatorError
from .exporter import MAX_OPSET, MIN_OPSET, export

__all__ = ["export", "ExportError", "UnsupportedOperatorError", "OnnxNotInstalledError", "MIN_OPSET", "MAX_OPSET"]
