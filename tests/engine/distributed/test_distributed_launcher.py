"""``python -m engine.distributed.run``: the mpiexec command it builds for one host and for several (MPICH's
Hydra and Open MPI), and a real two-process launch in which the script sees torchrun's variables before
``init_process_group`` and its own arguments."""
import json
import os
import sys
from types import SimpleNamespace

import pytest
from distributed_runner import HERE, check_ok, require_mpi, run_command

from engine.distributed import run


def _args(**kwargs):
    defaults = dict(nproc_per_node=2, hosts=None, hostfile=None, module=False, script="train.py",
                    script_args=["--epochs", "3"])
    return SimpleNamespace(**{**defaults, **kwargs})


def test_one_host_command():
    command = run.build_command(_args(), "mpiexec", "hydra")
    assert command == ["mpiexec", "-n", "2", sys.executable, "-m", "engine.distributed.launch_worker", "train.py",
                       "--epochs", "3"]


def test_several_hosts_commands(tmp_path):
    hydra = run.build_command(_args(nproc_per_node=4, hosts="node1,node2"), "mpiexec", "hydra")
    assert hydra[:7] == ["mpiexec", "-n", "8", "-hosts", "node1,node2", "-ppn", "4"]
    openmpi = run.build_command(_args(nproc_per_node=4, hosts="node1,node2"), "mpirun", "openmpi")
    assert openmpi[:7] == ["mpirun", "-n", "8", "--host", "node1:4,node2:4", "--map-by", "ppr:4:node"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1\n# spare\nnode2\nnode3\n")
    from_file = run.build_command(_args(hostfile=str(hostfile)), "mpiexec", "hydra")
    assert from_file[:7] == ["mpiexec", "-n", "6", "-f", str(hostfile), "-ppn", "2"]
    module = run.build_command(_args(module=True, script="pkg.train"), "mpiexec", "hydra")
    assert module[-4:] == ["-m", "pkg.train", "--epochs", "3"]


def test_thread_share():
    assert run.thread_settings(2, {"OMP_NUM_THREADS": "3"}) == {}
    assert run.thread_settings(1, {}) == {}
    assert run.thread_settings(2, {}) == {"OMP_NUM_THREADS": str(max(1, os.cpu_count() // 2))}


@pytest.mark.slow  # a real MPI launch
def test_two_processes_launched(tmp_path):
    require_mpi()
    result = run_command([sys.executable, "-m", "engine.distributed.run", "--nproc-per-node", "2",
                          os.path.join(HERE, "rank_launched.py"), str(tmp_path), "--flag", "value"])
    check_ok(result)
    for rank in range(2):
        report = json.load(open(tmp_path / f"rank{rank}.json"))
        assert report["placement"] == {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
                                       "LOCAL_WORLD_SIZE": "2"}
        assert report["argv"] == ["--flag", "value"]
        assert report["name"] == "__main__"
        assert report["total"] == 3.0
        assert report["backend"] == "mpi"
