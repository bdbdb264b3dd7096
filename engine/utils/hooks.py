"""``torch.utils.hooks``: the handle that unregisters a hook, the marker for hooks that are not saved, and
``BackwardHook``, which gives ``nn.Module``'s full backward hooks the gradients of a module's inputs and outputs.

``BackwardHook`` works as torch's: the tensors that enter the module pass through an identity autograd op, and so
do the tensors that leave it. In the backward the output-side op sees the gradients of the outputs first (the
backward pre-hooks may replace them); the input-side op then sees those of the inputs, calls the full backward
hooks with both and passes on what they return. Each op runs once per backward pass, so the hooks fire once.
"""
import functools
import warnings
import weakref
from collections import OrderedDict

from ..autograd import grad_mode
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]


def _ref(d):
    """A weak reference to ``d`` where it takes one (an OrderedDict), else a callable that returns it."""
    try:
        return weakref.ref(d)
    except TypeError:
        return lambda: d


class RemovableHandle:
    """What ``register_*_hook`` returns: ``remove()`` drops the hook's id from ``hooks_dict`` and from every
    ``extra_dict`` (one dict or a list of them); also a context manager that removes on exit."""

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = _ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = [extra_dict] if isinstance(extra_dict, dict) else list(extra_dict or ())
        self.extra_dict_ref = tuple(_ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref, *self.extra_dict_ref):
            d = ref()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        return self.hooks_dict_ref(), self.id, tuple(ref() for ref in self.extra_dict_ref)

    def __setstate__(self, state):
        self.hooks_dict_ref = _ref(OrderedDict() if state[0] is None else state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = tuple(_ref(d) for d in (state[2] if len(state) > 2 and state[2] else ()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def unserializable_hook(f):
    """Mark ``f`` as a hook that is not meant to be saved, which silences ``warn_if_has_hooks``."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor):
    """Warn for each gradient hook of ``tensor`` that saving the tensor will drop (unless marked with
    ``unserializable_hook``)."""
    if tensor.grad_fn is None:
        hooks = tensor._hooks or ()
    else:
        hooks = (getattr(tensor.grad_fn, "hooks", None) or {}).get(tensor._output_index, ())
    for hook in hooks:
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this "
                          "warning", stacklevel=2)


_INPLACE_VIEW = ("Output {} of BackwardHookFunctionBackward is a view and is being modified inplace. This view was "
                 "created inside a custom Function (or because an input was returned as-is) and the autograd logic "
                 "to handle view+inplace would override the custom backward associated with the custom Function, "
                 "leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output "
                 "of the custom Function.")


class BackwardHookFunction(Function):
    """Identity on the tensors it is given (outputs share their arrays); its backward hands the gradients, as
    tensors with None where ``track_missing`` and none arrived, to ``on_backward``, which returns those to pass
    on. Writing into an output in place is refused (as torch refuses it on these views), when the backward runs."""

    uses_inputs = False
    moves_only = True

    def __init__(self, on_backward, track_missing):
        self.on_backward = on_backward
        self.track_missing = track_missing

    def forward(self, *arrays):
        return arrays

    def watch(self, outputs):
        """Note the outputs' version counters (an in-place write moves them) and, with ``track_missing``, hook
        each output's gradient slot to learn which gradients arrive."""
        self._watched = [(t._version_counter, t._version_counter[0]) for t in outputs]
        if self.track_missing:  # the hooks hold the set, not this node: no cycle keeps the graph alive
            arrived = self._arrived = set()
            self.hooks = {i: [functools.partial(_mark_arrival, arrived, i)] for i in range(len(outputs))}

    def check_versions(self):
        for i, (counter, version) in enumerate(self.__dict__.get("_watched", ())):  # none in nn.Graph replays
            if counter[0] != version:
                raise RuntimeError(_INPLACE_VIEW.format(i))

    def _present(self, grads):
        arrived = self.__dict__.get("_arrived") if self.track_missing else None
        if arrived is None:  # inputs, or an nn.Graph replay of the op (which has no gradient hooks)
            return grads
        present = tuple(g if i in arrived else None for i, g in enumerate(grads))
        arrived.clear()
        return present

    def backward(self, *grads):
        from ..tensor import Tensor, _new
        out = self.on_backward(tuple(None if g is None else _new(g) for g in self._present(grads)))
        return tuple(g._data if isinstance(g, Tensor) else g for g in out)

    def backward_tensors(self, *grads):
        return tuple(self.on_backward(self._present(grads)))


def _mark_arrival(arrived, index, grad):
    arrived.add(index)


def _pack(indices, values, size):
    """A ``size``-tuple of None with ``values`` at ``indices``."""
    res = [None] * size
    for i, v in zip(indices, values):
        res[i] = v
    return tuple(res)


class BackwardHook:
    """The full backward hooks (``user_hooks``) and backward pre-hooks (``user_pre_hooks``) of one call of
    ``module``: ``setup_input_hook(args)`` before its forward, ``setup_output_hook(result)`` after."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    @staticmethod
    def _apply_on_tensors(on_backward, track_missing, args):
        """``args`` with the tensors that require grad passed through one ``BackwardHookFunction``, and the
        positions of all tensors (None, and ``args`` unchanged, when no gradient will be recorded). The other
        tensors' gradients are None with ``track_missing`` (outputs), else zeros (inputs), as torch's."""
        from .._device import array_module
        from ..tensor import Tensor, _new
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        wrapped = [i for i in index if args[i].requires_grad]
        if not (wrapped and grad_mode.is_grad_enabled()):
            return args, None
        slot = {i: k for k, i in enumerate(wrapped)}
        others = {} if track_missing else {
            i: (args[i]._data.shape, args[i]._data.dtype, array_module(args[i]._data)) for i in index if i not in slot}

        def relay(grads):  # gradients of the wrapped tensors <-> gradients of all tensors
            full = tuple(grads[slot[i]] if i in slot else
                         _new(others[i][2].zeros(others[i][0], others[i][1])) if i in others else None for i in index)
            result = on_backward(full)
            return tuple(result[index.index(i)] for i in wrapped)

        fn = BackwardHookFunction(relay, track_missing)
        outs = fn(*(args[i] for i in wrapped))
        fn.watch(outs)
        new = list(args)
        for i, t in zip(wrapped, outs):
            new[i] = t
        return (tuple(new) if type(args) is tuple else type(args)(*new)), index

    def setup_input_hook(self, args):
        """Wrap the module's positional inputs; their gradients, once computed, go through the full hooks."""
        res, self.input_tensors_index = self._apply_on_tensors(self._input_grads, False, args)
        self.n_inputs = len(args)
        return res

    def _input_grads(self, grads):
        if self.grad_outputs is None:  # reached without passing the outputs (a double backward)
            return grads
        res = _pack(self.input_tensors_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            wrong = next((g for g in out if g is not None and not isinstance(g, Tensor)), None)
            if wrong is not None:
                raise TypeError(f"expected Variable, but hook returned '{type(wrong).__name__}'")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_tensors_index)

    def setup_output_hook(self, args):
        """Wrap the module's output (a tensor, or the tensors of a tuple): their gradients go through the
        backward pre-hooks and are kept for the full hooks."""
        single = not isinstance(args, tuple)
        res, self.output_tensors_index = self._apply_on_tensors(self._output_grads, True, (args,) if single else args)
        self.n_outputs = 1 if single else len(args)
        return res[0] if single else res

    def _output_grads(self, grads):
        self.grad_outputs = _pack(self.output_tensors_index, grads, self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(out)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = out
        local = self.grad_outputs
        if self.input_tensors_index is None:  # no input needs a gradient: the full hooks fire here
            if self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                              "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                              "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for "
                              "more details.", stacklevel=5)
                grad_inputs = (None,) * self.n_inputs
                for hook in self.user_hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should "
                                           "always return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_tensors_index)
