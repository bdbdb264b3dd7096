"""``Function``: one differentiable op, forward beside backward, written against an array module.

A subclass implements ``forward(*arrays)`` and ``backward(*grad_outputs)`` on raw arrays
(numpy or cupy); parameters go to ``__init__``. Calling an instance on tensors runs the
forward and, when gradients are needed, records the instance as the outputs' ``grad_fn``.
The backward engine reduces broadcast gradients and casts them to each input's dtype, so an
op's backward may return gradients in the broadcast shape.
"""
import weakref

from .. import _device, _dtype
from . import anomaly_mode, bfloat16, grad_mode, saved_hooks, tracing
from .node import Node


class Function(Node):
    """Base of every autograd op (Chainer's FunctionNode, PyTorch's Node)."""

    #: an in-place op that writes only part of its target (``x[key] = v``): it checks that part for elements
    #: sharing memory itself, where other in-place ops refuse an expanded target as a whole
    writes_a_region = False
    #: the op reads its input arrays in backward (guards against later in-place changes)
    uses_inputs = True
    #: the op reads its output arrays in backward
    uses_output = False
    #: output 0 is a view of input 0 (shares its storage and version counter)
    is_view = False
    #: the op writes into input 0 and returns it (``x.relu_()``, ``x += y``)
    inplace = False
    #: the op only moves or views elements (a reshape, a copy, a move between devices): it takes bfloat16
    #: arrays as they are, so that a reshape stays a view (``bfloat16.py``)
    moves_only = False
    #: forward and backward ran on float32 copies of bfloat16 inputs (``bfloat16.py``)
    widened = False
    #: the output takes input 0's dtype whatever the others' (torch's norms: a bfloat16 or float16 input with
    #: float32 weights and statistics gives a bfloat16 or float16 output)
    keeps_input_dtype = False

    needs_input_grad = ()

    def forward(self, *arrays):
        raise NotImplementedError

    def inputs_read(self, inputs):
        """The inputs whose values backward reads (with ``uses_inputs``), so whose later in-place changes fail the
        backward: all of them, unless an op narrows it as torch's saved variables do."""
        return inputs

    def backward(self, *grad_outputs):
        raise NotImplementedError(f"{type(self).__name__} is not differentiable")

    def backward_tensors(self, *grad_outputs):
        """The differentiable backward, used only by ``create_graph=True`` passes (``double_backward.py``):
        the input gradients computed from output gradient tensors with engine ops, so that they record a
        graph. An op without one cannot be differentiated twice."""
        raise RuntimeError(f"double backward (create_graph=True) is not implemented for {self.name()}")

    def saved_input(self, index, array):
        """Input ``index`` as a graph-connected tensor over ``array`` (what the forward saved of it), as torch
        unpacks a SavedVariable: the leaf itself (cast to ``array``'s dtype if the op cast it), or a tensor
        over ``array`` whose grad_fn and output index are the input's producing node and slot. A Python
        scalar, or an input that needed no gradient, comes back as a constant."""
        from ..tensor import _new
        edges = getattr(self, "next_edges", ())
        edge = edges[index] if index < len(edges) else None
        if not hasattr(array, "shape") or edge is None:
            return _new(array) if hasattr(array, "shape") else array
        node, slot = edge
        if isinstance(node, AccumulateGrad):
            leaf = node.tensor_ref()
            if leaf is None:
                return _new(array)
            if leaf._data.dtype != array.dtype:
                return leaf.to(_dtype.from_numpy_dtype(array.dtype))
            return leaf
        t = _new(array, requires_grad=True)
        t.grad_fn, t._output_index = node, slot
        return t

    def saved_output(self, index, array):
        """Output ``index`` rebuilt over ``array`` as a tensor whose grad_fn is this op, so gradients of a
        backward that reads the output flow back through the op."""
        from ..tensor import _new
        t = _new(array, requires_grad=True)
        t.grad_fn, t._output_index = self, index
        return t

    def name(self):
        return type(self).__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    @classmethod
    def apply(cls, *args, **kwargs):
        """PyTorch-style custom functions: ``forward(ctx, ...)``/``backward(ctx, ...)`` static methods."""
        return apply_custom(cls, *args, **kwargs)

    def __call__(self, *inputs):
        from ..tensor import Tensor, _new

        tracer = tracing.active
        if tracer is not None:
            state = dict(self.__dict__)
        arrays = tuple(t._data if isinstance(t, Tensor) else t for t in inputs)
        if _device._cupy is not None and len(arrays) > 1:
            arrays = _same_device(inputs, arrays)
        # inference mode records nothing, even under enable_grad (as torch's)
        record = grad_mode._State.enabled and not grad_mode._State.inference and any(
            isinstance(t, Tensor) and t.requires_grad for t in inputs)
        if self.inplace:
            _check_write(inputs[0], record, self.writes_a_region, self.writes_a_region and _through_a_view(self, inputs[0].shape))
            base_required_grad = (inputs[0] if inputs[0]._base is None else inputs[0]._base).requires_grad
        if grad_mode._State.inference_made:
            _check_inference_inputs(self, inputs, record)
        if record:
            self.needs_input_grad = tuple(isinstance(t, Tensor) and t.requires_grad for t in inputs)
            self.next_edges = tuple(_edge(t) if need else None
                                    for t, need in zip(inputs, self.needs_input_grad))
            self.input_meta = tuple((t.shape, t._data.dtype) if need else None
                                    for t, need in zip(inputs, self.needs_input_grad))
        outs = bfloat16.forward(self, arrays)
        single = not isinstance(outs, tuple)
        if single:
            outs = (outs,)
        if self.inplace:
            target = inputs[0]
            if outs[0] is not target._data:
                _check_cast(outs[0].dtype, target._data.dtype)
                target._data[...] = outs[0]
            target._version_counter[0] += 1
            results = [target] + [_new(o) for o in outs[1:]]
        else:
            results = [_new(o) for o in outs]
            if self.is_view and isinstance(inputs[0], Tensor):
                views.made_views(inputs[0], results, several=not single)
        if grad_mode._State.inference:
            _mark_inference(self, inputs, results)
        elif grad_mode._State.inference_made and self.is_view and getattr(inputs[0], "_inference", False):
            results[0]._inference = True  # a view of an inference tensor is one, in or out of the mode
        if record:
            self.output_meta = tuple((o.shape, o.dtype) for o in outs)
            for i, r in enumerate(results):
                if _dtype.is_floating(r._data.dtype):
                    r.requires_grad = True
                    r.grad_fn = self
                    r._output_index = i
            self._saved_versions = _versions(self.inputs_read(inputs) if self.uses_inputs else (),
                                             results if self.uses_output else ())
            if saved_hooks._stack:
                saved_hooks.pack_node(self, inputs, results)
            if anomaly_mode._State.enabled:
                self._anomaly_stack = anomaly_mode.forward_stack()
            if self.inplace and inputs[0]._base is not None and tracer is None:
                inputs[0]._seen_version = inputs[0]._version_counter[0]  # this write is the view's history (views.py)
                from ..ops.view_copies import rebase_history  # the base's history now runs through the view's
                rebase_history(inputs[0])
        if self.inplace and tracer is None:
            views.after_write(inputs[0], record, base_required_grad)
        if tracer is not None:
            tracer.record(type(self), state, inputs, results)
        return results[0] if single else tuple(results)

    def check_versions(self):
        """Raise when a tensor this op saved was modified in place after the forward."""
        for tensor, version, output in self._saved_versions:
            if tensor._version_counter[0] != version:
                whose = "" if output is None else f", which is output {output} of {type(self).__name__},"
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an "
                    f"inplace operation: [{tensor.type()} {list(tensor.shape)}]{whose} is at version "
                    f"{tensor._version_counter[0]}; expected version {version} instead. Hint: enable anomaly detection "
                    "to find the operation that failed to compute its gradient, with "
                    "engine.autograd.set_detect_anomaly(True, check_nan=False).")


def _same_device(inputs, arrays):
    """The arrays of one op's inputs, all on one device: torch's error when tensors are on different
    devices, except that a 0-d CPU tensor joins a GPU op (moved there, as torch takes CPU scalars)."""
    from ..tensor import Tensor
    gpu = next((t.device for t in inputs if isinstance(t, Tensor) and _device.is_cuda_array(t._data)), None)
    if gpu is None:
        return arrays
    out = []
    for t, a in zip(inputs, arrays):
        if isinstance(t, Tensor) and not _device.is_cuda_array(getattr(a, "values", a)):  # sparse: its values
            if a.ndim:
                raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                                   f"devices, {gpu} and cpu!")
            a = _device.move(a, gpu)
        out.append(a)
    return tuple(out)


def _check_cast(result, out):
    r, o = _dtype.from_numpy_dtype(result), _dtype.from_numpy_dtype(out)
    if not _dtype.can_cast(r, o):
        raise RuntimeError(f"result type {r.title} can't be cast to the desired output "
                           f"type {o.title}")


def _versions(inputs, outputs):
    """(tensor, its version, its output index for an output, else None) of each tensor an op saved."""
    from ..tensor import Tensor
    return tuple((t, t._version_counter[0], None) for t in inputs if isinstance(t, Tensor)) + tuple(
        (t, t._version_counter[0], i) for i, t in enumerate(outputs))


def _edge(tensor):
    """Where a gradient for ``tensor`` goes: its producing node, or its leaf accumulator (None: nowhere)."""
    if tensor._base is not None and not views.edge_of_view(tensor):
        return None
    if tensor.grad_fn is not None:
        return tensor.grad_fn, tensor._output_index
    acc = tensor._accumulator
    if acc is None:
        acc = tensor._accumulator = AccumulateGrad(tensor)
    return acc, 0


def _check_inference_inputs(fn, inputs, record):
    """torch's errors for inference tensors used outside inference mode: written in place, or saved for a
    backward."""
    if fn.inplace:
        grad_mode.check_inplace(inputs[0])
    if record and fn.uses_inputs:
        grad_mode.check_saved(inputs)


def _mark_inference(fn, inputs, results):
    """Mark what ``fn`` made in inference mode as inference tensors: not the tensor an in-place op wrote into,
    nor a view of an ordinary tensor."""
    keeps_first = fn.inplace or (fn.is_view and not inputs[0].is_inference())
    for r in results[1:] if keeps_first else results:
        grad_mode.mark_inference(r)


_VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."


def _through_a_view(fn, shape):
    """Whether ``fn``, an indexing write (``x[0] = v``) into a tensor of ``shape``, writes through a view of it, as
    torch's does where the basic part of its key (``fn.basic``) holds an int, None, or a slice other than one from
    0 by 1 to the dim's end or past it."""
    dim = 0
    for k in getattr(fn, "basic", ()):
        if k is Ellipsis:
            break
        if k is None or isinstance(k, int):
            return True
        if isinstance(k, slice):
            if k.start not in (None, 0) or k.step not in (None, 1) or k.stop is not None and k.stop < shape[dim]:
                return True
            dim += 1
    return False


_OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
            "location. Please clone() the tensor before performing the operation.")


def _check_inplace(target, grad_enabled, overlapping_ok=False):
    """``_check_write`` for an in-place fill of ``target`` with values that need no gradient (random, constant):
    autograd records it where grad mode is on and ``target`` requires grad; an inference tensor is refused
    outside inference mode, as by every in-place op."""
    if grad_mode._State.inference_made:
        grad_mode.check_inplace(target)
    _check_write(target, grad_enabled and target.requires_grad, overlapping_ok)


def _check_write(target, record, overlapping_ok=False, through_a_view=False):
    """torch's refusals of an in-place op on ``target``, in torch's order: while autograd records it, a view it
    restricts (``views.py``), a view of a leaf that requires grad (``through_a_view``: the op writes through a view
    of ``target`` it takes first), such a leaf; then, unless ``overlapping_ok`` (``fill_``), a tensor whose elements
    share memory (an expanded one)."""
    base = target._base
    if record and base is not None:
        views.check_view_write(target)
        if base.is_leaf and base.requires_grad:
            raise RuntimeError(_VIEW_OF_LEAF)
    if record and target.is_leaf and target.requires_grad:
        raise RuntimeError(_VIEW_OF_LEAF if through_a_view else
                           "a leaf Variable that requires grad is being used in an in-place operation.")
    data = target._data
    if not overlapping_ok and data.size > 1 and any(step == 0 and n > 1 for step, n in zip(data.strides, data.shape)):
        raise RuntimeError(_OVERLAP)


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds incoming gradients into ``tensor.grad``."""

    def __init__(self, tensor):
        self.tensor_ref = weakref.ref(tensor)
        self.next_edges = ()

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return "<AccumulateGrad>"

    @property
    def variable(self):
        return self.tensor_ref()


class _CustomNode(Function):
    """The graph node of a PyTorch-style custom Function (``MyFn.apply(x)``); each Function class gets its own
    subclass named ``<Function>Backward``, as torch's grad_fn classes are."""

    moves_only = True  # its forward hands back what the user's computed: no bfloat16 widening, either way

    def __init__(self, fn_cls, ctx, outs, positions, n_outputs):
        self.fn_cls, self.ctx, self.outs = fn_cls, ctx, outs
        self.positions, self.n_outputs = positions, n_outputs  # where forward's tensor outputs were, of how many

    def name(self):
        return type(self).__name__

    @property
    def saved_tensors(self):
        """What forward saved (torch's node is its ctx); torch's error once a backward freed it."""
        if getattr(self, "_released", False):
            from .graph import check_not_released
            check_not_released(self)
        return self.ctx.saved_tensors

    def __getattr__(self, name):
        """The ctx's attributes, as on torch's node (``y.grad_fn.k`` for ``ctx.k``), while it is kept."""
        ctx = self.__dict__.get("ctx")
        if ctx is None or name.startswith("_") or name in _ENGINE_NODE_ATTRIBUTES:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(ctx, name)

    def forward(self, *arrays):
        outs = tuple(o._data for o in self.outs)
        del self.outs
        return outs if len(outs) > 1 else outs[0]

    def _all_outputs(self, grads):
        """One gradient per output of forward: None for the outputs that were no tensors."""
        full = [None] * self.n_outputs
        for position, grad in zip(self.positions, grads):
            full[position] = grad
        return full

    def _checked(self, gins):
        """The user's gradients as a tuple, one per input, with torch's errors for a wrong count, a gradient for
        a non-tensor input, or a shape that cannot be reduced to its input's."""
        gins = gins if isinstance(gins, tuple) else (gins,)
        n_inputs = len(self.needs_input_grad)
        if len(gins) > n_inputs and all(g is None for g in gins[n_inputs:]):
            gins = gins[:n_inputs]
        if len(gins) != n_inputs:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                               f"{n_inputs}, got {len(gins)})")
        for i, (grad, meta) in enumerate(zip(gins, self.input_meta)):
            if grad is None:
                continue
            if not self.is_tensor_input[i]:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None at position "
                                   f"{i + 1}, but the corresponding forward input was not a Variable")
            if meta is not None and not _expandable(meta[0], tuple(grad.shape)):
                raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                                   f"{list(grad.shape)} but expected shape compatible with {list(meta[0])}")
        return gins

    def backward(self, *grads):
        from ..tensor import _new
        grads = self._all_outputs([None if g is None else _new(g) for g in grads])
        gins = self._checked(_user_backward(self.fn_cls)(self.ctx, *grads))
        return tuple(None if g is None else g._data for g in gins)

    def backward_tensors(self, *grads):
        """The user's backward, on tensors, with grad mode on (the pass runs under ``enable_grad``): what it
        computes with engine ops is differentiable, as in torch. An engine Function written this way may give a
        ``_backward_tensors`` of its own for that pass (``utils.checkpoint``'s, which recomputes on the graph)."""
        backward = getattr(self.fn_cls, "_backward_tensors", None) or _user_backward(self.fn_cls)
        return self._checked(backward(self.ctx, *self._all_outputs(grads)))


#: what the backward engines look up on a node with a default: never answered from a custom Function's ctx
_ENGINE_NODE_ATTRIBUTES = frozenset(("hooks", "retained", "next_edges", "input_meta", "output_meta",
                                     "materialize_grads", "tensor_ref", "variable", "dtype", "nd", "ufunc", "y"))


def _user_backward(fn_cls):
    """A custom Function's ``backward`` (or its alias ``vjp``), with torch's error when it has neither."""
    if fn_cls.backward is not Function.backward:
        return fn_cls.backward
    vjp = getattr(fn_cls, "vjp", None)
    if vjp is None:
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")
    return vjp


def _expandable(shape, target):
    """Whether an array of ``shape`` broadcasts to ``target`` (so a gradient of ``target`` sums back to it)."""
    return len(shape) <= len(target) and all(n == m or n == 1 for n, m in zip(reversed(shape), reversed(target)))


_NODE_CLASSES = weakref.WeakKeyDictionary()  # a Function class defined in a loop or a test does not live on here


def _node_class(fn_cls):
    """The ``<Function>Backward`` node class of custom Function ``fn_cls`` (made once)."""
    node_cls = _NODE_CLASSES.get(fn_cls)
    if node_cls is None:
        node_cls = _NODE_CLASSES[fn_cls] = type(fn_cls.__name__ + "Backward", (_CustomNode,), {})
    return node_cls


def apply_custom(fn_cls, *args, **kwargs):
    """Run a PyTorch-style custom Function, then record one node: ``forward(ctx, ...)`` on tensors, or, when the
    class defines ``setup_context``, ``forward(...)`` without ctx followed by ``setup_context(ctx, inputs, output)``
    (``inputs`` every argument of forward, defaults filled in, as torch passes them). Outputs that are no
    tensors pass through; tensors given to ``mark_dirty`` (changed in place) come back as themselves."""
    from ..tensor import Tensor
    ctx = FunctionCtx()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
    ctx._records = grad_mode._State.enabled and not grad_mode._State.inference and any(ctx.needs_input_grad)
    setup_context = getattr(fn_cls, "setup_context", None)
    if fn_cls.forward is Function.forward:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")
    with grad_mode.no_grad():
        if setup_context is None:
            outs = fn_cls.forward(ctx, *args, **kwargs)
        else:
            outs = fn_cls.forward(*args, **kwargs)
    if setup_context is not None:
        setup_context(ctx, _bound_inputs(fn_cls.forward, args, kwargs), outs)
    single = not isinstance(outs, tuple)  # a list, too, is one output, as torch's
    outs = (outs,) if single else outs
    if any(not any(d is o for o in outs) for d in ctx.dirty):
        raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                           "The inputs that are modified inplace must all be outputs of the Function.")
    positions = tuple(i for i, o in enumerate(outs) if isinstance(o, Tensor))
    tensors = tuple(outs[i] for i in positions)
    if not tensors:  # nothing to record a node for
        return outs[0] if single else outs
    node = _node_class(fn_cls)(fn_cls, ctx, tensors, positions, len(outs))
    node.uses_inputs = False
    node.is_tensor_input = tuple(isinstance(a, Tensor) for a in args)
    node.materialize_grads = getattr(ctx, "materialize_grads", True)
    results = node(*args)
    results = results if isinstance(results, tuple) else (results,)
    results = tuple(_finish_output(out, result, ctx) for out, result in zip(tensors, results))
    if getattr(node, "next_edges", None) is not None:  # recorded: changes to what ctx saved fail its backward
        node._saved_versions = tuple((t, t._version_counter[0], None) for t in ctx.to_save if isinstance(t, Tensor))
    full = list(outs)
    for position, result in zip(positions, results):
        full[position] = result
    return full[0] if single else tuple(full)


def _finish_output(out, result, ctx):
    """The tensor the caller gets for forward's output ``out``, recorded as ``result``: ``out`` itself when
    forward changed it in place (mark_dirty), else ``result`` sharing ``out``'s version counter; with no graph
    for outputs marked non-differentiable."""
    if any(out is t for t in ctx.non_differentiable):
        result.requires_grad, result.grad_fn = False, None
    if any(out is t for t in ctx.dirty):
        if out.is_leaf and out.requires_grad:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        out._version_counter[0] += 1  # marked dirty: one more version, as torch counts it
        if result.grad_fn is not None:
            out.grad_fn, out._output_index, out.requires_grad = result.grad_fn, result._output_index, True
        return out
    result._version_counter = out._version_counter
    return result


def _bound_inputs(forward, args, kwargs):
    """The arguments of a ctx-less ``forward`` as one tuple in its parameters' order, defaults filled in."""
    import inspect
    bound = inspect.signature(forward).bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def once_differentiable(backward):
    """Decorate a custom Function's ``backward`` that cannot itself be differentiated (as torch's): it runs with
    grad mode off, so its results never record a graph."""
    import functools

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            return backward(ctx, *grads)
    return wrapper


class FunctionCtx:
    """The ``ctx`` of a PyTorch-style custom Function (static forward/backward on tensors)."""

    to_save = ()
    non_differentiable = ()
    dirty = ()
    needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` for backward; packed by the saved-tensor hooks in effect when a graph is recorded
        (``saved_hooks.py``)."""
        self.to_save = tensors
        self._packed = saved_hooks.pack(tensors) if getattr(self, "_records", True) else None

    @property
    def saved_tensors(self):
        packed = getattr(self, "_packed", None)
        return self.to_save if packed is None else saved_hooks.unpack(packed)

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors):
        """Declare the inputs that forward changed in place (and returns)."""
        self.dirty = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = value


from . import views  # noqa: E402  (views.py builds on Function)
