"""Faster R-CNN against torchvision: builders, eval parity on real photos, training losses/grads, bad input."""
import os
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torchvision.models.detection as tv_det
from model_parity import numpy_state, randomize_norms
from op_check import assert_close
from PIL import Image
from torchvision.models.detection import _utils as tv_utils

import engine
import flowvision.models.detection as det
from flowvision import ops
from flowvision.models.detection import _utils as det_utils

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
SMALL = dict(min_size=200, max_size=320)
BUILDERS = ["fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
            "fasterrcnn_mobilenet_v3_large_320_fpn"]


def _photos():
    """chelsea (451x300) and rocket (640x427) as float32 CHW arrays in [0, 1]."""
    arrays = []
    for name in ("chelsea.png", "rocket.jpg"):
        image = np.asarray(Image.open(os.path.join(DATA, name)).convert("RGB"), np.float32) / 255.0
        arrays.append(np.ascontiguousarray(image.transpose(2, 0, 1)))
    return arrays


def _pair(name, scales=(1.0, 1.0, 1.0, 1.0), **kwargs):
    """Seeded torchvision model (random norms; RPN/box head weights times ``scales``) and ours with its weights.

    MobileNet's random features are small: scaling the heads gives spread-out, untied scores.
    """
    torch.manual_seed(0)
    ref = randomize_norms(getattr(tv_det, name)(weights=None, weights_backbone=None, **kwargs), 0)
    layers = [ref.rpn.head.cls_logits, ref.rpn.head.bbox_pred, ref.roi_heads.box_predictor.cls_score,
              ref.roi_heads.box_predictor.bbox_pred]
    with torch.no_grad():
        for layer, scale in zip(layers, scales):
            layer.weight.mul_(scale)
    ours = getattr(det, name)(weights_backbone=None, **kwargs)
    ours.load_state_dict(numpy_state(ref))
    return ours.eval(), ref.eval()


def _record(model, names):
    """Forward hooks that keep the outputs of the named submodules."""
    seen = {}
    for name in names:
        model.get_submodule(name).register_forward_hook(lambda m, i, o, name=name: seen.__setitem__(name, o))
    return seen


def _flat(output):
    """A module output (tensor, tuple/list, dict) as a list of numpy arrays."""
    if isinstance(output, dict):
        return [a for v in output.values() for a in _flat(v)]
    if isinstance(output, (list, tuple)):
        return [a for v in output for a in _flat(v)]
    return [output.detach().numpy()]


def _compare_detections(out, ref, ordered=True, top=10):
    """The best ``top`` detections equal: in order, or as sets where shifted copies of a box tie."""
    for o, r in zip(out, ref):
        assert list(o) == ["boxes", "labels", "scores"] and o["boxes"].shape[0] > 0 and r["boxes"].shape[0] > 0
        assert_close(o["scores"].numpy()[:top], r["scores"].numpy()[:top], 1e-4, "scores")
        if ordered:
            assert o["boxes"].shape[0] == r["boxes"].shape[0]
            assert_close(o["boxes"].numpy()[:top], r["boxes"].numpy()[:top], 1e-4, "boxes")
            np.testing.assert_array_equal(o["labels"].numpy()[:top], r["labels"].numpy()[:top])
        else:
            _assert_same_rows(o["boxes"].numpy()[:top], r["boxes"].numpy()[:top], what="boxes")


def _assert_same_rows(ours, ref, rtol=1e-4, what="proposals"):
    """The same set of boxes in any order (random weights tie scores of shifted copies of one box)."""
    assert ours.shape == ref.shape, f"{what}: {ours.shape} vs {ref.shape}"
    distance = np.abs(ours[:, None, :] - ref[None, :, :]).max(-1)
    assert distance.min(1).max() <= rtol * np.abs(ref).max(), what
    assert distance.min(0).max() <= rtol * np.abs(ref).max(), what


@pytest.mark.parametrize("name,scales,kwargs,ordered", [
    ("fasterrcnn_resnet50_fpn", (1.0, 1.0, 1.0, 1.0), dict(rpn_post_nms_top_n_test=300, **SMALL), True),
    ("fasterrcnn_mobilenet_v3_large_320_fpn", (200.0, 100.0, 150.0, 50.0), {}, False)])
def test_eval_parity_on_photos(name, scales, kwargs, ordered):
    ours, ref = _pair(name, scales, **kwargs)
    names = ["backbone", "rpn.head", "rpn", "roi_heads.box_predictor"]
    seen, tv_seen = _record(ours, names), _record(ref, names)
    images = _photos()
    with engine.no_grad():
        out = ours([engine.from_numpy(x) for x in images])
    with torch.no_grad():
        tv_out = ref([torch.from_numpy(x) for x in images])
    for key in names[:2]:
        for a, b in zip(_flat(seen[key]), _flat(tv_seen[key])):
            assert_close(a, b, 1e-4, key)
    if ordered:                         # MobileNet's random features tie scores of shifted anchor copies
        for a, b in zip(_flat(seen["rpn"]), _flat(tv_seen["rpn"])):
            assert_close(a, b, 1e-4, "proposals")
        for a, b in zip(_flat(seen["roi_heads.box_predictor"]), _flat(tv_seen["roi_heads.box_predictor"])):
            assert_close(a, b, 1e-4, "box_predictor")
    _compare_detections(out, tv_out, ordered)
    for o, x in zip(out, images):
        boxes = o["boxes"].numpy()
        assert (boxes[:, 2:] <= np.array(x.shape[:0:-1])).all() and (boxes >= 0).all()


@pytest.mark.heavy
def test_eval_parity_v2():
    ours, ref = _pair("fasterrcnn_resnet50_fpn_v2", rpn_post_nms_top_n_test=100, **SMALL)
    seen, tv_seen = _record(ours, ["rpn", "roi_heads.box_predictor"]), _record(ref, ["rpn", "roi_heads.box_predictor"])
    images = _photos()
    with engine.no_grad():
        out = ours([engine.from_numpy(x) for x in images])
    with torch.no_grad():
        tv_out = ref([torch.from_numpy(x) for x in images])
    for key in seen:
        for a, b in zip(_flat(seen[key]), _flat(tv_seen[key])):
            assert_close(a, b, 1e-4, key)
    _compare_detections(out, tv_out)


def _pinned_choice(labels, batch_size_per_image, positive_fraction):
    """A deterministic stand-in for the random sampler: a fixed permutation of each label set."""
    positive = np.flatnonzero(labels >= 1)
    negative = np.flatnonzero(labels == 0)
    num_pos = min(positive.size, int(batch_size_per_image * positive_fraction))
    num_neg = min(negative.size, batch_size_per_image - num_pos)
    pos = np.zeros(labels.shape, np.uint8)
    neg = np.zeros(labels.shape, np.uint8)
    pos[np.random.default_rng(positive.size).permutation(positive)[:num_pos]] = 1
    neg[np.random.default_rng(negative.size).permutation(negative)[:num_neg]] = 1
    return pos, neg


@pytest.fixture
def pinned_sampler(monkeypatch):
    """Both libraries' BalancedPositiveNegativeSampler draw the same deterministic samples."""
    def sample(lib, wrap):
        def call(self, matched_idxs):
            pairs = [_pinned_choice(m.numpy(), self.batch_size_per_image, self.positive_fraction) for m in matched_idxs]
            return [wrap(p) for p, _ in pairs], [wrap(n) for _, n in pairs]
        monkeypatch.setattr(lib.BalancedPositiveNegativeSampler, "__call__", call)
    sample(det_utils, engine.from_numpy)
    sample(tv_utils, torch.from_numpy)


def _targets(lib, empty_second=False):
    """A cat box in chelsea and two boxes in rocket (or none there)."""
    first = {"boxes": np.array([[60, 20, 330, 290]], np.float32), "labels": np.array([17], np.int64)}
    second = {"boxes": np.array([[250, 30, 400, 420], [20, 300, 200, 420]], np.float32),
              "labels": np.array([5, 3], np.int64)}
    if empty_second:
        second = {"boxes": np.zeros((0, 4), np.float32), "labels": np.zeros((0,), np.int64)}
    return [{k: lib.from_numpy(v) for k, v in t.items()} for t in (first, second)]


TRAIN_KW = dict(rpn_pre_nms_top_n_train=400, rpn_post_nms_top_n_train=200, box_batch_size_per_image=64, min_size=160,
                max_size=240)


@pytest.mark.parametrize("empty_second", [False, pytest.param(True, marks=pytest.mark.heavy)])
def test_training_losses_and_grads(pinned_sampler, empty_second):
    ours, ref = _pair("fasterrcnn_resnet50_fpn", **TRAIN_KW)
    ours.train(), ref.train()
    images = _photos()
    losses = ours([engine.from_numpy(x) for x in images], _targets(engine, empty_second))
    tv_losses = ref([torch.from_numpy(x) for x in images], _targets(torch, empty_second))
    assert list(losses) == list(tv_losses) == ["loss_classifier", "loss_box_reg", "loss_objectness",
                                               "loss_rpn_box_reg"]
    for key in losses:                  # torch's own fp32 and fp64 losses differ by up to 7e-4 here
        assert_close(losses[key].detach().numpy(), tv_losses[key].detach().numpy(), 1e-3, key)
    sum(losses.values()).backward()
    sum(tv_losses.values()).backward()
    # Grads are as sensitive as torch's own: torch fp32 vs fp64 differ by up to ~8e-2 in deep layers.
    for name, rtol in [("roi_heads.box_predictor.cls_score.weight", 1e-2), ("rpn.head.cls_logits.weight", 1e-3),
                       ("rpn.head.conv.0.0.weight", 1e-2), ("roi_heads.box_head.fc6.bias", 5e-2),
                       ("backbone.fpn.layer_blocks.0.0.weight", 1e-1), ("backbone.body.layer4.2.conv3.weight", 2e-1)]:
        grad = ours.get_parameter(name).grad
        assert grad is not None and np.isfinite(grad.numpy()).all()
        assert_close(grad.numpy(), ref.get_parameter(name).grad.numpy(), rtol, f"grad of {name}")


@pytest.mark.heavy
def test_sgd_steps_lower_the_loss(pinned_sampler):
    engine.manual_seed(0)
    model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=4, min_size=128,
                                                      max_size=192, rpn_pre_nms_top_n_train=300,
                                                      rpn_post_nms_top_n_train=150, box_batch_size_per_image=64).train()
    images = [engine.from_numpy(x) for x in _photos()]
    targets = _targets(engine)
    for t in targets:
        t["labels"] = t["labels"].clamp(max=3)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = engine.optim.SGD(params, lr=0.01, momentum=0.9)
    history = []
    for _ in range(3):
        loss = sum(model(images, targets).values())
        optimizer.zero_grad()
        loss.backward()
        assert all(p.grad is not None for p in model.roi_heads.parameters())
        optimizer.step()
        history.append(loss.item())
    assert history[-1] < history[0], history


def test_bad_targets():
    model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=4, min_size=64,
                                                      max_size=96).train()
    images = [engine.rand(3, 60, 80), engine.rand(3, 70, 50)]
    good = {"boxes": engine.tensor([[1.0, 2.0, 30.0, 40.0]]), "labels": engine.tensor([1])}
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    with pytest.raises(AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\]"):
        model(images, [good, {"boxes": engine.tensor([1.0, 2.0, 3.0, 4.0]), "labels": engine.tensor([1])}])
    with pytest.raises(AssertionError, match="Expected target boxes to be of type Tensor"):
        model(images, [good, {"boxes": [[1.0, 2.0, 3.0, 4.0]], "labels": engine.tensor([1])}])
    degenerate = {"boxes": engine.tensor([[1.0, 2.0, 30.0, 40.0], [5.0, 9.0, 5.0, 20.0]]),
                  "labels": engine.tensor([1, 2])}
    with pytest.raises(AssertionError, match=r"All bounding boxes should have positive height and width\. "
                                             r"Found invalid box \[.*\] for target at index 1\."):
        model(images, [good, degenerate])
    model.eval()
    with pytest.raises(AssertionError, match="expecting the last two dimensions"):
        model([engine.rand(5)])


def test_builders_match_torchvision_layout():
    for name in BUILDERS:
        torch.manual_seed(0)
        ref = getattr(tv_det, name)(weights=None, weights_backbone=None, num_classes=7)
        ours = getattr(det, name)(weights_backbone=None, num_classes=7)
        shapes = OrderedDict((k, tuple(v.shape)) for k, v in ours.state_dict().items())
        assert shapes == OrderedDict((k, tuple(v.shape)) for k, v in ref.state_dict().items()), name
        for attr in ("_pre_nms_top_n", "_post_nms_top_n", "nms_thresh", "score_thresh"):
            assert getattr(ours.rpn, attr) == getattr(ref.rpn, attr), (name, attr)
        for attr in ("score_thresh", "nms_thresh", "detections_per_img"):
            assert getattr(ours.roi_heads, attr) == getattr(ref.roi_heads, attr), (name, attr)
        assert (ours.transform.min_size, ours.transform.max_size) == (ref.transform.min_size, ref.transform.max_size)
        assert ours.default_cfg["classifier"] == ("roi_heads.box_predictor",)
    assert ours.rpn._pre_nms_top_n["testing"] == 150 and ours.transform.min_size == (320,)


def test_constructor_errors_and_old_rpn_keys():
    backbone = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=2).backbone
    predictor = det.FastRCNNPredictor(1024, 3)
    with pytest.raises(ValueError, match="num_classes should be None when box_predictor is specified"):
        det.FasterRCNN(backbone, num_classes=3, box_predictor=predictor)
    with pytest.raises(ValueError, match="num_classes should not be None"):
        det.FasterRCNN(backbone)
    with pytest.raises(ValueError, match="should contain an attribute out_channels"):
        det.FasterRCNN(engine.nn.ReLU(), num_classes=3)
    with pytest.raises(TypeError, match="box_roi_pool should be of type MultiScaleRoIAlign"):
        det.FasterRCNN(backbone, num_classes=3, box_roi_pool=ops.RoIAlign(7, 1.0, 2))
    with pytest.raises(AssertionError, match="expecting the last two dimensions to be"):
        predictor(engine.zeros(2, 1024, 2, 2))
    ours, ref = _pair("fasterrcnn_mobilenet_v3_large_320_fpn")
    old = {k.replace("rpn.head.conv.0.0.", "rpn.head.conv."): v for k, v in numpy_state(ref).items()}
    assert "rpn.head.conv.weight" in old
    fresh = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None)
    fresh.load_state_dict(old)
    np.testing.assert_array_equal(fresh.rpn.head.conv[0][0].weight.detach().numpy(),
                                  ref.rpn.head.conv[0][0].weight.detach().numpy())
