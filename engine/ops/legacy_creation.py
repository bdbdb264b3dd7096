"""Older creation functions PyTorch keeps: ``scalar_tensor`` (a 0-d tensor in the default float type unless told)
and ``range`` (deprecated: ``end`` included, always a floating type unless told, with PyTorch's warning)."""
import math
import warnings

import numpy as np

from .. import _dtype
from .._device import factory_device, xp_for
from ..tensor import Tensor, _new


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    value = s.item() if isinstance(s, Tensor) else s
    return _new(xp_for(factory_device(device) or "cpu").asarray(value, dtype=d.np), requires_grad)


def range(start, end, step=1, *, dtype=None, layout=None, device=None, requires_grad=False, out=None):
    """``start, start + step, ...`` up to and including ``end``: floor((end - start) / step) + 1 values, each
    computed as start + i * step in double precision."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    n = int(math.floor((end - start) / step)) + 1
    values = start + np.arange(n, dtype=np.float64) * step if d.is_floating_point else \
        start + np.arange(n, dtype=np.int64) * int(step)
    return _new(xp_for(factory_device(device) or "cpu").asarray(values.astype(d.np)), requires_grad)


__all__ = ["scalar_tensor", "range"]
