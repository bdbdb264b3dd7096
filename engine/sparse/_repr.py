"""Sparse tensors printed as torch prints them: the index and value tensors, then size, nnz, dtype (when not
implied), device, layout and the autograd suffix."""
from .. import _dtype
from .._repr import _with_suffixes, tensor_repr
from ..tensor import _new


def _inner(array, name, indent):
    """``name=tensor(...)`` of a component, continuation lines indented under it, without its dtype suffix."""
    t = _new(array)
    if array.size == 0:
        text = f"tensor([], size={tuple(array.shape)})"
    else:
        text = tensor_repr(t)
        text = text.replace(f", dtype={t.dtype})", ")").replace(f",\n       dtype={t.dtype})", ")")
    pad = " " * (indent + len(name) + 1)
    first, *rest = text.split("\n")
    return f"{name}=" + first + "".join("\n" + (pad + line if line else "") for line in rest)


def sparse_repr(t):
    data = t._data
    indent = len("tensor(")
    if t._layout_name() == "sparse_coo":
        parts = [_inner(data.indices, "indices", indent), _inner(data.values, "values", indent)]
    else:
        names = ("crow_indices", "col_indices") if data.by_rows else ("ccol_indices", "row_indices")
        parts = [_inner(data.compressed, names[0], indent), _inner(data.plain, names[1], indent),
                 _inner(data.values, "values", indent)]
    head = "tensor(" + (",\n" + " " * indent).join(parts[:-1]) + ",\n" + " " * indent
    text = head + parts[-1]
    suffixes = [f"size={tuple(t.shape)}", f"nnz={data.nnz}"]
    implied = t.dtype in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool_)
    if not implied:
        suffixes.append(f"dtype={t.dtype}")
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes.append(f"layout={t.layout}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    if t._layout_name() == "sparse_coo":  # torch starts the size on a line of its own after the values
        return _with_suffixes(text + ",\n" + " " * indent + suffixes[0], suffixes[1:], indent)
    return _with_suffixes(text, suffixes, indent)
