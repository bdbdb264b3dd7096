"""flowvision export: files from published weights (served locally), a local checkpoint and random weights,
checked with onnx.checker and run in ONNX Runtime against torchvision and our eager outputs; --check's
report; and the one-line errors with their exit codes."""
import numpy as np
import pytest
import torch
import torchvision

from cli_runner import check_error, run_cli
from onnx_check import onnx, run_onnx
from weights_server import serving_checkpoint

# command-line runs in fresh Python processes (about 1 s each): outside the quick subset (-m "not slow")
pytestmark = pytest.mark.slow

FILE_NAME = "resnet18-f37072fd.pth"


def _randomized_resnet18():
    """A seeded torchvision resnet18 with random BN statistics."""
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    return model


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """resnet18 weights served from a local HTTP server under the manifest's file name; an empty cache."""
    reference = _randomized_resnet18()
    with serving_checkpoint(tmp_path_factory.mktemp("cli_export"), reference, "resnet18", "IMAGENET1K_V1",
                            FILE_NAME) as (server, checkpoint):
        yield reference, checkpoint


def _images(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.slow  # whole-model export and runs
def test_export_published_weights_matches_torchvision(served, capsys, tmp_path):
    reference, _ = served
    path = tmp_path / "resnet18.onnx"
    code, out, err = run_cli(capsys, "export", "resnet18", "-o", str(path), "--input-size", "1x3x67x75",
                             "--dynamic-batch", "--check")
    assert code == 0, err
    assert f"resnet18 (classification) exported to {path}" in out and "(dynamic batch)" in out
    assert "inputs: input; outputs: output" in out
    report = float(out.split("largest difference from the engine: output ")[1].split()[0])
    assert report < 1e-4
    onnx.checker.check_model(onnx.load(str(path)))
    x = _images(0, 3, 3, 67, 75)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(run_onnx(path.read_bytes(), {"input": x})[0], expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow  # whole-model export and runs
def test_export_local_checkpoint_and_opset(served, capsys, tmp_path):
    reference, checkpoint = served
    path = tmp_path / "local.onnx"
    code, out, err = run_cli(capsys, "export", "resnet18", "-o", str(path), "--weights", str(checkpoint),
                             "--input-size", "2x3x33x41", "--opset", "13")
    assert code == 0, err
    model = onnx.load(str(path))
    assert model.opset_import[0].version == 13
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 33, 41]
    x = _images(1, 2, 3, 33, 41)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(run_onnx(path.read_bytes(), {"input": x})[0], expected, rtol=1e-4, atol=1e-4)


def test_export_segmentation_with_random_weights(capsys, tmp_path):
    path = tmp_path / "lraspp.onnx"
    code, out, err = run_cli(capsys, "export", "lraspp_mobilenet_v3_large", "-o", str(path), "--weights", "none",
                             "--input-size", "1x3x61x53", "--dynamic-batch", "--check")
    assert code == 0, err
    assert "inputs: input; outputs: out" in out
    assert float(out.split("largest difference from the engine: out ")[1].split()[0]) < 1e-4
    assert onnx.load(str(path)).graph.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"


def test_export_detector_takes_a_list_of_images(capsys, tmp_path):
    path = tmp_path / "ssdlite.onnx"
    code, out, err = run_cli(capsys, "export", "ssdlite320_mobilenet_v3_large", "-o", str(path), "--weights", "none",
                             "--input-size", "2x3x71x67")
    assert code == 0, err
    assert "(detection)" in out and "inputs: image_0, image_1; outputs: boxes_0, scores_0, labels_0, boxes_1" in out
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [d.dim_value for d in model.graph.input[1].type.tensor_type.shape.dim] == [3, 71, 67]


def test_help_lists_export(capsys):
    code, out, _ = run_cli(capsys, "--help")
    assert code == 0 and "export" in out and "Export a model to ONNX" in out


def test_error_paths(capsys, tmp_path, monkeypatch):
    path = str(tmp_path / "m.onnx")
    check_error(run_cli(capsys, "export", "resnet1000", "-o", path), 5, "resnet1000")
    check_error(run_cli(capsys, "export", "resnet18", "-o", str(tmp_path / "no" / "m.onnx")), 3, "does not exist")
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--input-size", "1x3x224"), 2,
                r"expected NxCxHxW with positive integers")
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--opset", "9", "--weights", "none"), 2,
                r"--opset 9: the exporter writes ONNX opsets 13 to 21")
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--weights", "missing.pth"), 3,
                "checkpoint file not found")
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--weights", "NOPE"), 6, "bad --weights")
    check_error(run_cli(capsys, "export", "ssdlite320_mobilenet_v3_large", "-o", path, "--weights", "none",
                        "--dynamic-batch"), 2, "--dynamic-batch: a detector takes a list of images")
    check_error(run_cli(capsys, "export", "r3d_18", "-o", path, "--weights", "none"), 9,
                r"r3d_18 takes clips \(N, C, T, H, W\), not the NxCxHxW batch .* engine\.onnx\.export")
    check_error(run_cli(capsys, "export", "raft_small", "-o", path, "--weights", "none"), 9,
                r"raft_small takes pairs of images")


def test_missing_packages_exit_9(capsys, tmp_path, monkeypatch):
    path = str(tmp_path / "m.onnx")
    monkeypatch.setitem(__import__("sys").modules, "onnxruntime", None)
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--weights", "none", "--check"), 9,
                r"export --check needs the 'onnxruntime' package.*pip install flowvision\[onnx\]")
    monkeypatch.setitem(__import__("sys").modules, "onnx", None)
    check_error(run_cli(capsys, "export", "resnet18", "-o", path, "--weights", "none"), 9,
                r"export needs the 'onnx' package.*pip install flowvision\[onnx\]")


def test_unexportable_model_exits_1_naming_the_op(capsys, tmp_path, monkeypatch):
    from engine.nn.functional.conv import ConvNd
    from engine.onnx import table

    monkeypatch.delitem(table.CONVERTERS, table.op_key(ConvNd))
    check_error(run_cli(capsys, "export", "resnet18", "-o", str(tmp_path / "m.onnx"), "--weights", "none",
                        "--input-size", "1x3x32x32"), 1,
                r"no ONNX mapping for op 'ConvNd' .* called in module 'conv1' \(Conv2d\) at ONNX opset 17")
