"""features_only / feature_info (timm's contract) and the hook-based create_feature_extractor."""
import numpy as np
import pytest
import torch
from torchvision.models.feature_extraction import create_feature_extractor as tv_feature_extractor

import engine
import flowvision.models as models
from model_parity import build_without_draws, image_batch, ours_like, to_numpy, torch_model
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"). No test here is about the exact initial values, so
# ours draw them from numpy (fast_random).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_random")]

# timm's resnet50 feature_info (timm names the stem output 'act1'; ours is torchvision's 'relu')
TIMM_RESNET50_CHANNELS = [64, 256, 512, 1024, 2048]
TIMM_RESNET50_REDUCTIONS = [2, 4, 8, 16, 32]


def _stage_outputs(model, x):
    """The stem activation and the four stage outputs, computed by hand."""
    with engine.no_grad():
        stem = model.relu(model.bn1(model.conv1(x)))
        outs = [stem]
        y = model.maxpool(stem)
        for layer in (model.layer1, model.layer2, model.layer3, model.layer4):
            y = layer(y)
            outs.append(y)
    return outs


def test_feature_info_matches_timm_resnet50():
    model = models.create_model("resnet50", features_only=True)
    info = model.feature_info
    assert info.channels() == TIMM_RESNET50_CHANNELS
    assert info.reduction() == TIMM_RESNET50_REDUCTIONS
    assert info.module_name() == ["relu", "layer1", "layer2", "layer3", "layer4"]
    assert info.out_indices == (0, 1, 2, 3, 4) and len(info) == 5
    assert info[2] == dict(num_chs=512, reduction=8, module="layer2")
    assert models.resnet50().feature_info == info.get_dicts()


def test_feature_info_other_models():
    assert models.resnet18().feature_info[-1] == dict(num_chs=512, reduction=32, module="layer4")
    dilated = models.create_model("resnet50", features_only=True, replace_stride_with_dilation=[False, True, True])
    assert dilated.feature_info.reduction() == [2, 4, 8, 8, 8]


def test_features_only_outputs():
    engine.manual_seed(0)
    base = models.resnet50().eval()
    features = models.FeatureListNet(base, out_indices=(0, 1, 2, 3, 4)).eval()
    assert "fc.weight" not in features.state_dict() and "avgpool" not in dict(features.named_children())
    assert list(features.state_dict()) == [k for k in base.state_dict() if not k.startswith("fc.")]
    x = engine.from_numpy(image_batch(2, 64, 96))
    with engine.no_grad():
        outs = features(x)
    assert isinstance(outs, list)
    shapes = [tuple(o.shape) for o in outs]
    assert shapes == [(2, c, 64 // r, 96 // r) for c, r in zip(TIMM_RESNET50_CHANNELS, TIMM_RESNET50_REDUCTIONS)]
    for ours, ref in zip(outs, _stage_outputs(base, x)):
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_out_indices():
    model = models.create_model("resnet18", features_only=True, out_indices=(1, 3))
    assert model.feature_info.channels() == [64, 256] and model.feature_info.reduction() == [4, 16]
    assert "layer4" not in dict(model.named_children())
    with engine.no_grad():
        outs = model.eval()(engine.randn(1, 3, 64, 64))
    assert [tuple(o.shape) for o in outs] == [(1, 64, 16, 16), (1, 256, 4, 4)]
    with pytest.raises(IndexError, match=r"out_indices \(1, 5\) out of range"):
        models.create_model("resnet18", features_only=True, out_indices=(1, 5))


def test_features_only_with_in_chans_and_training():
    model = models.create_model("resnet18", features_only=True, out_indices=(4,), in_chans=2)
    outs = model(engine.randn(2, 2, 32, 32))
    outs[-1].sum().backward()
    assert model.conv1.weight.grad is not None and tuple(model.conv1.weight.shape) == (64, 2, 7, 7)


def test_create_feature_extractor_stage_outputs():
    engine.manual_seed(0)
    model = models.resnet50().eval()
    x = engine.from_numpy(image_batch(1, 64, 64, seed=1))
    extractor = models.create_feature_extractor(model, ["relu", "layer1", "layer2", "layer3", "layer4"])
    with engine.no_grad():
        outs = extractor(x)
    assert list(outs) == ["relu", "layer1", "layer2", "layer3", "layer4"]
    for ours, ref in zip(outs.values(), _stage_outputs(model, x)):
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    renamed = models.create_feature_extractor(model, {"layer2": "c3", "avgpool": "pool"})
    with engine.no_grad():
        outs = renamed(x)
        logits = model(x)
    assert list(outs) == ["c3", "pool"] and tuple(outs["pool"].shape) == (1, 2048, 1, 1)
    assert tuple(logits.shape) == (1, 1000)  # hooks are gone after the extractor ran


def test_create_feature_extractor_matches_torchvision():
    tmodel = torch_model("resnet18", seed=3)
    ours = ours_like("resnet18", tmodel)
    nodes = {"layer1.0.relu": "stem_block", "layer3.1.conv2": "conv", "layer4": "last", "fc": "logits"}
    x = image_batch(2, 48, 56, seed=2)
    with torch.no_grad():
        ref = tv_feature_extractor(tmodel, nodes)(torch.from_numpy(x))
    with engine.no_grad():
        out = models.create_feature_extractor(ours, nodes)(engine.from_numpy(x))
    assert list(out) == list(ref)
    for key in ref:
        assert_close(to_numpy(out[key]), to_numpy(ref[key]), 1e-5, what=key)


def test_create_feature_extractor_errors_and_names():
    model = models.resnet18()
    names = models.get_module_names(model)
    assert names[:4] == ["conv1", "bn1", "relu", "maxpool"] and "layer4.1.bn2" in names
    with pytest.raises(ValueError, match=r"return_nodes \['layer5'\] are not modules of ResNet"):
        models.create_feature_extractor(model, ["layer1", "layer5"])


# timm's feature_info channels for the MobileNetV3s; VGG's stages end at the ReLU before each pool
TIMM_MOBILENETV3_CHANNELS = {"mobilenet_v3_large": [16, 24, 40, 112, 960], "mobilenet_v3_small": [16, 16, 24, 48, 576]}


def _features_reference(name):
    """``torch_model(name)``; for VGG without drawing its classifier's weights (left as torch.empty gives them: only
    ``features`` is compared, and drawing vgg11_bn's 120M classifier weights twice,
    reset then init, made this test take 4.2 s, 2.7 s without)."""
    if not name.startswith("vgg"):
        return torch_model(name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.Linear, "reset_parameters", lambda self: None)
        patch.setattr(torch.nn.init, "normal_", lambda tensor, *args, **kwargs: tensor)  # VGG's Linear init only
        return torch_model(name)


@pytest.mark.parametrize("name, nodes", [
    ("mobilenet_v3_large", ["features.1", "features.3", "features.6", "features.12", "features.16"]),
    ("mobilenet_v3_small", ["features.0", "features.1", "features.3", "features.8", "features.12"]),
    ("mobilenet_v2", ["features.1", "features.3", "features.6", "features.13", "features.18"]),
    ("vgg11_bn", ["features.2", "features.6", "features.13", "features.20", "features.27", "features.28"]),
])
def test_features_only_plain_chain_models(name, nodes):
    """MobileNet and VGG stages sit inside ``features``: outputs equal torchvision's feature extractor's."""
    reference = _features_reference(name)
    model = build_without_draws(lambda: models.create_model(name, features_only=True))
    keys = model.state_dict()
    model.load_state_dict({k: v for k, v in reference.state_dict().items() if k in keys})
    model.eval()
    assert model.feature_info.module_name() == nodes
    assert model.feature_info.reduction() == [2, 4, 8, 16, 32] if len(nodes) == 5 else [1, 2, 4, 8, 16, 32]
    if name in TIMM_MOBILENETV3_CHANNELS:
        assert model.feature_info.channels() == TIMM_MOBILENETV3_CHANNELS[name]
    last = int(nodes[-1].split(".")[1])
    assert list(model.state_dict()) == [k for k in reference.state_dict()
                                        if k.startswith("features.") and int(k.split(".")[1]) <= last]
    x = image_batch(2, 65, 97, seed=3)
    with engine.no_grad():
        ours = model(engine.from_numpy(x))
    with torch.no_grad():
        ref = tv_feature_extractor(reference, return_nodes=nodes)(torch.from_numpy(x))
    assert [o.shape[1] for o in ours] == model.feature_info.channels()
    for out, node in zip(ours, nodes):
        assert_close(to_numpy(out), ref[node].numpy(), rtol=1e-4, what=node)


def test_plain_chain_out_indices():
    model = models.create_model("mobilenet_v3_large", features_only=True, out_indices=(1, 2))
    assert model.feature_info.module_name() == ["features.3", "features.6"]
    assert max(int(k.split(".")[1]) for k in model.state_dict()) == 6
    with engine.no_grad():
        outs = model.eval()(engine.randn(1, 3, 32, 32))
    assert [tuple(o.shape) for o in outs] == [(1, 24, 8, 8), (1, 40, 4, 4)]
