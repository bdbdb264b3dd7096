"""The backward pass on tensors, for ``create_graph=True`` (higher-order gradients).

The ordinary backward (``graph.py``) walks the graph with raw arrays and stays as fast as it is: this module
is reached only when a caller asks for ``create_graph``. Here every gradient is an engine Tensor, and each
node's ``backward_tensors`` computes its input gradients with engine ops under grad mode, so the gradients
record a graph of their own (connected to the forward graph through the saved inputs and outputs each op
rebuilds with ``Function.saved_input`` / ``saved_output``). Broadcast gradients are reduced with
differentiable sums, dtypes changed with differentiable casts, and gradients meeting at a node are added
with differentiable adds. For ``autograd.grad`` only the nodes on a path to the requested inputs run, as
in torch, so a branch that leads only to other leaves (a discriminator's parameters in a gradient
penalty) needs no differentiable backward.
"""
import copy

import numpy as np

from .._device import array_module
from . import grad_mode
from .function import AccumulateGrad, Function
from .graph import (_BACKWARD_NOTE, _dependencies, _release, add_to_slot, backward_pass, check_hook_result,
                    check_not_released, seed_roots)
from .node import has_post_hooks, post_hooked, pre_hooked
from .saved_hooks import run_unpacked


def run_backward_graph(roots, root_grads, retain_graph=True, captures=None, stop=None):
    """Propagate ``root_grads`` (tensors) from ``roots`` (tensors) into the leaves' ``.grad``, or, with
    ``captures`` (keyed as in ``graph.run_backward``), into its values, as graph-connected tensors. The walk
    does not go past the nodes in ``stop`` (see ``vjp``), and, given ``stop``, runs no tensor hooks: it is an
    op's own backward then, not the user's."""
    with grad_mode.enable_grad(), np.errstate(divide="ignore", invalid="ignore", over="ignore"), backward_pass():
        _run(roots, root_grads, retain_graph, captures, stop)


def vjp(output, inputs, grad):
    """The gradients of ``output`` with respect to ``inputs`` (tensors, or None for those not needed) for
    output gradient ``grad``, as graph-connected tensors. The walk stops at the inputs' producing nodes, so it
    costs the subgraph between them and the output only: for ops whose differentiable backward recomputes
    their forward from engine ops and differentiates that (the norms). ``output`` and ``grad`` may be lists
    (several outputs)."""
    from .function import _edge
    captures, keys = {}, []
    for t in inputs:
        key = None if t is None or not t.requires_grad else (
            (t.grad_fn, t._output_index) if t.grad_fn is not None else (_edge(t) or (None,))[0])
        keys.append(key)
        if key is not None:
            captures[key] = None
    stop = frozenset(k[0] for k in captures if isinstance(k, tuple))  # may be empty, never None
    many = isinstance(output, (list, tuple))
    run_backward_graph(list(output) if many else [output], list(grad) if many else [grad], True, captures, stop)
    return tuple(None if k is None else captures[k] for k in keys)


def _run(roots, root_grads, retain_graph, captures, stop):
    pending, root_nodes = seed_roots(roots, root_grads,
                                     lambda leaf, grad: _accumulate_leaf(leaf, grad, captures, stop is None))
    hooks = stop is None
    stop = stop or frozenset()
    useful = _useful(root_nodes, captures, stop)

    def receives(edge):
        return edge is not None and (edge[0] in useful or (captures is not None and edge in captures))

    deps = {}
    for node in useful:
        for edge in node.next_edges:
            if receives(edge):
                deps[edge[0]] = deps.get(edge[0], 0) + 1
    ready = [n for n in root_nodes if deps.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        slots = pending.pop(node, None)
        if isinstance(node, AccumulateGrad):
            if slots is not None and slots[0] is not None:
                _accumulate_leaf(node, slots[0], captures, hooks)
            continue
        if slots is not None:
            slots = _visit(node, slots, captures, hooks)
        if node not in useful:
            continue
        grads_in = _backward_node(node, slots, retain_graph, hooks)
        for edge, grad, meta in zip(node.next_edges, grads_in, node.input_meta):
            if not receives(edge):
                continue
            child, index = edge
            if grad is not None:
                add_to_slot(pending, child, index, _to_meta(grad, meta))
            deps[child] -= 1
            if deps[child] == 0:
                ready.append(child)


def _useful(root_nodes, captures, stop):
    """The nodes whose backward must run: all of them for ``backward``; for ``grad``, those with a path to
    a captured place (not through a node in ``stop``)."""
    deps = _dependencies(root_nodes) if not stop else _dependencies_until(root_nodes, stop)
    order, ready = [], [n for n in root_nodes if deps.get(n, 0) == 0]
    while ready:
        node = ready.pop()
        order.append(node)
        if node in stop:
            continue
        for edge in node.next_edges:
            if edge is not None:
                deps[edge[0]] -= 1
                if deps[edge[0]] == 0:
                    ready.append(edge[0])
    useful = set()
    for node in reversed(order):
        if node in stop:
            continue
        if isinstance(node, AccumulateGrad):
            if captures is None or node in captures:
                useful.add(node)
        elif any(edge is not None and (edge[0] in useful or (captures is not None and edge in captures))
                 for edge in node.next_edges):
            useful.add(node)
    return useful


def _dependencies_until(roots, stop):
    """``graph._dependencies`` (how many edges reach each node) without expanding the nodes in ``stop``."""
    deps = {}
    stack = list(roots)
    seen = set(roots)
    while stack:
        node = stack.pop()
        if node in stop:
            continue
        for edge in node.next_edges:
            if edge is None:
                continue
            child = edge[0]
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return deps


def _visit(node, slots, captures, run_hooks):
    """A node's output gradients meet its tensor hooks, retained ``.grad``s and captured places."""
    hooks = getattr(node, "hooks", None) if run_hooks else None
    if hooks:
        for i, fns in hooks.items():
            if slots[i] is not None:
                slots[i] = _run_hooks(fns, slots[i])
    retained = getattr(node, "retained", None) if run_hooks else None
    if retained:
        for i, ref in retained.items():
            tensor = ref()
            if tensor is not None and slots[i] is not None:
                tensor.grad = slots[i] if tensor.grad is None else tensor.grad + slots[i]
    if captures is not None:
        for i, g in enumerate(slots):
            if (node, i) in captures and g is not None:
                captures[(node, i)] = g
    return pre_hooked(node, slots, _same, _same) if run_hooks else slots


def _same(tensor):
    return tensor


def _backward_node(node, slots, retain_graph, run_hooks=True):
    """``node.backward_tensors`` on its output gradients (zeros for the missing ones)."""
    from ..tensor import _new
    check_not_released(node)
    n_inputs = len(node.next_edges)
    if slots is None or all(s is None for s in slots):
        return (None,) * n_inputs
    node.check_versions()
    like = next(s for s in slots if s is not None)._data
    grads = [_real_part_for_real(s, m) if s is not None else _new(array_module(like).zeros(*m))
             for s, m in zip(slots, node.output_meta)]
    try:
        grads_in = run_unpacked(node, lambda: node.backward_tensors(*grads))
    except Exception as error:
        error.add_note(_BACKWARD_NOTE + node.name())
        raise
    if not isinstance(grads_in, tuple):
        grads_in = (grads_in,)
    if len(grads_in) < n_inputs:
        grads_in = grads_in + (None,) * (n_inputs - len(grads_in))
    if run_hooks and has_post_hooks(node):
        reduced = tuple(g if g is None or m is None else _to_meta(g, m) for g, m in zip(grads_in, node.input_meta))
        grads_in = post_hooked(node, reduced, grads, _same, _same)
    if not retain_graph:
        _release(node)
    return grads_in


def _real_part_for_real(grad, meta):
    """A real output's gradient tensor as its node takes it: the real part of a complex one (graph.py's twin)."""
    if meta is None or not grad.is_complex() or meta[1].kind == "c":
        return grad
    from ..ops.complex_views import real
    return real(grad)


def _to_meta(grad, meta):
    """``grad`` summed down to the input's shape and cast to its dtype, both differentiably."""
    from .. import _dtype
    shape, dtype = meta
    if not hasattr(grad, "_data"):  # a Python number from a rule
        grad = _tensor_like(grad, shape, dtype)
    if grad.shape != shape:
        grad = sum_to_shape(grad, shape)
    if grad._data.dtype != dtype:
        grad = grad.to(_dtype.from_numpy_dtype(dtype))
    return grad


def _tensor_like(value, shape, dtype):
    from ..tensor import _new
    return _new(np.full(shape, value, dtype))


def sum_to_shape(grad, shape):
    """Reduce a broadcast gradient tensor to ``shape`` with differentiable sums."""
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and grad.shape[i + lead] != 1)
    out = grad.sum(dim=axes, keepdim=True) if axes else grad
    return out.reshape(shape)


def _run_hooks(hooks, grad):
    for hook in hooks:
        out = hook(grad)
        if out is not None:
            check_hook_result(hook, out, grad)
            grad = out
    return grad


def _accumulate_leaf(node, grad, captures, run_hooks=True):
    """Into a capture slot, or the leaf's ``.grad``: the gradient itself the first time, then a differentiable
    sum (``grad + new``, a new tensor, as torch's AccumulateGrad does under create_graph)."""
    tensor = node.tensor_ref()
    if tensor is None:
        return
    if tensor._hooks and run_hooks:
        grad = _run_hooks(tensor._hooks, grad)
    if captures is not None:
        if node in captures:
            prev = captures[node]
            captures[node] = grad if prev is None else prev + grad
        return
    if run_hooks:
        grad = pre_hooked(node, [grad], _same, _same)[0]
    tensor.grad = grad if tensor.grad is None else tensor.grad + grad
    if tensor._post_accumulate_grad_hooks:
        for hook in tuple(tensor._post_accumulate_grad_hooks):
            hook(tensor)
    if run_hooks and has_post_hooks(node):
        post_hooked(node, (), (grad,), _same, _same)


def root_grad_tensors(tensors, grad_tensors):
    """The root gradients as tensors: the given ones as they are (they may require grad), ones for scalar
    outputs."""
    from ..tensor import Tensor, _new, to_array
    grads = grad_tensors or [None] * len(tensors)
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            out.append(_new(array_module(t._data).ones(t._data.shape, t._data.dtype)))
        else:
            g = g if isinstance(g, Tensor) else _new(to_array(g))
            check_root_shape(i, g.shape, t)
            out.append(g)
    return out


def check_root_shape(index, shape, output):
    """torch's error for a given root gradient whose shape is not its output's (it would broadcast silently)."""
    if tuple(shape) != tuple(output.shape):
        from ..tensor import Size
        raise RuntimeError(f"Mismatch in shape: grad_output[{index}] has a shape of {Size(shape)} and "
                           f"output[{index}] has a shape of {output.shape}.")


# ---- helpers the ops' ``backward_tensors`` share ------------------------------------------------------
def constant(array):
    """A tensor over ``array`` that no gradient flows into (a mask, a share, indices)."""
    from ..tensor import _new
    return _new(array)


def masked(grad, keep, fill=0.0):
    """``grad`` where the boolean array ``keep`` holds, else ``fill`` (also where grad is inf or NaN): linear
    in ``grad`` with constant data, so its own gradient is the same mask (``where``'s backward). A fill of 1
    keeps a divisor away from 0 where the result is masked anyway (no 0 / 0 in the next backward)."""
    if keep is True:
        return grad
    return grad.where(constant(keep), fill)


def keep_dims(grad, axes, keepdim):
    """A reduced gradient tensor with its reduced ``axes`` restored as size 1 (for broadcasting back)."""
    if keepdim or not axes:
        return grad
    shape = list(grad.shape)
    for a in sorted(axes):
        shape.insert(a, 1)
    return grad.reshape(tuple(shape))


class Transposed(Function):
    """The backward of a linear op that reads no data but constant parameters (a slice, a flip, advanced
    indexing with fixed indices, average pooling), made an op of its own: forward is ``node.backward`` on
    arrays; as the op is linear, the transpose of that is the op's forward again, run on a copy of the node
    (so the recorded node keeps its state; never in place). Its differentiable backward records that copy as
    a node, whose own ``backward_tensors`` is ``Transposed`` again: differentiable to any order."""

    uses_inputs = False

    def __init__(self, node):
        self.node = copy.copy(node)  # the recorded node may be released by a later backward

    def name(self):
        return self.node.name() + "Backward"

    def _fresh(self):
        node = copy.copy(self.node)
        node.inplace = False
        return node

    def forward(self, *grads):
        return self.node.backward(*grads)

    def backward(self, *grads):
        return self._fresh().forward(*grads)

    def backward_tensors(self, *grads):
        return self._fresh()(*grads)


def recomputed_backward(node, fn, arrays, grad):
    """The input gradients of an op whose differentiable backward recomputes its forward from engine ops and
    differentiates that (``vjp``): ``fn(*inputs)`` on the saved inputs rebuilt over ``arrays`` (one per input;
    a non-array passes as it is). Each input that needs a gradient goes in through a view of its own, so an input
    passed twice (``cosine_similarity(x, x)``) gets each use's gradient in its own slot."""
    from ..ops.shape import Reshape
    inputs, wanted = [], []
    for i, (a, need) in enumerate(zip(arrays, node.needs_input_grad)):
        t = node.saved_input(i, a) if hasattr(a, "shape") else a
        if need and hasattr(a, "shape"):
            t = Reshape(tuple(t.shape))(t)
        inputs.append(t)
        wanted.append(t if need and hasattr(a, "shape") else None)
    return vjp(fn(*inputs), wanted, grad)


def transposed_backward(node, *grads):
    """``node``'s backward on gradient tensors through ``Transposed`` (see there for when that is correct)."""
    return Transposed(node)(*grads)
