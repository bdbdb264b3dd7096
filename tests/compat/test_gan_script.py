"""A PyTorch WGAN-GP script (gradient penalty, spectral norm, FFT loss, functional_call, hooks, profiler ranges,
TensorBoard) runs on engine with only its imports rewritten, and prints PyTorch's losses."""
import re

import pytest

from compat_scripts import rewrite_imports, run_script

pytestmark = pytest.mark.slow  # two training runs in fresh interpreters

SCRIPT = __file__.replace("test_gan_script.py", "train_wgan_gp.py")


def _numbers(lines):
    """The losses and the EMA image mean each step printed, in one list."""
    return [float(v) for line in lines if line.startswith("step ") for v in re.findall(r"-?\d+\.\d+", line)]


def test_same_losses_as_pytorch(tmp_path):
    with open(SCRIPT, encoding="utf-8") as f:
        source = f.read()
    runs = {}
    for name, text in (("torch", source), ("engine", rewrite_imports(source))):
        script = tmp_path / f"{name}_gan.py"
        script.write_text(text)
        workdir = tmp_path / name
        workdir.mkdir()
        runs[name] = run_script(str(script), workdir)
    theirs, ours = _numbers(runs["torch"]), _numbers(runs["engine"])
    assert len(ours) == len(theirs) == 18
    assert ours == pytest.approx(theirs, rel=2e-4, abs=1e-5)
    assert runs["engine"][-1] == runs["torch"][-1]  # the hook fired as often, one TensorBoard event file
    assert re.fullmatch(r"hooked [1-9]\d* logs 1", runs["engine"][-1])
