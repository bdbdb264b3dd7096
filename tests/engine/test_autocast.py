"""``engine.autocast`` and ``engine.amp.GradScaler`` against torch's: which ops cast to what on the CPU (op by
op against torch 2.14), whole models and training steps under autocast, the context's rules (nesting, threads,
``out=``, float64, the parameter cache), CUDA's policy on the GPU (emulated here), and the scaler's updates."""
import threading
import warnings

import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close

import engine
import engine.nn.functional as F
import flowvision
from engine.amp import autocast_mode

RTOL = 2e-2


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_x4, _w4, _x3, _m = _randn(2, 3, 8, 8), _randn(4, 3, 3, 3, seed=1), _randn(2, 4, 5, seed=2), _randn(5, 5, seed=3)
_labels = np.array([1, 2, 3])
# name -> (function of a library and its float inputs, inputs): the inputs go in as float32 and as bfloat16
CPU_OPS = {
    "conv1d": (lambda L, a, w: L.nn.functional.conv1d(a, w), [_randn(2, 3, 9), _randn(4, 3, 3, seed=1)]),
    "conv2d": (lambda L, a, w: L.nn.functional.conv2d(a, w, padding=1), [_x4, _w4]),
    "conv_transpose2d": (lambda L, a, w: L.nn.functional.conv_transpose2d(a, w), [_x4, _randn(3, 2, 3, 3)]),
    "conv_transpose3d": (lambda L, a, w: L.nn.functional.conv_transpose3d(a, w), [_randn(2, 3, 2, 4, 4),
                                                                                   _randn(3, 2, 2, 3, 3)]),
    "linear": (lambda L, a, w, b: L.nn.functional.linear(a, w, b), [_x3, _randn(6, 5), _randn(6)]),
    "matmul": (lambda L, a, b: a @ b, [_x3, _m]),
    "mm": (lambda L, a, b: L.mm(a, b), [_m, _m]),
    "bmm": (lambda L, a, b: L.bmm(a, b), [_x3, _randn(2, 5, 3)]),
    "baddbmm": (lambda L, c, a, b: L.baddbmm(c, a, b), [_randn(2, 4, 3), _x3, _randn(2, 5, 3)]),
    "addmm": (lambda L, c, a, b: L.addmm(c, a, b), [_m, _m, _m]),
    "addbmm": (lambda L, c, a, b: L.addbmm(c, a, b), [_randn(4, 3), _x3, _randn(2, 5, 3)]),
    "einsum": (lambda L, a, b: L.einsum("bij,jk->bik", a, b), [_x3, _m]),
    "prelu": (lambda L, a, w: L.nn.functional.prelu(a, w), [_x4, _randn(3)]),
    "attention": (lambda L, q, k, v: L.nn.functional.scaled_dot_product_attention(q, k, v), [_x3, _x3, _x3]),
    "mv (not listed on the CPU)": (lambda L, a, v: L.mv(a, v), [_m, _randn(5)]),
    "dot (not listed)": (lambda L, a, b: L.dot(a, b), [_randn(5), _randn(5, seed=1)]),
    "bilinear (not listed)": (lambda L, a, b, w: L.nn.functional.bilinear(a, b, w),
                              [_randn(4, 5), _randn(4, 5, seed=1), _randn(3, 5, 5, seed=2)]),
    "tensordot (through mm)": (lambda L, a, b: L.tensordot(a, b, 1), [_randn(4, 5), _randn(5, 4, seed=1)]),
    "addmv (CUDA's list only)": (lambda L, c, a, v: L.addmv(c, a, v), [_randn(5), _m, _randn(5, seed=1)]),
    "softmax (not listed)": (lambda L, a: L.nn.functional.softmax(a, -1), [_x3]),
    "layer_norm with float32 weights": (lambda L, a: L.nn.functional.layer_norm(a, (5,), L.ones(5), L.zeros(5)),
                                        [_x3]),
    "batch_norm with float32 statistics": (lambda L, a: L.nn.functional.batch_norm(
        a, L.zeros(3), L.ones(3), L.ones(3), L.zeros(3)), [_x4]),
    "max_pool2d (not listed)": (lambda L, a: L.nn.functional.max_pool2d(a, 2), [_x4]),
    "max_pool3d": (lambda L, a: L.nn.functional.max_pool3d(a, 2), [_randn(2, 2, 3, 4, 4)]),
    "avg_pool3d": (lambda L, a: L.nn.functional.avg_pool3d(a, 2), [_randn(2, 2, 3, 4, 4)]),
    "adaptive_avg_pool3d": (lambda L, a: L.nn.functional.adaptive_avg_pool3d(a, 2), [_randn(2, 2, 3, 4, 4)]),
    "adaptive_max_pool3d": (lambda L, a: L.nn.functional.adaptive_max_pool3d(a, 2), [_randn(2, 2, 3, 4, 4)]),
    "exp (CUDA's list only)": (lambda L, a: a.exp(), [_x3]),
    "sum (CUDA's list only)": (lambda L, a: a.sum(), [_x3]),
    "cross_entropy": (lambda L, a: L.nn.functional.cross_entropy(a, L.from_numpy(_labels)), [_randn(3, 5)]),
    "nll_loss": (lambda L, a: L.nn.functional.nll_loss(a, L.from_numpy(_labels)), [_randn(3, 5)]),
    "mse_loss": (lambda L, a, b: L.nn.functional.mse_loss(a, b), [_x3, _randn(2, 4, 5, seed=5)]),
    "l1_loss": (lambda L, a, b: L.nn.functional.l1_loss(a, b), [_x3, _randn(2, 4, 5, seed=5)]),
    "smooth_l1_loss": (lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b), [_x3, _randn(2, 4, 5, seed=5)]),
    "huber_loss": (lambda L, a, b: L.nn.functional.huber_loss(a, b), [_x3, _randn(2, 4, 5, seed=5)]),
    "binary_cross_entropy_with_logits": (lambda L, a, b: L.nn.functional.binary_cross_entropy_with_logits(
        a, b.sigmoid()), [_x3, _randn(2, 4, 5, seed=5)]),
    "binary_cross_entropy": (lambda L, a, b: L.nn.functional.binary_cross_entropy(a.sigmoid(), b.sigmoid()),
                             [_x3, _randn(2, 4, 5, seed=5)]),
    "kl_div": (lambda L, a, b: L.nn.functional.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"),
               [_x3, _randn(2, 4, 5, seed=5)]),
    "cosine_embedding_loss": (lambda L, a, b: L.nn.functional.cosine_embedding_loss(
        a, b, L.tensor([1.0, -1.0, 1.0, -1.0])), [_randn(4, 5), _randn(4, 5, seed=5)]),
    "triplet_margin_loss": (lambda L, a, b: L.nn.functional.triplet_margin_loss(a, b, a * 2),
                            [_randn(4, 5), _randn(4, 5, seed=5)]),
    "prod": (lambda L, a: (a * 0.5 + 1).prod(), [_randn(7)]),
    "reflect padding": (lambda L, a: L.nn.functional.pad(a, (1, 2, 2, 1), mode="reflect"), [_x4]),
    "replicate padding": (lambda L, a: L.nn.functional.pad(a, (1, 2), mode="replicate"), [_x3]),
    "constant padding (not listed)": (lambda L, a: L.nn.functional.pad(a, (1, 2), value=0.5), [_x3]),
    "trace": (lambda L, a: a.trace(), [_m]),
    "quantile": (lambda L, a: L.quantile(a, 0.3), [_x3]),
    "inverse": (lambda L, a: L.inverse(a + 4 * L.eye(5, dtype=a.dtype)), [_m]),
    "linalg.solve": (lambda L, a, b: L.linalg.solve(a + 4 * L.eye(5, dtype=a.dtype), b), [_m, _randn(5, 2)]),
    "cdist": (lambda L, a, b: L.cdist(a, b), [_x3, _randn(2, 3, 5, seed=5)]),
}


@pytest.mark.parametrize("name", CPU_OPS)
@pytest.mark.parametrize("given", ["float32", "bfloat16"])
def test_cpu_autocast_casts_each_op_as_torch(name, given):
    fn, arrays = CPU_OPS[name]
    results = []
    for lib in (torch, engine):
        inputs = [lib.from_numpy(a.copy()).to(getattr(lib, given)) for a in arrays]
        with lib.autocast("cpu"):
            out = fn(lib, *inputs)
        results.append(out)
    theirs, ours = results
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert_close(ours.detach().float().numpy(), theirs.detach().float().numpy(), RTOL)


@pytest.mark.slow
def test_a_zoo_model_and_its_gradients_under_cpu_autocast():
    """resnet18 under autocast: bfloat16 logits as torch's; float32 parameters get float32 gradients."""
    torch.manual_seed(0)
    theirs = torchvision.models.resnet18(num_classes=10)
    ours = flowvision.models.resnet18(num_classes=10)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x, y = _randn(2, 3, 40, 40), np.array([3, 7])
    outputs = []
    for lib, model in ((torch, theirs), (engine, ours)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            logits = model(lib.from_numpy(x))
            loss = lib.nn.functional.cross_entropy(logits, lib.from_numpy(y))
        loss.backward()
        assert logits.dtype == lib.bfloat16 and loss.dtype == lib.float32
        assert model.conv1.weight.grad.dtype == lib.float32
        outputs.append((logits.detach().float().numpy(), loss.item(), model.fc.weight.grad.numpy()))
    (t_logits, t_loss, t_grad), (o_logits, o_loss, o_grad) = outputs
    assert_close(o_logits, t_logits, RTOL)
    assert abs(o_loss - t_loss) <= RTOL * abs(t_loss)
    assert_close(o_grad, t_grad, 5e-2, "fc gradient")


def test_the_rules_of_the_context():
    x, w = engine.from_numpy(_x4), engine.from_numpy(_w4)
    with engine.autocast("cpu"):
        assert F.conv2d(x, w).dtype == engine.bfloat16
        assert F.conv2d(x.double(), w.double()).dtype == engine.float64  # float64 is never cast
        out = engine.empty(5, 5)
        assert engine.matmul(engine.ones(5, 5), engine.ones(5, 5), out=out).dtype == engine.float32  # out=
        with engine.autocast("cpu", enabled=False):
            assert F.conv2d(x, w).dtype == engine.float32 and not engine.is_autocast_enabled("cpu")
        assert engine.is_autocast_enabled("cpu")
        with engine.autocast("cpu", dtype=engine.float16):
            assert F.conv2d(x, w).dtype == engine.float16
        assert engine.get_autocast_dtype("cpu") == engine.bfloat16
    assert not engine.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="boom"):
        with engine.autocast("cpu"):
            raise ValueError("boom")
    assert not engine.is_autocast_enabled("cpu")

    @engine.autocast("cpu")
    def decorated(a, b):
        return F.conv2d(a, b)
    assert decorated(x, w).dtype == engine.bfloat16 and F.conv2d(x, w).dtype == engine.float32
    engine.set_autocast_enabled("cpu", True)  # torch's switch, outside any region
    try:
        assert F.conv2d(x, w).dtype == engine.bfloat16
    finally:
        engine.set_autocast_enabled("cpu", False)
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        with engine.autocast("cpu", dtype=engine.float64):
            assert F.conv2d(x, w).dtype == engine.float32
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'xpu'"):
        engine.autocast("xpu")


def test_autocast_is_per_thread():
    seen = []
    x, w = engine.from_numpy(_x4), engine.from_numpy(_w4)
    with engine.autocast("cpu"):
        worker = threading.Thread(target=lambda: seen.append(F.conv2d(x, w).dtype))
        worker.start()
        worker.join()
        assert F.conv2d(x, w).dtype == engine.bfloat16
    assert seen == [engine.float32]


def test_parameters_are_cast_once_per_region():
    layer = engine.nn.Linear(5, 3)
    x = engine.from_numpy(_randn(4, 5))
    with engine.autocast("cpu"):
        first, second = layer(x), layer(x * 2)
        assert len(autocast_mode._state.cache) == 2  # weight and bias, cast once for both calls
        (first.float().sum() + second.float().sum()).backward()
    assert not autocast_mode._state.cache
    assert layer.weight.grad.dtype == engine.float32
    expected = (x.numpy() + 2 * x.numpy()).sum(0)  # d/dW of sum(xW^T) over both calls
    assert_close(layer.weight.grad.numpy(), np.broadcast_to(expected, (3, 5)), RTOL)


def test_cuda_policy_on_the_gpu(cuda):
    """float16 by default; CUDA's float32 list (softmax, exp, sum, norms, losses); grid_sample promoting;
    binary_cross_entropy refused with torch's message; CPU tensors untouched by autocast("cuda")."""
    x, w = engine.from_numpy(_x4).cuda(), engine.from_numpy(_w4).cuda()
    with engine.autocast("cuda"):
        y = F.conv2d(x, w, padding=1)
        assert y.dtype == engine.float16 and y.device.type == "cuda"
        assert (y.flatten(1) @ y.flatten(1).t()).dtype == engine.float16
        for op in (lambda t: F.softmax(t, 1), lambda t: t.exp(), lambda t: t.sum(), lambda t: t ** 2,
                   lambda t: F.layer_norm(t, (8,)), lambda t: F.mse_loss(t, t), lambda t: 1 / t):
            assert op(y).dtype == engine.float32
        assert F.relu(y).dtype == engine.float16 and F.max_pool2d(y, 2).dtype == engine.float16
        grid = engine.zeros(2, 3, 3, 2, device="cuda")  # float32: grid_sample promotes both to the widest
        assert F.grid_sample(y, grid, align_corners=False).dtype == engine.float32
        with pytest.raises(RuntimeError, match="binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast"):
            F.binary_cross_entropy(y.sigmoid(), y.sigmoid())
        assert F.conv2d(x.cpu(), w.cpu()).dtype == engine.float32
    with engine.autocast("cuda", dtype=engine.bfloat16):
        assert F.conv2d(x, w).dtype == engine.bfloat16
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        context = engine.cuda.amp.autocast()
    with context:
        assert F.linear(x.flatten(1), engine.ones(3, 192, device="cuda")).dtype == engine.float16


def test_cuda_autocast_without_cuda_warns_and_does_nothing(monkeypatch):
    monkeypatch.setattr(engine.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="User provided device_type of 'cuda', but CUDA is not available"):
        context = engine.autocast("cuda")
    with context:
        assert not engine.is_autocast_enabled("cuda")
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available"):
        scaler = engine.amp.GradScaler("cuda")
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0


def _scaler_run(lib, overflow_steps, steps=7):
    """SGD on a linear model with a GradScaler (growth every 2 clean steps); ``overflow_steps`` get an inf
    in a gradient. The scale after each update, the final weights and the scaler's state."""
    lib.manual_seed(0)
    model = lib.nn.Linear(4, 2)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    scales = []
    for step in range(steps):
        x = lib.from_numpy(_randn(3, 4, seed=step))
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        if step in overflow_steps:
            model.weight.grad[0, 0] = float("inf")
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales, model.weight.detach().numpy().copy(), scaler.state_dict()


def test_grad_scaler_follows_torch_s_updates():
    theirs = _scaler_run(torch, overflow_steps={1, 4})
    ours = _scaler_run(engine, overflow_steps={1, 4})
    assert ours[0] == theirs[0]  # 1024, 512 (overflow), 512, 1024 (grown), 512 (overflow), 512, 1024
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5)
    assert ours[2] == theirs[2]
    clean = _scaler_run(engine, overflow_steps=set())
    assert not np.array_equal(clean[1], ours[1])  # the skipped steps mattered


def test_grad_scaler_errors_and_state():
    model = engine.nn.Linear(2, 1)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.1)
    scaler = engine.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        scaler.unscale_(optimizer)
    scaler.scale(model(engine.ones(1, 2)).sum()).backward()
    scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called on this optimizer"):
        scaler.unscale_(optimizer)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(optimizer, closure=lambda: 0)
    scaler.step(optimizer)
    scaler.update()
    restored = engine.amp.GradScaler("cpu")
    restored.load_state_dict(scaler.state_dict())
    assert restored.state_dict() == scaler.state_dict() == torch.amp.GradScaler("cpu").state_dict() | {
        "_growth_tracker": 1}
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        half = engine.nn.Linear(2, 1).half()
        half_optimizer = engine.optim.SGD(half.parameters(), lr=0.1)
        scaler.scale(half(engine.ones(1, 2).half()).sum()).backward()
        scaler.unscale_(half_optimizer)
    disabled = engine.amp.GradScaler("cpu", enabled=False)
    loss = model(engine.ones(1, 2)).sum()
    assert disabled.scale(loss) is loss and disabled.state_dict() == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert isinstance(engine.cuda.amp.GradScaler(enabled=False), engine.amp.GradScaler)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_zoo_model_under_cuda_autocast(cuda, dtype):
    """resnet18 on the GPU under autocast gives float32's logits within the low precision's rounding, in
    that dtype (bfloat16 convolutions multiply on the tensor cores)."""
    engine.manual_seed(0)
    model = flowvision.models.resnet18(num_classes=10).eval().cuda()
    x = engine.from_numpy(_randn(2, 3, 40, 40)).cuda()
    with engine.no_grad():
        expected = model(x).cpu().numpy()
        with engine.autocast("cuda", dtype=getattr(engine, dtype)):
            out = model(x)
    assert out.dtype == getattr(engine, dtype) and out.device.type == "cuda"
    assert_close(out.float().cpu().numpy(), expected, 5e-2 if dtype == "bfloat16" else 1e-2)
