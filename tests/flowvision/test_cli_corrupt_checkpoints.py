"""A checkpoint that does not load is one error line with exit code 6 (EXIT_BAD_WEIGHTS) in every command that
reads one: truncated or corrupted PyTorch files (legacy and zip) and safetensors, given to classify and convert."""
import os
import re
import subprocess
import sys

import pytest
import torch
import torchvision

from cli_runner import check_error, run_cli
from flowvision.cli import EXIT_BAD_WEIGHTS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COFFEE = os.path.join(REPO, "tests", "data", "images", "coffee.png")


@pytest.fixture(scope="module")
def broken(tmp_path_factory):
    """Checkpoints of resnet18 cut short or corrupted: legacy .pth, zip .pth and .safetensors."""
    folder = tmp_path_factory.mktemp("broken")
    state = torchvision.models.resnet18().state_dict()
    torch.save(state, folder / "zip.pth")
    torch.save(state, folder / "legacy.pth", _use_new_zipfile_serialization=False)
    legacy = (folder / "legacy.pth").read_bytes()
    (folder / "legacy_cut_in_pickle.pth").write_bytes(legacy[:200])
    (folder / "legacy_cut_in_data.pth").write_bytes(legacy[:len(legacy) // 2])
    (folder / "zip_cut.pth").write_bytes((folder / "zip.pth").read_bytes()[:5000])
    header = b'{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}'
    (folder / "bad.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))
    return folder


NAMES = ["legacy_cut_in_pickle.pth", "legacy_cut_in_data.pth", "zip_cut.pth", "bad.safetensors"]


@pytest.mark.parametrize("name", NAMES)
def test_classify_and_convert_refuse_a_broken_checkpoint(broken, offline, capsys, tmp_path, name):
    path = str(broken / name)
    pattern = re.escape(f"cannot read '{path}' as a checkpoint: cannot load '{path}': ")
    check_error(run_cli(capsys, "classify", COFFEE, "--model", "resnet18", "--weights", path), EXIT_BAD_WEIGHTS, pattern)
    check_error(run_cli(capsys, "convert", path, "--model", "resnet18", "-o", str(tmp_path / "out.safetensors")),
                EXIT_BAD_WEIGHTS, pattern)
    assert not (tmp_path / "out.safetensors").exists()


@pytest.mark.slow
def test_the_installed_command_prints_one_line(broken, offline):
    path = str(broken / "legacy_cut_in_pickle.pth")
    for argv in (["classify", COFFEE, "--model", "resnet18", "--weights", path], ["convert", path, "--model", "resnet18"]):
        run = subprocess.run([sys.executable, "-m", "flowvision", *argv], capture_output=True, text=True, timeout=300)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == EXIT_BAD_WEIGHTS and len(lines) == 1, run.stderr
        assert lines[0].startswith("error: cannot read") and "Traceback" not in run.stderr
