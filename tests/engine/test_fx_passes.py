"""engine.fx passes and the tracer's options against torch.fx on the same module: ShapeProp's tensor metadata,
conv/linear + batch-norm fusion, ``*args``/``**kwargs``/keyword-only parameters, ``PH`` concrete args,
``nn_module_stack``/``stack_trace``, ``param_shapes_constant``, ``proxy_buffer_attributes``, ``CodeGen``,
``has_side_effect`` and the immutable argument containers."""
import pickle

import numpy as np
import pytest
import torch
import torch.fx
import torch.fx.experimental.optimization
import torch.fx.passes.shape_prop
from fx_nets import net

import engine
import engine.fx
import engine.fx.experimental.optimization
from engine.fx import PH
from engine.fx.immutable_collections import immutable_dict, immutable_list
from engine.fx.passes.shape_prop import ShapeProp


def same_weights(tm, em):
    for k, v in tm.state_dict().items():
        em.state_dict()[k].copy_(engine.tensor(v.numpy()))


def test_shape_prop_matches_torch():
    tm, em = net(torch).eval(), net(engine).eval()
    same_weights(tm, em)
    tg, eg = torch.fx.symbolic_trace(tm), engine.fx.symbolic_trace(em)
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6)).astype(np.float32)
    torch.fx.passes.shape_prop.ShapeProp(tg).propagate(torch.tensor(x))
    out = ShapeProp(eg).propagate(engine.tensor(x))
    np.testing.assert_allclose(out[0].detach().numpy(), tg(torch.tensor(x))[0].detach().numpy(), atol=1e-5)
    tnodes, enodes = list(tg.graph.nodes), list(eg.graph.nodes)
    assert [n.name for n in tnodes] == [n.name for n in enodes]
    for tn, en in zip(tnodes, enodes):
        assert ("tensor_meta" in tn.meta) == ("tensor_meta" in en.meta), tn.name
        assert tn.meta["type"].__name__ == en.meta["type"].__name__
        if tn.op == "output" or "tensor_meta" not in tn.meta:
            continue
        tmeta, emeta = tn.meta["tensor_meta"], en.meta["tensor_meta"]
        assert tuple(tmeta.shape) == tuple(emeta.shape)
        assert str(tmeta.dtype).split(".")[-1] == str(emeta.dtype).split(".")[-1]
        assert tmeta.requires_grad == emeta.requires_grad
        assert tuple(tmeta.stride) == tuple(emeta.stride), tn.name
        assert str(tmeta.memory_format).split(".")[-1] == str(emeta.memory_format).split(".")[-1]
        assert tmeta.is_quantized == emeta.is_quantized and emeta.qparams == {}




def nodes_of(graph):
    """(name, op, target name, arg reprs) of each node: what both libraries must agree on."""
    def target(t):
        return t if isinstance(t, str) else t.__name__
    return [(n.name, n.op, target(n.target), repr(n.args).replace("torch.", "").replace("engine.", ""))
            for n in graph.nodes]


@pytest.mark.parametrize("kind", ["conv", "linear"])
def test_fuse_matches_torch_and_the_unfused_model(kind):
    def model(lib):
        nn = lib.nn
        if kind == "conv":
            return nn.Sequential(nn.Conv2d(3, 5, 3, bias=False), nn.BatchNorm2d(5), nn.ReLU(),
                                 nn.Conv2d(5, 2, 1), nn.BatchNorm2d(2))
        return nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4), nn.Tanh())
    tm, em = model(torch), model(engine)
    rng = np.random.default_rng(2)
    with torch.no_grad():
        for k, v in tm.state_dict().items():
            if v.is_floating_point():
                v.copy_(torch.tensor(rng.uniform(0.5, 1.5, v.shape).astype(np.float32)))
    same_weights(tm, em)
    tm.eval(), em.eval()
    tf = torch.fx.experimental.optimization.fuse(tm)
    ef = engine.fx.experimental.optimization.fuse(em)
    assert nodes_of(tf.graph) == nodes_of(ef.graph)
    shape = (2, 3, 7, 6) if kind == "conv" else (3, 6)
    x = rng.standard_normal(shape).astype(np.float32)
    want = tf(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ef(engine.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(em(engine.tensor(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)


def varargs_module(lib):
    class Inner(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu()

    class M(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()
            self.register_buffer("buf", lib.ones(3))

        def forward(self, x, *args, k=2, **kw):
            y = self.inner(x) + self.inner(x) + self.buf
            return y * k + args[0] + kw["z"] + self.inner.lin.weight.shape[0]
    return M()


@pytest.mark.parametrize("flags", [(True, False), (False, True)])
def test_varargs_kwonly_module_stack_and_tracer_flags_match_torch(flags):
    """``*args``/``**kw``/keyword-only parameters; ``param_shapes_constant`` (a parameter's shape is a constant,
    not a node) and ``proxy_buffer_attributes`` (buffer reads become get_attr at the read)."""
    shapes_constant, proxy_buffers = flags
    graphs = []
    for lib in (torch, engine):
        tracer = lib.fx.Tracer(param_shapes_constant=shapes_constant)
        tracer.proxy_buffer_attributes = proxy_buffers
        tracer.record_stack_traces = True
        module = varargs_module(lib)
        graph = tracer.trace(module)
        graphs.append((module, graph))
    (tm, tg), (em, eg) = graphs
    assert nodes_of(tg) == nodes_of(eg)
    for tn, en in zip(tg.nodes, eg.nodes):
        tstack, estack = tn.meta.get("nn_module_stack"), en.meta.get("nn_module_stack")
        assert (tstack is None) == (estack is None), tn.name
        if tstack:
            assert [(k, p, t.__name__) for k, (p, t) in tstack.items()] == \
                [(k, p, t.__name__) for k, (p, t) in estack.items()]
        if en.op in ("placeholder", "output"):
            assert en.stack_trace is None
        else:
            assert "test_fx_passes.py" in en.stack_trace and "in forward" in en.stack_trace
    same_weights(tm, em)
    tgm, egm = torch.fx.GraphModule(tm, tg), engine.fx.GraphModule(em, eg)
    def head(code):  # the signature and the ``_args = args`` lines
        return code.strip().splitlines()[:3]
    assert head(egm.code) == head(tgm.code)
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    want = tgm(torch.tensor(x), 3, torch.tensor(x), z=torch.tensor(x)).detach().numpy()
    got = egm(engine.tensor(x), 3, engine.tensor(x), z=engine.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_placeholder_structures_match_torch():
    def f(lib):
        def fn(x, y, d):
            return x + y[0] * y[1] + d["a"] * d["b"]
        return fn
    concrete = {"y": [PH, PH], "d": {"a": PH, "b": 3}}
    tg = torch.fx.symbolic_trace(f(torch), concrete_args={"y": [torch.fx.PH] * 2, "d": {"a": torch.fx.PH, "b": 3}})
    eg = engine.fx.symbolic_trace(f(engine), concrete_args=concrete)
    assert nodes_of(tg.graph) == nodes_of(eg.graph)
    rng = np.random.default_rng(4)
    x, a, b, c = (rng.standard_normal(5).astype(np.float32) for _ in range(4))
    want = tg(torch.tensor(x), [torch.tensor(a), torch.tensor(b)], {"a": torch.tensor(c), "b": 3}).numpy()
    got = eg(engine.tensor(x), [engine.tensor(a), engine.tensor(b)], {"a": engine.tensor(c), "b": 3}).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    interpreted = engine.fx.Interpreter(eg).run(engine.tensor(x), [engine.tensor(a), engine.tensor(b)],
                                                {"a": engine.tensor(c), "b": 3})
    np.testing.assert_allclose(interpreted.numpy(), want, rtol=1e-6)
    with pytest.raises(RuntimeError, match="input has 3 items where the traced structure had 2"):
        eg(engine.tensor(x), [engine.tensor(a)] * 3, {"a": engine.tensor(c), "b": 3})


def test_codegen_python_code_and_print_readable():
    class WrapOutput(engine.fx.CodeGen):
        def generate_output(self, output_args):
            return f"return {{'out': {output_args!r}}}"

    gm = engine.fx.symbolic_trace(net(engine))
    assert gm.graph.python_code("self").src == gm.code
    text = gm.print_readable(print_output=False)
    assert text.startswith("class Net(") and "def forward(self, x):" in text
    x = engine.randn(2, 3, 6, 5)
    want = gm(x)[0]
    gm.graph.set_codegen(WrapOutput())
    gm.recompile()
    assert "return {'out': (add, getattr_1)}" in gm.code
    np.testing.assert_array_equal(gm(x)["out"][0].detach().numpy(), want.detach().numpy())


def logged(x):
    """A function marked side-effecting: dead-code elimination keeps its unused calls."""
    return x


engine.fx.wrap("logged")
torch.fx.wrap("logged")
assert engine.fx.has_side_effect(logged) is logged
torch.fx.has_side_effect(logged)


def test_has_side_effect_survives_dead_code_elimination():
    def f(x):
        logged(x)
        x.relu()
        return x + 1
    kept = []
    for lib in (torch, engine):
        gm = lib.fx.symbolic_trace(f)
        gm.graph.eliminate_dead_code()
        kept.append([n.name for n in gm.graph.nodes])
    assert kept[0] == kept[1] == ["x", "logged", "add", "output"]


def test_node_arguments_are_immutable():
    def f(x):
        return engine.cat([x, x], dim=0).sum(dim=[0])
    gm = engine.fx.symbolic_trace(f)
    cat = next(n for n in gm.graph.nodes if n.name == "cat")
    total = next(n for n in gm.graph.nodes if n.name == "sum_1")
    assert type(cat.args[0]) is immutable_list and type(cat.kwargs) is immutable_dict
    assert type(total.kwargs["dim"]) is immutable_list
    with pytest.raises(TypeError, match="'immutable_list' object does not support mutation"):
        cat.args[0].append(cat.args[0][0])
    with pytest.raises(TypeError, match="'immutable_dict' object does not support mutation"):
        cat.kwargs["dim"] = 1
    assert hash(immutable_list([1, 2])) == hash((1, 2))
    back = pickle.loads(pickle.dumps(immutable_dict({"a": immutable_list([1])})))
    assert type(back) is immutable_dict and type(back["a"]) is immutable_list and back == {"a": [1]}
    cat.args = ([cat.args[0][0]],)  # assigning a new value is the way to edit
    gm.recompile()
    np.testing.assert_array_equal(gm(engine.ones(2)).numpy(), np.full(1, 2.0, np.float32))


def test_unassertable_concrete_value_warns():
    def f(x, t):
        return x + t
    with pytest.warns(UserWarning, match="Was not able to add assertion to guarantee correct input t"):
        gm = engine.fx.symbolic_trace(f, concrete_args={"t": engine.ones(2)})
    np.testing.assert_array_equal(gm(engine.ones(2), None).numpy(), np.full(2, 2.0, np.float32))


def test_split_module_matches_torch():
    from torch.fx.passes.split_module import split_module as torch_split
    from engine.fx.passes.split_module import split_module as engine_split

    def build(lib):
        nn = lib.nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)
                self.w = nn.Parameter(lib.ones(4) * 0.5)

            def forward(self, x, y):
                u = self.a(x) + y
                v = u.relu() * self.w
                return self.b(v) + u, v.sum()
        return M()

    def partition_of(node):
        return 0 if node.name in ("a", "add") else (1 if node.name in ("relu", "mul") else 2)
    x, y = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    found = []
    for lib, split in ((torch, torch_split), (engine, engine_split)):
        module = build(lib)
        if lib is engine:
            same_weights(found[0][0], module)
        qualnames = {}
        parts = split(lib.fx.symbolic_trace(module), module, partition_of, qualnames)
        graphs = [nodes_of(parts.graph)] + [nodes_of(sub.graph) for _, sub in parts.named_children()]
        out = parts(lib.tensor(x), lib.tensor(y))
        found.append((module, graphs, qualnames, [o.detach().numpy() for o in out]))
    assert found[0][1] == found[1][1] and found[0][2] == found[1][2]
    for got, want in zip(found[1][3], found[0][3]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
