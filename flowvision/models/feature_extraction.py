"""torchvision's ``models.feature_extraction`` on ``engine.fx``: ``get_graph_node_names`` lists the nodes of a
model's traced graph by module path (``layer1.0.conv1``, ``layer1.0.add``, ``layer1.0.relu_1``), and
``create_feature_extractor`` rewrites the graph to return the requested nodes as a dict, dropping what comes after
them. Train and eval mode are traced separately and the returned module switches graph with ``train()``/``eval()``.
Since the zoo's module names are torchvision's, the same return-node names work on both."""
import inspect
import math
import re
import warnings
from collections import OrderedDict
from itertools import chain

from engine import fx
from engine.fx.graph_module import _copy_attr
from engine.nn import Module

from .. import ops

__all__ = ["create_feature_extractor", "get_graph_node_names"]


class LeafModuleAwareTracer(fx.Tracer):
    """A tracer that also treats the module classes in ``leaf_modules`` as leaves (one call_module node each)."""

    def __init__(self, *args, leaf_modules=(), **kwargs):
        self.leaf_modules = tuple(leaf_modules)
        super().__init__(*args, **kwargs)

    def is_leaf_module(self, m, module_qualname):
        return isinstance(m, self.leaf_modules) or super().is_leaf_module(m, module_qualname)


class NodePathTracer(LeafModuleAwareTracer):
    """Records, for every node, its name as a path through the module hierarchy (``node_to_qualname``, in
    execution order): the module path for a leaf-module call, else the path of the module whose ``forward`` made
    the call plus the node's name, with ``_1``, ``_2``... counting repeats within that module."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.current_module_qualname = ""
        self.node_to_qualname = OrderedDict()

    def call_module(self, m, forward, args, kwargs):
        outer = self.current_module_qualname
        try:
            qualname = self.path_of_module(m)
            self.current_module_qualname = qualname
            if not self.is_leaf_module(m, qualname):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", qualname, args, kwargs)
        finally:
            self.current_module_qualname = outer

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, *rest):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_qualname[proxy.node] = self._get_node_qualname(self.current_module_qualname, proxy.node)
        return proxy

    def _get_node_qualname(self, module_qualname, node):
        qualname = module_qualname
        if node.op != "call_module":
            qualname = f"{qualname}.{node}" if qualname else str(node)
        # the graph numbers repeats across the whole model; number them within the module instead
        if re.match(r".+_[0-9]+$", qualname) is not None:
            qualname = qualname.rsplit("_", 1)[0]
        for existing in reversed(self.node_to_qualname.values()):
            if re.match(rf"{qualname}(_[0-9]+)?$", existing) is not None:
                suffix = existing.replace(qualname, "")
                qualname += f"_{int(suffix[1:]) + 1}" if suffix else "_1"
                break
        return qualname


def _is_subseq(x, y):
    """Whether ``y`` is a subsequence of ``x``."""
    it = iter(x)
    return all(any(a == b for a in it) for b in y)


def _warn_graph_differences(train_tracer, eval_tracer):
    train_nodes = list(train_tracer.node_to_qualname.values())
    eval_nodes = list(eval_tracer.node_to_qualname.values())
    if train_nodes == eval_nodes:
        return
    suggestion = ("When choosing nodes for feature extraction, you may need to specify output nodes for train and "
                  "eval mode separately.")
    if _is_subseq(train_nodes, eval_nodes):
        msg = "NOTE: The nodes obtained by tracing the model in eval mode are a subsequence of those obtained in " \
              "train mode. "
    elif _is_subseq(eval_nodes, train_nodes):
        msg = "NOTE: The nodes obtained by tracing the model in train mode are a subsequence of those obtained in " \
              "eval mode. "
    else:
        msg = "The nodes obtained by tracing the model in train mode are different to those obtained in eval mode. "
    warnings.warn(msg + suggestion)


def _get_leaf_modules_for_ops():
    """The module classes of ``flowvision.ops`` (Conv2dNormActivation, SqueezeExcitation, StochasticDepth...):
    leaves by default, as torchvision's ops are."""
    return [obj for _, obj in inspect.getmembers(ops) if inspect.isclass(obj) and issubclass(obj, Module)]


def _set_default_tracer_kwargs(tracer_kwargs):
    """``tracer_kwargs`` with math and flowvision.ops autowrapped and the ops' modules as leaves added."""
    result = {} if tracer_kwargs is None else tracer_kwargs
    default_autowrap = (math, ops)
    default_leaves = _get_leaf_modules_for_ops()
    result["autowrap_modules"] = (tuple(set(tuple(result["autowrap_modules"]) + default_autowrap))
                                  if "autowrap_modules" in result else default_autowrap)
    result["leaf_modules"] = (list(set(list(result["leaf_modules"]) + default_leaves))
                              if "leaf_modules" in result else default_leaves)
    return result


def get_graph_node_names(model, tracer_kwargs=None, suppress_diff_warning=False, concrete_args=None):
    """The node names of ``model``'s graph in execution order, traced in train mode and in eval mode: the names
    ``create_feature_extractor`` accepts. Returns ``(train_nodes, eval_nodes)``."""
    tracer_kwargs = _set_default_tracer_kwargs(tracer_kwargs)
    was_training = model.training
    train_tracer = NodePathTracer(**tracer_kwargs)
    train_tracer.trace(model.train(), concrete_args=concrete_args)
    eval_tracer = NodePathTracer(**tracer_kwargs)
    eval_tracer.trace(model.eval(), concrete_args=concrete_args)
    if not suppress_diff_warning:
        _warn_graph_differences(train_tracer, eval_tracer)
    model.train(was_training)
    return list(train_tracer.node_to_qualname.values()), list(eval_tracer.node_to_qualname.values())


class DualGraphModule(fx.GraphModule):
    """A GraphModule with a train graph and an eval graph; ``train(mode)`` switches between them. It holds the
    submodules and attributes either graph uses."""

    def __init__(self, root, train_graph, eval_graph, class_name="GraphModule"):
        Module.__init__(self)
        type(self).__name__ = type(self).__qualname__ = class_name
        self.train_graph = train_graph
        self.eval_graph = eval_graph
        for node in chain(train_graph.nodes, eval_graph.nodes):
            if node.op in ("get_attr", "call_module"):
                if not isinstance(node.target, str):
                    raise TypeError(f"node.target should be of type str instead of {type(node.target)}")
                _copy_attr(root, self, node.target)
        self.meta = {}
        Module.train(self)
        self.graph = train_graph
        if eval_graph._tracer_cls is not train_graph._tracer_cls:
            raise TypeError(f"Train mode and eval mode should use the same tracer class. Instead got "
                            f"{eval_graph._tracer_cls} for eval vs {train_graph._tracer_cls} for train")
        self._tracer_cls = train_graph._tracer_cls

    def train(self, mode=True):
        if mode and not self.training:
            self.graph = self.train_graph
        elif not mode and self.training:
            self.graph = self.eval_graph
        return super().train(mode=mode)

    def __deepcopy__(self, memo):
        import copy
        memo[id(self)] = None  # the graphs' owning_module: the copy sets its own
        state = copy.deepcopy(self.__dict__, memo)
        holder = Module()
        object.__setattr__(holder, "__dict__", state)
        res = type(self).__mro__[1](holder, state["train_graph"], state["eval_graph"], type(self).__name__)
        res.train(self.training)
        return res


def _to_strdict(nodes):
    if isinstance(nodes, list):
        return {str(n): str(n) for n in nodes}
    return {str(k): str(v) for k, v in nodes.items()}


def create_feature_extractor(model, return_nodes=None, train_return_nodes=None, eval_return_nodes=None,
                             tracer_kwargs=None, suppress_diff_warning=False, concrete_args=None):
    """A GraphModule whose forward returns ``{output name: value}`` for the requested nodes of ``model``'s graph
    (names as ``get_graph_node_names`` gives them, or a module-path prefix of them such as ``layer2``: the last
    node under it); nodes no output needs are removed with their parameters. ``return_nodes`` is a list of names
    or a dict name -> output name; ``train_return_nodes`` / ``eval_return_nodes`` choose per mode."""
    tracer_kwargs = _set_default_tracer_kwargs(tracer_kwargs)
    was_training = model.training
    if all(arg is None for arg in (return_nodes, train_return_nodes, eval_return_nodes)):
        raise ValueError("Either `return_nodes` or `train_return_nodes` and `eval_return_nodes` together, should be "
                         "specified")
    if (train_return_nodes is None) ^ (eval_return_nodes is None):
        raise ValueError("If any of `train_return_nodes` and `eval_return_nodes` are specified, then both should be "
                         "specified")
    if not ((return_nodes is None) ^ (train_return_nodes is None)):
        raise ValueError("If `train_return_nodes` and `eval_return_nodes` are specified, then both should be "
                         "specified")
    if return_nodes is not None:
        train_return_nodes = eval_return_nodes = return_nodes
    requested = {"train": _to_strdict(train_return_nodes), "eval": _to_strdict(eval_return_nodes)}
    tracers, graphs = {}, {}
    name = type(model).__name__ if isinstance(model, Module) else model.__name__
    for mode in ("train", "eval"):
        model.train(mode == "train")
        tracer = NodePathTracer(**tracer_kwargs)
        graph = tracer.trace(model, concrete_args=concrete_args)
        graph_module = fx.GraphModule(tracer.root, graph, name)
        _select_outputs(graph_module.graph, tracer.node_to_qualname, requested[mode])
        graph_module.graph.eliminate_dead_code()
        graph_module.recompile()
        tracers[mode], graphs[mode] = tracer, graph
    if not suppress_diff_warning:
        _warn_graph_differences(tracers["train"], tracers["eval"])
    graph_module = DualGraphModule(model, graphs["train"], graphs["eval"], class_name=name)
    model.train(was_training)
    graph_module.train(was_training)
    return graph_module


def _select_outputs(graph, node_to_qualname, return_nodes):
    """Replace ``graph``'s output by a dict of the nodes ``return_nodes`` names (the last node under each)."""
    available = list(node_to_qualname.values())
    if len(set(available)) != len(available):
        raise ValueError("There are duplicate nodes! Please raise an issue with flowvision")
    for query in return_nodes:
        if not any(re.match(rf"^{query}(\.|$)", n) is not None for n in available):
            raise ValueError(f"node: '{query}' is not present in model. Hint: use `get_graph_node_names` to make "
                             "sure the `return_nodes` you specified are present. It may even be that you need to "
                             "specify `train_return_nodes` and `eval_return_nodes` separately.")
    outputs = [n for n in reversed(graph.nodes) if n.op == "output"]
    if not outputs:
        raise ValueError("No output nodes found in graph_module.graph.nodes")
    for n in outputs:
        graph.erase_node(n)
    nodes = list(graph.nodes)
    pending = dict(return_nodes)
    found = OrderedDict()
    for n in reversed(nodes):
        qualname = node_to_qualname.get(n)
        if qualname is None:  # e.g. a tensor constant: never a feature
            continue
        for query in pending:
            depth = query.count(".")
            if ".".join(qualname.split(".")[:depth + 1]) == query:
                found[pending.pop(query)] = n
                break
    with graph.inserting_after(nodes[-1]):
        graph.output(OrderedDict(reversed(list(found.items()))))
