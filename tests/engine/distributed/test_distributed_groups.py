"""Process subgroups on three MPI processes (rank_groups.py): every collective inside groups of two ranks
(sorted, unsorted) and of all three, with src/dst as global or group ranks, equals numpy's answer over the
members' inputs (float32, float64, int64; odd and zero sizes); so do all_to_all, all_to_all_single,
reduce_scatter and batch_isend_irecv, there and (two ranks) over the NCCL transport on the CUDA emulation;
the object calls, DDP and SyncBatchNorm on a subgroup, new_subgroups, monitored_barrier naming the
missing ranks, a rank outside a group (a warning, -1), and bad calls refused in one line."""
import json
import os

import numpy as np
import pytest

from collective_cases import key, rank_input
from distributed_runner import check_ok, run_ranks
from group_cases import DTYPES, GROUPS, NCCL_SHAPES, RANKS, SHAPES, members

pytestmark = pytest.mark.slow  # two MPI jobs of several seconds: outside the quick subset


def _load(out, ranks):
    results = [dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in range(ranks)]
    infos = [json.load(open(os.path.join(out, f"rank{r}.json"))) for r in range(ranks)]
    return results, infos


@pytest.fixture(scope="module")
def groups_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("groups")
    check_ok(run_ranks("rank_groups.py", out, "groups", ranks=RANKS, timeout=180))
    return _load(out, RANKS)


@pytest.fixture(scope="module")
def nccl_run(tmp_path_factory):
    import cuda_emulator
    if not cuda_emulator.available():
        pytest.skip("emulating CUDA needs g++")
    out = tmp_path_factory.mktemp("groups_nccl")
    check_ok(run_ranks("rank_groups.py", out, "nccl", ranks=2, timeout=180))
    return _load(out, 2)[0]


def _same(actual, expected):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                               expected.dtype, expected.shape)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(actual, expected)


def _rows(sender, receiver):
    return (sender + 2 * receiver) % 3


def _check_exchanges(results, name, ranks, dtype, shape):
    """all_to_all(_single), reduce_scatter and the point-to-point rings of group ``name`` (global ``ranks``)."""
    size, tail = len(ranks), shape[1:]
    for me, rank in enumerate(ranks):
        got = results[rank]
        case = (name, dtype, shape)
        blocks = np.concatenate([rank_input(ranks[s], dtype, (_rows(s, me),) + tail, f"a2a{me}") for s in range(size)])
        _same(got[key("all_to_all", *case)], blocks)
        _same(got[key("all_to_all_single", *case)], blocks)
        even = [np.split(rank_input(r, dtype, (size * shape[0],) + tail, "even"), size)[me] for r in ranks]
        _same(got[key("all_to_all_single_even", *case)], np.concatenate(even))
        parts = np.stack([rank_input(r, dtype, shape, f"rs{me}") for r in ranks])
        _same(got[key("reduce_scatter", *case)], parts.min(0))
        if size > 1:
            previous = ranks[(me - 1) % size]
            _same(got[key("batch_isend_irecv", *case)], rank_input(previous, dtype, shape, "p2p"))
            if key("recv", *case) in got:
                _same(got[key("recv", *case)], rank_input(previous, dtype, shape, "p2p"))
                assert got[key("recv_source", *case)].tolist() == [previous, previous]


CASES = [(name, dtype, shape) for name in GROUPS for dtype in DTYPES for shape in SHAPES]


@pytest.mark.parametrize("name,dtype,shape", CASES)
def test_collectives_in_subgroups(groups_run, name, dtype, shape):
    results = groups_run[0]
    ranks = members(name)
    size, last = len(ranks), ranks[-1]
    stack = np.stack([rank_input(r, dtype, shape, name) for r in ranks])
    case = (name, dtype, shape)
    for me, rank in enumerate(ranks):
        got = results[rank]
        _same(got[key("all_reduce", *case)], stack.sum(0, dtype=stack.dtype))
        _same(got[key("broadcast", *case)], stack[-1])
        _same(got[key("broadcast_group_src", *case)], stack[0])
        _same(got[key("reduce", *case)], stack.max(0) if rank == last else stack[me])
        _same(got[key("all_gather", *case)], stack)
        _same(got[key("scatter", *case)], rank_input(me, dtype, shape, "part"))
        _same(got[key("all_gather_into_tensor", *case)], np.concatenate(list(stack)))
        big = np.stack([rank_input(r, dtype, (size * shape[0],) + shape[1:], name + "big") for r in ranks])
        _same(got[key("reduce_scatter_tensor", *case)], np.split(big.sum(0, dtype=big.dtype), size)[me])
    _same(results[last][key("gather", *case)], stack)
    _check_exchanges(results, name, ranks, dtype, shape)


@pytest.mark.parametrize("dtype,shape", [(d, s) for d in DTYPES for s in NCCL_SHAPES])
def test_exchanges_over_nccl(nccl_run, dtype, shape):
    _check_exchanges(nccl_run, "nccl", [0, 1], dtype, shape)


def test_objects_and_queries_in_subgroups(groups_run):
    infos = groups_run[1]
    for name in GROUPS:
        ranks = members(name)
        size = len(ranks)
        for me, rank in enumerate(ranks):
            got = infos[rank][name]
            assert got["all_gather_object"] == [{"from": r} for r in ranks]
            assert got["broadcast_object_list"] == ["from", ranks[-1]]
            assert got["gather_object"] == (["x" * r for r in ranks] if me == size - 1 else None)
            assert got["scatter_object_list"] == [[me, "y" * me]]
            previous = ranks[(me - 1) % size]
            assert got["recv_object_list"] == [previous, [previous, {"k": name}]]
            assert got["queries"] == [me, size, ranks, me, ranks[0], "mpi"]
    assert all(info["group_world"] == [True, [0, 1, 2]] for info in infos)
    assert all(info["after_destroy"] is False for info in infos)


def test_a_rank_outside_a_group_is_warned_and_gets_minus_one(groups_run):
    info = groups_run[1][2]  # pair01 leaves out global rank 2
    assert info["non_member"] == [None, None, -1, -1, -1, True]
    assert info["non_member_warnings"] == [f"Running {call} on global rank 2 which does not belong to the given "
                                           "group." for call in ("all_reduce", "broadcast", "recv")]


def test_ddp_and_sync_batch_norm_on_a_subgroup(groups_run):
    results = groups_run[0]
    ranks = members("pair12")
    _same(results[2][key("ddp_weight")], results[1][key("ddp_weight")])  # the group's rank 0 is global rank 1
    inputs = [rank_input(r, "float32", (4 + r, 3), "ddp") for r in ranks]
    for rank in ranks:
        _same(results[rank][key("ddp_weight_grad")], np.tile(np.mean([x.sum(0) for x in inputs], 0), (2, 1)))
        _same(results[rank][key("ddp_bias_grad")], np.full(2, np.mean([len(x) for x in inputs]), np.float32))
    batch = np.concatenate([rank_input(r, "float32", (r + 1, 2, 3), "bn") for r in members("pair20")])
    channels = batch.transpose(1, 0, 2).reshape(2, -1).astype(np.float64)
    for rank in members("pair20"):
        _same(results[rank][key("bn_running_mean")], (0.1 * channels.mean(1)).astype(np.float32))
        _same(results[rank][key("bn_running_var")], (0.9 + 0.1 * channels.var(1, ddof=1)).astype(np.float32))


def test_new_subgroups(groups_run):
    infos = groups_run[1]
    for rank, info in enumerate(infos):
        assert info["alone"] == [3, 1, [rank + 1.0] * 3, [rank]]
        assert info["enumerated"] == ([2, [1], [2.0]] if rank == 1 else [2, [0, 2], [4.0]])
        assert info["whole"] == [0, 1, 2]
        assert info.get("local") == (None if rank == 1 else [2, 1 - rank // 2])
        assert info["destroyed"].startswith("ValueError: Invalid process group specified: ProcessGroup(")


def test_monitored_barrier_names_the_missing_ranks(groups_run):
    infos = groups_run[1]
    assert infos[0]["monitored_True"] == ("DistBackendError: [Rank 0]: Ranks 1, 2 failed to pass monitoredBarrier "
                                          "in 300 ms")
    assert infos[0]["monitored_False"] == "DistBackendError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 300 ms"
    assert infos[1]["monitored_pair12"] == infos[2]["monitored_pair12"] == "passed"


def test_bad_calls_are_refused_in_one_line(groups_run):
    infos = groups_run[1]
    everywhere = {
        "duplicate": "ValueError: ranks list must not contain duplicate entries, got [0, 0]",
        "out_of_range": "ValueError: Rank 5 is out of range. Valid ranks are 0 to 2 (world_size=3)",
        "not_integers": "TypeError: ranks must be a sequence of integers",
        "local_sync_mpi": "ValueError: MPI backend doesn't support use_local_synchronization=True",
        "not_divisible": "ValueError: The world size (3) must be divisible by 'group_size=2'",
        "overlap": "ValueError: Rank 1 has appeared in both subgroup [0, 1] and [1, 2]",
        "both_src": "ValueError: broadcast: Can't specify both src and group_src",
        "no_src": "ValueError: broadcast: Must specify src or group_src",
        "splits": "ValueError: all_to_all_single: output_split_sizes [1, 1, 2] must be world_size=3 sizes adding "
                  "up to the output's dim 0 size 3",
        "uneven": "ValueError: all_to_all_single: the input's dim 0 size 4 is not divisible by world_size=3: pass "
                  "input_split_sizes",
        "p2p_op": "ValueError: Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                  "``torch.distributed.irecv``.",
        "p2p_list": "ValueError: Invalid ``p2p_op_list``. Each op is expected to to be of type "
                    "``torch.distributed.P2POp``.",
        "scatter_output": "ValueError: Expected argument scatter_object_output_list to be a list of size at least 1.",
        "gather_list": "ValueError: gather_object: Argument ``gather_list`` must NOT be specified on "
                       "non-destination ranks.",
    }
    outside = {
        "group_rank": "ValueError: Group -100 is not registered, please create group with "
                      "torch.distributed.new_group API",
        "ranks_of_non_member": "ValueError: Group -100 is not registered, please create group with "
                               "torch.distributed.new_group API",
        "backend_of_non_member": "ValueError: rank 0 is not a member of the given group (new_group returned "
                                 "GroupMember.NON_GROUP_MEMBER to it)",
    }
    assert infos[0]["errors"] == {**everywhere, **outside}
    for rank in (1, 2):
        assert infos[rank]["errors"] == {
            **everywhere,
            "src_outside": "ValueError: broadcast: src=0 is not a rank of the group (global ranks [1, 2])",
            "global_rank": f"ValueError: Group rank 2 is not part of group ProcessGroup(backend='mpi', rank={rank - 1}, "
                           "size=2, ranks=[1, 2])",
            "mixed_groups": "ValueError: All ops need to use the same group.",
        }
    assert all("\n" not in m for info in infos for m in info["errors"].values())
