"""bfloat16 tensors against torch's: the dtype and its promotion, rounding, creation, printing, ops forward and
backward (``check_op(dtype="bfloat16")``), a zoo model, training steps, and bfloat16 on the GPU (emulated here,
``cuda`` on a GPU). Ops compute in float32 and round once (``engine/autograd/bfloat16.py``); torch's CPU
kernels do too, but some accumulate in another order, so values are compared within a few bfloat16 steps
(2^-8 = 0.4% relative each)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import torchvision
from op_check import assert_close, check_op

import engine
import engine.nn.functional as F
import flowvision

FORWARD_RTOL = 1e-2
GRAD_RTOL = 3e-2


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _distinct(*shape, seed=0):
    """Values far enough apart to stay distinct in bfloat16 (ties would let sorts pick other indices)."""
    n = int(np.prod(shape))
    values = np.random.default_rng(seed).permutation(n).astype(np.float32) / 8 - n / 16
    return values.reshape(shape)


def test_the_dtype_and_its_promotion():
    assert engine.bfloat16.is_floating_point and engine.bfloat16.is_signed and engine.bfloat16.itemsize == 2
    assert engine.bfloat16.title == "BFloat16"
    for other in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"):
        ours = engine.promote_types(engine.bfloat16, getattr(engine, other))
        theirs = torch.promote_types(torch.bfloat16, getattr(torch, other))
        assert ours.name == str(theirs).split(".")[1], other
    x = engine.ones(3, dtype=engine.bfloat16)
    assert (x + 2).dtype == engine.bfloat16 and (x * 2.5).dtype == engine.bfloat16
    assert (x + engine.tensor(1.0)).dtype == engine.bfloat16  # a 0-dim float32 does not lift a dimensioned one
    assert (x + engine.ones(3)).dtype == engine.float32
    assert (x + engine.ones(3, dtype=engine.float16)).dtype == engine.float32
    assert (x.sum(dtype=engine.float32)).dtype == engine.float32 and x.float().dtype == engine.float32


def test_rounding_matches_torch():
    values = np.concatenate([_randn(500) * 1e3, [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.4e38, -3.4e38,
                                                np.inf, -np.inf, 0.0, -0.0, 1e-40, np.nan]]).astype(np.float32)
    ours = engine.from_numpy(values).bfloat16().float().numpy()
    theirs = torch.from_numpy(values).bfloat16().float().numpy()
    np.testing.assert_array_equal(ours, theirs)
    numbers = ~np.isnan(theirs)  # a NaN's sign bit is not a value
    assert np.array_equal(np.signbit(ours[numbers]), np.signbit(theirs[numbers]))


def test_creation_printing_and_python_values():
    for make in (lambda lib: lib.zeros(2, 3, dtype=lib.bfloat16), lambda lib: lib.ones(4, dtype=lib.bfloat16),
                 lambda lib: lib.full((2,), 1.5, dtype=lib.bfloat16), lambda lib: lib.arange(5, dtype=lib.bfloat16),
                 lambda lib: lib.tensor([1.0, 2.5, -3.0], dtype=lib.bfloat16),
                 lambda lib: lib.zeros_like(lib.ones(2), dtype=lib.bfloat16)):
        ours, theirs = make(engine), make(torch)
        assert ours.dtype == engine.bfloat16
        assert repr(ours) == repr(theirs).replace("torch.", "engine.")
    assert engine.randn(3, 4, dtype=engine.bfloat16).dtype == engine.bfloat16
    assert engine.rand(5, dtype=engine.bfloat16).dtype == engine.bfloat16
    x = engine.tensor([1.5, -2.25], dtype=engine.bfloat16)
    assert x.tolist() == [1.5, -2.25] and type(x[0].item()) is float
    assert x.type() == "engine.BFloat16Tensor" and x.is_floating_point()
    assert repr(engine.randn(2, 3).bfloat16() * 0).endswith("dtype=engine.bfloat16)")


@pytest.mark.parametrize("n", [5, 20, 37])
def test_random_numbers_are_torch_s(n):
    """The same seed gives torch's bfloat16 draws: drawn in float32 and rounded, with float16's block order."""
    draws = {"randn": lambda lib: lib.randn(n, dtype=lib.bfloat16), "rand": lambda lib: lib.rand(n, dtype=lib.bfloat16),
             "normal_": lambda lib: lib.empty(n, dtype=lib.bfloat16).normal_(2, 3),
             "exponential_": lambda lib: lib.empty(n, dtype=lib.bfloat16).exponential_()}
    for name, draw in draws.items():
        engine.manual_seed(3)
        torch.manual_seed(3)
        np.testing.assert_array_equal(draw(engine).float().numpy(), draw(torch).float().numpy(), err_msg=name)


def test_bfloat16_needs_ml_dtypes_and_says_so(monkeypatch):
    monkeypatch.setattr(engine.bfloat16, "np", None)
    message = "engine.bfloat16 tensors need the ml_dtypes package: pip install ml_dtypes"
    with pytest.raises(RuntimeError, match=message):
        engine.zeros(2, dtype=engine.bfloat16)
    with pytest.raises(RuntimeError, match=message):
        engine.ones(2).bfloat16()
    assert engine.ones(2).half().dtype == engine.float16  # the other types do not care


@pytest.mark.slow  # a fresh interpreter (2 s): outside the quick subset
def test_ml_dtypes_is_imported_at_the_first_use_of_bfloat16():
    """engine and flowvision import without ml_dtypes (0.6-0.8 s of import time); the first bfloat16 tensor brings
    it in, in a fresh process where CuPy (which imports it too) is absent."""
    script = textwrap.dedent("""
        import sys
        class NoCupy:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("cupy", "cupy_backends"):
                    raise ImportError(name)
        sys.meta_path.insert(0, NoCupy())
        import io
        import engine, flowvision.models
        engine.save({"x": engine.ones(2)}, io.BytesIO())
        assert (engine.ones(2) + 1).dtype == engine.float32
        assert engine.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
        assert "ml_dtypes" not in sys.modules, "imported with engine or a float arange"
        x = engine.ones(3).bfloat16() * 3
        assert x.dtype == engine.bfloat16 and x.float().tolist() == [3.0, 3.0, 3.0]
        buffer = io.BytesIO()
        engine.save({"x": x}, buffer)
        buffer.seek(0)
        assert engine.load(buffer)["x"].dtype == engine.bfloat16
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]


def test_an_ml_dtypes_array_before_the_first_use_of_bfloat16(monkeypatch):
    """An array of ml_dtypes' bfloat16 handed to engine before engine has used bfloat16 (its numpy dtype then
    missing from the dtype table) is a bfloat16 tensor."""
    import ml_dtypes
    from engine import _dtype
    monkeypatch.setattr(_dtype, "_BY_NP", {k: v for k, v in _dtype._BY_NP.items() if v is not engine.bfloat16})
    x = engine.from_numpy(np.full(2, 1.5, ml_dtypes.bfloat16))
    assert x.dtype == engine.bfloat16 and (x * 2).dtype == engine.bfloat16 and x.sum().item() == 3.0


@pytest.mark.parametrize("norm", ["batch_norm", "layer_norm", "group_norm"])
def test_norms_keep_a_bfloat16_input_s_dtype_with_float32_weights(norm):
    """As torch's mixed-dtype norms: the output is bfloat16, the float32 weights get float32 gradients."""
    calls = {"batch_norm": lambda L, x, w, b: L.nn.functional.batch_norm(x, None, None, w, b, training=True),
             "layer_norm": lambda L, x, w, b: L.nn.functional.layer_norm(x, (6,), w, b),
             "group_norm": lambda L, x, w, b: L.nn.functional.group_norm(x, 5, w, b)}
    weights = _randn(6 if norm == "layer_norm" else 5, seed=1)
    results = []
    for lib in (torch, engine):
        x = lib.from_numpy(_x4).bfloat16().requires_grad_()
        w, b = (lib.from_numpy(a.copy()).requires_grad_() for a in (weights, weights[::-1].copy()))
        out = calls[norm](lib, x, w, b)
        out.backward(lib.from_numpy(_randn(*_x4.shape, seed=3)).bfloat16())
        assert out.dtype == lib.bfloat16 and x.grad.dtype == lib.bfloat16 and w.grad.dtype == lib.float32
        results.append([out.detach().float().numpy(), x.grad.float().numpy(), w.grad.numpy(), b.grad.numpy()])
    for ours, theirs, what in zip(results[1], results[0], ("output", "input grad", "weight grad", "bias grad")):
        assert_close(ours, theirs, GRAD_RTOL, what)


def test_views_of_bfloat16_tensors_share_their_memory():
    """Views (a reshape included, whose view-ness is decided as it runs) write through to the base, as in
    float32: bfloat16 ops compute on float32 copies, views must not."""
    writes = [lambda x: x.view(6).__setitem__(1, 5.0), lambda x: x.reshape(3, 2).fill_(5.0),
              lambda x: x.unsqueeze(0).fill_(5.0), lambda x: x.flatten().fill_(5.0), lambda x: x.t().fill_(5.0),
              lambda x: x[:, 1:].fill_(5.0), lambda x: x.permute(1, 0).fill_(5.0),
              lambda x: x.view(3, 2).mul_(2).add_(5.0)]
    for write in writes:
        x = engine.zeros(2, 3, dtype=engine.bfloat16)
        write(x)
        assert x[0, 1].item() == 5.0


def test_in_place_results_narrow_within_their_category_as_torch():
    """A float32 result goes into a bfloat16 or float16 tensor in place (rounded); never a float into an
    integer tensor, nor an integer into a bool one, with torch's message."""
    for lib in (engine, torch):
        x = lib.zeros(3, dtype=lib.bfloat16)
        x.add_(lib.full((3,), 1.3))
        x.mul_(lib.full((3,), 2.0))
        assert x.dtype == lib.bfloat16 and x.tolist() == [2.59375] * 3
        assert lib.zeros(2).half().copy_(lib.full((2,), 0.1)).tolist() == [0.0999755859375] * 2
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            lib.zeros(3, dtype=lib.int64).add_(lib.ones(3))
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired output type Bool"):
            lib.zeros(3, dtype=lib.bool).add_(lib.ones(3, dtype=lib.int64))


_x4 = _randn(3, 5, 7, 6)
OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b, [_x4, _randn(6, seed=1)]),
    "mul by a 0-dim float32": (lambda a: a * engine.tensor(1.5), lambda a: a * torch.tensor(1.5), [_x4]),
    "exp": (lambda a: a.exp(), lambda a: a.exp(), [_x4]),
    "gelu": (F.gelu, TF.gelu, [_x4]),
    "silu": (F.silu, TF.silu, [_x4]),
    "hardswish": (F.hardswish, TF.hardswish, [_x4]),
    "softmax": (lambda a: F.softmax(a, 1), lambda a: TF.softmax(a, 1), [_x4]),
    "log_softmax": (lambda a: F.log_softmax(a, -1), lambda a: TF.log_softmax(a, -1), [_x4]),
    "sum": (lambda a: a.sum(), lambda a: a.sum(), [_x4]),
    "mean": (lambda a: a.mean((2, 3)), lambda a: a.mean((2, 3)), [_x4]),
    "var": (lambda a: a.var(1), lambda a: a.var(1), [_x4]),
    "norm": (lambda a: a.norm(), lambda a: a.norm(), [_x4]),
    "sum into float32": (lambda a: a.sum(1, dtype=engine.float32), lambda a: a.sum(1, dtype=torch.float32), [_x4]),
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [_randn(4, 7, 9), _randn(9, 5, seed=1)]),
    "linear": (F.linear, TF.linear, [_randn(4, 9), _randn(5, 9, seed=1), _randn(5, seed=2)]),
    "einsum": (lambda a, b: engine.einsum("bij,jk->bik", a, b), lambda a, b: torch.einsum("bij,jk->bik", a, b),
               [_randn(2, 3, 4), _randn(4, 5, seed=1)]),
    "conv2d": (lambda a, w, b: F.conv2d(a, w, b, 2, 1), lambda a, w, b: TF.conv2d(a, w, b, 2, 1),
               [_randn(2, 3, 11, 9), _randn(4, 3, 3, 3, seed=1), _randn(4, seed=2)]),
    "depthwise conv2d": (lambda a, w: F.conv2d(a, w, None, 1, 1, 1, 3), lambda a, w: TF.conv2d(a, w, None, 1, 1, 1, 3),
                         [_randn(2, 3, 11, 9), _randn(3, 1, 3, 3, seed=1)]),
    "conv_transpose2d": (lambda a, w: F.conv_transpose2d(a, w, stride=2),
                         lambda a, w: TF.conv_transpose2d(a, w, stride=2),
                         [_randn(2, 3, 5, 4), _randn(3, 2, 3, 3, seed=1)]),
    "max_pool2d": (lambda a: F.max_pool2d(a, 3, 2, 1), lambda a: TF.max_pool2d(a, 3, 2, 1), [_distinct(2, 3, 9, 7)]),
    "avg_pool2d": (lambda a: F.avg_pool2d(a, 2), lambda a: TF.avg_pool2d(a, 2), [_x4]),
    "adaptive_avg_pool2d": (lambda a: F.adaptive_avg_pool2d(a, 3), lambda a: TF.adaptive_avg_pool2d(a, 3), [_x4]),
    "bilinear": (lambda a: F.interpolate(a, (9, 13), mode="bilinear"),
                 lambda a: TF.interpolate(a, (9, 13), mode="bilinear"), [_x4]),
    "nearest": (lambda a: F.interpolate(a, scale_factor=2), lambda a: TF.interpolate(a, scale_factor=2), [_x4]),
    "batch_norm": (lambda a, w, b: F.batch_norm(a, None, None, w, b, training=True),
                   lambda a, w, b: TF.batch_norm(a, None, None, w, b, training=True), [_x4, _randn(5, seed=1),
                                                                                     _randn(5, seed=2)]),
    "layer_norm": (lambda a, w, b: F.layer_norm(a, (6,), w, b), lambda a, w, b: TF.layer_norm(a, (6,), w, b),
                   [_x4, _randn(6, seed=1), _randn(6, seed=2)]),
    "group_norm": (lambda a: F.group_norm(a, 5), lambda a: TF.group_norm(a, 5), [_x4]),
    "cross_entropy": (lambda a: F.cross_entropy(a, engine.tensor([1, 0, 3])),
                      lambda a: TF.cross_entropy(a, torch.tensor([1, 0, 3])), [_randn(3, 5)]),
    "mse_loss": (F.mse_loss, TF.mse_loss, [_x4, _randn(3, 5, 7, 6, seed=1)]),
    "attention": (F.scaled_dot_product_attention, TF.scaled_dot_product_attention,
                  [_randn(2, 3, 5, 4), _randn(2, 3, 6, 4, seed=1), _randn(2, 3, 6, 4, seed=2)]),
    "cat and slices": (lambda a, b: engine.cat([a, b], 1)[:, 1:7, ::2], lambda a, b: torch.cat([a, b], 1)[:, 1:7, ::2],
                       [_x4, _x4[::-1].copy()]),
    "where": (lambda a: engine.where(a > 0, a, 0.0), lambda a: torch.where(a > 0, a, 0.0), [_x4]),
    "clamp": (lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5), [_x4]),
    "topk": (lambda a: a.topk(3, -1), lambda a: a.topk(3, -1), [_distinct(4, 9)]),
    "embedding": (lambda w: F.embedding(engine.tensor([[1, 2], [0, 4]]), w),
                  lambda w: TF.embedding(torch.tensor([[1, 2], [0, 4]]), w), [_randn(6, 3)]),
    "to float32 and back": (lambda a: (a.float() * 3).bfloat16(), lambda a: (a.float() * 3).bfloat16(), [_x4]),
}


@pytest.mark.parametrize("name", OPS)
def test_op_matches_torch_in_bfloat16(name):
    ours, theirs, inputs = OPS[name]
    check_op(ours, theirs, inputs, rtol=FORWARD_RTOL, grad_rtol=GRAD_RTOL, dtype="bfloat16")


@pytest.mark.slow
def test_a_zoo_model_in_bfloat16():
    """resnet18 with torchvision's weights, both cast to bfloat16: the same logits within a few bfloat16 steps."""
    torch.manual_seed(0)
    theirs = torchvision.models.resnet18(num_classes=10).eval()
    ours = flowvision.models.resnet18(num_classes=10).eval()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    ours, theirs = ours.bfloat16(), theirs.bfloat16()
    assert ours.conv1.weight.dtype == engine.bfloat16 and ours.bn1.num_batches_tracked.dtype == engine.int64
    x = _randn(2, 3, 40, 40)
    with torch.no_grad():
        expected = theirs(torch.from_numpy(x).bfloat16()).float().numpy()
    with engine.no_grad():
        out = ours(engine.from_numpy(x).bfloat16())
    assert out.dtype == engine.bfloat16
    assert_close(out.float().numpy(), expected, FORWARD_RTOL)


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_training_steps_in_bfloat16(optimizer):
    """A small CNN's losses and bfloat16 parameters over 4 steps of SGD momentum or AdamW, as torch's."""
    def build(lib):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 6, 3, padding=1, bias=False), lib.nn.BatchNorm2d(6), lib.nn.ReLU(),
                                lib.nn.AdaptiveAvgPool2d(1), lib.nn.Flatten(), lib.nn.Linear(6, 4))
        return net
    theirs = build(torch)
    ours = build(engine)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    results = []
    for lib, net in ((torch, theirs), (engine, ours)):
        net = net.bfloat16()
        opt = (lib.optim.SGD(net.parameters(), lr=0.1, momentum=0.9) if optimizer == "SGD"
               else lib.optim.AdamW(net.parameters(), lr=0.01))
        losses = []
        for step in range(4):
            x = lib.from_numpy(_randn(8, 3, 9, 9, seed=step)).bfloat16()
            y = lib.from_numpy(np.arange(8) % 4)
            loss = lib.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert all(p.dtype == lib.bfloat16 for p in net.parameters())
        results.append((losses, [p.detach().float().numpy() for p in net.parameters()]))
    (t_losses, t_params), (o_losses, o_params) = results
    np.testing.assert_allclose(o_losses, t_losses, rtol=FORWARD_RTOL)
    # one vector: a parameter near zero (BatchNorm's bias early on) has rounding as its value
    assert_close(np.concatenate([o.ravel() for o in o_params]), np.concatenate([t.ravel() for t in t_params]),
                 FORWARD_RTOL, "parameters")


GPU_OPS = {
    "conv2d": lambda a, w: F.conv2d(a, w, None, 1, 1),
    "max_pool2d": lambda a, w: F.max_pool2d(a, 2),
    "bilinear": lambda a, w: F.interpolate(a, scale_factor=2, mode="bilinear"),
    "adaptive_avg_pool2d": lambda a, w: F.adaptive_avg_pool2d(a, 3),
    "batch_norm": lambda a, w: F.batch_norm(a, None, None, training=True),
    "matmul": lambda a, w: a.flatten(2) @ a.flatten(2).transpose(1, 2),
    "softmax": lambda a, w: F.softmax(a, 1),
}


@pytest.mark.parametrize("name", GPU_OPS)
def test_bfloat16_on_the_gpu(cuda, name):
    """bfloat16 tensors on the GPU go through the same float32 kernels and give the CPU's values and
    gradients, in bfloat16, on the GPU."""
    op = GPU_OPS[name]
    arrays = _randn(2, 3, 9, 8), _randn(4, 3, 3, 3, seed=1) * 0.2
    on_gpu = [engine.from_numpy(a).bfloat16().cuda().requires_grad_() for a in arrays]
    on_cpu = [engine.from_numpy(a).bfloat16().requires_grad_() for a in arrays]
    out, expected = op(*on_gpu), op(*on_cpu)
    assert out.dtype == engine.bfloat16 and out.device.type == "cuda"
    upstream = _randn(*out.shape, seed=2)  # not all ones: a normalisation's input gradient would be all rounding
    (out.float() * engine.from_numpy(upstream).cuda()).sum().backward()
    (expected.float() * engine.from_numpy(upstream)).sum().backward()
    assert_close(out.detach().cpu().float().numpy(), expected.detach().float().numpy(), FORWARD_RTOL)
    for g, c in zip(on_gpu, on_cpu):
        if c.grad is not None:
            assert g.grad.dtype == engine.bfloat16 and g.grad.device.type == "cuda"
            assert_close(g.grad.cpu().float().numpy(), c.grad.float().numpy(), FORWARD_RTOL, "gradient")


class _Inference(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


@pytest.mark.slow
def test_nn_graph_runs_bfloat16_as_eager():
    """An inference graph (replayed on arrays, BatchNorm folded) and a training graph (SGD) of a bfloat16
    model give eager's bfloat16 results."""
    class Train(engine.nn.Graph):
        def __init__(self, model, optimizer):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)

        def build(self, x, y):
            loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    engine.manual_seed(0)
    model = flowvision.models.resnet18(num_classes=10).eval().bfloat16()
    x = engine.from_numpy(_randn(2, 3, 40, 40)).bfloat16()
    with engine.no_grad():
        expected = model(x)
    graph = _Inference(model)
    for out in (graph(x), graph(x)):
        assert out.dtype == engine.bfloat16
        assert_close(out.float().numpy(), expected.float().numpy(), FORWARD_RTOL)
    losses = []
    for use_graph in (False, True):
        engine.manual_seed(1)
        net = engine.nn.Sequential(engine.nn.Conv2d(3, 4, 3), engine.nn.ReLU(), engine.nn.Flatten(),
                                   engine.nn.Linear(4 * 7 * 7, 3)).bfloat16()
        optimizer = engine.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        step = Train(net, optimizer)
        for i in range(3):
            xb = engine.from_numpy(_randn(4, 3, 9, 9, seed=i)).bfloat16()
            yb = engine.tensor([0, 1, 2, 1])
            if use_graph:
                loss = step(xb, yb)
            else:
                loss = F.cross_entropy(net(xb), yb)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            assert loss.dtype == engine.bfloat16
            losses.append(loss.item())
    np.testing.assert_allclose(losses[3:], losses[:3], rtol=FORWARD_RTOL)


@pytest.mark.slow
def test_nn_graph_captures_bfloat16_on_the_gpu(cuda):
    """A bfloat16 resnet18's inference graph on the GPU is captured (no fallback warning) and replays eager's
    bfloat16 logits."""
    import warnings

    engine.manual_seed(0)
    model = flowvision.models.resnet18(num_classes=10).eval().bfloat16().cuda()
    x = engine.from_numpy(_randn(2, 3, 40, 40)).bfloat16().cuda()
    with engine.no_grad():
        expected = model(x).float().cpu().numpy()
    graph = _Inference(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outs = [graph(x) for _ in range(3)]
    for out in outs:
        assert out.dtype == engine.bfloat16 and out.device.type == "cuda"
        assert_close(out.float().cpu().numpy(), expected, FORWARD_RTOL)
