"""Every CLI failure a user can cause is one ``error:`` line with its documented exit code, and nothing is
lost: converting detection and segmentation checkpoints offline, local checkpoints for segment and detect,
output paths checked before the work, convert's exit codes, several model patterns, aliases listed, and
images too elongated to resize."""
import importlib.util

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from cli_runner import check_error, run_cli

SEGMENTER = "lraspp_mobilenet_v3_large"
DETECTOR = "fasterrcnn_mobilenet_v3_large_320_fpn"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """torchvision checkpoints (random weights) of a segmenter and a detector, and a truncated file."""
    folder = tmp_path_factory.mktemp("checkpoints")
    torch.manual_seed(0)
    torch.save(torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)
               .state_dict(), folder / "lraspp.pth")
    torch.save(torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None).state_dict(), folder / "frcnn320.pth")
    (folder / "trunc.pth").write_bytes((folder / "lraspp.pth").read_bytes()[:3000])
    return folder


@pytest.mark.slow  # over a second: outside the quick subset
def test_convert_detection_and_segmentation_checkpoints_offline(checkpoints, offline, capsys, tmp_path):
    for name, model in (("frcnn320.pth", DETECTOR), ("lraspp.pth", SEGMENTER)):
        out = tmp_path / f"{name}.safetensors"
        code, stdout, err = run_cli(capsys, "convert", str(checkpoints / name), "--model", model, "-o", str(out))
        assert code == 0 and out.exists() and "wrote" in stdout, err


@pytest.mark.slow  # over a second: outside the quick subset
def test_segment_and_detect_take_a_local_checkpoint(checkpoints, offline, capsys, tmp_path):
    code, out, err = run_cli(capsys, "segment", "chelsea.png", "--model", SEGMENTER, "--weights",
                             str(checkpoints / "lraspp.pth"), "-o", str(tmp_path / "mask.png"))
    assert code == 0 and (tmp_path / "mask.png").exists() and "overlay written" in out, err
    code, out, err = run_cli(capsys, "detect", "chelsea.png", "--model", DETECTOR, "--weights",
                             str(checkpoints / "frcnn320.pth"), "-o", str(tmp_path / "boxes.jpg"))
    assert code == 0 and (tmp_path / "boxes.jpg").exists() and "detections with score" in out, err
    check_error(run_cli(capsys, "detect", "chelsea.png", "--model", DETECTOR, "--weights", "nowhere/frcnn.pth"), 3,
                r"checkpoint file not found: 'nowhere/frcnn\.pth'")
    check_error(run_cli(capsys, "segment", "chelsea.png", "--model", SEGMENTER, "--weights",
                        str(checkpoints / "frcnn320.pth")), 6, r"does not fit lraspp_mobilenet_v3_large: \d+ missing")


def test_output_paths_are_checked_before_the_work(checkpoints, offline, capsys, tmp_path):
    check_error(run_cli(capsys, "segment", "chelsea.png", "-o", "/nonexistent/dir/x.png"), 3,
                r"-o /nonexistent/dir/x\.png: the folder '/nonexistent/dir' does not exist")
    check_error(run_cli(capsys, "detect", "chelsea.png", "-o", "out.txt"), 2, r"-o out\.txt: not an image file name")
    check_error(run_cli(capsys, "convert", str(checkpoints / "lraspp.pth"), "--model", SEGMENTER, "-o",
                        "/nonexistent/x.safetensors"), 3, r"the folder '/nonexistent' does not exist")


def test_convert_exit_codes(checkpoints, offline, capsys, monkeypatch, tmp_path):
    check_error(run_cli(capsys, "convert", "missing.pth", "--model", SEGMENTER), 3,
                r"checkpoint file not found: 'missing\.pth'")
    check_error(run_cli(capsys, "convert", str(checkpoints / "trunc.pth"), "--model", SEGMENTER), 6,
                r"cannot read '.*trunc\.pth' as a checkpoint")
    check_error(run_cli(capsys, "convert", str(checkpoints / "lraspp.pth"), "--model", DETECTOR), 6,
                r"does not fit fasterrcnn_mobilenet_v3_large_320_fpn: \d+ missing keys \(.*\); \d+ unexpected keys")
    check_error(run_cli(capsys, "convert", str(checkpoints / "lraspp.pth"), "--model", "lraspp_mobilenet"), 5,
                r"Unknown model 'lraspp_mobilenet'")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a))
    out = tmp_path / "never.safetensors"
    check_error(run_cli(capsys, "convert", str(checkpoints / "lraspp.pth"), "--model", SEGMENTER, "--verify", "-o",
                        str(out)), 9, r"--verify compares with torchvision, which is not installed")
    assert not out.exists()


def test_thresholds_are_usage_errors(capsys):
    check_error(run_cli(capsys, "segment", "chelsea.png", "--alpha", "3"), 2, r"--alpha: must be in \[0, 1\], got 3")
    check_error(run_cli(capsys, "detect", "chelsea.png", "--score", "2"), 2, r"--score: must be in \[0, 1\], got 2")
    check_error(run_cli(capsys, "segment", "chelsea.png", "extra"), 2,
                r"^flowvision segment: error: unrecognized arguments: extra")


def test_models_takes_several_patterns_and_lists_aliases(capsys):
    code, out, err = run_cli(capsys, "models", "fcn", "deeplab", "lraspp")
    assert code == 0, err
    names = [line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith("*")]
    assert {"fcn_resnet50", "deeplabv3_resnet50", "lraspp_mobilenet_v3_large"} <= set(names)
    assert all(n.startswith(("fcn", "deeplab", "lraspp")) for n in names)
    rows = {line.split()[0]: " ".join(line.split()[1:]) for line in out.splitlines()[1:-1]}
    assert rows["deeplabv3_resnet50_coco"] == "alias of deeplabv3_resnet50"
    assert out.splitlines()[-1].startswith("* the default weights")
    check_error(run_cli(capsys, "models", "fcm", "lrasp_x"), 5, r"no model matches 'fcm' or 'lrasp_x'")


def test_images_too_elongated_to_resize_are_refused(capsys, tmp_path):
    Image.fromarray(np.zeros((1, 20000, 3), np.uint8)).save(tmp_path / "strip.png")
    check_error(run_cli(capsys, "classify", str(tmp_path / "strip.png"), "--model", "resnet18"), 4,
                r"cannot classify '.*strip\.png': a 20000x1 image resized to a short side of 256 would be "
                r"5120000x256, over 67,108,864 pixels: crop it first")


def test_offline_corrupt_cache_file_is_moved_aside(offline, capsys, tmp_path):
    from flowvision.models import ResNet18_Weights

    placed = tmp_path / "cache" / "checkpoints" / ResNet18_Weights.IMAGENET1K_V1.value.record["file_name"]
    placed.parent.mkdir(parents=True)
    placed.write_bytes(b"not the checkpoint")
    check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18"), 8,
                rf"the resnet18 weights .* are corrupt: {placed} is corrupt \(sha256 \w+, expected f37072fd\) and "
                rf"FLOWVISION_OFFLINE is set: it was moved to {placed}\.corrupt; download https://\S+ and place it at")
    assert (tmp_path / "cache" / "checkpoints" / (placed.name + ".corrupt")).read_bytes() == b"not the checkpoint"
