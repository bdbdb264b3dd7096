"""engine.distributed's collectives on two MPI processes: each result equals numpy's reduction over the
ranks' inputs (float32, float64, int64; odd and zero sizes; every ReduceOp; async, views, bool,
float16), the object collectives, bad calls refused in one line, and a group made again after
``destroy_process_group``. One mpiexec run (rank_collectives.py) per configuration makes all results:
CPU tensors over MPI; and, on the CPU emulation of CuPy, CUDA tensors staged through the host over MPI
and CUDA tensors over the NCCL transport (its NCCL calls answered by fake_nccl.py over MPI: the
transport's pointers, counts, types, ops and grouped sends are checked, NCCL itself is not)."""
import json
import os

import numpy as np
import pytest

from collective_cases import DTYPES, OPS, RANKS, SHAPES, key, rank_input
from distributed_runner import check_ok, run_ranks

import engine.distributed as dist


CONFIGURATIONS = [("mpi", "cpu"), ("mpi", "cuda"), ("nccl", "cuda")]


@pytest.fixture(scope="module", params=CONFIGURATIONS, ids=["mpi-cpu", "mpi-emulated-cuda", "nccl-emulated-cuda"])
def outputs(request, tmp_path_factory):
    backend, device = request.param
    if device == "cuda":
        import cuda_emulator
        if not cuda_emulator.available():
            pytest.skip("emulating CUDA needs g++")
    out = tmp_path_factory.mktemp("collectives")
    check_ok(run_ranks("rank_collectives.py", out, backend, device, timeout=180))
    results = [dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in range(RANKS)]
    infos = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(RANKS)]
    return results, infos, backend


def _inputs(dtype, shape, salt=""):
    return np.stack([rank_input(r, dtype, shape, salt) for r in range(RANKS)])


def _reduced(stack, op):
    if op == "SUM":
        return stack.sum(0, dtype=stack.dtype)
    if op == "AVG":
        if stack.dtype.kind == "f":
            return stack.sum(0, dtype=stack.dtype) / RANKS
        total = stack.sum(0)
        return (np.sign(total) * (np.abs(total) // RANKS)).astype(stack.dtype)
    if op == "PRODUCT":
        return stack.prod(0, dtype=stack.dtype)
    return stack.max(0) if op == "MAX" else stack.min(0)


def _same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                               expected.dtype, expected.shape)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


CASES = [(dtype, shape) for dtype in DTYPES for shape in SHAPES]


@pytest.mark.parametrize("dtype,shape", CASES)
@pytest.mark.parametrize("op", OPS)
def test_all_reduce(outputs, dtype, shape, op):
    results = outputs[0]
    expected = _reduced(_inputs(dtype, shape), op)
    for rank in range(RANKS):
        _same(results[rank][key("all_reduce", dtype, shape, op)], expected)


@pytest.mark.parametrize("dtype,shape", CASES)
def test_rooted_and_gathering_collectives(outputs, dtype, shape):
    results = outputs[0]
    stack = _inputs(dtype, shape)
    for rank in range(RANKS):
        got = results[rank]
        _same(got[key("all_reduce_async", dtype, shape)], _reduced(stack, "SUM"))
        _same(got[key("broadcast", dtype, shape)], stack[1])
        _same(got[key("broadcast_polled", dtype, shape)], stack[1])
        _same(got[key("all_gather", dtype, shape)], stack)
        _same(got[key("all_gather_into_tensor", dtype, shape)], np.concatenate(list(stack)))
        big = _inputs(dtype, (RANKS * shape[0],) + shape[1:], "scatter")
        _same(got[key("reduce_scatter_tensor", dtype, shape)], np.split(_reduced(big, "SUM"), RANKS)[rank])
        _same(got[key("scatter", dtype, shape)], _inputs(dtype, shape, "part")[rank])
        _same(got[key("recv", dtype, shape)], stack[1 - rank])
        assert int(got[key("recv_source", dtype, shape)]) == 1 - rank
    _same(results[1][key("reduce", dtype, shape)], _reduced(stack, "SUM"))
    _same(results[0][key("reduce", dtype, shape)], stack[0])  # only the destination gets the result
    _same(results[0][key("gather", dtype, shape)], stack)


def test_views_bool_and_float16(outputs):
    results = outputs[0]
    views = _inputs("float32", (5, 3))
    booleans = _inputs("int64", (9,)) > 0
    halves = _inputs("float32", (6,)).astype(np.float16)
    for rank in range(RANKS):
        _same(results[rank][key("all_reduce_view")], views.sum(0))
        _same(results[rank][key("all_reduce_bool_sum")], booleans.any(0))
        _same(results[rank][key("all_reduce_float16_max")], halves.max(0))


def test_group_queries_objects_and_second_group(outputs):
    _, infos, backend = outputs
    for rank, info in enumerate(infos):
        assert (info["rank"], info["size"], info["backend"], info["initialized"]) == (rank, RANKS, backend, True)
        assert info["objects"] == [{"rank": r, "text": "x" * r} for r in range(RANKS)]
        assert info["broadcast_objects"] == [1, "from rank 1"]
        assert info["after_destroy"] is False
        assert info["second_group"] == [3.0] * 3


def test_bad_calls_are_refused_in_one_line(outputs):
    _, infos, backend = outputs
    errors = infos[0]["errors"]
    expected = {
        "list_length": "ValueError: all_gather: tensor_list must hold world_size=2 tensors, got 1",
        "list_shape": "ValueError: all_gather: tensor_list[1] is float32 [3], but the tensor is float32 [2]",
        "bad_src": "ValueError: broadcast: src=2 is not a rank of the group (0..1)",
        "send_self": "ValueError: send: dst=0 is this process's own rank; it must be another rank",
        "gather_sizes": "ValueError: all_gather_into_tensor: output_tensor (float32 [3]) must hold world_size=2 "
                        "times the elements of input_tensor (float32 [2])",
        "bitwise_float": "RuntimeError: ReduceOp.BAND needs an integer or bool tensor, got float32",
        "not_tensor": "TypeError: all_reduce: tensor must be an engine Tensor, got ndarray",
        "not_op": "TypeError: op must be an engine.distributed.ReduceOp (e.g. ReduceOp.SUM), got 'sum'",
    }
    assert errors == expected
    assert all("\n" not in message for message in errors.values())


def test_without_a_process_group():
    """In this (single, MPI-free) process: queries refuse in torch's words, and nothing starts MPI."""
    assert dist.is_available()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="backend 'gloo' is not available here"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()
