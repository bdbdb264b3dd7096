"""Both notebooks run end to end with nbclient, offline: local photos as the dataset, weights from a local server."""
import os
import re

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from flowvision import hub
from flowvision.datasets.utils import MIRROR_ENV
from http_server import FileServer
from notebook_runner import execute
from weights_server import serve_weights

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = os.path.join(REPO, "notebooks")
IMAGES = os.path.join(REPO, "tests", "data", "images")
CLASSES = {"cat": "chelsea.png", "coffee": "coffee.png"}
FILE_NAME = "resnet18-f37072fd.pth"


def _make_dataset(root, per_class, seed=0):
    """An ImageFolder tree ``root/{train,val}/{cat,coffee}`` of random 96x96 JPEG crops of two real photos."""
    rng = np.random.default_rng(seed)
    for class_name, file_name in CLASSES.items():
        photo = Image.open(os.path.join(IMAGES, file_name)).convert("RGB")
        for split, count in per_class.items():
            folder = root / split / class_name
            folder.mkdir(parents=True)
            for i in range(count):
                left = int(rng.integers(0, photo.width - 96))
                top = int(rng.integers(0, photo.height - 96))
                photo.crop((left, top, left + 96, top + 96)).save(folder / f"{class_name}_{i}.jpg", quality=90)


def _execute(name, workdir, tmp_path):
    """Run ``notebooks/<name>`` in ``workdir``: (executed notebook, all its stream output as one string)."""
    return execute(os.path.join(NOTEBOOKS, name), workdir, tmp_path)


@pytest.fixture
def kernel_env(monkeypatch):
    """The kernel imports this checkout's packages and never touches the network or the user's cache."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv(hub.ENV_OFFLINE, "1")
    monkeypatch.delenv(MIRROR_ENV, raising=False)
    return monkeypatch


def test_transfer_learning_runs_offline(tmp_path, kernel_env):
    _make_dataset(tmp_path / "data", {"train": 8, "val": 4})
    torch.manual_seed(0)
    checkpoint = tmp_path / "resnet18.pth"
    torch.save(torchvision.models.resnet18().state_dict(), checkpoint)
    for key, value in {"DATA_DIR": tmp_path / "data", "WEIGHTS": "IMAGENET1K_V1", "EPOCHS": 1, "IMAGE_SIZE": 64,
                       "RESIZE": 72, "BATCH_SIZE": 8, "DEVICE": "cpu", "OUTPUT_DIR": "out",
                       "DATA_URL": "http://127.0.0.1:9/unreachable.zip"}.items():
        kernel_env.setenv(key, str(value))
    workdir = tmp_path / "work"
    workdir.mkdir()
    with FileServer() as server:
        serve_weights(kernel_env, server, tmp_path, "resnet18", "IMAGENET1K_V1", FILE_NAME, checkpoint.read_bytes())
        nb, text = _execute("transfer_learning.ipynb", workdir, tmp_path)
    assert [path for path, _ in server.requests] == [f"/{FILE_NAME}"]
    assert "classes: ['cat', 'coffee']" in text and "train images: 16, val images: 8" in text
    assert re.search(r"head epoch 1/1: train loss \d+\.\d+ acc [01]\.\d+ \| val loss \d+\.\d+ acc [01]\.\d+", text)
    assert re.search(r"finetune epoch 1/1: train loss \d+\.\d+ acc [01]\.\d+ \| val loss \d+\.\d+ acc", text)
    assert "compiled plans: 1" in text
    assert re.search(r"final validation accuracy: [01]\.\d{3}", text)
    for name in ("training_curves.png", "predictions.png", "val_batch.png", "resnet18_finetuned.safetensors"):
        assert (workdir / "out" / name).stat().st_size > 0
    shown = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
             if "image/png" in out.get("data", {})]
    assert len(shown) == 2


def test_transfer_learning_takes_a_local_checkpoint(tmp_path, kernel_env):
    """``WEIGHTS`` as a file path: no hub at all (offline), and the data folder already exists."""
    _make_dataset(tmp_path / "data", {"train": 4, "val": 2})
    checkpoint = tmp_path / "resnet18.pth"
    torch.manual_seed(1)
    torch.save(torchvision.models.resnet18().state_dict(), checkpoint)
    for key, value in {"DATA_DIR": tmp_path / "data", "WEIGHTS": checkpoint, "EPOCHS": 1, "IMAGE_SIZE": 32,
                       "RESIZE": 36, "BATCH_SIZE": 4, "OUTPUT_DIR": tmp_path / "plots",
                       hub.ENV_HOME: tmp_path / "home"}.items():
        kernel_env.setenv(key, str(value))
    _, text = _execute("transfer_learning.ipynb", tmp_path, tmp_path)
    assert "train images: 8, val images: 4" in text and "finetune epoch 1/1" in text
    assert (tmp_path / "plots" / "training_curves.png").is_file()
    assert not (tmp_path / "home").exists()


def test_migrate_from_pytorch(tmp_path, kernel_env):
    for key, value in {"IMAGE_SIZE": 64, "BATCH_SIZE": 2, "TIMING_REPEATS": 1, "OUTPUT_DIR": "out"}.items():
        kernel_env.setenv(key, str(value))
    _, text = _execute("migrate_from_pytorch.ipynb", tmp_path, tmp_path)
    diffs = {label: (float(a), float(b)) for label, a, b in re.findall(
        r"(flowvision vs PyTorch|graph vs eager): max abs diff (\S+), relative error (\S+)", text)}
    assert set(diffs) == {"flowvision vs PyTorch", "graph vs eager"}
    for label, (max_diff, rel_err) in diffs.items():
        assert max_diff < 1e-3 and rel_err < 1e-5, (label, max_diff, rel_err)
    assert "same predictions: True" in text
    assert re.search(r"flowvision graph: +\d+\.\d ms", text) and re.search(r"PyTorch eager: +\d+\.\d ms", text)
    same = re.search(r"create_model\('resnet18', num_classes=1000\) vs PyTorch: relative error (\S+)", text)
    assert same and float(same.group(1)) < 1e-5
    assert "missing keys ['fc.weight', 'fc.bias'], unexpected keys []" in text
    assert (tmp_path / "out" / "resnet18_state_dict.npz").is_file()
