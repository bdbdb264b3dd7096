"""Quantizable models against torchvision's ``models.quantization``: float init and fusion, calibration and
conversion, int8 outputs, torchvision's converted checkpoints both ways, and the quantized mean ShuffleNetV2 needs.

Calibration observes float activations, and our float convolutions and torch's round differently in the last bit:
an observed minimum or maximum, hence an activation scale, can differ by a few ulps (relative 2e-7 to 3e-6 here).
Everything else a calibration gives (int8 weights, their scales, every zero point, the biases) is exact, and a model
holding torchvision's converted state gives torchvision's outputs bit for bit.
"""
import numpy as np
import pytest
import torch
import torchvision.models.quantization as tvq
from torchvision.models.googlenet import GoogLeNetOutputs as TvGoogLeNetOutputs

import engine
from flowvision.models import quantization as fq
from flowvision.models.googlenet import GoogLeNetOutputs
from model_parity import assert_same_init, image_batch, numpy_state, randomize_norms

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


# family: (torchvision's quantized engine for it, (H, W) of the seeded batch of two images, builder arguments)
# GoogLeNet and Inception v3 with PyTorch's default init (init_weights=False): their truncated normal init, already
# tested on the float models, makes Inception's eval activations explode to 1e7 and costs torch seconds to draw.
FAMILIES = {
    "resnet18": ("fbgemm", (67, 83), {}),
    "resnet50": ("fbgemm", (67, 83), {}),
    "shufflenet_v2_x0_5": ("fbgemm", (67, 83), {}),
    "mobilenet_v2": ("qnnpack", (67, 83), {}),
    "googlenet": ("fbgemm", (67, 83), {"init_weights": False}),
    "inception_v3": ("fbgemm", (79, 83), {"init_weights": False}),  # at least 75x75
}
SCALE_RTOL = 1e-5  # activation scales: a few ulps of float convolution apart (see the module docstring)
# Logits of a model calibrated by each side: equal integers but for a rounding a scale's ulp tipped (a value within
# 2e-7 of a half step), whose difference the layers after it carry on: ResNet-50 here, by up to 3 output steps.
CALIBRATED_STEPS = 4.01


def _build(name, seed, **kwargs):
    """Our builder's model and torchvision's from the same seed (init and calibration draw from it), in eval."""
    torch.manual_seed(seed)
    theirs = getattr(tvq, name)(**kwargs).eval()
    engine.manual_seed(seed)
    ours = getattr(fq, name)(**kwargs).eval()
    return ours, theirs


def _outputs(ours, theirs, x, backend):
    """Both models' outputs on the numpy batch ``x`` under ``backend``."""
    torch.backends.quantized.engine = backend
    engine.backends.quantized.engine = backend
    with torch.no_grad():
        ref = theirs(torch.from_numpy(x)).numpy()
    with engine.no_grad():
        out = ours(engine.from_numpy(x)).numpy()
    return out, ref


def _assert_same_quantized(key, ours, theirs):
    assert getattr(ours, "is_quantized", False), key
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], key
    assert str(ours.qscheme()).split(".")[-1] == str(theirs.qscheme()).split(".")[-1], key
    np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy(), err_msg=key)
    if theirs.qscheme() == torch.per_channel_affine:
        np.testing.assert_array_equal(ours.q_per_channel_scales().numpy(), theirs.q_per_channel_scales().numpy())
        np.testing.assert_array_equal(ours.q_per_channel_zero_points().numpy(),
                                      theirs.q_per_channel_zero_points().numpy())
        assert ours.q_per_channel_axis() == theirs.q_per_channel_axis(), key
    else:
        assert (ours.q_scale(), ours.q_zero_point()) == (theirs.q_scale(), theirs.q_zero_point()), key


def _assert_same_entry(key, ours, theirs, scale_rtol):
    """One state_dict entry: a quantized tensor, a linear layer's packed (weight, bias), a dtype or a tensor."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), key
        for i, (o, t) in enumerate(zip(ours, theirs)):
            _assert_same_entry(f"{key}[{i}]", o, t, scale_rtol)
    elif theirs is None or isinstance(theirs, torch.dtype):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1], key
    elif theirs.is_quantized:
        _assert_same_quantized(key, ours, theirs)
    else:
        expected, value = theirs.detach().numpy(), ours.detach().numpy()
        assert value.dtype == expected.dtype and value.shape == expected.shape, key
        if scale_rtol and key.endswith("scale"):
            np.testing.assert_allclose(value, expected, rtol=scale_rtol, atol=0, err_msg=key)
        else:
            np.testing.assert_array_equal(value, expected, err_msg=key)


def _assert_same_state(ours, theirs, scale_rtol=0.0):
    """The same keys in the same order, and the same values (activation scales within ``scale_rtol``)."""
    expected, state = theirs.state_dict(), ours.state_dict()
    assert list(state) == list(expected)
    for key, value in expected.items():
        _assert_same_entry(key, state[key], value, scale_rtol)


def _prepare(model, tq, backend):
    """``quantize_model``'s steps before calibration (torchvision's qconfig for ``backend``), ``model`` fused."""
    weight = tq.default_per_channel_weight_observer if backend == "fbgemm" else tq.default_weight_observer
    model.qconfig = tq.QConfig(activation=tq.default_observer, weight=weight)
    tq.prepare(model, inplace=True)


def _output_step(ref):
    """The spacing of the int8 model's dequantized logits (the final layer's scale, up to rounding)."""
    values = np.unique(ref)
    assert values.size > 10, "degenerate logits: nothing compared"
    return np.diff(values).min()


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_quantization_steps_as_torchvision(name, tmp_path):
    """Each step of quantization against torchvision's, from one seed and random batch norms (so that the logits
    spread), calibrated on the batch itself (the builders' 299x299 calibration: the next test):
    the float init, the fused float outputs, the converted state (activation scales within a few ulps) and the int8
    logits (within a few output steps, as those scales give); then torchvision's converted checkpoint, saved by torch,
    loads and gives its logits bit for bit, and ours, saved, loads back into torch."""
    backend, (h, w), kwargs = FAMILIES[name]
    x = image_batch(2, h, w, seed=1)
    ours, theirs = _build(name, 0, **kwargs)
    assert_same_init(ours, theirs)
    ours.load_state_dict(numpy_state(randomize_norms(theirs, 0)))
    ours.fuse_model()
    theirs.fuse_model()
    assert repr(ours) == repr(theirs)
    out, ref = _outputs(ours, theirs, x, backend)
    assert np.abs(out - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max())

    _prepare(ours, engine.ao.quantization, backend)
    _prepare(theirs, torch.ao.quantization, backend)
    _outputs(ours, theirs, x, backend)  # calibrated on the batch itself: no activation beyond its 7-bit range
    engine.ao.quantization.convert(ours, inplace=True)
    torch.ao.quantization.convert(theirs, inplace=True)
    _assert_same_state(ours, theirs, SCALE_RTOL)
    out, ref = _outputs(ours, theirs, x, backend)
    assert np.abs(out - ref).max() <= CALIBRATED_STEPS * _output_step(ref)

    torch.save(theirs.state_dict(), tmp_path / "theirs.pt")
    ours.load_state_dict(engine.load(tmp_path / "theirs.pt"))
    _assert_same_state(ours, theirs)
    out, ref = _outputs(ours, theirs, x, backend)
    np.testing.assert_array_equal(out, ref)
    engine.save(ours.state_dict(), tmp_path / "ours.pt")
    theirs.load_state_dict(torch.load(tmp_path / "ours.pt", weights_only=False))
    np.testing.assert_array_equal(_outputs(ours, theirs, x, backend)[1], ref)


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_builder_quantizes_as_torchvision(name):
    """quantize=True through the builders from one seed (init, ReLU replacement, fusion, calibration on a random
    299x299 image, conversion): torchvision's int8 state, activation scales within a few ulps."""
    ours, theirs = _build(name, 0, quantize=True, **FAMILIES[name][2])
    _assert_same_state(ours, theirs, SCALE_RTOL)


@pytest.mark.slow
def test_float_googlenet_training_outputs():
    """In training mode the quantizable GoogLeNet returns torchvision's named tuple (the auxiliary heads' logits)."""
    ours, theirs = _build("googlenet", 0, init_weights=False)
    x = image_batch(2, 35, 35, seed=2)
    with engine.no_grad():
        out = ours.train()(engine.from_numpy(x))
    ref = theirs.train()(torch.from_numpy(x))
    assert isinstance(out, GoogLeNetOutputs) and isinstance(ref, TvGoogLeNetOutputs)
    assert [tuple(o.shape) for o in out] == [tuple(r.shape) for r in ref]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"])
def test_shufflenet_variants_have_torchvisions_structure(name):
    ours, theirs = _build(name, 0)
    assert_same_init(ours, theirs)


def _quantized_pair(seed, shape):
    x = (np.random.default_rng(seed).random(shape, dtype=np.float32) * 4 - 1)
    scale, zero_point = float(np.float32(0.0123 + seed * 1e-3)), 17 * seed + 40
    theirs = torch.quantize_per_tensor(torch.from_numpy(x), scale, zero_point, torch.quint8)
    ours = engine.quantize_per_tensor(engine.from_numpy(x), scale, zero_point, engine.quint8)
    # both channels last, as a quantized conv gives them
    return ours.contiguous(memory_format=engine.channels_last), theirs.contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("backend", ["fbgemm", "qnnpack"])
@pytest.mark.parametrize("size", [(3, 3), (6, 6), (5, 8), (14, 14), (17, 16)])
def test_quantized_spatial_mean_is_torchs(backend, size):
    """``x.mean([2, 3])`` of a channels-last quint8 tensor (ShuffleNetV2's head), ties of even sizes included:
    40 channels take both of torch's float summation orders (a block of 32, then the rest)."""
    torch.backends.quantized.engine = backend
    engine.backends.quantized.engine = backend
    for seed in range(4):
        ours, theirs = _quantized_pair(seed, (2, 40) + size)
        for keepdim in (False, True):
            _assert_same_quantized("mean", ours.mean([2, 3], keepdim), theirs.mean([2, 3], keepdim))
    assert ours.mean((-1, -2)).shape == (2, 40)


def test_quantized_mean_over_other_dims_or_layouts_is_refused():
    ours, _ = _quantized_pair(0, (2, 4, 3, 3))
    with pytest.raises(NotImplementedError, match="dims"):
        ours.mean(1)
    assert ours.contiguous().mean([2, 3]).shape == (2, 4)  # NCHW: torch's inner-dims kernel (test_quantization_fuzz)


def test_torchvision_spellings_are_the_builders():
    for name in ["googlenet", "inception_v3", "mobilenet_v2", "resnet18", "shufflenet_v2_x0_5",
                 "shufflenet_v2_x2_0"]:
        assert getattr(fq, name) is getattr(fq, "quantized_" + name)


def test_fbgemm_depthwise_conv_saturates_as_torch():
    """fbgemm's depthwise 3x3 kernel (groups = channels, a multiple of 8) adds the uint8 x int8 products of two taps
    at a time (row-major, the ninth with nothing) in int16 with saturation, as vpmaddubsw does: activations above
    their calibrated 7-bit range (a ShuffleNetV2 fed beyond its calibration) reach it."""
    torch.backends.quantized.engine = engine.backends.quantized.engine = "fbgemm"
    rng = np.random.default_rng(0)
    x = rng.integers(100, 256, (1, 8, 5, 6)).astype(np.float32) * np.float32(0.01)
    w = rng.integers(-127, 128, (8, 1, 3, 3)).astype(np.float32) * np.float32(0.02)
    outputs = []
    for lib in (torch, engine):
        conv = lib.ao.nn.quantized.Conv2d(8, 8, 3, padding=1, groups=8)
        scales, zero_points = lib.full((8,), 0.02, dtype=lib.float64), lib.zeros(8, dtype=lib.int64)
        conv.set_weight_bias(lib.quantize_per_channel(lib.from_numpy(w), scales, zero_points, 0, lib.qint8), None)
        conv.scale, conv.zero_point = 4.0, 0
        outputs.append(conv(lib.quantize_per_tensor(lib.from_numpy(x), 0.01, 0, lib.quint8)).int_repr().numpy())
    np.testing.assert_array_equal(outputs[1], outputs[0])
