"""Segmentation models vs torchvision: structure, eval/train numerics, loss, weights, preprocessing, nn.Graph."""
import hashlib
import json

import numpy as np
import pytest
import torch
import torchvision
import torchvision.models.segmentation as seg_torch
from PIL import Image

import engine
import flowvision.models as models_flow
import flowvision.models.segmentation as seg_flow
from engine.nn import functional as F
from flowvision import hub
from flowvision.models import weights as W
from flowvision.models._utils import IntermediateLayerGetter
from http_server import FileServer
from model_parity import InferenceGraph, image_batch, numpy_state, randomize_norms, skip_random_init
from op_check import assert_close, check_op

# whole-model runs: outside the quick subset (-m "not slow"); torch's references on one thread
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

NAMES = ["fcn_resnet50", "fcn_resnet101", "deeplabv3_resnet50", "deeplabv3_resnet101",
         "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"]
TOL = 1e-4


def _pair(name, seed=0, **kwargs):
    """A seeded torchvision model (random backbone, randomised norms) and ours with its weights, both in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(getattr(seg_torch, name)(weights_backbone=None, **kwargs), seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)  # every weight of ours comes from the reference: drawing them first would be wasted
        ours = getattr(seg_flow, name)(weights_backbone=None, **kwargs)
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in reference.modules()]
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _check_eval(reference, ours, x, what):
    """Both outputs (``out``, and ``aux`` when present) at the input size within TOL."""
    with torch.no_grad():
        ref = reference(torch.from_numpy(x))
    with engine.no_grad():
        out = ours(engine.from_numpy(x))
    assert list(out) == list(ref)
    for key in ref:
        assert tuple(out[key].shape) == tuple(ref[key].shape) == (x.shape[0], 21) + x.shape[2:]
        assert_close(out[key].numpy(), ref[key].numpy(), TOL, what=f"{what} {key}")


def test_registered_with_aliases():
    assert models_flow.list_models(module="fcn") == ["fcn_resnet50", "fcn_resnet50_coco", "fcn_resnet101",
                                                      "fcn_resnet101_coco"]
    assert models_flow.list_models("lraspp*") == ["lraspp_mobilenet_v3_large", "lraspp_mobilenet_v3_large_coco"]
    assert set(NAMES) <= set(models_flow.list_models(pretrained=True))
    alias = models_flow.create_model("deeplabv3_mobilenet_v3_large_coco", pretrained_backbone=False, aux_loss=True)
    assert isinstance(alias, seg_flow.DeepLabV3) and alias.aux_classifier is not None


# ResNet-50's stride-8 map is 38x39 at 297x305 (41x53 at 321x417): ASPP's rate-36 taps still reach inside it
# (12.8 s of CPU time to 9.2 s); FCN has no ASPP, and its rate-4 taps reach inside a 13x17 map at 97x129 (12.3 s
# to 2.7 s)
@pytest.mark.parametrize("name, aux, size", [("fcn_resnet50", True, (97, 129)),
                                             ("deeplabv3_resnet50", True, (297, 305)),
                                             ("deeplabv3_mobilenet_v3_large", True, (321, 417)),
                                             ("lraspp_mobilenet_v3_large", None, (321, 417))])
def test_eval_parity(name, aux, size):
    kwargs = {} if aux is None else {"aux_loss": aux}
    reference, ours = _pair(name, seed=1, **kwargs)
    _check_eval(reference, ours, image_batch(2, *size, seed=2), f"{name} 2x{size[0]}x{size[1]}")


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["fcn_resnet101", "deeplabv3_resnet101"])
def test_eval_parity_resnet101(name):
    reference, ours = _pair(name, seed=3, aux_loss=True)
    _check_eval(reference, ours, image_batch(2, 97, 129, seed=4), f"{name} 2x97x129")


def test_structure():
    _, ours = _pair("deeplabv3_resnet50", aux_loss=False)
    assert ours.aux_classifier is None and list(ours.backbone) == ["conv1", "bn1", "relu", "maxpool", "layer1",
                                                                   "layer2", "layer3", "layer4"]
    conv = ours.backbone.layer4[2].conv2
    assert (conv.dilation, conv.padding) == ((4, 4), (4, 4))
    rates = [m[0].dilation for m in ours.classifier[0].convs[1:4]]
    assert rates == [(12, 12), (24, 24), (36, 36)]
    lraspp = seg_flow.lraspp_mobilenet_v3_large(weights_backbone=None, num_classes=5)
    assert lraspp.backbone.return_layers == {"4": "low", "16": "high"}
    assert (lraspp.classifier.low_classifier.in_channels, lraspp.classifier.cbr[0].in_channels) == (40, 960)
    assert tuple(lraspp.classifier.high_classifier.weight.shape) == (5, 128, 1, 1)


def _train_step(module, x, target, aux_weight):
    """The reference training recipe's loss: CE(out) + aux_weight * CE(aux), ignoring label 255; then backward."""
    ce = torch.nn.functional.cross_entropy if isinstance(x, torch.Tensor) else F.cross_entropy
    outputs = module(x)
    loss = ce(outputs["out"], target, ignore_index=255)
    if "aux" in outputs:
        loss = loss + aux_weight * ce(outputs["aux"], target, ignore_index=255)
    loss.backward()
    return outputs, loss


# float32 batch statistics through ~60 random BatchNorms amplify rounding to ~1e-4 (float64 agrees to 1e-13),
# so the deep ResNet model is compared in float64 and the MobileNet one in float32.
@pytest.mark.parametrize("name, kwargs, dtype, tol, params", [
    ("deeplabv3_resnet50", {"aux_loss": True}, np.float64, 1e-8,
     ["backbone.conv1.weight", "backbone.layer3.2.conv2.weight", "backbone.layer4.0.downsample.1.weight",
      "classifier.0.convs.4.1.weight", "classifier.0.project.0.weight", "classifier.4.bias", "aux_classifier.0.weight"]),
    ("lraspp_mobilenet_v3_large", {}, np.float32, TOL,
     ["backbone.0.0.weight", "backbone.4.block.2.fc1.weight", "backbone.13.block.1.0.weight", "backbone.16.1.bias",
      "classifier.scale.1.weight", "classifier.low_classifier.bias", "classifier.high_classifier.weight"]),
])
def test_train_forward_backward(name, kwargs, dtype, tol, params):
    reference, ours = _pair(name, seed=5, **kwargs)
    if dtype == np.float64:
        reference.double()
        ours.double()
    reference.train()
    ours.train()
    for model in (reference, ours):  # dropout draws differ between frameworks; the rest is deterministic
        for m in model.modules():
            if type(m).__name__ == "Dropout":
                m.p = 0.0
    rng = np.random.default_rng(6)
    x = image_batch(2, 57, 73, seed=7).astype(dtype)
    target = rng.integers(0, 21, (2, 57, 73))
    target[rng.random(target.shape) < 0.2] = 255
    xt = torch.from_numpy(x).requires_grad_()
    xo = engine.from_numpy(x).requires_grad_()
    ref_out, ref_loss = _train_step(reference, xt, torch.from_numpy(target), 0.5)
    our_out, our_loss = _train_step(ours, xo, engine.from_numpy(target), 0.5)
    for key in ref_out:
        assert_close(our_out[key].detach().numpy(), ref_out[key].detach().numpy(), tol, what=f"train {key}")
    assert_close(our_loss.detach().numpy(), ref_loss.detach().numpy(), tol, what="loss")
    assert_close(xo.grad.numpy(), xt.grad.numpy(), tol, what="input grad")
    ref_params, our_params = dict(reference.named_parameters()), dict(ours.named_parameters())
    for k in params:
        assert_close(our_params[k].grad.numpy(), ref_params[k].grad.numpy(), tol, what=f"grad {k}")
    ref_buffers, our_buffers = dict(reference.named_buffers()), dict(ours.named_buffers())
    for k in ref_buffers:
        assert_close(our_buffers[k].numpy(), ref_buffers[k].numpy(), tol, what=k)


def test_cross_entropy_ignore_index():
    rng = np.random.default_rng(8)
    logits = rng.standard_normal((2, 21, 5, 7)).astype(np.float32)
    target = rng.integers(0, 21, (2, 5, 7))
    target[rng.random(target.shape) < 0.3] = 255
    for reduction in ("mean", "sum", "none"):
        check_op(lambda x, t: F.cross_entropy(x, t, ignore_index=255, reduction=reduction),
                 lambda x, t: torch.nn.functional.cross_entropy(x, t, ignore_index=255, reduction=reduction),
                 [logits, target], rtol=1e-5)
    weight = rng.random(21)
    check_op(lambda x, t: F.cross_entropy(x, t, weight=engine.from_numpy(weight), ignore_index=255),
             lambda x, t: torch.nn.functional.cross_entropy(x, t, weight=torch.from_numpy(weight), ignore_index=255),
             [logits.astype(np.float64), target], rtol=1e-9)


def test_builder_arguments():
    with pytest.raises(NotImplementedError, match="does not use auxiliary loss"):
        seg_flow.lraspp_mobilenet_v3_large(weights_backbone=None, aux_loss=True)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 21 but got 10 instead"):
        seg_flow.fcn_resnet50(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="The parameter 'aux_loss' expected value True but got False instead"):
        seg_flow.deeplabv3_resnet50(weights=seg_flow.DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1,
                                    aux_loss=False)
    with pytest.raises(ValueError, match="do not belong to fcn_resnet101"):
        seg_flow.fcn_resnet101(weights=seg_flow.FCN_ResNet50_Weights.DEFAULT)
    model = seg_flow.fcn_resnet50(pretrained_backbone=False, num_classes=4)
    assert tuple(model.classifier[4].weight.shape) == (4, 512, 1, 1) and model.aux_classifier is None
    with pytest.raises(ValueError, match=r"return_layers are not present in model: \['layer9'\]"):
        IntermediateLayerGetter(models_flow.resnet18(), {"layer9": "out"})


def test_weights_records():
    weights = seg_flow.DeepLabV3_ResNet50_Weights.DEFAULT
    assert weights is seg_flow.DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1
    assert weights.url == "https://download.pytorch.org/models/deeplabv3_resnet50_coco-cd0a2569.pth"
    assert weights.meta["_metrics"] == {"COCO-val2017-VOC-labels": {"miou": 66.4, "pixel_acc": 92.4}}
    assert weights.meta["categories"] == torchvision.models._meta._VOC_CATEGORIES
    assert models_flow.MobileNet_V3_Large_Weights.DEFAULT.meta["num_params"] == 5483032
    assert models_flow.VGG16_Weights.IMAGENET1K_FEATURES.meta["categories"] is None
    rng = np.random.default_rng(9)
    image = Image.fromarray(rng.integers(0, 256, (300, 411, 3), dtype=np.uint8))
    theirs = torchvision.models.segmentation.DeepLabV3_ResNet50_Weights.DEFAULT.transforms()(image).numpy()
    ours = weights.transforms()
    assert_close(ours(image).numpy(), theirs, 1e-5)
    assert tuple(ours([image, image]).shape) == (2, 3, 520, 712)
    assert "resize_size=[520]" in repr(ours)


def _serve(server, tmp_path, file_name, model_name, tag, state_dict):
    """Publish ``state_dict`` under the manifest's file name; return the overlay record giving its full hash."""
    path = tmp_path / file_name
    torch.save(state_dict, path)
    data = path.read_bytes()
    server.files[file_name] = data
    return {model_name: {tag: {"sha256": hashlib.sha256(data).hexdigest(), "sha256_is_prefix": False}}}


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A local server with a random mobilenet_v3_large and a random lraspp_mobilenet_v3_large checkpoint."""
    torch.manual_seed(10)
    backbone = randomize_norms(torchvision.models.mobilenet_v3_large(), 10).eval()
    torch.manual_seed(11)
    full = randomize_norms(seg_torch.lraspp_mobilenet_v3_large(weights_backbone=None), 11).eval()
    with FileServer() as server:
        overlay = _serve(server, tmp_path, "mobilenet_v3_large-8738ca79.pth", "mobilenet_v3_large", "IMAGENET1K_V1",
                         backbone.state_dict())
        overlay.update(_serve(server, tmp_path, "lraspp_mobilenet_v3_large-d234d4ea.pth", "lraspp_mobilenet_v3_large",
                              "COCO_WITH_VOC_LABELS_V1", full.state_dict()))
        (tmp_path / "overlay.json").write_text(json.dumps(overlay))
        monkeypatch.setenv(W.ENV_URL_BASE, server.base_url)
        monkeypatch.setenv(W.ENV_MANIFEST, str(tmp_path / "overlay.json"))
        monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "home"))
        hub.set_dir(None)
        yield backbone, full, server
    hub.set_dir(None)


def test_weights_backbone_loads_only_the_backbone(served):
    backbone, _, server = served
    engine.manual_seed(12)
    model = seg_flow.lraspp_mobilenet_v3_large(progress=False)  # torchvision's default: IMAGENET1K_V1 backbone
    expected = backbone.state_dict()
    ours = model.state_dict()
    for key in ours:
        if key.startswith("backbone."):
            assert np.array_equal(ours[key].numpy(), expected["features." + key[len("backbone."):]].numpy()), key
    fresh = seg_flow.lraspp_mobilenet_v3_large(weights_backbone=None).state_dict()
    assert not np.array_equal(fresh["backbone.0.0.weight"].numpy(), ours["backbone.0.0.weight"].numpy())
    assert tuple(ours["classifier.low_classifier.weight"].shape) == (21, 40, 1, 1)
    assert [path for path, _ in server.requests] == ["/mobilenet_v3_large-8738ca79.pth"]


def test_pretrained_end_to_end(served):
    _, full, server = served
    x = image_batch(1, 97, 113, seed=13)
    with torch.no_grad():
        expected = full(torch.from_numpy(x))["out"].numpy()
    for kwargs in ({"weights": "DEFAULT"}, {"pretrained": True}):
        model = models_flow.create_model("lraspp_mobilenet_v3_large", progress=False, **kwargs).eval()
        with engine.no_grad():
            assert_close(model(engine.from_numpy(x))["out"].numpy(), expected, TOL)
    assert [path for path, _ in server.requests] == ["/lraspp_mobilenet_v3_large-d234d4ea.pth"]


def test_segment_cli(served, tmp_path, capsys):
    from flowvision.cli import EXIT_UNKNOWN_MODEL, main

    output = tmp_path / "overlay.png"
    assert main(["segment", "chelsea.png", "--model", "lraspp_mobilenet_v3_large", "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    assert "class  pixels  name" in printed and f"overlay written to {output}" in printed
    with Image.open(output) as drawn, Image.open(printed.splitlines()[0]) as original:
        assert drawn.size == original.size and drawn.mode == "RGB"
    assert main(["segment", "chelsea.png", "--model", "resnet50"]) == EXIT_UNKNOWN_MODEL
    assert "resnet50 is not a pretrained segmentation model" in capsys.readouterr().err


@pytest.mark.parametrize("name, kwargs", [("deeplabv3_mobilenet_v3_large", {"aux_loss": True}),
                                          ("lraspp_mobilenet_v3_large", {})])
def test_graph_equals_eager(name, kwargs):
    """Replays on new inputs equal eager (LR-ASPP sums two convolutions: a fusion-order trap)."""
    _, ours = _pair(name, seed=14, **kwargs)

    graph = InferenceGraph(ours)
    for seed in (15, 16, 17):
        x = engine.from_numpy(image_batch(2, 97, 129, seed=seed))
        with engine.no_grad():
            eager = ours(x)
        out = graph(x)
        assert list(out) == list(eager)
        for key in eager:
            assert_close(out[key].numpy(), eager[key].numpy(), 1e-5, what=f"graph {key}")
