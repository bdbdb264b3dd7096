"""engine.fx subgraph rewriting against torch.fx on the same module (matches, the resulting graph's node names,
ops and targets, outputs; filters; a node leaking out of a match) and GraphModule pickling / deepcopy round trips
(structured ``PH`` inputs included)."""
import copy
import pickle

import numpy as np
import pytest
import torch
import torch.fx
import torch.fx.subgraph_rewriter
from fx_nets import net

import engine
import engine.fx
import engine.fx.subgraph_rewriter
from engine.fx import PH


def rewrite_case(lib):
    class M(lib.nn.Module):
        def forward(self, x, w1, w2):
            a = lib.relu(x + w1) * 2
            b = lib.relu(a + w2) * 2
            c = lib.relu(x + w2) * 3  # literal differs: no match
            return b.sum() + a.mean() + c.mean()

    def pattern(x, y):
        return lib.relu(x + y) * 2

    def replacement(x, y):
        return lib.sigmoid(x - y)
    return M(), pattern, replacement


def describe(gm, matches):
    found = [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items())) for m in matches]
    return found, [(n.name, n.op, n.target if isinstance(n.target, str) else n.target.__name__)
                   for n in gm.graph.nodes]


def test_replace_pattern_matches_torch():
    tm, tp, tr = rewrite_case(torch)
    em, ep, er = rewrite_case(engine)
    tg, eg = torch.fx.symbolic_trace(tm), engine.fx.symbolic_trace(em)
    tmatches = torch.fx.subgraph_rewriter.replace_pattern(tg, tp, tr)
    ematches = engine.fx.subgraph_rewriter.replace_pattern(eg, ep, er)
    assert describe(tg, tmatches) == describe(eg, ematches)
    assert len(ematches) == 2 and isinstance(ematches[0], engine.fx.subgraph_rewriter.Match)
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((3, 5)).astype(np.float32) for _ in range(3)]
    np.testing.assert_allclose(eg(*map(engine.tensor, xs)).numpy(), tg(*map(torch.tensor, xs)).numpy(), rtol=1e-5)


def test_replace_pattern_leaking_node_and_filters():
    """A matched inner node used outside the match blocks it; filters drop matches."""
    def case(lib):
        class M(lib.nn.Module):
            def forward(self, x, y):
                s = x + y
                return lib.relu(s) * 2 + s
        return M()

    def pattern(lib):
        return lambda x, y: lib.relu(x + y) * 2
    tg, eg = torch.fx.symbolic_trace(case(torch)), engine.fx.symbolic_trace(case(engine))
    assert torch.fx.subgraph_rewriter.replace_pattern(tg, pattern(torch), lambda x, y: x) == []
    assert engine.fx.subgraph_rewriter.replace_pattern(eg, pattern(engine), lambda x, y: x) == []
    em, ep, er = rewrite_case(engine)
    eg = engine.fx.symbolic_trace(em)
    done = engine.fx.subgraph_rewriter.replace_pattern_with_filters(
        eg, ep, er, [lambda m, g, p: m.placeholder_nodes[1].name == "w2"])
    assert [r.nodes_map[r.anchor].name for r in done] == ["mul_1"]
    assert [n.name for n in done[0].replacements] == ["sub", "sigmoid"]


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_graph_module_round_trip(how):
    em = net(engine).eval()
    gm = engine.fx.symbolic_trace(em)
    back = pickle.loads(pickle.dumps(gm)) if how == "pickle" else copy.deepcopy(gm)
    x = engine.randn(2, 3, 6, 5)
    assert type(back).__name__ == "Net" and not back.training
    assert back.state_dict().keys() == gm.state_dict().keys()
    np.testing.assert_array_equal(back(x)[0].detach().numpy(), gm(x)[0].detach().numpy())
    assert [n.op for n in back.graph.nodes] == [n.op for n in gm.graph.nodes]


def test_engine_save_still_refuses_graph_modules(tmp_path):
    gm = engine.fx.symbolic_trace(net(engine))
    with pytest.raises(TypeError, match="cannot write the checkpoint"):
        engine.save(gm, tmp_path / "gm.pt")


def test_pickle_keeps_structured_inputs_and_their_checks():
    def f(x, d):
        return x + d["a"] * d["b"]
    gm = engine.fx.symbolic_trace(f, concrete_args={"d": {"a": PH, "b": 3}})
    back = pickle.loads(pickle.dumps(gm))
    x, a = engine.randn(4), engine.randn(4)
    np.testing.assert_array_equal(back(x, {"a": a, "b": 3}).numpy(), gm(x, {"a": a, "b": 3}).numpy())
    with pytest.raises(AssertionError, match="d has been specialized to have value 3"):
        back(x, {"a": a, "b": 4})


def _plain(x, y):
    return engine.relu(x + y)


def _dead_code_pattern():
    graph = engine.fx.Graph()
    x = graph.placeholder("x")
    graph.call_function(engine.relu, (x,))
    graph.output(x)
    return graph


class _ListHolder(engine.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = [1, 2]

    def forward(self, x):
        return x


def _attribute_graph_module():
    holder = _ListHolder()
    graph = engine.fx.Graph(owning_module=holder)
    graph.output(graph.call_function(engine.relu, (graph.get_attr("table"),)))
    return engine.fx.GraphModule(holder, graph)


@pytest.mark.parametrize("call, error, message", [
    (lambda: engine.fx.subgraph_rewriter.replace_pattern(engine.fx.symbolic_trace(_plain), _dead_code_pattern(),
                                                         lambda x: x),
     AssertionError, "SubgraphMatcher cannot be initialized with an pattern with dead code"),
    (lambda: engine.fx.subgraph_rewriter.replace_pattern(engine.fx.symbolic_trace(_plain), _plain, lambda x: x),
     AssertionError, "the pattern and the replacement must have the same number of inputs"),
    (lambda: engine.fx.subgraph_rewriter.replace_pattern(_attribute_graph_module(), _attribute_graph_module(),
                                                         _attribute_graph_module()),
     RuntimeError, r"Unsupported type \[1, 2\] when matching attributes"),
])
def test_rewrite_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
