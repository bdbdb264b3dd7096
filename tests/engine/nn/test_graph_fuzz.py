"""nn.Graph against eager execution of the same model, on the cases a differential fuzzer found apart
(/tmp/graphfuzz): parameters assigned anew between calls, parameters a step's backward does not reach,
indexing keys in saved graphs, and, where calls are captured into CUDA graphs, writes the capture must not
repeat (training BatchNorm statistics) or must not lose (a write into an input). Then a seeded sample of the
fuzzer itself: random small models, optimizers and changes between calls, graph against eager."""
import copy
import json
import warnings

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

import engine
import engine.nn as nn
import engine.nn.functional as F
from op_check import assert_close

pytestmark = pytest.mark.slow  # about 10 s in all: the CUDA emulation's graphs and the fuzzer's sample


class Net(nn.Module):
    """conv-bn-relu, a residual through a submodule used twice, pooling, a classifier, and a head used only in
    training (its parameters get no gradient in eval mode)."""

    def __init__(self, channels=3, classes=4, momentum=0.1):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(channels, momentum=momentum)
        self.shared = nn.Conv2d(channels, channels, 3, padding=1)
        self.fc = nn.Linear(channels, classes)
        self.aux = nn.Linear(channels, classes)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        y = self.shared(F.relu(self.shared(x))) + x
        h = engine.flatten(F.adaptive_avg_pool2d(y, 1), 1)
        out = self.fc(h)
        if self.training:
            out = out + self.aux(h)
        return out


def loss_of(out):
    return out.pow(2).mean()


class Inference(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


class Training(nn.Graph):
    def __init__(self, model, optimizer, scheduler=None):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, lr_sch=scheduler)

    def build(self, x):
        loss = loss_of(self.model(x))
        loss.backward()
        return loss


def _x(*shape, seed=0, device="cpu"):
    return engine.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32), device=device)


def _np(t):
    return t.detach().cpu().numpy()


def _eager_step(model, optimizer, scheduler, x):
    optimizer.zero_grad()
    loss = loss_of(model(x))
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return loss


def _assert_same_state(a, b, rtol=1e-5):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for key in sa:
        assert_close(_np(sb[key]), _np(sa[key]), rtol, key)


# ---- parameters assigned anew -------------------------------------------------------------------------------
def test_inference_graph_reads_a_parameter_assigned_between_calls():
    engine.manual_seed(0)
    model = Net().eval()
    graph = Inference(model)
    x = _x(2, 3, 5, 6)
    graph(x)
    model.fc.weight = nn.Parameter(_x(*model.fc.weight.shape, seed=1))
    model.bn.running_mean = _x(3, seed=2)  # a buffer assigned anew
    with engine.no_grad():
        want = _np(model(x))
    assert_close(_np(graph(x)), want, 1e-6)
    assert graph.num_compiled == 1  # the plan over the old tensors is dropped, not kept beside the new one


# ---- parameters a step does not reach -----------------------------------------------------------------------
OPTIMIZERS = {
    "sgd momentum, weight decay": lambda p: engine.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.1),
    "sgd nesterov": lambda p: engine.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    "adamw": lambda p: engine.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "adam amsgrad": lambda p: engine.optim.Adam(p, lr=0.01, amsgrad=True),
}


@pytest.mark.parametrize("make", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
def test_a_parameter_without_gradient_is_left_alone_as_in_eager(make):
    """The training-only head gets gradients, then eval() leaves it out: the eager optimizer (after
    ``zero_grad()``, which sets gradients to None) skips it, so must the graph's."""
    engine.manual_seed(3)
    eager = Net()
    model = copy.deepcopy(eager)
    opt_e, opt_g = make(eager.parameters()), make(model.parameters())
    sched_e = engine.optim.lr_scheduler.StepLR(opt_e, 1, 0.5)
    graph = Training(model, opt_g, engine.optim.lr_scheduler.StepLR(opt_g, 1, 0.5))
    for step, train in enumerate([True, False, False, True, False]):
        eager.train(train)
        model.train(train)
        x = _x(3, 3, 4, 5, seed=step)
        assert_close(_np(graph(x)), _np(_eager_step(eager, opt_e, sched_e, x)), 1e-5)
        _assert_same_state(eager, model)
        assert (model.aux.weight.grad is None) == (eager.aux.weight.grad is None)


def test_a_parameter_frozen_between_calls_is_left_alone_as_in_eager():
    engine.manual_seed(4)
    eager = Net()
    model = copy.deepcopy(eager)
    make = OPTIMIZERS["sgd momentum, weight decay"]
    opt_e = make(eager.parameters())
    graph = Training(model, make(model.parameters()))
    for step, frozen in enumerate([False, True, True, False]):
        for m in (eager, model):
            m.conv.weight.requires_grad_(not frozen)
        x = _x(2, 3, 4, 5, seed=step)
        assert_close(_np(graph(x)), _np(_eager_step(eager, opt_e, None, x)), 1e-5, f"step {step}")
        _assert_same_state(eager, model)


def _clipped_sgd(model):
    return engine.optim.SGD([{"params": model.conv.parameters(), "clip_grad_max_norm": 0.01},
                             {"params": model.fc.parameters(), "clip_grad_max_norm": 0.02,
                              "clip_grad_norm_type": 1.0}],
                            lr=0.1, momentum=0.9)


def _eager_clipped_step(model, optimizer, x):
    optimizer.zero_grad()
    loss = loss_of(model(x))
    loss.backward()
    engine.nn.utils.clip_grad_norm_(model.conv.parameters(), 0.01)
    engine.nn.utils.clip_grad_norm_(model.fc.parameters(), 0.02, 1.0)
    optimizer.step()
    return loss


def _check_clipping(device):
    """OneFlow's ``clip_grad_max_norm`` in a parameter group: clipped as ``clip_grad_norm_`` on the group's
    parameters before the step."""
    engine.manual_seed(5)
    eager = Net().eval().to(device)
    model = copy.deepcopy(eager)
    opt_e = _clipped_sgd(eager)
    graph = Training(model, _clipped_sgd(model))
    for step in range(4):
        x = _x(2, 3, 4, 5, seed=step, device=device)
        assert_close(_np(graph(x)), _np(_eager_clipped_step(eager, opt_e, x)), 1e-5, f"step {step}")
        _assert_same_state(eager, model)
    return graph


def test_gradient_clipping_of_a_parameter_group_as_in_eager():
    _check_clipping("cpu")


def test_gradient_clipping_inside_a_captured_step(cuda):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # clipping does not keep the step from being captured
        graph = _check_clipping("cuda")
    assert any(step is not False for step in graph._steps.values())


def test_a_captured_step_updates_what_eager_updates(cuda):
    """The same on the GPU, where a training call is captured from its second call on, with gradient
    accumulation: the step captured after an eval() call updates the training-only head again."""
    engine.manual_seed(3)
    eager = Net().cuda()
    model = copy.deepcopy(eager)
    opt_e = engine.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9, weight_decay=0.1)
    graph = Training(model, engine.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=0.1))
    graph.config.set_gradient_accumulation_steps(2)
    for step, train in enumerate([True, False, True, True, False, True]):
        eager.train(train)
        model.train(train)
        x = _x(4, 3, 4, 5, seed=step, device="cuda")
        opt_e.zero_grad()
        losses = []
        for chunk in x.chunk(2, 0):
            loss = loss_of(eager(chunk))
            (loss / 2).backward()
            losses.append(_np(loss))
        opt_e.step()
        assert_close(_np(graph(x)), np.mean(losses), 1e-5, f"step {step}")
        _assert_same_state(eager, model)
    assert any(step is not False for step in graph._steps.values())


# ---- saved graphs --------------------------------------------------------------------------------------------
class Slicing(nn.Graph):
    def __init__(self):
        super().__init__()
        engine.manual_seed(0)
        self.linear = nn.Linear(4, 7)

    def build(self, x):
        y = self.linear(x)
        return y[:, 1:6:2], y[..., 0], y[None, -1], y[::-1]


def test_saved_graph_with_slices_replays_them(tmp_path):
    graph, x = Slicing(), _x(3, 4)
    want = graph(x)
    path = str(tmp_path / "slicing.safetensors")
    graph.save(path)
    got = nn.Graph.load(path)(x)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        assert_close(_np(a), _np(b), 0)


def test_loading_refuses_a_slice_that_is_not_three_integers(tmp_path):
    graph = Slicing()
    graph(_x(3, 4))
    path = str(tmp_path / "slicing.safetensors")
    graph.save(path)
    with safe_open(path, framework="numpy") as f:
        body = json.loads(f.metadata()["graph"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    text = json.dumps(body).replace('{"__slice__": [1, 6, 2]}', '{"__slice__": [1, "os.system", 2]}')
    assert text != json.dumps(body)
    save_file(arrays, path, metadata={"graph": text})
    with pytest.raises(ValueError, match="holds a slice with bounds"):
        nn.Graph.load(path)


# ---- CUDA graphs (on the GPU, or on the CPU emulation of CuPy) ----------------------------------------------
def test_capture_does_not_move_training_batchnorm_statistics_again(cuda):
    """An inference graph of a model in train mode: its BatchNorm statistics move once per call, as in eager
    (the capture's warm-up run is not a call)."""
    engine.manual_seed(0)
    eager = Net().train().cuda()
    model = copy.deepcopy(eager)
    graph = Inference(model)
    for seed in range(3):
        x = _x(2, 3, 5, 6, seed=seed, device="cuda")
        with engine.no_grad():
            want = eager(x)
        assert_close(_np(graph(x)), _np(want), 1e-5)
        _assert_same_state(eager, model)
    assert graph._last_plan.captured is not None


def test_capture_does_not_draw_random_numbers_of_its_own(cuda):
    """Dropout in train mode, one seed for all calls: the graph's masks are eager's, call after call (the capture's
    warm-up draws, and the generator is put back)."""
    engine.manual_seed(0)
    eager = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5)).cuda().train()
    graph = Inference(copy.deepcopy(eager))
    inputs = [_x(4, 3, seed=seed, device="cuda") for seed in range(4)]
    engine.manual_seed(5)
    with engine.no_grad():
        want = [_np(eager(x)) for x in inputs]
    engine.manual_seed(5)
    for call, (x, w) in enumerate(zip(inputs, want)):
        assert_close(_np(graph(x)), w, 1e-5, f"call {call}")
    assert graph._last_plan.captured is not None


class ScaleInput(nn.Module):
    """Writes its input in place before using it (``x.mul_(2)``)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        x.view(-1).mul_(2.0)
        return self.linear(x)


def test_a_write_through_a_view_of_the_input_is_replayed():
    """``x.view(-1).mul_(2)``'s outputs are read by nobody, but ``x`` is: the write is not dead code."""
    engine.manual_seed(0)
    model = ScaleInput()
    graph = Inference(model)
    for seed in range(3):
        x = _x(4, 3, seed=seed)
        before = _np(x).copy()
        got = graph(x)
        assert_close(_np(x), before * 2, 0, f"call {seed}")
        with engine.no_grad():
            assert_close(_np(got), _np(model.linear(engine.tensor(before * 2))), 1e-6, f"call {seed}")


class ScaleInPlace(Inference):
    def build(self, x):
        x.mul_(2.0)
        return self.model.linear(x)


def test_batch_streams_do_not_write_the_input_once_more(monkeypatch):
    """Compiling the streams' plans traces ``build`` on each stream's samples: on copies, as the call has
    already written the input once."""
    from engine.nn.graph import streams
    monkeypatch.setattr(streams, "stream_bounds", lambda batch: [(0, batch // 2), (batch // 2, batch)])
    engine.manual_seed(0)
    graph = ScaleInPlace(ScaleInput())
    for seed in range(2):
        x = _x(4, 3, seed=seed)
        before = _np(x).copy()
        graph(x)
        assert graph._last_plan.stream_batch == 4
        assert_close(_np(x), before * 2, 0, f"call {seed}")


@pytest.mark.parametrize("train", [False, True], ids=["inference", "training"])
def test_a_write_into_the_input_reaches_the_callers_tensor(cuda, train):
    engine.manual_seed(0)
    model = ScaleInput().cuda()
    graph = Training(model, engine.optim.SGD(model.parameters(), lr=0.1)) if train else Inference(model)
    for seed in range(3):  # traced, captured (after its warm-up), replayed
        x = _x(4, 3, seed=seed, device="cuda")
        before = _np(x).copy()
        graph(x)
        assert_close(_np(x), before * 2, 0, f"call {seed}")


# ---- what the caller holds after a call --------------------------------------------------------------------
def test_a_model_trained_in_a_graph_can_be_deep_copied():
    """The trace's marks do not stay on the model's buffers (BatchNorm's counter, written in place) nor on the
    call's inputs and outputs."""
    engine.manual_seed(0)
    model = Net()
    graph = Training(model, engine.optim.SGD(model.parameters(), lr=0.1))
    x = _x(2, 3, 4, 5)
    loss = graph(x)
    twin = copy.deepcopy(model)
    _assert_same_state(model, twin, 0)
    copy.deepcopy(x)
    assert "_graph_slot" not in loss.__dict__ and "_graph_slot" not in x.__dict__


class Aliases(Inference):
    """Outputs that are one value twice, and the input itself."""

    def build(self, x):
        y = self.model(x)
        return y, y, x


def _check_aliases(graph, device):
    for seed in range(3):
        x = _x(4, 3, 4, 5, seed=seed, device=device)
        y1, y2, same = graph(x)
        y1.add_(100.0)
        same.add_(1.0)
        assert_close(_np(y2), _np(y1), 0, f"call {seed}: the output returned twice")
        assert_close(_np(x), _np(same), 0, f"call {seed}: the input returned")


def test_outputs_returned_twice_share_memory_in_batch_streams(monkeypatch):
    from engine.nn.graph import streams
    monkeypatch.setattr(streams, "stream_bounds", lambda batch: [(0, batch // 2), (batch // 2, batch)])
    engine.manual_seed(0)
    graph = Aliases(Net().eval())
    _check_aliases(graph, "cpu")
    assert graph._last_plan.stream_batch == 4


def test_outputs_returned_twice_share_memory_in_a_cuda_graph(cuda):
    engine.manual_seed(0)
    graph = Aliases(Net().eval().cuda())
    _check_aliases(graph, "cuda")
    assert graph._last_plan.captured is not None


# ---- a seeded sample of the fuzzer -------------------------------------------------------------------------
EVENTS = ("none", "toggle", "nudge", "assign", "load", "shape", "noncontiguous", "mutate outputs", "lr")


def _fuzz_case(seed):
    """A random Net, optimizer and scheduler (or none: an inference graph) and five calls with a random change
    before each, graph against eager: outputs, the outputs of the call before (unchanged by this one), every
    parameter and buffer, the optimizer's state."""
    rng = np.random.default_rng(seed)
    train = bool(rng.integers(2))
    engine.manual_seed(seed)
    eager = Net(int(rng.integers(2, 5)), int(rng.integers(2, 5)), [0.1, 0.5][rng.integers(2)]).train(
        bool(rng.integers(2)))
    model = copy.deepcopy(eager)
    make = list(OPTIMIZERS.values())[rng.integers(len(OPTIMIZERS))]
    opt_e = opt_g = None
    if train:
        opt_e, opt_g = make(eager.parameters()), make(model.parameters())
    graph = Training(model, opt_g) if train else Inference(model)
    batch, size, previous = 2, 5, None
    for step in range(5):
        event = EVENTS[rng.integers(len(EVENTS))]
        if event == "toggle":
            for m in (eager, model):
                m.train(not m.training)
        elif event == "nudge":
            for m in (eager, model):
                with engine.no_grad():
                    m.conv.weight.add_(0.5)
        elif event == "assign" and not train:
            new = rng.standard_normal(tuple(eager.fc.weight.shape)).astype(np.float32)
            for m in (eager, model):
                m.fc.weight = nn.Parameter(engine.tensor(new))
        elif event == "load":
            fresh = {k: v + 0.1 for k, v in eager.state_dict().items()}
            for m in (eager, model):
                m.load_state_dict({k: v.clone() for k, v in fresh.items()})
        elif event == "shape":
            batch, size = int(rng.integers(1, 4)), int(rng.integers(3, 7))
        elif event == "lr" and train:
            for o in (opt_e, opt_g):
                o.param_groups[0]["lr"] *= 0.5
        x_np = rng.standard_normal((batch, 3, size, size + 1)).astype(np.float32)
        if event == "noncontiguous":
            xg = engine.tensor(np.repeat(x_np, 2, axis=-1))[..., ::2]
        else:
            xg = engine.tensor(x_np)
        if event == "mutate outputs" and previous is not None:
            with engine.no_grad():
                previous.add_(1000.0)
        kept = _np(previous).copy() if previous is not None else None
        if train:
            want = _eager_step(eager, opt_e, None, engine.tensor(x_np)).detach()
        else:
            with engine.no_grad():
                want = eager(engine.tensor(x_np))
        got = graph(xg)
        what = f"seed {seed} step {step} after {event}"
        assert got.shape == want.shape and got.dtype == want.dtype, what
        assert_close(_np(got), _np(want), 1e-4, what)
        if kept is not None:
            assert_close(_np(previous), kept, 0, f"{what}: the call before's output")
        _assert_same_state(eager, model, 1e-4)
        if train:
            state_e, state_g = opt_e.state_dict()["state"], opt_g.state_dict()["state"]
            assert state_e.keys() == state_g.keys(), what
            for i in state_e:
                for k, v in state_e[i].items():
                    assert_close(np.asarray(state_g[i][k]), np.asarray(v), 1e-4, f"{what}: state {i} {k}")
        previous = got


@pytest.mark.parametrize("seed", range(8))
def test_fuzz_sample_graph_matches_eager(seed):
    _fuzz_case(seed)


def test_batch_norm_with_a_cumulative_average_trains_in_a_graph():
    """momentum=None averages over the batches seen: the factor was read from the counter while tracing, which a
    graph refuses (the counter is computed in it); it is now read when the op runs, replay after replay."""
    torch = pytest.importorskip("torch")

    def model(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4, momentum=None))

    reference = model(torch)
    ours = model(engine)
    ours.load_state_dict({k: engine.tensor(v.numpy()) for k, v in reference.state_dict().items()})

    class Step(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = ours
            self.add_optimizer(engine.optim.SGD(ours.parameters(), lr=0.1))

        def build(self, x):
            loss = self.model(x).square().mean()
            loss.backward()
            return loss

    step, optimizer = Step(), torch.optim.SGD(reference.parameters(), lr=0.1)
    for k in range(4):
        x = np.random.default_rng(k).standard_normal((2, 3, 6, 6)).astype(np.float32)
        step(engine.tensor(x))
        optimizer.zero_grad()
        reference(torch.tensor(x)).square().mean().backward()
        optimizer.step()
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert_close(getattr(ours[1], name).numpy(), getattr(reference[1], name).numpy(), 1e-5, name)
