"""bfloat16 autocast on the GPU (``config.enable_amp``, ``backends/cuda/autocast.py``): the rounding, the bfloat16
GEMMs, every op autocast covers forward and backward against PyTorch in float64 on the same bfloat16-rounded
operands, and nn.Graph inference and training with it."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import assert_close, rel_err
from test_graph import InferenceGraph, SmallResNet
from test_graph_cuda import MATMUL_CASES, run_training, small_resnet_on_gpu


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _rounded(x):
    """x rounded to bfloat16 by PyTorch, as a float64 tensor."""
    return torch.as_tensor(np.asarray(x)).to(torch.bfloat16).to(torch.float64)


def _autocast():
    return engine.backends.runtime("cuda").autocast()


def test_bfloat16_bits_round_as_pytorch(cuda):
    import cupy
    from engine.backends.cuda.autocast import bfloat16_bits
    specials = np.array([0.0, -0.0, 1.0, 1.00390625, 1.005859375, 1.001953125, 1.0058593750001, 3.0e38, 3.4e38,
                         -3.4e38, np.inf, -np.inf, 1e-40, -1e-45, 65504.0, 0.1], np.float32)
    x = np.concatenate([specials, _rand(1000) * np.float32(1e3)]).reshape(8, -1)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    got = bfloat16_bits(cupy.asarray(x))
    assert got.dtype == np.uint16 and got.shape == x.shape
    np.testing.assert_array_equal(got.get(), want)
    transposed = bfloat16_bits(cupy.asarray(x).T)  # a transposed view keeps its layout: a transposed result
    assert transposed.shape == x.T.shape and not transposed.flags.c_contiguous
    np.testing.assert_array_equal(transposed.get(), want.T)
    nan = bfloat16_bits(cupy.asarray(np.array([np.nan, -np.nan], np.float32))).get()
    assert np.isnan(torch.from_numpy(nan.view(np.int16)).view(torch.bfloat16).float().numpy()).all()


@pytest.mark.parametrize("case", MATMUL_CASES)
def test_cublas_bfloat16_matmul(cuda, case):
    """bfloat16 operands, float32 accumulation and result: PyTorch's float64 product of the rounded operands."""
    import cupy
    from engine.backends.cuda import cublas
    from engine.backends.cuda.autocast import bfloat16_bits
    a_shape, b_shape, a_t, b_t = case
    a, b = _rand(*a_shape), _rand(*b_shape, seed=1)
    a, b = (a.swapaxes(-1, -2) if a_t else a), (b.swapaxes(-1, -2) if b_t else b)
    want = torch.matmul(_rounded(a), _rounded(b)).numpy()
    got = cublas.matmul_bfloat16(bfloat16_bits(cupy.asarray(a)), bfloat16_bits(cupy.asarray(b)))
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got.get(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="two uint16 arrays of bfloat16 bits, got float32"):
        cublas.matmul_bfloat16(cupy.asarray(a), bfloat16_bits(cupy.asarray(b)))


def _check_autocast(ours, theirs, arrays, rounded, seed=9, additive=None):
    """``ours`` (engine, on CUDA under autocast) against ``theirs`` (PyTorch, float64) forward and backward: the
    inputs at positions ``rounded`` and (where any is) the upstream gradient given to PyTorch rounded to
    bfloat16, as autocast rounds every GEMM operand. The gradient of input ``additive`` (a bias, addmm's
    ``input``: the upstream gradient summed or scaled, no GEMM) is left out. Returns our inputs and the
    upstream gradient, for further checks."""
    ins = [engine.tensor(a, device="cuda", requires_grad=True) for a in arrays]
    with _autocast():
        y = ours(*ins)
        gy = _rand(*y.shape, seed=seed)
        y.backward(engine.tensor(gy, device="cuda"))
    refs = [(_rounded(a) if i in rounded else torch.from_numpy(a).double()).requires_grad_() for i, a in
            enumerate(arrays)]
    want = theirs(*refs)
    want.backward(_rounded(gy) if rounded else torch.from_numpy(gy).double())
    assert y.dtype == ins[0].dtype
    assert_close(y.detach().cpu().numpy(), want.detach().numpy(), 1e-5, "output")
    for i, (t, r) in enumerate(zip(ins, refs)):
        if i != additive:
            assert_close(t.grad.cpu().numpy(), r.grad.numpy(), 1e-5, f"gradient {i}")
    return ins, gy


# (input shape, weight shape, stride, padding, dilation, groups): 3x3, plain 1x1 with a batch (folded into
# columns, and multiplied image by image past BATCHED_1X1_PLANE), strided 1x1,
# groups, dilation, odd sizes
CONV_CASES = [
    ((2, 5, 9, 11), (7, 5, 3, 3), 1, 1, 1, 1),
    ((3, 6, 7, 5), (4, 6, 1, 1), 1, 0, 1, 1),
    ((2, 6, 16, 17), (5, 6, 1, 1), 1, 0, 1, 1),
    ((2, 6, 9, 9), (8, 6, 1, 1), 2, 0, 1, 1),
    ((2, 6, 8, 10), (6, 3, 3, 3), 2, 1, 1, 2),
    ((1, 3, 13, 11), (5, 3, 3, 3), 1, 2, 2, 1),
]


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_under_autocast(cuda, case):
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w, b = _rand(*x_shape), _rand(*w_shape, seed=1), _rand(w_shape[0], seed=2)
    (_, _, tb), gy = _check_autocast(
        lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
        lambda x, w, b: TF.conv2d(x, w, b, stride, padding, dilation, groups), [x, w, b], rounded=(0, 1), additive=2)
    assert_close(tb.grad.cpu().numpy(), gy.astype(np.float64).sum(axis=(0, 2, 3)), 1e-5, "bias gradient: float32")


def test_conv_transpose2d_under_autocast(cuda):
    x, w = _rand(2, 6, 5, 7), _rand(6, 4, 3, 3, seed=1)
    _check_autocast(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                    lambda x, w: TF.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1), [x, w],
                    rounded=(0, 1))


def test_depthwise_conv2d_stays_float32_under_autocast(cuda):
    """Depthwise convolutions are direct kernels, not GEMMs: autocast leaves them in float32."""
    x, w = _rand(2, 4, 9, 9), _rand(8, 1, 3, 3, seed=1)
    _check_autocast(lambda x, w: F.conv2d(x, w, None, 1, 1, 1, 4), lambda x, w: TF.conv2d(x, w, None, 1, 1, 1, 4),
                    [x, w], rounded=())


def test_linear_and_matmuls_under_autocast(cuda):
    x, w, b = _rand(3, 4, 10), _rand(6, 10, seed=1), _rand(6, seed=2)
    (_, _, tb), gy = _check_autocast(F.linear, TF.linear, [x, w, b], rounded=(0, 1), additive=2)
    assert_close(tb.grad.cpu().numpy(), gy.astype(np.float64).sum(axis=(0, 1)), 1e-5, "bias gradient: float32")
    a, m = _rand(5, 3, 7), _rand(5, 7, 4, seed=1)
    _check_autocast(engine.matmul, torch.matmul, [a, m], rounded=(0, 1))
    _check_autocast(engine.bmm, torch.bmm, [a, m], rounded=(0, 1))
    c, p, q = _rand(3, 4), _rand(3, 6, seed=1), _rand(6, 4, seed=2)
    (tc, _, _), gy = _check_autocast(lambda c, p, q: engine.addmm(c, p, q, beta=0.5, alpha=2.0),
                                     lambda c, p, q: torch.addmm(c, p, q, beta=0.5, alpha=2.0), [c, p, q],
                                     rounded=(1, 2), additive=0)
    assert_close(tc.grad.cpu().numpy(), 0.5 * gy, 1e-6, "addmm input gradient")


def test_float64_and_norms_are_not_rounded(cuda):
    """Autocast rounds float32 GEMM operands only: float64 products and LayerNorm's row sums are exact."""
    a, m = _rand(4, 9, dtype=np.float64), _rand(9, 5, seed=1, dtype=np.float64)
    _check_autocast(engine.matmul, torch.matmul, [a, m], rounded=())
    x = _rand(3, 5, 16) * np.float32(30)
    with _autocast():
        got = F.layer_norm(engine.tensor(x, device="cuda"), (16,)).cpu().numpy()
    assert_close(got, TF.layer_norm(torch.from_numpy(x).double(), (16,)).numpy(), 1e-5, "layer_norm")


def _amp_graph(model):
    graph = InferenceGraph(model)
    graph.config.enable_amp(True)
    return graph


def test_inference_graph_with_amp_is_captured_and_equals_eager_autocast(cuda):
    model = small_resnet_on_gpu()
    graph = _amp_graph(model)
    x = engine.tensor(_rand(3, 3, 11, 13), device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        outputs = [graph(x).cpu().numpy() for _ in range(3)]
    assert graph._last_plan.captured is not None and "amp=True" in repr(graph.config)
    with engine.no_grad():
        exact = model(x).cpu().numpy()
        with _autocast():
            want = model(x).cpu().numpy()
    for y in outputs:
        assert_close(y, want, 1e-5, "graph with amp")
    error = np.abs(outputs[0] - exact).max() / np.abs(exact).max()
    assert 1e-5 < error < 5e-2, error  # the products were rounded, and only a little
    assert not engine.backends.runtime("cuda").gemm_settings()[2]  # autocast ends with the call


def test_switching_amp_captures_anew(cuda):
    model = small_resnet_on_gpu()
    graph = InferenceGraph(model)
    x = engine.tensor(_rand(2, 3, 9, 9), device="cuda")
    graph(x)
    exact = graph(x).cpu().numpy()  # a replay of the capture
    first = graph._last_plan.captured.graph
    graph.config.enable_amp(True)
    rounded = graph(x).cpu().numpy()
    assert graph._last_plan.captured.graph is not first
    with engine.no_grad(), _autocast():
        assert_close(rounded, model(x).cpu().numpy(), 1e-5, "after enable_amp")
    assert rel_err(rounded, exact) > 1e-5
    graph.config.enable_amp(False)
    assert_close(graph(x).cpu().numpy(), exact, 1e-6, "after enable_amp(False)")


def _train(batches, use_graph):
    engine.manual_seed(0)
    model = SmallResNet().train().cuda()
    losses, graph = run_training(model, engine.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), batches,
                                 use_graph, amp=True)
    return losses, model, graph


def test_training_graph_with_amp_is_captured_and_equals_eager_autocast(cuda):
    rng = np.random.default_rng(0)
    batches = [(_rand(4, 3, 9, 11, seed=s), rng.integers(0, 5, 4)) for s in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        graph_losses, graph_model, graph = _train(batches, True)
    eager_losses, eager_model, _ = _train(batches, False)
    assert next(iter(graph._steps.values())) is not False
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    eager_state = eager_model.state_dict()
    for name, value in graph_model.state_dict().items():
        assert_close(value.cpu().numpy(), eager_state[name].cpu().numpy(), 1e-5, name)


def _bfloat16_inputs(module, inputs):
    return tuple(i.to(torch.bfloat16).to(i.dtype) for i in inputs)


@pytest.mark.slow
def test_resnet18_graph_with_amp_equals_pytorch_on_rounded_operands(cuda):
    """torchvision's resnet18 in float64 whose convolutions and linear layer read bfloat16-rounded inputs and
    weights: our graph with amp gives its output (within what float32 rounding flips near bfloat16 ties)."""
    import torchvision
    import flowvision.models as models
    torch.manual_seed(0)
    theirs = torchvision.models.resnet18(num_classes=10).eval()
    for m in theirs.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
    ours = models.resnet18(num_classes=10).eval()
    ours.load_state_dict({k: engine.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    theirs.double()
    with torch.no_grad():
        for m in theirs.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                m.weight.copy_(m.weight.to(torch.bfloat16).double())
                m.register_forward_pre_hook(_bfloat16_inputs)
    x = _rand(2, 3, 40, 48)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x).double()).numpy()
    got = _amp_graph(ours.cuda())(engine.tensor(x, device="cuda")).cpu().numpy()
    # an activation within float32 rounding of a bfloat16 tie rounds the other way (0.4% of that value): 5e-4 leaves
    # room for a GPU's few such flips, and fails without the rounding (8e-3 then)
    assert_close(got, want, 5e-4, "resnet18 with amp")
