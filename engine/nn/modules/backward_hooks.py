"""The hooks of every module (torch.nn.modules.module's ``register_module_*_hook``) and the deprecated non-full
backward hook (``Module.register_backward_hook``), which sees the gradients of the autograd node that made the
module's output rather than those of the module."""
import warnings
from collections import OrderedDict

from ...utils.hooks import RemovableHandle

_global_buffer_registration_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()


class _FullFlag:
    """Whether the global backward hooks are full ones (True), non-full ones (False) or not chosen yet (None)."""
    value = None


_MIXED = ("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
          "Please use only one of them.")


def _register(hooks, hook, extra=None):
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id] = hook
    return handle


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer)`` runs whenever any module registers a buffer; a non-None return replaces it."""
    return _register(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule)`` runs whenever any module registers a child; a non-None return replaces
    it."""
    return _register(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param)`` runs whenever any module registers a parameter; a non-None return replaces
    it."""
    return _register(_global_parameter_registration_hooks, hook)


def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` runs before every module's forward, before the module's own pre-hooks."""
    return _register(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` (``(module, args, kwargs, output)`` with ``with_kwargs``) runs after every
    module's forward, before the module's own hooks; ``always_call`` also runs it when forward raises."""
    handle = _register(_global_forward_hooks, hook,
                       [_global_forward_hooks_always_called, _global_forward_hooks_with_kwargs])
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` runs for every module before its own backward pre-hooks."""
    return _register(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` runs for every module before its own full backward hooks."""
    if _FullFlag.value is False:
        raise RuntimeError(_MIXED)
    _FullFlag.value = True
    return _register(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated (``register_module_full_backward_hook``): a non-full backward hook on every module."""
    if _FullFlag.value is True:
        raise RuntimeError(_MIXED)
    _FullFlag.value = False
    return _register(_global_backward_hooks, hook)


def attach_non_full_hooks(module, hooks, args, result):
    """Run ``hooks(module, grad_input, grad_output)`` on the node that made the first tensor of ``result``: with
    its input and output gradients, a returned tuple replacing the input ones (torch's deprecated semantics)."""
    from ...tensor import Tensor
    var = result
    while not isinstance(var, Tensor):
        var = next(v for v in var.values() if isinstance(v, Tensor)) if isinstance(var, dict) else var[0]
    node = var.grad_fn
    if node is None:
        return
    inner = node.backward

    def backward(*grads):
        from ...autograd.graph import sum_to_shape
        from ...tensor import _new
        grads_in = inner(*grads)
        single = not isinstance(grads_in, tuple)
        grads_in = (grads_in,) if single else grads_in
        res = tuple(None if g is None or m is None else _new(sum_to_shape(g, m[0]))
                    for g, m in zip(grads_in, node.input_meta))
        outs = tuple(_new(g) for g in grads)
        for hook in hooks:
            new = hook(module, res, outs)
            if new is not None:
                if len(new) != len(res):
                    raise RuntimeError(f"hook '{getattr(hook, '__name__', hook)}' has returned an incorrect number "
                                       f"of values (got {len(new)}, but expected {len(res)})")
                res = tuple(new)
        out = tuple(g._data if isinstance(g, Tensor) else g for g in res)
        return out[0] if single else out

    node.backward = backward
    _warn_non_full(args, result, node)


def _warn_non_full(inputs, result, node):
    """torch's FutureWarnings where a non-full hook misses gradients of the module."""
    from ...tensor import Tensor
    if isinstance(result, Tensor):
        result = (result,)
    elif not (isinstance(result, tuple) and all(isinstance(r, Tensor) for r in result)):
        return _future("Using non-full backward hooks on a Module that does not return a single Tensor or a tuple of "
                       "Tensors is deprecated and will be removed in future versions. This hook will be missing some "
                       "of the grad_output. Please use register_full_backward_hook to get the documented behavior.")
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, tuple) and all(isinstance(i, Tensor) for i in inputs)):
        return _future("Using non-full backward hooks on a Module that does not take as input a single Tensor or a "
                       "tuple of Tensors is deprecated and will be removed in future versions. This hook will be "
                       "missing some of the grad_input. Please use register_full_backward_hook to get the documented "
                       "behavior.")
    out_nodes = {r.grad_fn for r in result if r.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
        _future("Using a non-full backward hook when outputs are nested in python data structure is deprecated and "
                "will be removed in future versions. This hook will be missing some grad_output.")
    elif len(out_nodes) > 1:
        _future("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                "deprecated and will be removed in future versions. This hook will be missing some grad_output. "
                "Please use register_full_backward_hook to get the documented behavior.")
    else:
        in_nodes = {i.grad_fn for i in inputs if i.grad_fn is not None}
        if in_nodes != {None if e is None else e[0] for e in node.next_edges}:
            _future("Using a non-full backward hook when the forward contains multiple autograd Nodes is deprecated "
                    "and will be removed in future versions. This hook will be missing some grad_input. Please use "
                    "register_full_backward_hook to get the documented behavior.")


def _future(message):
    warnings.warn(message, FutureWarning, stacklevel=4)


__all__ = ["register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_backward_hook"]
