"""Runs a worker script of these tests on several processes under ``mpiexec`` (MPICH from pip), with a
timeout, so that a hang fails the test instead of stopping the suite."""
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def mpiexec():
    """The ``mpiexec`` beside this Python (pip's mpich puts it there), else the one on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


def require_mpi():
    """Skip (with the reason) where mpi4py or mpiexec is missing: both come from `pip install mpi4py mpich`."""
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install mpi4py mpich)")
    if mpiexec() is None:
        pytest.skip("no mpiexec found (pip install mpich)")


def worker_env(**extra):
    """The environment of the ranks: the repository and test helpers importable, one BLAS thread each (two ranks share
    the cores), and no launcher variables inherited from the test's own environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")}
    tests = os.path.dirname(os.path.dirname(HERE))  # the shared helpers (cuda_emulator)
    env["PYTHONPATH"] = os.pathsep.join([REPO, HERE, tests] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_ranks(worker, *args, ranks=2, timeout=120, env=None):
    """``mpiexec -n ranks python worker args`` from the repository root; the CompletedProcess (text)."""
    require_mpi()
    command = [mpiexec(), "-n", str(ranks), sys.executable, os.path.join(HERE, worker), *map(str, args)]
    return run_command(command, timeout, env)


def run_command(command, timeout=120, env=None):
    try:
        return subprocess.run(command, cwd=REPO, env=env or worker_env(), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(command)} did not finish within {timeout} s:\n{e.stdout}\n{e.stderr}") from None


def check_ok(result):
    """Assert the run succeeded, showing its output where it did not."""
    assert result.returncode == 0, f"exit code {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
