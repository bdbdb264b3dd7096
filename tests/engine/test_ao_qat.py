"""``engine.ao`` quantization-aware training against ``torch.ao``: the fake quantize ops and modules bit for bit
(forward, straight-through gradients, observed ranges, qparams), the QAT layers in training and eval mode (float
convolutions round differently in the last bit: 1e-5), and ``fuse_modules_qat``/``prepare_qat``/``convert``: torch's
state keys, and from one trained QAT state torch's converted state and int8 outputs bit for bit."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.ao.nn.intrinsic.qat as tnniqat  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402

import engine  # noqa: E402
import engine.ao.nn.intrinsic.qat as enniqat  # noqa: E402
import engine.ao.quantization as eq  # noqa: E402
from engine.ao.quantization.fake_quantize import choose_qparams  # noqa: E402

rng = np.random.default_rng(11)
RTOL = 1e-5  # QAT layers: float convolutions, hence batch statistics, round differently in the last bit


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def assert_same_bits(e, t, what=""):
    """An engine tensor (or array) and a torch tensor with the same dtype, shape and bytes."""
    a = t.detach().clone().numpy()  # a copy: numpy() would pin the storage, which torch's observers resize
    b = np.asarray(e._data if isinstance(e, engine.Tensor) else e)
    assert (b.dtype, b.shape) == (a.dtype, a.shape), what
    assert b.tobytes() == a.tobytes(), what


def assert_same_quantized(e, t, what):
    """Quantized tensors with the same qparams (per tensor or per channel) and integers."""
    if t.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        assert_same_bits(e.q_per_channel_scales(), t.q_per_channel_scales(), what)
        assert_same_bits(e.q_per_channel_zero_points(), t.q_per_channel_zero_points(), what)
    else:
        assert (e.q_scale(), e.q_zero_point()) == (t.q_scale(), t.q_zero_point()), what
    assert_same_bits(e.int_repr(), t.int_repr(), what)


def assert_close(e, t, what="", scale=None):
    """Within RTOL of torch's, absolutely at the scale of ``t``'s largest value (or of ``scale``)."""
    expected = t.detach().numpy()
    scale = np.abs(expected).max() if scale is None else scale
    np.testing.assert_allclose(e.detach().numpy(), expected, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def engine_state(module):
    """A torch module's state_dict as engine tensors (copies: numpy() would pin the storages, which torch's
    per-channel observers resize)."""
    return {k: engine.tensor(v.detach().clone().numpy()) for k, v in module.state_dict().items()}


def both(x, requires_grad=False):
    """The numpy array ``x`` as a torch tensor and an engine tensor."""
    return (torch.tensor(x, requires_grad=requires_grad), engine.tensor(x, requires_grad=requires_grad))


def grid_values(shape, scale, zero_point, qmin, qmax):
    """float32 values on, between (exact half steps included) and beyond the quantization grid."""
    steps = rng.integers(qmin - 20, qmax + 20, shape) - zero_point + rng.choice([0.0, 0.5, 0.25, -0.5], shape)
    return (steps * np.float32(scale)).astype(np.float32)


# ---- the fake quantize ops ---------------------------------------------------------------------------------
@pytest.mark.parametrize("qmin, qmax, zero_point", [(0, 255, 131), (-128, 127, 0), (0, 127, 3)])
def test_fake_quantize_per_tensor_is_torchs(qmin, qmax, zero_point):
    """Forward and straight-through gradient (zero where the value was clamped), qparams as numbers or
    tensors."""
    scale = float(np.float32(0.0371))
    tx, ex = both(grid_values((5, 33), scale, zero_point, qmin, qmax), requires_grad=True)
    g = rng.standard_normal((5, 33)).astype(np.float32)
    for t_qparams, e_qparams in [((scale, zero_point), (scale, zero_point)),
                                 ((torch.tensor([scale]), torch.tensor([zero_point], dtype=torch.int32)),
                                  (engine.tensor([scale]), engine.tensor([zero_point], dtype=engine.int32)))]:
        tx.grad = ex.grad = None
        ty = torch.fake_quantize_per_tensor_affine(tx, *t_qparams, qmin, qmax)
        ey = engine.fake_quantize_per_tensor_affine(ex, *e_qparams, qmin, qmax)
        assert_same_bits(ey, ty)
        ty.backward(torch.tensor(g))
        ey.backward(engine.tensor(g))
        assert_same_bits(ex.grad, tx.grad)
    assert 0 < (tx.grad == 0).float().mean() < 1


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_fake_quantize_per_channel_is_torchs(axis):
    shape = (4, 6, 5)
    channels = shape[axis]
    scales = rng.uniform(0.01, 0.1, channels).astype(np.float32)
    zero_points = rng.integers(-20, 20, channels).astype(np.int32)
    x = np.moveaxis(np.stack([grid_values(np.moveaxis(np.zeros(shape), axis, 0).shape[1:], s, z, -128, 127)
                              for s, z in zip(scales, zero_points)]), 0, axis)
    tx, ex = both(np.ascontiguousarray(x), requires_grad=True)
    ty = torch.fake_quantize_per_channel_affine(tx, torch.tensor(scales), torch.tensor(zero_points), axis, -128, 127)
    ey = engine.fake_quantize_per_channel_affine(ex, engine.tensor(scales), engine.tensor(zero_points), axis, -128,
                                                 127)
    assert_same_bits(ey, ty)
    ty.sum().backward()
    ey.sum().backward()
    assert_same_bits(ex.grad, tx.grad)


def test_fake_quantize_argument_errors():
    x = engine.ones(2, 3)
    with pytest.raises(RuntimeError, match="between `quant_min` and `quant_max`"):
        engine.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
    with pytest.raises(RuntimeError, match="less than or equal"):
        engine.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 4)
    with pytest.raises(RuntimeError, match="dimensions of scale and zero-point"):
        engine.fake_quantize_per_channel_affine(x, engine.ones(2), engine.zeros(2, dtype=engine.int32), 1, 0, 255)
    with pytest.raises(RuntimeError, match="`axis` must be between"):
        engine.fake_quantize_per_channel_affine(x, engine.ones(3), engine.zeros(3, dtype=engine.int32), -1, 0, 255)
    with pytest.raises(RuntimeError, match="floating point"):
        engine.fake_quantize_per_tensor_affine(engine.ones(2, dtype=engine.int64), 0.1, 0, 0, 255)


def _torch_choose_qparams(lo, hi, qmin, qmax, symmetric):
    """torch's fused kernel's qparams for each range (one per row of a per-channel call)."""
    x = torch.tensor(np.stack([lo, hi], axis=1))
    scale, zero_point = torch.ones(1), torch.zeros(1, dtype=torch.int32)
    torch.fused_moving_avg_obs_fake_quant(x, torch.tensor([1]), torch.tensor([1]), torch.empty(0), torch.empty(0),
                                          scale, zero_point, 0.01, qmin, qmax, 0, True, symmetric)
    return scale, zero_point


@pytest.mark.parametrize("qmin, qmax, symmetric", [(0, 255, False), (0, 127, False), (-128, 127, True),
                                                   (-127, 127, True), (-128, 127, False), (0, 255, True)])
def test_choose_qparams_is_fbgemms(qmin, qmax, symmetric):
    """The fused kernel's qparams (fbgemm's ChooseQuantizationParams): ordinary ranges, one-sided, points,
    zeros, and ranges whose scale falls below fbgemm's 6.1e-5 floor."""
    n = 400
    magnitude = np.float32(10.0) ** rng.integers(-9, 2, n).astype(np.float32)
    a, b = (rng.standard_normal((2, n)).astype(np.float32) * magnitude).astype(np.float32)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo[:40], hi[40:80] = 0, 0
    lo[80:100] = hi[80:100] = 0
    lo[100:120] = hi[100:120]
    scale, zero_point = _torch_choose_qparams(lo, np.maximum(lo, hi), qmin, qmax, symmetric)
    scales, zero_points = choose_qparams(lo, np.maximum(lo, hi), qmin, qmax, symmetric)
    assert_same_bits(scales, scale)
    np.testing.assert_array_equal(zero_points, zero_point.numpy())


# ---- the fake quantize modules -------------------------------------------------------------------------------
FAKE_QUANTS = {
    "fused_act": (tq.default_fused_act_fake_quant, eq.default_fused_act_fake_quant),
    "fused_act_reduce_range": (tq.get_default_qat_qconfig("x86").activation,
                               eq.get_default_qat_qconfig("x86").activation),
    "fused_wt": (tq.default_fused_wt_fake_quant, eq.default_fused_wt_fake_quant),
    "fused_per_channel_wt": (tq.default_fused_per_channel_wt_fake_quant, eq.default_fused_per_channel_wt_fake_quant),
    "act": (tq.default_fake_quant, eq.default_fake_quant),
    "wt": (tq.default_weight_fake_quant, eq.default_weight_fake_quant),
    "per_channel_wt": (tq.default_per_channel_weight_fake_quant, eq.default_per_channel_weight_fake_quant),
    "fixed_0to1": (tq.default_fixed_qparams_range_0to1_fake_quant, eq.default_fixed_qparams_range_0to1_fake_quant),
}


def assert_same_state(e_module, t_module):
    """Same state_dict keys in the same order, values bit for bit."""
    t_state, e_state = t_module.state_dict(), e_module.state_dict()
    assert list(e_state) == list(t_state)
    for key, value in t_state.items():
        assert_same_bits(e_state[key], value, key)


@pytest.mark.parametrize("name", FAKE_QUANTS)
def test_fake_quantize_modules_are_torchs(name):
    """Observed ranges, qparams buffers, outputs and gradients call after call, with the observer and then the fake
    quantization switched off; torch's state keys and repr."""
    t_make, e_make = FAKE_QUANTS[name]
    t_fq, e_fq = t_make(), e_make()
    assert repr(e_fq).replace("engine.", "") == repr(t_fq).replace("torch.", "")
    assert_same_state(e_fq, t_fq)
    for call in range(5):
        if call == 3:
            t_fq.disable_observer()
            eq.disable_observer(e_fq)
        if call == 4:
            t_fq.disable_fake_quant()
            eq.disable_fake_quant(e_fq)
        tx, ex = both((rng.standard_normal((6, 7)) * (call + 1)).astype(np.float32), requires_grad=True)
        ty, ey = t_fq(tx), e_fq(ex)
        assert_same_bits(ey, ty, f"call {call}")
        ty.square().sum().backward()
        ey.square().sum().backward()
        assert_same_bits(ex.grad, tx.grad, f"call {call}")
        assert_same_state(e_fq, t_fq)
    for e, t in zip(e_fq.calculate_qparams(), t_fq.calculate_qparams()):
        assert_same_bits(e, t)


def test_fake_quantize_state_loads_resizing_per_channel_buffers():
    """A trained per-channel fake quantize's state (torch's) loads into a fresh one, whose one-element qparams and
    empty ranges take the checkpoint's sizes; the switches load too."""
    t_fq = tq.default_fused_per_channel_wt_fake_quant()
    t_fq(torch.randn(5, 3, 2, 2))
    t_fq.disable_observer()
    e_fq = eq.default_fused_per_channel_wt_fake_quant()
    e_fq.load_state_dict(engine_state(t_fq))
    assert_same_state(e_fq, t_fq)
    x = rng.standard_normal((5, 3, 2, 2)).astype(np.float32)
    assert_same_bits(e_fq(engine.tensor(x)), t_fq(torch.tensor(x)))


@pytest.mark.parametrize("backend", ["qnnpack", "fbgemm", "x86", "onednn"])
@pytest.mark.parametrize("version", [0, 1])
def test_get_default_qat_qconfig(backend, version):
    t_qconfig, e_qconfig = tq.get_default_qat_qconfig(backend, version), eq.get_default_qat_qconfig(backend, version)
    for t_make, e_make in [(t_qconfig.activation, e_qconfig.activation), (t_qconfig.weight, e_qconfig.weight)]:
        assert repr(e_make()).replace("engine.", "") == repr(t_make()).replace("torch.", "")
    with pytest.raises(AssertionError, match="not supported"):
        eq.get_default_qat_qconfig("tpu")


# ---- QAT layers --------------------------------------------------------------------------------------------
def _float_layers(lib, kind):
    """A float layer (fused for the intrinsic kinds) with qconfig, from torch's seed."""
    nn, nni = lib.nn, lib.ao.nn.intrinsic
    lib.manual_seed(0)
    conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, bias=kind != "conv_bn")
    bn = nn.BatchNorm2d(6, momentum=0.3)
    layers = {"conv": lambda: conv, "conv_relu": lambda: nni.ConvReLU2d(conv, nn.ReLU()),
              "conv_bn": lambda: nni.ConvBn2d(conv, bn), "conv_bn_relu": lambda: nni.ConvBnReLU2d(conv, bn, nn.ReLU()),
              "linear": lambda: nn.Linear(7, 5), "linear_relu": lambda: nni.LinearReLU(nn.Linear(7, 5), nn.ReLU())}
    layer = layers[kind]()
    layer.qconfig = lib.ao.quantization.get_default_qat_qconfig("fbgemm")
    lib.ao.quantization.propagate_qconfig_(layer)
    return layer


QAT_CLASSES = {"conv": "Conv2d", "conv_relu": "ConvReLU2d", "conv_bn": "ConvBn2d", "conv_bn_relu": "ConvBnReLU2d",
               "linear": "Linear", "linear_relu": "LinearReLU"}


def _qat_pair(kind):
    """torch's QAT layer of ``kind`` and ours, from the same float layer (random batch norm statistics)."""
    pair = []
    for lib in (torch, engine):
        layer = _float_layers(lib, kind)
        package = lib.ao.nn.qat if QAT_CLASSES[kind] in ("Conv2d", "Linear") else lib.ao.nn.intrinsic.qat
        pair.append(getattr(package, QAT_CLASSES[kind]).from_float(layer))
    theirs, ours = pair
    if hasattr(theirs, "bn"):
        with torch.no_grad():
            theirs.bn.running_mean.uniform_(-0.2, 0.2)
            theirs.bn.running_var.uniform_(0.5, 2.0)
            theirs.bn.weight.uniform_(0.5, 1.5)
    ours.load_state_dict(engine_state(theirs))
    return ours, theirs


def _qat_input(kind, seed):
    shape = (3, 4, 9, 8) if kind.startswith("conv") else (3, 7)
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _step_both(ours, theirs, kind, seed):
    """One forward and backward (of a random projection of the output: a training batch norm makes the sum of
    squares constant) on both; the outputs and every gradient within RTOL, the parameters' at the scale of the
    largest (a conv bias before a training batch norm has an analytically zero gradient: rounding noise)."""
    tx, ex = both(_qat_input(kind, seed), requires_grad=True)
    ty, ey = theirs(tx), ours(ex)
    assert_close(ey, ty, "output")
    projection = np.random.default_rng(seed).standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(projection)).sum().backward()
    (ey * engine.tensor(projection)).sum().backward()
    assert_close(ex.grad, tx.grad, "input grad")
    e_params = dict(ours.named_parameters())
    scale = max(param.grad.abs().max().item() for param in theirs.parameters())
    for name, param in theirs.named_parameters():
        assert_close(e_params[name].grad, param.grad, name, scale)


@pytest.mark.parametrize("kind", QAT_CLASSES)
def test_qat_layers_train_and_eval_as_torch(kind):
    """Two training steps (batch statistics, running statistics and observers move), eval mode (running
    statistics), then a frozen batch norm that ``train()`` leaves frozen; ``to_float`` gives torch's float
    layer (batch norm folded) bit for bit."""
    ours, theirs = _qat_pair(kind)
    assert repr(ours).replace("engine.", "") == repr(theirs).replace("torch.", "")
    for seed in (1, 2):
        _step_both(ours, theirs, kind, seed)
    e_state = ours.state_dict()
    for key, value in theirs.state_dict().items():
        if value.is_floating_point():
            assert_close(e_state[key], value, key)
        else:
            assert_same_bits(e_state[key], value, key)
    ours.eval()
    theirs.eval()
    _step_both(ours, theirs, kind, 3)
    if kind.startswith("conv_bn"):
        enniqat.freeze_bn_stats(ours)
        tnniqat.freeze_bn_stats(theirs)
        ours.train()
        theirs.train()
        assert not ours.bn.training and ours.freeze_bn
        _step_both(ours, theirs, kind, 4)
        enniqat.update_bn_stats(ours)
        assert ours.bn.training and not ours.freeze_bn
    ours.load_state_dict(engine_state(theirs))
    e_float, t_float = ours.to_float(), theirs.to_float()
    assert type(e_float).__name__ == type(t_float).__name__
    assert_same_state(e_float, t_float)


def test_qat_layers_need_their_float_type_and_a_qconfig():
    with pytest.raises(AssertionError, match="qconfig must be provided"):
        engine.ao.nn.qat.Linear(3, 4)
    with pytest.raises(AssertionError, match="only works for Conv2d"):
        engine.ao.nn.qat.Conv2d.from_float(_float_layers(engine, "linear"))


# ---- fuse_modules_qat, prepare_qat, convert ----------------------------------------------------------------
def build_net(lib):
    """A small network with each kind of layer MobileNetV3 quantizes: conv + bn + relu, depthwise conv + bn +
    hard-swish, a hard-sigmoid gate multiplied in, a residual add, conv + relu, pooling, linear + relu, linear."""
    nn, tqs = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = tqs.QuantStub(), tqs.DeQuantStub()
            self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU()
            self.conv2, self.bn2 = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False), nn.BatchNorm2d(8)
            self.act2, self.gate_conv, self.gate = nn.Hardswish(), nn.Conv2d(8, 8, 1), nn.Hardsigmoid()
            self.mul, self.add = nn.quantized.FloatFunctional(), nn.quantized.FloatFunctional()
            self.conv3, self.relu3, self.pool = nn.Conv2d(8, 8, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1)
            self.fc1, self.relu4, self.fc2 = nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4)

        def forward(self, x):
            x = self.relu1(self.bn1(self.conv1(self.quant(x))))
            y = self.act2(self.bn2(self.conv2(x)))
            x = self.add.add(x, self.mul.mul(self.gate(self.gate_conv(y)), y))
            x = self.pool(self.relu3(self.conv3(x))).flatten(1)
            return self.dequant(self.fc2(self.relu4(self.fc1(x))))

    lib.manual_seed(0)
    return Net()


FUSE = [["conv1", "bn1", "relu1"], ["conv2", "bn2"], ["conv3", "relu3"], ["fc1", "relu4"]]


def _prepared(lib, backend):
    model = build_net(lib).train()
    lib.ao.quantization.fuse_modules_qat(model, FUSE, inplace=True)
    model.qconfig = lib.ao.quantization.get_default_qat_qconfig(backend)
    return lib.ao.quantization.prepare_qat(model)


@pytest.mark.parametrize("backend", ["qnnpack", "fbgemm"])
def test_prepare_qat_train_convert_as_torch(backend):
    """torch's QAT model (printout, state keys and dtypes); two training steps as torch's (outputs within one
    step of their fake quantization, every float state within RTOL: observed ranges, batch norm statistics and
    weights differ by the float convolutions' last bits); then, from torch's trained state with part of the
    observers disabled, ``convert`` gives torch's state (each folded weight re-observed by its fake quantize only
    while its observer is on) and torch's int8 outputs, bit for bit."""
    torch.backends.quantized.engine = engine.backends.quantized.engine = backend
    ours, theirs = _prepared(engine, backend), _prepared(torch, backend)
    assert repr(ours).replace("engine.", "") == repr(theirs).replace("torch.", "")
    assert [(k, str(v.dtype).split(".")[-1]) for k, v in ours.state_dict().items()] == \
        [(k, str(v.dtype).split(".")[-1]) for k, v in theirs.state_dict().items()]
    t_optimizer = torch.optim.SGD(theirs.parameters(), lr=0.1)
    e_optimizer = engine.optim.SGD(ours.parameters(), lr=0.1)
    for seed in (1, 2):
        tx, ex = both(_qat_input("conv", seed)[:, :3])
        ty, ey = theirs(tx), ours(ex)
        step = theirs.fc2.activation_post_process.scale.item()
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=0, atol=1.01 * step)
        for y, optimizer in ((ty, t_optimizer), (ey, e_optimizer)):
            optimizer.zero_grad()
            y.square().mean().backward()
            optimizer.step()
    e_state = ours.state_dict()
    for key, value in theirs.state_dict().items():
        if value.is_floating_point():
            assert_close(e_state[key], value, key)
        else:
            assert_same_bits(e_state[key], value, key)
    theirs.conv2.apply(tq.disable_observer)
    ours.load_state_dict(engine_state(theirs))
    eq.convert(ours.eval(), inplace=True)
    tq.convert(theirs.eval(), inplace=True)
    assert repr(ours).replace("engine.", "") == repr(theirs).replace("torch.", "")
    t_state, e_state = theirs.state_dict(), ours.state_dict()
    assert list(e_state) == list(t_state)
    for key, value in t_state.items():
        if isinstance(value, tuple):  # a linear layer's packed (weight, bias)
            assert_same_quantized(e_state[key][0], value[0], key)
            assert_same_bits(e_state[key][1], value[1], key)
        elif isinstance(value, torch.Tensor) and value.is_quantized:
            assert_same_quantized(e_state[key], value, key)
        elif isinstance(value, torch.Tensor):
            assert_same_bits(e_state[key], value, key)
    x = _qat_input("conv", 3)[:, :3]
    with torch.no_grad():
        assert_same_bits(ours(engine.tensor(x)), theirs(torch.tensor(x)))


def test_convert_reobserves_the_folded_weight_while_the_observer_is_on():
    """``convert`` runs a QAT layer's weight fake quantize on the folded weight first: with its observer on, the
    moving-average range (and so the int8 weight's scale) moves towards the folded weight's; off, it stays."""
    scales = []
    for enabled in (True, False):
        ours, theirs = _qat_pair("conv_bn")
        for layer in (ours, theirs):
            layer.weight_fake_quant(layer.weight)  # a trained range that is not the folded weight's
            layer.weight_fake_quant.enable_observer(enabled)
            layer.activation_post_process = layer.qconfig.activation()
        e_conv = eq.get_default_static_quant_module_mappings()[type(ours)].from_float(ours)
        t_conv = tq.get_default_static_quant_module_mappings()[type(theirs)].from_float(theirs)
        assert_same_bits(e_conv.weight().q_per_channel_scales(), t_conv.weight().q_per_channel_scales())
        assert_same_bits(e_conv.weight().int_repr(), t_conv.weight().int_repr())
        scales.append(t_conv.weight().q_per_channel_scales())
    assert not torch.equal(*scales)


def test_fusion_and_mappings():
    """QAT fusion keeps the batch norm (conv + bn, conv + bn + relu) and needs a batch norm QAT can train;
    hard-sigmoid gets its fixed fake quantize in training only; convert removes every fake quantize."""
    model = build_net(engine).train()
    fused = eq.fuse_modules_qat(model, FUSE)
    assert [type(getattr(fused, name[0])).__name__ for name in FUSE] == ["ConvBnReLU2d", "ConvBn2d", "ConvReLU2d",
                                                                          "LinearReLU"]
    assert type(fused.bn1).__name__ == "Identity" and type(model.bn1).__name__ == "BatchNorm2d"
    model.bn1 = engine.nn.BatchNorm2d(8, affine=False)
    with pytest.raises(AssertionError, match="affine"):
        eq.fuse_modules_qat(model, [FUSE[0]])
    with pytest.raises(AssertionError, match="training mode"):
        eq.prepare_qat(fused.eval())
    assert set(eq.get_default_qat_module_mappings()) == {engine.nn.Conv2d, engine.nn.Linear,
                                                         *(getattr(engine.ao.nn.intrinsic, name) for name in
                                                           ("ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU"))}
    prepared = _prepared(engine, "qnnpack")
    assert type(prepared.gate.activation_post_process).__name__ == "FixedQParamsFakeQuantize"
    net = build_net(engine).eval()
    net.qconfig = eq.default_qconfig
    assert not hasattr(eq.prepare(net).gate, "activation_post_process")
    converted = eq.convert(prepared.eval())
    assert not any(isinstance(m, eq.FakeQuantizeBase) for m in converted.modules())
    assert not hasattr(converted, "qconfig")
