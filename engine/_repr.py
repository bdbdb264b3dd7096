"""PyTorch-style printing of tensors: ``tensor([1.0000, 2.5000], requires_grad=True)``, laid out as torch's
``_tensor_str`` lays it out (number style, summarization, line wrapping, suffixes) under ``set_printoptions``."""
import math

import numpy as np

from . import _dtype
from ._device import move


PRINT_OPTIONS = dict(precision=4, threshold=1000, edgeitems=3, linewidth=80, sci_mode=None)
PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
            "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
            "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """``torch.set_printoptions``: digits after the point, the element count past which a tensor prints only
    ``edgeitems`` at each end of each dimension, the line width, a ``profile`` ("default", "short", "full") that the
    other arguments then override, and scientific notation forced on/off (``sci_mode``; None: chosen per tensor,
    and reset to that by every call, as torch's)."""
    if profile in PROFILES:
        PRINT_OPTIONS.update(PROFILES[profile])
    given = dict(precision=precision, threshold=threshold, edgeitems=edgeitems, linewidth=linewidth)
    PRINT_OPTIONS.update({k: v for k, v in given.items() if v is not None})
    PRINT_OPTIONS["sci_mode"] = sci_mode


def _summarized(arr, edgeitems):
    """The elements a summarized print shows (``edgeitems`` at each end of every longer dimension), from which
    torch sizes and styles the numbers."""
    for axis, size in enumerate(arr.shape):
        if size > 2 * edgeitems:
            kept = list(range(edgeitems)) + list(range(size - edgeitems, size))
            arr = arr.take(kept, axis)
    return arr


def _float_formatter(arr):
    """torch's choice for a float tensor's values (its ``_Formatter``): integers as ``3.``, scientific notation
    when the nonzero magnitudes span over 1e3 or leave [1e-4, 1e8] (or as ``sci_mode`` forces), else ``precision``
    fixed digits. Returns (format, width): the width is the widest nonzero finite value's (at least 1)."""
    precision, forced = PRINT_OPTIONS["precision"], PRINT_OPTIONS["sci_mode"]
    values = arr[np.isfinite(arr) & (arr != 0)]
    if values.size == 0:
        return (lambda v: f"{v:.0f}." if math.isfinite(v) else f"{v:.0f}"), 1
    magnitudes = np.abs(values)
    sci = forced if forced is not None else bool(magnitudes.max() / magnitudes.min() > 1e3 or magnitudes.max() > 1e8
                                                 or magnitudes.min() < 1e-4)
    integral = bool(np.all(values == np.ceil(values)))

    def fmt(v):
        if sci:
            return f"{v:.{precision}e}"
        if integral:
            return f"{v:.0f}." if math.isfinite(v) else f"{v:.0f}"
        return f"{v:.{precision}f}"
    return fmt, max(len(fmt(v)) for v in values.tolist())


def _complex_formatter(arr):
    """(format, width) for complex values, as torch prints them: the real parts under the float rule of the real
    parts, right-aligned, then the imaginary part under the float rule of the imaginary parts, its sign and a
    ``j`` (``1.0000+2.0000j``). The width counts both parts and the ``j``."""
    real_fmt, real_width = _formatter(arr.real)
    imag_fmt, imag_width = _formatter(arr.imag)

    def fmt(v):
        imag = (imag_fmt(v.imag) + "j").lstrip()
        return real_fmt(v.real) + (imag if imag[0] in "+-" else "+" + imag)
    return fmt, real_width + imag_width + 1


def _formatter(arr):
    """(format, width) for ``arr``'s values: the float rule, the complex rule, else Python's ``str`` (ints,
    True/False)."""
    if arr.dtype.kind == "c":
        return _complex_formatter(arr)
    if arr.dtype.kind == "f":
        fmt, width = _float_formatter(arr.astype(np.float64))
    else:
        fmt = str
        width = max((len(str(v)) for v in arr.ravel().tolist()), default=1)
    return lambda v: fmt(v).rjust(width), width


def _nested(arr, fmt, width, indent, summarize):
    """torch's text of ``arr`` (``_tensor_str_with_formatter``): a vector wraps after as many elements as fit the
    line width (a summary's " ..." counts as one), higher dimensions nest with a blank line per level."""
    edgeitems = PRINT_OPTIONS["edgeitems"]
    if arr.ndim == 0:
        return fmt(arr.item())
    cut = summarize and arr.shape[0] > 2 * edgeitems
    if arr.ndim == 1:
        per_line = max(1, math.floor((PRINT_OPTIONS["linewidth"] - indent) / (width + 2)))
        if summarize and not edgeitems:
            data = ["..."]
        elif cut:
            data = [fmt(v) for v in arr[:edgeitems].tolist()] + [" ..."] + [fmt(v) for v in arr[-edgeitems:].tolist()]
        else:
            data = [fmt(v) for v in arr.tolist()]
        lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_nested(arr[i], fmt, width, indent + 1, summarize) for i in range(edgeitems)] + ["..."] + \
        [_nested(arr[i], fmt, width, indent + 1, summarize) for i in range(arr.shape[0] - edgeitems, arr.shape[0])] \
        if cut else [_nested(row, fmt, width, indent + 1, summarize) for row in arr]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_suffixes(text, suffixes, indent):
    """``text`` and its ``, key=value`` suffixes, each moved to a new line where it would pass the line width."""
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_length + len(suffix) + 2 > PRINT_OPTIONS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line_length += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(t, name="tensor"):
    """``t`` as PyTorch prints it; ``name``: the word before the parenthesis (a subclass prints its own)."""
    arr = move(t._data, "cpu")
    prefix = f"{name}("
    if t.dtype is _dtype.bfloat16:  # ml_dtypes' kind "V": numpy formats it as floats once widened
        arr = arr.astype(np.float32)
    summarize = arr.size > PRINT_OPTIONS["threshold"]
    if arr.size == 0 and arr.ndim > 1:
        body = "[]"
    else:
        fmt, width = _formatter(_summarized(arr, PRINT_OPTIONS["edgeitems"]) if summarize else arr)
        body = _nested(arr, fmt, width, len(prefix), summarize)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if arr.size == 0 and arr.ndim > 1 or arr.size and not PRINT_OPTIONS["edgeitems"]:
        extras.append(f"size={tuple(arr.shape)}")
    default_float = _dtype.get_default_dtype()
    implied = t.dtype in (default_float, _dtype.int64, _dtype.bool_) or t.dtype is _dtype.default_complex()
    if not implied or arr.size == 0 and t.dtype is not default_float:
        extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return _with_suffixes(prefix + body, extras, len(prefix))
