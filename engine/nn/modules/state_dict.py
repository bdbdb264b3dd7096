"""Module's state dicts: saving (with extra state) and loading (all or nothing, through torch's
``_load_from_state_dict`` protocol and the engine's ``_upgrade_state_dict``/``_plan_load``), and their hooks.
``Module`` takes these methods from ``StateDictMixin``."""
import functools
import warnings
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._device import move
from ...autograd.grad_mode import no_grad
from ...tensor import Size, Tensor, _new, to_array
from ...utils.hooks import RemovableHandle
from ..parameter import Parameter

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class StateDictMixin:
    """The state-dict methods of ``Module``."""

    def get_extra_state(self):
        """State beyond parameters and buffers, saved under ``<prefix>_extra_state`` when a subclass defines this
        (and ``set_extra_state``, which gets it back on load)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called.")

    def set_extra_state(self, state):
        """Restore what ``get_extra_state`` returned (subclasses define both)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called.")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if type(self).get_extra_state is not StateDictMixin.get_extra_state:
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Parameters then persistent buffers (and extra state) of each module, recursively in registration
        order, between the module's state-dict pre-hooks and post-hooks."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to https://pytorch.org/"
                          "docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict for details.",
                          FutureWarning, stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in tuple(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in tuple(self._state_dict_hooks.values()):
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                destination = destination if result is None else result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before this module saves its state."""
        return _add_hook(self._state_dict_pre_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs once this module's entries (children
        included) are in ``state_dict``; it may change ``state_dict`` in place and must return None."""
        hook._from_public_api = True
        return _add_hook(self._state_dict_hooks, hook)

    def _register_state_dict_hook(self, hook):
        """torch's private form of the post hook: a non-None return replaces the state dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        return _add_hook(self._state_dict_hooks, hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """``hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)`` runs
        before this module loads its entries (``hook(module, ...)`` with ``with_module``)."""
        return _add_hook(self._load_state_dict_pre_hooks, _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` runs before this module loads its entries; it may edit ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after this module and its children loaded; it may edit
        ``incompatible_keys.missing_keys`` and ``.unexpected_keys`` in place (strict mode checks them after)."""
        return _add_hook(self._load_state_dict_post_hooks, hook)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Fill in entries that checkpoints of an older ``_version`` of this layer lack (override)."""

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """Load this module's own entries of ``state_dict`` (torch's protocol; subclasses may override it and
        call it): the load pre-hooks, ``_upgrade_state_dict`` with the checkpoint's version, then the checks of
        ``_plan_load`` and the extra state. Inside ``load_state_dict`` the copies wait until every module passed
        its checks; called on its own, it copies at once unless it found errors."""
        for hook in tuple(self._load_state_dict_pre_hooks.values()):
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        self._upgrade_state_dict(state_dict, prefix, local_metadata.get("version"))
        plan = _LOAD_PLAN[-1] if _LOAD_PLAN else []
        n_errors = len(error_msgs)
        self._plan_load(state_dict, prefix, plan, missing_keys, unexpected_keys, error_msgs)
        key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if type(self).set_extra_state is not StateDictMixin.set_extra_state:
            if key in state_dict:
                plan.append(lambda value=state_dict[key]: self.set_extra_state(value))
            elif strict:
                missing_keys.append(key)
        elif strict and key in state_dict:
            unexpected_keys.append(key)
        if not _LOAD_PLAN and len(error_msgs) == n_errors:
            _apply_plan(plan, local_metadata.get("assign_to_params_buffers", False))

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        """Check this module's own entries of ``state_dict``; record the copies to make in ``plan`` (as
        ``(module, name, target, value, array)``, or a callable that a module with other state appends)."""
        local = OrderedDict((k, v) for k, v in self._parameters.items() if v is not None)
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            try:
                array = to_array(value)
            except (TypeError, ValueError):
                errors.append(f'While copying the parameter named "{key}", expected engine.Tensor or '
                              f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if target.ndim == 0 and array.shape == (1,):
                array = array.reshape(())
            if array.shape != target._data.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {Size(array.shape)} "
                              f"from checkpoint, the shape in current model is {target.shape}.")
                continue
            plan.append((self, name, target, value, array))
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        for key in state_dict:
            if not key.startswith(prefix) or key == extra_key:
                continue
            head, dot, _ = key[len(prefix):].partition(".")
            if (dot and head not in self._modules) or (not dot and head not in local):
                unexpected.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy (or with ``assign=True`` adopt) parameters and buffers.

        Values may be engine tensors, numpy arrays or anything ``engine.tensor`` accepts. Every module's
        ``_load_from_state_dict`` checks its entries and, after its children's, its load post-hooks run (they may
        edit the missing and unexpected keys); an error (a size mismatch, or with ``strict`` a missing or unexpected
        key) then raises with nothing copied: all or nothing, where torch copies what it can before raising, so
        post-hooks run before the copies here. Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        missing, unexpected, errors, plan = [], [], [], []

        def visit(module, local_state, prefix):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    visit(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)},
                          child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in tuple(module._load_state_dict_post_hooks.values()):
                if hook(module, keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")

        state = OrderedDict(state_dict)
        if metadata is not None:
            state._metadata = metadata
        _LOAD_PLAN.append(plan)
        try:
            visit(self, state, "")
        finally:
            _LOAD_PLAN.pop()
        if errors or (strict and (missing or unexpected)):
            raise _load_error(self, errors, missing, unexpected, strict)
        _apply_plan(plan, assign)
        return _IncompatibleKeys(missing, unexpected)

    def _assign_loaded(self, name, target, value, array):
        """``assign=True``: adopt the checkpoint's tensor, keeping a parameter's ``requires_grad``."""
        tensor = value if isinstance(value, Tensor) and value.shape == array.shape else _new(array)
        if name in self._parameters:
            if not isinstance(tensor, Parameter):
                tensor = Parameter(tensor, requires_grad=False)
            tensor.requires_grad = target.requires_grad
            self._parameters[name] = tensor
        else:
            self._buffers[name] = tensor.detach() if isinstance(tensor, Parameter) else tensor


_LOAD_PLAN = []  # the plan of the load_state_dict in progress (innermost last)


def _apply_plan(plan, assign):
    """Make the copies ``_plan_load`` recorded (or run a module's own setter)."""
    with no_grad():
        for entry in plan:
            if callable(entry):  # a module's own setter: state that is not parameters (quantized layers)
                entry()
                continue
            module, name, target, value, array = entry
            if assign:
                module._assign_loaded(name, target, value, array)
            else:
                target._data[...] = move(array, target.device).astype(target._data.dtype, copy=False)
                target._version_counter[0] += 1


def _load_error(module, errors, missing, unexpected, strict):
    """torch's error for a failed ``load_state_dict``: missing, then unexpected keys (when strict), then the
    other errors."""
    errors = list(errors)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
    return RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(module).__name__,
                                                                               "\n\t".join(errors)))


def _add_hook(hooks, hook):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


class _WrappedHook:
    """A load pre-hook, called with its module first when registered ``with_module`` (held weakly, as torch)."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.module = None if module is None else weakref.ref(module)

    def __call__(self, *args, **kwargs):
        if self.module is None:
            return self.hook(*args, **kwargs)
        module = self.module()
        if module is None:
            raise RuntimeError("You are trying to call the hook of a dead Module!")
        return self.hook(module, *args, **kwargs)

    def __getstate__(self):
        return {"hook": self.hook, "module": None if self.module is None else self.module()}

    def __setstate__(self, state):
        self.hook = state["hook"]
        self.module = None if state["module"] is None else weakref.ref(state["module"])
