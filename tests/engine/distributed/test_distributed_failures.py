"""A rank that fails never leaves the others hanging: an exception aborts the whole job, a rank that
stops answering makes the others' calls raise after the group's timeout, and a launch whose variables
disagree with MPI's is refused in one line."""
import time

import pytest

from distributed_runner import run_ranks, worker_env

pytestmark = pytest.mark.slow  # MPI jobs that wait out timeouts: outside the quick subset


def _run(mode, ranks=2, **env):
    start = time.monotonic()
    result = run_ranks("rank_failures.py", mode, ranks=ranks, timeout=60, env=worker_env(**env) if env else None)
    return result, time.monotonic() - start


def test_an_exception_on_one_rank_ends_the_job():
    result, seconds = _run("raise")
    assert result.returncode != 0
    assert "ValueError: rank 1 fails on purpose" in result.stderr
    assert "engine.distributed: rank 1 failed; aborting all 2 ranks" in result.stderr
    assert "finished the all_reduce" not in result.stdout
    assert seconds < 30


@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_a_rank_that_stops_answering_times_out_the_others(mode):
    result, seconds = _run(mode)
    assert result.returncode != 0
    assert ("DistBackendError: engine.distributed: all_reduce on rank 0 of 2 did not complete within 3 s: another "
            "rank failed, exited or did not make the same call") in result.stderr
    assert "finished the all_reduce" not in result.stdout
    assert seconds < 30  # rank 1 of "hang" sleeps 60 s: the abort ended it


def test_launcher_variables_that_disagree_with_mpi_are_refused():
    # One rank: two ranks' tracebacks reach mpiexec's stderr at once and came out interleaved mid-line.
    result, _ = _run("raise", ranks=1, RANK="0", WORLD_SIZE="3")
    assert result.returncode != 0
    assert ("RuntimeError: RANK/WORLD_SIZE from the environment say rank 0 of 3, but MPI started this process as "
            "rank 0 of 1: start 3 processes with `python -m engine.distributed.run --nproc-per-node 3 "
            "script.py` or `mpiexec -n 3 python script.py`") in result.stderr
