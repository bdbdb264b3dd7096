"""``Module``: the base of every layer, with PyTorch's registration, traversal, hooks and state dicts."""
import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _dtype, _layout
from ..._device import array_module, device as _device, move
from ...autograd.grad_mode import no_grad
from ...tensor import Size, Tensor, _new, to_array
from ..parameter import Buffer, Parameter

_hook_ids = itertools.count()


class RemovableHandle:
    """Returned by ``register_*_hook``: ``handle.remove()`` unregisters the hook."""

    def __init__(self, *hook_dicts):
        self.id = next(_hook_ids)
        self.hook_dicts = hook_dicts

    def remove(self):
        for d in self.hook_dicts:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the missing and the unexpected keys."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _typename(value):
    """PyTorch-style type name for error messages (``engine.FloatTensor``, ``int``)."""
    if isinstance(value, Tensor):
        return value.type()
    module = type(value).__module__
    name = type(value).__qualname__
    return name if module in ("builtins", "__main__") else f"{module}.{name}"


def _indent(text, spaces):
    """Indent every line but the first of ``text`` (nested module reprs)."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


class Module:
    """Base class of all layers: holds parameters, buffers and child modules in registration order."""

    _version = 1
    training: bool

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        init = object.__setattr__
        init(self, "training", True)
        init(self, "_parameters", OrderedDict())
        init(self, "_buffers", OrderedDict())
        init(self, "_non_persistent_buffers_set", set())
        init(self, "_modules", OrderedDict())
        for name in _HOOK_DICTS:
            init(self, name, OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation of this layer; every subclass defines it."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Register ``tensor`` (or None) as state that is not a parameter (e.g. running means)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(engine Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(engine.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                             "must be created explicitly. To express '{name}' as a function of another "
                             "Tensor, compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (or None) as a child under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')

    def get_submodule(self, target):
        """The module at dotted path ``target`` (``""`` is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    # ---- attribute protocol ------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, keep="_parameters")
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(engine.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, keep="_modules")
            self._modules[name] = value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(engine.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer):
            self._forget(name, keep="_buffers")
            self.register_buffer(name, value)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(engine.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep):
        """Drop ``name`` from every store but ``keep`` (an attribute changes kind)."""
        self.__dict__.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                self.__dict__[store].pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[store]:
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        attrs = set(object.__dir__(self))
        attrs.update(self._parameters, self._buffers, self._modules)
        return sorted(a for a in attrs if not a[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_non_persistent_buffers_set", set())

    # ---- traversal ---------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or (remove_duplicate and id(value) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(value))
                yield (module_prefix + "." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs; shared parameters appear once unless ``remove_duplicate=False``."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) pairs in pre-order, self first under ``prefix``."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    __hash__ = object.__hash__

    # ---- modes and gradients -----------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode on this module and every descendant."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's ``.grad`` (to None by default, else to zeros in place)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad._data[...] = 0

    def apply(self, fn):
        """Call ``fn`` on every descendant (children first), then on self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- dtype and device moves --------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        """Replace every parameter's and buffer's array by ``fn(array)`` (tensors keep their identity)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for tensor in itertools.chain(self._parameters.values(), self._buffers.values()):
            if tensor is None:
                continue
            new = fn(tensor._data)
            if new is not tensor._data:
                tensor._data = new
                tensor._version = [0]
            if tensor.grad is not None:
                tensor.grad._data = fn(tensor.grad._data)
        return self

    def to(self, *args, **kwargs):
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: floats take the dtype;
        ``memory_format=`` lays out every 4-D and 5-D parameter and buffer in that format, as torch's."""
        dev, dtype, memory_format = kwargs.get("device"), kwargs.get("dtype"), kwargs.get("memory_format")
        for a in args:
            if isinstance(a, Tensor):
                dev, dtype = a.device, a.dtype
            elif isinstance(a, _dtype.dtype):
                dtype = a
            elif a is not None and not isinstance(a, bool):  # a bool is torch's non_blocking
                dev = a
        if dtype is not None:
            dtype = _dtype.to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}")
        dev = None if dev is None else _device(dev)

        def convert(arr):
            if dtype is not None and _dtype.is_floating(arr.dtype) and arr.dtype != dtype.np:
                arr = arr.astype(dtype.np)
            if dev is not None:
                arr = move(arr, dev)
            if memory_format is not None and arr.ndim in (4, 5) and _layout.suggested_format(arr) is not memory_format:
                arr = _layout.in_memory_format(arr, memory_format, array_module(arr))
            return arr
        return self._apply(convert)

    def share_memory(self):
        """Move every parameter, buffer and gradient into shared memory (``Tensor.share_memory_``), so that
        processes this module is passed to update the same tensors."""
        from ...multiprocessing.shared_memory import share_array
        return self._apply(share_array)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else _device("cuda", device if isinstance(device, int) else None))

    def _cast_floats(self, dtype):
        dtype = _dtype.to_dtype(dtype)
        return self._apply(lambda a: a.astype(dtype.np) if _dtype.is_floating(a.dtype) else a)

    def float(self):
        return self._cast_floats(_dtype.float32)

    def double(self):
        return self._cast_floats(_dtype.float64)

    def half(self):
        return self._cast_floats(_dtype.float16)

    def bfloat16(self):
        return self._cast_floats(_dtype.bfloat16)

    def type(self, dst_type):
        """Cast every parameter and buffer (floating or not) to ``dst_type``."""
        np_dtype = _dtype.to_dtype(dst_type).np
        return self._apply(lambda a: a.astype(np_dtype, copy=False))

    # ---- calling and hooks -------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before forward; may replace inputs."""
        handle = RemovableHandle(self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` runs after forward; a non-None return replaces the output."""
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        called = set()
        try:
            output = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        self._run_forward_hook(hook_id, hook, args, kwargs, None)
                    except Exception:
                        pass
            raise
        return output

    def _run_forward_hook(self, hook_id, hook, args, kwargs, output):
        if hook_id in self._forward_hooks_with_kwargs:
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result

    # ---- printing ----------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """Layer settings shown inside the parentheses of ``repr`` (override in subclasses)."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _indent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        if not lines:
            return self._get_name() + "()"
        if len(extra_lines) == 1 and not child_lines:
            return f"{self._get_name()}({extra_lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    # ---- state dicts -------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """Parameters then persistent buffers of each module, recursively in registration order."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Fill in entries that checkpoints of an older ``_version`` of this layer lack (override)."""

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
        for key in state_dict:
            if not key.startswith(prefix):
                continue
            head, dot, _ = key[len(prefix):].partition(".")
            if (dot and head not in self._modules) or (not dot and head not in local):
                unexpected.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy (or with ``assign=True`` adopt) parameters and buffers; all-or-nothing on error.

        Values may be engine tensors, numpy arrays or anything ``engine.tensor`` accepts.
        Returns ``_IncompatibleKeys(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        missing, unexpected, errors, plan = [], [], [], []

        def visit(module, local_state, prefix):
            version = None if metadata is None else metadata.get(prefix[:-1], {}).get("version")
            module._upgrade_state_dict(local_state, prefix, version)
            module._plan_load(local_state, prefix, plan, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    visit(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)},
                          child_prefix)

        visit(self, OrderedDict(state_dict), "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
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
                    target._version[0] += 1
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


_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called")

__all__ = ["Module"]
