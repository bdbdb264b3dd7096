"""The backward engine: walks the recorded graph from the roots in dependency order."""
import contextlib
import sys

import numpy as np

from .. import _dtype, backends
from .._device import array_module
from . import anomaly_mode, bfloat16
from .function import AccumulateGrad, Function
from .node import KEPT, Node, has_post_hooks, post_hooked, pre_hooked
from .saved_hooks import disable_saved_tensors_hooks, run_unpacked, save_on_cpu, saved_tensors_hooks


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """``torch.autograd.graph.register_multi_grad_hook`` (``multi_grad.py``)."""
    from .multi_grad import register
    return register(tensors, fn, mode)

_KEEP = frozenset(("next_edges", "input_meta", "output_meta", "needs_input_grad", "hooks",
                   "retained", "_released", *KEPT))


def sum_to_shape(grad, shape):
    """Reduce a broadcast gradient back to ``shape``."""
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and grad.shape[i + lead] != 1)
    if axes and grad.dtype == np.float16:  # summed in float32 and rounded once, as torch's sum_to_size
        out = grad.sum(axis=axes, keepdims=True, dtype=np.float32).astype(np.float16)
    else:
        out = grad.sum(axis=axes, keepdims=True) if axes else grad
    if lead:
        out = out.reshape(out.shape[lead:])
    return out.reshape(shape)


def _release(node):
    """Free what a node saved for its backward (arrays, tensors, anything but plain numbers, names and shapes). As
    torch's, only a node that saved values refuses a second backward: a split's or a view's runs again."""
    freed = [k for k, v in node.__dict__.items() if k not in _KEEP and not _plain(v)]
    for key in freed:
        del node.__dict__[key]
    if freed:
        node._released = True


def _plain(value):
    """Whether ``value`` is a parameter of an op, not a value it saved: None, Ellipsis, numbers, strings, dtypes,
    slices, and tuples or lists of them (shapes, dims, basic indexing keys)."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or value is Ellipsis or isinstance(value, (bool, int, float, complex, str, slice, np.dtype,
                                                                    _dtype.dtype))


def reached_leaves(tensors):
    """The leaf tensors requiring grad that a backward from ``tensors`` would reach (each once, in no set order):
    those among ``tensors`` themselves and those behind their ``grad_fn``s."""
    from ..tensor import Tensor
    stack, seen = [], set()
    for t in tensors:
        if isinstance(t, Tensor) and t.requires_grad:
            if t.grad_fn is None:
                yield t
            else:
                stack.append(t.grad_fn)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            leaf = node.variable
            if leaf is not None:
                yield leaf
            continue
        stack.extend(edge[0] for edge in getattr(node, "next_edges", ()) if edge is not None)


def _run_hooks(hooks, grad):
    from ..tensor import _new
    for hook in hooks:
        given = _new(grad)
        out = hook(given)
        if out is not None:
            check_hook_result(hook, out, given)
            grad = out._data
    return grad


def check_hook_result(hook, out, grad):
    """torch's errors for a tensor hook that returned a gradient of another shape or dtype than it was given."""
    name = getattr(hook, "__name__", type(hook).__name__)
    if out.dtype != grad.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.type()} got {out.type()})")
    if tuple(out.shape) != tuple(grad.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def _as_tensor(array):
    from ..tensor import _new
    return _new(array)


def _as_raw(tensor):
    return tensor._data


def _dependencies(roots):
    deps = {}
    stack = list(roots)
    seen = set(id(n) for n in roots)
    while stack:
        node = stack.pop()
        for edge in node.next_edges:
            if edge is None:
                continue
            child = edge[0]
            deps[child] = deps.get(child, 0) + 1
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return deps


def _zeros(meta, like):
    shape, dtype = meta
    return array_module(like).zeros(shape, dtype)


def _unshared_refs():
    """What sys.getrefcount reports for an array held by one local variable only (interpreter-specific)."""
    probe = object()
    return sys.getrefcount(probe)


_UNSHARED_REFS = _unshared_refs()


def _keepable(array):
    """Whether a leaf may keep array as its .grad: writeable (CuPy's flags have no ``writeable``: its
    arrays always are), with memory of its own or of a base array that only it refers to (a reshaped
    copy)."""
    if not getattr(array.flags, "writeable", True):
        return False
    base = array.base
    # Referred to by this local variable and by the view only.
    return base is None or (getattr(base, "base", 0) is None and sys.getrefcount(base) == _UNSHARED_REFS + 1)


def _accumulate_leaf(node, grad, captures, unshared=False):
    """Add ``grad`` into the leaf's ``.grad`` (or its capture slot). An ``unshared`` grad, one no other
    object refers to, becomes the new ``.grad`` as it is, as torch's AccumulateGrad steals it: a copy of
    a fresh parameter-sized array costs more than the kernel that made it (new pages)."""
    tensor = node.tensor_ref()
    if tensor is None:
        return
    if tensor._hooks:
        grad = _run_hooks(tensor._hooks, grad)
    if captures is not None:
        if node in captures:
            prev = captures[node]
            captures[node] = grad if prev is None else prev + grad
        return
    from ..tensor import _new
    if node.__dict__.get("_pre_hooks"):
        grad = pre_hooked(node, [grad], _as_tensor, _as_raw)[0]
    sparse = SPARSE_GRADS and (SPARSE_GRADS.get(type(grad))
                               or tensor.grad is not None and SPARSE_GRADS.get(type(tensor.grad._data)))
    if sparse:
        sparse(tensor, grad)
    elif tensor.grad is None:
        own = unshared and not tensor._hooks and _keepable(grad)
        tensor.grad = _new(grad if own else grad.copy())
    else:
        tensor.grad._data += grad
    if tensor._post_accumulate_grad_hooks:
        for hook in tuple(tensor._post_accumulate_grad_hooks):
            hook(tensor)
    if has_post_hooks(node):
        post_hooked(node, (), (grad,), _as_tensor, _as_raw)


#: sparse gradient storages (``engine.sparse``'s COO arrays) -> the function that accumulates a gradient into a
#: leaf when the gradient or the leaf's ``.grad`` is one; empty until ``engine.sparse`` is imported, so that the
#: dense path pays one truth test per leaf
SPARSE_GRADS = {}


def add_to_slot(pending, node, index, grad):
    """Add ``grad`` into ``node``'s pending input-gradient slot ``index`` (making its slots on first use)."""
    slots = pending.get(node)
    if slots is None:
        slots = pending[node] = [None] * (1 if isinstance(node, AccumulateGrad) else len(node.output_meta))
    slots[index] = grad if slots[index] is None else slots[index] + grad


def seed_roots(roots, root_grads, accumulate_leaf):
    """The roots' gradients placed in their nodes' output slots: (pending slots by node, the root nodes in order).
    A root that is a leaf has nothing to propagate: ``accumulate_leaf(node, grad)`` takes its gradient."""
    pending = {}
    root_nodes = []
    for tensor, grad in zip(roots, root_grads):
        if getattr(tensor, "_base", None) is not None:  # a view whose memory was written since: its history first
            from .views import fresh_history
            fresh_history(tensor)
        if tensor.grad_fn is None:
            from .function import _edge
            edge = _edge(tensor) if tensor.requires_grad else None
            if edge is not None:
                accumulate_leaf(edge[0], grad)
            continue
        if tensor.grad_fn not in pending:
            root_nodes.append(tensor.grad_fn)
        add_to_slot(pending, tensor.grad_fn, tensor._output_index, grad)
    return pending, root_nodes


_PASSES = []  # the callbacks queued for the end of each backward pass running, innermost last


def current_pass():
    """The running backward pass (its callback list, an identity for hooks that act once per pass), or None."""
    return _PASSES[-1] if _PASSES else None


def queue_callback(callback):
    """Run ``callback()`` when the running backward pass ends (torch's ``_execution_engine.queue_callback``)."""
    if not _PASSES:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _PASSES[-1].append(callback)


@contextlib.contextmanager
def backward_pass():
    """Delimit one backward pass: the callbacks queued during it run at its end, if it succeeds."""
    callbacks = []
    _PASSES.append(callbacks)
    try:
        yield
    finally:
        _PASSES.pop()
    for callback in callbacks:
        callback()


def run_backward(roots, root_grads, retain_graph=False, captures=None):
    """Propagate ``root_grads`` (arrays) from ``roots`` (tensors) to every leaf that needs them, with
    numpy's floating-point warnings off: PyTorch's gradients become inf or NaN without a word."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"), backward_pass():
        _run_backward(roots, root_grads, retain_graph, captures)


def _run_backward(roots, root_grads, retain_graph, captures):
    """Propagate ``root_grads`` (arrays) from ``roots`` (tensors) to every leaf that needs them.

    With ``captures`` (a dict keyed by AccumulateGrad nodes or (node, index) pairs), gradients
    reaching those places are stored there instead of accumulating into ``.grad``.
    The device's runtime prepares for training first (on the CPU the C allocator keeps freed blocks
    for the next step: ``backends/cpu/runtime.py``).
    """
    if root_grads:
        backends.runtime(root_grads[0]).prepare_backward()
    pending, root_nodes = seed_roots(roots, root_grads, lambda leaf, grad: _accumulate_leaf(leaf, grad, captures))
    deps = _dependencies(root_nodes)
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    # Leaves go first, as torch's engine runs AccumulateGrad nodes first: a last-in-first-out walk would
    # otherwise leave each leaf's gradient pending until the walk came back up from the graph's inputs,
    # so .grad (and its post-accumulate hooks: DDP's all-reduces) would come in forward order at the end.
    ready_leaves = []
    while ready or ready_leaves:
        node = ready_leaves.pop() if ready_leaves else ready.pop()
        slots = pending.pop(node, None)
        if isinstance(node, AccumulateGrad):
            grad = slots.pop() if slots is not None else None
            if grad is not None:
                unshared = sys.getrefcount(grad) == _UNSHARED_REFS
                _accumulate_leaf(node, grad, captures, unshared)
            continue
        grads_in = _backward_node(node, slots, retain_graph, captures)
        for edge, grad, meta in zip(node.next_edges, grads_in, node.input_meta):
            if edge is None:
                continue
            child, index = edge
            if grad is not None:
                shape, dtype = meta
                if grad.shape != shape:
                    grad = sum_to_shape(grad, shape)
                if grad.dtype != dtype:  # a real input of a complex op takes the real part (torch's rule)
                    grad = (grad.real if grad.dtype.kind == "c" and dtype.kind != "c" else grad).astype(dtype)
                add_to_slot(pending, child, index, grad)
            deps[child] -= 1
            if deps[child] == 0:
                (ready_leaves if isinstance(child, AccumulateGrad) else ready).append(child)
        grads_in = grad = None  # hold no gradient past its hand-over: a leaf may take it without a copy


def check_not_released(node):
    """torch's error for a backward through a node whose saved values an earlier backward freed."""
    if getattr(node, "_released", False):
        raise RuntimeError(
            "Trying to backward through the graph a second time (or directly access saved tensors "
            "after they have already been freed). Saved intermediate values of the graph are freed "
            "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
            "backward through the graph a second time or if you need to access saved tensors after "
            "calling backward.")


def _backward_node(node, slots, retain_graph, captures):
    check_not_released(node)
    n_inputs = len(node.next_edges)
    if slots is None or all(s is None for s in slots):
        if not retain_graph:
            _release(node)
        return (None,) * n_inputs
    hooks = getattr(node, "hooks", None)
    if hooks:
        for i, fns in hooks.items():
            if slots[i] is not None:
                slots[i] = _run_hooks(fns, slots[i])
    retained = getattr(node, "retained", None)
    if retained:
        from ..tensor import _new
        for i, ref in retained.items():
            tensor = ref()
            if tensor is not None and slots[i] is not None:
                if tensor.grad is None:
                    tensor.grad = _new(slots[i].copy())
                else:
                    tensor.grad._data += slots[i]
    if captures is not None:
        for i, g in enumerate(slots):
            if (node, i) in captures and g is not None:
                captures[(node, i)] = g
    hooked = node.__dict__  # node hooks and packed saved values: looked up once, rarely there
    if "_pre_hooks" in hooked:
        slots = pre_hooked(node, slots, _as_tensor, _as_raw)
    node.check_versions()
    like = next(s for s in slots if s is not None)
    materialize = getattr(node, "materialize_grads", True)  # False: a custom Function's backward takes None
    grads = [_real_part_for_real(s, m) if s is not None or not materialize else _zeros(m, like)
             for s, m in zip(slots, node.output_meta)]
    try:
        if "_saved_packed" in hooked:
            grads_in = run_unpacked(node, lambda: bfloat16.backward(node, grads))
        else:
            grads_in = bfloat16.backward(node, grads)
        if not isinstance(grads_in, tuple):
            grads_in = (grads_in,)
        if anomaly_mode._State.enabled and anomaly_mode._State.check_nan:
            anomaly_mode.check_nan(node, grads_in)
    except Exception as error:
        if anomaly_mode._State.enabled:
            anomaly_mode.warn_failed(node)
        error.add_note(_BACKWARD_NOTE + node.name())
        raise
    if len(grads_in) < n_inputs:
        grads_in = grads_in + (None,) * (n_inputs - len(grads_in))
    if "_post_hooks" in hooked and has_post_hooks(node):
        grads_in = post_hooked(node, _reduced(grads_in, node.input_meta), grads, _as_tensor, _as_raw)
    if not retain_graph:
        _release(node)
    return grads_in


def _real_part_for_real(grad, meta):
    """The gradient of a real output as its node takes it: the real part of a complex one, which reaches it where
    a double backward differentiated a complex op's saved copy of that output (``z / x.abs()``)."""
    if grad is None or meta is None or grad.dtype.kind != "c" or meta[1].kind == "c":
        return grad
    return grad.real


def _reduced(grads, metas):
    """Input gradients summed down to their inputs' shapes and cast to their dtypes (what node hooks see)."""
    out = []
    for grad, meta in zip(grads, metas):
        if grad is not None and meta is not None:
            grad = sum_to_shape(grad, meta[0])
            if grad.dtype != meta[1]:
                grad = (grad.real if grad.dtype.kind == "c" and meta[1].kind != "c" else grad).astype(meta[1])
        out.append(grad)
    return tuple(out)


_BACKWARD_NOTE = "raised in "


def failed_backward(error):
    """The name of the backward node that raised ``error`` (``run_backward`` notes it on the error), or None."""
    return next((note[len(_BACKWARD_NOTE):] for note in getattr(error, "__notes__", ())
                 if note.startswith(_BACKWARD_NOTE)), None)


__all__ = ["run_backward", "sum_to_shape", "Function", "Node", "failed_backward", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook", "queue_callback"]
