"""``Interpreter`` runs a ``GraphModule`` node by node (each op a method a subclass may override);
``Transformer`` re-traces a graph through those methods into a new ``GraphModule``."""
import copy
import inspect

from .graph import Graph
from .node import map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer


class Interpreter:
    """Execute ``module.graph`` one node at a time: ``run`` -> ``run_node`` -> ``placeholder`` / ``get_attr`` /
    ``call_function`` / ``call_method`` / ``call_module`` / ``output``."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.garbage_collect_values = garbage_collect_values
        #: whether an error raised by a node gets the node (and where user code made it) appended to its message
        self.extra_traceback = True
        self.env = {}
        self.user_to_last_uses = {}
        if garbage_collect_values:
            last_user = {}
            for node in self.graph.nodes:
                for inp in node.all_input_nodes:
                    last_user[inp] = node
            for value, user in last_user.items():
                self.user_to_last_uses.setdefault(user, []).append(value)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on ``args``; returns what the output node returns."""
        self.env = dict(initial_env or {})
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:  # as torch: the node that failed, after the error's own message
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else msg
                    e.args = (f"{msg}\nOriginal traceback:\n{node.stack_trace}",) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            for dead in self.user_to_last_uses.get(node, ()):
                self.env.pop(dead, None)
            if node.op == "output":
                return self.graph.process_outputs(self.env[node]) if enable_io_processing else self.env[node]
        return None

    def boxed_run(self, args_list):
        """``run`` with the inputs in a list, which is emptied before running so that the inputs can be freed
        as soon as the graph is done with them."""
        placeholders = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(placeholders):
            detail = "extra arguments" if len(args_list) > len(placeholders) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(placeholders)} arguments for placeholders but "
                               f"received {len(args_list)} ({detail})")
        env = dict(zip(placeholders, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n):
        """Run one node on the values of its inputs."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!")

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    def fetch_attr(self, target):
        """The attribute of the module at dotted ``target``."""
        obj = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        """``n``'s args and kwargs with nodes replaced by their computed values."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(node):
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[node]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    """Records into a given graph; every module is a leaf."""

    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root
        self._tensor_attrs = {}

    def is_leaf_module(self, m, module_qualified_name):
        return True


class Transformer(Interpreter):
    """An Interpreter whose ops build a new graph: override ``call_function`` etc. to rewrite nodes, then
    ``transform()`` returns the new ``GraphModule``."""

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=True)
        self.new_graph = Graph()
        self.new_graph.set_codegen(copy.deepcopy(self.graph._codegen))
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        node = self.new_graph.placeholder(target, default_value=args[0] if args else inspect.Signature.empty)
        return Proxy(node, self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self):
        """Run the graph through this transformer and return the new ``GraphModule``."""
        from .graph_module import GraphModule
        result = self.run(enable_io_processing=False)
        strip = lambda a: a.node if isinstance(a, Proxy) else a  # noqa: E731
        self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)
