"""A real PyTorch training script runs on engine with only its imports rewritten: same first losses, and
checkpoints (epoch, model, optimizer, scheduler) that resume in either framework."""
import os
import re
import shutil

import pytest

from compat_scripts import rewrite_imports, run_script

pytestmark = pytest.mark.slow  # five training runs in fresh interpreters

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_classifier.py")


def _train(script, workdir, *args):
    """Run ``script`` in ``workdir`` on the CPU; the lines it printed."""
    return run_script(script, workdir, "--no-accel", *args)


# The first epochs load with two worker processes (whose seeds draw on the generator, as torch's loader does,
# so equal losses show that too); resumed runs, compared for what they restore, load in the main process:
# PyTorch's workers cost its run 2.8 s (6.4 s against 3.7).
_IN_PROCESS = ("--workers", "0")


def _losses(lines, epoch):
    return [float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith(f"train epoch {epoch} ")]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scripts")
    with open(SCRIPT, encoding="utf-8") as f:
        source = f.read()
    (folder / "torch_version.py").write_text(source)
    (folder / "engine_version.py").write_text(rewrite_imports(source))
    return folder


def test_only_imports_differ(scripts):
    ours = (scripts / "engine_version.py").read_text().splitlines()
    theirs = (scripts / "torch_version.py").read_text().splitlines()
    changed = [(a, b) for a, b in zip(theirs, ours) if a != b]
    assert len(ours) == len(theirs) and changed
    assert all(re.match(r"(import|from) ", a) and ("engine" in b or "flowvision" in b) for a, b in changed)
    assert ("import torch", "import engine as torch") in changed
    assert ("from torchvision import transforms", "from flowvision import transforms") in changed


def test_same_first_losses_and_checkpoints_resume_across_frameworks(scripts, tmp_path):
    runs = {}
    for name in ("torch", "engine"):
        workdir = tmp_path / name
        workdir.mkdir()
        script = str(scripts / f"{name}_version.py")
        first = _train(script, workdir, "--epochs", "1")
        shutil.copy(workdir / "checkpoint.pth.tar", tmp_path / f"{name}_epoch1.pth.tar")
        resumed = _train(script, workdir, "--epochs", "2", "--resume", *_IN_PROCESS)
        runs[name] = (first, resumed)
    (torch_first, torch_resumed), (engine_first, engine_resumed) = runs["torch"], runs["engine"]
    assert engine_first[0] == "device cpu"
    assert _losses(engine_first, 1)[0] == pytest.approx(_losses(torch_first, 1)[0], rel=1e-5)
    # the same seed gives the same initial weights, shuffles and dropout masks, so the run goes on alike
    assert _losses(engine_first, 1) == pytest.approx(_losses(torch_first, 1), rel=1e-4)
    assert len(_losses(engine_first, 1)) == 2
    for lines in (torch_resumed, engine_resumed):
        assert "resumed after epoch 1, lr 0.700000" in lines and len(_losses(lines, 2)) == 2
        assert re.fullmatch(r"test loss \d+\.\d+ accuracy \d+/48", lines[-1])
    # PyTorch resumes from the checkpoint engine wrote, and engine from PyTorch's
    crossed = tmp_path / "crossed"
    crossed.mkdir()
    for name, other in (("torch", "engine"), ("engine", "torch")):
        shutil.copy(tmp_path / f"{other}_epoch1.pth.tar", crossed / "checkpoint.pth.tar")
        lines = _train(str(scripts / f"{name}_version.py"), crossed, "--epochs", "2", "--resume", *_IN_PROCESS)
        assert "resumed after epoch 1, lr 0.700000" in lines
