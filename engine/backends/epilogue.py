"""The fused epilogue of a convolution: the record both backends take.

``nn.Graph`` folds the ops that follow a convolution (eval BatchNorm, a residual add, an
activation) into one pass over the convolution's output:

    y = activation(y * scale + shift + residual)

per output channel for ``scale`` and ``shift`` (1-D arrays of the output's channel count, on the
output's device), with every field optional. ``activation`` is None, ``"relu"``, ``"hardswish"``,
``"hardsigmoid"``, ``"silu"``, ``"gelu"`` (exact, through erf) or ``("clip", lo, hi)`` (ReLU6 and Hardtanh).
"""
from typing import Any, NamedTuple, Optional, Tuple, Union

Activation = Union[None, str, Tuple[str, float, float]]


class Epilogue(NamedTuple):
    """What runs on a convolution's output before anything else reads it (see the module docstring)."""

    scale: Optional[Any] = None
    shift: Optional[Any] = None
    residual: Optional[Any] = None
    activation: Activation = None

    def with_bias(self, bias):
        """The same epilogue after a convolution bias: ``(y + b) * scale + shift`` becomes
        ``y * scale + (shift + b * scale)``."""
        folded = bias if self.scale is None else bias * self.scale
        return self._replace(shift=folded if self.shift is None else self.shift + folded)

    def is_empty(self):
        return self.scale is None and self.shift is None and self.residual is None and self.activation is None
