"""Published detection weights: loading served checkpoints, fine-tuning class counts, legacy eps, argument rules."""
import numpy as np
import pytest
import torch
import torchvision

import flowvision.models.detection as det
from flowvision import hub
from flowvision.models import weights as W
from flowvision.models.detection._builder import resolve_detection_args
from flowvision.ops.misc import FrozenBatchNorm2d
from http_server import FileServer
from weights_server import serve_weights

pytestmark = pytest.mark.slow  # detector checkpoints built and loaded: about 3.3 s of the quick subset

MODEL = "fasterrcnn_mobilenet_v3_large_320_fpn"
FILE_NAME = "fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9.pth"
PREDICTOR = "roi_heads.box_predictor."


@pytest.fixture(scope="module")
def reference_state():
    torch.manual_seed(3)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None)
    return model.state_dict()


@pytest.fixture
def served(tmp_path, monkeypatch, reference_state):
    """The reference's weights served under the manifest's file name; ``overlay(**fields)`` edits the record."""
    checkpoint = tmp_path / "detector.pth"
    torch.save(reference_state, checkpoint)
    with FileServer() as server:
        def overlay(**fields):
            serve_weights(monkeypatch, server, tmp_path, MODEL, "COCO_V1", FILE_NAME, checkpoint.read_bytes(), **fields)

        overlay()
        yield overlay
    hub.set_dir(None)


def _numpy(state):
    """A state_dict as numpy arrays, without BatchNorm's step counters (FrozenBatchNorm2d has none)."""
    return {k: v.detach().numpy() if hasattr(v, "detach") else np.asarray(v) for k, v in state.items()
            if not k.endswith("num_batches_tracked")}


def test_pretrained_loads_every_tensor(served, reference_state):
    model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights="DEFAULT")
    ours, ref = _numpy(model.state_dict()), _numpy(reference_state)
    assert list(ours) == list(ref)
    for key in ref:
        np.testing.assert_array_equal(ours[key], ref[key], err_msg=key)
    assert all(m.eps == 1e-5 for m in model.modules() if isinstance(m, FrozenBatchNorm2d))


def test_fine_tuning_keeps_all_but_the_class_layers(served, reference_state):
    """A new class count: backbone, RPN and box head load; the class-dependent predictor stays fresh, with a warning."""
    with pytest.warns(UserWarning, match=r"except the classifier \(roi_heads\.box_predictor\.bbox_pred\.bias, "
                                         r".*cls_score\.weight\).*91 classes and the model's class layers another"):
        model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights="COCO_V1", num_classes=5)
    ours, ref = _numpy(model.state_dict()), _numpy(reference_state)
    assert ours[PREDICTOR + "cls_score.weight"].shape == (5, 1024)
    assert ours[PREDICTOR + "bbox_pred.weight"].shape == (20, 1024)
    for key in ref:
        if not key.startswith(PREDICTOR):
            np.testing.assert_array_equal(ours[key], ref[key], err_msg=key)


def test_manifest_eps_is_applied_after_loading(served):
    """Checkpoints trained with FrozenBatchNorm eps=0 (torchvision's overwrite_eps) get it from the manifest."""
    served(frozen_bn_eps=0.0)
    model = det.fasterrcnn_mobilenet_v3_large_320_fpn(weights="DEFAULT")
    frozen = [m for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    assert frozen and all(m.eps == 0.0 for m in frozen)


def test_manifest_eps_records_match_torchvision_overwrite_eps():
    """Exactly the checkpoints torchvision loads with overwrite_eps(model, 0.0) carry frozen_bn_eps=0."""
    legacy = {("fasterrcnn_resnet50_fpn", "COCO_V1"), ("maskrcnn_resnet50_fpn", "COCO_V1"),
              ("keypointrcnn_resnet50_fpn", "COCO_V1"), ("retinanet_resnet50_fpn", "COCO_V1")}
    marked = {(name, tag.name) for name in W.list_pretrained() for tag in W.get_model_weights(name)
              if tag.meta.get("frozen_bn_eps") is not None}
    assert marked == legacy


def test_weights_arguments():
    weights, num_classes, backbone = resolve_detection_args(MODEL, True, None, None, "IMAGENET1K_V1")
    assert (weights, num_classes, backbone) == (W.get_model_weights(MODEL).COCO_V1, 91, None)
    assert resolve_detection_args(MODEL, False, None, None, "IMAGENET1K_V1") == (None, 91, "IMAGENET1K_V1")
    assert resolve_detection_args(MODEL, False, None, 3, None, pretrained_backbone=True) == (None, 3, "IMAGENET1K_V1")
    keypoints = resolve_detection_args("keypointrcnn_resnet50_fpn", False, "COCO_V1", None, None)
    assert keypoints[1] == 2
    with pytest.raises(ValueError, match="unknown weights 'COCO_V9'"):
        resolve_detection_args(MODEL, False, "COCO_V9", None, None)
