"""``engine.finfo`` and ``engine.iinfo``, the limits of the floating and integer dtypes (numpy's, under
PyTorch's names), ``can_cast`` and ``typename``, and the constants ``engine.pi``, ``e``, ``inf`` and ``nan``."""
from math import e, inf, nan, pi

import numpy as np

from .. import _dtype


class _Limits:
    """Equality by value (the dtype's limits), unhashable: as torch's ``finfo``/``iinfo`` objects."""

    __hash__ = None

    def __eq__(self, other):
        return type(other) is type(self) and vars(other) == vars(self)


_DEFAULT = object()


class finfo(_Limits):
    """Machine limits of a floating dtype (the default dtype when none is given)."""

    def __init__(self, type=_DEFAULT):
        if type is None:
            raise TypeError("finfo(): argument 'type' (position 1) must be torch.dtype, not NoneType")
        dt = _dtype.to_dtype(type) if type is not _DEFAULT else _dtype.get_default_dtype()
        dt = dt.to_real()  # a complex type's limits are its parts' (torch's)
        if not dt.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            "'torch.finfo'")
        info = np.finfo(dt.np)
        self.bits = info.bits
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -info.precision
        self.dtype = dt.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo(_Limits):
    """Limits of an integer dtype."""

    def __init__(self, type):
        dt = _dtype.to_dtype(type)
        if dt is _dtype.bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if dt.is_floating_point or dt.is_complex:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to handle "
                            "'torch.iinfo'")
        info = np.iinfo(dt.np)
        self.bits = info.bits
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = dt.name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


def can_cast(from_, to):
    """Whether PyTorch's type promotion may cast ``from_`` to ``to``: never floating to integral, nor
    anything but bool to bool."""
    return _dtype.can_cast(_dtype.to_dtype(from_), _dtype.to_dtype(to))


def typename(obj):
    """A tensor's type string (``x.type()``), else the object's type name, module-qualified outside
    builtins."""
    from ..tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    kind = type(obj)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


__all__ = ["finfo", "iinfo", "can_cast", "typename", "pi", "e", "inf", "nan"]
