"""The flowvision command: classify vs torchvision on served weights, models listing, every error path, delegation."""
import os
import subprocess
import sys

import pytest
import torch
import torchvision
from PIL import Image

import engine
from flowvision import hub
from flowvision.cli import bench as bench_cli
from flowvision.cli.classify import ASSETS_DIR
from flowvision.models import list_models
from flowvision.models import weights as W
from cli_runner import check_error, run_cli
from weights_server import serving_checkpoint

# command-line runs in fresh Python processes (about 1 s each): outside the quick subset (-m "not slow")
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COFFEE = os.path.join(REPO, "tests", "data", "images", "coffee.png")
CHELSEA = os.path.join(ASSETS_DIR, "chelsea.png")
FILE_NAME = "resnet18-f37072fd.pth"


def _randomized_resnet18(num_classes=1000):
    """A seeded torchvision resnet18 with random BN statistics and a widened classifier (clear top-k gaps)."""
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=num_classes).eval()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 1.5)
        model.fc.weight.mul_(5)
    return model


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """resnet18 weights served from a local HTTP server under the manifest's file name; an empty cache."""
    reference = _randomized_resnet18()
    # no chelsea.png in the working directory: the shipped photo is used
    with serving_checkpoint(tmp_path_factory.mktemp("cli"), reference, "resnet18", "IMAGENET1K_V1",
                            FILE_NAME) as (server, checkpoint):
        yield reference, server, checkpoint


def _expected(reference, path, k):
    """(class index, probability) of torchvision's top-k on ``path`` preprocessed by torchvision."""
    x = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.transforms()(Image.open(path).convert("RGB"))
    with torch.no_grad():
        logits = reference(x[None]).double()[0]
    top, indices = logits.topk(k + 1)
    assert (top[:-1] - top[1:]).min() > 1e-3, "the reference's top-k is too close to call"
    return indices[:k].tolist(), torch.softmax(logits, 0)[indices[:k]].tolist()


def _parse(out):
    """{image path: [(class index, probability, name), ...]} from classify's output."""
    results, current = {}, None
    for line in out.splitlines()[1:]:
        fields = line.split()
        if not line.startswith(" "):
            current = results.setdefault(line, [])
        elif fields[0].isdigit():
            current.append((int(fields[2]), float(fields[1]), " ".join(fields[3:])))
    return results


def _check_against(reference, results, paths, k):
    """Every image's printed top-k equals torchvision's: same classes, probabilities within 1e-4."""
    categories = torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"]
    assert list(results) == paths
    for path in paths:
        indices, values = _expected(reference, path, k)
        assert [r[0] for r in results[path]] == indices
        assert max(abs(r[1] - v) for r, v in zip(results[path], values)) < 1e-4
        assert [r[2] for r in results[path]] == [categories[i] for i in indices]


def test_classify_matches_torchvision(served, capsys):
    reference, server, _ = served
    code, out, err = run_cli(capsys, "classify", "chelsea.png", COFFEE, "--model", "resnet18", "--topk", "3",
                          "--batch-size", "1")
    assert code == 0, err
    assert out.splitlines()[0] == "resnet18 with ResNet18_Weights.IMAGENET1K_V1"
    _check_against(reference, _parse(out), [CHELSEA, COFFEE], 3)
    assert FILE_NAME in err and "classifying" in err  # progress bars: the download, then the batches
    code, out, _ = run_cli(capsys, "classify", "chelsea", "--model", "resnet18", "--weights", "IMAGENET1K_V1")
    assert code == 0
    _check_against(reference, _parse(out), [CHELSEA], 5)
    assert len(server.requests) == 1  # the second run read the cache


@pytest.mark.slow  # over a second: outside the quick subset
def test_classify_local_checkpoints(served, capsys, tmp_path):
    reference, _, checkpoint = served
    converted = tmp_path / "resnet18.safetensors"
    code, out, err = run_cli(capsys, "convert", str(checkpoint), "--model", "resnet18", "-o", str(converted))
    assert code == 0 and "wrote" in out, err
    code, out, err = run_cli(capsys, "classify", COFFEE, "--model", "resnet18", "--weights", str(converted), "--topk", "4")
    assert code == 0, err
    assert out.splitlines()[0] == f"resnet18 with {converted}"
    _check_against(reference, _parse(out), [COFFEE], 4)
    ten = _randomized_resnet18(num_classes=10)
    torch.save({"state_dict": ten.state_dict()}, tmp_path / "ten.pth")
    code, out, err = run_cli(capsys, "classify", COFFEE, "--model", "resnet18", "--weights", str(tmp_path / "ten.pth"),
                          "--topk", "20")
    assert code == 0, err
    rows = _parse(out)[COFFEE]
    indices, _ = _expected(ten, COFFEE, 9)
    assert len(rows) == 10 and [r[0] for r in rows[:9]] == indices
    assert rows[0][2] == f"class {indices[0]}"


def test_graph_flag(served, capsys):
    if not hasattr(engine.nn, "Graph"):
        check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18", "--graph"), 9,
               r"--graph needs engine\.nn\.Graph")
        return
    reference = served[0]
    code, out, err = run_cli(capsys, "classify", "chelsea.png", COFFEE, "--model", "resnet18", "--graph", "--topk", "3")
    assert code == 0, err
    _check_against(reference, _parse(out), [CHELSEA, COFFEE], 3)


def test_models_listing(capsys):
    code, out, _ = run_cli(capsys, "models", "resnet1[0-9]", "resnet1[0-9][0-9]")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["model", "weights", "acc@1", "acc@5", "params", "(M)", "other", "metrics"]
    assert lines[1].split() == ["resnet18", "IMAGENET1K_V1", "*", "69.758", "89.078", "11.7"]
    assert {line.split()[0] for line in lines[1:-1]} == {"resnet18", "resnet101", "resnet152"}
    assert lines[-1].startswith("* the default weights")
    assert ["resnet101", "IMAGENET1K_V1", "77.374", "93.546", "44.5"] in [line.split() for line in lines]
    code, out, _ = run_cli(capsys, "models", "wide_resnet", "--pretrained")  # no wildcard: names containing it
    rows = [line.split() for line in out.splitlines()[1:-1]]
    tags = {"wide_resnet50_2": ["IMAGENET1K_V1", "IMAGENET1K_V2", "RACM_IN1K", "TV2_IN1K", "TV_IN1K"],  # and timm's
            "wide_resnet101_2": ["IMAGENET1K_V1", "IMAGENET1K_V2", "TV_IN1K", "TV2_IN1K"]}
    assert code == 0 and [r[:2] for r in rows] == [[name, tag] for name, names in tags.items() for tag in names]
    assert rows[1][2:6] == ["*", "81.602", "95.758", "68.9"]
    code, out, _ = run_cli(capsys, "models")
    assert code == 0 and {line.split()[0] for line in out.splitlines()[1:-1]} == set(list_models())
    code, out, _ = run_cli(capsys, "models", "--pretrained")
    assert all(line.split()[1] != "-" for line in out.splitlines()[1:-1])
    check_error(run_cli(capsys, "models", "resnt50"), 5, r"no model matches 'resnt50'\. Did you mean: resnet50")
    code, out, _ = run_cli(capsys, "models", "r3d_18")  # a video model's accuracies are Kinetics-400's
    assert code == 0 and out.splitlines()[1].split() == ["r3d_18", "KINETICS400_V1", "*", "63.200", "83.479", "33.4",
                                                         "accuracies", "on", "Kinetics-400"]
    code, out, _ = run_cli(capsys, "models", "raft_small")  # optical flow: end-point errors, no accuracies
    row = out.splitlines()[2]
    assert code == 0 and row.split()[:6] == ["raft_small", "C_T_V2", "*", "-", "-", "1.0"] and "epe 1.9901" in row


def test_error_paths(served, capsys, tmp_path):
    (tmp_path / "bad.png").write_bytes(b"not an image")
    (tmp_path / "bad.pth").write_bytes(b"not a checkpoint")
    (tmp_path / "truncated.png").write_bytes(open(CHELSEA, "rb").read()[:5000])
    cases = [
        (["classify", "missing.png"], 3, r"image file not found: 'missing\.png' \(shipped samples: chelsea\.png\)"),
        (["classify", str(tmp_path)], 3, r"is a directory, not an image file"),
        (["classify", str(tmp_path / "bad.png"), "--model", "resnet18"], 4, r"cannot read '.*bad\.png' as an image"),
        (["classify", str(tmp_path / "truncated.png"), "--model", "resnet18"], 4, r"truncated\.png' as an image"),
        (["classify", "chelsea.png", "--model", "resnet19"], 5, r"Unknown model 'resnet19'\. Did you mean: resnet18"),
        (["classify", "chelsea.png", "--model", "resnet18", "--weights", "IMAGENET1K_V9"], 6,
         r"bad --weights: unknown weights 'IMAGENET1K_V9' for resnet18: "
         r"choose from IMAGENET1K_V1, A1_IN1K, .*, DEFAULT"),
        (["classify", "chelsea.png", "--model", "resnet18", "--weights", "nowhere/r18.pth"], 3,
         r"checkpoint file not found: 'nowhere/r18\.pth'"),
        (["classify", "chelsea.png", "--model", "resnet18", "--weights", str(tmp_path / "bad.pth")], 6,
         r"cannot read '.*bad\.pth' as a checkpoint"),
        (["classify", "chelsea.png", "--model", "resnet34", "--weights", str(served[2])], 6,
         r"does not fit resnet34: \d+ missing keys \(layer1\.2\.conv1\.weight"),
        (["convert", str(served[2]), "--model", "resnet19"], 5, r"Unknown model 'resnet19'"),
        (["classify", "chelsea.png", "--model", "raft_small"], 5,
         r"raft_small is not an image classifier \(Raft_Small_Weights\.C_T_V2 report Sintel-Train-Cleanpass"),
        (["classify", "chelsea.png", "--model", "vit_so400m_patch14_siglip_378"], 5,
         r"vit_so400m_patch14_siglip_378 with \w+\.V2_WEBLI gives pooled features, not classes; pass --weights"),
        (["classify", "chelsea.png", "--model", "vit_base_patch16_clip_224", "--weights", "openai"], 5,
         r"vit_base_patch16_clip_224 with \w+\.OPENAI gives 512-wide image embeddings, not classes"),
    ]
    not_classifier = next((m for m in W.list_pretrained() if "acc@1" not in str(W.get_model_weights(m).DEFAULT.meta)), None)
    if not_classifier:  # e.g. a segmentation model
        cases.append((["classify", "chelsea.png", "--model", not_classifier], 5, f"{not_classifier} is not an image classifier"))
    no_weights = next((m for m in list_models() if m not in W.list_pretrained()), None)
    if no_weights:
        cases.append((["classify", "chelsea.png", "--model", no_weights], 6,
                      f"{no_weights} has no published weights: pass --weights PATH with a local checkpoint"))
    for argv, code, pattern in cases:
        check_error(run_cli(capsys, *argv), code, pattern)
    code, _, err = run_cli(capsys, "classify", "chelsea.png", "--topk", "0")
    assert code == 2 and "--topk: must be at least 1" in err
    assert len(served[1].requests) <= 1  # none of these downloaded anything


def test_weights_unavailable(served, capsys, tmp_path, monkeypatch):
    server = served[1]
    home = tmp_path / "empty-home"
    monkeypatch.setenv(hub.ENV_HOME, str(home))
    monkeypatch.setenv(hub.ENV_OFFLINE, "1")
    path = os.path.join(home, "checkpoints", FILE_NAME)
    check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18"), 7,
           rf"FLOWVISION_OFFLINE is set and the resnet18 weights ResNet18_Weights\.IMAGENET1K_V1 are not in the cache: "
           rf"download {server.url(FILE_NAME)} and place it at {path} \(or set FLOWVISION_HOME to a folder")
    monkeypatch.delenv(hub.ENV_OFFLINE)
    server.fault = "404"
    try:
        check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18"), 7,
               rf"cannot download .* \(HTTP Error 404: Not Found\) and they are not in the cache: download .* at {path}")
        server.fault = "wrong"
        check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18"), 8, r"arrived corrupt \(invalid hash value")
    finally:
        server.fault = None
    assert not os.path.exists(path)


def test_bench_delegates_and_needs_a_checkout(capsys, monkeypatch):
    code, out, _ = run_cli(capsys, "bench", "--help")
    assert code == 0 and out.startswith("usage: flowvision bench") and "--suite" in out
    monkeypatch.setattr(bench_cli, "SCRIPT", "/nonexistent/scripts/bench.py")
    check_error(run_cli(capsys, "bench"), 9, r"flowvision bench needs a source checkout with scripts/bench\.py .* and torch")


def test_help_version_and_module_entry_point(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == "flowvision 0.1.0"
    code, out, _ = run_cli(capsys, "convert", "--help")
    assert code == 0 and "--verify" in out
    result = subprocess.run([sys.executable, "-m", "flowvision", "--help"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
    for command in ("classify", "models", "convert", "bench"):
        assert f"    {command} " in result.stdout


def test_device_option_on_the_gpu(served, capsys, cuda):
    reference = served[0]
    code, out, err = run_cli(capsys, "classify", "chelsea.png", COFFEE, "--model", "resnet18", "--topk", "3",
                             "--device", "cuda")
    assert code == 0, err
    assert "device: cuda:0 (" in err
    _check_against(reference, _parse(out), [CHELSEA, COFFEE], 3)


def test_device_option_errors(served, capsys, monkeypatch):
    from engine import _device
    code, _, err = run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18", "--topk", "1")
    assert code == 0 and ("device: cpu" in err) != engine.cuda.is_available()
    check_error(run_cli(capsys, "classify", "chelsea.png", "--model", "resnet18", "--device", "tpu"), 2,
                r"bad --device 'tpu': use cpu, cuda, cuda:N or auto")
    monkeypatch.setattr(_device, "_cupy", None)
    monkeypatch.setattr(_device, "_cupy_missing", True)
    check_error(run_cli(capsys, "segment", "chelsea.png", "--device", "cuda"), 9,
                r"--device cuda: CUDA is not available: CuPy is not installed; pip install 'flowvision\[gpu\]'")
