"""engine.fx against torch.fx: the same module written for both libraries traces to the same node names, ops and
targets; the generated code gives torch's values and gradients; graph editing, Interpreter/Transformer,
concrete_args, wrap/autowrap and the errors of control flow on traced values. Also the cheap parts of
flowvision.models.feature_extraction (small modules: names, errors, the train/eval warning)."""
import copy
import math
import operator
import re
import warnings

import numpy as np
import pytest
import torch
import torch.fx
from op_check import check_op

import engine
import engine.fx
from flowvision.models import feature_extraction as ffe
from torchvision.models import feature_extraction as tfe


def scaled(x, k):
    """A module-level function both libraries record as one call instead of tracing through it."""
    return x * k


engine.fx.wrap("scaled")
torch.fx.wrap("scaled")


def build(lib):
    """The same network in torch or engine: leaf and traced-through modules, operators, functional calls, methods,
    shape reads, getitem, parameters of the root and of a leaf, a buffer, a tensor constant, math autowrap."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1)
            self.bn = nn.BatchNorm2d(c)
            self.scale = nn.Parameter(lib.full((c, 1, 1), 0.5))

        def forward(self, x):
            y = F.relu(self.bn(self.conv(x)))
            y = y * self.scale
            y += x
            return lib.relu(y)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
            self.blocks = nn.ModuleList([Block(4), Block(4)])
            self.fc = nn.Linear(4, 5)
            self.register_buffer("offset", lib.arange(5, dtype=lib.float32))

        def forward(self, x):
            x = self.stem(x)
            for block in self.blocks:
                x = block(x)
            n, c = x.shape[0], x.size(1)
            h, w = x.shape[2:]
            x = x.mean((2, 3)).view(n, c) * math.sqrt(h * w)
            y = self.fc(x) + self.offset + lib.ones(5)
            z = lib.cat([y, -y[:, :2]], dim=1)
            z = scaled(z / 2 - 1, 3)
            z = lib.flatten(z.unsqueeze(-1), 1)
            g = self.fc.weight.t() @ self.fc.weight
            return z.softmax(dim=-1), g.sum() + 2 ** y, x.max(dim=1)[0], 1 - F.gelu(z)

    return Net()


def _pair(seed=0):
    """The engine module and the torch module with the same weights."""
    torch.manual_seed(seed)
    theirs = build(torch)
    ours = build(engine)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _summary(gm):
    """(op, name, target name) of every node."""
    def target(t):
        return t if isinstance(t, str) else t.__name__
    return [(n.op, n.name, target(n.target)) for n in gm.graph.nodes]


def test_node_names_ops_and_targets_match_torch_fx():
    ours, theirs = _pair()
    assert _summary(engine.fx.symbolic_trace(ours)) == _summary(torch.fx.symbolic_trace(theirs))


def test_generated_code_gives_torch_values_and_gradients():
    ours, theirs = _pair(1)
    gm, tgm = engine.fx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 9)).astype(np.float32)
    check_op(gm, tgm, [x], rtol=1e-4)
    assert list(gm.state_dict()) == list(tgm.state_dict())
    assert "def forward(self, x):" in gm.code and "engine.flatten(" in gm.code


def test_the_traced_module_runs_as_the_original_and_on_cuda(cuda):
    class Small(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = engine.nn.Linear(3, 4)

        def forward(self, x):
            return engine.tanh(self.lin(x)).sum(-1) * x.shape[-1]

    torch.manual_seed(0)
    tlin = torch.nn.Linear(3, 4)
    model = Small()
    model.lin.load_state_dict({k: v.detach().numpy() for k, v in tlin.state_dict().items()})
    gm = engine.fx.symbolic_trace(model).to("cuda")
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    check_op(gm, lambda t: torch.tanh(tlin(t)).sum(-1) * 3, [x], device="cuda")


def test_control_flow_on_a_traced_value_raises_trace_error():
    class Branchy(engine.nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    with pytest.raises(engine.fx.TraceError, match="symbolically traced variables cannot be used as inputs to "
                                                   "control flow"):
        engine.fx.symbolic_trace(Branchy())


def test_shape_checks_through_assert_trace_as_nodes_as_torchs():
    """``torch._assert`` instead of an ``if``: the check is recorded (and kept), the traced module still raises."""
    def ours(x):
        engine._assert(x.shape[1] == 3, "three channels")
        return x + 1

    def theirs(x):
        torch._assert(x.shape[1] == 3, "three channels")
        return x + 1

    gm = engine.fx.symbolic_trace(ours)
    assert [n.name for n in gm.graph.nodes] == [n.name for n in torch.fx.symbolic_trace(theirs).graph.nodes]
    assert gm(engine.ones(2, 3)).tolist() == [[2.0] * 3] * 2
    with pytest.raises(AssertionError, match="three channels"):
        gm(engine.ones(2, 4))


def test_iterating_or_len_of_a_traced_value_raises():
    with pytest.raises(engine.fx.TraceError, match="Proxy object cannot be iterated"):
        engine.fx.symbolic_trace(lambda x: [t for t in x])
    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing by default"):
        engine.fx.symbolic_trace(lambda x: len(x))


def test_tracing_restores_everything_it_patched():
    flatten, call, add = engine.flatten, engine.nn.Module.__call__, engine.Tensor.__add__
    with pytest.raises(engine.fx.TraceError):
        engine.fx.symbolic_trace(lambda x: engine.flatten(x) if x.sum() else x)
    assert engine.flatten is flatten and engine.nn.Module.__call__ is call and engine.Tensor.__add__ is add


def test_concrete_args_specialize_the_graph_as_torch():
    def fn(lib):
        def f(x, flag=True, bias=None):
            if flag:
                x = x * 2
            return x if bias is None else x + bias
        return f

    gm = engine.fx.symbolic_trace(fn(engine), concrete_args={"flag": False, "bias": None})
    tgm = torch.fx.symbolic_trace(fn(torch), concrete_args={"flag": False, "bias": None})
    assert [(n.op, n.name) for n in gm.graph.nodes] == [(n.op, n.name) for n in tgm.graph.nodes]
    x = engine.ones(3)
    assert np.array_equal(gm(x, False, None).numpy(), np.ones(3, np.float32))
    with pytest.raises(AssertionError, match="flag has been specialized to have value False but got another "
                                             "value"):
        gm(x, True, None)
    with pytest.raises(AssertionError, match="bias has been specialized to have value None but got another value"):
        gm(x, False, x)


def test_interpreter_and_transformer():
    ours, _ = _pair(2)
    gm = engine.fx.symbolic_trace(ours)
    x = engine.randn(2, 3, 6, 6)
    expected = gm(x)
    got = engine.fx.Interpreter(gm).run(x)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-6)

    class AddToMul(engine.fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(operator.mul if target is operator.add else target, args, kwargs)

    def f(a, b):
        return engine.relu(a + b)
    new = AddToMul(engine.fx.symbolic_trace(f)).transform()
    a, b = engine.randn(4), engine.randn(4)
    np.testing.assert_array_equal(new(a, b).numpy(), engine.relu(a * b).numpy())
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter b, but one was not passed "
                                           "in!"):
        engine.fx.Interpreter(engine.fx.symbolic_trace(f)).run(a)


def _edit(fx):
    """The same hand-made graph in torch.fx or engine.fx."""
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.add, (x, 1))
    out = g.output(y)
    with g.inserting_after(x):
        g.call_function(operator.mul, (x, 2))
        g.call_function(operator.mul, (x, 3))
    with g.inserting_before(None):
        g.placeholder("z")
    with g.inserting_before(out):
        m = g.call_function(max, (y, 0))
        g.create_node("call_module", "layer1.0.conv1", (m,))
        g.get_attr("fc.weight")
        g.call_method("sum", (m,))
        g.call_function(getattr, (m, "shape"))
    return g


def test_graph_building_and_editing_as_torch():
    ours, theirs = _edit(engine.fx), _edit(torch.fx)
    assert [(n.op, n.name) for n in ours.nodes] == [(n.op, n.name) for n in theirs.nodes]
    y = next(n for n in ours.nodes if n.name == "add")
    with pytest.raises(RuntimeError, match="Tried to erase Node add but it still had 2 users in the graph"):
        ours.erase_node(y)
    m = next(n for n in ours.nodes if n.name == "max_1")
    assert m.all_input_nodes == [y] and set(y.users) == {m, ours._nodes[-1]}
    with ours.inserting_after(y):
        new = ours.call_function(operator.neg, (y,))
    users = list(m.users)
    assert m.replace_all_uses_with(new) == users and not m.users and all(new in u.all_input_nodes for u in users)
    assert ours.eliminate_dead_code()
    assert [n.name for n in ours.nodes] == ["z", "x", "add", "output"]


def test_lint_reports_use_before_definition():
    g = engine.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(operator.neg, (x,))
    with g.inserting_before(x):
        g.call_function(operator.abs, (y,))
    with pytest.raises(RuntimeError, match="Argument 'neg' of Node 'abs_1' was used before it has been defined!"):
        g.lint()


def test_graph_module_from_a_dict_copy_and_printing(capsys):
    g = engine.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("lin", (x,)))
    lin = engine.nn.Linear(2, 2)
    gm = engine.fx.GraphModule({"lin": lin}, g)
    x = engine.randn(3, 2)
    np.testing.assert_array_equal(copy.deepcopy(gm)(x).detach().numpy(), lin(x).detach().numpy())
    assert list(gm.state_dict()) == ["lin.weight", "lin.bias"]
    with pytest.raises(RuntimeError, match="referenced target lin but that target was not provided in ``root``!"):
        engine.fx.GraphModule({}, g)
    g.print_tabular()
    assert "call_module  lin" in capsys.readouterr().out
    assert "%lin : [num_users=1] = call_module[target=lin](args = (%x,), kwargs = {})" in str(g)


def test_path_of_a_module_outside_the_root():
    tracer = engine.fx.Tracer()
    tracer.trace(engine.nn.ReLU())
    tracer.submodule_paths = None
    with pytest.raises(NameError, match="module is not installed as a submodule"):
        tracer.path_of_module(engine.nn.Linear(1, 1))


# ---- flowvision.models.feature_extraction on small modules (the zoo's models: tests/flowvision) ------------
def _dropout_net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 1)
            self.head = lib.nn.Linear(4, 2)

        def forward(self, x):
            x = lib.relu(self.conv(x))
            if self.training:
                x = x * 0.5
            x = x.mean((2, 3))
            return self.head(x)
    return Net()


def test_feature_extraction_names_warning_and_mode_switch_as_torchvision():
    torch.manual_seed(0)
    theirs = _dropout_net(torch)
    ours = _dropout_net(engine)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    with warnings.catch_warnings(record=True) as ours_w:
        warnings.simplefilter("always")
        names = ffe.get_graph_node_names(ours)
    with warnings.catch_warnings(record=True) as theirs_w:
        warnings.simplefilter("always")
        assert names == tfe.get_graph_node_names(theirs)
    assert [str(w.message) for w in ours_w] == [str(w.message) for w in theirs_w]
    assert ours.training
    fe = ffe.create_feature_extractor(ours, train_return_nodes=["mul", "head"], eval_return_nodes=["relu", "head"],
                                      suppress_diff_warning=True)
    tfe_ = tfe.create_feature_extractor(theirs, train_return_nodes=["mul", "head"],
                                        eval_return_nodes=["relu", "head"], suppress_diff_warning=True)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    for mode in (True, False):
        fe.train(mode)
        tfe_.train(mode)
        got, expected = fe(engine.tensor(x)), tfe_(torch.from_numpy(x))
        assert list(got) == list(expected)
        for k in got:
            np.testing.assert_allclose(got[k].detach().numpy(), expected[k].detach().numpy(), rtol=1e-5, atol=1e-6)
    assert sorted(fe.state_dict()) == sorted(tfe_.state_dict())


def test_feature_extraction_truncates_after_the_last_output():
    ours = _dropout_net(engine).eval()
    fe = ffe.create_feature_extractor(ours, {"conv": "c"}, suppress_diff_warning=True)
    assert [n.op for n in fe.graph.nodes] == ["placeholder", "call_module", "output"]
    assert list(fe.state_dict()) == ["conv.weight", "conv.bias"]
    assert fe(engine.randn(1, 3, 2, 2))["c"].shape == (1, 4, 2, 2)


@pytest.mark.parametrize("kwargs, message", [
    ({"return_nodes": ["nope"]}, "node: 'nope' is not present in model. Hint: use `get_graph_node_names`"),
    ({}, "Either `return_nodes` or `train_return_nodes` and `eval_return_nodes` together, should be specified"),
    ({"train_return_nodes": ["conv"]}, "If any of `train_return_nodes` and `eval_return_nodes` are specified, then "
                                       "both should be specified"),
    ({"return_nodes": ["conv"], "train_return_nodes": ["conv"], "eval_return_nodes": ["conv"]},
     "If `train_return_nodes` and `eval_return_nodes` are specified, then both should be specified"),
])
def test_feature_extraction_errors(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ffe.create_feature_extractor(_dropout_net(engine), suppress_diff_warning=True, **kwargs)


def _graph_with(*ops):
    g = engine.fx.Graph()
    x = g.placeholder("x")
    for op in ops:
        op(g, x)
    return g


class _Holder(engine.nn.Module):
    def forward(self, x):
        return x + engine.nn.Parameter(engine.ones(1))


@pytest.mark.parametrize("make, error, message", [
    (lambda: _graph_with(lambda g, x: g.create_node("call_nothing", "f")), ValueError, "Unsupported node op"),
    (lambda: _graph_with(lambda g, x: g.call_function("f")), ValueError, "but a Callable is expected"),
    (lambda: _graph_with(lambda g, x: g.erase_node(x), lambda g, x: g.erase_node(x)), RuntimeError,
     "Node x is already erased"),
    (lambda: engine.fx.Graph().erase_node(_graph_with()._nodes[0]), RuntimeError,
     "Attempting to remove x from wrong graph!"),
    (lambda: _graph_with(lambda g, x: g.output(engine.fx.Graph().placeholder("y"))).lint(), RuntimeError,
     "Argument 'y' of Node 'output' does not belong to this Graph"),
    (lambda: engine.fx.GraphModule(engine.nn.Module(), _graph_with(lambda g, x: g.output(g.get_attr("w")))),
     AttributeError, "has no attribute 'w'"),
    (lambda: engine.fx.GraphModule([], _graph_with()), RuntimeError, "Unsupported type [] passed for root!"),
    (lambda: engine.fx.symbolic_trace(lambda x: x, concrete_args={"y": 1}), engine.fx.TraceError,
     "concrete_args names parameters ['y']"),
    (lambda: engine.fx.symbolic_trace(_Holder()), NameError, "parameter is not a member of this module"),
    (lambda: engine.fx.wrap(3), RuntimeError, "Unsupported type for global function!"),
    (lambda: engine.fx.wrap("scaled"), NotImplementedError, "wrap must be called at the top level of a module"),
    (lambda: engine.fx.symbolic_trace(lambda x: {x: 1}), RuntimeError,
     "Keys for dictionaries used as an argument cannot contain a Node. Got key: Proxy(x)"),
    (lambda: engine.fx.Interpreter(engine.fx.GraphModule(engine.nn.Module(), engine.fx.Graph())).fetch_attr("a.b"),
     RuntimeError, "Node referenced nonexistent target a"),
])
def test_bad_input_is_one_clear_error(make, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make()
