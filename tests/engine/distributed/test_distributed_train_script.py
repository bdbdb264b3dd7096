"""scripts/train_ddp.py on two processes through the launcher, eagerly and as an nn.Graph: a few steps
run, the ranks' mean loss is printed, and the compiled step trains exactly as the eager one."""
import re
import sys

import pytest

from distributed_runner import check_ok, require_mpi, run_command

pytestmark = pytest.mark.slow  # two resnet18 runs


def _run(*extra):
    result = run_command([sys.executable, "-m", "engine.distributed.run", "--nproc-per-node", "2",
                          "scripts/train_ddp.py", "--epochs", "1", "--max-steps", "3", "--batch-size", "8", *extra],
                         timeout=300)
    check_ok(result)
    losses = re.findall(r"epoch 0: mean loss ([0-9.]+) over 2 processes, 3 steps of 2 x 8 samples", result.stdout)
    assert len(losses) == 1, result.stdout
    assert re.search(r"held-out accuracy [01]\.\d{3}", result.stdout), result.stdout
    return float(losses[0])


def test_train_ddp_eager_and_graph():
    require_mpi()
    assert _run() == _run("--graph")
