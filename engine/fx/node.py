"""``Node``: one operation of a ``Graph`` (torch.fx's ``Node``), and ``map_arg``/``map_aggregate`` over the nested
lists, tuples, dicts and slices its arguments are made of."""
import operator
import types

from .asserts import SIDE_EFFECTS
from .immutable_collections import immutable_dict, immutable_list
from .naming import target_to_str

LEGAL_OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of ``a``, rebuilding tuples (named ones too), lists, dicts and slices."""
    if isinstance(a, tuple):
        items = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return type(a)((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every ``Node`` in the argument structure ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def has_side_effect(fn):
    """Mark ``fn`` as having side effects: nodes calling it survive dead-code elimination. Returns ``fn`` (so it
    works as a decorator)."""
    SIDE_EFFECTS.add(fn)
    return fn


class Node:
    """An operation in a ``Graph``: ``op`` (placeholder, get_attr, call_function, call_method, call_module,
    output), its ``target``, ``args``/``kwargs`` (which may hold other nodes), the unique ``name`` of its value in
    generated code, and ``users``, the nodes that read it."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in LEGAL_OPS:
            raise ValueError(f"Unsupported node op {op!r}; expected one of {LEGAL_OPS[:-1]}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users = {}
        self.meta = {}
        self._input_nodes = {}
        self._args = ()
        self._kwargs = {}
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # ---- arguments and uses --------------------------------------------------------------------
    @property
    def args(self):
        """The positional arguments (a tuple; nodes inside stand for their values)."""
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        """The keyword arguments (a dict; nodes inside stand for their values)."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    def _update_args_kwargs(self, args, kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        collect = lambda n: self._input_nodes.setdefault(n)  # noqa: E731
        self._args = _freeze(map_arg(tuple(args), lambda n: (collect(n), n)[1]))
        self._kwargs = _freeze(map_arg(dict(kwargs or {}), lambda n: (collect(n), n)[1]))
        for new in self._input_nodes:
            new.users.setdefault(self)

    @property
    def all_input_nodes(self):
        """The distinct nodes among args and kwargs, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        """Set positional argument ``idx`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        """Insert ``arg`` into the positional arguments before index ``idx``."""
        if not 0 <= idx <= len(self._args):
            raise AssertionError(f"insert_args index must be between 0 and len(self.args), got {idx}")
        self.args = self._args[:idx] + (arg,) + self._args[idx:]

    def update_kwarg(self, key, arg):
        """Set keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input, new_input):
        """Make this node read ``new_input`` wherever it read ``old_input``."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *, propagate_meta=False):
        """Make every user (for which ``delete_user_cb`` is true) read ``replace_with`` instead of this node;
        returns the users changed."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), but "
                                   "replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    @property
    def stack_trace(self):
        """The user code that created this node (``meta["stack_trace"]``), recorded when the tracer's
        ``record_stack_traces`` is set; None otherwise."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    # ---- position in the graph ---------------------------------------------------------------------
    @property
    def next(self):
        """The node after this one; after the last node (and for an empty graph) the graph's root sentinel
        (op ``"root"``, name ``""``), as torch."""
        nodes, root = self.graph._nodes, self.graph._root
        if self is root:
            return nodes[0] if nodes else root
        i = nodes.index(self) + 1
        return nodes[i] if i < len(nodes) else root

    @property
    def prev(self):
        """The node before this one; before the first node the graph's root sentinel, as torch."""
        nodes, root = self.graph._nodes, self.graph._root
        if self is root:
            return nodes[-1] if nodes else root
        i = nodes.index(self)
        return nodes[i - 1] if i else root

    def prepend(self, x):
        """Move node ``x`` (of the same graph) to just before this one."""
        self.graph._move(x, self, after=False)

    def append(self, x):
        """Move node ``x`` (of the same graph) to just after this one."""
        self.graph._move(x, self, after=True)

    def is_impure(self):
        """Whether the node must stay although nothing uses it: placeholders, outputs, side-effecting calls."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            import engine
            return self.target in SIDE_EFFECTS or self.target is getattr(engine, "_assert", SIDE_EFFECTS)
        if self.op == "call_module" and self.graph.owning_module is not None:
            module = self.graph.owning_module.get_submodule(self.target)
            return bool(getattr(module, "_is_impure", False))
        return False

    # ---- printing -----------------------------------------------------------------------------------
    def format_node(self):
        """One line of the graph's printout, in torch's words:
        ``%name : [num_users=N] = op[target=...](args = (...), kwargs = {...})``, ``return <value>``."""
        typename = f"{type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}[target="
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}{self.target}]{default}"
        if self.op == "output":
            return f"return {self.args[0]}"
        if self.op == "get_attr":
            return f"{head}{self.target}]"
        return f"{head}{_pretty_target(self.target)}](args = {_format_arg(self._args)}, kwargs = " \
            f"{_format_arg(self._kwargs)})"

    def __repr__(self):
        return self.name


def _freeze(a):
    """``a`` with its lists and dicts (at any depth) made ``immutable_list`` / ``immutable_dict``, as torch."""
    if isinstance(a, tuple):
        items = tuple(_freeze(e) for e in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return immutable_list(_freeze(e) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, _freeze(v)) for k, v in a.items())
    return a


def type_repr(t):
    """How printouts name a node's type annotation: a builtin class by its name, another class by its dotted
    path, a function by its name."""
    if isinstance(t, type):
        return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    if t is Ellipsis:
        return "..."
    if isinstance(t, types.FunctionType):
        return t.__name__
    return repr(t)


def _pretty_target(target):
    """``operator.add``, ``builtins.getattr``, ``engine.flatten``-style names of call targets in printouts."""
    if isinstance(target, str):
        return target
    from .codegen import PUBLIC_PATHS
    if id(target) in PUBLIC_PATHS:
        return PUBLIC_PATHS[id(target)]
    name = getattr(target, "__name__", None)
    module = getattr(target, "__module__", None)
    if name is not None and module == "builtins":
        return f"builtins.{name}"
    if name is not None and getattr(operator, name, None) is target:
        return f"operator.{name}"
    qualname = getattr(target, "__qualname__", name)
    return f"{module}.{qualname}" if module and qualname else target_to_str(target)


def _format_arg(arg):
    """An argument as torch's printouts show it: nodes as ``%name``, containers element by element, other values
    by ``str``."""
    if isinstance(arg, Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    return str(arg)
