"""nn.Graph on the GPU: inference plans captured into CUDA graphs, the cuBLAS binding they use for GEMMs, and
the fallback where a plan cannot be captured. On a GPU (marked ``cuda``) and, without one, on the CPU
emulation of CuPy, which refuses in a capture what CUDA refuses and replays what it recorded."""
import contextlib
import warnings

import numpy as np
import pytest

import engine
import engine.nn as nn
from engine.autograd.function import Function
from op_check import assert_close
from test_graph import DropNet, InferenceGraph, SmallResNet, TrainGraph, randomize_bn


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# (a shape, b shape, transpose a, transpose b): row-major, transposed views, batches, broadcasting, 1-D, empty
MATMUL_CASES = [
    ((7, 5), (5, 9), False, False),
    ((5, 7), (5, 9), True, False),
    ((7, 5), (9, 5), False, True),
    ((6, 7), (9, 6), True, True),
    ((3, 4, 5), (3, 5, 6), False, False),
    ((3, 6, 4), (3, 6, 5), True, False),
    ((2, 1, 4, 5), (3, 5, 6), False, False),
    ((4, 5), (3, 5, 6), False, False),
    ((3, 4, 5), (5, 6), False, False),
    ((5,), (5, 6), False, False),
    ((4, 5), (5,), False, False),
    ((4, 0), (0, 3), False, False),
    ((0, 4), (4, 3), False, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", MATMUL_CASES)
def test_cublas_matmul_matches_cupy(cuda, case, dtype):
    import cupy
    from engine.backends.cuda import cublas
    a_shape, b_shape, a_t, b_t = case
    a = cupy.asarray(_rand(*a_shape, dtype=dtype))
    b = cupy.asarray(_rand(*b_shape, seed=1, dtype=dtype))
    a = a.swapaxes(-1, -2) if a_t else a
    b = b.swapaxes(-1, -2) if b_t else b
    want = cupy.matmul(a, b).get()
    got = cublas.matmul(a, b).get()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    out = cupy.empty(want.shape, dtype)
    assert cublas.matmul(a, b, out=out) is out
    np.testing.assert_allclose(out.get(), want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


def test_cublas_matmul_refuses_what_it_cannot_take(cuda):
    import cupy
    from engine.backends.cuda import cublas
    a = cupy.ones((3, 4), np.float32)
    with pytest.raises(TypeError, match="int64"):
        cublas.matmul(a.astype(np.int64), a.T.astype(np.int64))
    with pytest.raises(ValueError, match=r"contracted dimension \(\(3, 4\) and \(3, 4\)\)"):
        cublas.matmul(a, a)
    with pytest.raises(ValueError, match="C-contiguous float32 array of shape \\(3, 3\\)"):
        cublas.matmul(a, a.T, out=cupy.empty((3, 3), np.float32).T)


def _graph_on_gpu(model):
    graph = InferenceGraph(model)
    graph.debug(-1)
    return graph


def small_resnet_on_gpu():
    """SmallResNet in eval mode with random BatchNorm statistics, seeded, on the GPU."""
    engine.manual_seed(0)
    model = SmallResNet().eval()
    randomize_bn(model)
    return model.cuda()


def test_graph_is_captured_and_replays_like_eager(cuda):
    model = small_resnet_on_gpu()
    graph = _graph_on_gpu(model)
    inputs = [_rand(3, 3, 11, 13, seed=s) for s in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing in this model refuses the capture
        outputs = [graph(engine.tensor(x, device="cuda")) for x in inputs]
    assert graph._last_plan.captured is not None
    for x, y in zip(inputs, outputs):  # each call's result stays valid after the later calls
        with engine.no_grad():
            want = model(engine.tensor(x, device="cuda"))
        assert y.device.type == "cuda"
        assert_close(y.cpu().numpy(), want.cpu().numpy(), rtol=1e-5)


def test_graph_capture_follows_new_parameters(cuda):
    engine.manual_seed(0)
    model = SmallResNet().eval().cuda()
    graph = _graph_on_gpu(model)
    x = engine.tensor(_rand(2, 3, 9, 9), device="cuda")
    graph(x)
    graph(x)
    other = SmallResNet().eval()
    randomize_bn(other)
    model.load_state_dict(other.state_dict())
    with engine.no_grad():
        model.fc.weight.mul_(3)  # in place: the graph reads the same memory
        want = model(x)
    assert_close(graph(x).cpu().numpy(), want.cpu().numpy(), rtol=1e-5)


class _HostRead(Function):
    """x * its mean, the mean read on the host: traceable, but not capturable (a device-to-host copy)."""

    def forward(self, x):
        return x * float(x.mean())


class HostReadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return _HostRead()(self.conv(x))


def test_an_op_that_cannot_be_captured_warns_and_replays_op_by_op(cuda):
    engine.manual_seed(0)
    model = HostReadNet().cuda()
    graph = _graph_on_gpu(model)
    x = engine.tensor(_rand(2, 3, 7, 8), device="cuda")
    with pytest.warns(RuntimeWarning, match=r"^InferenceGraph: _HostRead cannot be captured into a CUDA graph "
                                            r"\(.+\); this plan is replayed op by op$"):
        graph(x)
    assert graph._last_plan.captured is None
    x2 = engine.tensor(_rand(2, 3, 7, 8, seed=1), device="cuda")
    with engine.no_grad():
        want = model(x2)
    assert_close(graph(x2).cpu().numpy(), want.cpu().numpy(), rtol=1e-5)


def test_a_data_dependent_size_is_not_captured(cuda):
    class Positive(nn.Module):
        def forward(self, x):
            return x[x > 0] * 2

    graph = _graph_on_gpu(Positive())
    with pytest.warns(RuntimeWarning, match=r"TensorIndex cannot be captured into a CUDA graph \(its output size "
                                            r"depends on values\)"):
        graph(engine.tensor(_rand(5, 4), device="cuda"))
    x = _rand(5, 4, seed=3)
    assert_close(graph(engine.tensor(x, device="cuda")).cpu().numpy(), x[x > 0] * 2)


def test_random_draws_are_captured_and_new_in_each_replay(cuda):
    class Noisy(nn.Graph):
        def build(self, x):
            noise = engine.normal(x, engine.full_like(x, 0.5))  # tensor arguments: drawn on the device too
            return x + engine.rand(x.shape, device="cuda") + engine.randn(x.shape, device="cuda") + noise

    graph = Noisy()
    x = engine.zeros(64, 5, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws = [graph(x).cpu().numpy() for _ in range(4)]
    assert graph._last_plan.captured is not None
    assert len({d.tobytes() for d in draws}) == 4  # the replays (calls 2-4) too
    assert all(abs(d.mean() - 0.5) < 0.3 for d in draws)


def test_a_sampler_of_cupys_generator_is_not_captured(cuda):
    class Integers(nn.Graph):
        def build(self, x):
            return x + engine.randint(0, 10, x.shape, device="cuda")

    graph = Integers()
    x = engine.zeros(4, 5, dtype=engine.int64, device="cuda")
    with pytest.warns(RuntimeWarning, match=r"^Integers: _RandomFill cannot be captured into a CUDA graph \(the "
                                            r"randint sampler draws from CuPy's generator, .*\); this plan is "
                                            r"replayed op by op$"):
        first = graph(x).cpu().numpy()
    second = graph(x).cpu().numpy()
    assert not np.array_equal(first, second) and 0 <= min(first.min(), second.min()) and second.max() < 10


def test_a_loaded_graph_is_captured(cuda, tmp_path):
    model = small_resnet_on_gpu()
    graph = _graph_on_gpu(model)
    graph(engine.tensor(_rand(2, 3, 9, 9), device="cuda"))
    graph.save(tmp_path / "g.safetensors")
    loaded = nn.Graph.load(tmp_path / "g.safetensors")
    for seed in (1, 2, 3):
        x = engine.tensor(_rand(2, 3, 9, 9, seed=seed), device="cuda")
        with engine.no_grad():
            want = model(x)
        assert_close(loaded(x).cpu().numpy(), want.cpu().numpy(), 1e-5)
    assert loaded.captured


class MatmulGraph(nn.Graph):
    def __init__(self):
        super().__init__()
        self.switches = []

    def build(self, a, b):
        self.switches.append((engine.backends.cuda.matmul.allow_tf32, engine.backends.cudnn.allow_tf32))
        return engine.matmul(a, b)


def test_config_allow_tf32_holds_inside_the_graph_only(cuda):
    graph = MatmulGraph()
    graph.config.allow_tf32(True)
    a = engine.tensor(_rand(256, 512), device="cuda")
    b = engine.tensor(_rand(512, 128, seed=1), device="cuda")
    for _ in range(3):
        tf32 = graph(a, b).cpu().numpy()
    assert graph.switches == [(True, True)] and "tf32=True" in repr(graph.config)
    assert not engine.backends.cuda.matmul.allow_tf32 and not engine.backends.cudnn.allow_tf32
    if cuda == "gpu":  # TF32 rounds the operands to 10 mantissa bits: about 1e-3 relative, not float32's 1e-7
        exact = _rand(256, 512).astype(np.float64) @ _rand(512, 128, seed=1)
        error = np.abs(tf32 - exact).max() / np.abs(exact).max()
        assert 1e-5 < error < 1e-2


def test_cuda_graph_can_be_turned_off(cuda):
    graph = _graph_on_gpu(SmallResNet().eval().cuda())
    graph.config.enable_cuda_graph(False)
    graph(engine.tensor(_rand(2, 3, 9, 9), device="cuda"))
    assert graph._last_plan.captured is None and "cuda_graph=False" in repr(graph.config)


def _optimizer(kind, model):
    if kind == "sgd":
        return engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4, nesterov=True)
    return engine.optim.AdamW(model.parameters(), lr=0.01)


def _train_on_gpu(kind, accumulation, use_graph, batches, model=None):
    engine.manual_seed(0)
    model = (model or SmallResNet()).train().cuda()
    optimizer = _optimizer(kind, model)
    scheduler = engine.optim.lr_scheduler.StepLR(optimizer, 2, 0.5)
    graph = TrainGraph(model, optimizer, scheduler) if use_graph else None
    if graph is not None:
        graph.config.set_gradient_accumulation_steps(accumulation)
    losses = []
    for x, y in batches:
        x, y = engine.tensor(x, device="cuda"), engine.tensor(y, device="cuda")
        if graph is not None:
            losses.append(graph(x, y).item())
            continue
        optimizer.zero_grad()
        total = 0.0
        for xs, ys in zip(x.chunk(accumulation, 0), y.chunk(accumulation, 0)):
            loss = nn.functional.cross_entropy(model(xs), ys)
            (loss / accumulation).backward()
            total += loss.item()
        optimizer.step()
        scheduler.step()
        losses.append(total / accumulation)
    return losses, model, optimizer, graph


@pytest.mark.parametrize("kind", ["sgd", "adamw"])
@pytest.mark.parametrize("accumulation", [1, 2])
def test_training_step_is_captured_and_equals_eager(cuda, kind, accumulation):
    """Step 1 traces, step 2 runs and captures, steps 3-6 replay the captured step (forward, backward, the
    update with the learning rate the scheduler set): losses, parameters and optimizer state equal eager's."""
    rng = np.random.default_rng(0)
    batches = [(_rand(4, 3, 9, 11, seed=s), rng.integers(0, 5, 4)) for s in range(6)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        graph_losses, graph_model, graph_opt, graph = _train_on_gpu(kind, accumulation, True, batches)
    eager_losses, eager_model, eager_opt, _ = _train_on_gpu(kind, accumulation, False, batches)
    assert len(graph._steps) == 1 and next(iter(graph._steps.values())) is not False
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    eager_state = eager_model.state_dict()
    for name, value in graph_model.state_dict().items():
        assert_close(value.cpu().numpy(), eager_state[name].cpu().numpy(), 1e-5, name)
    for p, q in zip(graph_model.parameters(), eager_model.parameters()):
        assert_close(p.grad.cpu().numpy(), q.grad.cpu().numpy(), 1e-5, "gradient")
        for key, value in eager_opt.state[q].items():
            assert_close(engine.as_tensor(graph_opt.state[p][key]).cpu().numpy(), value.cpu().numpy(), 1e-5, key)
    assert graph_opt.param_groups[0]["lr"] == eager_opt.param_groups[0]["lr"]


def test_training_step_is_captured_anew_when_a_setting_changes(cuda):
    rng = np.random.default_rng(1)
    batches = [(_rand(4, 3, 9, 11, seed=s), rng.integers(0, 5, 4)) for s in range(5)]
    runs = []
    for use_graph in (True, False):
        engine.manual_seed(0)
        model = SmallResNet().train().cuda()
        optimizer = engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        graph = TrainGraph(model, optimizer)
        losses = []
        for i, (x, y) in enumerate(batches):
            if i == 3:
                optimizer.param_groups[0]["momentum"] = 0.5
            x, y = engine.tensor(x, device="cuda"), engine.tensor(y, device="cuda")
            if use_graph:
                losses.append(graph(x, y).item())
            else:
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        runs.append((losses, model))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    assert_close(runs[0][1].fc.weight.detach().cpu().numpy(), runs[1][1].fc.weight.detach().cpu().numpy(), 1e-5)


def run_training(model, optimizer, batches, use_graph, amp=False):
    """(losses, the graph) of SGD steps on the GPU over ``batches`` of arrays, in a TrainGraph or eagerly (under
    bfloat16 autocast where ``amp``)."""
    graph = TrainGraph(model, optimizer)
    graph.config.enable_amp(amp)
    losses = []
    for x, y in batches:
        x, y = engine.tensor(x, device="cuda"), engine.tensor(y, device="cuda")
        if use_graph:
            losses.append(graph(x, y).item())
            continue
        optimizer.zero_grad()
        with engine.backends.runtime("cuda").autocast() if amp else contextlib.nullcontext():
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, graph


def test_a_training_step_with_random_draws_is_captured_and_equals_eager(cuda):
    """Dropout, stochastic depth's ``bernoulli_``, ``bernoulli`` and ``randn`` in a captured step draw what eager
    steps draw after the same seed: the generator's offset advances on the device in each replay."""
    rng = np.random.default_rng(2)
    batches = [(_rand(8, 6, seed=s), rng.integers(0, 3, 8)) for s in range(5)]
    runs = []
    for use_graph in (True, False):
        engine.manual_seed(0)
        model = DropNet().cuda()
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            losses, graph = run_training(model, engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), batches,
                                         use_graph)
        runs.append((losses, model, graph))
    assert next(iter(runs[0][2]._steps.values())) is not False
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-5)
    assert len(set(runs[0][0])) == 5
    for (name, ours), theirs in zip(runs[0][1].state_dict().items(), runs[1][1].state_dict().values()):
        assert_close(ours.cpu().numpy(), theirs.cpu().numpy(), 1e-5, name)


class _HostReadInBackward(Function):
    """x * 2, whose backward reads the gradient's mean on the host: captured forward, refused in the backward."""

    def forward(self, x):
        return x * 2

    def backward(self, gy):
        return gy * 2 + float(gy.mean()) * 0


class BackwardHostReadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return _HostReadInBackward()(self.fc(x))


def test_a_backward_that_cannot_be_captured_warns_naming_it(cuda):
    rng = np.random.default_rng(3)
    model = BackwardHostReadNet().cuda()
    graph = TrainGraph(model, engine.optim.SGD(model.parameters(), lr=0.1))
    batches = [(engine.tensor(_rand(8, 6, seed=s), device="cuda"), engine.tensor(rng.integers(0, 3, 8), device="cuda"))
               for s in range(3)]
    graph(*batches[0])
    with pytest.warns(RuntimeWarning, match=r"^TrainGraph: _HostReadInBackwardBackward cannot be captured into a CUDA "
                                            r"graph \(.+\); the training step runs op by op$"):
        graph(*batches[1])
    assert np.isfinite(graph(*batches[2]).item()) and next(iter(graph._steps.values())) is False


def test_layer_norm_training_is_captured(cuda):
    """LayerNorm's weight gradient is a reduction, not CuPy's einsum (cuBLAS, which a capture refuses)."""
    model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.Linear(8, 3)).cuda()
    graph = TrainGraph(model, engine.optim.SGD(model.parameters(), lr=0.1))
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for s in range(3):
            graph(engine.tensor(_rand(8, 6, seed=s), device="cuda"), engine.tensor(rng.integers(0, 3, 8), device="cuda"))
    assert next(iter(graph._steps.values())) is not False


class EinsumNet(nn.Module):
    """A linear layer, then MViT's decomposed relative positions: an einsum of the queries with a position table."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 12)
        self.table = nn.Parameter(engine.randn(4, 5, 3))
        self.head = nn.Linear(4 * 4 * 5, 3)

    def forward(self, x):
        q = self.proj(x).reshape(-1, 4, 3)
        rel = engine.einsum("bhc,hkc->bhk", q, self.table)
        return self.head(engine.einsum("bhk,bgk->bhgk", rel, rel).flatten(1))


def test_einsum_training_is_captured_and_equals_eager(cuda):
    """On the GPU einsum contracts through the GEMM kernel (CuPy's einsum calls cuBLAS, which a capture refuses):
    a training step of forward and backward einsums is captured and its losses equal eager steps'."""
    rng = np.random.default_rng(5)
    batches = [(_rand(8, 6, seed=s), rng.integers(0, 3, 8)) for s in range(4)]
    losses = []
    for use_graph in (True, False):
        engine.manual_seed(0)
        model = EinsumNet().cuda()
        optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
        graph = TrainGraph(model, optimizer)
        run = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for x, y in batches:
                x, y = engine.tensor(x, device="cuda"), engine.tensor(y, device="cuda")
                if use_graph:
                    run.append(graph(x, y).item())
                    continue
                optimizer.zero_grad()
                loss = graph.loss_fn(model(x), y)
                loss.backward()
                optimizer.step()
                run.append(loss.item())
        losses.append(run)
        if use_graph:
            assert next(iter(graph._steps.values())) is not False
    assert_close(np.array(losses[0]), np.array(losses[1]), 1e-5)


def test_a_cpu_index_tensor_indexes_a_cuda_tensor_in_a_graph(cuda):
    """As in eager mode and in torch, a CPU index tensor indexes a CUDA tensor while nn.Graph traces (its copy to
    the GPU then keeps the plan from being captured: it warns and replays op by op)."""
    index = engine.tensor([2, 0, 1, 1])

    class Gather(nn.Module):
        def forward(self, x):
            return x[:, index] * 2

    model = Gather()
    x = engine.tensor(_rand(3, 5), device="cuda")
    graph = InferenceGraph(model)
    with pytest.warns(RuntimeWarning, match="cannot be captured into a CUDA graph"):
        out = graph(x)
        out = graph(x)
    assert out.device.type == "cuda"
    assert_close(out.cpu().numpy(), _rand(3, 5)[:, [2, 0, 1, 1]] * 2, 1e-6)


def test_replays_allocate_nothing(cuda):
    """20 replays leave the graph's pool and the default pool's bytes in use where they were (the emulation's
    default pool holds nothing: there, the graph's pool is what is checked)."""
    import cupy
    engine.manual_seed(0)
    graph = _graph_on_gpu(SmallResNet().eval().cuda())
    x = engine.tensor(_rand(4, 3, 32, 32), device="cuda")
    graph(x)
    captured = graph._last_plan.captured
    pool = cupy.get_default_memory_pool()
    graph(x)
    cupy.cuda.Device().synchronize()
    before = (captured.graph.pool_bytes(), pool.used_bytes())
    assert before[0] >= captured.graph.arena.arena_bytes > 0
    for _ in range(20):
        graph(x)
    cupy.cuda.Device().synchronize()
    assert (captured.graph.pool_bytes(), pool.used_bytes()) == before


class IntegerMatmulNet(nn.Module):
    """A linear layer whose output is shifted by an integer matmul's result (cuBLAS has no int64 GEMM)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        counts = engine.ones(2, 3, dtype=engine.int64, device=x.device)
        return self.fc(x) + (counts.T @ counts).sum(0).float() * 0.01



def test_a_step_with_a_matmul_cublas_cannot_take_trains_op_by_op(cuda):
    """The capture's warm-up is the call's own step, so it multiplies as eager code does where the cuBLAS binding
    cannot: the step completes, the capture is refused with the warning, and training goes on as eager's."""
    rng = np.random.default_rng(5)
    batches = [(_rand(8, 6, seed=s), rng.integers(0, 3, 8)) for s in range(4)]
    engine.manual_seed(0)
    model = IntegerMatmulNet().cuda()
    with pytest.warns(RuntimeWarning, match=r"^TrainGraph: .+ cannot be captured into a CUDA graph \(cuBLAS matmul "
                                            r"takes two arrays of one of .+int64.+; the training step runs op by op$"):
        losses, graph = run_training(model, engine.optim.SGD(model.parameters(), lr=0.1), batches, True)
    assert next(iter(graph._steps.values())) is False
    engine.manual_seed(0)
    model = IntegerMatmulNet().cuda()
    eager, _ = run_training(model, engine.optim.SGD(model.parameters(), lr=0.1), batches, False)
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
