"""Hooks on the tensors a graph saves for its backward (``torch.autograd.graph.saved_tensors_hooks``).

Inside ``with saved_tensors_hooks(pack, unpack):`` every tensor a custom ``Function`` saves with
``ctx.save_for_backward`` is stored as ``pack(tensor)``, and ``ctx.saved_tensors`` gives back ``unpack`` of
that, as torch's. The engine's own ops keep what they save as arrays in their node's attributes: those that are
an input's or an output's array are packed as that tensor (and the attribute dropped) when the node is
recorded, and unpacked into the attribute for each backward through the node (and dropped again after it). An
op that saves an array it derived (not an input or output itself) keeps it as it is: what torch saves and what
the engine's ops save are alike, not the same, so the hooks may be called a different number of times.
``save_on_cpu`` keeps what is saved on the CPU until the backward needs it; ``disable_saved_tensors_hooks(message)``
makes installing hooks raise ``message`` inside its block.
"""

_stack = []  # (pack, unpack) pairs of the active blocks, innermost last
_disabled = []  # error messages of the active disable_saved_tensors_hooks blocks


def current():
    """The innermost (pack, unpack) pair in effect, or None."""
    return _stack[-1] if _stack else None


class saved_tensors_hooks:
    """Context manager: ``pack_hook(tensor)`` on what is saved for backward, ``unpack_hook(packed)`` when the
    backward reads it back."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if _disabled:
            raise RuntimeError(_disabled[-1])
        _stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        _stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept on the CPU (copied there from a GPU) and moved back to their device when the backward
    reads them; ``pin_memory`` is accepted (page-locked host memory changes nothing here)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(tensor):
            return tensor.device, tensor.cpu()

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Context manager (and decorator) inside which installing saved-tensor hooks raises ``error_message``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        _disabled.append(self.error_message)
        return self

    def __exit__(self, *exc):
        _disabled.pop()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*args, **kwargs)
        return wrapper


def pack(tensors):
    """``tensors`` packed by the hooks in effect: (unpack hook, packed values), or None without hooks."""
    from ..tensor import Tensor
    hooks = current()
    if hooks is None:
        return None
    pack_hook, unpack_hook = hooks
    return unpack_hook, tuple(pack_hook(t) if isinstance(t, Tensor) else (t,) for t in tensors), tuple(
        isinstance(t, Tensor) for t in tensors)


def unpack(packed):
    """What ``pack`` packed, unpacked (a non-tensor as it was saved)."""
    unpack_hook, values, is_tensor = packed
    return tuple(unpack_hook(v) if tensor else v[0] for v, tensor in zip(values, is_tensor))


def pack_node(node, inputs, results):
    """Pack the attributes of a just-recorded ``node`` that hold an input's or an output's array (see above)."""
    from ..tensor import Tensor
    pack_hook, unpack_hook = _stack[-1]
    owners = {id(t._data): t for t in (*inputs, *results) if isinstance(t, Tensor)}
    saved = [(key, owners[id(value)]) for key, value in node.__dict__.items()
             if id(value) in owners and hasattr(value, "shape")]
    for key, _ in saved:
        del node.__dict__[key]
    if saved:
        node._saved_packed = unpack_hook, tuple((key, _outside(pack_hook, t)) for key, t in saved)


def _outside(hook, value):
    """``hook(value)`` with no saved-tensor hooks in effect (ops it runs save as usual, not through it again)."""
    hooks = _stack[:]
    del _stack[:]
    try:
        return hook(value)
    finally:
        _stack[:] = hooks


def run_unpacked(node, call):
    """``call()`` (a backward through ``node``) with what ``pack_node`` packed unpacked into its attributes."""
    packed = node.__dict__.get("_saved_packed")
    if packed is None:
        return call()
    unpack_hook, saved = packed
    for key, value in saved:
        tensor = unpack_hook(value)
        if not hasattr(tensor, "_data"):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(tensor).__name__}")
        node.__dict__[key] = tensor._data
    try:
        return call()
    finally:
        for key, _ in saved:
            node.__dict__.pop(key, None)
