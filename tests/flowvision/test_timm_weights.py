"""timm's published weights: the manifest against timm's pretrained configs, timm's preprocessing, and
``create_model('<name>.<tag>', pretrained=True)`` from a local server that answers as the Hugging Face hub (or
GitHub's release downloads, timm's oldest weights) does."""
import functools
import hashlib
import inspect
import io
import json
import os
import sys

import numpy as np
import pytest
import timm
import torch
from PIL import Image
from safetensors.torch import save
from timm.data import ImageNetInfo, create_transform, resolve_data_config
from timm.data.imagenet_info import infer_imagenet_subset
from timm.models import get_pretrained_cfg

import engine
import flowvision.models as models
from flowvision import hub
from flowvision.models import weights as W
from http_server import FileServer
from script_loader import load_script

# the script that writes the manifest: which of timm's files it serves (those with timm's state_dict layout)
timm_manifest = load_script("timm_manifest")
IMAGE = os.path.join(os.path.dirname(__file__), "..", "data", "images", "chelsea.png")
TIMM_MODELS = [n for n in W.list_pretrained() if ".timm_families." in models.model_entrypoint(n).__module__]
# torchvision's models that also have timm's weights (timm's namesake has the same layout and computation)
TORCHVISION_WITH_TIMM_TAGS = [n for n in W.list_pretrained() if not W.get_model_weights(n).DEFAULT.url.startswith(
    W.HF_URL_BASE) and any(member.url.startswith(W.HF_URL_BASE) for member in W.get_model_weights(n))]


def _timm_members(name, enum):
    """The enum's members of timm's weights: all of a timm family's, a torchvision model's on the hub."""
    return [member for tag, member in enum.__members__.items() if tag != "DEFAULT"
            and (name in TIMM_MODELS or member.url.startswith(W.HF_URL_BASE))]


def test_every_timm_family_model_with_weights_has_its_records():
    registered = [n for n in models.list_models() if ".timm_families." in models.model_entrypoint(n).__module__]
    published = [n for n in registered if any(timm_manifest._has_timm_layout(get_pretrained_cfg(p))
                                              for p in timm.list_pretrained(f"{n}.*"))]
    assert sorted(TIMM_MODELS) == sorted(published) and len(published) > 50
    assert sorted(TORCHVISION_WITH_TIMM_TAGS) == ["densenet121", "densenet161", "densenet169", "densenet201",
                                                  "resnet101", "resnet152", "resnet18", "resnet34", "resnet50",
                                                  "resnext101_32x8d", "resnext101_64x4d", "resnext50_32x4d",
                                                  "wide_resnet101_2", "wide_resnet50_2"]


@functools.cache
def _pretrained_tags():
    """{model: its pretrained tags} from one pass over timm's list (a pattern per model scanned it 700 times)."""
    tags = {}
    for pretrained in timm.list_pretrained():
        model, tag = pretrained.split(".", 1)
        tags.setdefault(model, []).append(tag)
    return tags


@pytest.mark.parametrize("name", TIMM_MODELS + TORCHVISION_WITH_TIMM_TAGS)
def test_records_match_timm(name):
    """Tags (every one whose file has timm's layout, whatever its head), default, hub file, classes and their names,
    license and preprocessing are timm's pretrained config's; a model built without weights has the default's
    head, as timm's (torchvision's models keep torchvision's default)."""
    enum = W.get_model_weights(name)
    tags = [tag for tag in _pretrained_tags().get(name, []) if timm_manifest._has_timm_layout(get_pretrained_cfg(f"{name}.{tag}"))]
    assert sorted(m.name.lower() for m in _timm_members(name, enum)) == sorted(tags)
    if name in TIMM_MODELS:  # timm's default, unless its file has another layout (then the first served tag)
        default = get_pretrained_cfg(name).tag
        default = default if default in tags else tags[0]
        assert enum.DEFAULT.name.lower() == default
        assert W.default_num_classes(name) == get_pretrained_cfg(f"{name}.{default}").num_classes
    for member in _timm_members(name, enum):
        cfg = get_pretrained_cfg(f"{name}.{member.name.lower()}")
        if cfg.hf_hub_id:
            assert member.url == f"https://huggingface.co/{cfg.hf_hub_id}/resolve/main/model.safetensors"
        else:  # a release file: the sha256 prefix in its name is checked
            assert member.url == cfg.url and member.url.startswith(W.GITHUB_URL_BASE) and member.value.sha256 is None
            record = member.value.record
            assert member.url.endswith(f"-{record['sha256']}.pth") and record["sha256_is_prefix"]
        assert member.meta["num_classes"] == cfg.num_classes
        subset = infer_imagenet_subset({"num_classes": cfg.num_classes})
        assert len(member.meta["categories"] or ()) == (cfg.num_classes if subset else 0)
        assert bool(member.meta["_metrics"]) <= (cfg.num_classes == 1000)
        assert member.meta["license"] == cfg.license
        preset = member.transforms()
        size = cfg.input_size[-1]
        assert (preset.crop_size, preset.interpolation) == (size, cfg.interpolation)
        assert preset.resize_size == int(size / cfg.crop_pct)
        assert np.allclose(preset.mean.ravel(), cfg.mean) and np.allclose(preset.std.ravel(), cfg.std)


@pytest.mark.parametrize("num_classes", [11221, 11821, 21841, 21842, 21843])
def test_imagenet_subset_class_names_are_timms(num_classes):
    """The class names of timm's ImageNet-21k/12k heads are timm's descriptions (WordNet lemmas), in its order."""
    info = ImageNetInfo(infer_imagenet_subset({"num_classes": num_classes}))
    names = next(member.meta["categories"] for name in TIMM_MODELS for member in W.get_model_weights(name)
                 if member.meta["num_classes"] == num_classes)
    assert names == [info.index_to_description(i) for i in range(num_classes)]


def test_a_model_without_weights_has_its_default_weights_head(no_init):
    """As in timm, ``create_model`` without weights builds the default weights' head: none for an image encoder
    (0 classes), 21841 classes where the default weights are ImageNet-22k's; ``num_classes=`` still wins."""
    assert models.create_model("tiny_vit_5m_224").num_classes == get_pretrained_cfg("tiny_vit_5m_224").num_classes
    assert models.create_model("tiny_vit_5m_224", num_classes=10).num_classes == 10
    assert models.create_model("resnet50").fc.out_features == 1000



def _class_default(model_cls, name):
    """The default of ``model_cls``'s keyword argument ``name``, looked up along its bases where its own
    ``__init__`` passes keywords on (LeViT's distilled class, the hybrid ViTs); None where no class takes it."""
    for cls in model_cls.__mro__:
        parameters = inspect.signature(cls.__init__).parameters if "__init__" in vars(cls) else {}
        if name in parameters:
            return parameters[name].default
    return None


def test_every_timm_model_without_weights_has_timm_default_head(monkeypatch):
    """timm gives a model its pretrained config's head even without weights: so does every timm-family model we
    register without served weights (ViTamin's CLIP embedding width, no head for the LingBot and Florence-2
    encoders, 1000 classes for the SAM ViT classifier). The entrypoints are called with their builder captured:
    nothing is built."""
    served = set(W.list_pretrained())
    untrained = [n for n in models.list_models()
                 if ".timm_families." in models.model_entrypoint(n).__module__ and n not in served]
    assert len(untrained) > 200
    for name in untrained:
        entrypoint = models.model_entrypoint(name)
        calls = []
        monkeypatch.setattr(sys.modules[entrypoint.__module__], "build_model",
                            lambda cls, *args, **kwargs: calls.append((cls, kwargs)))
        entrypoint()
        model_cls, kwargs = calls[-1]  # a hybrid ViT's entrypoint builds its ResNet backbone first
        num_classes = kwargs.get("num_classes", _class_default(model_cls, "num_classes"))
        assert (num_classes or 0) == get_pretrained_cfg(name).num_classes, name

@pytest.mark.parametrize("name", ["deit_tiny_patch16_224", "inception_v4", "mixer_b16_224"])
def test_preprocessing_equals_timm_transform(name):
    """Our preset of the default weights gives what timm's eval transform gives on a real photo."""
    image = Image.open(IMAGE).convert("RGB")
    cfg = get_pretrained_cfg(name)
    theirs = create_transform(**resolve_data_config({}, pretrained_cfg=cfg.to_dict()))(image).numpy()
    ours = W.get_model_weights(name).DEFAULT.transforms()(image).numpy()
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def _serve(server, name, tag, data, sha256):
    """Publish ``data`` at the hub path of ``name.tag`` as the hub does: a redirect carrying the sha256."""
    path = f"timm/{name}.{tag}/resolve/main/model.safetensors"
    server.files[f"xet/{name}.{tag}"] = data
    server.redirects[path] = (f"xet/{name}.{tag}", {"X-Linked-Etag": f'"{sha256}"'})


@pytest.fixture
def hub_server(tmp_path, monkeypatch):
    monkeypatch.setenv(hub.ENV_HOME, str(tmp_path / "home"))
    monkeypatch.delenv(hub.ENV_OFFLINE, raising=False)
    monkeypatch.delenv(W.ENV_MANIFEST, raising=False)
    hub.set_dir(None)
    with FileServer() as server:
        yield server


# The tests that load a whole checkpoint into our model build it with ``no_init`` (zeros, not random draws, for
# the weights the strict load then replaces): their six runs took 15.6 s of CPU with the draws, 11.0 s so.
@pytest.mark.slow  # builds timm's and our model
def test_pretrained_from_the_hub(hub_server, monkeypatch, no_init):
    """``name.tag`` with ``pretrained=True`` downloads that tag's safetensors, checks the hub's sha256 and gives
    timm's outputs; ``pretrained=True`` alone loads timm's default tag; a wrong stated hash loads nothing."""
    torch.manual_seed(0)
    reference = timm.create_model("resnet18d").eval()
    data = save(reference.state_dict())
    _serve(hub_server, "resnet18d", "ra2_in1k", data, hashlib.sha256(data).hexdigest())
    _serve(hub_server, "resnet18d", "ra4_e3600_r224_in1k", data, "0" * 64)
    monkeypatch.setenv(W.ENV_URL_BASE, hub_server.base_url)
    x = np.random.default_rng(0).standard_normal((2, 3, 61, 67), dtype=np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    for kwargs in ({"model_name": "resnet18d.ra2_in1k", "pretrained": True},
                   {"model_name": "resnet18d", "weights": "ra2_in1k"}):
        model = models.create_model(progress=False, **kwargs).eval()
        with engine.no_grad():
            np.testing.assert_allclose(model(engine.from_numpy(x)).numpy(), expected, rtol=1e-4, atol=1e-4)
    assert len([r for r in hub_server.requests if r[0].startswith("/xet/")]) == 1  # then the cache
    assert W.resolve_weights("resnet18d", pretrained=True).name == get_pretrained_cfg("resnet18d").tag.upper()
    with pytest.raises(hub.HashMismatchError, match="as the server stated it"):
        models.create_model("resnet18d.ra4_e3600_r224_in1k", pretrained=True, progress=False)
    assert not [f for f in os.listdir(hub.get_dir() + "/checkpoints") if "ra4" in f]


@pytest.mark.slow  # builds timm's and our model
def test_release_weights_from_a_mirror_with_their_hash_checked(hub_server, monkeypatch, tmp_path, no_init):
    """timm's oldest weights are ``.pth`` files in its GitHub releases, fetched from a mirror at the same path
    (``$FLOWVISION_WEIGHTS_URL_BASE``): a file whose sha256 does not start with the prefix in its name loads
    nothing and leaves nothing; with the full hash of the mirror's own file in an overlay manifest, it loads and
    gives timm's outputs."""
    torch.manual_seed(0)
    reference = timm.create_model("legacy_seresnet18").eval()
    with torch.no_grad():
        for module in reference.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    buffer = io.BytesIO()
    torch.save(reference.state_dict(), buffer)
    data = buffer.getvalue()
    member = W.get_model_weights("legacy_seresnet18").DEFAULT
    hub_server.files[member.value.record["url"][len(W.GITHUB_URL_BASE):]] = data
    monkeypatch.setenv(W.ENV_URL_BASE, hub_server.base_url)
    with pytest.raises(hub.HashMismatchError):
        models.create_model("legacy_seresnet18", pretrained=True, progress=False)
    assert not [f for f in os.listdir(hub.get_dir() + "/checkpoints") if "seresnet18" in f]
    overlay = tmp_path / "overlay.json"
    overlay.write_text(json.dumps({"legacy_seresnet18": {member.name: {
        "sha256": hashlib.sha256(data).hexdigest(), "sha256_is_prefix": False}}}))
    monkeypatch.setenv(W.ENV_MANIFEST, str(overlay))
    x = np.random.default_rng(3).standard_normal((2, 3, 45, 51), dtype=np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    model = models.create_model("legacy_seresnet18", pretrained=True, progress=False).eval()
    with engine.no_grad():
        np.testing.assert_allclose(model(engine.from_numpy(x)).numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # builds whole models
def test_torchvision_models_with_timm_tags_have_timm_layout(no_init):
    """Each torchvision model given timm's tags has the state_dict of timm's namesake: the same keys in order,
    shapes and dtypes."""
    for name in TORCHVISION_WITH_TIMM_TAGS:
        with torch.device("meta"):
            reference = timm.create_model(name).state_dict()
        state = models.create_model(name).state_dict()
        assert list(state) == list(reference), name
        for key, value in reference.items():
            ours = (tuple(state[key].shape), str(state[key].dtype).split(".")[-1])
            assert ours == (tuple(value.shape), str(value.dtype).split(".")[-1]), key


@pytest.mark.slow  # builds timm's and our model
@pytest.mark.parametrize("name,tag", [("resnet18", "a1_in1k"), ("resnext50_32x4d", "a1h_in1k"),
                                      ("densenet121", "ra_in1k")])
def test_torchvision_model_loads_timm_tag_from_the_hub(name, tag, hub_server, monkeypatch, no_init):
    """``create_model('<torchvision name>.<timm tag>', pretrained=True)`` downloads timm's safetensors, and
    torchvision's model gives timm's outputs with them (random weights and BatchNorm statistics); the
    default stays torchvision's."""
    torch.manual_seed(0)
    reference = timm.create_model(name).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():  # timm's init, but the norms (zero last gammas in timm's ResNets) drawn at random
        for key, value in reference.state_dict().items():
            if value.ndim == 1 and value.is_floating_point() and not key.startswith("fc."):
                low, width = {"weight": (0.5, 1.0), "running_var": (0.5, 1.5)}.get(key.rsplit(".", 1)[1], (-0.1, 0.2))
                value.copy_(torch.rand(value.shape, generator=generator) * width + low)
    data = save(reference.state_dict())
    _serve(hub_server, name, tag, data, hashlib.sha256(data).hexdigest())
    monkeypatch.setenv(W.ENV_URL_BASE, hub_server.base_url)
    x = np.random.default_rng(2).standard_normal((2, 3, 45, 51), dtype=np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    model = models.create_model(f"{name}.{tag}", pretrained=True, progress=False).eval()
    with engine.no_grad():
        np.testing.assert_allclose(model(engine.from_numpy(x)).numpy(), expected, rtol=1e-4, atol=1e-4)
    assert W.get_model_weights(name).DEFAULT.name.startswith("IMAGENET1K_")


def test_hf_endpoint_and_tags_without_pretrained(hub_server, monkeypatch):
    monkeypatch.setenv(W.ENV_HF_ENDPOINT, "http://127.0.0.1:9")
    assert models.get_model_weights("deit_tiny_patch16_224").DEFAULT.url == \
        "http://127.0.0.1:9/timm/deit_tiny_patch16_224.fb_in1k/resolve/main/model.safetensors"
    model = models.create_model("resnet18d.ra2_in1k", num_classes=3)  # a tag alone downloads nothing (as in timm)
    assert model.fc.out_features == 3 and not hub_server.requests
    assert models.is_model("resnet18d.ra2_in1k") and not models.is_model("resnet18x.ra2_in1k")
    with pytest.raises(ValueError, match="unknown weights 'nope' for resnet18d"):
        models.create_model("resnet18d.nope", pretrained=True)


@pytest.mark.slow  # whole models
@pytest.mark.parametrize("name", ["convmixer_1024_20_ks9_p14", "dla34", "inception_v4", "resnet10t", "xception41"])
def test_min_size_is_the_smallest_input(name, no_init):
    """The records' ``min_size`` (found by the manifest script) runs, and one pixel less does not (DLA takes 31 and
    32 pixels, not 33: the script counts up rather than bisecting). Only shapes matter: the weights are zeros."""
    size = W.get_model_weights(name).DEFAULT.meta["min_size"]
    model = models.create_model(name, num_classes=2).eval()
    with engine.no_grad():
        assert model(engine.zeros(1, 3, *size)).shape == (1, 2)
        if size[0] > 1:
            with pytest.raises((RuntimeError, ValueError)):
                model(engine.zeros(1, 3, size[0] - 1, size[1] - 1))


@pytest.mark.slow  # builds timm's and our model
def test_classify_command_with_timm_weights(hub_server, monkeypatch, capsys, no_init):
    """``flowvision classify --model resnet18d`` downloads timm's default weights and prints timm's top-3 on timm's
    preprocessing of a real photo."""
    from cli_runner import run_cli

    torch.manual_seed(0)
    reference = timm.create_model("resnet18d", zero_init_last=False).eval()
    torch.nn.init.normal_(reference.fc.weight, std=0.5)  # confident predictions, which preprocessing errors move
    data = save(reference.state_dict())
    tag = get_pretrained_cfg("resnet18d").tag
    _serve(hub_server, "resnet18d", tag, data, hashlib.sha256(data).hexdigest())
    monkeypatch.setenv(W.ENV_URL_BASE, hub_server.base_url)
    code, out, err = run_cli(capsys, "classify", IMAGE, "--model", "resnet18d", "--topk", "3", "--device", "cpu")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.startswith(" ") and line.split()[0].isdigit()]
    transform = create_transform(**resolve_data_config({}, pretrained_cfg=get_pretrained_cfg("resnet18d").to_dict()))
    with torch.no_grad():
        probabilities = reference(transform(Image.open(IMAGE).convert("RGB"))[None]).softmax(1)[0]
    top = probabilities.topk(3)
    assert [int(r[2]) for r in rows] == top.indices.tolist()
    np.testing.assert_allclose([float(r[1]) for r in rows], top.values.numpy(), atol=1e-4)
