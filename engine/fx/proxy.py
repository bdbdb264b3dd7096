"""``Proxy``: the stand-in value symbolic tracing passes through a program; every operation on it records a node
(Python operators -> ``operator.*`` calls, attribute reads -> ``getattr``, method calls -> call_method) instead of
computing. Control flow on it cannot be recorded and raises ``TraceError``, as torch.fx."""
import dis
import inspect
import operator
from bisect import bisect_left

from .node import map_aggregate

_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_", "xor",
           "getitem", "matmul")
_COMPARE_AND_UNARY = ("eq", "ne", "lt", "gt", "le", "ge", "pos", "neg", "invert")


class TraceError(ValueError):
    """A program did something symbolic tracing cannot record (control flow on a traced value...)."""


class Proxy:
    """A value during tracing, standing for the output of ``node``."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            from .tracer import GraphAppendingTracer
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):  # copy/pickle probing: not a traced attribute
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        instructions = list(dis.get_instructions(frame.f_code))
        idx = bisect_left(instructions, frame.f_lasti, key=lambda i: i.offset)
        if idx < len(instructions) and instructions[idx].opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(instructions[idx].argval))  # ``a, b = proxy``: its length is known
        return self.tracer.iter(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call engine.fx.wrap('len') at module scope")

    def keys(self):
        return self.tracer.keys(self)


class Attribute(Proxy):
    """``proxy.name``: becomes a call_method node when called, else a ``getattr`` node when first used."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _operator_method(name):
    target = getattr(operator, name)

    def method(*args):
        return args[0].tracer.create_proxy("call_function", target, args, {})
    method.__name__ = f"__{name.strip('_')}__"
    return method


def _reflected_method(name):
    target = getattr(operator, name)

    def method(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    method.__name__ = f"__r{name.strip('_')}__"
    return method


for _name in _BINARY + _COMPARE_AND_UNARY:
    setattr(Proxy, f"__{_name.strip('_')}__", _operator_method(_name))
for _name in _BINARY[:-2] + ("matmul",):
    setattr(Proxy, f"__r{_name.strip('_')}__", _reflected_method(_name))
Proxy.__hash__ = object.__hash__  # ``__eq__`` records a node; proxies still go in sets and dicts by identity


def find_proxy(args, kwargs):
    """The first Proxy in the (nested) arguments, or None."""
    found = []

    def look(a):
        if not found and isinstance(a, Proxy):
            found.append(a)
        return a
    map_aggregate(args, look)
    map_aggregate(kwargs, look)
    return found[0] if found else None
