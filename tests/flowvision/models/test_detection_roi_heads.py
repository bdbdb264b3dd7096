"""flowvision.models.detection.roi_heads against torchvision's: detections, training samples, losses, branches."""
import numpy as np
import pytest
import torch
from detection_parity import pinned_sampler  # noqa: F401  (fixture)
import torchvision
from op_check import assert_close, check_op
from torchvision.models.detection import faster_rcnn as tv_faster_rcnn
from torchvision.models.detection import roi_heads as tv_roi_heads

import engine
from flowvision import ops
from flowvision.models.detection import faster_rcnn, roi_heads

rng = np.random.default_rng(0)
C, NUM_CLASSES, K = 8, 5, 4
IMAGE_SHAPES = [(60, 75), (64, 52)]


def _boxes(n, h, w, gen=rng):
    xy = gen.uniform(0, [w * 0.7, h * 0.7], (n, 2))
    wh = gen.uniform(4, [w * 0.5, h * 0.5], (n, 2))
    return np.concatenate([xy, np.minimum(xy + wh, [w, h])], 1).astype(np.float32)


def _seq_pair(build):
    """``build(nn)`` with torch.nn (seeded, weights scaled up) and engine.nn, same weights."""
    torch.manual_seed(0)
    ref = build(torch.nn)
    with torch.no_grad():
        for p in ref.parameters():
            p.copy_(torch.randn(p.shape) * 0.3)
    ours = build(engine.nn)
    ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    return ours, ref


def _heads(mask=False, keypoint=False, **kwargs):
    """Our RoIHeads and torchvision's over levels '0' and '1' with equal head weights."""
    box_head, tv_box_head = _seq_pair(lambda nn: nn.Sequential(nn.Flatten(), nn.Linear(C * 49, 32), nn.ReLU()))
    predictor = faster_rcnn.FastRCNNPredictor(32, NUM_CLASSES)
    tv_predictor = tv_faster_rcnn.FastRCNNPredictor(32, NUM_CLASSES)
    with torch.no_grad():
        for p in tv_predictor.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    predictor.load_state_dict({k: v.numpy() for k, v in tv_predictor.state_dict().items()})
    args = dict(fg_iou_thresh=0.5, bg_iou_thresh=0.5, batch_size_per_image=64, positive_fraction=0.25,
                bbox_reg_weights=None, score_thresh=0.05, nms_thresh=0.5, detections_per_img=100)
    args.update(kwargs)
    extra, tv_extra = {}, {}
    if mask:
        extra["mask_head"], tv_extra["mask_head"] = _seq_pair(
            lambda nn: nn.Sequential(nn.Conv2d(C, C, 3, padding=1), nn.ReLU()))
        extra["mask_predictor"], tv_extra["mask_predictor"] = _seq_pair(
            lambda nn: nn.Sequential(nn.ConvTranspose2d(C, C, 2, 2), nn.ReLU(), nn.Conv2d(C, NUM_CLASSES, 1)))
        extra["mask_roi_pool"] = ops.MultiScaleRoIAlign(["0", "1"], 7, 2)
        tv_extra["mask_roi_pool"] = torchvision.ops.MultiScaleRoIAlign(["0", "1"], 7, 2)
    if keypoint:
        extra["keypoint_head"], tv_extra["keypoint_head"] = _seq_pair(
            lambda nn: nn.Sequential(nn.Conv2d(C, C, 3, padding=1), nn.ReLU()))
        extra["keypoint_predictor"], tv_extra["keypoint_predictor"] = _seq_pair(
            lambda nn: nn.ConvTranspose2d(C, K, 4, stride=2, padding=1))
        extra["keypoint_roi_pool"] = ops.MultiScaleRoIAlign(["0", "1"], 7, 2)
        tv_extra["keypoint_roi_pool"] = torchvision.ops.MultiScaleRoIAlign(["0", "1"], 7, 2)
    ours = roi_heads.RoIHeads(ops.MultiScaleRoIAlign(["0", "1"], 7, 2), box_head, predictor, **args, **extra)
    ref = tv_roi_heads.RoIHeads(torchvision.ops.MultiScaleRoIAlign(["0", "1"], 7, 2), tv_box_head, tv_predictor,
                                **args, **tv_extra)
    return ours, ref


def _inputs(n_proposals=(40, 30)):
    """Feature dicts (strides 4 and 8 of a 64x80 batch) and per-image proposals, ours and torch's."""
    feats = [rng.standard_normal((2, C, 16, 20)).astype(np.float32),
             rng.standard_normal((2, C, 8, 10)).astype(np.float32)]
    proposals = [_boxes(n, *shape) for n, shape in zip(n_proposals, IMAGE_SHAPES)]
    ours = ({str(i): engine.from_numpy(f) for i, f in enumerate(feats)}, [engine.from_numpy(p) for p in proposals])
    ref = ({str(i): torch.from_numpy(f) for i, f in enumerate(feats)}, [torch.from_numpy(p) for p in proposals])
    return ours, ref


def _targets(lib, empty_second=False, masks=False, keypoints=False):
    """Seeded targets per image for ``lib`` (engine or torch); the second optionally empty."""
    g = np.random.default_rng(1)
    out = []
    for i, (h, w) in enumerate(IMAGE_SHAPES):
        n = 0 if (empty_second and i == 1) else 3
        t = {"boxes": lib.from_numpy(_boxes(n, h, w, g) if n else np.zeros((0, 4), np.float32)),
             "labels": lib.from_numpy(g.integers(1, NUM_CLASSES, n).astype(np.int64))}
        if masks:
            t["masks"] = lib.from_numpy((g.random((n, h, w)) > 0.5).astype(np.uint8))
        if keypoints:
            kp = np.concatenate([g.uniform(0, [w, h], (n, K, 2)), g.integers(0, 2, (n, K, 1))], 2)
            t["keypoints"] = lib.from_numpy(kp.astype(np.float32))
        out.append(t)
    return out


def _compare_results(result, tv_result):
    """Same detections per image, in the same order."""
    for r, t in zip(result, tv_result):
        assert list(r) == list(t)
        assert r["boxes"].shape[0] > 0
        np.testing.assert_array_equal(r["labels"].numpy(), t["labels"].numpy())
        assert r["labels"].dtype == engine.int64
        for key in r:
            if key != "labels":
                assert_close(r[key].numpy(), t[key].numpy(), 1e-4, key)


@pytest.mark.parametrize("kwargs", [{}, {"score_thresh": 0.3, "detections_per_img": 7},
                                    {"nms_thresh": 0.2, "bbox_reg_weights": (1.0, 1.0, 1.0, 1.0)}])
def test_roi_heads_detections(kwargs):
    ours, ref = _heads(**kwargs)
    ours.eval(), ref.eval()
    assert not ours.has_mask() and not ours.has_keypoint()
    (feats, proposals), (tv_feats, tv_proposals) = _inputs()
    with engine.no_grad():
        result, losses = ours(feats, proposals, IMAGE_SHAPES)
    with torch.no_grad():
        tv_result, tv_losses = ref(tv_feats, tv_proposals, IMAGE_SHAPES)
    assert losses == {} == tv_losses
    _compare_results(result, tv_result)
    if "detections_per_img" in kwargs:
        assert all(r["boxes"].shape[0] <= 7 for r in result)


def test_fastrcnn_loss():
    labels = [np.array([0, 2, 1, 0, 4], np.int64), np.array([3, 0, 0], np.int64)]
    targets = [rng.standard_normal((5, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)]
    logits = rng.standard_normal((8, NUM_CLASSES)).astype(np.float32)
    deltas = rng.standard_normal((8, NUM_CLASSES * 4)).astype(np.float32)
    check_op(lambda a, b, c, d, e, f: roi_heads.fastrcnn_loss(a, b, [c, d], [e, f]),
             lambda a, b, c, d, e, f: tv_roi_heads.fastrcnn_loss(a, b, [c, d], [e, f]),
             [logits, deltas] + labels + targets, rtol=1e-5)


@pytest.mark.parametrize("mask,keypoint,empty_second", [(False, False, False), (False, False, True),
                                                        (True, False, False), (False, True, True)])
def test_roi_heads_training(pinned_sampler, mask, keypoint, empty_second):
    ours, ref = _heads(mask, keypoint)
    ours.train(), ref.train()
    (feats, proposals), (tv_feats, tv_proposals) = _inputs()
    targets = _targets(engine, empty_second, mask, keypoint)
    tv_targets = _targets(torch, empty_second, mask, keypoint)
    _, losses = ours(feats, proposals, IMAGE_SHAPES, targets)
    _, tv_losses = ref(tv_feats, tv_proposals, IMAGE_SHAPES, tv_targets)
    assert list(losses) == list(tv_losses)
    for key in losses:
        assert_close(losses[key].detach().numpy(), tv_losses[key].detach().numpy(), 1e-5, key)
    sum(losses.values()).backward()
    sum(tv_losses.values()).backward()
    for name, param in ref.named_parameters():
        assert_close(ours.get_parameter(name).grad.numpy(), param.grad.numpy(), 1e-4, f"grad of {name}")
    sampled, matched, labels, regression = ours.select_training_samples(proposals, targets)
    tv_sampled, tv_matched, tv_labels, tv_regression = ref.select_training_samples(tv_proposals, tv_targets)
    for groups in zip((sampled, matched, labels, regression), (tv_sampled, tv_matched, tv_labels, tv_regression)):
        for a, b in zip(*groups):
            assert_close(a.numpy(), b.numpy(), 1e-5)


@pytest.mark.parametrize("mask,keypoint", [(True, False), (False, True)])
def test_roi_heads_branch_inference(mask, keypoint):
    ours, ref = _heads(mask, keypoint)
    ours.eval(), ref.eval()
    assert ours.has_mask() == mask and ours.has_keypoint() == keypoint
    (feats, proposals), (tv_feats, tv_proposals) = _inputs()
    with engine.no_grad():
        result, _ = ours(feats, proposals, IMAGE_SHAPES)
    with torch.no_grad():
        tv_result, _ = ref(tv_feats, tv_proposals, IMAGE_SHAPES)
    _compare_results(result, tv_result)


def test_roi_heads_target_errors():
    ours, _ = _heads(mask=True)
    ours.train()
    (feats, proposals), _ = _inputs()
    with pytest.raises(ValueError, match="targets should not be None"):
        ours(feats, proposals, IMAGE_SHAPES)
    targets = _targets(engine)
    with pytest.raises(ValueError, match="should have a masks key"):
        ours(feats, proposals, IMAGE_SHAPES, targets)
    with pytest.raises(KeyError, match="labels"):                   # torchvision's dtype check comes first
        ours(feats, proposals, IMAGE_SHAPES, [{"boxes": t["boxes"]} for t in targets])
    with pytest.raises(ValueError, match="should have a labels key"):
        ours.check_targets([{"boxes": t["boxes"]} for t in targets])
    bad = [dict(t, labels=t["labels"].to(engine.int32)) for t in targets]
    with pytest.raises(TypeError, match="target labels must of int64 type, instead got"):
        ours(feats, proposals, IMAGE_SHAPES, bad)
    bad = [dict(t, boxes=t["boxes"].to(engine.int64)) for t in targets]
    with pytest.raises(TypeError, match="target boxes must of float type"):
        ours(feats, proposals, IMAGE_SHAPES, bad)
