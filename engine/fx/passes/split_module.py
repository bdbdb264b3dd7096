"""``split_module``: cut a traced module into submodules ``submod_<p>``, one per partition that
``split_callback(node)`` assigns, and a base module calling them in dependency order (torch.fx.passes'
``split_module``; the autocast / grad-mode region handling of torch is not needed by engine graphs)."""
import inspect

from ..graph import Graph
from ..graph_module import GraphModule
from ..node import map_arg
from ..proxy import Proxy


class Partition:
    """The nodes of one partition, the values it reads from outside and the ones it hands on."""

    def __init__(self, name):
        self.name = name
        self.submod_name = f"submod_{name}"
        self.node_names = []
        self.inputs = {}
        self.outputs = {}
        self.dependencies = {}
        self.dependents = {}
        self.graph = Graph()
        self.environment = {}
        self.targets = {}


def _fetch(module, target):
    for atom in target.split("."):
        if not hasattr(module, atom):
            raise AttributeError(f"Operator target {target} not found!")
        module = getattr(module, atom)
    return module


def _partition(m, split_callback):
    """Assign every call node to its partition and record which values cross partitions."""
    partitions, orig_nodes = {}, {}

    def cross_use(def_node, use_node):
        defined = getattr(def_node, "_fx_partition", None)
        used = getattr(use_node, "_fx_partition", None)
        if defined == used:
            return
        if defined is not None:
            partitions[defined].outputs.setdefault(def_node.name)
            if used is not None:
                partitions[defined].dependents.setdefault(used)
        if used is not None:
            partitions[used].inputs.setdefault(def_node.name)
            if defined is not None:
                partitions[used].dependencies.setdefault(defined)

    for node in m.graph.nodes:
        orig_nodes[node.name] = node
        if node.op in ("placeholder", "get_attr"):
            continue
        if node.op == "output":
            map_arg(node.args[0], lambda n: cross_use(n, None))
            continue
        name = str(split_callback(node))
        partitions.setdefault(name, Partition(name)).node_names.append(node.name)
        node._fx_partition = name
        map_arg(node.args, lambda n: cross_use(n, node))
        map_arg(node.kwargs, lambda n: cross_use(n, node))
    return partitions, orig_nodes


def _topological_order(partitions):
    ready = [name for name, p in partitions.items() if not p.dependencies]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for dependent in partitions[name].dependents:
            partitions[dependent].dependencies.pop(name)
            if not partitions[dependent].dependencies:
                ready.append(dependent)
    if len(order) != len(partitions):
        raise RuntimeError("cycle exists between partitions!")
    return order


def _fill_partitions(m, partitions, order, orig_nodes, qualname_map, keep_original_node_name):
    from ...nn import Module
    for name in order:  # inputs: placeholders, except submodules read by get_attr
        partition = partitions[name]
        new_inputs = {}
        for inp in partition.inputs:
            orig = orig_nodes[inp]
            if orig.op == "get_attr" and isinstance(_fetch(m, orig.target), Module):
                placeholder = partition.graph.get_attr(orig.target)
                partition.targets[orig.target] = _fetch(m, orig.target)
            else:
                placeholder = partition.graph.placeholder(inp, type_expr=orig.type)
                new_inputs[inp] = None
            placeholder.meta = dict(orig.meta)
            partition.environment[orig] = placeholder
        partition.inputs = new_inputs
    for node in m.graph.nodes:
        if not hasattr(node, "_fx_partition"):
            continue
        partition = partitions[node._fx_partition]
        env = partition.environment
        args = map_arg(node.args, lambda n: env[n])
        kwargs = map_arg(node.kwargs, lambda n: env[n])
        target = node.target
        if node.op in ("call_module", "get_attr"):
            target = "_".join(node.target.split("."))
            partition.targets[target] = _fetch(m, node.target)
            if qualname_map is not None:
                qualname_map[f"{partition.submod_name}.{target}"] = node.target
        new = partition.graph.create_node(node.op, target, args, kwargs, node.name if keep_original_node_name
                                          else None, node.type)
        new.meta = dict(node.meta)
        env[node] = new


def split_module(m, root_m, split_callback, qualname_map=None, keep_original_order=False,
                 keep_original_node_name=False):
    """A ``GraphModule`` calling ``submod_<p>`` for each partition ``p`` (the partition id
    ``split_callback(node)`` gives each call node), in dependency order, or in the order partitions first
    appear with ``keep_original_order``; ``qualname_map`` is filled with new -> old submodule names."""
    partitions, orig_nodes = _partition(m, split_callback)
    first_seen = list(partitions)
    order = _topological_order(partitions)
    _fill_partitions(m, partitions, order, orig_nodes, qualname_map, keep_original_node_name)
    base_env, base_attrs, base = {}, {}, Graph()
    for node in m.graph.nodes:
        if node.op == "placeholder":
            default = node.args[0] if node.args else inspect.Signature.empty
            base_env[node.name] = base.placeholder(node.target, type_expr=node.type, default_value=default)
            base_env[node.name].meta = dict(node.meta)
        elif node.op == "get_attr":
            base_env[node.name] = base.get_attr(node.target)
            base_env[node.name].meta = dict(node.meta)
            base_attrs[node.target] = _fetch(m, node.target)
    for name in (first_seen if keep_original_order else order):
        partition = partitions[name]
        outputs = tuple(partition.environment[orig_nodes[n]] for n in partition.outputs)
        partition.graph.output(outputs[0] if len(outputs) == 1 else outputs)
        base_attrs[partition.submod_name] = GraphModule(partition.targets, partition.graph)
        call = base.call_module(partition.submod_name, tuple(base_env[n] for n in partition.inputs))
        if len(partition.outputs) > 1:
            proxy = Proxy(call)
            for i, out_name in enumerate(partition.outputs):
                base_env[out_name] = proxy[i].node
        elif partition.outputs:
            base_env[next(iter(partition.outputs))] = call
    for node in m.graph.nodes:
        if node.op == "output":
            base.output(map_arg(node.args[0], lambda n: base_env[n.name]))
    return GraphModule(base_attrs, base)
