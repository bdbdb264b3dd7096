"""Older creation functions PyTorch keeps: ``scalar_tensor`` (a 0-d tensor in the default float type unless told)
and ``range`` (deprecated: ``end`` included, always a floating type unless told, with PyTorch's warning)."""
import warnings

import numpy as np

from .. import _dtype
from .._device import factory_device, xp_for
from ..tensor import Tensor, _new
from .python_data import _to_dtype_scalar
from .ranges import check_range


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    value = _to_dtype_scalar(s, d.np)
    return _new(xp_for(factory_device(device) or "cpu").asarray(value, dtype=d.np), requires_grad)


def range(start, end, step=1, *, dtype=None, layout=None, device=None, requires_grad=False):
    """``start, start + step, ...`` up to and including ``end``: as torch computes them, in the dtype's
    accumulate type (float64 for float32 and float64, float32 for the half types, int64 for integers, whose arguments
    are truncated first): int((end - start) / step + 1) values ``start + i * step``."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if d.np.kind in "bc":
        raise NotImplementedError(f"\"range_cpu\" not implemented for '{d.title}'")
    acc = np.dtype(np.int64 if d.np.kind in "iu" else np.float32 if d.np in _dtype.HALF_NP else np.float64)
    check_range(start, end, step)
    if acc.kind == "i":  # truncated; a step that truncates to 0 is refused (torch divides by it)
        start, end, step = (int(v) for v in (start, end, step))
        check_range(start, end, step)
        n = (end - start) // step + 1  # the quotient is not negative: floor is C's truncation
        values = start + np.arange(n, dtype=np.int64) * step
    else:
        start, end, step = (acc.type(v) for v in (start, end, step))
        n = int((end - start) / step + acc.type(1))
        values = start + np.arange(n).astype(acc) * step
    return _new(xp_for(factory_device(device) or "cpu").asarray(values.astype(d.np)), requires_grad)


__all__ = ["scalar_tensor", "range"]
