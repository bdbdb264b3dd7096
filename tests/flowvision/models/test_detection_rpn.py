"""flowvision.models.detection.rpn against torchvision's: RPNHead, concat layers, proposals and losses."""
import numpy as np
import pytest
import torch
from detection_parity import pinned_sampler  # noqa: F401  (fixture)
from op_check import assert_close, check_op
from torchvision.models.detection import anchor_utils as tv_anchor_utils
from torchvision.models.detection import image_list as tv_image_list
from torchvision.models.detection import rpn as tv_rpn

import engine
from flowvision.models.detection import anchor_utils, image_list, rpn

rng = np.random.default_rng(0)
SIZES = ((32,), (64,))
RATIOS = ((0.5, 1.0, 2.0),) * 2
IMAGE_SIZES = [(60, 75), (64, 52)]


def _numpy_state(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def _head_pair(conv_depth=1, channels=8, num_anchors=3, std=0.01):
    """Seeded torchvision RPNHead (weights scaled by ``std / 0.01``) and ours with the same weights."""
    torch.manual_seed(0)
    ref = tv_rpn.RPNHead(channels, num_anchors, conv_depth=conv_depth)
    with torch.no_grad():
        for p in ref.parameters():
            p.mul_(std / 0.01).add_(torch.randn(p.shape) * std * 0.1)
    ours = rpn.RPNHead(channels, num_anchors, conv_depth=conv_depth)
    ours.load_state_dict(_numpy_state(ref))
    return ours, ref


def _features(channels=8, batch=2):
    """Two FPN-like levels for a batch padded to 64x80 (strides 4 and 8)."""
    return [rng.standard_normal((batch, channels, 16, 20)).astype(np.float32),
            rng.standard_normal((batch, channels, 8, 10)).astype(np.float32)]


@pytest.mark.parametrize("conv_depth", [1, 2])
def test_rpn_head_parity(conv_depth):
    ours, ref = _head_pair(conv_depth, std=0.1)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert "conv.0.0.weight" in ours.state_dict()
    check_op(lambda a, b: [t for out in ours([a, b]) for t in out],
             lambda a, b: [t for out in ref([a, b]) for t in out], _features(), rtol=1e-5)


def test_rpn_head_default_init_and_old_keys():
    head = rpn.RPNHead(16, 3)
    std = head.cls_logits.weight.detach().numpy().std()
    assert 0.005 < std < 0.015 and not head.bbox_pred.bias.detach().numpy().any()
    ours, ref = _head_pair(1)
    old = {k.replace("conv.0.0.", "conv."): v for k, v in _numpy_state(ref).items()}
    assert "conv.weight" in old
    fresh = rpn.RPNHead(8, 3)
    fresh.load_state_dict(old)
    for key, value in _numpy_state(ref).items():
        np.testing.assert_array_equal(fresh.state_dict()[key].numpy(), value)


def test_concat_box_prediction_layers():
    cls = [rng.standard_normal((2, 3, 5, 4)).astype(np.float32), rng.standard_normal((2, 3, 2, 3)).astype(np.float32)]
    reg = [rng.standard_normal((2, 12, 5, 4)).astype(np.float32), rng.standard_normal((2, 12, 2, 3)).astype(np.float32)]
    check_op(lambda a, b, c, d: rpn.concat_box_prediction_layers([a, b], [c, d]),
             lambda a, b, c, d: tv_rpn.concat_box_prediction_layers([a, b], [c, d]), cls + reg, rtol=1e-6)


def _rpn_pair(std=1.0, **overrides):
    """Our RPN and torchvision's on the same head weights, small top-n settings."""
    kwargs = dict(fg_iou_thresh=0.7, bg_iou_thresh=0.3, batch_size_per_image=64, positive_fraction=0.5,
                  pre_nms_top_n=dict(training=300, testing=200), post_nms_top_n=dict(training=100, testing=50),
                  nms_thresh=0.7)
    kwargs.update(overrides)
    head, tv_head = _head_pair(std=std)
    ours = rpn.RegionProposalNetwork(anchor_utils.AnchorGenerator(SIZES, RATIOS), head, **kwargs)
    ref = tv_rpn.RegionProposalNetwork(tv_anchor_utils.AnchorGenerator(SIZES, RATIOS), tv_head, **kwargs)
    return ours, ref


def _inputs(features):
    """The same padded batch and features as our ImageList/dict and torchvision's."""
    images = np.zeros((2, 3, 64, 80), np.float32)
    ours = (image_list.ImageList(engine.from_numpy(images), IMAGE_SIZES),
            {str(i): engine.from_numpy(f) for i, f in enumerate(features)})
    ref = (tv_image_list.ImageList(torch.from_numpy(images), IMAGE_SIZES),
           {str(i): torch.from_numpy(f) for i, f in enumerate(features)})
    return ours, ref


@pytest.mark.parametrize("overrides", [{}, {"score_thresh": 0.6}, {"post_nms_top_n": dict(training=9, testing=7)}])
def test_rpn_proposals_match(overrides):
    ours, ref = _rpn_pair(**overrides)
    ours.eval(), ref.eval()
    (images, feats), (tv_images, tv_feats) = _inputs(_features())
    with engine.no_grad():
        boxes, losses = ours(images, feats)
    with torch.no_grad():
        tv_boxes, tv_losses = ref(tv_images, tv_feats)
    assert losses == {} and tv_losses == {}
    for b, t in zip(boxes, tv_boxes):
        assert 0 < b.shape[0] == t.shape[0]
        # compared as sets: objectness saturated to 1.0 ties, and torch's order among ties is unspecified; decoded
        # corners are centre -/+ half a width up to exp(log(1000 / 16)) x 64 pixels before clipping, so float32
        # cancellation leaves ~1e-3 pixels (2.4e-5 of the image) on some seeds, as between any two float32 decoders
        assert_close(_by_position(b.numpy()), _by_position(t.numpy()), 1e-4, "proposals")


def _by_position(boxes):
    """Boxes sorted by their corners (rounded to a tenth of a pixel, well above the decoders' differences)."""
    return boxes[np.lexsort(np.round(boxes, 1).T[::-1])]


def _targets(empty_second=False):
    """Boxes inside the images; the second image optionally without any."""
    first = np.array([[5, 6, 40, 50], [30, 10, 70, 40], [2, 2, 20, 14]], np.float32)
    second = np.zeros((0, 4), np.float32) if empty_second else np.array([[10, 12, 50, 60]], np.float32)
    return [first, second]


@pytest.mark.parametrize("empty_second", [False, True])
def test_rpn_training_losses_and_grads(pinned_sampler, empty_second):
    ours, ref = _rpn_pair(std=0.3)
    ours.train(), ref.train()
    (images, feats), (tv_images, tv_feats) = _inputs(_features())
    targets = _targets(empty_second)
    boxes, losses = ours(images, feats, [{"boxes": engine.from_numpy(t)} for t in targets])
    tv_boxes, tv_losses = ref(tv_images, tv_feats, [{"boxes": torch.from_numpy(t)} for t in targets])
    assert list(losses) == ["loss_objectness", "loss_rpn_box_reg"] == list(tv_losses)
    for key in losses:
        assert losses[key].item() > 0
        assert_close(losses[key].detach().numpy(), tv_losses[key].detach().numpy(), 1e-5, key)
    for b, t in zip(boxes, tv_boxes):
        assert_close(b.detach().numpy(), t.detach().numpy(), 1e-5, "training proposals")
    sum(losses.values()).backward()
    sum(tv_losses.values()).backward()
    for name, param in ref.head.named_parameters():
        assert_close(ours.head.get_parameter(name).grad.numpy(), param.grad.numpy(), 1e-4, f"grad of {name}")


def test_rpn_assign_targets_and_errors():
    ours, ref = _rpn_pair()
    anchors = [engine.from_numpy(a.numpy()) for a in
               tv_anchor_utils.AnchorGenerator(SIZES, RATIOS)(_inputs(_features())[1][0],
                                                             [torch.from_numpy(f) for f in _features()])]
    targets = _targets(empty_second=True)
    labels, matched = ours.assign_targets_to_anchors(anchors, [{"boxes": engine.from_numpy(t)} for t in targets])
    tv_labels, tv_matched = ref.assign_targets_to_anchors([torch.from_numpy(a.numpy()) for a in anchors],
                                                          [{"boxes": torch.from_numpy(t)} for t in targets])
    for a, b in zip(labels + matched, tv_labels + tv_matched):
        assert a.dtype == engine.float32
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(np.unique(labels[0].numpy())) == {-1.0, 0.0, 1.0}
    ours.train()
    (images, feats), _ = _inputs(_features())
    with pytest.raises(ValueError, match="targets should not be None"):
        ours(images, feats)
    assert ours.pre_nms_top_n() == 300 and ours.post_nms_top_n() == 100
    ours.eval()
    assert ours.pre_nms_top_n() == 200 and ours.post_nms_top_n() == 50
