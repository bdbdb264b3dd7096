"""flowvision detect: detections vs torchvision on served random weights, drawing boxes/masks/keypoints, errors."""
import os
import re

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torchvision.transforms.functional import pil_to_tensor

from flowvision import hub
from flowvision.cli.classify import ASSETS_DIR
from flowvision.cli.detect import draw
from cli_runner import check_error, run_cli
from weights_server import serving_checkpoint

# command-line runs in fresh Python processes (about 1 s each): outside the quick subset (-m "not slow")
pytestmark = pytest.mark.slow

MODEL = "fasterrcnn_mobilenet_v3_large_320_fpn"
FILE_NAME = "fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9.pth"
CHELSEA = os.path.join(ASSETS_DIR, "chelsea.png")
CATEGORIES = torchvision.models.detection.FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.COCO_V1.meta["categories"]
SCORE = 0.8  # a threshold in a clear gap of the reference's scores on chelsea.png


def _randomized_detector():
    """A seeded torchvision detector with random BN statistics and a widened class layer (spread scores).

    Its BN eps is the FrozenBatchNorm2d default that the pretrained build of flowvision uses.
    """
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
                module.eps = 1e-5
        model.roi_heads.box_predictor.cls_score.weight.mul_(300)
    return model.eval()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The detector's weights served from a local HTTP server under the manifest's file name; an empty cache."""
    tmp = tmp_path_factory.mktemp("cli_detect")
    reference = _randomized_detector()
    # no chelsea.png in the working directory: the shipped photo is used
    with serving_checkpoint(tmp, reference, MODEL, "COCO_V1", FILE_NAME) as (server, _):
        yield reference, server, tmp


def _parse(out):
    """[(label, score, [x1, y1, x2, y2]), ...] from detect's table."""
    rows = []
    for line in out.splitlines()[2:]:
        fields = line.split()
        if line.startswith("  ") and len(fields) >= 6:
            rows.append((" ".join(fields[1:-4]), float(fields[0]), [float(v) for v in fields[-4:]]))
    return rows


def _expected(reference, path, min_score):
    """torchvision's detections on ``path`` scoring at least ``min_score``: (label name, score, box)."""
    image = pil_to_tensor(Image.open(path).convert("RGB")).float() / 255
    with torch.no_grad():
        result = reference([image])[0]
    scores = result["scores"].numpy()
    assert np.abs(scores - min_score).min() > 5e-3, "the threshold is too close to a score"
    keep = scores >= min_score
    return [(CATEGORIES[label], score, box) for label, score, box in
            zip(result["labels"][keep].tolist(), scores[keep].tolist(), result["boxes"][keep].tolist())]


def test_detect_matches_torchvision(served, capsys):
    reference, server, tmp = served
    code, out, err = run_cli(capsys, "detect", "chelsea.png", "--model", MODEL, "--score", str(SCORE))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == CHELSEA and lines[1].split() == ["score", "label", "x1", "y1", "x2", "y2"]
    rows, expected = _parse(out), _expected(reference, CHELSEA, SCORE)
    assert len(expected) >= 3 and len(rows) == len(expected)
    assert lines[-1] == f"{len(expected)} detections with score >= {SCORE}; drawn to chelsea_boxes.png"
    assert [r[1] for r in rows] == sorted((r[1] for r in rows), reverse=True)
    for (label, score, box), (want_label, want_score, want_box) in zip(rows, expected):
        assert label == want_label
        assert abs(score - want_score) < 1e-3
        assert np.abs(np.subtract(box, want_box)).max() < 0.1
    assert FILE_NAME in err  # the download's progress bar
    drawn = Image.open(tmp / "chelsea_boxes.png")
    original = Image.open(CHELSEA).convert("RGB")
    assert drawn.size == original.size and drawn.mode == "RGB"
    changed = np.any(np.asarray(drawn) != np.asarray(original), axis=2)
    x1, y1, x2, y2 = (int(round(v)) for v in expected[0][2])
    assert changed[y1:y2 + 1, min(x1 + 1, x2)].any() and changed.mean() < 0.5  # box outlines, not a repaint


def test_detect_output_path_and_cache(served, capsys, tmp_path):
    _, server, _ = served
    requests = len(server.requests)
    output = tmp_path / "boxes.png"
    code, out, err = run_cli(capsys, "detect", CHELSEA, "--model", MODEL, "--weights", "COCO_V1", "--score", "1", "-o",
                          str(output))
    assert code == 0, err
    assert out.splitlines()[-1] == f"0 detections with score >= 1.0; drawn to {output}"
    assert np.array_equal(np.asarray(Image.open(output)), np.asarray(Image.open(CHELSEA).convert("RGB")))
    assert len(server.requests) == requests  # read from the cache


def _synthetic(height, width):
    """Two detections with a mask each and three keypoints each, as the CLI's detect() returns them."""
    masks = np.zeros((2, 1, height, width), dtype=np.float32)
    masks[0, 0, 10:40, 20:60] = 0.9
    masks[1, 0, 50:90, 70:110] = 0.7
    masks[1, 0, 50:90, 110:120] = 0.3  # below the mask threshold: not drawn
    keypoints = np.array([[[30, 20, 1], [50, 30, 1], [40, 35, 1]],
                          [[80, 60, 1], [100, 70, 1], [90, 85, 1]]], dtype=np.float32)
    return {"boxes": np.array([[20, 10, 59, 39], [70, 50, 109, 89]], dtype=np.float32),
            "labels": np.array([17, 18]), "scores": np.array([0.9, 0.8], dtype=np.float32),
            "masks": masks, "keypoints": keypoints}


def test_draw_masks_and_keypoints():
    image = Image.fromarray(np.full((100, 130, 3), 200, dtype=np.uint8))
    detections = _synthetic(100, 130)
    drawn = np.asarray(draw(image, detections, CATEGORIES)).astype(int)
    assert drawn.shape == (100, 130, 3)
    assert (drawn[25, 40] != 200).any() and (drawn[70, 90] != 200).any()  # inside each mask
    assert (drawn[70, 115] == 200).all()  # mask value under the threshold
    assert (drawn[5, 5] == 200).all() and (drawn[95, 125] == 200).all()  # outside everything
    assert tuple(drawn[30, 50]) == (255, 0, 0)  # a keypoint, drawn red on top
    no_extras = {k: v for k, v in detections.items() if k not in ("masks", "keypoints")}
    boxes_only = np.asarray(draw(image, no_extras, CATEGORIES)).astype(int)
    assert (boxes_only[25, 40] == 200).all() and (boxes_only[10, 30] != 200).any()  # only the box outline
    empty = {k: v[:0] for k, v in detections.items()}
    assert draw(image, empty, CATEGORIES) is image


def test_error_paths(served, capsys):
    _, server, _ = served
    requests = len(server.requests)
    check_error(run_cli(capsys, "detect", "missing.png", "--model", MODEL), 3, r"image file not found: 'missing\.png'")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", "fasterrcnn_resnet5_fpn"), 5,
           r"Unknown model 'fasterrcnn_resnet5_fpn'")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", "resnet18"), 5,
           r"resnet18 is not a pretrained detection model; choose one of fasterrcnn_resnet50_fpn, .*"
           r"maskrcnn_resnet50_fpn, .*keypointrcnn_resnet50_fpn, .*ssdlite320_mobilenet_v3_large")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", "deeplabv3_resnet50"), 5,
           r"not a pretrained detection model")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", MODEL, "--weights", "COCO_V9"), 6,
           r"bad --weights: unknown weights 'COCO_V9' for fasterrcnn_mobilenet_v3_large_320_fpn: choose from COCO_V1")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--score", "1.5"), 2, r"--score: must be in \[0, 1\], got 1\.5")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--score", "-0.1"), 2, r"--score: must be in \[0, 1\]")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--score", "high"), 2, r"--score: not a number: 'high'")
    assert len(server.requests) == requests


def test_offline_without_cache(served, capsys, tmp_path, monkeypatch):
    _, server, _ = served
    monkeypatch.setenv(hub.ENV_HOME, str(tmp_path / "empty-home"))
    monkeypatch.setenv(hub.ENV_OFFLINE, "1")
    path = os.path.join(tmp_path, "empty-home", "checkpoints", FILE_NAME)
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", MODEL), 7,
           rf"FLOWVISION_OFFLINE is set and the {MODEL} weights .*COCO_V1 are not in the cache: "
           rf"download {re.escape(server.url(FILE_NAME))} and place it at {re.escape(path)}")
    assert not os.path.exists(path)


def test_help_lists_detect(capsys):
    code, out, _ = run_cli(capsys, "detect", "--help")
    assert code == 0 and out.startswith("usage: flowvision detect") and "--score" in out
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "    detect " in out
