"""``Graph``: the ordered list of ``Node``s of a traced program (torch.fx's ``Graph``), with node creation at an
insert point, erasure, dead-code elimination, checks and printing; ``codegen.py`` turns it into Python."""
import contextlib
import copy
import inspect
import warnings

from .naming import Namespace, target_to_str
from .node import Node, map_arg


class _NodeList:
    """``graph.nodes``: iterates a snapshot, so erasing nodes while iterating is safe; supports ``reversed``."""

    def __init__(self, nodes):
        self._nodes = nodes

    def __iter__(self):
        return iter(list(self._nodes))

    def __reversed__(self):
        return iter(self._nodes[::-1])

    def __len__(self):
        return len(self._nodes)

    def __contains__(self, node):
        return any(n is node for n in self._nodes)

    def __repr__(self):
        return repr(self._nodes)


def _attribute_exists(module, qualified_name):
    """Whether ``module`` has a submodule, parameter or buffer at ``qualified_name`` (torch's check of
    ``Graph.get_attr``, with its warning when the parent module is missing)."""
    from ..nn import Module
    from ..nn.parameter import Parameter
    path, _, name = qualified_name.rpartition(".")
    try:
        parent = module.get_submodule(path)
    except AttributeError:
        warnings.warn(f"Failed to fetch module {path}!")
        return False
    value = getattr(parent, name, None)
    return isinstance(value, (Module, Parameter)) or name in parent._buffers


def _check_target(module, node):
    """Raise torch's lint error unless the dotted target of get_attr / call_module ``node`` exists in
    ``module`` (and, for call_module, is a module)."""
    from ..nn import Module
    atoms = node.target.split(".")
    for i, atom in enumerate(atoms):
        found = getattr(module, atom, None)
        seen = ".".join(atoms[:i])
        if found is None:
            raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute {atom} of "
                               f"{seen}")
        if node.op == "call_module" and not isinstance(found, Module):
            raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen} does not reference an nn.Module")
        module = found


class Graph:
    """A program as a list of nodes: placeholders (inputs), get_attr / call_* operations, and one output."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._nodes = []
        self._root = Node(self, "", "root", "", (), {})  # what ``next`` / ``prev`` give past either end
        self._namespace = Namespace()
        self._insert_at = None  # None: at the end; (node, after): next to that node
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        from .codegen import CodeGen
        self._codegen = CodeGen()

    def set_codegen(self, codegen):
        """Use ``codegen`` (a ``CodeGen``) to turn this graph into Python."""
        self._codegen = codegen

    def process_inputs(self, *args):
        """The placeholder values for a call with ``args`` (the codegen's ``process_inputs``)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        """The caller's result for the output value ``out`` (the codegen's ``process_outputs``)."""
        return self._codegen.process_outputs(out)

    @property
    def nodes(self):
        """The nodes in program order."""
        return _NodeList(self._nodes)

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes of opcode ``op`` (and ``target``, which call_function requires), in graph order."""
        if op == "call_function" and target is None:
            raise AssertionError("target must not be None for call_function op")
        return [n for n in self._nodes if n.op == op and (target is None or n.target == target)]

    def output_node(self):
        """The graph's last node, which must be its output."""
        last = self._nodes[-1] if self._nodes else self._root
        if last.op != "output":
            raise AssertionError(f"Expected output node, got op={last.op}")
        return last

    # ---- creating nodes -------------------------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Make a node at the current insert point; its name comes from ``name`` or the target, made unique."""
        candidate = name if name is not None else target_to_str(target)
        node = Node(self, self._namespace.create_name(candidate, None), op, target, args or (), kwargs or {},
                    type_expr)
        self._insert(node)
        return node

    def _insert(self, node):
        if self._insert_at is None:
            self._nodes.append(node)
            return
        anchor, after = self._insert_at
        if anchor is None:  # inserting_before(None): the start of the graph
            self._nodes.insert(0, node)
        else:
            self._nodes.insert(self._index(anchor) + after, node)

    def _index(self, node):
        for i, n in enumerate(self._nodes):
            if n is node:
                return i
        raise RuntimeError(f"Node {node} is not in this graph")

    def _move(self, node, anchor, after):
        self._nodes.pop(self._index(node))
        if anchor is self._root:  # the graph is a ring through its root: after it is the start, before it the end
            self._nodes.insert(0 if after else len(self._nodes), node)
        else:
            self._nodes.insert(self._index(anchor) + after, node)

    @contextlib.contextmanager
    def _inserting(self, point):
        saved, self._insert_at = self._insert_at, point
        try:
            yield
        finally:
            self._insert_at = saved

    def inserting_before(self, n=None):
        """Context in which new nodes go just before ``n`` (the start of the graph when ``n`` is None)."""
        return self._inserting((None, False) if n is None else (n, False))

    def inserting_after(self, n=None):
        """Context in which each new node goes just after ``n`` (the end of the graph when ``n`` is None)."""
        return self._inserting(None if n is None else (n, True))

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        """An input of the program; ``default_value`` is its default."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        """Read attribute ``qualified_name`` (``layer1.0.conv1.weight``) of the owning module; warns, as torch,
        when the owning module has no submodule, parameter or buffer there."""
        if self.owning_module is not None and not _attribute_exists(self.owning_module, qualified_name):
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference in the owning "
                          "GraphModule! Call GraphModule.add_submodule to add the necessary submodule, "
                          "GraphModule.add_parameter to add the necessary Parameter, or "
                          "nn.Module.register_buffer to add the necessary buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        """Call the submodule at ``module_name`` (which the owning module, if any, must have)."""
        if self.owning_module is not None:
            self.owning_module.get_submodule(module_name)  # torch's AttributeError when it is missing
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        """Call method ``method_name`` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        """Call a free function (``operator.add``, ``engine.flatten``)."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        """The program's return value."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of ``node`` (from any graph) in this one; ``arg_transform`` maps its input nodes to ours."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copy = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copy.meta = dict(node.meta)
        return copy

    def graph_copy(self, g, val_map):
        """Copy every node of ``g`` but its output into this graph (``val_map`` maps old nodes to new; it is
        filled in; nodes already in it are not copied); returns the value the output of ``g`` referred to, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                return map_arg(node.args[0], lambda n: val_map[n])
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None):
        """A copy of the nodes (with their meta) and code generator, owned by no module (as torch)."""
        memo = memo if memo is not None else {}
        g = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        val_map = {}
        out = None
        for node in self._nodes:
            if node.op == "output":
                out = g.output(map_arg(node.args[0], lambda n: val_map[n]), type_expr=node.type)
                out.meta = copy.copy(node.meta)
            else:
                val_map[node] = g.node_copy(node, lambda n: val_map[n])
        g._codegen = copy.deepcopy(self._codegen, memo)
        memo[id(self)] = g
        return g

    # ---- removing nodes -------------------------------------------------------------------------------
    def erase_node(self, to_erase):
        """Remove a node nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               f"the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            raise RuntimeError(f"Node {to_erase} is already erased")
        self._nodes.pop(self._index(to_erase))
        to_erase._update_args_kwargs((), {})
        to_erase._erased = True

    def eliminate_dead_code(self, is_impure_node=None):
        """Erase the nodes whose values nobody uses (impure ones stay); returns whether any went."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not impure(node) and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    # ---- checks and printing ----------------------------------------------------------------------------
    def lint(self):
        """Check that nodes belong here, read only earlier nodes, have unique names, and (with an owning module)
        that get_attr / call_module targets exist."""
        seen, names = set(), set()
        for node in self._nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node.all_input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       "used as an argument! If you are copying nodes from another graph, make "
                                       f"sure to use ``arg_transform`` on node_copy() to remap values\n{self}")
                if id(arg) not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       f"Please check that Nodes in the graph are topologically ordered\n{self}")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen.add(id(node))
            names.add(node.name)
        if self.owning_module is not None:
            for node in self._nodes:
                if node.op in ("get_attr", "call_module"):
                    _check_target(self.owning_module, node)

    def python_code(self, root_module="self", verbose=False, include_stride=False, include_device=False):
        """The Python source of ``forward`` for this graph, and the globals it needs (``codegen.PythonCode``);
        ``verbose`` adds the comments and shape annotations of ``GraphModule.print_readable``."""
        from .codegen import generate
        return generate(self, root_module, verbose, include_stride, include_device)

    def __str__(self):
        # as torch's: the parentheses stay empty, the placeholders have lines of their own
        return "\n    ".join(["graph():"] + [n.format_node() for n in self._nodes])

    def print_tabular(self):
        """Print opcode, name, target, args and kwargs of each node as a table."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        rows += [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in self._nodes]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        rows.insert(1, ["-" * w for w in widths])
        print("\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows))
