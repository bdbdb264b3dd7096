"""``Tracer`` and ``symbolic_trace``: run a module's ``forward`` on Proxies and record what it does as a ``Graph``
(torch.fx's symbolic tracing). Modules defined in ``engine.nn`` are leaves (one call_module node); other modules
are traced through. Parameters read from modules become get_attr nodes."""
import builtins
import collections
import inspect
import math
import types
import warnings

from .concrete_inputs import PH, FlattenInputsCodeGen, PHBase, flatten_spec, is_container, spec_of, tree_map
from .graph import Graph
from .node import Node
from .naming import snake_case
from .patching import Patcher, autowrap_check, patch_engine, wrapped_function
from . import asserts
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

    #: whether reading a buffer of the root gives a (shared) get_attr proxy instead of the tensor
    proxy_buffer_attributes = False
    #: whether each node gets the user-code stack that created it (``node.stack_trace``)
    record_stack_traces = False

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(), param_shapes_constant=False):
        self._autowrap_function_ids = _function_ids(autowrap_modules, autowrap_functions)
        self._autowrap_modules = tuple(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None
        self.submodule_paths = None
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}

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
        calls = self.num_calls.get(name, 0)
        key = f"{name}@{calls}" if calls else name
        self.module_stack[key] = (name, type(m))  # ``nn_module_stack`` of the nodes made inside this call
        self.num_calls[name] = calls + 1
        try:
            if not self.is_leaf_module(m, name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """What reading ``module.attr`` gives during tracing: a (shared) get_attr proxy for a parameter (a
        ``ParameterProxy`` with the real shape if ``param_shapes_constant``), and for a buffer if
        ``proxy_buffer_attributes``."""
        from ..nn.parameter import Parameter
        from ..tensor import Tensor
        if isinstance(attr_val, Parameter):
            named = self.root.named_parameters()
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            named = self.root.named_buffers()
        else:
            return attr_val
        for name, p in named:
            if p is attr_val:
                if name not in parameter_proxy_cache:
                    kwargs = {}  # a subclass's create_proxy may not take proxy_factory_fn (as torch)
                    if (self.param_shapes_constant and isinstance(attr_val, Parameter)
                            and "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters):
                        kwargs["proxy_factory_fn"] = lambda node: ParameterProxy(self, node, name, attr_val)
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {}, **kwargs)
                return parameter_proxy_cache[name]
        return attr_val

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """A node in ``self.graph``, with the module calls it was made in (``meta["nn_module_stack"]``) and,
        if ``record_stack_traces``, the user code that made it."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(self.module_stack)
        if self.record_stack_traces and kind not in ("placeholder", "output"):
            node.stack_trace = _user_stack()
        return node

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
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        for prefix, m in self.root.named_modules():
            for k, v in m._buffers.items():
                if v is not None:
                    self._tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
            for k, v in vars(m).items():
                if _is_plain_tensor(v):
                    self._tensor_attrs.setdefault(id(v), f"{prefix}.{k}" if prefix else k)
        args = self._placeholders(fn, len(bound), concrete_args)
        if any(is_container(v) for v in (concrete_args or {}).values()):
            names = [p.name for p in list(inspect.signature(fn).parameters.values())[len(bound):]]
            self.graph.set_codegen(FlattenInputsCodeGen(names, [spec_of(a) for a in args]))
        patcher = Patcher()
        try:
            self._patch(patcher, fn.__globals__)
            result = _positional(fn)(*bound, *args)
            if isinstance(self.graph._codegen, FlattenInputsCodeGen):  # as torch: a flat list of outputs
                self.graph._codegen.out_spec = spec_of(result)
                result = flatten_spec(result, self.graph._codegen.out_spec)
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=fn.__annotations__.get("return"))
        finally:
            patcher.revert()
        self.submodule_paths = None
        return self.graph

    def _placeholders(self, fn, skip, concrete_args):
        """One placeholder per parameter of ``fn`` after the first ``skip``, in torch's order: positional ones,
        keyword-only ones, then ``*args`` and ``**kwargs`` (each one proxy for the whole tuple / dict). Returns
        the values to call ``_positional(fn)`` with."""
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[skip:]
        kinds = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        params = [p for p in params if p.kind not in kinds] + [p for p in params if p.kind in kinds]
        concrete_args = dict(concrete_args or {})
        args = []
        for p in params:
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
            if p.name not in concrete_args:
                args.append(self.create_proxy("placeholder", star + p.name, default, {}))
                continue
            args.append(self._concrete_placeholders(p.name, default, concrete_args.pop(p.name)))
        if concrete_args:
            raise TraceError(f"concrete_args names parameters {sorted(concrete_args)} that "
                             f"{fn.__qualname__} does not have")
        return args

    def _concrete_placeholders(self, name, default, value):
        """The value a specialized parameter is traced with: each leaf of ``value`` (a ``PH``, or a fixed value
        the graph then asserts) gets a placeholder ``<name>_<i>``; ``PH`` leaves trace as their proxies."""
        count = iter(range(1, 1 << 30))

        def leaf(x):
            ph = self.create_proxy("placeholder", f"{name}_{next(count)}", default, {})
            if isinstance(x, PHBase):
                if x is not PH:
                    for attr, v in vars(x).items():
                        setattr(ph, attr, v)
                return ph
            if x is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (ph, f"{name} has been specialized to have value None but got another value"), {})
            elif type(x) in _BASE_TYPES:
                import engine  # torch records torch._assert: the generated code reads engine._assert
                self.create_proxy("call_function", getattr(engine, "_assert", _assert),
                                  (ph == x, f"{name} has been specialized to have value {x} but got another value"),
                                  {})
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                              "function. It is up to the user to make sure that your inputs match the inputs you "
                              "specialized the function with.")
            return x
        return tree_map(leaf, value)

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
        for check in (_assert, _assert_is_none):  # generated code of specialized inputs calls these
            patcher.patch(vars(asserts), check.__name__, wrapped_function(check, check.__name__))
        for (_, name), namespace in _wrapped_globals.items():
            fn = namespace.get(name, getattr(builtins, name, None))
            if fn is not None:
                patcher.patch(namespace, name, wrapped_function(fn, snake_case(name)))
        autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
        for module in self._autowrap_modules:
            autowrap_check(patcher, vars(module), self._autowrap_function_ids)


def _positional(fn):
    """``fn`` with keyword-only, ``*args`` and ``**kwargs`` parameters turned into plain positional ones (in that
    order), so tracing can pass one proxy for each, as torch.fx does; ``fn`` itself when it has none."""
    code = fn.__code__
    varstuff = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    if not code.co_kwonlyargcount and not code.co_flags & varstuff:
        return fn
    total = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & inspect.CO_VARARGS) + \
        bool(code.co_flags & inspect.CO_VARKEYWORDS)
    new_code = code.replace(co_argcount=total, co_kwonlyargcount=0, co_flags=code.co_flags & ~varstuff)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, None, fn.__closure__)


def _user_stack():
    """The formatted frames of the code being traced (engine's own frames left out), innermost last."""
    import os
    import traceback
    engine_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frames = [f for f in traceback.extract_stack()[:-2] if not os.path.abspath(f.filename).startswith(engine_dir)]
    return "".join(traceback.format_list(frames))


class ParameterProxy(Proxy):
    """The proxy of a parameter when ``param_shapes_constant``: shape queries give the parameter's real values
    (no node), everything else records as usual."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    @property
    def ndim(self):
        return self.param.ndim

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


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
