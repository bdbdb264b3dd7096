"""``fuse``: fold each BatchNorm that directly follows a Conv1d/2d/3d or Linear into that layer's weights on a
traced eval-mode model (torch.fx.experimental.optimization.fuse), removing the BatchNorm call from the graph."""
import copy

from ...nn import BatchNorm1d, BatchNorm2d, BatchNorm3d, Conv1d, Conv2d, Conv3d, Linear
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from ..graph_module import GraphModule
from ..node import Node
from ..tracer import symbolic_trace

_PATTERNS = ((Conv1d, BatchNorm1d), (Conv2d, BatchNorm2d), (Conv3d, BatchNorm3d), (Linear, BatchNorm1d))


def matches_module_pattern(pattern, node, modules):
    """Whether ``node`` and its first argument are calls of modules of exactly the types in ``pattern``
    (first layer, then the node's own)."""
    if not node.args:
        return False
    for expected, current in zip(pattern, (node.args[0], node)):
        if not isinstance(current, Node) or current.op != "call_module" or not isinstance(current.target, str):
            return False
        if current.target not in modules or type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node, modules, new_module):
    """Install ``new_module`` at ``node``'s target (in ``modules`` and on its parent module)."""
    parent, _, name = node.target.rpartition(".")
    modules[node.target] = new_module
    setattr(modules[parent], name, new_module)


def fuse(model, inplace=False, no_trace=False):
    """A ``GraphModule`` of ``model`` (eval mode) with conv/linear + batch-norm pairs folded into one layer; the
    pair is kept when the layer's output has other users or the norm keeps no running statistics."""
    if not inplace:
        model = copy.deepcopy(model)
    fx_model = model if no_trace and isinstance(model, GraphModule) else symbolic_trace(model)
    modules = dict(fx_model.named_modules())
    new_graph = copy.deepcopy(fx_model.graph)
    for pattern in _PATTERNS:
        for node in new_graph.nodes:
            if not matches_module_pattern(pattern, node, modules) or len(node.args[0].users) > 1:
                continue
            first, bn = modules[node.args[0].target], modules[node.target]
            if not bn.track_running_stats:
                continue
            fused = fuse_conv_bn_eval(first, bn) if pattern[0] is not Linear else fuse_linear_bn_eval(first, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)
