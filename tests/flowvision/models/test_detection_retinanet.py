"""RetinaNet against torchvision: heads, losses (l1 / smooth_l1 / giou), detections, builders, key upgrade, errors."""
from collections import OrderedDict
from functools import partial

import numpy as np
import pytest
import torch
from detection_parity import (PHOTO_TARGETS, assert_detections_match, assert_grads_match, assert_losses_match,
                              assert_outputs_close, backward_both, builder_pair, head_features, make_targets,
                              parity_pair, photos, redraw_head, run_both, sgd_history, three_level_backbone, to_lib)
from torchvision.models.detection import image_list as tv_image_list
from torchvision.ops import boxes as box_ops

import engine
from flowvision.models.detection import RetinaNet, RetinaNetHead
from model_parity import numpy_state

ANCHOR_SIZES = ((16, 24), (32, 48), (64, 96))


def tiny_pair(seed=0, group_norm=False, loss_type="l1", head_std=None, **kwargs):
    """A tiny RetinaNet in ours and torchvision with the same (seeded) weights: (ours, ref).

    ``head_std`` redraws the head's conv weights with that std, so that scores spread above the threshold.
    """
    def build(lib):
        anchors = lib.det.anchor_utils.AnchorGenerator(ANCHOR_SIZES, ((0.5, 1.0, 2.0),) * 3)
        norm = partial(lib.nn.GroupNorm, 8) if group_norm else None
        head = lib.det.retinanet.RetinaNetHead(32, 6, 4, norm_layer=norm)
        head.regression_head._loss_type = loss_type
        return lib.det.retinanet.RetinaNet(three_level_backbone(lib.lib), 4, min_size=96, max_size=160,
                                           anchor_generator=anchors, head=head, **kwargs)

    return parity_pair(build, seed, redraw_head(head_std))


@pytest.mark.parametrize("group_norm", [False, True])
def test_head_outputs_and_keys_match(group_norm):
    om, tm = tiny_pair(group_norm=group_norm)
    assert list(om.state_dict()) == list(tm.state_dict())
    out, ref = run_both(om.head, tm.head, head_features(0, ((9, 13), (5, 7), (3, 4))))
    assert list(out) == ["cls_logits", "bbox_regression"]
    assert_outputs_close(out, ref)


def test_default_init_matches_torchvision_statistics():
    head = RetinaNetHead(64, 9, 5)
    bias = head.classification_head.cls_logits.bias.detach().numpy()
    np.testing.assert_allclose(bias, -np.log(0.99 / 0.01), rtol=1e-6)
    assert abs(head.regression_head.bbox_reg.weight.detach().numpy().std() - 0.01) < 1e-3
    assert not head.regression_head.conv[0][0].bias.detach().numpy().any()


def test_eval_detections_match():
    om, tm = tiny_pair(head_std=0.11)
    out, ref = run_both(om.eval(), tm.eval(), photos())
    assert_detections_match(out, ref, top=20)


def test_train_losses_and_grads_match():
    om, tm = tiny_pair(seed=1, head_std=0.11)
    out, ref = run_both(om.train(), tm.train(), photos(), make_targets())
    assert_losses_match(out, ref)
    backward_both(out, ref)
    assert_grads_match(om, tm, ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.weight",
                                "head.regression_head.conv.0.0.weight", "backbone.c1.weight"), 1e-3)


@pytest.mark.parametrize("loss_type,group_norm", [("l1", False), ("smooth_l1", False), ("giou", True)])
def test_head_losses_and_grads_match(loss_type, group_norm):
    om, tm = tiny_pair(seed=2, group_norm=group_norm, loss_type=loss_type, head_std=0.11)
    feats = head_features(1, ((12, 16), (6, 8), (3, 4)))
    targets = make_targets((([[5.0, 4.0, 30.0, 40.0], [20.0, 10.0, 60.0, 30.0]], [1, 3]),
                            ([[10.0, 10.0, 50.0, 35.0]], [2])))
    with torch.no_grad():
        image_list = tv_image_list.ImageList(torch.zeros(2, 3, 48, 64), [(48, 64), (40, 60)])
        anchors = [a.numpy() for a in tm.anchor_generator(image_list, to_lib(torch, feats))]
        matched = [tm.proposal_matcher(box_ops.box_iou(torch.from_numpy(t["boxes"]), torch.from_numpy(a))).numpy()
                   for t, a in zip(targets, anchors)]
    ref = tm.head.compute_loss(to_lib(torch, targets), tm.head(to_lib(torch, feats)), to_lib(torch, anchors),
                               to_lib(torch, matched))
    out = om.head.compute_loss(to_lib(engine, targets), om.head(to_lib(engine, feats)), to_lib(engine, anchors),
                               to_lib(engine, matched))
    assert_losses_match(out, ref)
    backward_both(out, ref)
    assert_grads_match(om.head, tm.head, ("classification_head.cls_logits.weight", "regression_head.bbox_reg.weight",
                                          "regression_head.conv.0.0.weight"), 1e-3)


def test_empty_targets_match():
    om, tm = tiny_pair(seed=3)
    out, ref = run_both(om.train(), tm.train(), photos(), make_targets((([], []), PHOTO_TARGETS[1])))
    assert_losses_match(out, ref)
    assert float(out["bbox_regression"]) > 0
    sum(out.values()).backward()


def test_sgd_steps_lower_the_loss():
    model, _ = tiny_pair(seed=3)
    losses = sgd_history(model.train(), to_lib(engine, photos()), to_lib(engine, make_targets()), 4)
    assert losses[-1] < losses[0], losses


def test_v1_checkpoint_keys_are_upgraded():
    om, tm = tiny_pair(seed=4)
    old = OrderedDict()
    for k, v in numpy_state(tm).items():
        for head in ("classification_head", "regression_head"):
            for i in range(4):
                k = k.replace(f"head.{head}.conv.{i}.0.", f"head.{head}.conv.{2 * i}.")
        old[k] = v
    assert "head.regression_head.conv.6.weight" in old
    fresh = tiny_pair(seed=5)[0]
    fresh.load_state_dict(old)
    for k, v in om.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].detach().numpy(), v.detach().numpy())


def test_bad_inputs_raise():
    model = tiny_pair()[0].train()
    images = to_lib(engine, photos())
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    bad = to_lib(engine, make_targets())
    bad[0]["boxes"] = engine.zeros(1, 3)
    with pytest.raises(AssertionError, match=r"Expected target boxes to be a tensor of shape \[N, 4\]"):
        model(images, bad)
    degenerate = to_lib(engine, make_targets((([[10.0, 10.0, 10.0, 50.0]], [1]), PHOTO_TARGETS[1])))
    with pytest.raises(AssertionError, match=r"positive height and width. Found invalid box .* at index 0"):
        model(images, degenerate)
    with pytest.raises(ValueError, match="out_channels"):
        RetinaNet(engine.nn.ReLU(), 3)
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator"):
        RetinaNet(three_level_backbone(engine), 3, anchor_generator=object())


@pytest.mark.slow  # over a second: outside the quick subset
@pytest.mark.heavy
@pytest.mark.parametrize("name", ["retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2"])
def test_builder_matches_torchvision(name):
    om, tm = builder_pair(name, {"head.classification_head.cls_logits.weight": 8.0}, num_classes=5, min_size=96,
                          max_size=144)
    assert list(om.state_dict()) == list(tm.state_dict())
    assert om.default_cfg["classifier"] == ("head.classification_head.cls_logits",)
    assert om.head.regression_head._loss_type == ("giou" if name.endswith("v2") else "l1")
    captured = {}
    tm.head.register_forward_hook(lambda m, i, o: captured.setdefault("torch", o))
    om.head.register_forward_hook(lambda m, i, o: captured.setdefault("ours", o))
    out, ref = run_both(om, tm, photos())
    assert_outputs_close(captured["ours"], captured["torch"])
    assert_detections_match(out, ref, top=10)
