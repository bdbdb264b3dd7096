"""Temporary patches symbolic tracing needs, all undone when a trace ends (nothing is paid outside tracing):
the engine's public functions (``engine.flatten``, ``engine.nn.functional.relu``...) become wrappers that record a
call_function node when an argument is a Proxy, in the form torch records its twin (``torch_calls``); the Tensor
operators and methods give way to a Proxy argument (``tensor + proxy`` records ``add``, ``buffer.mul(proxy)``
``mul``); functions named by ``wrap`` and autowrap are wrapped where they are looked up."""
import functools
import importlib
import inspect
import types

from .codegen import PUBLIC_PATHS
from .naming import TORCH_NAMES, snake_case
from .proxy import find_proxy
from .torch_calls import CONVENTIONS, RECORDED_AS_METHOD, RECORDED_NAMES, torch_call_form

#: engine namespaces model code calls through attribute access (the lazily imported ones are imported first)
_NAMESPACES = ("engine", "engine.nn.functional", "engine.special", "engine.linalg", "engine.fft")
#: public names of those namespaces that are not operations on tensors and must keep running on proxies
_NOT_RECORDED = frozenset(("is_tensor", "is_storage", "typename", "compile", "is_grad_enabled"))
#: node-name prefixes of the namespaces whose torch functions are named so (``torch.special.expit`` is
#: ``special_expit``)
_NAME_PREFIX = {"engine.special": "special_", "engine.linalg": "linalg_", "engine.fft": "fft_"}
#: Tensor operator -> the method torch records when a real tensor meets a Proxy on its right (``buffer * proxy``)
_TENSOR_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
                     "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and",
                     "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "__lshift__", "rshift": "__rshift__",
                     "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}

_wrapper_cache = {}


def wrapped_function(fn, name=None, recorder=None):
    """A function that records ``fn`` as a call_function node (named after ``name``) when any argument is a
    Proxy, and calls ``fn`` otherwise. ``recorder(args, kwargs)``, when given, says what to record instead:
    ``(op, target, args, kwargs, node name)``."""
    key = (id(fn), name, id(recorder))
    if key not in _wrapper_cache:
        node_name = snake_case(name) if name else None

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            proxy = find_proxy(args, kwargs)
            if proxy is None:
                return fn(*args, **kwargs)
            op, target, rec_args, rec_kwargs, rec_name = (recorder(args, kwargs) if recorder is not None else
                                                          ("call_function", fn, args, kwargs, node_name))
            out = proxy.tracer.create_proxy(op, target, rec_args, rec_kwargs, name=rec_name)
            out.node.meta["is_wrapped"] = True
            return out
        wrapper.__fx_wrapped__ = fn
        _wrapper_cache[key] = (fn, recorder, wrapper)
    return _wrapper_cache[key][2]


_recorder_cache = {}


def _torch_recorder(module_name, name, fn, namespace):
    """``_make_recorder``'s result, made once per engine function (so its wrapper is made once too)."""
    key = (module_name, name, id(fn))
    if key not in _recorder_cache:
        _recorder_cache[key] = _make_recorder(module_name, name, fn, namespace)
    return _recorder_cache[key]


def _make_recorder(module_name, name, fn, namespace):
    """How torch records its twin of engine function ``name`` of ``module_name`` (see ``torch_calls``), or None
    when it records the call as made. ``namespace`` finds ``<name>_with_indices``, which torch records for
    ``max_pool2d(..., return_indices=True)`` and its kin."""
    method = RECORDED_AS_METHOD.get((module_name, name))
    convention = CONVENTIONS.get((module_name, name))
    if method is not None:
        return lambda args, kwargs: ("call_method", method, args, kwargs, None)
    if convention is None or not _accepts(fn, convention[2]):
        return None
    indices_name = f"{name}_with_indices"
    indices_convention = CONVENTIONS.get((module_name, indices_name))
    node_name = RECORDED_NAMES.get((module_name, name), name)

    def record(args, kwargs):
        rec_args, rec_kwargs = torch_call_form(convention, args, kwargs)
        if indices_convention is not None and rec_kwargs.get("return_indices") is True:
            target = namespace[indices_name]
            return ("call_function", getattr(target, "__fx_wrapped__", target), rec_args, rec_kwargs,
                    indices_name)
        return "call_function", fn, rec_args, rec_kwargs, node_name
    return record


def _accepts(fn, keywords):
    """Whether ``fn`` takes all of ``keywords`` by name (else recording torch's form would make code that fails)."""
    try:
        inspect.signature(fn).bind_partial(**dict.fromkeys(keywords))
    except (TypeError, ValueError):
        return False
    return True


def _is_function(value):
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, functools.partial)) or (
        callable(value) and not inspect.isclass(value) and not inspect.ismodule(value)
        and type(value).__module__.startswith("engine") and hasattr(value, "__name__"))


def engine_functions():
    """(namespace dict, name, function, module name) for every public engine function tracing records."""
    found = []
    for module_name in _NAMESPACES:
        module = importlib.import_module(module_name)
        for name, value in list(vars(module).items()):
            if (name.startswith("_") and name != "_assert") or name in _NOT_RECORDED or not _is_function(value):
                continue
            found.append((vars(module), name, value, module_name))
            PUBLIC_PATHS.setdefault(id(value), f"{module_name}.{name}")
            if module_name in _NAME_PREFIX and PUBLIC_PATHS[id(value)] == f"{module_name}.{name}":
                TORCH_NAMES.setdefault(id(value), _NAME_PREFIX[module_name] + name)  # not also engine.<name>
    return found


class Patcher:
    """Set dict entries and class attributes for the duration of a trace; ``revert`` restores them in reverse
    order."""

    def __init__(self):
        self._undo = []
        self._seen = set()

    def patch(self, namespace, name, new):
        """Set ``namespace[name] = new`` (once per entry)."""
        key = (id(namespace), name)
        if key in self._seen:
            return
        self._seen.add(key)
        missing = name not in namespace
        old = namespace.get(name)
        namespace[name] = new
        self._undo.append(lambda: namespace.pop(name, None) if missing else namespace.__setitem__(name, old))

    def patch_method(self, cls, name, new):
        """Set ``cls.name = new``."""
        old = cls.__dict__.get(name)
        setattr(cls, name, new)
        self._undo.append(lambda: setattr(cls, name, old) if old is not None else delattr(cls, name))

    def revert(self):
        while self._undo:
            self._undo.pop()()
        self._seen.clear()


def patch_engine(patcher):
    """Wrap the engine's public functions and let Tensor operators defer to Proxy operands."""
    for namespace, name, fn, module_name in engine_functions():
        recorder = _torch_recorder(module_name, name, fn, namespace)
        node_name = _NAME_PREFIX.get(module_name, "") + name
        patcher.patch(namespace, name, wrapped_function(fn, node_name, recorder))
    from ..tensor import Tensor
    for op, method_name in _TENSOR_OPERATORS.items():
        dunder = f"__{op}__"
        original = getattr(Tensor, dunder, None)
        if original is not None:
            patcher.patch_method(Tensor, dunder, _recording(original, method_name))
    for name, original in list(vars(Tensor).items()):  # ``buffer.mul(proxy)``, ``buffer[proxy]``: as torch
        if (not name.startswith("_") or name == "__getitem__") and isinstance(original, types.FunctionType):
            patcher.patch_method(Tensor, name, _recording_method(original, name))


def _recording(method, method_name):
    """``tensor <op> proxy``: a call_method node on the tensor, as torch records it."""
    @functools.wraps(method)
    def operator_method(self, other):
        proxy = find_proxy(other, {})
        if proxy is None:
            return method(self, other)
        return proxy.tracer.create_proxy("call_method", method_name, (self, other), {})
    return operator_method


def _recording_method(method, name):
    """A Tensor method that, given a Proxy argument, records a call_method node on the tensor (torch's record
    of a real tensor's method meeting a traced value), and runs otherwise."""
    @functools.wraps(method)
    def tensor_method(self, *args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is None:
            return method(self, *args, **kwargs)
        return proxy.tracer.create_proxy("call_method", name, (self,) + args, kwargs)
    return tensor_method


def autowrap_check(patcher, namespace, function_ids):
    """Wrap the entries of ``namespace`` (a module's globals) that are functions named for autowrap."""
    if not function_ids:
        return
    for name, value in list(namespace.items()):
        if not name.startswith("_") and callable(value) and id(value) in function_ids:
            patcher.patch(namespace, name, wrapped_function(value, None))
