"""ShuffleNetV2, MNASNet and EfficientNet (V1 and V2) against torchvision: structure of every variant, eval and
train numerics of the smallest, MNASNet's version-1 checkpoints, the weights API, features_only and nn.Graph."""
import hashlib
import json
import os
import warnings

import numpy as np
import pytest
import torch
import torchvision.models as tv
from PIL import Image
from torchvision.models.feature_extraction import create_feature_extractor as tv_feature_extractor

import engine
import flowvision.models as models
from engine.nn import init
from flowvision import hub
from flowvision.models import weights as W
from http_server import FileServer
from flowvision.ops import StochasticDepth
from model_parity import (backward_both, build_without_draws, eval_outputs, image_batch, numpy_state, randomize_norms,
                          to_numpy, torch_model, torchvision_names)
from op_check import assert_close

pytestmark = [pytest.mark.slow,  # whole-model runs: outside the quick subset (-m "not slow")
              pytest.mark.usefixtures("one_torch_thread")]

SHUFFLENETS = ["shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"]
MNASNETS = ["mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"]
EFFICIENTNETS = [f"efficientnet_b{i}" for i in range(8)] + [f"efficientnet_v2_{s}" for s in "sml"]
ALL = SHUFFLENETS + MNASNETS + EFFICIENTNETS
SMALLEST = ["shufflenet_v2_x0_5", "mnasnet0_5", "efficientnet_b0"]
TOL = 1e-4
IMAGE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images", "chelsea.png")


@pytest.fixture
def no_init(monkeypatch):
    """Skip the random draws of initialisation (structure tests of the large variants need none)."""
    for name in ("uniform_", "normal_", "kaiming_uniform_", "kaiming_normal_"):
        monkeypatch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)


def _ours(name, reference, **kwargs):
    """Our model with the torch reference's weights loaded through numpy (no initial draws: the strict load
    replaces every one), in eval mode."""
    model = build_without_draws(lambda: models.create_model(name, **kwargs))
    model.load_state_dict(numpy_state(reference))
    return model.eval()


def _layer_settings(module):
    """What a layer computes beyond its weights: strides, groups, norm eps/momentum, drop rates."""
    kind = type(module).__name__
    if kind == "Conv2d":
        return tuple(module.kernel_size), tuple(module.stride), tuple(module.padding), tuple(module.dilation), \
            module.groups, module.bias is not None
    if kind == "BatchNorm2d":
        return module.eps, module.momentum
    if kind in ("Dropout", "StochasticDepth"):
        return module.p, getattr(module, "mode", None)
    if kind == "MaxPool2d":
        return module.kernel_size, module.stride, module.padding
    return None


def test_registered_families():
    assert models.list_models("shufflenet*") == SHUFFLENETS
    assert models.list_models(module="mnasnet") == MNASNETS
    assert sorted(torchvision_names(models.list_models("efficientnet*"))) == sorted(EFFICIENTNETS)
    assert models.list_models(module="shufflenetv2") == SHUFFLENETS
    assert set(models.list_models(module="efficientnet", pretrained=True)) >= set(EFFICIENTNETS)  # and timm's
    assert models.model_entrypoint("efficientnet_v2_s") is models.efficientnet_v2_s
    assert (models.ShuffleNetV2, models.MNASNet) == (models.shufflenetv2.ShuffleNetV2, models.mnasnet.MNASNet)


@pytest.mark.parametrize("name", ALL)
def test_structure_matches_torchvision(name, no_init):
    """Every variant, built without running it: state_dict keys in order with shapes and dtypes, the module
    tree, and each layer's settings (strides, groups, BatchNorm eps/momentum, dropout and stochastic depth)."""
    with torch.device("meta"):
        reference = getattr(tv, name)()
    ours = models.create_model(name)
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(ref_sd[k].dtype).split(".")[-1], k
    ref_modules, our_modules = list(reference.named_modules()), list(ours.named_modules())
    assert [n for n, _ in our_modules] == [n for n, _ in ref_modules]
    for (path, mine), (_, theirs) in zip(our_modules, ref_modules):
        assert type(mine).__name__ == type(theirs).__name__, path
        assert _layer_settings(mine) == _layer_settings(theirs), path
    assert sum(p.numel() for p in ours.parameters()) == W.get_model_weights(name).DEFAULT.meta["num_params"]


@pytest.mark.parametrize("name", SMALLEST)
def test_eval_parity(name):
    reference = torch_model(name, seed=3)
    ours = _ours(name, reference)
    for n, h, w in [(1, 224, 224), (2, 97, 113)]:
        out, ref = eval_outputs(reference, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


def _train_step_matches(name, keys, shape, **kwargs):
    """Train-mode output, input gradient, parameter gradients and updated BatchNorm statistics equal
    torchvision's (float64: batch statistics of small maps amplify float32 rounding)."""
    reference = randomize_norms(torch_model(name, seed=7, num_classes=5, **kwargs), 7).train().double()
    ours = _ours(name, reference, num_classes=5, **kwargs).train().double()
    x = image_batch(*shape, seed=8).astype(np.float64)
    ref_params, our_params = backward_both(reference, ours, x)
    assert set(our_params) == set(ref_params)
    for k in keys:
        assert_close(our_params[k].grad.numpy(), ref_params[k].grad.numpy(), 1e-9, what=k)
    ref_buffers, our_buffers = dict(reference.named_buffers()), dict(ours.named_buffers())
    for k in ref_buffers:
        assert_close(to_numpy(our_buffers[k]), to_numpy(ref_buffers[k]), 1e-9, what=k)


def test_train_mode_efficientnet_b0():
    """MBConv (SiLU, squeeze-excitation, residual after stochastic depth) in training, with drop rates 0."""
    keys = ["features.0.0.weight", "features.1.0.block.1.fc1.bias", "features.2.1.block.1.0.weight",
            "features.6.3.block.2.fc2.weight", "features.8.1.weight", "classifier.1.weight"]
    _train_step_matches("efficientnet_b0", keys, (2, 64, 48), dropout=0.0, stochastic_depth_prob=0.0)


def test_train_mode_shufflenet_v2_x0_5():
    """Split, concatenate and channel shuffle back-propagate as in torch."""
    keys = ["conv1.0.weight", "stage2.0.branch1.0.weight", "stage2.1.branch2.3.weight", "stage4.3.branch2.6.bias",
            "conv5.0.weight", "fc.weight"]
    _train_step_matches("shufflenet_v2_x0_5", keys, (2, 64, 48))


def test_train_mode_mnasnet0_5():
    keys = ["layers.0.weight", "layers.3.weight", "layers.8.0.layers.3.weight", "layers.12.3.layers.7.weight",
            "layers.14.weight", "classifier.1.weight"]
    _train_step_matches("mnasnet0_5", keys, (2, 64, 48), dropout=0.0)


def test_stochastic_depth_in_training():
    """A residual block's branch is kept or dropped per sample; with p=1 the block is the identity in training."""
    model = models.efficientnet_b0(stochastic_depth_prob=0.5)
    depths = [m.p for m in model.modules() if isinstance(m, StochasticDepth)]
    assert depths[0] == 0.0 and depths == sorted(depths) and max(depths) == pytest.approx(0.5 * 15 / 16)
    block = model.features[2][1].eval()
    block.stochastic_depth.train()  # only the drop is random: BatchNorm keeps its running statistics
    assert block.use_res_connect
    x = engine.randn(2, 24, 9, 7)
    with engine.no_grad():
        branch = block.block(x).numpy()
        block.stochastic_depth.p = 1.0
        np.testing.assert_array_equal(block(x).numpy(), x.numpy())
        block.stochastic_depth.p = 0.5
        engine.manual_seed(0)
        out = block(x).numpy() - x.numpy()
    kept = [np.allclose(o, 2 * b, rtol=1e-5, atol=1e-5) for o, b in zip(out, branch)]
    dropped = [np.allclose(o, 0, atol=1e-6) for o in out]
    assert all(k != d for k, d in zip(kept, dropped))


def _v1_reference(seed=5):
    """torchvision's mnasnet0_5 with the version-1 stem (32 and 16 channels), as its old checkpoints had."""
    from torchvision.models.mnasnet import _BN_MOMENTUM, _stack

    torch.manual_seed(seed)
    reference = tv.mnasnet0_5()
    stem = [torch.nn.Conv2d(3, 32, 3, padding=1, stride=2, bias=False), torch.nn.BatchNorm2d(32, momentum=_BN_MOMENTUM),
            torch.nn.ReLU(inplace=True), torch.nn.Conv2d(32, 32, 3, padding=1, groups=32, bias=False),
            torch.nn.BatchNorm2d(32, momentum=_BN_MOMENTUM), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(32, 16, 1, bias=False), torch.nn.BatchNorm2d(16, momentum=_BN_MOMENTUM),
            _stack(16, 16, 3, 2, 3, 3, _BN_MOMENTUM)]
    for i, layer in enumerate(stem):
        reference.layers[i] = layer
    return randomize_norms(reference, seed).eval()


def test_mnasnet_version1_checkpoints(tmp_path):
    """Old checkpoints (fixed-width stem) rebuild the stem on load, as torchvision does: from the version in
    the checkpoint's metadata, or, for a plain dict of arrays, from the 32-channel stem weight."""
    reference = _v1_reference()
    x = image_batch(2, 67, 75, seed=1)
    sd = reference.state_dict()
    sd._metadata[""]["version"] = 1
    check = tv.mnasnet0_5()
    with pytest.warns(UserWarning, match="new version of MNASNet"):
        check.load_state_dict(sd)  # torchvision's own handling of the same checkpoint
    assert check.layers[0].out_channels == 32

    plain = models.mnasnet0_5()
    assert plain.state_dict()._metadata[""] == {"version": 2} and plain.layers[0].out_channels == 16
    with pytest.warns(UserWarning, match="first version of MNASNet"):
        plain.load_state_dict(numpy_state(reference))
    out, ref = eval_outputs(reference, plain.eval(), x)
    assert_close(out, ref, TOL, what="v1 checkpoint")
    assert plain.state_dict()._metadata[""] == {"version": 1}
    assert plain.feature_info[0] == dict(num_chs=16, reduction=2, module="layers.7")

    path = str(tmp_path / "mnasnet0_5_v1.pth")
    torch.save(sd, path)
    loaded = engine.load(path)
    assert loaded._metadata[""]["version"] == 1
    with pytest.warns(UserWarning, match="first version of MNASNet"):
        models.mnasnet0_5().load_state_dict(loaded)
    with pytest.warns(UserWarning, match="first version of MNASNet"):
        from_file = models.create_model("mnasnet0_5", checkpoint_path=path)
    assert_close(eval_outputs(reference, from_file.eval(), x)[0], ref, TOL, what="checkpoint_path")

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        current = models.mnasnet0_5()
        current.load_state_dict(models.mnasnet0_5().state_dict())  # version 2 stays as it is
        models.mnasnet1_0().load_state_dict(numpy_state(tv.mnasnet1_0()))  # alpha 1.0: both versions are one
    sd._metadata[""]["version"] = 2
    with pytest.raises(RuntimeError, match="size mismatch for layers.0.weight"):
        models.mnasnet0_5().load_state_dict(sd)
    sd._metadata[""]["version"] = 3
    with pytest.raises(ValueError, match="version should be set to 1 or 2 instead of 3"):
        models.mnasnet0_5().load_state_dict(sd)


def test_weights_api():
    for name in ALL:
        ours, theirs = W.get_model_weights(name), tv.get_model_weights(name)
        assert ours.__name__ == theirs.__name__ and list(ours.__members__) == list(theirs.__members__)
        assert ours.DEFAULT.name == theirs.DEFAULT.name and getattr(models, ours.__name__) is ours
        for member in theirs:
            mine, preset = ours[member.name], member.transforms()
            assert mine.url == member.url and mine.meta["num_params"] == member.meta["num_params"]
            assert mine.meta["_metrics"] == member.meta["_metrics"]
            assert mine.meta["min_size"] == member.meta["min_size"]
            assert mine.meta["categories"] == member.meta["categories"]
            fv = mine.transforms()
            assert (fv.crop_size, fv.resize_size, fv.interpolation) == \
                (preset.crop_size[0], preset.resize_size[0], preset.interpolation.value)
            np.testing.assert_allclose(fv.mean.ravel(), preset.mean, rtol=1e-6)
            np.testing.assert_allclose(fv.std.ravel(), preset.std, rtol=1e-6)
    assert models.EfficientNet_B1_Weights.DEFAULT is models.EfficientNet_B1_Weights.IMAGENET1K_V2
    assert W.get_model_weights(models.efficientnet_b1) is models.EfficientNet_B1_Weights
    assert W.get_weight("MNASNet0_75_Weights.IMAGENET1K_V1") is models.MNASNet0_75_Weights.IMAGENET1K_V1
    assert W.resolve_weights("efficientnet_b1", pretrained=True) is models.EfficientNet_B1_Weights.IMAGENET1K_V1
    assert W.resolve_weights("efficientnet_b1", weights="DEFAULT") is models.EfficientNet_B1_Weights.IMAGENET1K_V2
    with pytest.raises(ValueError, match="do not belong to shufflenet_v2_x1_0"):
        models.shufflenet_v2_x1_0(weights=models.ShuffleNet_V2_X0_5_Weights.DEFAULT)
    with open(os.path.join(os.path.dirname(W.__file__), "..", "weights", "manifest.json"), encoding="utf-8") as f:
        record = json.load(f)["models"]["mnasnet0_5"]["weights"]["IMAGENET1K_V1"]
    assert (record["file_name"], record["sha256"]) == ("mnasnet0.5_top1_67.823-3ffadce67e.pth", "3ffadce67e")


def test_pretrained_loading_served(tmp_path, monkeypatch):
    """weights= and pretrained=True fetch the manifest's file (here random weights served locally); another
    class count loads everything but the classifier."""
    torch.manual_seed(0)
    reference = randomize_norms(tv.mnasnet0_5(), 0).eval()
    path = tmp_path / "mnasnet.pth"
    torch.save(reference.state_dict(), path)
    data = path.read_bytes()
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"mnasnet0_5": {"IMAGENET1K_V1": {
        "sha256": hashlib.sha256(data).hexdigest(), "sha256_is_prefix": False}}}))
    with FileServer() as server:
        server.files["mnasnet0.5_top1_67.823-3ffadce67e.pth"] = data
        monkeypatch.setenv(W.ENV_URL_BASE, server.base_url)
        monkeypatch.setenv(W.ENV_MANIFEST, str(overlay))
        monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "home"))
        hub.set_dir(None)
        x = image_batch(1, 48, 56, seed=2)
        for kwargs in ({"weights": "DEFAULT"}, {"pretrained": True}):
            out, ref = eval_outputs(reference, models.mnasnet0_5(progress=False, **kwargs).eval(), x)
            assert_close(out, ref, TOL, what=str(kwargs))
        with pytest.warns(UserWarning, match=r"except the classifier \(classifier.1.bias, classifier.1.weight\)"):
            model = models.create_model("mnasnet0_5", pretrained=True, num_classes=10)
        assert model.get_classifier().out_features == 10
        assert len(server.requests) == 1


@pytest.mark.parametrize("name, tag", [("efficientnet_b0", "IMAGENET1K_V1"), ("efficientnet_b1", "IMAGENET1K_V2"),
                                       ("efficientnet_v2_l", "IMAGENET1K_V1"), ("shufflenet_v2_x1_5", "IMAGENET1K_V1"),
                                       ("mnasnet0_5", "IMAGENET1K_V1")])
def test_transforms_match_torchvision(name, tag):
    """Bicubic and bilinear resizes, 232/255/256 resize sizes, V2-L's 0.5 mean and std, on a photo."""
    image = Image.open(IMAGE).convert("RGB")
    ours = W.get_model_weights(name)[tag].transforms()
    theirs = tv.get_model_weights(name)[tag].transforms()
    np.testing.assert_allclose(ours(image).numpy(), theirs(image).numpy(), atol=1e-5)


@pytest.mark.parametrize("name, nodes", [
    ("shufflenet_v2_x0_5", ["conv1", "maxpool", "stage2", "stage3", "conv5"]),
    ("mnasnet0_5", ["layers.7", "layers.8", "layers.9", "layers.11", "layers.16"]),
    ("efficientnet_b0", ["features.1", "features.2", "features.3", "features.5", "features.8"]),
])
def test_features_only(name, nodes):
    """Stage outputs at reductions 2-32 equal torchvision's feature extractor's at the same modules."""
    reference = torch_model(name, seed=2)
    # no initial draws: the reference's weights cover every key of ours (the load is strict)
    model = build_without_draws(lambda: models.create_model(name, features_only=True))
    keys = model.state_dict().keys()  # once, not per key: state_dict walks the whole model
    model.load_state_dict({k: v for k, v in numpy_state(reference).items() if k in keys})
    model.eval()
    assert model.feature_info.module_name() == nodes
    assert model.feature_info.reduction() == [2, 4, 8, 16, 32]
    x = image_batch(1, 65, 97, seed=3)
    with engine.no_grad():
        outs = model(engine.from_numpy(x))
    with torch.no_grad():
        ref = tv_feature_extractor(reference, return_nodes=nodes)(torch.from_numpy(x))
    assert [o.shape[1] for o in outs] == model.feature_info.channels()
    for out, node in zip(outs, nodes):
        assert_close(to_numpy(out), ref[node].numpy(), TOL, what=node)
    assert not any(k.startswith(("fc.", "classifier.")) for k in model.state_dict())
    assert build_without_draws(lambda: models.create_model(name)).feature_info == model.feature_info.get_dicts()


def test_feature_info_channels_and_out_indices():
    assert models.efficientnet_v2_s().feature_info == [
        dict(num_chs=24, reduction=2, module="features.1"), dict(num_chs=48, reduction=4, module="features.2"),
        dict(num_chs=64, reduction=8, module="features.3"), dict(num_chs=160, reduction=16, module="features.5"),
        dict(num_chs=1280, reduction=32, module="features.7")]
    assert models.mnasnet1_0().feature_info == [
        dict(num_chs=16, reduction=2, module="layers.7"), dict(num_chs=24, reduction=4, module="layers.8"),
        dict(num_chs=40, reduction=8, module="layers.9"), dict(num_chs=96, reduction=16, module="layers.11"),
        dict(num_chs=1280, reduction=32, module="layers.16")]
    model = models.create_model("shufflenet_v2_x1_0", features_only=True, out_indices=(2, 3))
    assert model.feature_info.channels() == [116, 232] and "stage4" not in dict(model.named_children())
    with engine.no_grad():
        outs = model.eval()(engine.randn(1, 3, 64, 64))
    assert [tuple(o.shape) for o in outs] == [(1, 116, 8, 8), (1, 232, 4, 4)]


@pytest.mark.parametrize("name, width, classifier", [("shufflenet_v2_x0_5", 1024, "fc"),
                                                     ("mnasnet0_5", 1280, "classifier.1"),
                                                     ("efficientnet_b0", 1280, "classifier.1")])
def test_timm_api(name, width, classifier):
    model = models.create_model(name, num_classes=7).eval()
    assert model.get_classifier() is dict(model.named_modules())[classifier]
    assert model.default_cfg["classifier"] == classifier and model.num_classes == 7
    x = engine.from_numpy(image_batch(2, 40, 48))
    with engine.no_grad():
        features = model.forward_features(x)
        assert tuple(features.shape) == (2, width, 2, 2)
        assert tuple(model.forward_head(features, pre_logits=True).shape) == (2, width)
        assert_close(model.forward_head(features).numpy(), model(x).numpy(), 1e-6)
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity) and model.num_classes == 0
    with engine.no_grad():
        assert tuple(model(x).shape) == (2, width)
    model.reset_classifier(3)
    assert tuple(model.get_classifier().weight.shape) == (3, width)
    gray = models.create_model(name, in_chans=1, num_classes=0).eval()
    first = dict(gray.named_modules())[gray.default_cfg["first_conv"]]
    assert first.in_channels == 1
    with engine.no_grad():
        assert tuple(gray(engine.from_numpy(image_batch(1, 33, 35, c=1))).shape) == (1, width)


def test_options_and_errors():
    model = models.efficientnet_b0(dropout=0.1, stochastic_depth_prob=0.0, num_classes=10)
    assert model.classifier[0].p == 0.1 and model.classifier[1].out_features == 10
    assert {m.p for m in model.modules() if isinstance(m, StochasticDepth)} == {0.0}
    assert models.efficientnet_b3(num_classes=10).get_classifier().out_features == 10
    assert models.mnasnet0_75(dropout=0.5).classifier[0].p == 0.5
    with pytest.raises(ValueError, match="Unsupported model type efficientnet_v3"):
        models.efficientnet._efficientnet_conf("efficientnet_v3")
    with pytest.raises(ValueError, match="should not be empty"):
        models.EfficientNet([], dropout=0.2)
    with pytest.raises(TypeError, match="List\\[MBConvConfig\\]"):
        models.EfficientNet([[1, 3, 1, 32, 16, 1]], dropout=0.2)
    with pytest.raises(ValueError, match="alpha should be greater than 0.0 instead of 0"):
        models.MNASNet(0)
    with pytest.raises(ValueError, match="kernel_size should be 3 or 5 instead of 7"):
        models.mnasnet._InvertedResidual(8, 8, 7, 1, 3)
    with pytest.raises(ValueError, match="repeats should be >= 1, instead got 0"):
        models.mnasnet._stack(8, 8, 3, 1, 3, 0, 0.1)
    assert [models.mnasnet._round_to_multiple_of(v, 8) for v in (83, 84, 3)] == [80, 88, 8]
    with pytest.raises(ValueError, match="expected stages_repeats as list of 3 positive ints"):
        models.ShuffleNetV2([4, 8], [24, 48, 96, 192, 1024])
    with pytest.raises(ValueError, match="expected stages_out_channels as list of 5 positive ints"):
        models.ShuffleNetV2([4, 8, 4], [24, 48, 96, 192])
    with pytest.raises(ValueError, match="Invalid combination of stride 1, inp 24 and oup 48"):
        models.shufflenetv2.InvertedResidual(24, 48, 1)
    with pytest.raises(ValueError, match="illegal stride value"):
        models.shufflenetv2.InvertedResidual(24, 48, 4)


def test_init_follows_torchvision():
    engine.manual_seed(0)
    model = models.efficientnet_b0()
    conv = model.features[6][0].block[0][0]
    assert abs(to_numpy(conv.weight).std() * np.sqrt(conv.out_channels / 2) - 1) < 0.05
    bound = 1 / np.sqrt(1000)
    weight = to_numpy(model.classifier[1].weight)
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.99 * bound
    assert not to_numpy(model.classifier[1].bias).any() and not to_numpy(model.features[1][0].block[1].fc1.bias).any()
    mnasnet = models.mnasnet1_0()
    weight = to_numpy(mnasnet.classifier[1].weight)
    assert 0.99 * np.sqrt(3 / 1000) < np.abs(weight).max() <= np.sqrt(3 / 1000)
    assert abs(to_numpy(mnasnet.layers[0].weight).std() * np.sqrt(32 * 9 / 2) - 1) < 0.2
    shufflenet = models.shufflenet_v2_x1_0()  # PyTorch's default init: kaiming-uniform with a = sqrt(5)
    bound = 1 / np.sqrt(1024)
    assert 0.99 * bound < np.abs(to_numpy(shufflenet.fc.weight)).max() <= bound
    assert 0.9 * bound < np.abs(to_numpy(shufflenet.fc.bias)).max() <= bound


class _InferenceGraph(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


@pytest.mark.parametrize("name", SMALLEST)
def test_graph_inference_matches_eager(name):
    reference = torch_model(name, seed=4)
    ours = _ours(name, reference)
    graph = _InferenceGraph(ours)
    for seed in (0, 1):
        x = engine.from_numpy(image_batch(2, 64, 72, seed=seed))
        with engine.no_grad():
            expected = ours(x).numpy()
        assert_close(graph(x).numpy(), expected, 1e-5, what=f"{name} graph")
    assert graph.num_compiled == 1
    assert "BatchNorm" not in repr(graph).split("(PLAN:0)")[1]


@pytest.mark.parametrize("name", ["efficientnet_b0", "shufflenet_v2_x0_5"])
def test_training_step_on_the_cuda_backend(cuda, name):
    """Stochastic depth draws its mask on the input's device; with drops off, a training step equals the CPU's."""
    from test_cuda_models import _assert_same_training_step, cpu_and_gpu

    options = {"dropout": 0.0, "stochastic_depth_prob": 0.0} if name.startswith("efficientnet") else {}
    cpu, gpu = cpu_and_gpu(lambda: models.create_model(name, num_classes=5, **options))
    x, y = image_batch(2, 40, 36, seed=6), np.array([1, 4])
    loss_fn = engine.nn.CrossEntropyLoss()
    _assert_same_training_step(cpu, gpu, lambda m, d, dt: loss_fn(m(engine.from_numpy(x.astype(dt)).to(d)),
                                                                  engine.from_numpy(y).to(d)))
    if name.startswith("efficientnet"):
        for module in gpu.modules():
            if isinstance(module, StochasticDepth):
                module.p = 0.5
        out = gpu.train()(engine.from_numpy(x).cuda().double())
        out.sum().backward()
        assert out.device.type == "cuda" and gpu.features[0][0].weight.grad.device.type == "cuda"
