"""DistributedDataParallel on two MPI processes: 5 SGD-momentum steps of resnet18 (SyncBatchNorm) with 4
samples per rank give the parameters and buffers of one process training on the 8 samples (BatchNorm),
eagerly with 1 MB buckets (whose all-reduces start during the backward), with no_sync gradient
accumulation over pairs of batches, and as an nn.Graph; rank 1 starts from other weights and the wrap gives it rank 0's.
Unused parameters: averaged with zeros where a rank did not use them, left alone where none did, and
without find_unused_parameters the next forward refuses in one line."""
import json
import os

import numpy as np
import pytest

from ddp_cases import (HEADS, RANKS, TwoHeads, heads_input, resnet, state, train, train_accumulating,
                       whole_batch_step)
from distributed_runner import check_ok, run_ranks

pytestmark = pytest.mark.slow  # resnet18 steps in two MPI processes: outside the quick subset

import engine

TOLERANCE = 1e-5


def _ranks(tmp_path_factory, parts):
    out = tmp_path_factory.mktemp("ddp")
    check_ok(run_ranks("rank_ddp.py", out, ",".join(parts), timeout=300))
    return ([dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in range(RANKS)],
            [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(RANKS)])


@pytest.fixture(scope="module")
def eager_ranks(tmp_path_factory):
    """One launch of the two ranks for every case (eager, unused parameters, no_sync, nn.Graph), not two: the file
    took 16.8 s with two launches, 16.3 s with one (22.3 s and 16.5 s while another process held a core)."""
    return _ranks(tmp_path_factory, ["eager", "unused", "no_sync", "graph"])


@pytest.fixture(scope="module")
def whole_batch_reference():
    model = resnet(seed=0)
    return state(train(model, whole_batch_step(model)))


def _matches(ranks, part, reference):
    for rank in range(RANKS):
        got = {k.split("/", 1)[1]: v for k, v in ranks[rank].items() if k.startswith(part + "/")}
        assert sorted(got) == sorted(reference)
        for name, expected in reference.items():
            if expected.dtype.kind == "f":
                assert np.abs(got[name] - expected).max() <= TOLERANCE, (part, rank, name)
            else:
                np.testing.assert_array_equal(got[name], expected)


def test_eager_training_equals_one_process(eager_ranks, whole_batch_reference):
    arrays, infos = eager_ranks
    initial = state(resnet(seed=0))
    moved = min(np.abs(whole_batch_reference[k] - v).max() for k, v in initial.items() if v.dtype.kind == "f")
    assert moved > 10 * TOLERANCE  # the comparison below could tell a wrong gradient apart
    _matches(arrays, "eager", whole_batch_reference)
    for info in infos:
        assert info["keys_match"]
        # 1 MB buckets: all but the last (holding conv1, the backward's last gradient) started before it
        assert info["buckets"] > 2 and info["started_before_last_gradient"] == info["buckets"] - 1


def _expected_unused_gradients():
    """Each rank's gradients of the two-headed model in this process, averaged as DDP must."""
    local = []
    for rank in range(RANKS):
        engine.manual_seed(0)
        model = TwoHeads()
        model(heads_input(rank), HEADS[rank]).backward()
        local.append({n: p.grad.numpy() if p.grad is not None else np.zeros(p.shape, np.float32)
                      for n, p in model.named_parameters()})
    return {name: (local[0][name] + local[1][name]) / 2 for name in local[0] if not name.startswith("never.")}


def _check_unused(arrays):
    expected = _expected_unused_gradients()
    for rank in range(RANKS):
        got = {k.split("/", 1)[1]: v for k, v in arrays[rank].items() if k.startswith("unused/")}
        assert sorted(got) == sorted(expected)  # no rank used `never`: its gradients stay None
        for name, grad in got.items():
            np.testing.assert_allclose(grad, expected[name], rtol=1e-6, atol=1e-7)


def test_unused_parameters(eager_ranks):
    arrays, infos = eager_ranks
    _check_unused(arrays)
    for info in infos:
        assert info["unused_error"].startswith(
            "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting "
            "a new one: ")


def test_cuda_module_over_nccl(tmp_path):
    """On the CPU emulation of CuPy, with fake_nccl.py answering the NCCL transport's calls."""
    import cuda_emulator
    if not cuda_emulator.available():
        pytest.skip("emulating CUDA needs g++")
    check_ok(run_ranks("rank_ddp_cuda.py", tmp_path))
    _check_unused([dict(np.load(tmp_path / f"rank{r}.npz")) for r in range(RANKS)])


@pytest.mark.slow
def test_no_sync_accumulation_and_graph_equal_one_process(eager_ranks, whole_batch_reference):
    arrays, infos = eager_ranks
    _matches(arrays, "no_sync", state(train_accumulating(resnet(seed=0))))
    _matches(arrays, "graph", whole_batch_reference)
    for info in infos:
        assert info["graph_plans"] == 1
        assert info["graph_broadcasts"] == 1  # the buffers' broadcast is an op of the compiled step
        assert ("backward: the post-accumulate-grad hooks of 62 parameters run in each replay "
                "(DistributedDataParallel's gradient all-reduces)") in info["graph_log"]
