"""PyTorch-style printing of tensors: ``tensor([1.0000, 2.5000], requires_grad=True)``."""
import numpy as np

from . import _dtype
from ._device import move


def _float_formatter(arr):
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        return lambda v: f"{v}"
    if np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else f"{v}"
    nonzero = np.abs(finite[finite != 0])
    if nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4 or nonzero.max() / nonzero.min() > 1e3):
        return lambda v: f"{v:.4e}" if np.isfinite(v) else f"{v}"
    return lambda v: f"{v:.4f}" if np.isfinite(v) else f"{v}"


def _padded(fmt, arr):
    """Right-align every element to the widest one, as PyTorch prints."""
    flat = arr.ravel()
    sample = flat if flat.size <= 1000 else np.concatenate([flat[:500], flat[-500:]])
    width = max((len(fmt(v)) for v in sample), default=0)
    return lambda v: fmt(v).rjust(width)


def tensor_repr(t, name="tensor"):
    """``t`` as PyTorch prints it; ``name``: the word before the parenthesis (a subclass prints its own)."""
    arr = move(t._data, "cpu")
    prefix = f"{name}("
    if t.dtype is _dtype.bfloat16:  # ml_dtypes' kind "V": numpy formats it as floats once widened
        arr = arr.astype(np.float32)
    if arr.dtype.kind == "f":
        formatter = {"float_kind": _padded(_float_formatter(arr.astype(np.float64)), arr)}
    elif arr.dtype.kind == "b":
        formatter = {"bool": _padded(lambda v: "True" if v else "False", arr)}
    else:
        formatter = {"int": _padded(str, arr)}
    if arr.size == 0 and arr.ndim > 1:
        body = "[]"
    else:
        body = np.array2string(arr, separator=", ", prefix=prefix, formatter=formatter,
                               threshold=1000, edgeitems=3, max_line_width=80)
    extras = []
    if arr.size == 0 and arr.ndim > 1:
        extras.append(f"size={tuple(arr.shape)}")
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    default_float = _dtype.get_default_dtype()
    implied = t.dtype in (default_float, _dtype.int64, _dtype.bool_)
    if not implied or arr.size == 0 and t.dtype is not default_float:
        extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return prefix + ", ".join([body] + extras) + ")"
