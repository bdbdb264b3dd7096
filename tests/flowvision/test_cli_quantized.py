"""``flowvision classify`` with a quantized model: its published int8 weights build the int8 model, whose top-k
classes are torchvision's quantized model's on the same image; the GPU, nn.Graph and ONNX export are refused in
one line each."""
import os

import numpy as np
import pytest
import torch
import torchvision.models.quantization as tvq
from cli_runner import check_error, run_cli
from PIL import Image
from weights_server import serving_checkpoint

from flowvision.cli import EXIT_UNAVAILABLE

# a whole quantized model calibrated, served and run: outside the quick subset
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]
IMAGE = os.path.join(os.path.dirname(__file__), "..", "data", "images", "coffee.png")


@pytest.fixture(scope="module")
def served_resnet18(tmp_path_factory):
    """torchvision's quantized resnet18 (seeded, calibrated by torchvision) served as the published weights."""
    before = torch.backends.quantized.engine
    torch.manual_seed(0)
    reference = tvq.resnet18(weights=None, quantize=True).eval()
    with serving_checkpoint(tmp_path_factory.mktemp("quantized"), reference, "quantized_resnet18",
                            "IMAGENET1K_FBGEMM_V1", "quantized/resnet18_fbgemm_16fa66dd.pth") as (server, _):
        yield reference
    torch.backends.quantized.engine = before


def test_classify_runs_the_int8_model(served_resnet18, capsys):
    code, out, err = run_cli(capsys, "classify", IMAGE, "--model", "quantized_resnet18", "--topk", "3")
    assert code == 0, err
    assert "device: cpu" in err  # int8 models run on the CPU, whatever is available
    preprocess = tvq.ResNet18_QuantizedWeights.DEFAULT.transforms()
    image = torch.from_numpy(np.asarray(Image.open(IMAGE).convert("RGB"))).permute(2, 0, 1)
    torch.backends.quantized.engine = "fbgemm"
    with torch.no_grad():
        probabilities = torch.softmax(served_resnet18(preprocess(image)[None]).double()[0], 0)
    values, indices = probabilities.topk(3)
    rows = [line.split() for line in out.splitlines()[-3:]]
    assert [int(row[2]) for row in rows] == indices.tolist()
    assert np.allclose([float(row[1]) for row in rows], values.numpy(), atol=1e-5)


def test_the_gpu_graph_and_export_are_refused(served_resnet18, capsys, tmp_path):
    check_error(run_cli(capsys, "classify", IMAGE, "--model", "quantized_resnet18", "--device", "cuda"),
                EXIT_UNAVAILABLE, "int8 quantized models run on the CPU only")
    check_error(run_cli(capsys, "classify", IMAGE, "--model", "quantized_resnet18", "--graph"),
                EXIT_UNAVAILABLE, "does not trace int8 models")
    check_error(run_cli(capsys, "export", "quantized_resnet18", "-o", str(tmp_path / "q.onnx")),
                EXIT_UNAVAILABLE, "int8 model, which has no ONNX export")
