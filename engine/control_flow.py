"""``torch.cond`` and ``torch.while_loop``, run eagerly.

torch traces both into graph operators for export and compilation; the engine runs them as Python control flow,
with torch's checks on the arguments. The branch or body runs on the caller's tensors under the caller's grad
mode, so gradients flow through the branch taken and through every iteration as through ordinary code.
"""
from . import _device
from .tensor import Tensor


def _as_bool(pred):
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        return bool(pred.item())
    if isinstance(pred, (bool, int)):
        return bool(pred)
    raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")


def _check_operands(operands, what):
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect {what} to be a tuple of possibly nested dict/list/tuple that only consists of "
                           f"tensor leaves, but got {operands}.")
    for leaf in _leaves(operands):
        if not isinstance(leaf, (Tensor, int, float, bool)):
            raise RuntimeError(f"Expect {what} to be a tuple of possibly nested dict/list/tuple that only consists "
                               f"of tensor leaves, but got {operands}.")


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        for item in tree:
            yield from _leaves(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _leaves(item)
    else:
        yield tree


def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` (a bool or a one-element tensor) holds, else ``false_fn(*operands)``."""
    take = _as_bool(pred)
    if not (callable(true_fn) and callable(false_fn)):
        raise RuntimeError("Expect both branches to be callable.")
    _check_operands(operands, "operands")
    return (true_fn if take else false_fn)(*operands)


def _meta(value):
    if isinstance(value, Tensor):
        return f"Tensor(size={tuple(value.shape)}, dtype={value.dtype})"
    return f"{type(value).__name__}"


def _check_body_output(out, carried):
    """torch's checks on one iteration: as many outputs as carried inputs, each tensor of the same shape and
    dtype (and device), none of them an input handed back (higher-order ops do not alias)."""
    outs = list(_leaves(out))
    ins = list(_leaves(carried))
    if len(outs) != len(ins):
        raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same number of outputs but got "
                           f"lhs:[{', '.join(map(_meta, outs))}] and rhs:[{', '.join(map(_meta, ins))}]")
    for i, (o, c) in enumerate(zip(outs, ins)):
        if isinstance(c, Tensor) != isinstance(o, Tensor):
            raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same metadata but found: "
                               f"pair[{i}] differ in 'type: {type(o).__name__} vs {type(c).__name__}'")
        if not isinstance(c, Tensor):
            continue
        for name, a, b in (("dtype", o.dtype, c.dtype), ("size", tuple(o.shape), tuple(c.shape)),
                           ("device", o.device, c.device)):
            if a != b:
                raise RuntimeError(f"Expected body_fn_output and carried_inputs to have same metadata but found: "
                                   f"pair[{i}] differ in '{name}: {a} vs {b}'")
        if any(o is t or _shares_memory(o, t) for t in ins if isinstance(t, Tensor)):
            raise RuntimeError("while_loop: Higher order ops do not support aliasing: body_fn returned one of its "
                               "inputs or a view of it. Replace `return input` with `return input.clone()` to avoid "
                               "aliasing.")


def _shares_memory(a, b):
    x, y = a._data, b._data
    if x.size == 0 or y.size == 0 or _device.is_cuda_array(x) != _device.is_cuda_array(y):
        return False
    return bool(_device.array_module(x).may_share_memory(x, y))


def while_loop(cond_fn, body_fn, carried_inputs):
    """Run ``carried = body_fn(*carried)`` while ``cond_fn(*carried)`` holds (a bool or a one-element boolean
    tensor); the final carried values. Each iteration's outputs must match the carried inputs' number, shapes and
    dtypes."""
    if not (callable(cond_fn) and callable(body_fn)):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    _check_operands(carried_inputs, "carried_inputs")
    carried = result = carried_inputs
    while _holds(cond_fn(*carried)):
        out = body_fn(*carried)
        _check_body_output(out, carried)
        result = out
        carried = out if isinstance(out, (tuple, list)) else (out,)
    return result


def _holds(pred):
    if isinstance(pred, Tensor):
        if pred.numel() != 1 or pred.dtype.name != "bool":
            raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")
        return bool(pred.item())
    if not isinstance(pred, bool):
        raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred!r}")
    return pred
