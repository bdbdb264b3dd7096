"""AlexNet, SqueezeNet, GoogLeNet, Inception v3 and DenseNet: weights API and pretrained loading (against
torchvision's builders, checkpoints served locally), DenseNet's legacy checkpoint keys, init, timm's API."""
import os
import re
import warnings

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

import engine
import flowvision.models as models
from classic_parity import CLASSIC, check_structure, reference
from flowvision.models import weights as W
from model_parity import eval_outputs, image_batch, numpy_state, skip_random_init
from op_check import assert_close

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

IMAGE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images", "chelsea.png")


@pytest.fixture
def no_init(monkeypatch):
    """No random initialisation: for tests of structure, or whose weights are all loaded."""
    skip_random_init(monkeypatch)


def test_weights_enums_match_torchvision():
    for name in CLASSIC:
        ours, theirs = W.get_model_weights(getattr(models, name)), torchvision.models.get_model_weights(name)
        assert ours is W.get_model_weights(name) and ours.__name__ == theirs.__name__
        # timm's tags of the same models (densenet121.ra_in1k) follow torchvision's
        torchvision_members = [m for m in ours.__members__ if not ours[m].url.startswith(W.HF_URL_BASE)]
        assert torchvision_members == list(theirs.__members__) == ["IMAGENET1K_V1", "DEFAULT"]
        assert ours.DEFAULT is ours.IMAGENET1K_V1 and getattr(models, ours.__name__) is ours
        assert W.get_weight(f"{ours.__name__}.IMAGENET1K_V1") is ours.IMAGENET1K_V1
        mine, member = ours.DEFAULT, theirs.DEFAULT
        assert mine.url == member.url and mine.meta["num_params"] == member.meta["num_params"]
        assert tuple(mine.meta["min_size"]) == member.meta["min_size"]
        assert (mine.meta["_ops"], mine.meta["_file_size"]) == (member.meta["_ops"], member.meta["_file_size"])
        assert mine.meta["_metrics"] == member.meta["_metrics"] and mine.meta["recipe"] == member.meta["recipe"]
        assert mine.meta["categories"] == member.meta["categories"] and mine.meta["license"] == "BSD-3-Clause"
    assert W.resolve_weights("densenet161", pretrained=True) is models.DenseNet161_Weights.IMAGENET1K_V1


@pytest.mark.parametrize("name, crop", [("inception_v3", 299), ("densenet121", 224)])
def test_transforms_match_torchvision(name, crop):
    """Inception v3's weights take a 299 crop of a 342 resize; the others 224 of 256."""
    image = Image.open(IMAGE)
    ours = W.get_model_weights(name).DEFAULT.transforms()
    theirs = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    expected = theirs(image.convert("RGB")).numpy()
    assert expected.shape == (3, crop, crop)
    np.testing.assert_allclose(ours(image).numpy(), expected, atol=1e-5)
    assert tuple(ours([image, image]).shape) == (2, 3, crop, crop)


def test_num_params_match_the_published_checkpoints(no_init):
    """torchvision counts GoogLeNet without its auxiliary heads (the pretrained model drops them), Inception with."""
    for name in CLASSIC:
        model = models.create_model(name, **({"aux_logits": False} if name == "googlenet" else {}))
        count = sum(int(np.prod(p.shape)) for p in model.parameters())
        assert count == W.get_model_weights(name).DEFAULT.meta["num_params"], name


@pytest.fixture
def served(monkeypatch):
    """Serve state dicts as the checkpoints of our weights and of torchvision's (no download): ``served[name] = sd``."""
    checkpoints = {}
    names = {W.get_model_weights(name).DEFAULT.url: name for name in CLASSIC}
    monkeypatch.setattr(W.Weights, "get_state_dict",
                        lambda self, progress=True, check_hash=True: dict(checkpoints[self.model]))
    monkeypatch.setattr(torchvision.models._api.WeightsEnum, "get_state_dict",
                        lambda self, *args, **kwargs: {k: torch.from_numpy(v.copy())
                                                       for k, v in checkpoints[names[self.url]].items()})
    return checkpoints


def _same_pretrained_model(ours, theirs, size):
    check_structure(ours, theirs)
    assert (ours.transform_input, ours.aux_logits) == (theirs.transform_input, theirs.aux_logits)
    out, expected = eval_outputs(theirs.eval(), ours.eval(), image_batch(1, *size, seed=1))
    assert_close(out, expected, 1e-4)


def test_pretrained_googlenet_as_torchvision(served):
    """The checkpoint holds (untrained) auxiliary heads: they load, then go unless ``aux_logits=True``;
    ``transform_input`` turns on unless given."""
    served["googlenet"] = numpy_state(reference("googlenet", seed=3))
    ours, theirs = models.googlenet(weights="DEFAULT"), torchvision.models.googlenet(weights="DEFAULT")
    assert ours.aux1 is None and ours.transform_input
    _same_pretrained_model(ours, theirs, (67, 75))
    with pytest.warns(UserWarning, match="auxiliary heads .* not trained"):
        ours = models.googlenet(pretrained=True, aux_logits=True, transform_input=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        theirs = torchvision.models.googlenet(weights="IMAGENET1K_V1", aux_logits=True, transform_input=False)
    _same_pretrained_model(ours, theirs, (64, 64))
    with pytest.warns(UserWarning, match=r"except the classifier \(aux1\.fc2\.bias, .*fc\.weight\)"):
        ours = models.googlenet(weights="DEFAULT", num_classes=10)
    assert tuple(ours.fc.weight.shape) == (10, 1024) and ours.aux1 is None


def test_pretrained_inception_v3_as_torchvision(served):
    """Inception v3 keeps its auxiliary head; ``aux_logits=False`` drops it after loading (torchvision
    refuses that combination instead)."""
    served["inception_v3"] = numpy_state(reference("inception_v3", seed=4))
    ours, theirs = models.inception_v3(weights="DEFAULT"), torchvision.models.inception_v3(weights="DEFAULT")
    assert ours.AuxLogits is not None and ours.transform_input
    assert ours.default_cfg["classifier"] == ("fc", "AuxLogits.fc")
    _same_pretrained_model(ours, theirs, (79, 83))
    with pytest.raises(ValueError):
        torchvision.models.inception_v3(weights="DEFAULT", aux_logits=False)
    ours = models.inception_v3(weights="DEFAULT", aux_logits=False, transform_input=False)
    assert ours.AuxLogits is None and not ours.aux_logits and not ours.transform_input
    assert "AuxLogits.fc.weight" not in ours.state_dict()


def _legacy(state_dict):
    """A DenseNet state_dict as the published checkpoints hold it: ``norm.1`` for ``norm1`` inside dense layers,
    and no ``num_batches_tracked`` (they predate it)."""
    legacy = {}
    for key, value in state_dict.items():
        if not key.endswith("num_batches_tracked"):
            legacy[re.sub(r"(denselayer\d+\.(?:norm|conv))([12])\.", r"\1.\2.", key)] = value
    return legacy


def test_densenet_legacy_checkpoint_keys(served, tmp_path, no_init):
    state = numpy_state(reference("densenet121", seed=5))
    legacy = _legacy(state)
    assert "features.denseblock2.denselayer3.norm.2.running_var" in legacy and "features.norm5.weight" in legacy
    served["densenet121"] = legacy
    ours, theirs = models.densenet121(weights="DEFAULT"), torchvision.models.densenet121(weights="DEFAULT")
    for key, value in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[key].numpy(), value.numpy(), err_msg=key)
    path = str(tmp_path / "densenet121-legacy.npz")
    np.savez(path, **legacy)
    loaded = models.create_model("densenet121", checkpoint_path=path)
    np.testing.assert_array_equal(loaded.features.denseblock4.denselayer16.conv2.weight.detach().numpy(),
                                  state["features.denseblock4.denselayer16.conv2.weight"])
    model = models.densenet121()
    result = model.load_state_dict(legacy)
    assert result.missing_keys == [] and result.unexpected_keys == []
    bad = dict(legacy)
    bad["features.denseblock1.denselayer1.norm.3.weight"] = bad.pop("features.denseblock1.denselayer1.norm.1.weight")
    with pytest.raises(RuntimeError, match=r"Unexpected key\(s\).*denselayer1\.norm\.3\.weight"):
        model.load_state_dict(bad)


def _std(tensor):
    return float(tensor.detach().numpy().std())


def test_init_follows_torchvision(fast_random):
    googlenet = models.googlenet()
    assert abs(_std(googlenet.inception4c.branch2[1].conv.weight) / 0.01 - 1) < 0.05
    assert abs(_std(googlenet.aux2.fc1.weight) / 0.01 - 1) < 0.05
    assert np.all(googlenet.conv3.bn.weight.detach().numpy() == 1)
    assert np.abs(googlenet.fc.bias.detach().numpy()).max() <= 1 / 32  # the layer's own init
    plain = models.googlenet(init_weights=False)
    assert np.abs(plain.conv2.conv.weight.detach().numpy()).max() <= 1 / 8  # default conv init, fan_in 64
    inception = models.inception_v3()
    for conv in (inception.Mixed_6b.branch7x7_2.conv, inception.AuxLogits.conv1.conv, inception.fc):
        assert abs(_std(conv.weight) / 0.1 - 1) < 0.05  # AuxLogits.conv1's stddev attribute is not read
    assert abs(_std(inception.AuxLogits.fc.weight) / 0.001 - 1) < 0.05
    squeezenet = models.squeezenet1_0()
    first = squeezenet.features[0].weight.detach().numpy()
    bound = np.sqrt(6 / (3 * 7 * 7))
    assert np.abs(first).max() <= bound and np.abs(first).max() > 0.9 * bound
    assert abs(_std(squeezenet.classifier[1].weight) / 0.01 - 1) < 0.05
    assert not squeezenet.features[3].expand3x3.bias.detach().numpy().any()
    assert not squeezenet.classifier[1].bias.detach().numpy().any()
    densenet = models.densenet121()
    conv = densenet.features.denseblock3.denselayer5.conv2
    assert abs(_std(conv.weight) * np.sqrt(128 * 3 * 3 / 2) - 1) < 0.05
    assert not densenet.classifier.bias.detach().numpy().any()
    assert np.abs(densenet.classifier.weight.detach().numpy()).max() <= 1 / 32
    alexnet = models.alexnet()
    assert np.abs(alexnet.classifier[1].weight.detach().numpy()).max() <= 1 / 96
    assert np.abs(alexnet.classifier[1].bias.detach().numpy()).max() > 0


# name, input size, forward_features shape, classifier weight shape for 5 classes, first conv
AUX_CLASS_LAYERS = {"googlenet": ["aux1.fc2", "aux2.fc2"], "inception_v3": ["AuxLogits.fc"]}
TIMM_CASES = [
    ("alexnet", (67, 67), (256, 1, 1), (5, 4096), "features.0"),
    ("squeezenet1_1", (67, 83), (512, 4, 5), (5, 512, 1, 1), "features.0"),
    ("googlenet", (64, 64), (1024, 2, 2), (5, 1024), "conv1.conv"),
    ("inception_v3", (75, 75), (2048, 1, 1), (5, 2048), "Conv2d_1a_3x3.conv"),
    ("densenet121", (64, 64), (1024, 2, 2), (5, 1024), "features.conv0"),
]


@pytest.mark.parametrize("name, size, feature_shape, classifier_shape, first_conv", TIMM_CASES)
def test_timm_api(name, size, feature_shape, classifier_shape, first_conv, fast_random):
    model = models.create_model(name, num_classes=7, in_chans=1).eval()
    assert model.default_cfg["first_conv"] == first_conv
    assert dict(model.named_parameters())[f"{first_conv}.weight"].shape[1] == 1
    num_features = classifier_shape[1]
    x = engine.from_numpy(image_batch(1, *size, c=1))
    with engine.no_grad():
        features = model.forward_features(x)
        pre_logits = model.forward_head(features, pre_logits=True)
        assert_close(model.forward_head(features).numpy(), model(x).numpy(), 1e-6)
    assert tuple(features.shape) == (1, *feature_shape) and tuple(pre_logits.shape) == (1, num_features)
    assert model.head_hidden_size == model.num_features == num_features
    assert model.num_classes == 7 and model.get_classifier().weight.shape[0] == 7
    model.reset_classifier(5)
    assert model.num_classes == 5 and tuple(model.get_classifier().weight.shape) == classifier_shape
    aux_layers = AUX_CLASS_LAYERS.get(name, [])
    assert all(model.get_submodule(layer).weight.shape[0] == 5 for layer in aux_layers)
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity)
    assert all(isinstance(model.get_submodule(layer), engine.nn.Identity) for layer in aux_layers)
    with engine.no_grad():
        assert_close(model.forward_head(features).numpy(), pre_logits.numpy(), 1e-6)


def test_constructor_errors():
    with pytest.raises(ValueError, match="Unsupported SqueezeNet version 1_2: 1_0 or 1_1 expected"):
        models.SqueezeNet("1_2")
    with pytest.raises(ValueError, match="blocks length should be 3 instead of 2"):
        models.GoogLeNet(blocks=[None, None])
    with pytest.raises(ValueError, match="length of inception_blocks should be 7 instead of 1"):
        models.Inception3(inception_blocks=[None])
    with pytest.raises(ValueError, match="transform_input re-normalizes RGB inputs"):
        models.create_model("googlenet", in_chans=1, transform_input=True)
