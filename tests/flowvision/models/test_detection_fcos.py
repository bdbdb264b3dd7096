"""FCOS against torchvision: heads, centre-sampling assignment and losses, detections, builder, errors."""
import pytest
from detection_parity import (PHOTO_TARGETS, assert_detections_match, assert_grads_match, assert_losses_match,
                              assert_outputs_close, backward_both, builder_pair, head_features, make_targets,
                              parity_pair, photos, redraw_head, run_both, sgd_history, three_level_backbone, to_lib)
from torchvision.models.detection import fcos as tv_fcos

import engine
from flowvision.models.detection import FCOS, FCOSHead
from flowvision.models.detection.anchor_utils import AnchorGenerator

STRIDES = ((4,), (8,), (16,))


def tiny_pair(seed=0, head_std=None, **kwargs):
    """A tiny FCOS in ours and torchvision (one anchor per location, sized as the stride), same weights: (ours, ref).

    ``head_std`` redraws the head's conv weights with that std, so that scores spread above the threshold.
    """
    def build(lib):
        anchors = lib.det.anchor_utils.AnchorGenerator(STRIDES, ((1.0,),) * 3)
        return lib.det.fcos.FCOS(three_level_backbone(lib.lib), 4, min_size=96, max_size=160, anchor_generator=anchors,
                                 **kwargs)

    return parity_pair(build, seed, redraw_head(head_std))


def test_head_outputs_and_keys_match():
    om, tm = tiny_pair(head_std=0.1)
    assert list(om.state_dict()) == list(tm.state_dict())
    out, ref = run_both(om.head, tm.head, head_features(0, ((9, 13), (5, 7), (3, 4))))
    assert list(out) == ["cls_logits", "bbox_regression", "bbox_ctrness"]
    assert_outputs_close(out, ref)
    assert float(out["bbox_regression"].min()) >= 0


def test_custom_head_depth():
    head = FCOSHead(64, 1, 3, num_convs=2)
    assert len(head.classification_head.conv) == 6
    assert list(head.state_dict()) == list(tv_fcos.FCOSHead(64, 1, 3, num_convs=2).state_dict())


def test_eval_detections_match():
    om, tm = tiny_pair(head_std=0.11)
    out, ref = run_both(om.eval(), tm.eval(), photos())
    assert_detections_match(out, ref, top=20)


@pytest.mark.parametrize("radius", [1.5, 3.0])
def test_train_losses_and_grads_match(radius):
    om, tm = tiny_pair(seed=1, head_std=0.11, center_sampling_radius=radius)
    out, ref = run_both(om.train(), tm.train(), photos(), make_targets())
    assert float(out["bbox_regression"]) > 0
    assert_losses_match(out, ref, keys=["classification", "bbox_regression", "bbox_ctrness"])
    backward_both(out, ref)
    assert_grads_match(om, tm, ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.weight",
                                "head.regression_head.bbox_ctrness.weight", "head.regression_head.conv.0.weight",
                                "backbone.c1.weight"), 1e-3)


@pytest.mark.parametrize("targets", [(([], []), PHOTO_TARGETS[1]), (([], []), ([], []))],
                         ids=["one", "all"])
def test_empty_targets_match(targets):
    om, tm = tiny_pair(seed=2)
    out, ref = run_both(om.train(), tm.train(), photos(), make_targets(targets))
    assert_losses_match(out, ref)
    sum(out.values()).backward()
    assert om.head.classification_head.cls_logits.weight.grad is not None


def test_sgd_steps_lower_the_loss():
    model, _ = tiny_pair(seed=3)
    losses = sgd_history(model.train(), to_lib(engine, photos()), to_lib(engine, make_targets()), 4)
    assert losses[-1] < losses[0], losses


def test_bad_inputs_raise():
    model = tiny_pair()[0].train()
    images = to_lib(engine, photos())
    with pytest.raises(AssertionError, match="targets should not be none when in training mode"):
        model(images)
    degenerate = to_lib(engine, make_targets((([[30.0, 40.0, 20.0, 50.0]], [1]), PHOTO_TARGETS[1])))
    with pytest.raises(AssertionError, match=r"Found invalid box \[9.5.*for target at index 0"):
        model(images, degenerate)
    with pytest.raises(ValueError, match=r"num_anchors_per_location\(\)\[0\] should be 1 instead of 3"):
        FCOS(three_level_backbone(engine), 3, anchor_generator=AnchorGenerator(STRIDES, ((0.5, 1.0, 2.0),) * 3))
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator"):
        FCOS(three_level_backbone(engine), 3, anchor_generator=object())


@pytest.mark.slow  # over a second: outside the quick subset
@pytest.mark.heavy
def test_builder_matches_torchvision():
    om, tm = builder_pair("fcos_resnet50_fpn", {"head.classification_head.cls_logits.weight": 8.0}, num_classes=5,
                          min_size=96, max_size=144)
    assert list(om.state_dict()) == list(tm.state_dict())
    assert (om.score_thresh, om.nms_thresh, om.detections_per_img, om.center_sampling_radius) == (0.2, 0.6, 100, 1.5)
    captured = {}
    tm.head.register_forward_hook(lambda m, i, o: captured.setdefault("torch", o))
    om.head.register_forward_hook(lambda m, i, o: captured.setdefault("ours", o))
    out, ref = run_both(om, tm, photos())
    assert_outputs_close(captured["ours"], captured["torch"])
    assert_detections_match(out, ref, top=10)
