"""What a graph node shows its user (``torch.autograd.graph.Node``): ``next_functions``, ``metadata`` and hooks.

``register_prehook(hook)``: ``hook(grad_outputs)`` runs before the node's backward, after the hooks of the
tensors the node made; it may return new ``grad_outputs``. ``register_hook(hook)``: ``hook(grad_inputs,
grad_outputs)`` runs after it, with the input gradients already summed down to the inputs' shapes; it may
return new ``grad_inputs``. A leaf's ``AccumulateGrad`` node runs its prehooks before it accumulates and its
hooks (``grad_inputs`` empty) after. Both backward engines (``graph.py`` on arrays, ``double_backward.py`` on
tensors) call ``pre_hooked`` and ``post_hooked`` with the conversions their gradients need.
"""


class Node:
    """Base of every backward node (engine ops' ``Function``s and leaves' ``AccumulateGrad``)."""

    @property
    def next_functions(self):
        """One ``(node, output index)`` per input of the op: ``(None, 0)`` for an input no gradient flows to."""
        return tuple((None, 0) if edge is None else edge for edge in getattr(self, "next_edges", ()))

    @property
    def metadata(self):
        """A dict of the user's, kept with the node."""
        table = self.__dict__.get("_metadata")
        if table is None:
            table = self._metadata = {}
        return table

    def register_prehook(self, hook):
        """Call ``hook(grad_outputs)`` before this node's backward; a tuple it returns replaces them."""
        return _add(self, "_pre_hooks", hook)

    def register_hook(self, hook):
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward; a tuple it returns replaces
        ``grad_inputs``."""
        return _add(self, "_post_hooks", hook)


def _add(node, table, hook):
    from ..tensor import _HookHandle
    hooks = node.__dict__.get(table)
    if hooks is None:
        hooks = node.__dict__[table] = []
    hooks.append(hook)
    return _HookHandle(hooks, hook)


def _name(hook):
    return getattr(hook, "__name__", type(hook).__name__)


def _replaced(hook, result, expected):
    """A hook's returned gradients as a list, with torch's error for a wrong count."""
    result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(result) != expected:
        raise RuntimeError(f"hook '{_name(hook)}' has returned an incorrect number of values (got {len(result)}, "
                           f"but expected {expected})")
    return list(result)


def _wrap(grads, as_tensor):
    return tuple(None if g is None else as_tensor(g) for g in grads)


def pre_hooked(node, grads, as_tensor, as_raw):
    """``grads`` (a node's output gradients, None for the missing) after its prehooks."""
    hooks = node.__dict__.get("_pre_hooks")
    for hook in tuple(hooks or ()):
        result = hook(_wrap(grads, as_tensor))
        if result is not None:
            grads = [None if g is None else as_raw(g) for g in _replaced(hook, result, len(grads))]
    return grads


def has_post_hooks(node):
    return bool(node.__dict__.get("_post_hooks"))


def post_hooked(node, grads_in, grads_out, as_tensor, as_raw):
    """``grads_in`` (a node's input gradients, reduced to the inputs' shapes) after its hooks."""
    for hook in tuple(node.__dict__.get("_post_hooks") or ()):
        result = hook(_wrap(grads_in, as_tensor), _wrap(grads_out, as_tensor))
        if result is not None:
            grads_in = tuple(None if g is None else as_raw(g) for g in _replaced(hook, result, len(grads_in)))
    return tuple(grads_in)


#: what a node keeps when a backward frees what it saved
KEPT = ("_metadata", "_pre_hooks", "_post_hooks")
