"""ONNX export of engine models (``engine.onnx.export``, as ``torch.onnx.export``).

The model is traced with ``nn.Graph``'s tracer (``capture.py``), twice, and what differs between the two
runs (``variation.py``) says which sizes and op parameters follow the input; each recorded op is written
as ONNX nodes through the op table (``table.py`` and the ``ops_*`` converters; ``detection.py``: RoIAlign
and NMS), with eval BatchNorm folded into convolutions and ops on constants computed at export time
(``folding.py``). Indexing by traced tensors and ``nonzero`` are recorded ops (engine/ops/tensor_index.py),
so data-dependent numbers of values (detections) stay dynamic: in the second run, every mask or NMS that keeps
as many entries as in the first keeps one more or one fewer (``tracing.vary``), so that no such number can
pass for a constant.

Limits: Python control flow on values, or on sizes that differ between the runs, is refused; an op that loops
over data-dependent sizes inside itself (Keypoint R-CNN's per-box decoding) is written as an ONNX ``Loop``.
Needs the optional ``onnx`` package (``pip install flowvision[onnx]``).
"""
from ..autograd import tracing
from .capture import ExportTracer
from .errors import ExportError, OnnxNotInstalledError, UnsupportedOperatorError
from .exporter import MAX_OPSET, MIN_OPSET, export
from .modes import TrainingMode

__all__ = ["export", "is_in_onnx_export", "TrainingMode", "ExportError", "UnsupportedOperatorError",
           "OnnxNotInstalledError", "MIN_OPSET", "MAX_OPSET"]


def is_in_onnx_export():
    """Whether ``export`` is tracing the model now (as torch's: True inside the model's forward during an export)."""
    return isinstance(tracing.active, ExportTracer)
