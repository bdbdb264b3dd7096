"""``Module``: the base of every layer, with PyTorch's registration, traversal and hooks (state dicts come from
``state_dict.py``)."""
import itertools
import warnings
from collections import OrderedDict
from typing import Any, TypeVar

from ... import _dtype, _layout
from ..._device import array_module, device as _device, move
from ...tensor import Tensor
from ...utils.hooks import BackwardHook, RemovableHandle
from ..parameter import Buffer, Parameter
from . import backward_hooks as _g
from .backward_hooks import (register_module_backward_hook, register_module_buffer_registration_hook,
                             register_module_forward_hook, register_module_forward_pre_hook,
                             register_module_full_backward_hook, register_module_full_backward_pre_hook,
                             register_module_module_registration_hook, register_module_parameter_registration_hook)
from .backward_hooks import (_global_backward_hooks as _GLOBAL_BACKWARD,
                             _global_backward_pre_hooks as _GLOBAL_BACKWARD_PRE,
                             _global_forward_hooks as _GLOBAL_FORWARD,
                             _global_forward_pre_hooks as _GLOBAL_FORWARD_PRE)
from .state_dict import StateDictMixin

T_destination = TypeVar("T_destination", bound=dict[str, Any])


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


class Module(StateDictMixin):
    """Base class of all layers: holds parameters, buffers and child modules in registration order."""

    _version = 1
    training: bool
    #: torch's flags: ``dump_patches`` (unused), ``call_super_init`` (``__init__`` passes its arguments on to the
    #: next class in the MRO instead of refusing them)
    dump_patches = False
    call_super_init = False
    T_destination = T_destination
    #: set by ``compile()``: what calling the module runs instead of ``_call_impl``
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs):
        if not self.call_super_init:
            if kwargs:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                                f"'{next(iter(kwargs))}'")
            if args:
                raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but "
                                f"{len(args) + 1} were given")
        init = object.__setattr__
        init(self, "training", True)
        init(self, "_parameters", OrderedDict())
        init(self, "_buffers", OrderedDict())
        init(self, "_non_persistent_buffers_set", set())
        init(self, "_modules", OrderedDict())
        for name in _HOOK_DICTS:
            init(self, name, OrderedDict())
        init(self, "_is_full_backward_hook", None)
        if self.call_super_init:
            super().__init__(*args, **kwargs)

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
        if isinstance(tensor, Buffer):  # the ``persistent`` argument wins over the Buffer's flag, as in torch
            tensor = tensor.detach()
        tensor = _registered(_g._global_buffer_registration_hooks, self, name, tensor)
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
        if param is not None:
            param = _registered(_g._global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (or None) as a child under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = _registered(_g._global_module_registration_hooks, self, name, module)

    register_module = add_module

    @staticmethod
    def _check_name(name, kind):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))

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

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at dotted path ``target`` (its parent must exist; with ``strict``, so must the
        attribute, and an existing attribute there must be a module)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

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
            self._modules[name] = _registered(_g._global_module_registration_hooks, self, name, value)
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(engine.nn.Module or None expected)")
            self._modules[name] = value
        elif isinstance(value, Buffer):  # as torch: over a plain attribute, register_buffer's KeyError
            self.register_buffer(name, value, value.persistent)
        elif d.get("_buffers") is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(engine.nn.Buffer, engine.Tensor or None expected)")
            self._buffers[name] = _registered(_g._global_buffer_registration_hooks, self, name, value)
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
        self.__dict__.setdefault("_is_full_backward_hook", None)
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
                tensor._version_counter = [0]
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
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                f"dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex modules are a new feature under active development whose design may change, "
                              "and some modules might not work as expected when using complex tensors as "
                              "parameters or buffers.", stacklevel=2)
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

    def to_empty(self, *, device, recurse=True):
        """Give every parameter and buffer (of the children too with ``recurse``) fresh uninitialized memory on
        ``device`` (None: where each is), keeping the tensors' identities."""
        dev = None if device is None else _device(device)

        def empty(arr):
            out = array_module(arr).empty_like(arr)
            return out if dev is None else move(out, dev)
        return self._apply(empty, recurse=recurse)

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
        """float()/double()/half()/bfloat16(): cast the real floating tensors only (complex ones stay, as torch's)."""
        dtype = _dtype.to_dtype(dtype)
        return self._apply(lambda a: a.astype(dtype.np) if _dtype.is_real_floating(a.dtype) else a)

    def float(self):
        return self._cast_floats(_dtype.float32)

    def double(self):
        return self._cast_floats(_dtype.float64)

    def half(self):
        return self._cast_floats(_dtype.float16)

    def bfloat16(self):
        return self._cast_floats(_dtype.bfloat16)

    def type(self, dst_type):
        """Cast every parameter and buffer (floating or not) to ``dst_type``; a parameter that requires grad
        cannot become an integer or bool tensor (torch's error, raised here before anything is cast)."""
        dtype = _dtype.to_dtype(dst_type)
        if not (dtype.is_floating_point or dtype.is_complex) and any(p.requires_grad for p in self.parameters()):
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        np_dtype = dtype.np
        return self._apply(lambda a: a.astype(np_dtype, copy=False))

    # ---- calling and hooks -------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (or ``(module, args, kwargs)``) runs before forward; may replace inputs."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` runs after forward; a non-None return replaces the output."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs are known; a non-None
        return replaces ``grad_output`` (a tuple, None for outputs that are not tensors or got no gradient)."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs once the gradients of the module's positional inputs
        are computed (of its outputs when no input requires grad); a non-None return replaces ``grad_input``.
        The module's forward sees, and its caller gets, new tensors over the same arrays; writing into them in
        place is refused, as torch refuses it."""
        return self._add_backward_hook(hook, True, prepend)

    def register_backward_hook(self, hook):
        """Deprecated (``register_full_backward_hook``): ``hook(module, grad_input, grad_output)`` sees the
        gradients of the autograd node that made the module's first output tensor, as torch's does."""
        return self._add_backward_hook(hook, False)

    def _add_backward_hook(self, hook, full, prepend=False):
        """Register ``hook`` in ``_backward_hooks`` as a full or a non-full one: one module takes one kind only."""
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = full
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _get_backward_hooks(self):
        """(full backward hooks, non-full ones) that apply to this module: the global ones first."""
        full, non_full = [], []
        (full if _g._FullFlag.value else non_full if _g._FullFlag.value is False else []).extend(
            _g._global_backward_hooks.values())
        mine = self._is_full_backward_hook
        (full if mine else non_full if mine is False else []).extend(self._backward_hooks.values())
        return full, non_full

    def __call__(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        if (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _GLOBAL_FORWARD_PRE or _GLOBAL_FORWARD or _GLOBAL_BACKWARD_PRE or _GLOBAL_BACKWARD):
            return self._call_impl(*args, **kwargs)
        return self.forward(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        """``forward`` with the hooks: forward pre-hooks, backward hooks around the call, forward hooks (global
        ones first); forward hooks with ``always_call`` also run when forward raises."""
        full_hooks, non_full_hooks = self._get_backward_hooks() if (
            self._backward_hooks or _g._global_backward_hooks) else ((), ())
        pre_hooks = [*_g._global_backward_pre_hooks.values(), *self._backward_pre_hooks.values()]
        for hook_id, hook in (*_g._global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
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
        bw_hook = None
        if full_hooks or pre_hooks:
            bw_hook = BackwardHook(self, full_hooks, pre_hooks)
            args = bw_hook.setup_input_hook(args)
        called = set()
        output = None
        forward_hooks = (*_g._global_forward_hooks.items(), *self._forward_hooks.items())
        try:
            output = self.forward(*args, **kwargs)
            for hook_id, hook in forward_hooks:
                called.add(hook_id)
                output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
        except Exception:
            for hook_id, hook in forward_hooks:
                if hook_id not in called and (hook_id in self._forward_hooks_always_called
                                              or hook_id in _g._global_forward_hooks_always_called):
                    try:
                        output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
                    except Exception as e:
                        warnings.warn("module forward hook with ``always_call=True`` raised an exception that was "
                                      f"silenced as another error was raised in forward: {e}", stacklevel=2)
            raise
        if bw_hook is not None:
            from ...tensor import Tensor
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(output)}", stacklevel=2)
            output = bw_hook.setup_output_hook(output)
        if non_full_hooks:
            _g.attach_non_full_hooks(self, non_full_hooks, args, output)
        return output

    def _run_forward_hook(self, hook_id, hook, args, kwargs, output):
        if hook_id in self._forward_hooks_with_kwargs or hook_id in _g._global_forward_hooks_with_kwargs:
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result

    def compile(self, *args, **kwargs):
        """``torch.compile`` this module in place: calling it then runs ``engine.compile(self._call_impl, ...)``
        (hooks included), with the same arguments as ``engine.compile``; the module and its state dict keys stay
        as they are."""
        from ...compiler import compile as _compile
        self._compiled_call_impl = _compile(self._call_impl, *args, **kwargs)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)
        return state

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
def _registered(hooks, module, name, value):
    """``value`` after the global registration ``hooks`` (each may replace it)."""
    if not hooks:
        return value
    for hook in tuple(hooks.values()):
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


_HOOK_DICTS = ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_pre_hooks",
               "_backward_hooks", "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")

__all__ = ["Module", "register_module_backward_hook", "register_module_buffer_registration_hook",
           "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_full_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]
