"""Keypoint R-CNN against torchvision: builder, keys, eval parity on real photos, training losses/grads, bad input."""
import numpy as np
import pytest
import torch
import torchvision.models.detection as tv_det
from detection_parity import keep_all_sampler  # noqa: F401  (fixture)
from detection_parity import (assert_detections_match, assert_grads_match, assert_losses_match, assert_recorded_close,
                              backward_both, builder_pair, one_level_backbone, parity_pair, photos, record, run_both,
                              sgd_history, to_lib)
from model_parity import skip_random_init

import engine
import flowvision.models as models
import flowvision.models.detection as det

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

SMALL = dict(min_size=224, max_size=352)
LOSS_KEYS = ["loss_classifier", "loss_box_reg", "loss_keypoint", "loss_objectness", "loss_rpn_box_reg"]


def _targets(num_keypoints, empty_second=False):
    """Person boxes with seeded keypoints inside them (about a third invisible), as numpy; the second may have none."""
    rng = np.random.default_rng(0)
    boxes = [np.array([[60, 20, 330, 290]], np.float32),
             np.array([[250, 30, 400, 420], [20, 300, 200, 420]], np.float32)]
    if empty_second:
        boxes[1] = np.zeros((0, 4), np.float32)
    targets = []
    for b in boxes:
        xy = b[:, None, :2] + rng.random((len(b), num_keypoints, 2)) * (b[:, None, 2:] - b[:, None, :2])
        visible = rng.integers(0, 3, (len(b), num_keypoints, 1))
        targets.append({"boxes": b, "labels": np.ones(len(b), np.int64),
                        "keypoints": np.concatenate([xy, visible], 2).astype(np.float32)})
    return targets


def _tiny(lib, **kwargs):
    """A small Keypoint R-CNN with 5 keypoints built from explicit components, in ``lib`` (TORCH or OURS)."""
    det_lib, ops_lib = lib.det, lib.ops
    backbone, anchors = one_level_backbone(lib)
    kp = det_lib.keypoint_rcnn
    return kp.KeypointRCNN(
        backbone, num_classes=2, rpn_anchor_generator=anchors, box_roi_pool=ops_lib.MultiScaleRoIAlign(["0"], 7, 2),
        keypoint_roi_pool=ops_lib.MultiScaleRoIAlign(["0"], 14, 2), keypoint_head=kp.KeypointRCNNHeads(16, (16, 16)),
        keypoint_predictor=kp.KeypointRCNNPredictor(16, 5), min_size=160, max_size=240, **kwargs)


def _tiny_pair(prepare=None, **kwargs):
    """The tiny model in torchvision (seeded, changed by ``prepare``) and ours with its weights, in train mode."""
    ours, ref = parity_pair(lambda lib: _tiny(lib, **kwargs), prepare=prepare)
    return ours.train(), ref.train()


def _train_both(ours, ref, num_keypoints, empty_second=False):
    """Loss dicts of both models on the photos and the same targets: equal, then backpropagated."""
    losses, tv_losses = run_both(ours, ref, photos(), _targets(num_keypoints, empty_second))
    assert_losses_match(losses, tv_losses, 1e-4, LOSS_KEYS)
    backward_both(losses, tv_losses)
    return losses


@pytest.mark.parametrize("empty_second", [False, True])
def test_tiny_training_losses_and_grads(keep_all_sampler, empty_second):
    ours, ref = _tiny_pair()
    losses = _train_both(ours, ref, 5, empty_second)
    assert losses["loss_keypoint"].item() > 0
    # the heatmap bias shifts all logits of a softmax equally: its gradient is zero up to rounding on both sides
    bias = "roi_heads.keypoint_predictor.kps_score_lowres.bias"
    assert float(ours.get_parameter(bias).grad.abs().max()) < 1e-5
    assert_grads_match(ours, ref, [name for name, _ in ref.named_parameters() if name != bias], 1e-4)


def test_tiny_eval_parity():
    def spread_scores(ref):
        ref.roi_heads.box_predictor.cls_score.weight.mul_(30)
        ref.roi_heads.keypoint_predictor.kps_score_lowres.weight.mul_(30)

    ours, ref = _tiny_pair(spread_scores, box_score_thresh=0.0, box_detections_per_img=20)
    ours.eval(), ref.eval()
    out, tv_out = run_both(ours, ref, photos())
    _compare_detections(out, tv_out, top=5)


def test_sgd_steps_lower_the_loss(keep_all_sampler):
    model, _ = _tiny_pair()
    history = sgd_history(model, to_lib(engine, photos()), to_lib(engine, _targets(5)), 5,
                          keys=("loss_keypoint", "loss_objectness"))
    # box losses are normalised by a proposal count that changes as the RPN learns; these two are fixed objectives
    assert history[-1][0] < history[0][0] and history[-1][1] < history[0][1], history


def test_bad_targets():
    model, _ = _tiny_pair()
    images = to_lib(engine, photos())
    targets = to_lib(engine, _targets(5))
    targets[0]["keypoints"] = targets[0]["keypoints"].double()
    with pytest.raises(TypeError, match="target keypoints must of float type"):
        model(images, targets)
    targets = to_lib(engine, _targets(5))
    targets[1]["boxes"] = engine.tensor([[250.0, 30.0, 400.0, 420.0], [20.0, 300.0, 10.0, 420.0]])
    with pytest.raises(AssertionError, match="All bounding boxes should have positive height and width"):
        model(images, targets)


def test_constructor_checks():
    backbone = engine.nn.Conv2d(3, 8, 3)
    backbone.out_channels = 8
    with pytest.raises(TypeError, match="keypoint_roi_pool should be of type MultiScaleRoIAlign or None"):
        det.KeypointRCNN(backbone, 2, keypoint_roi_pool=engine.nn.Identity())
    with pytest.raises(ValueError, match="num_keypoints should be None when keypoint_predictor is specified"):
        det.KeypointRCNN(backbone, 2, num_keypoints=5, keypoint_predictor=det.KeypointRCNNPredictor(8, 5))
    model = det.KeypointRCNN(backbone, 2)
    assert model.transform.min_size == (640, 672, 704, 736, 768, 800)
    assert model.roi_heads.keypoint_predictor.out_channels == 17


def test_builder_keys_shapes_and_config(monkeypatch):
    # shapes and settings only: ours left undrawn, torchvision's on the meta device (no weights at all); with
    # fast_random's draws for ours and torch's own for its model the test took 1.9-2.9 s, 0.8 s so
    skip_random_init(monkeypatch)
    ours = models.create_model("keypointrcnn_resnet50_fpn", weights=None, weights_backbone=None)
    with torch.device("meta"):
        ref = tv_det.keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    assert ours.default_cfg["classifier"] == ("roi_heads.box_predictor",)
    assert ours.roi_heads.box_predictor.cls_score.out_features == 2
    small = models.create_model("keypointrcnn_resnet50_fpn", weights=None, weights_backbone=None, num_keypoints=5)
    assert small.roi_heads.keypoint_predictor.kps_score_lowres.out_channels == 5
    with pytest.raises(ValueError, match="The parameter 'num_keypoints' expected value 17 but got 5 instead"):
        det.keypointrcnn_resnet50_fpn(weights="COCO_V1", num_keypoints=5)


def _compare_detections(out, ref, top):
    """Same counts, labels and dtypes; the best ``top`` boxes, scores, keypoints and keypoint scores equal."""
    for o in out:
        assert list(o) == ["boxes", "labels", "scores", "keypoints", "keypoints_scores"]
    # softmax of scaled logits that agree to ~1e-5 relative: probabilities move a few 1e-4 at most
    assert_detections_match(out, ref, top, score_rtol=5e-4)


def _resnet_pair(**kwargs):
    """torchvision's keypointrcnn_resnet50_fpn (seeded, random norms, spread scores) and ours with its weights."""
    return builder_pair("keypointrcnn_resnet50_fpn", {"roi_heads.box_predictor.cls_score.weight": 8}, **kwargs)


@pytest.mark.heavy
def test_eval_parity_on_photos():
    ours, ref = _resnet_pair(rpn_post_nms_top_n_test=200, box_detections_per_img=6, box_score_thresh=0.0, **SMALL)
    names = ["backbone", "rpn.head", "roi_heads.keypoint_predictor"]
    seen, tv_seen = record(ours, names), record(ref, names)
    out, tv_out = run_both(ours, ref, photos())
    assert_recorded_close(seen, tv_seen, names)
    _compare_detections(out, tv_out, top=6)


@pytest.mark.heavy
def test_training_losses_and_grads(keep_all_sampler):
    ours, ref = _resnet_pair(rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=100, **SMALL)
    ours.train(), ref.train()
    _train_both(ours, ref, 17)
    assert_grads_match(ours, ref, ["roi_heads.box_predictor.cls_score.weight", "rpn.head.cls_logits.weight"], 1e-4)
    # deeper layers: float32 rounding flips ReLU gates near zero over resnet50 and 8 keypoint convs, and the
    # peaked 56x56 softmax amplifies it (the tiny model checks every gradient at 1e-4)
    assert_grads_match(ours, ref, ["roi_heads.keypoint_predictor.kps_score_lowres.weight",
                                   "roi_heads.keypoint_head.14.weight", "roi_heads.keypoint_head.0.weight",
                                   "backbone.fpn.layer_blocks.0.0.weight"], 5e-2)
