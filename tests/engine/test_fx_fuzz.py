"""engine.fx against torch.fx, differentially: seeded random modules (leaf and traced-through submodules,
functional calls, methods, operators, parameters, buffers, slicing, structured outputs) trace to torch's nodes
(op, name, target, args/kwargs as torch records them, e.g. ``F.relu(x)`` as ``relu(x, inplace=False)``) and give
torch's values; the printouts (``str(graph)``, ``code``, ``print_readable`` with ShapeProp annotations and nested
GraphModules, ``str(gm)``) are torch's text; real tensors' methods meeting traced values record as torch's; and the
graph API details torch has (root sentinel, lint and insertion errors, ``boxed_run``, ``abs`` of a Proxy,
``to_folder``, pickling of ``wrap``ped calls)."""
import copy
import math
import operator
import pickle
import random
import re
import sys
import warnings

import numpy as np
import pytest
import torch
import torch.fx
from torch.fx.passes import shape_prop as torch_shape_prop, split_module as torch_split_module

import engine
import engine.fx
from engine.fx.passes import shape_prop as engine_shape_prop, split_module as engine_split_module

pytestmark = pytest.mark.slow

C, S = 4, 5


def scaled(x, k):
    """A module-level function both libraries record as one call (``wrap``)."""
    return x * k


engine.fx.wrap("scaled")
torch.fx.wrap("scaled")

#: (lines for __init__, lines for forward) of the random modules; ``x`` is (B, C, S, S) throughout
_STEPS = [
    (["self.conv{i} = nn.Conv2d(C, C, 3, padding=1)"], ["x = self.conv{i}(x)"]),
    (["self.seq{i} = nn.Sequential(nn.Conv2d(C, C, 1), nn.BatchNorm2d(C), nn.ReLU())"], ["x = self.seq{i}(x)"]),
    (["self.blk{i} = Block()"], ["x = self.blk{i}(x)"]),
    (["self.p{i} = nn.Parameter(lib.randn(C, 1, 1))"], ["x = x * self.p{i}"]),
    (["self.register_buffer('b{i}', lib.randn(C, 1, 1))"], ["x = self.b{i}.add(x)"]),
    (["self.lin{i} = nn.Linear(S, S)"], ["x = F.linear(x, self.lin{i}.weight, self.lin{i}.bias)"]),
    ([], ["x = F.relu(x) + F.relu6(x) - F.hardswish(x)"]),
    ([], ["x = F.softmax(x, 1) + F.log_softmax(x, dim=-1)"]),
    ([], ["x = F.layer_norm(x, (S,))"]),
    ([], ["x = F.leaky_relu(x, 0.1) * F.gelu(x, approximate='tanh')"]),
    ([], ["x = F.max_pool2d(x, 3, stride=1, padding=1)"]),
    ([], ["x = F.normalize(x, dim=1) + F.dropout(x, p=0.2, training=self.training)"]),
    ([], ["a, b = lib.split(x, C // 2, 1)", "x = lib.cat([b * a, a + b], 1)"]),
    ([], ["x = F.pad(x, (1, 1, 1, 1))[:, :, 1:-1, 1:-1]"]),
    ([], ["x = F.sigmoid(x) + F.tanh(x)"]),
    ([], ["x = x.reshape(x.shape[0], -1).view(x.size()) * math.sqrt(x.shape[1])"]),
    ([], ["x = scaled(x, 2) + lib.zeros(1) + lib.special.expit(x)"]),
    ([], ["x = x[:, [1, 0, 2, 3]].masked_fill(x > 0.5, 0.0)"]),
    ([], ["x = x.max(dim=1, keepdim=True)[0] + x.to(lib.float32)"]),
]
_OUTPUTS = ["return x", "return x, x.sum()", "return {'a': x, 'b': [x.mean(), x.shape[0]]}", "return x.size()"]

_HEADER = '''
nn = lib.nn
F = lib.nn.functional
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(C, C, 3, padding=1)
        self.bn = nn.BatchNorm2d(C)
    def forward(self, x):
        return F.relu(self.bn(self.conv(x))) + x
'''


def _source(seed):
    """The source of a random module (defines ``M``) for ``seed``."""
    rng = random.Random(seed)
    init, forward = [], []
    for i in range(rng.randint(2, 5)):
        a, b = _STEPS[rng.randrange(len(_STEPS))]
        init += [line.format(i=i) for line in a]
        forward += [line.format(i=i) for line in b]
    body = "".join(f"        {line}\n" for line in init) or "        pass\n"
    return (_HEADER + "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n" + body +
            "    def forward(self, x):\n" + "".join(f"        {line}\n" for line in forward) +
            f"        {rng.choice(_OUTPUTS)}\n")


def _build(src, lib):
    namespace = {"lib": lib, "C": C, "S": S, "math": math, "scaled": scaled}
    exec(compile(src, "<random module>", "exec"), namespace)
    return namespace["M"]()


def _pair(src, seed):
    torch.manual_seed(seed)
    theirs = _build(src, torch).eval()
    ours = _build(src, engine).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _target(t):
    """A call target as a comparable name: ``operator.add``, ``math.sqrt``, or the function's name (torch's
    ``special_expit`` is ``engine.special.expit``)."""
    if isinstance(t, str):
        return t
    for module in (operator, math):
        if getattr(module, t.__name__, None) is t:
            return f"{module.__name__}.{t.__name__}"
    return re.sub("^(special|linalg)_", "", t.__name__.lstrip("_"))


def _arg(a):
    if isinstance(a, (torch.fx.Node, engine.fx.Node)):
        return "%" + a.name
    if isinstance(a, (tuple, list)):
        return type(a)(_arg(x) for x in a) if type(a) in (tuple, list) else list(_arg(x) for x in a)
    if isinstance(a, dict):
        return {k: _arg(v) for k, v in a.items()}
    if isinstance(a, (torch.dtype, engine.dtype)):
        return str(a).rpartition(".")[2]
    return a


def _nodes(gm):
    return [(n.op, n.name, _target(n.target), _arg(n.args), _arg(n.kwargs)) for n in gm.graph.nodes]


def _flat(out):
    if isinstance(out, (torch.Tensor, engine.Tensor)):
        return [out.detach().numpy()]
    if isinstance(out, dict):
        return [k for k in out] + [y for v in out.values() for y in _flat(v)]
    if isinstance(out, (list, tuple)):
        return [type(out).__name__ if type(out) in (list, tuple) else "size"] + [y for v in out for y in _flat(v)]
    return [out]


def _assert_same(theirs, ours):
    a, b = _flat(theirs), _flat(ours)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5)
        else:
            assert x == y


def _text(s):
    """torch's printout in engine's words (engine functions print by their public path)."""
    s = s.replace("torch._C._nn.", "engine.nn.functional.").replace("torch._C._special.special_", "engine.special.")
    s = s.replace("torch.functional.", "torch.")
    s = re.sub(r'\n +torch\.fx\._symbolic_trace\.wrap\("\w+"\)\n\n', "\n", s)  # engine patches in place
    s = re.sub(r'torch\.fx\._symbolic_trace\.wrap\("\w+"\)', "", s)
    return s.replace("math_sqrt(", "math.sqrt(").replace("torch", "engine")


def _graph_text(s):
    """A graph printout with call targets by their last name (their modules differ: ``torch._C._nn.gelu``)."""
    s = re.sub(r"target=[\w.]*?(special_|linalg_)?(\w+)\]", r"target=\2]", s)
    return s.replace("torch.", "engine.")


@pytest.mark.parametrize("seed", range(12))
def test_random_modules_trace_print_and_run_as_torch(seed):
    src = _source(seed)
    ours, theirs = _pair(src, seed)
    gm, tgm = engine.fx.symbolic_trace(ours), torch.fx.symbolic_trace(theirs)
    assert _nodes(gm) == _nodes(tgm)
    assert _graph_text(str(gm.graph)) == _graph_text(str(tgm.graph))
    assert gm.code == _text(tgm.code)
    x = np.random.default_rng(seed).standard_normal((2, C, S, S)).astype(np.float32)
    with torch.no_grad():
        expected = tgm(torch.tensor(x))
    _assert_same(expected, gm(engine.tensor(x)))
    engine_shape_prop.ShapeProp(gm).propagate(engine.tensor(x))
    torch_shape_prop.ShapeProp(tgm).propagate(torch.tensor(x))
    assert gm.print_readable(print_output=False) == _text(tgm.print_readable(print_output=False))
    _assert_same(expected, pickle.loads(pickle.dumps(gm))(engine.tensor(x)))


def _calls(lib):
    F = lib.nn.functional

    class Calls(lib.nn.Module):
        def forward(self, x):
            a, i = F.max_pool2d(x, 3, 1, 1, return_indices=True)
            b, j = F.adaptive_max_pool2d(x, 2, True)
            c = F.interpolate(x, scale_factor=2.0) + F.group_norm(x, 2).sum()
            d = F.threshold(x, 0.1, 20.0) + lib.norm(x, dim=1, keepdim=True)
            e = lib.linalg.vector_norm(x, dim=-1) + lib.special.expit(x).sum(-1)
            f = F.batch_norm(x, lib.zeros(C), lib.ones(C))
            return a, i, b, j, c, d, e, f, F.elu(x), F.silu(x, inplace=False)
    return Calls()


def test_python_functions_record_torch_call_forms():
    """torch's Python functions record positional / keyword arguments with defaults filled in, boolean
    dispatch on ``return_indices`` records the ``_with_indices`` variant, ``F.sigmoid`` a method call,
    ``F.threshold`` the name ``_threshold``, ``special`` / ``linalg`` functions prefixed names."""
    gm, tgm = engine.fx.symbolic_trace(_calls(engine)), torch.fx.symbolic_trace(_calls(torch))
    assert _nodes(gm) == _nodes(tgm)
    x = np.random.default_rng(1).standard_normal((2, C, S, S)).astype(np.float32)
    _assert_same(tgm(torch.tensor(x)), gm(engine.tensor(x)))


def _tensor_methods(lib):
    class Methods(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("b", lib.arange(6.0))
            self.w = lib.nn.Parameter(lib.ones(6))

        def forward(self, x):
            return (self.b[x.long()], self.b.mul(x), self.b.masked_fill(x > 0, 1.0), self.w.add(x, alpha=2),
                    lib.ones(6).where(x > 0, x), lib.zeros(1) + x, x.to(lib.float64), abs(x))
    return Methods()


def test_real_tensor_methods_on_traced_values_record_as_torch():
    gm, tgm = engine.fx.symbolic_trace(_tensor_methods(engine)), torch.fx.symbolic_trace(_tensor_methods(torch))
    assert _nodes(gm) == _nodes(tgm) and gm.code == _text(tgm.code)
    x = engine.tensor([0.5, -1.0, 2.0, 3.0, -0.5, 1.0])
    with torch.no_grad():
        expected = tgm(torch.tensor(x.numpy()))
    _assert_same(expected, pickle.loads(pickle.dumps(gm))(x))


def _layered(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
            self.register_buffer("buf", lib.ones(3))

        def forward(self, x, y=2):
            a = self.seq(x)
            return (a + self.buf) * y, {"a": a}
    return Net()


def test_split_module_readable_and_module_str_as_torch():
    gm, tgm = engine.fx.symbolic_trace(_layered(engine)), torch.fx.symbolic_trace(_layered(torch))
    part = {"seq_0": 0, "seq_1": 0, "add": 1, "mul": 2}
    split = engine_split_module.split_module(gm, None, lambda n: part[n.name])
    tsplit = torch_split_module.split_module(tgm, None, lambda n: part[n.name])
    assert split.print_readable(print_output=False) == _text(tsplit.print_readable(print_output=False))
    assert str(gm) == _text(str(tgm))


def halved(x):
    """Importable from this module, but ``wrap``ped only where ``_traced_elsewhere`` is defined."""
    return x / 2


def _traced_elsewhere():
    """A module whose forward calls ``halved`` from a namespace that wraps it (as a generated module would)."""
    namespace = {"engine": engine, "halved": halved}
    exec(compile("engine.fx.wrap('halved')\nclass Traced(engine.nn.Module):\n    def forward(self, x):\n"
                 "        return halved(x) + 1\n", "<elsewhere>", "exec"), namespace)
    return namespace["Traced"]()


def test_pickle_and_deepcopy_keep_wrapped_calls():
    gm = engine.fx.symbolic_trace(_traced_elsewhere())
    for back in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        assert [n.name for n in back.graph.nodes] == ["x", "halved", "add", "output"]


def _ring(fx):
    g = fx.Graph()
    x = g.placeholder("x")
    neg = g.call_function(operator.neg, (x,))
    g.output(g.call_function(operator.abs, (x,)))
    g._root.prepend(neg)
    return g


def test_graph_root_sentinel_closes_the_node_ring():
    ours, theirs = _ring(engine.fx), _ring(torch.fx)
    assert [n.name for n in ours.nodes] == [n.name for n in theirs.nodes] == ["x", "abs_1", "output", "neg"]
    first, last = list(ours.nodes)[0], list(ours.nodes)[-1]
    assert (first.prev.op, first.prev.name, last.next is first.prev, first.prev.next is first) == \
        ("root", "", True, True)


def test_interpreter_boxed_run_empties_its_argument_list():
    gm = engine.fx.symbolic_trace(_layered(engine))
    args = [engine.ones(2, 3), 3]
    out = engine.fx.Interpreter(gm).boxed_run(args)
    assert args == [] and out[0].shape == (2, 3)


def test_generated_code_writes_dtypes_and_devices_as_torch():
    def f(x):
        return x.to(engine.float16), x.to(device=engine.device("cpu")), x.contiguous(memory_format=engine.channels_last)
    code = engine.fx.symbolic_trace(f).code
    assert "x.to(engine.float16)" in code and "device = device(type='cpu')" in code
    assert "memory_format = engine.channels_last" in code


def test_numbered_children_are_read_with_double_quotes():
    gm = engine.fx.symbolic_trace(engine.nn.Sequential(engine.nn.ReLU()))
    assert 'getattr(self, "0")(input_1)' in gm.code


def test_to_folder_writes_an_importable_module(tmp_path):
    gm = engine.fx.symbolic_trace(_layered(engine))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the ReLU child is pickled, as torch's (only some layers print as code)
        gm.to_folder(tmp_path / "saved", "Saved")
    sys.path.insert(0, str(tmp_path))
    try:
        from saved import Saved
    finally:
        sys.path.remove(str(tmp_path))
    x = engine.randn(2, 3)
    np.testing.assert_array_equal(Saved()(x)[0].detach().numpy(), gm(x)[0].detach().numpy())


def test_get_attr_of_a_missing_attribute_warns():
    gm = engine.fx.symbolic_trace(_layered(engine))
    with pytest.warns(UserWarning, match="Attempted to insert a get_attr Node with no underlying reference"):
        gm.graph.get_attr("missing")


def _lint_error(target, op):
    gm = engine.fx.symbolic_trace(_layered(engine))
    with gm.graph.inserting_before(list(gm.graph.nodes)[-1]):
        gm.graph.create_node(op, target)
    gm.graph.lint()


@pytest.mark.parametrize("call, error, message", [
    (lambda: _lint_error("nope.w", "get_attr"), RuntimeError,
     "Node nope_w target nope.w references nonexistent attribute nope of "),
    (lambda: _lint_error("buf", "call_module"), RuntimeError,
     "Node buf_1 target buf buf of  does not reference an nn.Module"),
    (lambda: engine.fx.symbolic_trace(_layered(engine)).graph.call_module("seq.nope"), AttributeError,
     "Module has no attribute `nope`"),
    (lambda: engine.fx.Interpreter(engine.fx.symbolic_trace(_layered(engine))).boxed_run([1]), RuntimeError,
     "Interpreter.boxed_run expected 2 arguments for placeholders but received 1 (missing arguments)"),
])
def test_graph_errors_are_torchs(call, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        call()


def _editing(lib, fx):
    """Submodule bookkeeping and node queries of torch's GraphModule / Graph / Node API, as comparable values."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
            self.c = nn.Module()
            self.c.d = nn.Linear(2, 2)

        def forward(self, x):
            return self.a(x) + self.c.d.weight.sum()
    gm = fx.symbolic_trace(Net())
    out = [gm.add_submodule("new.sub", nn.ReLU()), gm.add_submodule("a.0.weight.x", nn.ReLU()),
           gm.delete_submodule("a.5"), gm.delete_submodule("c.d.weight")]
    gm.delete_all_unused_submodules()
    add = gm.graph.find_nodes(op="call_function", target=operator.add)[0]
    add.insert_arg(2, add.args[0])
    return out + [sorted(n for n, _ in gm.named_modules()), [n.name for n in gm.graph.find_nodes(op="call_module")],
                  gm.graph.output_node().name, [a.name for a in add.args], len(add.args[0].users)]


def test_submodule_and_node_queries_as_torch():
    assert _editing(engine, engine.fx) == _editing(torch, torch.fx)


@pytest.mark.parametrize("call, message", [
    (lambda: engine.fx.Graph().find_nodes(op="call_function"), "target must not be None for call_function op"),
    (lambda: engine.fx.symbolic_trace(_layered(engine)).graph.output_node().insert_arg(2, 1),
     "insert_args index must be between 0 and len(self.args), got 2"),
])
def test_node_query_errors_are_torchs(call, message):
    with pytest.raises(AssertionError, match=f"^{re.escape(message)}$"):
        call()


def _annotated(lib, fx):
    gm = fx.symbolic_trace(lambda x: x.t() + 1)
    for node in gm.graph.nodes:
        if node.op != "output":
            node.meta["val"] = lib.ones(3, 2) if node.op == "placeholder" else lib.ones(2, 3).t()
    return gm.print_readable(False, include_stride=True, include_device=True)


def test_readable_code_annotates_meta_tensors_with_strides_and_device():
    assert _annotated(engine, engine.fx) == _text(_annotated(torch, torch.fx))


def test_interpreter_errors_name_the_failing_node():
    gm = engine.fx.symbolic_trace(lambda x: x["a"] + 1)
    with pytest.raises(RuntimeError, match="^a\n\nWhile executing %getitem : \\[num_users=1\\] = call_function"
                                           "\\[target=operator.getitem\\]\\(args = \\(%x, a\\), kwargs = \\{\\}\\)\n"
                                           "Original traceback:\nNone$"):
        engine.fx.Interpreter(gm).run({})
