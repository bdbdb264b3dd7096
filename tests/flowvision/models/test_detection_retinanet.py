"""RetinaNet against torchvision: heads, losses (l1 / smooth_l1 / giou), detections, builders, key upgrade, errors."""
from collections import OrderedDict
from functools import partial

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torchvision.models.detection import anchor_utils as tv_anchor_utils
from torchvision.models.detection import image_list as tv_image_list
from torchvision.models.detection import retinanet as tv_retinanet
from torchvision.ops import boxes as box_ops

import engine
import flowvision.models as models
from flowvision.models.detection import RetinaNet, RetinaNetHead
from flowvision.models.detection.anchor_utils import AnchorGenerator
from model_parity import numpy_state, randomize_norms
from op_check import assert_close

IMAGES = ("chelsea.png", "rocket.jpg")
TARGETS = (([[150.0, 30.0, 330.0, 230.0]], [1]),
           ([[280.0, 20.0, 380.0, 400.0], [50.0, 300.0, 200.0, 420.0]], [2, 3]))
ANCHOR_SIZES = ((16, 24), (32, 48), (64, 96))


def load_images():
    """The two test photos (different sizes) as float32 CHW arrays in [0, 1]."""
    root = "tests/data/images/"
    return [np.asarray(Image.open(root + name).convert("RGB"), dtype=np.float32).transpose(2, 0, 1) / 255.0
            for name in IMAGES]


def make_targets(lib, targets=TARGETS):
    """Target dicts (float boxes, int64 labels) as torch or engine tensors."""
    return [{"boxes": lib.tensor(boxes, dtype=lib.float32).reshape(-1, 4),
             "labels": lib.tensor(labels, dtype=lib.int64)} for boxes, labels in targets]


def tiny_backbone(lib):
    """Three 32-channel levels at strides 4, 8, 16 from plain convolutions, built with torch or engine."""

    class Tiny(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = lib.nn.Conv2d(3, 32, 3, stride=4, padding=1)
            self.c2 = lib.nn.Conv2d(32, 32, 3, stride=2, padding=1)
            self.c3 = lib.nn.Conv2d(32, 32, 3, stride=2, padding=1)
            self.out_channels = 32

        def forward(self, x):
            a = lib.relu(self.c1(x))
            b = lib.relu(self.c2(a))
            c = lib.relu(self.c3(b))
            return OrderedDict([("0", a), ("1", b), ("2", c)])

    return Tiny()


def tiny_pair(seed=0, group_norm=False, loss_type="l1", head_std=None, **kwargs):
    """A tiny torchvision RetinaNet and ours with the same (seeded) weights.

    ``head_std`` redraws the head's conv weights with that std, so that scores spread above the threshold.
    """
    torch.manual_seed(seed)
    models_ = []
    for lib, anchor_gen in ((torch, tv_anchor_utils.AnchorGenerator), (engine, AnchorGenerator)):
        anchors = anchor_gen(ANCHOR_SIZES, ((0.5, 1.0, 2.0),) * 3)
        norm = partial(lib.nn.GroupNorm, 8) if group_norm else None
        head_cls = tv_retinanet.RetinaNetHead if lib is torch else RetinaNetHead
        head = head_cls(32, 6, 4, norm_layer=norm)
        head.regression_head._loss_type = loss_type
        net_cls = tv_retinanet.RetinaNet if lib is torch else RetinaNet
        models_.append(net_cls(tiny_backbone(lib), 4, min_size=96, max_size=160, anchor_generator=anchors,
                               head=head, **kwargs))
    tm, om = models_
    if head_std is not None:
        with torch.no_grad():
            for p in tm.head.parameters():
                if p.dim() == 4:
                    p.normal_(0.0, head_std)
    om.load_state_dict(numpy_state(tm))
    return tm, om


def run_both(tm, om, images, targets=None):
    """Both models on the same images (and targets): eval detections or train losses."""
    t_in = [torch.from_numpy(i) for i in images]
    o_in = [engine.from_numpy(i) for i in images]
    if targets is None:
        with torch.no_grad():
            ref = tm(t_in)
        with engine.no_grad():
            out = om(o_in)
        return out, ref
    return om(o_in, make_targets(engine, targets)), tm(t_in, make_targets(torch, targets))


def assert_detections_match(out, ref, top=20):
    """Non-empty detections: the best ``top`` per image equal in scores, boxes and labels."""
    for o, r in zip(out, ref):
        assert r["scores"].numel() > 0
        assert tuple(o["boxes"].shape) == tuple(r["boxes"].shape)
        n = min(top, r["scores"].numel())
        assert_close(o["scores"][:n].numpy(), r["scores"][:n].numpy(), 1e-4, "scores")
        assert_close(o["boxes"][:n].numpy(), r["boxes"][:n].numpy(), 1e-4, "boxes")
        np.testing.assert_array_equal(o["labels"][:n].numpy(), r["labels"][:n].numpy())


def assert_losses_match(out, ref, rtol=1e-4):
    """Same loss names, values within ``rtol``."""
    assert list(out) == list(ref)
    for k in ref:
        assert_close(out[k].detach().numpy(), ref[k].detach().numpy(), rtol, k)


@pytest.mark.parametrize("group_norm", [False, True])
def test_head_outputs_and_keys_match(group_norm):
    tm, om = tiny_pair(group_norm=group_norm)
    assert list(om.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal((2, 32, h, w)).astype(np.float32) for h, w in ((9, 13), (5, 7), (3, 4))]
    with torch.no_grad():
        ref = tm.head([torch.from_numpy(f) for f in feats])
    with engine.no_grad():
        out = om.head([engine.from_numpy(f) for f in feats])
    for k in ("cls_logits", "bbox_regression"):
        assert tuple(out[k].shape) == tuple(ref[k].shape)
        assert_close(out[k].numpy(), ref[k].numpy(), 1e-4, k)


def test_default_init_matches_torchvision_statistics():
    head = RetinaNetHead(64, 9, 5)
    bias = head.classification_head.cls_logits.bias.detach().numpy()
    np.testing.assert_allclose(bias, -np.log(0.99 / 0.01), rtol=1e-6)
    assert abs(head.regression_head.bbox_reg.weight.detach().numpy().std() - 0.01) < 1e-3
    assert not head.regression_head.conv[0][0].bias.detach().numpy().any()


def test_eval_detections_match():
    tm, om = tiny_pair(head_std=0.11)
    out, ref = run_both(tm.eval(), om.eval(), load_images())
    assert_detections_match(out, ref)


def test_train_losses_and_grads_match():
    tm, om = tiny_pair(seed=1, head_std=0.11)
    out, ref = run_both(tm.train(), om.train(), load_images(), TARGETS)
    assert_losses_match(out, ref)
    sum(out.values()).backward()
    sum(ref.values()).backward()
    t_params, o_params = dict(tm.named_parameters()), dict(om.named_parameters())
    for name in ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.weight",
                 "head.regression_head.conv.0.0.weight", "backbone.c1.weight"):
        assert o_params[name].grad is not None, name
        assert_close(o_params[name].grad.numpy(), t_params[name].grad.numpy(), 1e-3, name)


@pytest.mark.parametrize("loss_type,group_norm", [("l1", False), ("smooth_l1", False), ("giou", True)])
def test_head_losses_and_grads_match(loss_type, group_norm):
    tm, om = tiny_pair(seed=2, group_norm=group_norm, loss_type=loss_type, head_std=0.11)
    rng = np.random.default_rng(1)
    feats = [rng.standard_normal((2, 32, h, w)).astype(np.float32) for h, w in ((12, 16), (6, 8), (3, 4))]
    with torch.no_grad():
        image_list = tv_image_list.ImageList(torch.zeros(2, 3, 48, 64), [(48, 64), (40, 60)])
        anchors = tm.anchor_generator(image_list, [torch.from_numpy(f) for f in feats])
        targets = make_targets(torch, (([[5.0, 4.0, 30.0, 40.0], [20.0, 10.0, 60.0, 30.0]], [1, 3]),
                                       ([[10.0, 10.0, 50.0, 35.0]], [2])))
        matched = [tm.proposal_matcher(box_ops.box_iou(t["boxes"], a)) for t, a in zip(targets, anchors)]
    ref = tm.head.compute_loss(targets, tm.head([torch.from_numpy(f) for f in feats]), anchors, matched)
    out = om.head.compute_loss(make_targets(engine, [(t["boxes"].tolist(), t["labels"].tolist()) for t in targets]),
                               om.head([engine.from_numpy(f) for f in feats]),
                               [engine.from_numpy(a.numpy()) for a in anchors],
                               [engine.from_numpy(m.numpy()) for m in matched])
    assert_losses_match(out, ref)
    sum(out.values()).backward()
    sum(ref.values()).backward()
    t_params, o_params = dict(tm.head.named_parameters()), dict(om.head.named_parameters())
    for name in ("classification_head.cls_logits.weight", "regression_head.bbox_reg.weight",
                 "regression_head.conv.0.0.weight"):
        assert_close(o_params[name].grad.numpy(), t_params[name].grad.numpy(), 1e-3, name)


def test_empty_targets_match():
    targets = (([], []), TARGETS[1])
    tm, om = tiny_pair(seed=3)
    out, ref = run_both(tm.train(), om.train(), load_images(), targets)
    assert_losses_match(out, ref)
    assert float(out["bbox_regression"]) > 0
    sum(out.values()).backward()


def test_sgd_steps_lower_the_loss():
    _, model = tiny_pair(seed=3)
    model.train()
    images = [engine.from_numpy(i) for i in load_images()]
    targets = make_targets(engine)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for _ in range(4):
        loss = sum(model(images, targets).values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0], losses


def test_v1_checkpoint_keys_are_upgraded():
    tm, om = tiny_pair(seed=4)
    old = OrderedDict()
    for k, v in numpy_state(tm).items():
        for head in ("classification_head", "regression_head"):
            for i in range(4):
                k = k.replace(f"head.{head}.conv.{i}.0.", f"head.{head}.conv.{2 * i}.")
        old[k] = v
    assert "head.regression_head.conv.6.weight" in old
    fresh = tiny_pair(seed=5)[1]
    fresh.load_state_dict(old)
    for k, v in om.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].detach().numpy(), v.detach().numpy())


def test_bad_inputs_raise():
    _, model = tiny_pair()
    model.train()
    images = [engine.from_numpy(i) for i in load_images()]
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    bad = make_targets(engine)
    bad[0]["boxes"] = engine.zeros(1, 3)
    with pytest.raises(AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\]"):
        model(images, bad)
    degenerate = make_targets(engine, (([[10.0, 10.0, 10.0, 50.0]], [1]), TARGETS[1]))
    with pytest.raises(AssertionError, match=r"positive height and width. Found invalid box .* at index 0"):
        model(images, degenerate)
    with pytest.raises(ValueError, match="out_channels"):
        RetinaNet(engine.nn.ReLU(), 3)
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator"):
        RetinaNet(tiny_backbone(engine), 3, anchor_generator=object())


@pytest.mark.heavy
@pytest.mark.parametrize("name", ["retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2"])
def test_builder_matches_torchvision(name):
    kwargs = dict(weights=None, weights_backbone=None, num_classes=5, min_size=96, max_size=144)
    torch.manual_seed(0)
    tm = randomize_norms(getattr(torchvision.models.detection, name)(**kwargs), 0).eval()
    with torch.no_grad():
        tm.head.classification_head.cls_logits.weight.mul_(8.0)
    om = models.create_model(name, **kwargs)
    assert list(om.state_dict()) == list(tm.state_dict())
    assert om.default_cfg["classifier"] == ("head.classification_head.cls_logits",)
    assert om.head.regression_head._loss_type == ("giou" if name.endswith("v2") else "l1")
    om.load_state_dict(numpy_state(tm))
    om.eval()
    captured = {}
    tm.head.register_forward_hook(lambda m, i, o: captured.setdefault("torch", o))
    om.head.register_forward_hook(lambda m, i, o: captured.setdefault("ours", o))
    out, ref = run_both(tm, om, load_images())
    for k in ("cls_logits", "bbox_regression"):
        assert_close(captured["ours"][k].numpy(), captured["torch"][k].numpy(), 1e-4, k)
    assert_detections_match(out, ref, top=10)
