"""Temporary patches symbolic tracing needs, all undone when a trace ends (nothing is paid outside tracing):
the engine's public functions (``engine.flatten``, ``engine.nn.functional.relu``...) become wrappers that record a
call_function node when an argument is a Proxy; the Tensor operators give way to a Proxy on their right
(``tensor + proxy`` records ``add``); functions named by ``wrap`` and autowrap are wrapped where they are looked up."""
import functools
import importlib
import inspect
import types

from .codegen import PUBLIC_PATHS
from .naming import snake_case
from .proxy import find_proxy

#: engine namespaces model code calls through attribute access (the lazily imported ones are imported first)
_NAMESPACES = ("engine", "engine.nn.functional", "engine.special", "engine.linalg", "engine.fft")
#: public names of those namespaces that are not operations on tensors and must keep running on proxies
_NOT_RECORDED = frozenset(("is_tensor", "is_storage", "typename", "compile", "is_grad_enabled"))
#: Tensor operator -> the method torch records when a real tensor meets a Proxy on its right (``buffer * proxy``)
_TENSOR_OPERATORS = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
                     "mod": "remainder", "pow": "pow", "matmul": "matmul", "and": "bitwise_and",
                     "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "__lshift__", "rshift": "__rshift__",
                     "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}

_wrapper_cache = {}


def wrapped_function(fn, name=None):
    """A function that records ``fn`` as a call_function node (named after ``name``) when any argument is a
    Proxy, and calls ``fn`` otherwise."""
    key = (id(fn), name)
    if key not in _wrapper_cache:
        node_name = snake_case(name) if name else None

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            proxy = find_proxy(args, kwargs)
            if proxy is None:
                return fn(*args, **kwargs)
            out = proxy.tracer.create_proxy("call_function", fn, args, kwargs, name=node_name)
            out.node.meta["is_wrapped"] = True
            return out
        wrapper.__fx_wrapped__ = fn
        _wrapper_cache[key] = (fn, wrapper)
    return _wrapper_cache[key][1]


def _is_function(value):
    return isinstance(value, (types.FunctionType, types.BuiltinFunctionType, functools.partial)) or (
        callable(value) and not inspect.isclass(value) and not inspect.ismodule(value)
        and type(value).__module__.startswith("engine") and hasattr(value, "__name__"))


def engine_functions():
    """(namespace dict, name, function) for every public engine function tracing records."""
    found = []
    for module_name in _NAMESPACES:
        module = importlib.import_module(module_name)
        for name, value in list(vars(module).items()):
            if (name.startswith("_") and name != "_assert") or name in _NOT_RECORDED or not _is_function(value):
                continue
            found.append((vars(module), name, value))
            PUBLIC_PATHS.setdefault(id(value), f"{module_name}.{name}")
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
    for namespace, name, fn in engine_functions():
        patcher.patch(namespace, name, wrapped_function(fn, name))
    from ..tensor import Tensor
    for op, method_name in _TENSOR_OPERATORS.items():
        dunder = f"__{op}__"
        original = getattr(Tensor, dunder, None)
        if original is not None:
            patcher.patch_method(Tensor, dunder, _recording(original, method_name))


def _recording(method, method_name):
    """``tensor <op> proxy``: a call_method node on the tensor, as torch records it."""
    @functools.wraps(method)
    def operator_method(self, other):
        proxy = find_proxy(other, {})
        if proxy is None:
            return method(self, other)
        return proxy.tracer.create_proxy("call_method", method_name, (self, other), {})
    return operator_method


def autowrap_check(patcher, namespace, function_ids):
    """Wrap the entries of ``namespace`` (a module's globals) that are functions named for autowrap."""
    if not function_ids:
        return
    for name, value in list(namespace.items()):
        if not name.startswith("_") and callable(value) and id(value) in function_ids:
            patcher.patch(namespace, name, wrapped_function(value, None))
