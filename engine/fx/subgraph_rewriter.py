"""``replace_pattern``: find every occurrence of a pattern graph in a ``GraphModule`` and swap in a replacement
graph (torch.fx.subgraph_rewriter). Matching is torch's: the pattern's inputs match any value, its other nodes
must match op and target and arguments (literals by type and value), the matched nodes other than the ones the
pattern returns may not be used outside the match, and overlapping matches after the first are dropped."""
import copy
from dataclasses import dataclass, field
from typing import NamedTuple

from .graph import Graph
from .node import Node


class Match(NamedTuple):
    """One replaced occurrence: the pattern's anchor node and the map of pattern nodes to graph nodes."""
    anchor: Node
    nodes_map: dict


@dataclass
class ReplacedPatterns:
    """A ``Match`` plus the graph nodes the replacement added."""
    anchor: Node
    nodes_map: dict
    replacements: list


@dataclass
class InternalMatch:
    """A match being built: pattern node -> graph node, and the graph's values for the pattern's inputs/outputs."""
    anchors: list
    nodes_map: dict = field(default_factory=dict)
    placeholder_nodes: list = field(default_factory=list)
    returning_nodes: list = field(default_factory=list)

    def __copy__(self):
        return InternalMatch(self.anchors, dict(self.nodes_map), list(self.placeholder_nodes),
                             list(self.returning_nodes))


class SubgraphMatcher:
    """Finds the occurrences of ``pattern`` (a Graph) in a graph, anchored at the nodes the pattern returns."""

    def __init__(self, pattern, match_output=False, match_placeholder=False, remove_overlapping_matches=True,
                 ignore_literals=False):
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        for node in pattern.nodes:
            if node.op != "output" and not node.users:
                raise AssertionError("SubgraphMatcher cannot be initialized with an pattern with dead code")
        output_node = list(pattern.nodes)[-1]
        self.pattern_placeholder_nodes = [n for n in pattern.nodes if n.op == "placeholder"]
        self.pattern_returning_nodes = output_node.all_input_nodes
        if match_output:
            self.pattern_anchors = [output_node]
        else:
            self.pattern_anchors = [n for n in output_node.all_input_nodes if len(n.users) == 1]

    def _nodes_are_equal(self, pn, gn):
        if not self.match_placeholder and pn.op == "placeholder":
            return True
        if pn.op != gn.op:
            return False
        if pn.op in ("placeholder", "output"):
            return True
        if pn.op == "get_attr":
            return _attributes_match(pn, gn)
        return pn.target == gn.target

    def _match_literals(self, pn, gn, match):
        if isinstance(pn, Node) and not isinstance(gn, Node):
            if pn.op != "placeholder":
                return False
            if pn in match.nodes_map:
                return match.nodes_map[pn] == gn
            match.nodes_map[pn] = gn
            return True
        if isinstance(gn, Node):
            return False
        return type(gn) is type(pn) and gn == pn

    def _match_args(self, pargs, gargs, match):
        if len(pargs) != len(gargs):
            return False
        for pa, ga in zip(pargs, gargs):
            if isinstance(pa, Node) and isinstance(ga, Node):
                ok = self._match_nodes(pa, ga, match)
            elif isinstance(pa, (list, tuple)) and isinstance(ga, (list, tuple)):
                ok = self._match_args(pa, ga, match)
            else:
                ok = self._match_literals(pa, ga, match) or self.ignore_literals
            if not ok:
                return False
        return True

    def _match_nodes(self, pn, gn, match):
        if pn in match.nodes_map:
            return match.nodes_map[pn] is gn
        if any(v is gn for v in match.nodes_map.values()) or not self._nodes_are_equal(pn, gn):
            return False
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":  # a wildcard
            return True
        pargs = list(pn.args) + list(pn.kwargs.values())
        gargs = list(gn.args) + list(gn.kwargs.values())
        return self._match_args(pargs, gargs, match)

    def _is_contained(self, nodes_map):
        lookup = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in lookup.items():
            if pn in self.pattern_returning_nodes:
                continue
            if any(user not in lookup for user in gn.users):
                return False
        return True

    @staticmethod
    def _without_overlaps(matches):
        kept, taken = [], set()
        for match in matches:
            inner = [gn for pn, gn in match.nodes_map.items() if pn.op not in ("placeholder", "output")]
            if not any(gn in taken for gn in inner):
                kept.append(match)
                taken.update(inner)
        return kept

    def match(self, graph):
        """The ``InternalMatch``es of the pattern in ``graph``."""
        candidates = [(anchor, [n for n in graph.nodes if self._nodes_are_equal(anchor, n)])
                      for anchor in self.pattern_anchors]
        candidates = [(a, c) for a, c in candidates if c]
        matches = []

        def backtrack(index, match):
            if index == len(candidates):
                match.placeholder_nodes = [match.nodes_map[pn] for pn in self.pattern_placeholder_nodes]
                match.returning_nodes = [match.nodes_map[pn] for pn in self.pattern_returning_nodes]
                matches.append(match)
                return
            anchor, nodes = candidates[index]
            for node in nodes:
                attempt = copy.copy(match)
                if self._match_nodes(anchor, node, attempt):
                    backtrack(index + 1, attempt)

        if candidates:
            backtrack(0, InternalMatch(anchors=self.pattern_anchors))
        matches = [m for m in matches if self._is_contained(m.nodes_map)]
        if self.remove_overlapping_matches:
            matches = self._without_overlaps(matches)
        return matches


def _fetch(module, target):
    for atom in target.split("."):
        module = getattr(module, atom)
    return module


def _attributes_match(pn, gn):
    """get_attr nodes match when both read tensors (values may differ), as torch."""
    from ..tensor import Tensor
    pv = _fetch(pn.graph.owning_module, pn.target)
    gv = _fetch(gn.graph.owning_module, gn.target)
    if type(pv) is not type(gv):
        return False
    if isinstance(pv, Tensor):
        return isinstance(gv, Tensor)
    raise RuntimeError(f"Unsupported type {pv} when matching attributes")


def _graph_of(obj):
    from .graph_module import GraphModule
    from .tracer import symbolic_trace
    if isinstance(obj, GraphModule):
        return obj.graph
    if isinstance(obj, Graph):
        return obj
    return symbolic_trace(obj).graph


def _copy_missing_attributes(gm, replacement):
    """Install the submodules and attributes the replacement's nodes read that ``gm`` lacks."""
    from .graph_module import _copy_attr
    for node in gm.graph.nodes:
        if node.op in ("call_module", "get_attr"):
            try:
                _fetch(gm, node.target)
            except AttributeError:
                _copy_attr(replacement, gm, node.target)


def _replace_pattern(gm, pattern, replacement, match_filters=None, ignore_literals=False):
    graph = gm.graph
    pattern_graph = _graph_of(pattern)
    matcher = SubgraphMatcher(pattern_graph, ignore_literals=ignore_literals)
    matches = [m for m in matcher.match(graph)
               if all(f(m, graph, pattern_graph) for f in (match_filters or ()))]
    replacement_graph = _graph_of(replacement)
    placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    changed = {}  # graph node -> the node that replaced it (an earlier match's output)
    results = []
    for match in matches:
        if len(match.placeholder_nodes) != len(placeholders):
            raise AssertionError("the pattern and the replacement must have the same number of inputs")
        val_map = {}
        for rn, gn in zip(placeholders, match.placeholder_nodes):
            if isinstance(gn, Node) and gn in changed:
                new = changed[gn]
                match.placeholder_nodes[match.placeholder_nodes.index(gn)] = new
                for pn, v in match.nodes_map.items():
                    if v is gn:
                        match.nodes_map[pn] = new
                        break
                gn = new
            val_map[rn] = gn
        users = {u for n in match.returning_nodes for u in n.users}
        first_user = next(n for n in graph.nodes if n in users)
        with graph.inserting_before(first_user):
            copied = graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        added = [v for v in val_map.values() if not any(v is p for p in match.placeholder_nodes)]
        for gn, new in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(new)
            changed[gn] = new
        for pn in reversed(pattern_graph.nodes):
            if pn.op not in ("placeholder", "output"):
                graph.erase_node(match.nodes_map[pn])
        results.append(ReplacedPatterns(match.anchors[0], match.nodes_map, added))
    gm.recompile()
    from ..nn import Module
    if isinstance(replacement, Module):
        _copy_missing_attributes(gm, replacement)
    return results


def replace_pattern(gm, pattern, replacement):
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm.graph`` by ``replacement`` (callables,
    modules or graphs with the same inputs and outputs) and recompile ``gm``; returns the ``Match``es."""
    return [Match(r.anchor, r.nodes_map) for r in _replace_pattern(gm, pattern, replacement)]


def replace_pattern_with_filters(gm, pattern, replacement, match_filters=None, ignore_literals=False):
    """``replace_pattern`` keeping only matches every ``match_filters(match, graph, pattern_graph)`` accepts;
    with ``ignore_literals`` constants in the pattern match any constant. Returns ``ReplacedPatterns``."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals)
