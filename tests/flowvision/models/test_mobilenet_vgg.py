"""MobileNetV2/V3 and VGG parity with torchvision: structure, state_dict, init, eval numerics, timm API."""
import numpy as np
import pytest
import torch
import torchvision.models as tv

import engine
import flowvision.models as models_flow
from model_parity import (backward_both, build_without_draws, check_structure, eval_outputs, image_batch, numpy_state,
                          randomize_norms, skip_random_init, to_numpy, torch_model, torchvision_names)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); torch's references on one thread
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

MOBILENETS = ["mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small"]
VGGS = [f"vgg{depth}{bn}" for depth in (11, 13, 16, 19) for bn in ("", "_bn")]
# the deeper VGGs repeat vgg11's layers: their structure is checked against torchvision's, built on the meta
# device (no weights drawn), and only vgg11 and vgg11_bn run forward (about 4 s each)
FORWARD_VGGS = ["vgg11", "vgg11_bn"]
TOL = 1e-4


def _ours(name, reference, **kwargs):
    """Our model with the torch reference's weights loaded through numpy (no initial draws: the strict load
    replaces every one), in eval mode."""
    model = build_without_draws(lambda: models_flow.create_model(name, **kwargs))
    model.load_state_dict(numpy_state(reference))
    return model.eval()


def test_registered_families():
    assert models_flow.list_models(module="mobilenetv2") == ["mobilenet_v2"]
    assert torchvision_names(models_flow.list_models(module="mobilenetv3")) == ["mobilenet_v3_large",
                                                                                "mobilenet_v3_small"]
    assert models_flow.list_models(module="vgg") == VGGS
    assert all(models_flow.is_model_pretrained(n) for n in MOBILENETS + VGGS)


@pytest.mark.parametrize("name", MOBILENETS)
def test_mobilenet_parity(name):
    reference = torch_model(name, seed=3)
    ours = _ours(name, reference)
    check_structure(ours, reference)
    for n, h, w in [(2, 224, 224), (2, 161, 203)]:
        out, ref = eval_outputs(reference, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


@pytest.mark.parametrize("name, kwargs", [
    ("mobilenet_v2", dict(width_mult=0.75, num_classes=10, dropout=0.1)),
    ("mobilenet_v3_large", dict(dilated=True, reduced_tail=True)),
    ("mobilenet_v3_small", dict(width_mult=1.25, dilated=True)),
])
def test_mobilenet_options(name, kwargs):
    reference = torch_model(name, seed=4, **kwargs)
    ours = _ours(name, reference, **kwargs)
    check_structure(ours, reference)
    out, ref = eval_outputs(reference, ours, image_batch(2, 97, 131, seed=5))
    assert_close(out, ref, TOL, what=f"{name} {kwargs}")


def test_mobilenet_v3_blocks():
    model = models_flow.mobilenet_v3_large(dilated=True)
    depthwise = model.features[13].block[1][0]
    assert (depthwise.groups, depthwise.dilation, depthwise.padding, depthwise.stride) == (672, (2, 2), (4, 4), (1, 1))
    assert [i for i, b in enumerate(model.features) if getattr(b, "_is_cn", False)] == [2, 4, 7, 13]
    se = model.features[4].block[2]
    assert (se.fc1.out_channels, type(se.scale_activation).__name__) == (24, "Hardsigmoid")
    bn = model.features[0][1]
    assert (bn.eps, bn.momentum) == (0.001, 0.01)
    with pytest.raises(ValueError, match="Unsupported model type mobilenet_v3_tiny"):
        models_flow.mobilenetv3._mobilenet_v3_conf("mobilenet_v3_tiny")
    with pytest.raises(ValueError, match="inverted_residual_setting should be non-empty or a 4-element list"):
        models_flow.MobileNetV2(inverted_residual_setting=[[1, 16, 1]])
    with pytest.raises(ValueError, match="stride should be 1 or 2 instead of 3"):
        models_flow.mobilenetv2.InvertedResidual(16, 16, 3, 6)


@pytest.mark.parametrize("name", [n for n in VGGS if n not in FORWARD_VGGS])
def test_vgg_structure(name, monkeypatch):
    with torch.device("meta"):
        reference = getattr(tv, name)()
    skip_random_init(monkeypatch)  # only the layout is compared: drawing 120M weights took 2 s a model
    check_structure(models_flow.create_model(name), reference)


@pytest.mark.parametrize("name", FORWARD_VGGS)
def test_vgg_parity(name):
    reference = torch_model(name, seed=6)
    # _ours skips our initial draws, as every weight and buffer is loaded from the reference (strict
    # load_state_dict, check_structure below): with fast_random's numpy draws vgg11 took 3.9 s, 2.9 s so
    ours = _ours(name, reference)
    check_structure(ours, reference)
    # a batch of two at an odd size (a 2x2 map the pool spreads to 7x7); one 224 image (a 7x7 map kept as it is)
    sizes = [(2, 67, 83)] + ([(1, 224, 224)] if name == "vgg11" else [])
    for n, h, w in sizes:
        out, ref = eval_outputs(reference, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


def _std(tensor):
    return float(to_numpy(tensor).std())


def test_init_follows_torchvision(fast_random):
    engine.manual_seed(0)
    model = models_flow.mobilenet_v3_small()
    conv = model.features[4].block[0][0]
    assert abs(_std(conv.weight) * np.sqrt(conv.out_channels / 2) - 1) < 0.05
    assert not to_numpy(model.features[1].block[1].fc1.bias).any()
    assert abs(_std(model.classifier[0].weight) / 0.01 - 1) < 0.05 and not to_numpy(model.classifier[3].bias).any()
    assert np.all(to_numpy(model.features[0][1].weight) == 1)
    vgg = models_flow.vgg11_bn()
    first = vgg.features[0]
    assert abs(_std(first.weight) * np.sqrt(64 * 9 / 2) - 1) < 0.2 and not to_numpy(first.bias).any()
    assert abs(_std(vgg.classifier[6].weight) / 0.01 - 1) < 0.05
    plain = models_flow.vgg11(init_weights=False)
    bound = 1 / np.sqrt(25088) * (1 + 1e-6)
    assert np.abs(to_numpy(plain.classifier[0].weight)).max() <= bound


def test_timm_api():
    model = models_flow.mobilenet_v2(num_classes=7).eval()
    x = engine.from_numpy(image_batch(2, 64, 64))
    with engine.no_grad():
        features = model.forward_features(x)
        assert tuple(features.shape) == (2, 1280, 2, 2)
        assert tuple(model.forward_head(features, pre_logits=True).shape) == (2, 1280)
        assert_close(model.forward_head(features).numpy(), model(x).numpy(), 1e-6)
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity)
    model = models_flow.mobilenet_v3_large(in_chans=1).eval()
    assert tuple(model.features[0][0].weight.shape) == (16, 1, 3, 3)
    with engine.no_grad():
        pre = model.forward_head(model.forward_features(engine.from_numpy(image_batch(1, 64, 64, c=1))), pre_logits=True)
    assert tuple(pre.shape) == (1, 1280)
    model.reset_classifier(5)
    assert tuple(model.get_classifier().weight.shape) == (5, 1280)
    assert models_flow.mobilenet_v3_small.__name__ in models_flow.list_models(pretrained=True)


def test_vgg_timm_api(monkeypatch):
    skip_random_init(monkeypatch)  # only shapes are compared: drawing 130M weights took 2 s
    model = models_flow.create_model("vgg11", num_classes=0, in_chans=4).eval()
    assert tuple(model.features[0].weight.shape) == (64, 4, 3, 3)
    with engine.no_grad():
        x = engine.from_numpy(image_batch(1, 32, 32, c=4))
        assert tuple(model(x).shape) == (1, 4096)
        assert tuple(model.forward_features(x).shape) == (1, 512, 1, 1)
    model.reset_classifier(3)
    assert tuple(model.get_classifier().weight.shape) == (3, 4096)


def test_train_mode_backward_mobilenet_v3_with_dropout():
    """The classifier's in-place hardswish then in-place dropout must back-propagate, as in torch."""
    engine.manual_seed(0)
    model = models_flow.mobilenet_v3_small(num_classes=5).train()
    x = engine.from_numpy(image_batch(2, 64, 64, seed=3))
    model(x).square().sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads.values())
    assert np.abs(grads["classifier.0.weight"].numpy()).sum() > 0


def test_train_mode_backward_mobilenet_v2():
    """In float64: batch statistics of 2x2 maps at batch 2 amplify float32 rounding past any fixed tolerance."""
    reference = randomize_norms(torch_model("mobilenet_v2", seed=7, num_classes=5), 7).train().double()
    ours = _ours("mobilenet_v2", reference, num_classes=5, dropout=0.0).train().double()
    reference.classifier[0].p = 0.0
    x = image_batch(2, 64, 80, seed=8).astype(np.float64)
    ref_params, our_params = backward_both(reference, ours, x)
    for k in ["features.0.0.weight", "features.5.conv.1.0.weight", "features.17.conv.2.weight", "classifier.1.bias"]:
        assert_close(our_params[k].grad.numpy(), ref_params[k].grad.numpy(), 1e-9, what=k)
    assert_close(to_numpy(ours.features[3].conv[1][1].running_var),
                 to_numpy(reference.features[3].conv[1][1].running_var), TOL)
