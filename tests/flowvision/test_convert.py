"""flowvision-convert end to end: both torch formats, wrappers, --verify, mismatches and bad input."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torchvision

from engine.serialization import load, read_metadata
from flowvision.convert import main
from flowvision.models import create_model

# command-line runs in fresh Python processes (about 1 s each): outside the quick subset (-m "not slow")
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def reference():
    torch.manual_seed(0)
    return torchvision.models.resnet18().eval()


def test_wrapped_zip_checkpoint_converts(tmp_path, reference, capsys):
    wrapped = {"epoch": 5, "state_dict": {"module." + k: v for k, v in reference.state_dict().items()}}
    torch.save(wrapped, tmp_path / "ckpt.pth")
    assert main([str(tmp_path / "ckpt.pth"), "--model", "resnet18"]) == 0
    out = tmp_path / "ckpt.safetensors"
    assert "wrote" in capsys.readouterr().out
    loaded = load(out)
    assert sorted(loaded) == sorted(reference.state_dict())
    for key, value in reference.state_dict().items():
        assert np.array_equal(loaded[key].numpy(), value.numpy()), key
    assert read_metadata(out)["model"] == "resnet18"
    create_model("resnet18").load_state_dict(loaded)


def test_legacy_checkpoint_with_verify(tmp_path, reference, capsys):
    torch.save({"model": reference.state_dict()}, tmp_path / "old.pth", _use_new_zipfile_serialization=False)
    assert main([str(tmp_path / "old.pth"), "--model", "resnet18", "-o", str(tmp_path / "x.safetensors"),
                 "--verify"]) == 0
    out = capsys.readouterr().out
    assert "max abs difference vs torchvision" in out
    assert float(out.split("torchvision: ")[1].split()[0]) < 1e-4


def test_mismatches_exit_non_zero_and_write_nothing(tmp_path, reference, capsys):
    torch.save(reference.state_dict(), tmp_path / "r18.pth")
    assert main([str(tmp_path / "r18.pth"), "--model", "resnet34"]) == 6
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "96 missing keys (layer1.2.conv1.weight" in err
    state = dict(reference.state_dict(), **{"fc.weight": torch.zeros(10, 512), "extra.bias": torch.zeros(1)})
    torch.save(state, tmp_path / "bad.pth", _use_new_zipfile_serialization=False)
    assert main([str(tmp_path / "bad.pth"), "--model", "resnet18"]) == 6
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "1 unexpected keys (extra.bias)" in err and "fc.weight: checkpoint [10, 512] vs model [1000, 512]" in err
    assert not any(name.endswith(".safetensors") for name in os.listdir(tmp_path))


def test_not_a_checkpoint(tmp_path, capsys):
    (tmp_path / "notes.pth").write_text("just text")
    assert main([str(tmp_path / "notes.pth"), "--model", "resnet18"]) == 6
    err = capsys.readouterr().err
    assert "cannot read" in err and "is not a checkpoint" in err


@pytest.mark.slow  # a subprocess
def test_script_wrapper(tmp_path):
    state = torchvision.models.resnet18().state_dict()
    torch.save(state, tmp_path / "a.pth")
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "convert_weights.py"), str(tmp_path / "a.pth"),
                          "--model", "resnet18"], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "a.safetensors").exists()
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "convert_weights.py"), str(tmp_path / "a.pth")],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--model" in run.stderr
