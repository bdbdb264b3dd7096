"""nn.Graph: traced inference and training plans against eager execution of the same model."""
import platform
import warnings

import numpy as np
import pytest

import engine
import engine.nn as nn
import engine.nn.functional as F
from op_check import assert_close


class SmallResNet(nn.Module):
    """conv-bn-relu stem, one residual block, pooling and a classifier: every fusion pattern."""

    def __init__(self, classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        identity = x
        out = self.bn2(self.conv2(x))
        out += identity
        out = self.relu(out)
        out = F.relu(self.conv3(out))
        return self.fc(torch_flatten(self.pool(out)))


def torch_flatten(x):
    return engine.flatten(x, 1)


def randomize_bn(model):
    with engine.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.2)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.2)


class InferenceGraph(nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def small_resnet_case(shape=(3, 3, 11, 13)):
    """A seeded eval SmallResNet with random BatchNorm statistics, its inference graph (not yet run), an
    input of ``shape`` and the eager output for it."""
    engine.manual_seed(0)
    model = SmallResNet().eval()
    randomize_bn(model)
    x = engine.randn(*shape)
    with engine.no_grad():
        ref = model(x).numpy()
    return InferenceGraph(model), x, ref


class TrainGraph(nn.Graph):
    def __init__(self, model, optimizer, lr_scheduler=None):
        super().__init__()
        self.model = model
        self.loss_fn = nn.CrossEntropyLoss()
        self.add_optimizer(optimizer, lr_sch=lr_scheduler)

    def build(self, x, y):
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        return loss


def test_inference_graph_matches_eager_and_fuses():
    graph, x, ref = small_resnet_case()
    first, second = graph(x), graph(x)
    assert_close(first.numpy(), ref, 1e-6, "traced run")
    assert_close(second.numpy(), ref, 1e-5, "replay")
    assert graph.num_compiled == 1
    text = repr(graph)
    assert "FusedConv" in text and "BatchNorm" not in text.split("(PLAN:0)")[1]
    graph(engine.randn(2, 3, 9, 9))
    assert graph.num_compiled == 2
    graph.model.train()
    graph(x)
    assert graph.num_compiled == 3


class TwoBranchSum(nn.Module):
    """Two convolutions summed, the second computed after the first (as LR-ASPP's head does)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(4, 3, 1)
        self.second = nn.Conv2d(5, 3, 3, padding=1)

    def forward(self, x, y):
        return self.first(x) + self.second(y)


def test_residual_fused_only_into_the_later_convolution():
    """The fused conv runs where the conv ran: an add whose other operand comes later fuses into that one."""
    engine.manual_seed(2)
    model = TwoBranchSum().eval()

    class PairGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x, y):
            return self.model(x, y)

    graph = PairGraph()
    for _ in range(3):
        x, y = engine.randn(2, 4, 6, 7), engine.randn(2, 5, 6, 7)
        with engine.no_grad():
            ref = model(x, y).numpy()
        assert_close(graph(x, y).numpy(), ref, 1e-6, "replay on new inputs")
    plan = repr(graph).split("(PLAN:0)")[1]
    assert plan.count("FusedConv") == 1 and "Add" not in plan and plan.count("ConvNd") == 1


def _plan_equal_to_eager(model, scale):
    """The text of an inference graph's plan of ``model`` (eval, random BatchNorm statistics), after checking
    that its traced run and replay equal eager on inputs times ``scale``."""
    randomize_bn(model)
    graph = InferenceGraph(model)
    for _ in range(2):
        x = engine.randn(2, 3, 9, 11) * scale
        with engine.no_grad():
            ref = model(x).numpy()
        assert_close(graph(x).numpy(), ref, 1e-6, "replay")
    return repr(graph).split("(PLAN:0)")[1]


def test_silu_and_gelu_fuse_into_the_convolution():
    """SiLU and exact GELU after a convolution (with or without BatchNorm) become FusedConv ops, equal to eager;
    GELU's tanh approximation is left as its own op."""
    engine.manual_seed(5)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.GELU(),
                          nn.Conv2d(8, 8, 1), nn.SiLU(), nn.Conv2d(8, 4, 3), nn.GELU("tanh")).eval()
    plan = _plan_equal_to_eager(model, 3)
    assert plan.count("FusedConv") == 2 and "SiLU" not in plan and plan.count("GELU") == 1


def test_hardswish_and_relu6_fuse_into_the_convolution():
    """MobileNet's conv-BN-activation blocks (Hardswish, ReLU6) and squeeze-excitation gates (a 1x1 convolution
    and Hardsigmoid) become single FusedConv ops, equal to eager."""
    engine.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.Hardswish(),
                          nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.BatchNorm2d(8), nn.ReLU6(),
                          nn.Conv2d(8, 4, 1), nn.Hardsigmoid()).eval()
    plan = _plan_equal_to_eager(model, 4)
    assert plan.count("FusedConv") == 3 and "Hardswish" not in plan and "Hardtanh" not in plan
    assert "Hardsigmoid" not in plan


def test_fused_batchnorm_follows_parameter_updates():
    engine.manual_seed(1)
    model = SmallResNet().eval()
    graph = InferenceGraph(model)
    x = engine.randn(2, 3, 8, 8)
    graph(x)
    with engine.no_grad():
        model.conv1.weight.mul_(1.5)
        model.bn2.running_var.mul_(2.0)
        ref = model(x).numpy()
    assert_close(graph(x).numpy(), ref, 1e-5, "after parameter update")


def test_debug_prints_passes(capsys):
    graph = InferenceGraph(SmallResNet().eval())
    graph.debug(0)
    graph(engine.randn(1, 3, 8, 8))
    out = capsys.readouterr().out
    assert "fuse_convolutions: 6 ops fused into convolutions (2 BatchNorm fused, 1 residual adds, 3 activations)" in out
    assert "eliminate_dead_ops" in out and "plan_memory" in out


def _train(model, optimizer, scheduler, batches, steps_acc, use_graph):
    losses = []
    if use_graph:
        graph = TrainGraph(model, optimizer, scheduler)
        graph.config.set_gradient_accumulation_steps(steps_acc)
        for x, y in batches:
            losses.append(graph(x, y).item())
        return losses, graph
    loss_fn = nn.CrossEntropyLoss()
    for x, y in batches:
        optimizer.zero_grad()
        total = 0.0
        for xs, ys in zip(x.chunk(steps_acc, 0), y.chunk(steps_acc, 0)):
            loss = loss_fn(model(xs), ys)
            (loss / steps_acc).backward()
            total += loss.item()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(total / steps_acc)
    return losses, None


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
@pytest.mark.parametrize("acc", [1, 2])
@pytest.mark.parametrize("sched", [False, True])
def test_training_graph_equals_eager_steps(opt, acc, sched):
    rng = np.random.default_rng(0)
    batches = [(engine.from_numpy(rng.standard_normal((4, 3, 8, 8), dtype=np.float32)),
                engine.from_numpy(rng.integers(0, 5, 4))) for _ in range(5)]
    results = []
    for use_graph in (False, True):
        engine.manual_seed(0)
        model = SmallResNet().train()
        if opt == "sgd":
            optimizer = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        else:
            optimizer = engine.optim.AdamW(model.parameters(), lr=0.01)
        scheduler = engine.optim.lr_scheduler.StepLR(optimizer, 2, 0.5) if sched else None
        losses, graph = _train(model, optimizer, scheduler, batches, acc, use_graph)
        grads = {name: p.grad.numpy().copy() for name, p in model.named_parameters()}
        results.append((losses, model.state_dict(), optimizer.state_dict(), graph, grads))
    (eager_losses, eager_sd, eager_opt, _, eager_grads), (graph_losses, graph_sd, graph_opt, graph, graph_grads) = \
        results
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for k in eager_sd:
        assert_close(graph_sd[k].numpy(), eager_sd[k].numpy(), 1e-5, k)
    for k in eager_grads:  # after a call .grad holds that step's gradients, as after an eager step
        assert_close(graph_grads[k], eager_grads[k], 1e-5, k)
    assert graph.num_compiled == 1
    state = graph.state_dict()
    assert set(state) >= {"model", "optimizer_0"} and state["optimizer_0"]["state"]
    assert optimizer_lr(graph_opt) == optimizer_lr(eager_opt)


class DropNet(nn.Module):
    """Dropout, random draws in forward (stochastic depth's ``empty(...).bernoulli_``, ``bernoulli`` of a
    probability tensor, ``randn``) and a linear head."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        h = self.drop(F.relu(self.fc1(x)))
        keep = engine.empty(h.shape[0], 1, device=h.device).bernoulli_(0.7) / 0.7
        gate = engine.bernoulli(engine.full((1, h.shape[1]), 0.9, device=h.device))
        return self.fc2(h * keep * gate + engine.randn(h.shape, device=h.device) * 0.01)


def test_training_graph_draws_new_random_numbers_each_step():
    """Dropout masks and random tensors made in build are drawn anew in each replay, from the same stream as
    eager: with one seed, five graph steps give the eager steps' losses and parameters."""
    rng = np.random.default_rng(0)
    batches = [(engine.from_numpy(rng.standard_normal((8, 6), dtype=np.float32)),
                engine.from_numpy(rng.integers(0, 3, 8))) for _ in range(5)]
    results = []
    for use_graph in (False, True):
        engine.manual_seed(0)
        model = DropNet().train()
        optimizer = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses, _ = _train(model, optimizer, None, batches, 1, use_graph)
        results.append((losses, model.state_dict()))
    (eager_losses, eager_sd), (graph_losses, graph_sd) = results
    assert len(set(np.round(eager_losses, 6))) == 5
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-6)
    for k in eager_sd:
        assert_close(graph_sd[k].numpy(), eager_sd[k].numpy(), 1e-6, k)


def test_inference_graph_draws_new_random_numbers_each_call():
    class Noisy(nn.Graph):
        def build(self, x):
            return x + engine.rand(x.shape)

    graph = Noisy()
    x = engine.zeros(4, 5)
    first, second = graph(x).numpy(), graph(x).numpy()
    assert not np.array_equal(first, second) and 0 <= first.min() and second.max() < 1
    engine.manual_seed(3)
    replayed = graph(x).numpy()
    engine.manual_seed(3)
    assert np.array_equal(replayed, engine.rand(4, 5).numpy())


def test_inference_graph_draws_normal_randperm_and_multinomial_anew():
    """``normal`` of tensor means and deviations, ``randperm`` and ``multinomial`` in build are ops of the graph:
    each call draws anew, what eager code draws after the same seed."""
    class Sampler(nn.Graph):
        def build(self, mean, weights):
            noise = engine.normal(mean, engine.full_like(mean, 0.5)) + engine.normal(mean, 2.0)
            order = engine.randperm(mean.shape[1])
            picks = engine.multinomial(weights, 3)
            return noise[:, order], picks

    def eager(mean, weights):
        noise = engine.normal(mean, engine.full_like(mean, 0.5)) + engine.normal(mean, 2.0)
        return noise[:, engine.randperm(mean.shape[1])], engine.multinomial(weights, 3)

    graph = Sampler()
    mean = engine.arange(12.0).reshape(3, 4)
    weights = engine.tensor([[1.0, 2.0, 3.0, 4.0, 5.0], [5.0, 0.0, 1.0, 1.0, 2.0]])
    engine.manual_seed(5)
    calls = [graph(mean, weights) for _ in range(3)]
    engine.manual_seed(5)
    wanted = [eager(mean, weights) for _ in range(3)]
    assert len({c[0].numpy().tobytes() for c in calls}) == 3
    for (noise, picks), (want_noise, want_picks) in zip(calls, wanted):
        assert np.array_equal(noise.numpy(), want_noise.numpy())
        assert np.array_equal(picks.numpy(), want_picks.numpy())


def test_training_graph_reuses_gradient_buffers():
    """Each step zeroes the gradient arrays of the last one and accumulates into them (that the values
    are then right is test_training_graph_equals_eager_steps's)."""
    engine.manual_seed(0)
    model = SmallResNet().train()
    graph = TrainGraph(model, engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), None)
    x, y = engine.randn(4, 3, 8, 8), engine.randint(0, 5, (4,))
    graph(x, y)
    buffers = [p.grad._data for p in model.parameters()]
    graph(x, y)
    assert all(p.grad._data is b for p, b in zip(model.parameters(), buffers))
    if platform.libc_ver()[0] == "glibc":  # freed blocks stay in the process (backends/cpu/allocator.py)
        assert "retain_freed_memory" in "\n".join(graph._last_plan.log)


def optimizer_lr(state):
    return [g["lr"] for g in state["param_groups"]]


def test_nested_inputs_and_outputs():
    class DictGraph(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)

        def build(self, batch):
            a = self.lin(batch["x"])
            return {"out": a, "both": (a * 2, batch["pair"][1] + 1)}

    g = DictGraph()
    batch = {"x": engine.randn(2, 4), "pair": [engine.randn(3), engine.randn(2)]}
    first = g(batch)
    second = g(batch)
    assert set(second) == {"out", "both"} and isinstance(second["both"], tuple)
    assert_close(second["both"][0].numpy(), first["both"][0].numpy(), 1e-6)
    assert_close(second["both"][1].numpy(), batch["pair"][1].numpy() + 1, 1e-6)


@pytest.mark.parametrize("training", [False, True])
def test_outputs_are_freed_when_the_caller_drops_them(training):
    """No reference cycle holds a call's outputs: they die with the caller's last reference, not when
    the cyclic garbage collector next runs (a segmentation graph otherwise piled up its outputs)."""
    import gc
    import weakref

    model = nn.Linear(4, 3)
    graph = TrainGraph(model, engine.optim.SGD(model.parameters(), lr=0.1)) if training else InferenceGraph(model)
    args = (engine.randn(2, 4), engine.randint(0, 3, (2,))) if training else (engine.randn(2, 4),)
    graph(*args)
    gc.disable()
    try:
        out = graph(*args)
        ref = weakref.ref(out)
        del out
        assert ref() is None
    finally:
        gc.enable()


def test_value_dependent_control_flow_is_refused_with_the_line():
    class Branchy(nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def build(self, x):
            y = self.lin(x)
            if y.sum() > 0:
                return y
            return -y

    with pytest.raises(RuntimeError, match=r"reads the value of a tensor computed in the graph \(bool\(\)\) "
                                           r"at .*test_graph.py:\d+: `if y.sum\(\) > 0:`"):
        Branchy()(engine.randn(2, 4))


class PositiveSum(nn.Graph):
    """The scaled sum of the positive entries through a boolean mask (a size that depends on the values) and a
    reshape that the trace fixes to the traced size; in training, a step of SGD on the scale."""

    def __init__(self, training):
        super().__init__()
        self.scale = nn.Linear(1, 1, bias=False)
        nn.init.ones_(self.scale.weight)
        if training:
            self.add_optimizer(engine.optim.SGD(self.scale.parameters(), lr=0.0))

    def build(self, x):
        positive = x[x > 0]
        total = self.scale(positive.reshape(-1, 1)).sum()
        if self.training:
            total.backward()
        return total


@pytest.mark.parametrize("training", [False, True])
def test_replay_names_the_data_dependent_size_that_changed(tmp_path, training):
    graph = PositiveSum(training)
    assert graph(engine.tensor([1.0, -2.0, 3.0, -4.0])).item() == 4.0
    assert graph(engine.tensor([-1.0, 5.0, 0.5, -4.0])).item() == 5.5  # two entries again: replays
    message = (r"^PositiveSum: TensorIndex at .*test_graph.py:\d+: `positive = x\[x > 0\]` returned shape \[3\] "
               r"where the traced call had \[2\], and Reshape then failed \(cannot reshape .*\): nn.Graph replays")
    with pytest.raises(RuntimeError, match=message):
        graph(engine.tensor([1.0, 2.0, 3.0, -4.0]))
    if not training:
        path = str(tmp_path / "positive.graph.safetensors")
        graph.save(path)
        with pytest.raises(RuntimeError, match=r"returned shape \[1\] where the traced call had \[2\]"):
            nn.Graph.load(path)(engine.tensor([1.0, -2.0, -3.0, -4.0]))


def test_save_and_load_runs_without_the_model_class(tmp_path):
    engine.manual_seed(2)
    model = SmallResNet().eval()
    randomize_bn(model)
    graph = InferenceGraph(model)
    x = engine.randn(2, 3, 10, 10)
    expected = graph(x).numpy()
    path = str(tmp_path / "small.graph.safetensors")
    graph.save(path)
    loaded = nn.Graph.load(path)
    assert "FusedConv" in repr(loaded)
    assert_close(loaded(x).numpy(), expected, 1e-6, "loaded graph")
    with open(path, "rb") as f:
        assert b"pickle" not in f.read(64)


def test_config_switches():
    graph = InferenceGraph(SmallResNet().eval())
    graph.config.enable_amp(True)
    with pytest.raises(ValueError, match="enable_amp runs bfloat16 autocast only, got dtype=engine.float16"):
        graph.config.enable_amp(True, dtype=engine.float16)
    graph.config.allow_fuse_add_to_output(False)
    graph.config.allow_fuse_model_update_ops(True)
    graph.debug(0)
    x = engine.randn(1, 3, 8, 8)
    with pytest.warns(UserWarning, match="enable_amp does nothing on the CPU"):
        graph(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph(x)  # warned once
    assert graph.num_compiled == 1
    with pytest.raises(ValueError, match="gradient accumulation steps must be >= 1"):
        graph.config.set_gradient_accumulation_steps(0)
