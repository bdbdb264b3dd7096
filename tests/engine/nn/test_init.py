"""engine.nn.init: gains and fans equal torch's; distributions have the right moments and bounds."""
import math
from statistics import NormalDist

import numpy as np
import pytest
import torch

import engine
import engine.nn as enn
from engine.nn import init


@pytest.mark.parametrize("name,param", [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
                                        ("conv_transpose1d", None), ("conv_transpose2d", None),
                                        ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
                                        ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
                                        ("leaky_relu", 1), ("selu", None)])
def test_calculate_gain_equals_torch(name, param):
    assert init.calculate_gain(name, param) == torch.nn.init.calculate_gain(name, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@pytest.mark.parametrize("shape", [(3, 5), (8, 4, 3, 3), (2, 6, 5), (4, 2, 1, 3, 2), (7, 1)])
def test_fans_equal_torch(shape):
    ours = init._calculate_fan_in_and_fan_out(engine.empty(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        assert init._calculate_correct_fan(engine.empty(*shape), mode) == \
            torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)


def test_fan_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(engine.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(engine.empty(3, 3), mode="fan_avg")


def _moments(t):
    a = t.detach().numpy().astype(np.float64)
    return a.mean(), a.std(), a.min(), a.max()


def test_uniform_and_normal_moments():
    engine.manual_seed(0)
    t = engine.empty(400, 500)
    assert init.uniform_(t, -2.0, 3.0) is t
    mean, std, lo, hi = _moments(t)
    assert lo >= -2 and hi <= 3 and abs(mean - 0.5) < 0.02 and abs(std - 5 / math.sqrt(12)) < 0.02
    init.normal_(t, 1.0, 0.5)
    mean, std, _, _ = _moments(t)
    assert abs(mean - 1.0) < 0.005 and abs(std - 0.5) < 0.005


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (1.0, 2.0, 0.0, 1.5),
                                          (0.0, 1.0, 3.0, 5.0)])
def test_trunc_normal_matches_truncated_distribution(mean, std, a, b):
    engine.manual_seed(1)
    t = init.trunc_normal_(engine.empty(200000), mean, std, a, b)
    values = t.numpy().astype(np.float64)
    assert values.min() >= a and values.max() <= b
    unit = NormalDist()
    alpha, beta = (a - mean) / std, (b - mean) / std
    mass = unit.cdf(beta) - unit.cdf(alpha)
    shift = (unit.pdf(alpha) - unit.pdf(beta)) / mass
    exact_mean = mean + std * shift
    exact_std = std * math.sqrt(1 + (alpha * unit.pdf(alpha) - beta * unit.pdf(beta)) / mass - shift ** 2)
    assert abs(values.mean() - exact_mean) < 0.01 * std
    assert abs(values.std() - exact_std) < 0.01 * std
    for q in np.linspace(alpha, beta, 7)[1:-1]:  # the empirical CDF follows the truncated CDF
        expected = (unit.cdf(q) - unit.cdf(alpha)) / mass
        assert abs((values <= mean + q * std).mean() - expected) < 0.01


def test_constant_ones_zeros_eye_dirac():
    t = engine.empty(3, 4, requires_grad=True)
    assert init.constant_(t, 2.5) is t and np.all(t.detach().numpy() == 2.5) and t.requires_grad
    assert np.all(init.ones_(t).detach().numpy() == 1) and np.all(init.zeros_(t).detach().numpy() == 0)
    np.testing.assert_array_equal(init.eye_(engine.empty(3, 4)).numpy(), torch.nn.init.eye_(torch.empty(3, 4)))
    for shape, groups in [((4, 2, 3, 3), 1), ((6, 3, 3), 2), ((4, 4, 3, 3, 3), 1), ((2, 5, 3, 3), 1)]:
        ours = init.dirac_(engine.empty(*shape), groups).numpy()
        np.testing.assert_array_equal(ours, torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(engine.empty(2, 2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(engine.empty(3, 2, 3), 2)


def _torch_std(fn, shape, kwargs):
    """The standard deviation torch's formula gives, from torch's own gain and fans."""
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    if fn.startswith("xavier"):
        return kwargs.get("gain", 1.0) * math.sqrt(2.0 / (fan_in + fan_out))
    fan = fan_in if kwargs.get("mode", "fan_in") == "fan_in" else fan_out
    gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
    return gain / math.sqrt(fan)


@pytest.mark.parametrize("fn,kwargs", [("xavier_uniform_", {"gain": 2.0}), ("xavier_normal_", {"gain": 0.5}),
                                       ("kaiming_uniform_", {"a": math.sqrt(5)}),
                                       ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
                                       ("kaiming_uniform_", {"nonlinearity": "tanh"})])
def test_scaled_inits_match_torch_statistics(fn, kwargs):
    engine.manual_seed(2)
    shape = (256, 128, 3, 3)
    ours = getattr(init, fn)(engine.empty(*shape), **kwargs).numpy().astype(np.float64)
    std = _torch_std(fn, shape, kwargs)
    assert abs(ours.std() / std - 1) < 0.01
    assert abs(ours.mean()) < 0.01 * std
    if "uniform" in fn:  # U(-b, b) with b = sqrt(3) * std
        bound = math.sqrt(3) * std
        assert bound * 0.999 < np.abs(ours).max() <= bound * (1 + 1e-6)


def test_orthogonal():
    engine.manual_seed(3)
    for shape in [(6, 4), (4, 6), (5, 2, 3)]:
        t = init.orthogonal_(engine.empty(*shape), gain=2.0).numpy().astype(np.float64)
        flat = t.reshape(shape[0], -1)
        small = flat @ flat.T if shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(small, 4 * np.eye(small.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(engine.empty(3))


def test_reproducible_with_manual_seed_and_generator():
    outs = []
    for _ in range(2):
        engine.manual_seed(123)
        outs.append((init.kaiming_normal_(engine.empty(5, 7)).numpy().copy(),
                     init.trunc_normal_(engine.empty(9)).numpy().copy(),
                     enn.Linear(4, 3).weight.detach().numpy().copy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    g1, g2 = engine.Generator().manual_seed(7), engine.Generator().manual_seed(7)
    np.testing.assert_array_equal(init.uniform_(engine.empty(10), generator=g1).numpy(),
                                  init.uniform_(engine.empty(10), generator=g2).numpy())


def test_init_is_in_place_outside_autograd():
    w = enn.Parameter(engine.empty(3, 3))
    data = w._data
    init.kaiming_uniform_(w)
    assert w._data is data and w.grad_fn is None and w.requires_grad
    with pytest.warns(UserWarning, match="zero-element tensors is a no-op"):
        init.kaiming_uniform_(engine.empty(0, 3))


def _torch_bound(weight_shape):
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*weight_shape))
    return 1 / math.sqrt(fan_in)


@pytest.mark.parametrize("make,weight_shape", [
    (lambda nn: nn.Linear(300, 7), (7, 300)),
    (lambda nn: nn.Conv2d(6, 10, 3), (10, 6, 3, 3)),
    (lambda nn: nn.Conv2d(8, 10, (3, 5), groups=2), (10, 4, 3, 5)),
    (lambda nn: nn.Conv1d(5, 9, 4), (9, 5, 4)),
    (lambda nn: nn.ConvTranspose2d(6, 12, 3), (6, 12, 3, 3)),
])
def test_default_layer_init_bounds_equal_torch(make, weight_shape):
    engine.manual_seed(4)
    torch.manual_seed(4)
    ours, ref = make(enn), make(torch.nn)
    bound = _torch_bound(weight_shape)
    # kaiming_uniform_(a=sqrt(5)) gives the weight the bound 1/sqrt(fan_in), like the bias
    for name in ("weight", "bias"):
        e = getattr(ours, name).detach().numpy()
        t = getattr(ref, name).detach().numpy()
        assert e.shape == t.shape
        assert np.abs(e).max() <= bound * (1 + 1e-6) and np.abs(t).max() <= bound * (1 + 1e-6)
        assert np.abs(e).max() > 0.5 * bound and e.std() > 0.3 * bound


def test_default_init_of_other_layers():
    engine.manual_seed(5)
    bn = enn.BatchNorm2d(4)
    assert np.all(bn.weight.detach().numpy() == 1) and np.all(bn.bias.detach().numpy() == 0)
    assert np.all(bn.running_var.numpy() == 1) and bn.num_batches_tracked.dtype == engine.int64
    ln = enn.LayerNorm((3, 4))
    assert np.all(ln.weight.detach().numpy() == 1) and tuple(ln.bias.shape) == (3, 4)
    emb = enn.Embedding(4000, 50, padding_idx=-1).weight.detach().numpy().astype(np.float64)
    assert np.all(emb[-1] == 0) and abs(emb[:-1].std() - 1) < 0.01
    assert np.all(enn.PReLU(3, init=0.1).weight.detach().numpy() == np.float32(0.1))
