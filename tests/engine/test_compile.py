"""``engine.compile`` and ``engine.compiler``: compiled calls equal eager ones, inference is replayed through an
nn.Graph (counted by the traces ``forward`` sees through ``engine.compiler.is_compiling``), training runs eagerly,
graphs follow in-place updates and retrace after structural changes, and the API (OptimizedModule, decorator
forms, errors) is torch's."""
import copy
import gc
import weakref
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.nn as nn
import engine.nn.functional as F
from flowvision.models._helpers import extract_state_dict


class Net(nn.Module):
    """conv-bn-relu, a residual block (conv-bn, add, relu), pooling and a linear head; counts its traces."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.conv = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, classes)
        self.traces = 0

    def forward(self, x):
        if engine.compiler.is_compiling():
            self.traces += 1
        x = self.stem(x)
        x = F.relu(self.bn(self.conv(x)) + x)
        return self.head(engine.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _net(classes=5):
    """A seeded Net in eval mode with non-trivial BatchNorm statistics."""
    engine.manual_seed(0)
    model = Net(classes)
    with engine.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.2)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.2)
    return model.eval()


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol, atol=tol)


def _x(*shape, seed=1):
    engine.manual_seed(seed)
    return engine.randn(*shape)


def test_inference_is_graphed_once_per_signature_and_equals_eager():
    model = _net()
    compiled = engine.compile(model)
    x, y = _x(2, 3, 9, 9), _x(3, 3, 9, 9, seed=2)
    with engine.no_grad():
        want_x, want_y = model(x), model(y)
        _close(compiled(x), want_x)
        traces = model.traces
        assert traces >= 1
        _close(compiled(x), want_x)  # replayed
        assert model.traces == traces
        _close(compiled(y), want_y)  # another batch size: another plan
        assert model.traces > traces
        traces = model.traces
        _close(compiled(x), want_x)
        _close(compiled(y), want_y)
        assert model.traces == traces
        assert sum(g.num_compiled for g in compiled._compiled.graphs.values()) == 2


def test_grad_mode_on_with_frozen_parameters_is_graphed():
    model = _net().requires_grad_(False)
    compiled = engine.compile(model)
    x = _x(2, 3, 8, 8)
    want = model(x)
    for _ in range(2):
        got = compiled(x)
        assert not got.requires_grad
        _close(got, want)
    assert model.traces >= 1
    traces = model.traces
    compiled(x)
    assert model.traces == traces


def test_training_with_gradients_runs_eagerly_and_exactly():
    model = _net().train()
    twin = copy.deepcopy(model)
    compiled = engine.compile(model)
    x, target = _x(4, 3, 8, 8), engine.tensor([0, 1, 2, 3])
    for _ in range(2):
        F.cross_entropy(compiled(x), target).backward()
        F.cross_entropy(twin(x), target).backward()
    assert model.traces == 0
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert p.grad is not None, name
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    np.testing.assert_array_equal(model.bn.running_mean.numpy(), twin.bn.running_mean.numpy())
    model.eval()  # eval mode but parameters that require grad, under grad mode: eager too, with gradients
    out = compiled(x)
    assert out.requires_grad and model.traces == 0


def test_train_mode_without_grad_updates_batchnorm_as_eager():
    model = _net().train()
    twin = copy.deepcopy(model)
    compiled = engine.compile(model)
    with engine.no_grad():
        for seed in range(3):
            x = _x(4, 3, 8, 8, seed=seed)
            np.testing.assert_array_equal(compiled(x).numpy(), twin(x).numpy())
    for a, b in zip(model.buffers(), twin.buffers()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(model.bn.num_batches_tracked) == 3


def test_graph_reads_weights_after_an_optimizer_step_and_load_state_dict():
    model = _net()
    compiled = engine.compile(model)
    x = _x(2, 3, 8, 8)
    with engine.no_grad():
        compiled(x)
    traces = model.traces
    optimizer = engine.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for _ in range(2):
        optimizer.zero_grad()
        compiled.train()
        compiled(x).square().mean().backward()
        optimizer.step()
        compiled.eval()
        with engine.no_grad():
            _close(compiled(x), model(x))
    other = _net(5)
    with engine.no_grad():
        for p in other.parameters():
            p.mul_(-2)
        other.bn.running_var.fill_(3.0)
    compiled.load_state_dict({"_orig_mod." + k: v for k, v in other.state_dict().items()})
    with engine.no_grad():
        _close(compiled(x), other(x))
    assert model.traces == traces  # the same plan throughout: it reads the current arrays


def test_a_replaced_submodule_is_retraced():
    model = _net()
    compiled = engine.compile(model)
    x = _x(2, 3, 8, 8)
    with engine.no_grad():
        compiled(x)
        traces = model.traces
        compiled.head = nn.Linear(8, 3).eval()  # written through to the original, as reset_classifier does
        assert model.head is compiled.head
        got = compiled(x)
        assert tuple(got.shape) == (2, 3) and model.traces > traces
        _close(got, model(x))
        model.head.register_forward_hook(lambda module, args, out: out * 2)  # a new hook: traced anew
        _close(compiled(x), model(x))


def test_optimized_module_is_torchs_wrapper():
    model = _net()
    compiled = engine.compile(model)
    assert type(compiled).__name__ == "OptimizedModule" and isinstance(compiled, nn.Module)
    assert compiled._orig_mod is model and compiled.head is model.head
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]
    keys = list(compiled.state_dict())
    assert keys == ["_orig_mod." + k for k in model.state_dict()]
    stripped = extract_state_dict(compiled.state_dict())
    assert list(stripped) == list(model.state_dict())
    fresh = Net()
    fresh.load_state_dict(stripped)
    compiled.train()
    assert model.training and compiled.training
    compiled.eval()
    assert not model.training and not model.head.training and not compiled.training
    theirs = torch.compile(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()))
    ours = engine.compile(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert repr(ours) == repr(theirs)
    assert len(ours) == 2


def test_decorator_forms_functions_and_methods():
    engine.manual_seed(0)
    weight = engine.randn(4, 6)

    @engine.compile
    def project(x, scale=1.0):
        return OrderedDict(out=(x @ weight) * scale, pair=(x.relu(), x.sum(1)), scale=scale)

    @engine.compile(mode="max-autotune", dynamic=True)
    def double(x):
        return x * 2

    x = _x(3, 4)
    for scale in (0.5, 0.5, 2.0, 0.5):  # a keyword constant is part of the signature
        got = project(x, scale=scale)
        assert type(got) is OrderedDict and list(got) == ["out", "pair", "scale"] and got["scale"] == scale
        _close(got["out"], (x @ weight) * scale)
        _close(got["pair"][1], x.sum(1))
        _close(double(x), x * 2)
    assert project.__name__ == "project" and project.__wrapped__ is not None

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.linear = nn.Linear(width, width)

        @engine.compile
        def forward(self, x):
            return self.linear(x).tanh()

    blocks = [Block(4).eval(), Block(4).eval()]
    with engine.no_grad():
        for block in blocks * 2:  # a graph per instance
            _close(block(x), block.linear(x).tanh())
    gone = weakref.ref(blocks[0])
    del blocks, block
    gc.collect()
    assert gone() is None  # the graphs keep no module alive


def test_recompile_limit_then_eager():
    traces = []

    @engine.compile(recompile_limit=2)
    def scaled(x):
        traces.append(engine.compiler.is_compiling())
        return x * 3

    for n in (1, 2, 3, 3, 1):
        _close(scaled(engine.ones(n)), engine.full((n,), 3.0))
    # traces of the first two signatures (a CPU batch may be traced once more per stream), then the third
    # signature eagerly twice; the last call replays
    assert all(traces[:-2]) and traces[-2:] == [False, False]


def test_a_function_retraces_when_a_global_it_reads_changes():
    global TABLE
    traces = []

    @engine.compile
    def lookup(x):
        if engine.compiler.is_compiling():
            traces.append(1)
        return x + TABLE

    TABLE = engine.ones(3)
    x = _x(3)
    _close(lookup(x), x + 1)
    _close(lookup(x), x + 1)
    assert len(traces) == 1
    TABLE = engine.full((3,), 5.0)  # another tensor bound to the name
    _close(lookup(x), x + 5)
    assert len(traces) == 2


def test_disable_reset_and_backends():
    model = _net()
    assert engine.compile(model, disable=True) is model
    assert engine.compile(disable=True)(model) is model
    calls = []

    @engine.compiler.disable
    def host_side(x):
        calls.append(1)
        return x + 1

    @engine.compile
    def uses_it(x):
        return host_side(x * 2)

    x = _x(3)
    for _ in range(3):
        _close(uses_it(x), x * 2 + 1)
    assert len(calls) == 3  # each call ran it eagerly (the trace gave up before calling it)
    with pytest.raises(RuntimeError, match="fullgraph=True.*disable"):
        engine.compile(lambda t: host_side(t), fullgraph=True)(x)

    compiled = engine.compile(model)
    with engine.no_grad():
        compiled(_x(2, 3, 8, 8))
        traces = model.traces
        compiled(_x(2, 3, 8, 8))
        assert model.traces == traces
        engine.compiler.reset()
        compiled(_x(2, 3, 8, 8))
        assert model.traces > traces
        eager = engine.compile(model, backend="eager")
        traces = model.traces
        _close(eager(_x(2, 3, 8, 8)), model(_x(2, 3, 8, 8)))
        assert model.traces == traces
    assert engine.compiler.list_backends() == ["cudagraphs", "inductor"]
    assert not engine.compiler.is_compiling()


def test_value_reads_and_data_dependent_sizes_run_eagerly():
    @engine.compile
    def branch(x):
        return x * 2 if float(x.sum()) > 0 else x - 1

    @engine.compile
    def positives(x):
        return x[x > 0]

    for sign in (1, -1, 1):
        x = engine.tensor([1.0, 2.0, -0.5]) * sign
        _close(branch(x), x * 2 if float(x.sum()) > 0 else x - 1)
        _close(positives(x), x[x > 0])
    with pytest.raises(RuntimeError, match="reads the value of a tensor"):
        engine.compile(lambda t: t * float(t.sum()), fullgraph=True)(x)


def test_errors_match_torch():
    model = _net()
    for kwargs in ({"mode": "fastest"}, {"mode": "max-autotune", "options": {"triton.cudagraphs": False}}):
        with pytest.raises(RuntimeError) as theirs:
            torch.compile(torch.nn.Linear(2, 2), **kwargs)
        with pytest.raises(RuntimeError) as ours:
            engine.compile(model, **kwargs)
        assert str(ours.value) == str(theirs.value)
    decorate = engine.compile(mode="fastest")  # validated where it is applied, as torch does
    with pytest.raises(RuntimeError, match="Unrecognized mode=fastest"):
        decorate(model)
    with pytest.raises(RuntimeError, match="Invalid backend: 'nope'"):
        engine.compile(model, backend="nope")
    with pytest.raises(AssertionError, match="A callable function is expected, but <class 'int'> is provided."):
        engine.compile(3)


def test_on_the_gpu(cuda):
    model = _net().cuda()
    compiled = engine.compile(model)
    x = _x(2, 3, 8, 8).cuda()
    with engine.no_grad():
        want = model(x)
        for _ in range(3):
            got = compiled(x)
            assert got.device.type == "cuda"
            _close(got, want, 1e-5)
