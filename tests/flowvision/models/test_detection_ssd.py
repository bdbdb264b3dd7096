"""SSD and ssd300_vgg16 against torchvision: heads, the VGG extractor, loss (hard negative mining),
postprocessing, training on a tiny SSD, and the full model on real photos."""
import types
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torchvision
from torchvision.models.detection import ssd as tv_ssd
from torchvision.models.detection.anchor_utils import DefaultBoxGenerator as TvDefaultBoxGenerator

import engine
from flowvision.models import vgg as our_vgg
from flowvision.models.detection import ssd as our_ssd
from flowvision.models.detection.anchor_utils import DefaultBoxGenerator
from detection_parity import (assert_detections_match, assert_losses_match, assert_outputs_close, builder_pair,
                              photos, record, run_both, sgd_history, to_lib)
from model_parity import numpy_state
from op_check import assert_close

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

TINY_SIZE = (64, 64)
TINY_RATIOS = [[2], [2, 3], [2]]


def tiny_backbone(nn, with_out_channels=True):
    """Three strided conv stages in library ``nn`` (engine.nn or torch.nn), returning an OrderedDict of maps."""

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
            self.blocks = nn.ModuleList([nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU()),
                                         nn.Sequential(nn.Conv2d(16, 12, 3, stride=2, padding=1), nn.ReLU())])
            if with_out_channels:
                self.out_channels = [8, 16, 12]

        def forward(self, x):
            x = self.stem(x)
            out = OrderedDict([("0", x)])
            for i, block in enumerate(self.blocks):
                x = block(x)
                out[str(i + 1)] = x
            return out

    return Tiny()


def tiny_pair(num_classes=5, seed=0, **kwargs):
    """A tiny SSD in each library with the same (seeded, torchvision-initialised) weights."""
    torch.manual_seed(seed)
    ref = tv_ssd.SSD(tiny_backbone(torch.nn), TvDefaultBoxGenerator(TINY_RATIOS), TINY_SIZE, num_classes, **kwargs)
    ours = our_ssd.SSD(tiny_backbone(engine.nn), DefaultBoxGenerator(TINY_RATIOS), TINY_SIZE, num_classes, **kwargs)
    ours.load_state_dict(numpy_state(ref))
    return ours, ref


def tiny_data(seed=0):
    """Two images of different sizes and targets (the second image has no boxes in ``empty`` variants)."""
    rng = np.random.default_rng(seed)
    images = [rng.random((3, 60, 80), dtype=np.float32), rng.random((3, 70, 50), dtype=np.float32)]
    targets = [{"boxes": np.array([[5, 6, 40, 50], [30, 10, 75, 35]], np.float32), "labels": np.array([1, 3])},
               {"boxes": np.array([[10, 12, 45, 60]], np.float32), "labels": np.array([4])}]
    return images, targets


def test_ssd_head_matches_torchvision():
    torch.manual_seed(0)
    in_channels, anchors = [6, 10, 4], [4, 6, 4]
    ref = tv_ssd.SSDHead(in_channels, anchors, 7)
    ours = our_ssd.SSDHead(in_channels, anchors, 7)
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(numpy_state(ref))
    rng = np.random.default_rng(0)
    grids = [(5, 7), (3, 4), (1, 1)]
    feats = [rng.standard_normal((2, c, h, w)).astype(np.float32) for c, (h, w) in zip(in_channels, grids)]
    with torch.no_grad():
        exp = ref([torch.from_numpy(f) for f in feats])
    out = ours([engine.from_numpy(f) for f in feats])
    assert list(out) == list(exp)
    for k in exp:
        assert tuple(out[k].shape) == tuple(exp[k].shape)
        assert_close(out[k].detach().numpy(), exp[k].numpy(), rtol=1e-5, what=k)
    assert ours.classification_head._get_result_from_module_list(engine.from_numpy(feats[2]), -1).shape == (2, 28, 1, 1)


@pytest.mark.parametrize("trainable_layers", [0, 2, 5])
def test_vgg_extractor_freezes_like_torchvision(trainable_layers):
    ref = tv_ssd._vgg_extractor(types.SimpleNamespace(features=torchvision.models.vgg.make_layers(
        torchvision.models.vgg.cfgs["D"])), False, trainable_layers)
    ours = our_ssd._vgg_extractor(types.SimpleNamespace(features=our_vgg.make_layers(our_vgg.cfgs["D"])),
                                  False, trainable_layers)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == \
        [n for n, p in ref.named_parameters() if p.requires_grad]
    assert ours.features[16].ceil_mode and not ours.extra[0][0].ceil_mode


def test_vgg_extractor_highres_and_bad_trainable_layers():
    features = our_vgg.make_layers(our_vgg.cfgs["D"])
    extractor = our_ssd.SSDFeatureExtractorVGG(features, highres=True)
    assert len(extractor.extra) == 6
    assert tuple(extractor.extra[5][2].weight.shape) == (256, 128, 4, 4)
    with pytest.raises(AssertionError, match=r"trainable_layers should be in the range \[0, 5\]. Instead got 6"):
        our_ssd._vgg_extractor(types.SimpleNamespace(features=our_vgg.make_layers(our_vgg.cfgs["D"])), False, 6)


def random_head_outputs(num_anchors, num_classes, seed, scale=4.0):
    """Random (2, A, 4) regressions and peaky (2, A, C) logits, as numpy."""
    rng = np.random.default_rng(seed)
    return {"bbox_regression": (rng.standard_normal((2, num_anchors, 4)) * 0.5).astype(np.float32),
            "cls_logits": (rng.standard_normal((2, num_anchors, num_classes)) * scale).astype(np.float32)}


def random_anchors(num_anchors, seed, size=64.0):
    """Random valid (A, 4) boxes inside a size x size image."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, size * 0.7, (num_anchors, 2))
    wh = rng.uniform(2, size * 0.3, (num_anchors, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


@pytest.mark.parametrize("positive_fraction", [0.25, 0.01])
def test_compute_loss_hard_negative_mining(positive_fraction):
    ours, ref = tiny_pair(num_classes=6, positive_fraction=positive_fraction)
    num_anchors = 300
    heads = random_head_outputs(num_anchors, 6, seed=1)
    anchors = [random_anchors(num_anchors, 2), random_anchors(num_anchors, 3)]
    targets = [{"boxes": random_anchors(4, 4), "labels": np.array([1, 5, 2, 3])},
               {"boxes": random_anchors(2, 5), "labels": np.array([4, 4])}]
    rng = np.random.default_rng(6)
    # positives_fraction 0.01 asks for more negatives than exist: torchvision then also counts positives again
    matched = [np.where(rng.random(num_anchors) < 0.1, rng.integers(0, 4, num_anchors), -1),
               np.full(num_anchors, -1)]
    matched[1][[3, 17]] = [0, 1]
    o_heads = {k: engine.from_numpy(v).requires_grad_() for k, v in heads.items()}
    r_heads = {k: torch.from_numpy(v).requires_grad_() for k, v in heads.items()}
    out = ours.compute_loss(to_lib(engine, targets), o_heads, to_lib(engine, anchors), to_lib(engine, matched))
    exp = ref.compute_loss(to_lib(torch, targets), r_heads, to_lib(torch, anchors), to_lib(torch, matched))
    assert_losses_match(out, exp, rtol=1e-5)
    sum(out.values()).backward()
    sum(exp.values()).backward()
    for k in heads:
        assert_close(o_heads[k].grad.numpy(), r_heads[k].grad.numpy(), rtol=1e-5, what=k + " grad")


@pytest.mark.parametrize("topk_candidates,score_thresh", [(400, 0.01), (3, 0.2)])
def test_postprocess_detections_matches_torchvision(topk_candidates, score_thresh):
    ours, ref = tiny_pair(num_classes=6, topk_candidates=topk_candidates, score_thresh=score_thresh,
                          detections_per_img=25)
    num_anchors = 200
    heads = random_head_outputs(num_anchors, 6, seed=7)
    anchors = [random_anchors(num_anchors, 8), random_anchors(num_anchors, 9)]
    shapes = [(64, 64), (50, 60)]
    out = ours.postprocess_detections(to_lib(engine, heads), to_lib(engine, anchors), shapes)
    exp = ref.postprocess_detections(to_lib(torch, heads), to_lib(torch, anchors), shapes)
    assert_detections_match(out, exp, rtol=1e-5)


def test_tiny_ssd_eval_and_train_match_torchvision():
    ours, ref = tiny_pair(score_thresh=0.5)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if name.startswith("head.classification_head"):
                p.mul_(3.0)  # peaky scores: a few confident detections instead of near-ties
    ours.load_state_dict(numpy_state(ref))
    images, targets = tiny_data()
    ours.eval(), ref.eval()
    out, exp = run_both(ours, ref, images)
    assert_detections_match(out, exp, top=30)
    ours.train(), ref.train()
    out, exp = run_both(ours, ref, images, targets)
    assert_losses_match(out, exp)
    sum(exp.values()).backward()
    sum(out.values()).backward()
    ref_params = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, name
        assert_close(p.grad.numpy(), ref_params[name].grad.numpy(), rtol=1e-4, what=name + " grad")


def test_tiny_ssd_empty_targets_and_tensor_backbone():
    ours, ref = tiny_pair()
    ours.train(), ref.train()
    images, targets = tiny_data()
    targets[1] = {"boxes": np.zeros((0, 4), np.float32), "labels": np.zeros((0,), np.int64)}
    assert_losses_match(*run_both(ours, ref, images, targets))
    targets[0] = targets[1]
    losses = ours(to_lib(engine, images), to_lib(engine, targets))
    assert float(losses["bbox_regression"]) == 0.0 and float(losses["classification"]) == 0.0

    class Single(engine.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = engine.nn.Conv2d(3, 6, 3, stride=4, padding=1)

        def forward(self, x):
            return self.conv(x)

    model = our_ssd.SSD(Single(), DefaultBoxGenerator([[2]]), (32, 32), 3).eval()
    assert len(model.head.classification_head.module_list) == 1
    with engine.no_grad():
        assert len(model(to_lib(engine, images))) == 2


def test_tiny_ssd_sgd_steps_lower_the_loss():
    engine.manual_seed(0)
    model = our_ssd.SSD(tiny_backbone(engine.nn), DefaultBoxGenerator(TINY_RATIOS), TINY_SIZE, 5).train()
    images, targets = to_lib(engine, tiny_data())
    losses = sgd_history(model, images, targets, 5, lr=1e-2)
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.95 * losses[0], losses


def test_bad_input():
    ours, _ = tiny_pair()
    images, targets = tiny_data()
    ours.train()
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        ours(to_lib(engine, images))
    bad = [dict(t) for t in targets]
    bad[1]["boxes"] = np.array([[10, 12, 10, 60]], np.float32)
    with pytest.raises(AssertionError, match=r"All bounding boxes should have positive height and width. "
                                             r"Found invalid box \[.*\] for target at index 1."):
        ours(to_lib(engine, images), to_lib(engine, bad))
    bad[1]["boxes"] = np.array([10, 12, 45, 60], np.float32)
    with pytest.raises(AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\], got"):
        ours(to_lib(engine, images), to_lib(engine, bad))
    with pytest.raises(AssertionError, match="Expected target boxes to be of type Tensor, got <class 'list'>"):
        ours(to_lib(engine, images), [{"boxes": [[1, 2, 3, 4]], "labels": engine.tensor([1])}] * 2)
    with pytest.raises(ValueError, match=r"output channels from the backbone \(3\) do not match the length of the "
                                         r"anchor generator aspect ratios \(2\)"):
        our_ssd.SSD(tiny_backbone(engine.nn), DefaultBoxGenerator([[2], [2]]), TINY_SIZE, 5)


def test_retrieve_out_channels_probes_the_backbone():
    backbone = tiny_backbone(engine.nn, with_out_channels=False).train()
    assert our_ssd.retrieve_out_channels(backbone, (40, 30)) == [8, 16, 12]
    assert backbone.training


@pytest.fixture(scope="module")
def ssd300_pair():
    """ssd300_vgg16 in both libraries with the same random weights (confident enough: a few scores near 0.99)."""
    ours, ref = builder_pair("ssd300_vgg16", score_thresh=0.5)
    assert list(ours.state_dict()) == list(ref.state_dict())
    return ours, ref


@pytest.mark.heavy
def test_ssd300_vgg16_matches_torchvision_on_photos(ssd300_pair):
    ours, ref = ssd300_pair
    seen_ours, seen_ref = record(ours, ["backbone", "head"]), record(ref, ["backbone", "head"])
    out, exp = run_both(ours, ref, photos())
    for key in seen_ref["backbone"]:
        assert_close(seen_ours["backbone"][key].numpy(), seen_ref["backbone"][key].numpy(), rtol=1e-4,
                     what="feature " + key)
    assert_outputs_close(seen_ours["head"], seen_ref["head"], 1e-4, "head")
    assert_detections_match(out, exp, top=10)


@pytest.mark.heavy
def test_ssd300_vgg16_train_losses_match_torchvision(ssd300_pair):
    ours, ref = ssd300_pair
    photo = photos()[1:]
    targets = [{"boxes": np.array([[250, 30, 400, 420], [20, 300, 200, 420]], np.float32), "labels": np.array([5, 1])}]
    ours.train(), ref.train()
    try:
        out, exp = run_both(ours, ref, photo, targets)
    finally:
        ours.eval(), ref.eval()
    assert_losses_match(out, exp)


def test_ssd300_builder_arguments(monkeypatch):
    calls = {}

    def fake_vgg16(weights=None, progress=True):
        calls["weights"] = weights
        return types.SimpleNamespace(features=our_vgg.make_layers(our_vgg.cfgs["D"]))

    monkeypatch.setattr(our_ssd, "vgg16", fake_vgg16)
    with pytest.warns(UserWarning, match="The size of the model is already fixed; ignoring the parameter."):
        model = our_ssd.ssd300_vgg16(weights=None, weights_backbone=None, num_classes=7, size=(512, 512))
    assert calls["weights"] is None
    assert model.transform.fixed_size == (300, 300)
    assert model.head.classification_head.num_columns == 7
    assert model.transform.image_mean == [0.48235, 0.45882, 0.40784]
    assert all(p.requires_grad for p in model.parameters())
    model = our_ssd.ssd300_vgg16(pretrained_backbone=True)
    assert calls["weights"].name == "IMAGENET1K_FEATURES"
    trainable = {n.split(".")[1] for n, p in model.backbone.named_parameters() if p.requires_grad and
                 n.startswith("features.")}
    assert trainable == {"5", "7", "10", "12", "14", "17", "19", "21"}  # 4 trainable stages: conv2_1 onwards
