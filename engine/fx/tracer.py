"""``Tracer`` and ``symbolic_trace``: run a module's ``forward`` on Proxies and record what it does as a ``Graph``
(torch.fx's symbolic tracing). Modules defined in ``engine.nn`` are leaves (one call_module node); other modules
are traced through. Parameters read from modules become get_attr nodes."""
import builtins
import inspect
import math

from .graph import Graph
from .node import Node
from .naming import snake_case
from .patching import Patcher, autowrap_check, patch_engine, wrapped_function
from .asserts import _assert, _assert_is_none
from .proxy import Attribute, Proxy, TraceError

_BASE_TYPES = (bool, int, float, str, complex)
#: (id of a globals dict, name) -> that globals dict: the functions ``wrap`` marked for recording
_wrapped_globals = {}


def wrap(fn_or_name):
    """Record calls of this module-level function as call_function nodes instead of tracing through it; call at
    module scope, with the function or its name (``wrap("len")`` wraps the builtin in that module)."""
    if not (callable(fn_or_name) or isinstance(fn_or_name, str)):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    caller = inspect.currentframe().f_back
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_globals[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _function_ids(modules, functions):
    ids = {id(v) for m in modules for k, v in vars(m).items() if not k.startswith("_") and callable(v)}
    return ids | {id(f) for f in functions}


class Tracer:
    """Turns a module or function into a ``Graph`` by running it on Proxies; subclass it to change which modules
    are leaves (``is_leaf_module``), how calls are recorded (``call_module``, ``create_proxy``)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self._autowrap_function_ids = _function_ids(autowrap_modules, autowrap_functions)
        self._autowrap_modules = tuple(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None
        self.submodule_paths = None

    # ---- the tracer's hooks --------------------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """Modules of engine.nn (but Sequential) are recorded as calls, not traced through."""
        from ..nn import Sequential
        module = type(m).__module__ or ""
        return module.startswith(("engine.nn", "engine.ao.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod):
        """The qualified name of ``mod`` in the traced root (``layer1.0.conv1``)."""
        path = self.submodule_paths.get(id(mod)) if self.submodule_paths is not None else None
        if path is None:
            for name, m in self.root.named_modules():
                if m is mod:
                    return name
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A module call: a call_module node for a leaf, else its ``forward`` traced through."""
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """What reading ``module.attr`` gives during tracing: a (shared) get_attr proxy for a parameter."""
        from ..nn.parameter import Parameter
        if not isinstance(attr_val, Parameter):
            return attr_val
        for name, p in self.root.named_parameters():
            if p is attr_val:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """Record a node whose arguments are ``args``/``kwargs`` (proxies and tensors become nodes)."""
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """An argument as the graph stores it: proxies -> their nodes, parameters and buffers of the root ->
        get_attr nodes, other tensors -> constants attached to the root, containers element by element."""
        from ..nn.parameter import Parameter
        from ..tensor import Tensor
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple):
            items = tuple(self.create_arg(e) for e in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                key = self.create_arg(k)
                if isinstance(key, Node):
                    raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. Got key: "
                                       f"{k}")
                out[key] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Parameter):
            for name, p in self.root.named_parameters():
                if p is a:
                    return self.create_node("get_attr", name, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            name = self._tensor_attrs.get(id(a))
            if name is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                name = f"_tensor_constant{i}"
                setattr(self.root, name, a)
                self._tensor_attrs[id(a)] = name
            return self.create_node("get_attr", name, (), {})
        return a

    def to_bool(self, obj):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the engine.fx docs for a more detailed "
                         "explanation of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        return Attribute(obj, "keys")()

    # ---- tracing -------------------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """Trace ``root`` (a module's ``forward``, or a function) into ``self.graph`` and return it."""
        from ..nn import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound = (root,)
        else:
            self.root = Module()
            fn = root
            bound = ()
        self.graph = Graph(tracer_cls=type(self))
        self.submodule_paths = {id(m): name for name, m in self.root.named_modules()}
        self._tensor_attrs = {}
        for prefix, m in self.root.named_modules():
            for k, v in m._buffers.items():
                if v is not None:
                    self._tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
            for k, v in vars(m).items():
                if _is_plain_tensor(v):
                    self._tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
        args = self._placeholders(fn, len(bound), concrete_args)
        patcher = Patcher()
        try:
            self._patch(patcher, fn.__globals__)
            result = fn(*bound, *args)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return"))
        finally:
            patcher.revert()
        self.submodule_paths = None
        return self.graph

    def _placeholders(self, fn, skip, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[skip:]
        concrete_args = dict(concrete_args or {})
        args = []
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY):
                raise TraceError(f"symbolic tracing does not support the parameter {p} of {fn.__qualname__} "
                                 "(only positional parameters are traced)")
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            if p.name not in concrete_args:
                args.append(self.create_proxy("placeholder", p.name, default, {}))
                continue
            value = concrete_args.pop(p.name)
            placeholder = self.create_proxy("placeholder", f"{p.name}_1", default, {})
            if value is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (placeholder, f"{p.name} has been specialized to have value None but got another "
                                   "value"), {})
            elif type(value) in _BASE_TYPES:
                self.create_proxy("call_function", _assert,
                                  (placeholder == value, f"{p.name} has been specialized to have value {value} but "
                                   "got another value"), {})
            args.append(value)
        if concrete_args:
            raise TraceError(f"concrete_args names parameters {sorted(concrete_args)} that "
                             f"{fn.__qualname__} does not have")
        return args

    def _patch(self, patcher, fn_globals):
        from ..nn import Module
        tracer = self
        original_call = Module.__call__
        original_getattr = Module.__getattr__
        parameter_cache = {}

        def module_getattr(mod, attr):
            return tracer.getattr(attr, original_getattr(mod, attr), parameter_cache)

        def module_call(mod, *args, **kwargs):
            def forward(*a, **k):
                return original_call(mod, *a, **k)
            autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}),
                           tracer._autowrap_function_ids)
            return tracer.call_module(mod, forward, args, kwargs)

        patcher.patch_method(Module, "__getattr__", module_getattr)
        patcher.patch_method(Module, "__call__", module_call)
        patch_engine(patcher)
        for (_, name), namespace in _wrapped_globals.items():
            fn = namespace.get(name, getattr(builtins, name, None))
            if fn is not None:
                patcher.patch(namespace, name, wrapped_function(fn, snake_case(name)))
        autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
        for module in self._autowrap_modules:
            autowrap_check(patcher, vars(module), self._autowrap_function_ids)


def _is_plain_tensor(v):
    from ..nn.parameter import Parameter
    from ..tensor import Tensor
    return isinstance(v, Tensor) and not isinstance(v, Parameter)


class GraphAppendingTracer(Tracer):
    """The tracer of proxies made directly on a graph (``Proxy(node)``): records into that graph."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self._tensor_attrs = {}


def symbolic_trace(root, concrete_args=None):
    """Trace ``root`` (a module or function) and return a ``GraphModule`` running the recorded graph."""
    from ..nn import Module
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
