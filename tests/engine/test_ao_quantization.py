"""``engine.ao.quantization`` against ``torch.ao.quantization``: observers' qparams, fusion and the eager-mode
prepare/calibrate/convert flow give PyTorch's numbers bit for bit."""
import copy
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.quantization as tq  # noqa: E402

import engine  # noqa: E402
import engine.ao.quantization as eq  # noqa: E402

rng = np.random.default_rng(7)
TO_TORCH = {engine.quint8: torch.quint8, engine.qint8: torch.qint8, engine.qint32: torch.qint32,
            engine.per_tensor_affine: torch.per_tensor_affine, engine.per_tensor_symmetric: torch.per_tensor_symmetric,
            engine.per_channel_affine: torch.per_channel_affine,
            engine.per_channel_symmetric: torch.per_channel_symmetric}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def torch_kwargs(kwargs):
    return {k: TO_TORCH.get(v, v) if k in ("dtype", "qscheme") else v for k, v in kwargs.items()}


def same_bits(t, e):
    """A torch tensor and an engine tensor with the same dtype, shape and bytes."""
    a, b = t.detach().numpy(), np.asarray(e._data)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---- observers -----------------------------------------------------------------------------------------------
SHAPE = (6, 5)  # odd sizes; one shape so that per-channel observers see the same channels each call
DATA = {
    "mixed": lambda: rng.standard_normal(SHAPE).astype(np.float32) * 3,
    "positive": lambda: np.abs(rng.standard_normal(SHAPE)).astype(np.float32) + 0.1,
    "negative": lambda: -np.abs(rng.standard_normal(SHAPE)).astype(np.float32) - 0.5,
    "constant": lambda: np.full(SHAPE, 2.5, np.float32),
    "zeros": lambda: np.zeros(SHAPE, np.float32),
    "tiny": lambda: (rng.standard_normal(SHAPE) * 1e-7).astype(np.float32),
}
PER_TENSOR_CONFIGS = [
    {}, {"reduce_range": True}, {"quant_min": 0, "quant_max": 127},
    {"qscheme": engine.per_tensor_symmetric}, {"qscheme": engine.per_tensor_symmetric, "quant_min": 0, "quant_max": 15},
    {"dtype": engine.qint8}, {"dtype": engine.qint8, "reduce_range": True},
    {"dtype": engine.qint8, "qscheme": engine.per_tensor_symmetric},
    {"dtype": engine.qint8, "qscheme": engine.per_tensor_symmetric, "quant_min": -127, "quant_max": 127,
     "eps": 2 ** -12},
    {"dtype": engine.qint32}, {"dtype": engine.qint32, "qscheme": engine.per_tensor_symmetric},
]
PER_CHANNEL_CONFIGS = [
    {}, {"ch_axis": 1}, {"ch_axis": -1, "reduce_range": True},
    {"qscheme": engine.per_channel_symmetric}, {"dtype": engine.qint8, "qscheme": engine.per_channel_symmetric},
    {"dtype": engine.qint8, "qscheme": engine.per_channel_symmetric, "quant_min": -127, "quant_max": 127},
]


def observe_both(name, kwargs, calls):
    """The same tensors through torch's and engine's observer ``name``: (torch's, engine's)."""
    t_obs, e_obs = getattr(tq, name)(**torch_kwargs(kwargs)), getattr(eq, name)(**kwargs)
    for make in calls:
        x = make()
        t_obs(torch.from_numpy(x))
        e_obs(engine.tensor(x))
    return t_obs, e_obs


def assert_same_qparams(t_obs, e_obs):
    (ts, tz), (es, ez) = t_obs.calculate_qparams(), e_obs.calculate_qparams()
    assert same_bits(ts, es), (ts, es)
    assert same_bits(tz, ez), (tz, ez)
    assert list(t_obs.state_dict()) == list(e_obs.state_dict())
    for key, value in t_obs.state_dict().items():
        assert same_bits(value, e_obs.state_dict()[key]), key


@pytest.mark.parametrize("name", ["MinMaxObserver", "MovingAverageMinMaxObserver"])
@pytest.mark.parametrize("kwargs", PER_TENSOR_CONFIGS)
def test_per_tensor_observers_match_torch(name, kwargs):
    for data in DATA:
        for calls in ([DATA[data]], [DATA[data], DATA["mixed"], DATA[data]]):
            assert_same_qparams(*observe_both(name, kwargs, calls))


@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"])
@pytest.mark.parametrize("kwargs", PER_CHANNEL_CONFIGS)
def test_per_channel_observers_match_torch(name, kwargs):
    for data in DATA:
        for calls in ([DATA[data]], [DATA[data], DATA["mixed"], DATA[data]]):
            assert_same_qparams(*observe_both(name, kwargs, calls))


HISTOGRAM_DATA = [
    lambda: rng.standard_normal(3001).astype(np.float32) * 2,
    lambda: np.maximum(rng.standard_normal((7, 333)), 0).astype(np.float32),
    lambda: rng.standard_cauchy(1999).astype(np.float32),  # outliers: the search clips them
    lambda: (rng.exponential(2.0, 2501) - 0.3).astype(np.float32),
    lambda: np.full(500, 1.5, np.float32),
]


@pytest.mark.parametrize("kwargs", [{}, {"reduce_range": True}, {"quant_min": 0, "quant_max": 127},
                                    {"dtype": engine.qint8, "qscheme": engine.per_tensor_symmetric},
                                    {"bins": 256}])
def test_histogram_observer_matches_torch(kwargs):
    """Histogram, range and qparams after several tensors that widen the range (re-binning) or not."""
    for first in range(len(HISTOGRAM_DATA)):
        calls = [HISTOGRAM_DATA[first], HISTOGRAM_DATA[(first + 2) % 5], HISTOGRAM_DATA[first]]
        assert_same_qparams(*observe_both("HistogramObserver", kwargs, calls))


def test_observers_before_any_data_and_errors():
    for name in ("MinMaxObserver", "PerChannelMinMaxObserver", "HistogramObserver"):
        t_obs, e_obs = observe_both(name, {}, [])
        assert_same_qparams(t_obs, e_obs)
    with pytest.raises(NotImplementedError):
        eq.MinMaxObserver(qscheme=engine.per_channel_affine)
    with pytest.raises(NotImplementedError, match="reduce range"):
        eq.MinMaxObserver(qscheme=engine.per_tensor_symmetric, reduce_range=True)
    with pytest.raises(AssertionError, match="include 0"):
        eq.MinMaxObserver(quant_min=1, quant_max=10)


def test_with_args_factories_and_state_dict_round_trip():
    factory = eq.MinMaxObserver.with_args(quant_min=0, quant_max=127).with_args(dtype=engine.quint8)
    first, second = factory(), factory()
    assert first is not second and (first.quant_min, first.quant_max) == (0, 127)
    assert eq.qconfig_equals(eq.default_qconfig, eq.QConfig(eq.default_observer, eq.default_weight_observer))
    with pytest.raises(ValueError, match="observer instance"):
        eq.QConfig(activation=first, weight=eq.default_weight_observer)
    t_obs, e_obs = observe_both("PerChannelMinMaxObserver", {"ch_axis": 1}, [DATA["mixed"]])
    loaded = eq.PerChannelMinMaxObserver(ch_axis=1)
    loaded.load_state_dict({k: engine.tensor(v.numpy()) for k, v in t_obs.state_dict().items()})
    assert_same_qparams(t_obs, loaded)


def test_get_default_qconfig():
    for backend, reduce_range, per_channel in [("x86", True, True), ("fbgemm", True, True),
                                               ("qnnpack", False, False), ("onednn", False, True)]:
        qconfig = eq.get_default_qconfig(backend)
        activation, weight = qconfig.activation(), qconfig.weight()
        assert isinstance(activation, eq.HistogramObserver) and activation.reduce_range is reduce_range
        assert isinstance(weight, eq.PerChannelMinMaxObserver) is per_channel
    with pytest.raises(AssertionError):
        eq.get_default_qconfig("tpu")


# ---- fusion ------------------------------------------------------------------------------------------------
def build_fusable(lib):
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 5, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(5)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.bn(self.conv(x)))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()
            self.layer = nn.Sequential(Block())
            self.conv2, self.bn2 = nn.Conv2d(5, 6, 1), nn.BatchNorm2d(6)
            self.conv3, self.relu3 = nn.Conv2d(6, 6, 1), nn.ReLU()
            self.flatten = nn.Flatten()
            self.fc1, self.bn4 = nn.Linear(6 * 5 * 5, 8), nn.BatchNorm1d(8)
            self.fc2, self.relu2 = nn.Linear(8, 4), nn.ReLU()

        def forward(self, x):
            x = self.layer(self.relu1(self.bn1(self.conv1(x))))
            x = self.relu3(self.conv3(self.bn2(self.conv2(x))))
            return self.relu2(self.fc2(self.bn4(self.fc1(self.flatten(x)))))

    return Net()


FUSE_GROUPS = [["conv1", "bn1", "relu1"], ["layer.0.conv", "layer.0.bn", "layer.0.relu"], ["conv2", "bn2"],
               ["conv3", "relu3"], ["fc1", "bn4"], ["fc2", "relu2"]]


def twin_models(build):
    """The same float model in torch and engine (engine's weights and statistics copied from torch's, with
    non-trivial batch norm statistics), both in eval mode."""
    torch.manual_seed(0)
    t_model = build(torch)
    for module in t_model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.2, 0.2)
    e_model = build(engine)
    e_model.load_state_dict({k: v.numpy() for k, v in t_model.state_dict().items()})
    return t_model.eval(), e_model.eval()


def test_fuse_modules_matches_torch_bit_for_bit():
    t_model, e_model = twin_models(build_fusable)
    t_fused = tq.fuse_modules(t_model, FUSE_GROUPS)
    e_fused = eq.fuse_modules(e_model, FUSE_GROUPS)
    assert isinstance(e_model.bn1, engine.nn.BatchNorm2d)  # not in place: the original is untouched
    assert [type(m).__name__ for m in t_fused.modules()] == [type(m).__name__ for m in e_fused.modules()]
    t_state, e_state = t_fused.state_dict(), e_fused.state_dict()
    assert list(t_state) == list(e_state)
    for key in t_state:
        assert same_bits(t_state[key], e_state[key]), key
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    with torch.no_grad():
        expected = t_fused(torch.from_numpy(x))
    np.testing.assert_allclose(e_fused(engine.tensor(x)).detach().numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e_model(engine.tensor(x)).detach().numpy(), expected.numpy(), rtol=1e-4, atol=1e-5)


def test_fuse_modules_in_place_hooks_and_errors():
    _, e_model = twin_models(build_fusable)
    calls = []
    e_model.conv1.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    e_model.relu1.register_forward_hook(lambda m, args, out: calls.append("post"))
    assert eq.fuse_modules(e_model, ["conv1", "bn1", "relu1"], inplace=True) is e_model
    assert isinstance(e_model.conv1, engine.ao.nn.intrinsic.ConvReLU2d)
    assert isinstance(e_model.bn1, engine.nn.Identity) and isinstance(e_model.relu1, engine.nn.Identity)
    e_model.conv1(engine.randn(1, 3, 5, 5))
    assert calls == ["pre", "pre", "post"]  # as torch: the folded conv is a deep copy that keeps its pre-hook
    with pytest.raises(AssertionError, match="did not find fuser method"):
        eq.fuse_modules(e_model, ["conv3", "fc1"])
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        eq.fuse_modules(e_model.train(), ["conv2", "bn2"])


# ---- prepare / calibrate / convert -----------------------------------------------------------------------
def build_quantizable(lib):
    nn, stubs = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = stubs.QuantStub()
            self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU()
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.add = lib.ao.nn.quantized.FloatFunctional()
            self.hardswish = nn.Hardswish()
            self.pool = nn.MaxPool2d(2)
            self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
            self.dropout = nn.Dropout(0.2)
            self.flatten = nn.Flatten()
            self.fc1, self.relu2 = nn.Linear(24, 16), nn.ReLU()
            self.fc2 = nn.Linear(16, 5)
            self.dequant = stubs.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            y = self.relu1(self.bn1(self.conv1(x)))
            x = self.hardswish(self.add.add(y, self.conv2(y)))
            x = self.flatten(self.dropout(self.avgpool(self.pool(x))))
            return self.dequant(self.fc2(self.relu2(self.fc1(x))))

    return Net()


QUANT_FUSE_GROUPS = [["conv1", "bn1", "relu1"], ["fc1", "relu2"]]


def quantize_both(weight_observer, t_weight_observer, inputs, activation=None, t_activation=None):
    """The twin quantizable models fused, prepared, calibrated on ``inputs`` and converted by each library.

    Engine's float convs round differently from torch's in the last bit, so the observed ranges agree to
    float32 rounding only; before converting, engine's observers take torch's recorded statistics (checked
    close first), so that what is compared after is ``convert`` itself."""
    t_model, e_model = twin_models(build_quantizable)
    t_model.qconfig = tq.QConfig(activation=t_activation or tq.default_observer, weight=t_weight_observer)
    e_model.qconfig = eq.QConfig(activation=activation or eq.default_observer, weight=weight_observer)
    tq.fuse_modules(t_model, QUANT_FUSE_GROUPS, inplace=True)
    eq.fuse_modules(e_model, QUANT_FUSE_GROUPS, inplace=True)
    t_prepared, e_prepared = tq.prepare(t_model), eq.prepare(e_model)
    with torch.no_grad():
        for x in inputs:
            t_prepared(torch.from_numpy(x))
            e_prepared(engine.tensor(x))
    t_state, e_state = t_prepared.state_dict(), e_prepared.state_dict()
    assert list(t_state) == list(e_state)  # observers where torch puts them, and nowhere else
    for key in t_state:
        np.testing.assert_allclose(e_state[key].numpy(), t_state[key].numpy(), rtol=1e-5, atol=1e-6, err_msg=key)
    e_prepared.load_state_dict({k: v.numpy() for k, v in t_state.items()})
    return t_prepared, e_prepared, tq.convert(t_prepared), eq.convert(e_prepared)


def assert_same_quantized_state(t_state, e_state):
    assert list(t_state) == list(e_state)
    for key, t_value in t_state.items():
        e_value = e_state[key]
        if isinstance(t_value, tuple):
            for t_item, e_item in zip(t_value, e_value):
                assert_same_value(key, t_item, e_item)
        else:
            assert_same_value(key, t_value, e_value)


def assert_same_value(key, t_value, e_value):
    if isinstance(t_value, torch.Tensor) and t_value.is_quantized:
        assert same_bits(t_value.int_repr(), e_value.int_repr()), key
        if t_value.qscheme() == torch.per_channel_affine:
            assert np.array_equal(t_value.q_per_channel_scales().numpy(), e_value.q_per_channel_scales().numpy())
            assert np.array_equal(t_value.q_per_channel_zero_points().numpy(),
                                  e_value.q_per_channel_zero_points().numpy())
            assert t_value.q_per_channel_axis() == e_value.q_per_channel_axis()
        else:
            assert (t_value.q_scale(), t_value.q_zero_point()) == (e_value.q_scale(), e_value.q_zero_point()), key
    elif isinstance(t_value, torch.Tensor):
        assert same_bits(t_value, e_value), key
    elif isinstance(t_value, torch.dtype):
        assert e_value is getattr(engine, str(t_value).split(".")[-1]), key
    else:
        assert t_value == e_value, key


CALIBRATION = [rng.standard_normal((2, 3, 8, 8)).astype(np.float32) for _ in range(3)]


@pytest.mark.parametrize("backend,weight", [("fbgemm", "default_per_channel_weight_observer"),
                                            ("qnnpack", "default_weight_observer")])
def test_prepare_convert_matches_torch(backend, weight):
    previous, e_previous = torch.backends.quantized.engine, engine.backends.quantized.engine
    torch.backends.quantized.engine = backend
    engine.backends.quantized.engine = backend
    try:
        _, _, t_q, e_q = quantize_both(getattr(eq, weight), getattr(tq, weight), CALIBRATION)
        assert [type(m).__name__ for m in t_q.modules()] == [type(m).__name__ for m in e_q.modules()]
        assert_same_quantized_state(t_q.state_dict(), e_q.state_dict())
        x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
        with torch.no_grad():
            expected = t_q(torch.from_numpy(x)).numpy()
        np.testing.assert_array_equal(e_q(engine.tensor(x)).numpy(), expected)
    finally:
        torch.backends.quantized.engine = previous
        engine.backends.quantized.engine = e_previous


def test_convert_removes_observers_hooks_and_qconfigs():
    _, e_prepared, _, e_q = quantize_both(eq.default_per_channel_weight_observer,
                                          tq.default_per_channel_weight_observer, CALIBRATION[:1])
    assert isinstance(e_prepared.quant.activation_post_process, eq.MinMaxObserver)  # convert made a copy
    assert isinstance(e_prepared.add.activation_post_process, eq.MinMaxObserver)
    assert not hasattr(e_prepared.dequant, "activation_post_process")
    assert not hasattr(e_prepared.pool, "activation_post_process")  # no quantized class: not observed
    for name, module in e_q.named_modules():
        assert not hasattr(module, "qconfig"), name
        assert not any(isinstance(m, eq.ObserverBase) for m in module.children()), name
        assert not module._forward_hooks and not module._forward_pre_hooks, name
    assert isinstance(e_q.quant, engine.ao.nn.quantized.Quantize)
    assert isinstance(e_q.conv1, engine.ao.nn.intrinsic.quantized.ConvReLU2d)
    assert isinstance(e_q.fc1, engine.ao.nn.intrinsic.quantized.LinearReLU)
    assert isinstance(e_q.add, engine.ao.nn.quantized.QFunctional)
    assert isinstance(e_q.pool, engine.nn.MaxPool2d) and isinstance(e_q.relu2, engine.nn.Identity)


def test_quantize_with_histogram_qconfig_matches_torch():
    """``quantize`` (prepare, run_fn, convert) with torch's x86 default qconfig (histogram activations)."""
    t_model, e_model = twin_models(build_quantizable)
    t_model.qconfig, e_model.qconfig = tq.get_default_qconfig("x86"), eq.get_default_qconfig("x86")
    tq.fuse_modules(t_model, QUANT_FUSE_GROUPS, inplace=True)
    eq.fuse_modules(e_model, QUANT_FUSE_GROUPS, inplace=True)
    t_prepared = tq.prepare(t_model)
    with torch.no_grad():
        for x in CALIBRATION:
            t_prepared(torch.from_numpy(x))
    t_state = t_prepared.state_dict()

    def calibrate(model):
        for x in CALIBRATION:
            model(engine.tensor(x))
        e_state = model.state_dict()
        for key in (k for k in t_state if k.endswith(("min_val", "max_val"))):
            np.testing.assert_allclose(e_state[key].numpy(), t_state[key].numpy(), rtol=1e-5, err_msg=key)
        model.load_state_dict({k: v.numpy() for k, v in t_state.items()})  # see quantize_both

    e_q = eq.quantize(e_model, calibrate, [])
    assert isinstance(e_model.conv1, engine.ao.nn.intrinsic.ConvReLU2d)  # not in place
    assert_same_quantized_state(tq.convert(t_prepared).state_dict(), e_q.state_dict())


def test_user_hooks_survive_convert_and_quant_wrapper():
    _, e_model = twin_models(build_quantizable)
    seen = []
    e_model.fc2.register_forward_hook(lambda m, args, out: seen.append(type(out).__name__))
    e_model.qconfig = eq.default_qconfig
    eq.fuse_modules(e_model, QUANT_FUSE_GROUPS, inplace=True)
    prepared = eq.prepare(e_model)
    prepared(engine.tensor(CALIBRATION[0]))
    quantized = eq.convert(prepared)
    quantized(engine.tensor(CALIBRATION[0]))
    assert seen == ["Tensor", "QuantizedTensor"]
    wrapped = eq.QuantWrapper(engine.nn.Linear(4, 3).eval())
    wrapped.qconfig = eq.default_qconfig
    eq.prepare(wrapped, inplace=True)
    wrapped(engine.randn(5, 4))
    eq.convert(wrapped, inplace=True)
    assert isinstance(wrapped.module, engine.ao.nn.quantized.Linear)
    assert wrapped(engine.randn(5, 4)).dtype == engine.float32
    assert copy.deepcopy(wrapped).module.scale == wrapped.module.scale
