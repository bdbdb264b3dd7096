"""The model registry, create_model's common arguments, checkpoints and ModelCreator."""
import os
import pickle
import runpy
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import save_file

import engine
import flowvision.models as models
from engine.serialization import UnpicklingError
from flowvision.models import ModelCreator, registry
from op_check import assert_close

# no test here is about the exact initial values: ours draw them from numpy (fast_random)
pytestmark = pytest.mark.usefixtures("fast_random")

RESNETS = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152"]
# timm's ResNet-D/-T variants of the same family (flowvision.models.timm_families.resnet)
TIMM_RESNETS = ["resnet10t", "resnet14t", "resnet18d", "resnet26", "resnet26d", "resnet26t", "resnet34d", "resnet50d",
                "resnet101d", "resnet152d", "resnet200d", "resnet50_gn", "resnet50c", "resnet50s", "resnet101c",
                "resnet101s", "resnet152c", "resnet152s", "resnetaa50", "resnetaa50d", "resnetaa101d", "resnetblur50",
                "resnetrs50", "resnetrs101", "resnetrs152", "resnetrs200", "resnetrs270", "resnetrs350", "resnetrs420",
                "resnet50t", "resnet200", "resnetaa34d", "resnetblur18", "resnetblur50d", "resnetblur101d"]
# timm's ResNetV2 (BiT), byobnet's ResNe(X)ts with "ts" / "q" stems, its CLIP ResNets and its MLP-head ResNet-50:
# families of their own that "resnet*" matches
OTHERS = ["resnetv2_*", "*ts", "resnet*q", "resnet*_clip*", "resnet*_mlp"]


def test_list_models_wildcards_and_lists():
    assert models.list_models("resnet*", exclude_filters=OTHERS) == sorted(RESNETS + TIMM_RESNETS,
                                                                           key=registry._natural_key)
    assert models.list_models("resnet*", exclude_filters=TIMM_RESNETS + OTHERS) == RESNETS
    assert models.list_models("resnext*", exclude_filters=OTHERS) == [
        "resnext50_32x4d", "resnext50d_32x4d", "resnext101_32x4d", "resnext101_32x8d", "resnext101_32x16d",
        "resnext101_32x32d", "resnext101_64x4d"]
    assert models.list_models(["wide*", "resnet1?"]) == ["resnet18", "wide_resnet50_2", "wide_resnet101_2"]
    assert models.list_models("*50*", module="resnet", exclude_filters=["wide*", "resnext*", "*e*resne*",
                                                                         "resnet?[!0-9]*", "resnet50[!d]*"]) == \
        ["resnet50", "resnet50d"]
    assert "resnet50" not in models.list_models("*resnet50*", exclude_filters="resnet*")
    assert models.list_models("resnet*", exclude_filters=["*1??", "*[cdnst]", "resnet[!0-9]*", *OTHERS]) == \
        ["resnet18", "resnet26", "resnet34", "resnet50", "resnet200"]
    assert models.list_models("nothing*") == []
    family = models.list_models(["resnet*", "resnext*", "wide_resnet*", "seresne*", "ecaresne*", "senet*"],
                                exclude_filters=OTHERS)
    assert models.list_models(module="resnet", exclude_filters="test_*") == family and len(family) == 80
    assert "resnet" in models.list_modules()


def _pretend_pretrained(monkeypatch, names):
    """Make exactly ``names`` count as having published weights."""
    monkeypatch.setattr(registry, "is_model_pretrained", lambda name: name in names)


def test_pretrained_filter(monkeypatch):
    assert set(models.list_models(pretrained=True)) <= set(models.list_models())
    _pretend_pretrained(monkeypatch, set())
    assert models.list_models(pretrained=True) == []
    _pretend_pretrained(monkeypatch, {"resnet50", "wide_resnet50_2"})
    assert models.list_models(pretrained=True) == ["resnet50", "wide_resnet50_2"]
    assert models.list_models("resnet*", pretrained=True) == ["resnet50"]
    assert registry.is_model_pretrained("resnet50") and not registry.is_model_pretrained("resnet18")


def test_is_model_and_entrypoint():
    assert models.is_model("resnet50") and not models.is_model("resnet51")
    assert models.model_entrypoint("resnet50") is models.resnet50


def test_unknown_model_suggests_closest():
    with pytest.raises(RuntimeError, match=r"Unknown model 'resnet51'\. Did you mean: resnet51q, resnet50"):
        models.create_model("resnet51")
    with pytest.raises(RuntimeError, match=r"Unknown model 'resnext50'\. Did you mean: resnext50_32x4d"):
        models.get_model("resnext50")
    with pytest.raises(RuntimeError, match=r"Unknown model 'qqq'\. See flowvision\.models\.list_models"):
        models.model_entrypoint("qqq")


def test_timm_index_lists_what_each_module_registers():
    """The index the registry lists timm's models from before their modules load is what importing them registers
    (``python scripts/timm_index.py`` writes it)."""
    from flowvision.models.timm_families import _index

    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts", "timm_index.py")
    assert _index.MODULES == runpy.run_path(script)["current_index"](), "run python scripts/timm_index.py"


_FIRST_USE = """
import sys
import flowvision.models as models

def loaded():
    prefix = "flowvision.models.timm_families."
    return sorted(n[len(prefix):] for n in sys.modules if n.startswith(prefix) and not n[len(prefix)] == "_")

print(loaded(), len(models.list_models()), models.is_model("coat_mini"), len(models.list_models(module="coat")))
models.create_model("rexnet_100")
print(loaded())
print(loaded(), "Family: CoaT" in models.coat_mini.__doc__, loaded())
from flowvision.models import *
print(len(loaded()), callable(resnet50d), Deit_Small_Patch16_224_Weights.DEFAULT is get_weight("Deit_Small_Patch16_224_Weights.FB_IN1K"))
"""


@pytest.mark.slow  # a fresh interpreter importing flowvision and every family module (1.5 s)
def test_timm_families_load_on_first_use():
    """``import flowvision.models`` lists timm's models without importing their modules; building one, or reaching
    its entrypoint, imports its module alone (documented as at start-up); a star import gives every entrypoint and
weights enum."""
    out = subprocess.run([sys.executable, "-c", _FIRST_USE], capture_output=True, text=True, check=True).stdout
    index = models.timm_families.MODULES
    assert out.splitlines() == [f"[] {len(models.list_models())} True {len(index['coat'])}", "['rexnet']",
                                "['rexnet'] True ['coat', 'rexnet']", f"{len(index)} True True"]


def test_index_naming_a_model_its_module_does_not_register(monkeypatch):
    monkeypatch.setitem(registry._lazy_models, "probe_unregistered", "flowvision.models.timm_families.rexnet")
    monkeypatch.setitem(registry._model_to_module, "probe_unregistered", "rexnet")
    assert models.is_model("probe_unregistered")
    with pytest.raises(RuntimeError, match=r"timm_families\.rexnet did not register 'probe_unregistered' as its "
                                           r"index says: regenerate the index with python scripts/timm_index\.py"):
        models.create_model("probe_unregistered")


def test_register_model_decorator(monkeypatch):
    for table in ("_model_entrypoints", "_model_to_module", "_module_to_models"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    monkeypatch.setattr(registry, "_model_has_pretrained", set())

    @registry.register_model(has_pretrained=True)
    def probe_linear_net(pretrained=False, **kwargs):
        return engine.nn.Linear(2, kwargs.get("num_classes", 3))

    assert models.list_models("probe_*", pretrained=True) == ["probe_linear_net"]
    assert models.create_model("probe_linear_net", num_classes=4, in_chans=None).out_features == 4


def test_create_model_passes_none_weights_through(monkeypatch):
    """``weights_backbone=None`` means "random backbone" (torchvision), not "use the default" (timm's None-dropping)."""
    for table in ("_model_entrypoints", "_model_to_module", "_module_to_models"):
        monkeypatch.setattr(registry, table, dict(getattr(registry, table)))
    seen = {}

    @registry.register_model
    def probe_net(pretrained=False, weights="DEFAULT", weights_backbone="IMAGENET1K_V1", in_chans=3):
        seen.update(weights=weights, weights_backbone=weights_backbone, in_chans=in_chans)
        return engine.nn.Identity()

    models.create_model("probe_net", weights=None, weights_backbone=None, in_chans=None)
    assert seen == {"weights": None, "weights_backbone": None, "in_chans": 3}


def test_num_classes_and_pooled_features():
    engine.manual_seed(0)
    model = models.create_model("resnet18", num_classes=10).eval()
    assert model.num_classes == 10 and model.get_classifier() is model.fc
    assert tuple(model.fc.weight.shape) == (10, 512)
    x = engine.randn(2, 3, 64, 64)
    with engine.no_grad():
        logits = model(x)
        pooled = model.forward_head(model.forward_features(x), pre_logits=True)
        assert tuple(model.forward_features(x).shape) == (2, 512, 2, 2)
        headless = models.create_model("resnet18", num_classes=0).eval()
        headless.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("fc.")})
        features = headless(x)
    assert tuple(logits.shape) == (2, 10) and tuple(features.shape) == (2, 512)
    assert isinstance(headless.fc, engine.nn.Identity) and "fc.weight" not in headless.state_dict()
    assert_close(features.numpy(), pooled.numpy(), 1e-6)
    assert_close(logits.numpy(), (pooled @ model.fc.weight.t() + model.fc.bias).detach().numpy(), 1e-5)


def test_reset_classifier():
    model = models.resnet50().eval()
    model.reset_classifier(7)
    assert model.num_classes == 7 and tuple(model.get_classifier().weight.shape) == (7, 2048)
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity)
    with engine.no_grad():
        assert tuple(model(engine.randn(1, 3, 32, 32)).shape) == (1, 2048)


def _three_channel_checkpoint(tmp_path, ext=".safetensors"):
    """A resnet18 state dict (3 input channels) saved to a file; returns (path, numpy dict)."""
    engine.manual_seed(1)
    state = {k: v.numpy() for k, v in models.resnet18().state_dict().items()}
    path = str(tmp_path / f"resnet18{ext}")
    if ext == ".safetensors":
        save_file(state, path)
    else:
        np.savez(path, **state)
    return path, state


@pytest.mark.parametrize("in_chans", [1, 5])
def test_in_chans_adapts_checkpoint(tmp_path, in_chans):
    path, state = _three_channel_checkpoint(tmp_path)
    model = models.create_model("resnet18", in_chans=in_chans, checkpoint_path=path)
    w = state["conv1.weight"]
    expected = w.sum(1, keepdims=True) if in_chans == 1 else np.concatenate([w, w], 1)[:, :5] * (3 / 5)
    assert tuple(model.conv1.weight.shape) == (64, in_chans, 7, 7)
    np.testing.assert_allclose(model.conv1.weight.detach().numpy(), expected, rtol=1e-6)
    np.testing.assert_array_equal(model.layer3[1].conv2.weight.detach().numpy(), state["layer3.1.conv2.weight"])
    with engine.no_grad():
        assert tuple(model.eval()(engine.randn(2, in_chans, 40, 40)).shape) == (2, 1000)


def test_adapt_input_conv_keeps_grey_response():
    """A grey image gives the same stem output after adaptation to 6 channels (the rescale's purpose)."""
    conv = models.resnet18().conv1
    w6 = models.adapt_input_conv(6, conv.weight)
    assert isinstance(w6, engine.Tensor) and tuple(w6.shape) == (64, 6, 7, 7)
    np.testing.assert_allclose(w6.numpy().sum(1), conv.weight.detach().numpy().sum(1), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError, match="only 3-channel weights convert"):
        models.adapt_input_conv(2, np.zeros((4, 5, 3, 3), np.float32))
    np.testing.assert_allclose(models.adapt_input_conv(1, np.ones((2, 6, 1, 1))), np.full((2, 2, 1, 1), 3.0))


@pytest.mark.slow  # over a second: outside the quick subset
def test_checkpoint_formats(tmp_path):
    path, state = _three_channel_checkpoint(tmp_path, ".npz")
    model = models.create_model("resnet18", checkpoint_path=path)
    np.testing.assert_array_equal(model.fc.weight.detach().numpy(), state["fc.weight"])
    wrapped = str(tmp_path / "wrapped.npy")
    np.save(wrapped, {"state_dict": {f"module.{k}": v for k, v in state.items()}, "epoch": 3})
    loaded = models.load_state_dict(wrapped)
    assert list(loaded) == list(state)
    model = models.ModelCreator.create_model("resnet18", checkpoint=wrapped)
    np.testing.assert_array_equal(model.bn1.running_var.numpy(), state["bn1.running_var"])


def test_checkpoint_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint found at"):
        models.create_model("resnet18", checkpoint_path=str(tmp_path / "missing.npz"))
    bad = tmp_path / "weights.pt"
    bad.write_bytes(b"x")
    with pytest.raises(UnpicklingError, match=r"weights.pt' is not a checkpoint"):
        models.load_state_dict(str(bad))
    evil = str(tmp_path / "evil.npy")
    np.save(evil, np.array([pickle.PicklingError("boom")], dtype=object), allow_pickle=True)
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        models.load_state_dict(evil)
    partial = str(tmp_path / "partial.npz")
    np.savez(partial, **{"conv1.weight": np.zeros((64, 3, 7, 7), np.float32)})
    with pytest.raises(RuntimeError, match="Missing key"):
        models.create_model("resnet18", checkpoint_path=partial)


@pytest.mark.parametrize("zip_format", [True, False])
def test_checkpoint_path_reads_pytorch_checkpoints(tmp_path, zip_format):
    import torch
    import torchvision
    torch.manual_seed(0)
    ref = torchvision.models.resnet18(num_classes=7).eval()
    path = str(tmp_path / "resnet18.pth")
    torch.save({"model": {"module." + k: v for k, v in ref.state_dict().items()}}, path,
               _use_new_zipfile_serialization=zip_format)
    ours = models.create_model("resnet18", num_classes=7, checkpoint_path=path).eval()
    x = np.random.default_rng(0).standard_normal((1, 3, 40, 40), dtype=np.float32)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x)).numpy()
    with engine.no_grad():
        got = ours(engine.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_model_creator(monkeypatch):
    _pretend_pretrained(monkeypatch, {"resnet50"})
    assert ModelCreator.model_list("resnet*", exclude_filters=TIMM_RESNETS + OTHERS) == RESNETS
    assert ModelCreator.model_list("*", pretrained=True) == ["resnet50"]
    table = ModelCreator.model_table("resnet*", pretrained=False, exclude_filters=TIMM_RESNETS + OTHERS)
    lines = table.splitlines()
    assert "Supported Models" in lines[1] and "Pretrained" in lines[1]
    assert [line.split("|")[1].strip() for line in lines[3:-1]] == RESNETS
    assert [line.split("|")[2].strip() for line in lines[3:-1]] == ["false", "false", "true", "false", "false"]
    assert len({len(line) for line in lines}) == 1
    model = ModelCreator.create_model("resnet18", num_classes=3)
    assert isinstance(model, models.ResNet) and model.num_classes == 3


def test_every_entrypoint_documents_its_weights_and_paper():
    """help(models.X) shows ``weights=`` in the signature, the family's paper and what each weights tag and
    ``pretrained=True`` give."""
    import inspect

    from flowvision.models import get_model_weights, list_models, list_pretrained, model_alias_of, model_entrypoint

    for name in list_models():
        entrypoint = model_entrypoint(name)
        assert "weights" in inspect.signature(entrypoint).parameters, name
        doc = entrypoint.__doc__
        if model_alias_of(name):
            continue
        assert "\n\nFamily: " in doc and "\n\nWeights: " in doc, name
        if name in list_pretrained():
            enum = get_model_weights(name)
            assert f"``{enum.__name__}``" in doc and f"{enum.DEFAULT.name} (" in doc and "``pretrained=True``" in doc
    assert "pretrained=True`` loads IMAGENET1K_V1" in model_entrypoint("resnet50").__doc__
    assert "acc@1 80.858, the DEFAULT" in model_entrypoint("resnet50").__doc__
    assert "no legacy weights" in model_entrypoint("regnet_y_128gf").__doc__
