"""Padding layers over ``F.pad``: constant (zero), reflection, replication and circular."""
from .. import functional as F
from ._utils import _ntuple
from .module import Module


class _PadNd(Module):
    """Pads the last ``_dims`` dims; ``padding`` is an int or (left, right, top, bottom, ...)."""

    _dims = 0
    mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(2 * self._dims, "_pad")(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    _dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    _dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, mode = 2, "replicate"


class CircularPad1d(_PadNd):
    _dims, mode = 1, "circular"


class CircularPad2d(_PadNd):
    _dims, mode = 2, "circular"


__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ReflectionPad1d",
           "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d"]
