"""SSDlite and ssdlite320_mobilenet_v3_large against torchvision: heads, extractor freezing, the full model
on real photos (eval and train), a few SGD steps, builder arguments."""
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torchvision
from torchvision.models.detection import ssdlite as tv_ssdlite

import engine
import flowvision.models as models
from flowvision.models.detection import ssdlite as our_ssdlite
from flowvision.models.detection.anchor_utils import DefaultBoxGenerator
from flowvision.models.detection.ssd import SSD
from flowvision.ops.misc import Conv2dNormActivation
from detection_parity import (assert_detections_match, assert_losses_match, assert_outputs_close, builder_pair,
                              photos, record, run_both, sgd_history)
from model_parity import numpy_state, randomize_norms
from op_check import assert_close

def norm_pair():
    """BatchNorm2d factories with SSDlite's eps and momentum, one per library."""
    return (lambda c: engine.nn.BatchNorm2d(c, eps=0.001, momentum=0.03),
            lambda c: torch.nn.BatchNorm2d(c, eps=0.001, momentum=0.03))


def test_ssdlite_head_matches_torchvision():
    ours_norm, ref_norm = norm_pair()
    in_channels, anchors = [8, 16, 12], [6, 6, 6]
    torch.manual_seed(0)
    ref = randomize_norms(tv_ssdlite.SSDLiteHead(in_channels, anchors, 5, ref_norm), 0).eval()
    ours = our_ssdlite.SSDLiteHead(in_channels, anchors, 5, ours_norm).eval()
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(numpy_state(ref))
    rng = np.random.default_rng(0)
    feats = [rng.standard_normal((2, c, s, s + 1)).astype(np.float32) for c, s in zip(in_channels, (6, 3, 1))]
    with torch.no_grad():
        exp = ref([torch.from_numpy(f) for f in feats])
    with engine.no_grad():
        out = ours([engine.from_numpy(f) for f in feats])
    assert list(out) == list(exp)
    for k in exp:
        assert_close(out[k].numpy(), exp[k].numpy(), rtol=1e-4, what=k)
    conv = ours.regression_head.module_list[0][1]
    assert tuple(conv.weight.shape) == (24, 8, 1, 1) and abs(float(conv.weight.std()) - 0.03) < 0.01


@pytest.mark.parametrize("trainable_layers", [0, 3, 6])
def test_mobilenet_extractor_freezes_like_torchvision(trainable_layers):
    ours_norm, ref_norm = norm_pair()
    ref = tv_ssdlite._mobilenet_extractor(torchvision.models.mobilenet_v3_large(norm_layer=ref_norm, reduced_tail=True),
                                          trainable_layers, ref_norm)
    ours = our_ssdlite._mobilenet_extractor(models.mobilenet_v3_large(norm_layer=ours_norm, reduced_tail=True),
                                            trainable_layers, ours_norm)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    assert [n for n, p in ours.named_parameters() if p.requires_grad] == \
        [n for n, p in ref.named_parameters() if p.requires_grad]


def test_mobilenet_extractor_errors():
    ours_norm, _ = norm_pair()
    backbone = models.mobilenet_v3_large(norm_layer=ours_norm)
    with pytest.raises(ValueError, match=r"trainable_layers should be in the range \[0, 6\], instead got 7"):
        our_ssdlite._mobilenet_extractor(backbone, 7, ours_norm)
    with pytest.raises(ValueError, match="backbone\\[c4_pos\\].use_res_connect should be False"):
        our_ssdlite.SSDLiteFeatureExtractorMobileNet(backbone.features, 14, ours_norm)


@pytest.fixture(scope="module")
def ssdlite_pair():
    """ssdlite320_mobilenet_v3_large in both libraries with the same random weights and norm statistics.

    The convolutions are Kaiming-initialised: the builder's N(0, 0.03) init fades the signal to nothing by the
    head, leaving every anchor the same near-uniform (tied) scores."""
    def kaiming(ref):
        for m in ref.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")

    ours, ref = builder_pair("ssdlite320_mobilenet_v3_large", prepare=kaiming, score_thresh=0.5)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    return ours, ref


def test_ssdlite320_matches_torchvision_on_photos(ssdlite_pair):
    ours, ref = ssdlite_pair
    seen_ours, seen_ref = record(ours, ["backbone", "head"]), record(ref, ["backbone", "head"])
    out, exp = run_both(ours, ref, photos())
    assert list(seen_ours["backbone"]) == list(seen_ref["backbone"]) == [str(i) for i in range(6)]
    for key in seen_ref["backbone"]:
        assert_close(seen_ours["backbone"][key].numpy(), seen_ref["backbone"][key].numpy(), rtol=1e-4,
                     what="feature " + key)
    assert_outputs_close(seen_ours["head"], seen_ref["head"], 1e-4, "head")
    assert_detections_match(out, exp, top=10)


def photo_targets():
    """Two photos and boxes in their pixels."""
    targets = [{"boxes": np.array([[50, 20, 300, 290], [300, 100, 440, 250]], np.float32), "labels": np.array([17, 3])},
               {"boxes": np.array([[250, 30, 400, 420]], np.float32), "labels": np.array([5])}]
    return photos(), targets


@pytest.mark.slow  # over a second: outside the quick subset
@pytest.mark.heavy
def test_ssdlite320_train_losses_grads_and_norm_stats_match_torchvision(ssdlite_pair):
    """In float64: train-mode BatchNorm over the 1x1 and 2x2 extra maps (2 values per channel) is too
    ill-conditioned for float32 gradients to agree beyond ~1e-2."""
    ours, ref = ssdlite_pair
    images, targets = photo_targets()
    images = [p.astype(np.float64) for p in images]
    targets = [{"boxes": t["boxes"].astype(np.float64), "labels": t["labels"]} for t in targets]
    ours.double().train(), ref.double().train()
    try:
        out, exp = run_both(ours, ref, images, targets)
        assert_losses_match(out, exp, rtol=1e-9)
        sum(exp.values()).backward()
        sum(out.values()).backward()
    finally:
        ours.float().eval(), ref.float().eval()
    ref_params = dict(ref.named_parameters())
    for name, p in ours.named_parameters():
        if np.abs(ref_params[name].grad.numpy()).max() > 1e-10:  # skip the analytically-zero ones
            assert_close(p.grad.numpy(), ref_params[name].grad.numpy(), rtol=1e-6, what=name + " grad")
    ref_buffers = dict(ref.named_buffers())
    for name, buf in ours.named_buffers():
        assert_close(buf.numpy(), ref_buffers[name].numpy(), rtol=1e-9, what=name)


class TinyBackbone(engine.nn.Module):
    """Two strided conv stages (norm, ReLU6) returning an OrderedDict of two maps."""

    def __init__(self, norm_layer):
        super().__init__()
        self.stages = engine.nn.ModuleList([
            Conv2dNormActivation(3, 8, stride=4, norm_layer=norm_layer, activation_layer=engine.nn.ReLU6),
            our_ssdlite._extra_block(8, 16, norm_layer)])

    def forward(self, x):
        out = OrderedDict()
        for i, stage in enumerate(self.stages):
            x = stage(x)
            out[str(i)] = x
        return out


def test_ssdlite_head_sgd_steps_lower_the_loss():
    engine.manual_seed(0)
    norm_layer, _ = norm_pair()
    head = our_ssdlite.SSDLiteHead([8, 16], [6, 6], 4, norm_layer)
    model = SSD(TinyBackbone(norm_layer), DefaultBoxGenerator([[2, 3], [2, 3]]), (64, 64), 4, head=head).train()
    rng = np.random.default_rng(0)
    images = [engine.from_numpy(rng.random((3, 60, 80), dtype=np.float32)) for _ in range(2)]
    targets = [{"boxes": engine.tensor([[5.0, 6.0, 40.0, 50.0]]), "labels": engine.tensor([1])},
               {"boxes": engine.tensor([[20.0, 10.0, 70.0, 55.0], [2.0, 2.0, 30.0, 20.0]]),
                "labels": engine.tensor([3, 2])}]
    losses = sgd_history(model, images, targets, 5, lr=0.05)
    assert all(b < a for a, b in zip(losses, losses[1:])) and losses[-1] < 0.95 * losses[0], losses


def test_ssdlite320_builder_arguments():
    with pytest.warns(UserWarning, match="The size of the model is already fixed; ignoring the parameter."):
        ours = our_ssdlite.ssdlite320_mobilenet_v3_large(weights_backbone=None, num_classes=4, width_mult=0.5,
                                                         size=(640, 640))
    torch.manual_seed(0)
    ref = tv_ssdlite.ssdlite320_mobilenet_v3_large(weights_backbone=None, num_classes=4, width_mult=0.5)
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    assert ours.transform.fixed_size == (320, 320)
    settings = (ours.score_thresh, ours.nms_thresh, ours.detections_per_img, ours.topk_candidates)
    assert settings == (0.001, 0.55, 300, 300)
    bn = ours.backbone.extra[0][0][1]
    assert (bn.eps, bn.momentum) == (0.001, 0.03)
    assert all(p.requires_grad for p in ours.parameters())
