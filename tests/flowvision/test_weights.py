"""Weight manifest and weights API: records match torchvision, transforms, pretrained loading end to end."""
import hashlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

import engine
import flowvision.models as models
from flowvision import hub
from flowvision.models import weights as W
from http_server import FileServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_manifest_matches_torchvision():
    for name in [n for n in W.list_pretrained() if W.get_model_weights(n).DEFAULT.url.startswith(W.URL_BASE)]:
        ours, theirs = W.get_model_weights(name), torchvision.models.get_model_weights(name)
        assert ours.__name__ == theirs.__name__
        # timm's tags for the same model (resnet50.a1_in1k) follow torchvision's
        assert [m for m in ours.__members__ if not ours[m].url.startswith(W.HF_URL_BASE)] == list(theirs.__members__)
        assert ours.DEFAULT.name == theirs.DEFAULT.name
        for member in theirs:
            mine = ours[member.name]
            assert mine.url == member.url
            assert mine.meta["num_params"] == member.meta["num_params"]
            assert json.dumps(mine.meta["_metrics"]) == json.dumps(member.meta["_metrics"])  # NaN-safe
            assert mine.meta["categories"] == member.meta.get("categories")  # RAFT's weights have none
            # torchvision's own checkpoints are BSD-3-Clause; the SWAG ones carry SWAG's license (CC-BY-NC 4.0)
            assert mine.meta["license"] == member.meta.get("license", "BSD-3-Clause")
            assert re.search(r"[-_]([0-9a-f]+)\.pth$", mine.url).group(1).startswith(mine.meta["sha256"])
            assert mine.meta.get("backend") == member.meta.get("backend")  # quantized weights' engine
            unquantized = member.meta.get("unquantized")
            assert repr(mine.meta.get("unquantized")) == repr(unquantized)  # the float weights' enum member
            tv, fv = member.transforms(), mine.transforms()
            assert type(fv).__name__ == type(tv).__name__
            if type(tv).__name__ == "VideoClassification":
                assert (fv.resize_size, fv.crop_size) == (tv.resize_size, tv.crop_size)
                assert (fv.mean, fv.std) == (tv.mean, tv.std)
            elif hasattr(tv, "resize_size"):
                assert (fv.resize_size, getattr(fv, "crop_size", None)) == (tv.resize_size[0], getattr(tv, "crop_size", [None])[0])
            if "keypoint_names" in member.meta:
                assert mine.meta["keypoint_names"] == member.meta["keypoint_names"]


def test_object_detection_preset_matches_torchvision():
    """Detection weights feed the model the image as floats in [0, 1] at its own size (the model resizes)."""
    image = Image.open(os.path.join(os.path.dirname(__file__), "..", "data", "images", "chelsea.png"))
    ours = models.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()
    theirs = torchvision.models.detection.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()
    expected = theirs(torchvision.transforms.functional.pil_to_tensor(image.convert("RGB"))).numpy()
    np.testing.assert_allclose(ours(image).numpy(), expected, rtol=1e-6)
    assert [tuple(t.shape) for t in ours([image, image])] == [expected.shape] * 2


def test_model_api_and_registry():
    assert models.ResNet101_Weights.DEFAULT is models.ResNet101_Weights.IMAGENET1K_V2
    assert W.get_weight("ResNet101_Weights.IMAGENET1K_V2") is models.ResNet101_Weights.IMAGENET1K_V2
    assert W.get_model_weights(models.resnet101) is models.ResNet101_Weights
    assert models.ResNet101_Weights.IMAGENET1K_V1.url == "https://download.pytorch.org/models/resnet101-63fe2227.pth"
    assert W.resolve_weights("resnet101", pretrained=True) is models.ResNet101_Weights.IMAGENET1K_V1
    assert W.resolve_weights("resnet101", weights="DEFAULT") is models.ResNet101_Weights.IMAGENET1K_V2
    assert W.resolve_weights("resnet101") is None
    with pytest.raises(ValueError, match="unknown weights 'V3' for resnet101"):
        W.resolve_weights("resnet101", weights="V3")
    with pytest.raises(ValueError, match="do not belong to resnet101"):
        W.resolve_weights("resnet101", weights=models.ResNet18_Weights.DEFAULT)
    with pytest.raises(ValueError, match="unknown tag 'V9'"):
        W.get_weight("ResNet101_Weights.V9")
    assert set(models.list_models(pretrained=True)) == set(W.list_pretrained())
    assert models.is_model_pretrained("resnet101")
    assert "Pretrained" in models.ModelCreator.model_table("resnet10*", pretrained=True)


def test_url_base_override(monkeypatch):
    monkeypatch.setenv(W.ENV_URL_BASE, "http://127.0.0.1:9/mirror")
    assert models.ResNet50_Weights.IMAGENET1K_V2.url == "http://127.0.0.1:9/mirror/resnet50-11ad3fa6.pth"


@pytest.mark.parametrize("tag", ["IMAGENET1K_V1", "IMAGENET1K_V2"])
def test_transforms_match_torchvision(tag):
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (300, 411, 3), dtype=np.uint8))
    ours = models.ResNet50_Weights[tag].transforms()
    theirs = torchvision.models.ResNet50_Weights[tag].transforms()
    np.testing.assert_allclose(ours(image).numpy(), theirs(image).numpy(), atol=1e-5)
    assert ours([image, image.rotate(90, expand=True)]).shape == (2, 3, 224, 224)


@pytest.fixture
def served_resnet18(tmp_path, monkeypatch):
    """A random-weight torchvision resnet18 served under the manifest's file name, with an overlay giving its hash."""
    torch.manual_seed(0)
    reference = torchvision.models.resnet18().eval()
    for module in reference.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    path = tmp_path / "resnet18.pth"
    torch.save(reference.state_dict(), path)
    data = path.read_bytes()
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"resnet18": {"IMAGENET1K_V1": {
        "sha256": hashlib.sha256(data).hexdigest(), "sha256_is_prefix": False}}}))
    with FileServer() as server:
        server.files["resnet18-f37072fd.pth"] = data
        monkeypatch.setenv(W.ENV_URL_BASE, server.base_url)
        monkeypatch.setenv(W.ENV_MANIFEST, str(overlay))
        monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "home"))
        hub.set_dir(None)
        yield reference, server


def _outputs(ours, reference, x):
    with torch.no_grad(), engine.no_grad():
        return ours.eval()(engine.from_numpy(x)).numpy(), reference(torch.from_numpy(x)).numpy()


def test_pretrained_end_to_end(served_resnet18):
    reference, server = served_resnet18
    x = np.random.default_rng(1).standard_normal((2, 3, 64, 64), dtype=np.float32)
    for kwargs in ({"pretrained": True}, {"weights": models.ResNet18_Weights.DEFAULT}):
        ours, expected = _outputs(models.resnet18(progress=False, **kwargs), reference, x)
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    model = models.resnet18(weights="IMAGENET1K_V1", progress=False)
    assert np.array_equal(model.fc.weight.detach().numpy(), reference.fc.weight.detach().numpy())
    assert len(server.requests) == 1


def test_other_num_classes_loads_all_but_classifier(served_resnet18):
    reference, _ = served_resnet18
    with pytest.warns(UserWarning, match=r"except the classifier \(fc.bias, fc.weight\).*1000 classes and the model 10"):
        model = models.create_model("resnet18", pretrained=True, num_classes=10)
    assert model.fc.weight.shape == (10, 512)
    assert np.array_equal(model.layer4[1].conv2.weight.detach().numpy(), reference.layer4[1].conv2.weight.detach().numpy())
    with pytest.warns(UserWarning, match="except the classifier"):
        features = models.create_model("resnet18", pretrained=True, num_classes=0)
    x = np.random.default_rng(2).standard_normal((1, 3, 64, 64), dtype=np.float32)
    with engine.no_grad(), torch.no_grad():
        pooled = features.eval()(engine.from_numpy(x)).numpy()
        expected = torch.flatten(reference.avgpool(torch.nn.Sequential(*list(reference.children())[:-2])(
            torch.from_numpy(x))), 1).numpy()
    np.testing.assert_allclose(pooled, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # builds and installs a wheel
def test_manifest_ships_in_a_non_editable_install(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), REPO], check=True, capture_output=True)
    assert (target / "flowvision" / "weights" / "manifest.json").exists()
    assert (target / "flowvision" / "weights" / "timm_manifest.json").exists()
    code = ("import flowvision.models as m, flowvision; print(flowvision.__file__); "
            "w = m.ResNet101_Weights.DEFAULT; print(w.url, w.meta['categories'][0], len(w.meta['categories']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)},
                         check=True, capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(target))
    assert out[1:] == ["https://download.pytorch.org/models/resnet101-cd907fc2.pth", "tench", "1000"]


def test_overlay_with_a_full_hash_checks_it_whole(tmp_path, monkeypatch):
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"resnet18": {"IMAGENET1K_V1": {"sha256": "ab" * 32}}}))
    monkeypatch.setenv(W.ENV_MANIFEST, str(overlay))
    assert models.ResNet18_Weights.IMAGENET1K_V1.value.sha256 == "ab" * 32
    overlay.write_text(json.dumps({"resnet18": {"IMAGENET1K_V1": {"url": "https://example.com/r18-f37072fd.pth"}}}))
    assert models.ResNet18_Weights.IMAGENET1K_V1.value.sha256 is None  # the file name's prefix is checked
