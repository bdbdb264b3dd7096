"""FCOS against torchvision: heads, centre-sampling assignment and losses, detections, builder, errors."""
import numpy as np
import pytest
import torch
import torchvision
from torchvision.models.detection import anchor_utils as tv_anchor_utils
from torchvision.models.detection import fcos as tv_fcos

import engine
import flowvision.models as models
from flowvision.models.detection import FCOS, FCOSHead
from flowvision.models.detection.anchor_utils import AnchorGenerator
from model_parity import numpy_state, randomize_norms
from op_check import assert_close
from test_detection_retinanet import (TARGETS, assert_detections_match, assert_losses_match, load_images,
                                      make_targets, run_both, tiny_backbone)

STRIDES = ((4,), (8,), (16,))


def tiny_pair(seed=0, head_std=None, **kwargs):
    """A tiny torchvision FCOS and ours (one anchor per location, sized as the stride) with the same weights.

    ``head_std`` redraws the head's conv weights with that std, so that scores spread above the threshold.
    """
    torch.manual_seed(seed)
    tm = tv_fcos.FCOS(tiny_backbone(torch), 4, min_size=96, max_size=160,
                      anchor_generator=tv_anchor_utils.AnchorGenerator(STRIDES, ((1.0,),) * 3), **kwargs)
    om = FCOS(tiny_backbone(engine), 4, min_size=96, max_size=160,
              anchor_generator=AnchorGenerator(STRIDES, ((1.0,),) * 3), **kwargs)
    if head_std is not None:
        with torch.no_grad():
            for p in tm.head.parameters():
                if p.dim() == 4:
                    p.normal_(0.0, head_std)
    om.load_state_dict(numpy_state(tm))
    return tm, om


def test_head_outputs_and_keys_match():
    tm, om = tiny_pair(head_std=0.1)
    assert list(om.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal((2, 32, h, w)).astype(np.float32) for h, w in ((9, 13), (5, 7), (3, 4))]
    with torch.no_grad():
        ref = tm.head([torch.from_numpy(f) for f in feats])
    with engine.no_grad():
        out = om.head([engine.from_numpy(f) for f in feats])
    for k in ("cls_logits", "bbox_regression", "bbox_ctrness"):
        assert tuple(out[k].shape) == tuple(ref[k].shape)
        assert_close(out[k].numpy(), ref[k].numpy(), 1e-4, k)
    assert float(out["bbox_regression"].min()) >= 0


def test_custom_head_depth():
    head = FCOSHead(64, 1, 3, num_convs=2)
    assert len(head.classification_head.conv) == 6
    assert list(head.state_dict()) == list(tv_fcos.FCOSHead(64, 1, 3, num_convs=2).state_dict())


def test_eval_detections_match():
    tm, om = tiny_pair(head_std=0.11)
    out, ref = run_both(tm.eval(), om.eval(), load_images())
    assert_detections_match(out, ref)


@pytest.mark.parametrize("radius", [1.5, 3.0])
def test_train_losses_and_grads_match(radius):
    tm, om = tiny_pair(seed=1, head_std=0.11, center_sampling_radius=radius)
    out, ref = run_both(tm.train(), om.train(), load_images(), TARGETS)
    assert list(out) == ["classification", "bbox_regression", "bbox_ctrness"]
    assert float(out["bbox_regression"]) > 0
    assert_losses_match(out, ref)
    sum(out.values()).backward()
    sum(ref.values()).backward()
    t_params, o_params = dict(tm.named_parameters()), dict(om.named_parameters())
    for name in ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.weight",
                 "head.regression_head.bbox_ctrness.weight", "head.regression_head.conv.0.weight",
                 "backbone.c1.weight"):
        assert o_params[name].grad is not None, name
        assert_close(o_params[name].grad.numpy(), t_params[name].grad.numpy(), 1e-3, name)


@pytest.mark.parametrize("targets", [(([], []), TARGETS[1]), (([], []), ([], []))], ids=["one", "all"])
def test_empty_targets_match(targets):
    tm, om = tiny_pair(seed=2)
    out, ref = run_both(tm.train(), om.train(), load_images(), targets)
    assert_losses_match(out, ref)
    sum(out.values()).backward()
    assert om.head.classification_head.cls_logits.weight.grad is not None


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


def test_bad_inputs_raise():
    _, model = tiny_pair()
    model.train()
    images = [engine.from_numpy(i) for i in load_images()]
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    degenerate = make_targets(engine, (([[30.0, 40.0, 20.0, 50.0]], [1]), TARGETS[1]))
    with pytest.raises(AssertionError, match=r"Found invalid box \[9.5.*for target at index 0"):
        model(images, degenerate)
    with pytest.raises(ValueError, match=r"num_anchors_per_location\(\)\[0\] should be 1 instead of 3"):
        FCOS(tiny_backbone(engine), 3, anchor_generator=AnchorGenerator(STRIDES, ((0.5, 1.0, 2.0),) * 3))
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator"):
        FCOS(tiny_backbone(engine), 3, anchor_generator=object())


@pytest.mark.heavy
def test_builder_matches_torchvision():
    kwargs = dict(weights=None, weights_backbone=None, num_classes=5, min_size=96, max_size=144)
    torch.manual_seed(0)
    tm = randomize_norms(torchvision.models.detection.fcos_resnet50_fpn(**kwargs), 0).eval()
    with torch.no_grad():
        tm.head.classification_head.cls_logits.weight.mul_(8.0)
    om = models.create_model("fcos_resnet50_fpn", **kwargs)
    assert list(om.state_dict()) == list(tm.state_dict())
    assert (om.score_thresh, om.nms_thresh, om.detections_per_img, om.center_sampling_radius) == (0.2, 0.6, 100, 1.5)
    om.load_state_dict(numpy_state(tm))
    om.eval()
    captured = {}
    tm.head.register_forward_hook(lambda m, i, o: captured.setdefault("torch", o))
    om.head.register_forward_hook(lambda m, i, o: captured.setdefault("ours", o))
    out, ref = run_both(tm, om, load_images())
    for k in ("cls_logits", "bbox_regression", "bbox_ctrness"):
        assert_close(captured["ours"][k].numpy(), captured["torch"][k].numpy(), 1e-4, k)
    assert_detections_match(out, ref, top=10)
