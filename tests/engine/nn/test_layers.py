"""Every layer against torch: same weights (through numpy) and inputs give the same outputs and gradients."""
import numpy as np
import pytest
import torch

import engine
import engine.nn as enn
from op_check import assert_close, check_op, noncontiguous

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def torch_style(text):
    return text.replace("torch.", "engine.")


def check_layer(make, inputs, train=True, rtol=1e-5, grad_rtol=None, inplace=False, double=False, seed=0,
                call=None):
    """Build ``make(nn)`` in both libraries, copy torch's state into ours, compare forward/backward/state."""
    torch.manual_seed(seed)
    tm, em = make(torch.nn), make(enn)
    assert repr(em) == torch_style(repr(tm))
    assert list(em.state_dict()) == list(tm.state_dict())
    if double:
        tm.double(), em.double()
    em.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    tm.train(train), em.train(train)
    call = call or (lambda m, *xs: m(*xs))
    prep = (lambda xs: (xs[0] * 1, *xs[1:])) if inplace else (lambda xs: xs)
    check_op(lambda *xs: call(em, *prep(xs)), lambda *xs: call(tm, *prep(xs)), inputs, rtol=rtol,
             grad_rtol=grad_rtol)
    grad_rtol = grad_rtol or rtol
    tparams = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        ref = tparams[name].grad
        if ref is None:
            assert p.grad is None or not np.any(p.grad.numpy()), name
        else:
            assert p.grad is not None, f"no gradient for {name}"
            assert_close(p.grad.numpy(), ref.numpy(), grad_rtol, f"grad of {name}")
    tsd = tm.state_dict()
    for key, value in em.state_dict().items():
        assert_close(value.numpy(), tsd[key].numpy(), rtol, key)
    return tm, em


# ---- linear and convolution ---------------------------------------------------------------------------
def test_identity_and_linear():
    check_layer(lambda nn: nn.Identity(3, unused=True), [randn(2, 3)])
    check_layer(lambda nn: nn.Linear(5, 4), [randn(3, 5)])
    check_layer(lambda nn: nn.Linear(5, 4, bias=False), [noncontiguous(randn(2, 3, 5))])
    check_layer(lambda nn: nn.Linear(1, 3), [randn(4, 1, dtype=np.float64)], double=True, rtol=1e-12)


def test_bilinear():
    check_layer(lambda nn: nn.Bilinear(3, 4, 2), [randn(5, 3), randn(5, 4)], grad_rtol=1e-4)
    check_layer(lambda nn: nn.Bilinear(2, 2, 3, bias=False), [randn(2, 4, 2), randn(2, 4, 2)], grad_rtol=1e-4)


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    (lambda nn: nn.Conv1d(4, 6, 2, dilation=2, groups=2, bias=False, padding="same"), (1, 4, 7)),
    (lambda nn: nn.Conv1d(2, 2, 3, padding=2, padding_mode="circular"), (2, 2, 5)),
    (lambda nn: nn.Conv2d(3, 6, 3, stride=2, padding=1, groups=3), (2, 3, 7, 6)),
    (lambda nn: nn.Conv2d(4, 4, (3, 2), padding="same", dilation=2, padding_mode="reflect"), (2, 4, 8, 7)),
    (lambda nn: nn.Conv2d(2, 3, 3, padding="valid", bias=False), (1, 2, 5, 5)),
    (lambda nn: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"), (2, 2, 4, 5)),
    (lambda nn: nn.Conv2d(2, 3, 3, stride=(2, 1), padding=1, padding_mode="circular"), (1, 2, 5, 4)),
    (lambda nn: nn.Conv2d(3, 5, 1), (3, 3, 4, 4)),
])
def test_conv(make, shape):
    check_layer(make, [randn(*shape)], rtol=1e-5, grad_rtol=1e-4)


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 4)),
    (lambda nn: nn.ConvTranspose2d(4, 6, (3, 2), stride=(1, 2), groups=2, bias=False, dilation=2), (1, 4, 3, 3)),
    (lambda nn: nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (2, 3, 6)),
])
def test_conv_transpose(make, shape):
    check_layer(make, [randn(*shape)], rtol=1e-5, grad_rtol=1e-4)


def test_conv_transpose_output_size():
    check_layer(lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), [randn(1, 3, 4, 5)],
                call=lambda m, x: m(x, output_size=[8, 10]))
    m = enn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    with pytest.raises(ValueError, match=r"requested an output size of \[12, 10\], but valid sizes range from "
                                         r"\[7, 9\] to \[8, 10\]"):
        m(engine.randn(1, 3, 4, 5), output_size=[12, 10])


def test_conv_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        enn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        enn.Conv2d(3, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        enn.Conv2d(3, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        enn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        enn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    assert enn.Conv2d(4, 8, (3, 4), padding="same", dilation=(1, 3))._reversed_padding_repeated_twice == \
        torch.nn.Conv2d(4, 8, (3, 4), padding="same", dilation=(1, 3))._reversed_padding_repeated_twice


# ---- normalisation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.BatchNorm1d(4), (5, 4)),
    (lambda nn: nn.BatchNorm1d(3, momentum=0.3), (4, 3, 6)),
    (lambda nn: nn.BatchNorm2d(3), (2, 3, 4, 5)),
    (lambda nn: nn.BatchNorm2d(3, affine=False), (2, 3, 3, 3)),
    (lambda nn: nn.BatchNorm2d(3, track_running_stats=False), (2, 3, 3, 3)),
    (lambda nn: nn.BatchNorm3d(2, eps=1e-3), (2, 2, 3, 2, 3)),
])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm(make, shape, train):
    torch.manual_seed(0)
    check_layer(make, [randn(*shape)], train=train, rtol=1e-5, grad_rtol=1e-4)


def test_batch_norm_cumulative_average_and_eval_after_training():
    torch.manual_seed(0)
    tm, em = torch.nn.BatchNorm2d(3, momentum=None), enn.BatchNorm2d(3, momentum=None)
    for step in range(3):
        x = randn(4, 3, 2, 2) * (step + 1)
        tm(torch.from_numpy(x)), em(engine.from_numpy(x))
    for key, value in tm.state_dict().items():
        assert_close(em.state_dict()[key].numpy(), value.numpy(), 1e-6, key)
    assert int(em.num_batches_tracked) == 3 and em.num_batches_tracked.dtype == engine.int64
    tm.eval(), em.eval()
    x = randn(2, 3, 2, 2)
    assert_close(em(engine.from_numpy(x)).detach().numpy(), tm(torch.from_numpy(x)).detach().numpy(), 1e-5)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        em(engine.randn(3, 2, 2))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        enn.BatchNorm1d(3)(engine.randn(1, 3, 2, 2))


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.GroupNorm(2, 4), (2, 4, 3, 3)),
    (lambda nn: nn.GroupNorm(3, 3, affine=False), (1, 3, 5)),
    (lambda nn: nn.GroupNorm(1, 4, eps=1e-3, bias=False), (2, 4, 2, 2)),
    (lambda nn: nn.LayerNorm(5), (3, 5)),
    (lambda nn: nn.LayerNorm((4, 5), elementwise_affine=False), (2, 4, 5)),
    (lambda nn: nn.LayerNorm([3], bias=False), (2, 2, 3)),
    (lambda nn: nn.RMSNorm(5), (3, 5)),
    (lambda nn: nn.RMSNorm((2, 3), eps=1e-3, elementwise_affine=False), (4, 2, 3)),
    (lambda nn: nn.LocalResponseNorm(3), (2, 5, 3, 3)),
])
def test_group_and_layer_norm(make, shape):
    check_layer(make, [randn(*shape)], rtol=1e-5, grad_rtol=1e-4)
    with pytest.raises(ValueError, match=r"^num_channels \(4\) must be divisible by num_groups \(3\)$"):
        enn.GroupNorm(3, 4)


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.InstanceNorm2d(3), (2, 3, 4, 5)),
    (lambda nn: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    (lambda nn: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), (3, 3, 4, 3)),
    (lambda nn: nn.InstanceNorm2d(2), (2, 3, 4)),
    (lambda nn: nn.InstanceNorm1d(2, affine=True), (3, 2, 6)),
    (lambda nn: nn.InstanceNorm3d(2, track_running_stats=True, momentum=None), (2, 2, 3, 2, 3)),
])
@pytest.mark.parametrize("train", [True, False])
def test_instance_norm(make, shape, train):
    check_layer(make, [randn(*shape)], train=train, rtol=1e-5, grad_rtol=1e-4)


# ---- activations -------------------------------------------------------------------------------------
ACTIVATIONS = [
    lambda nn: nn.ReLU(), lambda nn: nn.ReLU(inplace=True), lambda nn: nn.ReLU6(), lambda nn: nn.ReLU6(True),
    lambda nn: nn.LeakyReLU(), lambda nn: nn.LeakyReLU(0.2, inplace=True), lambda nn: nn.PReLU(),
    lambda nn: nn.PReLU(3, init=0.1), lambda nn: nn.ELU(), lambda nn: nn.ELU(0.5, inplace=True),
    lambda nn: nn.SELU(), lambda nn: nn.CELU(0.7), lambda nn: nn.GELU(), lambda nn: nn.GELU("tanh"),
    lambda nn: nn.SiLU(), lambda nn: nn.SiLU(True), lambda nn: nn.Mish(), lambda nn: nn.Hardswish(),
    lambda nn: nn.Hardsigmoid(), lambda nn: nn.Hardtanh(), lambda nn: nn.Hardtanh(-2, 2, True),
    lambda nn: nn.Sigmoid(), lambda nn: nn.Tanh(), lambda nn: nn.Softplus(), lambda nn: nn.Softplus(2, 5),
    lambda nn: nn.Softmax(dim=1), lambda nn: nn.LogSoftmax(dim=-1), lambda nn: nn.Softmin(dim=0),
    lambda nn: nn.GLU(), lambda nn: nn.GLU(dim=2), lambda nn: nn.Threshold(0.1, 20.0),
    lambda nn: nn.Threshold(0.1, 20.0, True), lambda nn: nn.Hardshrink(0.3), lambda nn: nn.Softshrink(),
    lambda nn: nn.LogSigmoid(), lambda nn: nn.Softsign(), lambda nn: nn.Tanhshrink(), lambda nn: nn.Softmax2d(),
]


@pytest.mark.parametrize("make", ACTIVATIONS)
def test_activation(make):
    module = make(enn)
    x = randn(2, 3, 4, 2) * 3
    check_layer(make, [x], inplace=getattr(module, "inplace", False), rtol=1e-5, grad_rtol=1e-5)


def test_rrelu_eval_is_deterministic_leaky_relu():
    check_layer(lambda nn: nn.RReLU(0.1, 0.3), [randn(3, 4)], train=False)


def test_softmax_implicit_dim_warns_like_torch():
    x = randn(2, 3, 4)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        ours = enn.Softmax()(engine.from_numpy(x)).numpy()
    with pytest.warns(UserWarning):
        ref = torch.nn.Softmax()(torch.from_numpy(x)).numpy()
    assert_close(ours, ref, 1e-6)


# ---- pooling -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.MaxPool2d(2), (2, 3, 6, 5)),
    (lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), (1, 2, 7, 8)),
    (lambda nn: nn.MaxPool2d((2, 3), stride=(1, 2), dilation=(2, 1)), (2, 2, 6, 7)),
    (lambda nn: nn.MaxPool1d(3, 2, 1), (2, 3, 9)),
    (lambda nn: nn.AvgPool2d(2), (2, 3, 6, 5)),
    (lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 2, 7, 8)),
    (lambda nn: nn.AvgPool2d(3, 1, 1, divisor_override=2), (1, 2, 4, 4)),
    (lambda nn: nn.AvgPool1d(3, 2, 1), (2, 3, 8)),
    (lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 5, 4)),
    (lambda nn: nn.AdaptiveAvgPool2d((3, 2)), (2, 3, 7, 5)),
    (lambda nn: nn.AdaptiveAvgPool2d((None, 2)), (1, 2, 3, 5)),
    (lambda nn: nn.AdaptiveAvgPool1d(3), (2, 3, 8)),
    (lambda nn: nn.AdaptiveMaxPool2d((2, 3)), (2, 3, 5, 7)),
    (lambda nn: nn.AdaptiveMaxPool1d(2), (2, 3, 7)),
])
def test_pooling(make, shape):
    check_layer(make, [randn(*shape)])


def test_max_pool_return_indices():
    check_layer(lambda nn: nn.MaxPool2d(3, 2, 1, return_indices=True), [randn(2, 2, 6, 7)])
    check_layer(lambda nn: nn.AdaptiveMaxPool2d(2, return_indices=True), [randn(1, 2, 5, 5)])


# ---- dropout -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"])
def test_dropout_eval_is_identity_and_p0(cls):
    shape = {"Dropout1d": (2, 3, 4), "Dropout3d": (2, 3, 2, 2, 2)}.get(cls, (2, 3, 4, 5))
    check_layer(lambda nn: getattr(nn, cls)(0.3), [randn(*shape)], train=False)
    check_layer(lambda nn: getattr(nn, cls)(0.0), [randn(*shape)], train=True)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        getattr(enn, cls)(1.5)


def test_dropout_training_statistics():
    engine.manual_seed(0)
    x = engine.ones(200, 500)
    y = enn.Dropout(0.3)(x).numpy()
    assert abs((y == 0).mean() - 0.3) < 0.01
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.7], rtol=1e-6)
    y2 = enn.Dropout2d(0.5)(engine.ones(50, 40, 3, 3)).numpy()
    per_channel = y2.reshape(50, 40, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # whole channels are kept or dropped
    assert abs((per_channel[..., 0] == 0).mean() - 0.5) < 0.05
    engine.manual_seed(5)
    first = enn.Dropout()(x).numpy().copy()
    engine.manual_seed(5)
    np.testing.assert_array_equal(enn.Dropout()(x).numpy(), first)


# ---- shape layers, upsampling, padding -----------------------------------------------------------------
def test_flatten_unflatten():
    check_layer(lambda nn: nn.Flatten(), [randn(2, 3, 4, 5)])
    check_layer(lambda nn: nn.Flatten(0, 2), [randn(2, 3, 4, 5)])
    check_layer(lambda nn: nn.Unflatten(1, (2, 3)), [randn(4, 6, 2)])
    check_layer(lambda nn: nn.Unflatten(-1, (2, -1)), [randn(4, 6)])


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.Upsample(scale_factor=2), (2, 3, 4, 5)),
    (lambda nn: nn.Upsample(size=(7, 9), mode="bilinear"), (1, 2, 4, 5)),
    (lambda nn: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 3, 4)),
    (lambda nn: nn.Upsample(scale_factor=(2, 3), mode="nearest"), (1, 2, 3, 4)),
    (lambda nn: nn.UpsamplingNearest2d(scale_factor=3), (1, 2, 3, 2)),
    (lambda nn: nn.UpsamplingBilinear2d(size=(6, 5)), (2, 1, 3, 4)),
])
def test_upsample(make, shape):
    check_layer(make, [randn(*shape)], rtol=1e-5)


@pytest.mark.parametrize("make,shape", [
    (lambda nn: nn.ZeroPad2d(2), (2, 3, 4, 5)),
    (lambda nn: nn.ZeroPad2d((1, 2, 0, 3)), (1, 2, 3, 3)),
    (lambda nn: nn.ConstantPad2d(1, 3.5), (1, 2, 3, 3)),
    (lambda nn: nn.ConstantPad1d((2, 1), -1.0), (2, 3, 4)),
    (lambda nn: nn.ZeroPad1d(1), (2, 3, 4)),
    (lambda nn: nn.ReflectionPad2d(1), (2, 3, 4, 5)),
    (lambda nn: nn.ReflectionPad2d((1, 2, 3, 1)), (1, 2, 5, 4)),
    (lambda nn: nn.ReflectionPad1d(2), (2, 3, 5)),
    (lambda nn: nn.ReplicationPad2d((1, 2, 3, 4)), (2, 3, 4, 5)),
    (lambda nn: nn.ReplicationPad1d(2), (2, 3, 4)),
    (lambda nn: nn.CircularPad2d(1), (1, 2, 3, 4)),
])
def test_padding(make, shape):
    check_layer(make, [randn(*shape)])


def test_pixel_shuffle():
    check_layer(lambda nn: nn.PixelShuffle(2), [randn(2, 8, 3, 4)])
    check_layer(lambda nn: nn.PixelUnshuffle(2), [randn(2, 2, 4, 6)])


# ---- embedding -----------------------------------------------------------------------------------------
def test_embedding():
    idx = np.array([[0, 2, 4], [4, 3, 0]], np.int64)
    check_layer(lambda nn: nn.Embedding(6, 3), [idx])
    check_layer(lambda nn: nn.Embedding(6, 3, padding_idx=4), [idx])
    check_layer(lambda nn: nn.Embedding(6, 3, padding_idx=-2), [idx])
    weight = engine.randn(5, 2)
    frozen = enn.Embedding.from_pretrained(weight)
    assert not frozen.weight.requires_grad and frozen.weight._data is weight._data
    assert repr(frozen) == "Embedding(5, 2)"


# ---- losses --------------------------------------------------------------------------------------------
def _targets(make_target):
    """Wrap a loss so the (non-differentiable) target is built per library from one numpy array."""
    return lambda m, x: m(x, make_target(m))


def _target_for(arr):
    return lambda m: engine.from_numpy(arr) if isinstance(m, enn.Module) else torch.from_numpy(arr)


@pytest.mark.parametrize("make", [
    lambda nn: nn.CrossEntropyLoss(),
    lambda nn: nn.CrossEntropyLoss(reduction="sum", label_smoothing=0.1),
    lambda nn: nn.CrossEntropyLoss(weight=(torch if nn is torch.nn else engine).tensor([1.0, 2.0, 0.5, 1.0]),
                                   ignore_index=1),
    lambda nn: nn.NLLLoss(reduction="none"),
    lambda nn: nn.NLLLoss(weight=(torch if nn is torch.nn else engine).tensor([1.0, 2.0, 0.5, 1.0])),
])
def test_classification_losses(make):
    target = np.array([0, 3, 1, 2, 1], np.int64)
    check_layer(make, [randn(5, 4)], call=_targets(_target_for(target)))


def test_cross_entropy_spatial_and_probability_targets():
    target = np.array([[[0, 2], [1, 1]], [[2, 0], [0, 1]]], np.int64)
    check_layer(lambda nn: nn.CrossEntropyLoss(), [randn(2, 3, 2, 2)], call=_targets(_target_for(target)))
    probs = np.abs(randn(4, 3))
    probs /= probs.sum(1, keepdims=True)
    check_layer(lambda nn: nn.CrossEntropyLoss(), [randn(4, 3)], call=_targets(_target_for(probs)))


@pytest.mark.parametrize("make", [
    lambda nn: nn.BCELoss(),
    lambda nn: nn.BCELoss(weight=(torch if nn is torch.nn else engine).full((3,), 0.5), reduction="sum"),
])
def test_bce_loss(make):
    x = 1 / (1 + np.exp(-randn(4, 3)))
    target = (RNG.random((4, 3)) > 0.5).astype(np.float32)
    check_layer(make, [x], call=_targets(_target_for(target)))


@pytest.mark.parametrize("make", [
    lambda nn: nn.BCEWithLogitsLoss(),
    lambda nn: nn.BCEWithLogitsLoss(pos_weight=(torch if nn is torch.nn else engine).tensor([1.0, 2.0, 3.0])),
    lambda nn: nn.BCEWithLogitsLoss(weight=(torch if nn is torch.nn else engine).ones(3) * 2, reduction="none"),
])
def test_bce_with_logits_loss(make):
    target = RNG.random((4, 3)).astype(np.float32)
    check_layer(make, [randn(4, 3) * 3], call=_targets(_target_for(target)))


@pytest.mark.parametrize("make", [
    lambda nn: nn.MSELoss(), lambda nn: nn.MSELoss(reduction="sum"), lambda nn: nn.L1Loss(),
    lambda nn: nn.L1Loss(reduction="none"), lambda nn: nn.SmoothL1Loss(), lambda nn: nn.SmoothL1Loss(beta=0.5),
    lambda nn: nn.HuberLoss(), lambda nn: nn.HuberLoss(delta=0.3, reduction="sum"),
])
def test_regression_losses(make):
    check_layer(make, [randn(3, 4), randn(3, 4)])


@pytest.mark.parametrize("make", [
    lambda nn: nn.KLDivLoss(reduction="batchmean"), lambda nn: nn.KLDivLoss(reduction="sum", log_target=True),
])
def test_kl_div_loss(make):
    logp = np.log(np.abs(randn(3, 4)) + 0.1).astype(np.float32)
    target = np.abs(randn(3, 4)).astype(np.float32)
    check_layer(make, [logp, target])


def test_distance_modules():
    check_layer(lambda nn: nn.CosineSimilarity(), [randn(4, 3), randn(4, 3)])
    check_layer(lambda nn: nn.CosineSimilarity(dim=0, eps=1e-6), [randn(4, 3), randn(4, 1)])
    check_layer(lambda nn: nn.PairwiseDistance(), [randn(4, 3), randn(4, 3)])
    check_layer(lambda nn: nn.PairwiseDistance(p=1.0, keepdim=True), [randn(4, 3), randn(4, 3)])


def _sign_target(shape):
    return np.where(RNG.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


def test_margin_and_embedding_losses():
    check_layer(lambda nn: nn.SoftMarginLoss(), [randn(4, 3)], call=_targets(_target_for(_sign_target((4, 3)))))
    check_layer(lambda nn: nn.HingeEmbeddingLoss(margin=0.5), [randn(4, 3)],
                call=_targets(_target_for(_sign_target((4, 3)))))
    pair_target = _target_for(_sign_target((5,)))
    check_layer(lambda nn: nn.CosineEmbeddingLoss(margin=0.2), [randn(5, 3), randn(5, 3)],
                call=lambda m, a, b: m(a, b, pair_target(m)))
    check_layer(lambda nn: nn.MarginRankingLoss(0.1, reduction="sum"), [randn(5), randn(5)],
                call=lambda m, a, b: m(a, b, pair_target(m)))
    check_layer(lambda nn: nn.TripletMarginLoss(margin=0.5, swap=True), [randn(4, 3), randn(4, 3), randn(4, 3)])
    counts = RNG.poisson(2.0, (4, 3)).astype(np.float32)
    check_layer(lambda nn: nn.PoissonNLLLoss(), [randn(4, 3)], call=_targets(_target_for(counts)))
    check_layer(lambda nn: nn.PoissonNLLLoss(log_input=False, full=True), [np.abs(randn(4, 3)) + 0.5],
                call=_targets(_target_for(counts)))


def test_loss_weight_is_a_buffer_and_legacy_flags():
    loss = enn.CrossEntropyLoss(weight=engine.ones(3))
    assert list(loss.state_dict()) == ["weight"] and "weight" in dict(loss.named_buffers())
    assert list(enn.BCEWithLogitsLoss(pos_weight=engine.ones(2)).state_dict()) == ["pos_weight"]
    with pytest.warns(UserWarning):
        assert enn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert enn.L1Loss(reduce=False).reduction == "none"


def test_hardtanh_takes_torchs_deprecated_keywords():
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and renamed to `min_val`"):
        layer = enn.Hardtanh(min_value=-2.0, max_value=3.0)
    assert (layer.min_val, layer.max_val) == (-2.0, 3.0)
    assert repr(layer) == repr(torch.nn.Hardtanh(-2.0, 3.0))
