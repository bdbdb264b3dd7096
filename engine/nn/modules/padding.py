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


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    _dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    _dims, mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    _dims, mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    _dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    _dims, mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    _dims, mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    """Circular padding layers check the input's rank first, with torch's ValueError."""

    mode = "circular"

    def forward(self, input):
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.dim()}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    _dims = 1


class CircularPad2d(_CircularPadNd):
    _dims = 2


class CircularPad3d(_CircularPadNd):
    _dims = 3


__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]
