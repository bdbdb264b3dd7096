"""Quantizable MobileNetV3 against torchvision's ``quantization.mobilenet_v3_large``.

torchvision's published weights are a quantization-aware-training state, loaded between ``prepare_qat`` and
``convert``. Here torchvision's QAT-prepared model is trained for two seeded steps (so that every fake quantize has
observed ranges and the batch norms moved), part of it with observers and batch norms frozen as torchvision's
recipe ends, and its state saved by torch; our builder loads it through its own path (``quantize=True``) and must
give torchvision's converted state and int8 logits bit for bit (the logits once engine's quantized mul broadcasts
as torch's: expected to fail until then).
"""
import numpy as np
import pytest
import torch
import torchvision.models.quantization as tvq
from torchvision.models.mobilenetv3 import _mobilenet_v3_conf
from torchvision.models.quantization.mobilenetv3 import QuantizableInvertedResidual as TvInvertedResidual
from torchvision.models.quantization.mobilenetv3 import QuantizableMobileNetV3 as TvMobileNetV3
from torchvision.models.quantization.utils import _replace_relu

import engine
from flowvision.models.quantization import mobilenetv3 as fq_mobilenetv3
from model_parity import image_batch, randomize_norms

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning", "ignore::DeprecationWarning"),
              pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(autouse=True, scope="module")
def qnnpack():
    """The weights' engine on both sides before anything converts (torch packs a layer's weights for the engine
    selected when it converts, and that packing decides which kernel runs it)."""
    engines = torch.backends.quantized.engine, engine.backends.quantized.engine
    torch.backends.quantized.engine = engine.backends.quantized.engine = "qnnpack"
    yield
    torch.backends.quantized.engine, engine.backends.quantized.engine = engines


def _torchvision_qat_model():
    """torchvision's ``_mobilenet_v3_model(quantize=True)`` up to the point where it loads the weights."""
    torch.manual_seed(0)
    setting, last_channel = _mobilenet_v3_conf("mobilenet_v3_large")
    model = TvMobileNetV3(setting, last_channel, block=TvInvertedResidual)
    _replace_relu(model)
    model.fuse_model(is_qat=True)
    model.qconfig = torch.ao.quantization.get_default_qat_qconfig("qnnpack")
    torch.ao.quantization.prepare_qat(model, inplace=True)
    return model


def _train_briefly(model):
    """Two seeded training steps (observers and batch norms move), then the late part of torchvision's recipe on
    the second half of the network: observers disabled, batch norm statistics frozen."""
    randomize_norms(model, 0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for seed in (1, 2):
        optimizer.zero_grad()
        model(torch.from_numpy(image_batch(2, 67, 83, seed=seed))).square().mean().backward()
        optimizer.step()
    model.features[9:].apply(torch.ao.quantization.disable_observer)
    model.features[9:].apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
    return model


class _SavedWeights:
    """Stands for the published weights: the state torch saved, loaded as the hub loads a checkpoint."""

    def __init__(self, path):
        self.path = path

    def get_state_dict(self, progress=True):
        return engine.load(self.path)


def _build_ours(monkeypatch, path):
    """Our builder with ``quantize=True``, loading the saved state as its published weights."""
    resolve = fq_mobilenetv3._quantizable_weights

    def saved_weights(*args):
        _, backend = resolve(*args)
        return _SavedWeights(path), backend

    monkeypatch.setattr(fq_mobilenetv3, "_quantizable_weights", saved_weights)
    return fq_mobilenetv3.quantized_mobilenet_v3_large(quantize=True)


def _version_1_state(model):
    """``model``'s state as a checkpoint saved before the hard-sigmoid had a fake quantize (squeeze-excitations at
    version 1, without that state), which the quantizable squeeze-excitation fills in."""
    state = model.state_dict()
    fake_quant_keys = [k for k in state if ".scale_activation.activation_post_process." in k]
    for key in fake_quant_keys:
        del state[key]
    for prefix in {k.partition(".scale_activation.")[0] for k in fake_quant_keys}:
        state._metadata[prefix]["version"] = 1
    return state


def _assert_same_entry(key, ours, theirs):
    if isinstance(theirs, tuple):
        for i, (o, t) in enumerate(zip(ours, theirs, strict=True)):
            _assert_same_entry(f"{key}[{i}]", o, t)
    elif isinstance(theirs, torch.dtype):
        assert str(ours).split(".")[-1] == str(theirs).split(".")[-1], key
    elif theirs.is_quantized:
        assert str(ours.qscheme()).split(".")[-1] == str(theirs.qscheme()).split(".")[-1], key
        assert (ours.q_scale(), ours.q_zero_point()) == (theirs.q_scale(), theirs.q_zero_point()), key
        np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy(), err_msg=key)
    else:
        expected, value = theirs.detach().numpy(), ours.detach().numpy()
        assert value.dtype == expected.dtype and value.shape == expected.shape, key
        np.testing.assert_array_equal(value, expected, err_msg=key)


def _int8_logits(model, lib, x):
    with lib.no_grad():
        return model(lib.from_numpy(x)).numpy()


@pytest.fixture(scope="module", params=[False, True], ids=["saved", "version-1 checkpoint"])
def converted(request, tmp_path_factory):
    """(ours, theirs): our builder's model from torchvision's trained QAT state (as saved, or as a version-1
    checkpoint), and torchvision's model converted."""
    theirs = _train_briefly(_torchvision_qat_model())
    state = _version_1_state(theirs) if request.param else theirs.state_dict()
    assert len(state) == len(theirs.state_dict()) - 6 * 8 * request.param  # 8 squeeze-excitations
    path = tmp_path_factory.mktemp("qat") / "qat.pth"
    torch.save(state, path)
    with pytest.MonkeyPatch.context() as monkeypatch:
        ours = _build_ours(monkeypatch, path)
    torch.ao.quantization.convert(theirs, inplace=True)
    return ours, theirs.eval()


@pytest.mark.slow
def test_builder_converts_torchvisions_qat_state(converted):
    """Loading torchvision's trained QAT state and converting gives torchvision's converted state: every int8
    weight, weight scale, bias, activation scale and zero point, bit for bit."""
    ours, theirs = converted
    expected = theirs.state_dict()
    assert list(ours.state_dict()) == list(expected)
    for key, value in ours.state_dict().items():
        _assert_same_entry(key, value, expected[key])


@pytest.mark.slow
def test_int8_logits_are_torchvisions(converted):
    """The converted models' int8 logits (qnnpack) on a seeded 2x3x67x83 batch: torchvision's, bit for bit."""
    ours, theirs = converted
    x = image_batch(2, 67, 83, seed=3)
    ref = _int8_logits(theirs, torch, x)
    assert np.unique(ref).size > 50  # logits spread over many int8 steps: a real comparison
    np.testing.assert_array_equal(_int8_logits(ours, engine, x), ref)


@pytest.mark.slow
def test_qat_prepared_model_matches_torchvisions():
    """Before any weights, the builder's QAT model is torchvision's: same printout and state keys (and the float
    builder, ``quantize=False``, has the float model's keys plus nothing)."""
    theirs = _torchvision_qat_model()
    ours = fq_mobilenetv3.QuantizableMobileNetV3(*fq_mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large"),
                                                 block=fq_mobilenetv3.QuantizableInvertedResidual)
    fq_mobilenetv3._replace_relu(ours)
    ours.fuse_model(is_qat=True)
    ours.qconfig = engine.ao.quantization.get_default_qat_qconfig("qnnpack")
    engine.ao.quantization.prepare_qat(ours, inplace=True)
    assert repr(ours).replace("engine.", "") == repr(theirs).replace("torch.", "")
    assert list(ours.state_dict()) == list(theirs.state_dict())
    float_keys = list(fq_mobilenetv3.quantized_mobilenet_v3_large().state_dict())
    assert float_keys == list(tvq.mobilenet_v3_large().state_dict())
