"""Worker (run under mpiexec by test_distributed_groups.py): the collectives inside the subgroups of
group_cases.py, with src/dst as global ranks or group ranks, the exchanges (all_to_all, all_to_all_single,
reduce_scatter, batch_isend_irecv), the object calls, DDP and SyncBatchNorm on a subgroup,
monitored_barrier and the bad calls. ``sys.argv[2]``: ``groups`` (three CPU ranks over MPI) or ``nccl``
(two ranks, CUDA tensors on the CPU emulation over fake_nccl.py: the exchanges of the default group only).
Writes OUT/rank<r>.npz and .json."""
import datetime
import json
import os
import sys
import warnings

import numpy as np

import engine
import engine.distributed as dist
from collective_cases import key, rank_input
from group_cases import DTYPES, GROUPS, NCCL_SHAPES, SHAPES, members

DEVICE = "cpu"


def tensor(array):
    return engine.tensor(array.copy(), device=DEVICE)


def zeros(shape, dtype):
    return engine.zeros(shape, dtype=getattr(engine, dtype), device=DEVICE)


def host(t):
    return t.cpu().numpy()


def rows(sender, receiver):
    """all_to_all's block size (dim 0) from group rank ``sender`` to group rank ``receiver``: 0, 1 or 2."""
    return (sender + 2 * receiver) % 3


def collectives(name, group, ranks, results):
    """Every tensor collective inside ``group`` (global ranks ``ranks``), on each dtype and shape."""
    me, size, last = ranks.index(dist.get_rank()), len(ranks), ranks[-1]
    for dtype in DTYPES:
        for shape in SHAPES:
            mine = rank_input(dist.get_rank(), dtype, shape, name)
            case = (name, dtype, shape)
            t = tensor(mine)
            dist.all_reduce(t, group=group)
            results[key("all_reduce", *case)] = host(t)
            t = tensor(mine)
            dist.broadcast(t, src=last, group=group)
            results[key("broadcast", *case)] = host(t)
            t = tensor(mine)
            dist.broadcast(t, group=group, group_src=0)
            results[key("broadcast_group_src", *case)] = host(t)
            t = tensor(mine)
            dist.reduce(t, dst=last, op=dist.ReduceOp.MAX, group=group)
            results[key("reduce", *case)] = host(t)
            out = [zeros(shape, dtype) for _ in range(size)]
            dist.all_gather(out, tensor(mine), group=group)
            results[key("all_gather", *case)] = np.stack([host(o) for o in out])
            out = [zeros(shape, dtype) for _ in range(size)] if dist.get_rank() == last else None
            dist.gather(tensor(mine), out, dst=last, group=group)
            if out is not None:
                results[key("gather", *case)] = np.stack([host(o) for o in out])
            out = zeros(shape, dtype)
            parts = [tensor(rank_input(r, dtype, shape, "part")) for r in range(size)] if me == size - 1 else None
            dist.scatter(out, parts, group=group, group_src=size - 1)
            results[key("scatter", *case)] = host(out)
            out = zeros((size * shape[0],) + shape[1:], dtype)
            dist.all_gather_into_tensor(out, tensor(mine), group=group)
            results[key("all_gather_into_tensor", *case)] = host(out)
            out = zeros(shape, dtype)
            big = rank_input(dist.get_rank(), dtype, (size * shape[0],) + shape[1:], name + "big")
            dist.reduce_scatter_tensor(out, tensor(big), group=group)
            results[key("reduce_scatter_tensor", *case)] = host(out)
            exchanges(name, group, ranks, dtype, shape, results)


def exchanges(name, group, ranks, dtype, shape, results):
    """all_to_all, all_to_all_single, reduce_scatter (list) and point-to-point rings inside ``group``."""
    me, size = ranks.index(dist.get_rank()), len(ranks)
    case = (name, dtype, shape)
    tail = shape[1:]
    blocks = [rank_input(dist.get_rank(), dtype, (rows(me, q),) + tail, f"a2a{q}") for q in range(size)]
    out = [zeros((rows(s, me),) + tail, dtype) for s in range(size)]
    dist.all_to_all(out, [tensor(b) for b in blocks], group=group)
    results[key("all_to_all", *case)] = np.concatenate([host(o) for o in out])
    out = zeros((sum(rows(s, me) for s in range(size)),) + tail, dtype)
    dist.all_to_all_single(out, tensor(np.concatenate(blocks)), [rows(s, me) for s in range(size)],
                           [rows(me, q) for q in range(size)], group=group)
    results[key("all_to_all_single", *case)] = host(out)
    even = rank_input(dist.get_rank(), dtype, (size * shape[0],) + tail, "even")
    out = zeros((size * shape[0],) + tail, dtype)
    dist.all_to_all_single(out, tensor(even), group=group, async_op=True).wait()
    results[key("all_to_all_single_even", *case)] = host(out)
    out = zeros(shape, dtype)
    parts = [tensor(rank_input(dist.get_rank(), dtype, shape, f"rs{q}")) for q in range(size)]
    dist.reduce_scatter(out, parts, op=dist.ReduceOp.MIN, group=group)
    results[key("reduce_scatter", *case)] = host(out)
    if size < 2:
        return
    nxt, prev = ranks[(me + 1) % size], ranks[(me - 1) % size]
    mine = rank_input(dist.get_rank(), dtype, shape, "p2p")
    got = zeros(shape, dtype)
    ops = [dist.P2POp(dist.isend, tensor(mine), nxt, group=group),
           dist.P2POp(dist.irecv, got, group=group, group_peer=(me - 1) % size)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    results[key("batch_isend_irecv", *case)] = host(got)
    if size == 2 and dist.get_backend(group) == "nccl":
        return  # the NCCL run checks the batch; sends and receives are test_distributed_collectives'
    got = zeros(shape, dtype)
    work = dist.isend(tensor(mine), group=group, group_dst=(me + 1) % size)
    source = dist.recv(got, group=group)
    work.wait()
    results[key("recv", *case)] = host(got)
    results[key("recv_source", *case)] = np.array([source, prev])


def objects(name, group, ranks, info):
    me, size, last = ranks.index(dist.get_rank()), len(ranks), ranks[-1]
    got = {}
    gathered = [None] * size
    dist.all_gather_object(gathered, {"from": dist.get_rank()}, group=group)
    got["all_gather_object"] = gathered
    listed = ["from", dist.get_rank()] if dist.get_rank() == last else [None, None]
    dist.broadcast_object_list(listed, src=last, group=group)
    got["broadcast_object_list"] = listed
    gathered = [None] * size if dist.get_rank() == last else None
    dist.gather_object("x" * dist.get_rank(), gathered, dst=last, group=group)
    got["gather_object"] = gathered
    out = [None]
    dist.scatter_object_list(out, [[q, "y" * q] for q in range(size)] if me == 0 else None, group=group,
                             group_src=0)
    got["scatter_object_list"] = out
    if size > 1:
        received = [None, None]
        dist.send_object_list([dist.get_rank(), {"k": name}], dst=ranks[(me + 1) % size], group=group)
        source = dist.recv_object_list(received, group=group)
        got["recv_object_list"] = [source, received]
    got["queries"] = [dist.get_rank(group), dist.get_world_size(group), dist.get_process_group_ranks(group),
                      dist.get_group_rank(group, dist.get_rank()), dist.get_global_rank(group, 0),
                      dist.get_backend(group)]
    info[name] = got


def non_member(group, info):
    """What a rank outside ``group`` gets from it: warnings and -1."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info["non_member"] = [dist.all_reduce(engine.ones(2), group=group), dist.broadcast(engine.ones(2), 0, group),
                              dist.get_rank(group), dist.get_world_size(group),
                              dist.recv(engine.ones(2), group=group), group == dist.GroupMember.NON_GROUP_MEMBER]
    info["non_member_warnings"] = [str(w.message) for w in caught]


def ddp_and_sync_bn(groups, results):
    """DDP on pair12 (global rank 1 is its rank 0: its parameters win) and SyncBatchNorm on pair20."""
    from engine.nn.parallel import DistributedDataParallel as DDP
    rank = dist.get_rank()
    if rank in members("pair12"):
        engine.manual_seed(10 + rank)
        model = DDP(engine.nn.Linear(3, 2), process_group=groups["pair12"])
        model(tensor(rank_input(rank, "float32", (4 + rank, 3), "ddp"))).sum().backward()
        results[key("ddp_weight")] = host(model.module.weight.detach())
        results[key("ddp_weight_grad")] = host(model.module.weight.grad)
        results[key("ddp_bias_grad")] = host(model.module.bias.grad)
    if rank in members("pair20"):
        bn = engine.nn.SyncBatchNorm(2, process_group=groups["pair20"])
        bn(tensor(rank_input(rank, "float32", (rank + 1, 2, 3), "bn")))
        results[key("bn_running_mean")] = host(bn.running_mean)
        results[key("bn_running_var")] = host(bn.running_var)


def subgroup_helpers(info):
    """new_subgroups and new_subgroups_by_enumeration, and a collective on what they return."""
    rank = dist.get_rank()
    mine, alone = dist.new_subgroups(1)
    t = engine.ones(3) * (rank + 1)
    dist.all_reduce(t, group=mine)
    info["alone"] = [len(alone), dist.get_world_size(mine), host(t).tolist(), dist.get_process_group_ranks(mine)]
    mine, listed = dist.new_subgroups_by_enumeration([[0, 2], [1]])
    t = engine.ones(1) * (rank + 1)
    dist.all_reduce(t, group=mine)
    info["enumerated"] = [len(listed), dist.get_process_group_ranks(mine), host(t).tolist()]
    if rank != 1:  # the communicator use_local_synchronization=True makes (NCCL groups only), from ranks 2 and 0
        from engine.distributed.subgroups import split_communicator
        comm = split_communicator(dist.group.WORLD.comm, [2, 0], local=True)
        info["local"] = [comm.Get_size(), comm.Get_rank()]
        comm.Free()
    mine, listed = dist.new_subgroups(3)
    info["whole"] = dist.get_process_group_ranks(mine)
    dist.destroy_process_group(mine)
    info["destroyed"] = _error(lambda: dist.all_reduce(engine.ones(1), group=mine))


def monitored(groups, info):
    """A monitored_barrier all ranks pass, then two that ranks 1 and 2 skip, then one in pair12."""
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    for wait_all in (True, False):
        if dist.get_rank() == 0:
            info[f"monitored_{wait_all}"] = _error(lambda: dist.monitored_barrier(
                timeout=datetime.timedelta(seconds=0.3), wait_all_ranks=wait_all))
        dist.barrier()
    if dist.get_rank() in members("pair12"):
        dist.monitored_barrier(groups["pair12"], timeout=datetime.timedelta(seconds=30))
        info["monitored_pair12"] = "passed"


def _error(call):
    try:
        call()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def bad_calls(groups, info):
    """The one-line errors, each raised on every rank that makes the call before any communication."""
    rank = dist.get_rank()
    calls = {
        "duplicate": lambda: dist.new_group([0, 0]),
        "out_of_range": lambda: dist.new_group([0, 5]),
        "not_integers": lambda: dist.new_group(["a"]),
        "local_sync_mpi": lambda: dist.new_group([0, 1], use_local_synchronization=True),
        "not_divisible": lambda: dist.new_subgroups(2),
        "overlap": lambda: dist.new_subgroups_by_enumeration([[0, 1], [1, 2]]),
        "both_src": lambda: dist.broadcast(engine.ones(1), src=0, group_src=0),
        "no_src": lambda: dist.broadcast(engine.ones(1)),
        "splits": lambda: dist.all_to_all_single(engine.ones(3), engine.ones(3), [1, 1, 2], [1, 1, 1]),
        "uneven": lambda: dist.all_to_all_single(engine.ones(4), engine.ones(4)),
        "p2p_op": lambda: dist.P2POp(dist.send, engine.ones(1), 1),
        "p2p_list": lambda: dist.batch_isend_irecv([engine.ones(1)]),
        "scatter_output": lambda: dist.scatter_object_list([], None),
        "gather_list": lambda: dist.gather_object(1, [None] * 3, dst=(rank + 1) % 3),
    }
    if rank == 0:
        calls.update({
            "group_rank": lambda: dist.get_group_rank(groups["pair12"], 0),
            "ranks_of_non_member": lambda: dist.get_process_group_ranks(groups["pair12"]),
            "backend_of_non_member": lambda: dist.get_backend(groups["pair12"]),
        })
    if rank in members("pair12"):
        calls.update({
            "src_outside": lambda: dist.broadcast(engine.ones(1), src=0, group=groups["pair12"]),
            "global_rank": lambda: dist.get_global_rank(groups["pair12"], 2),
            "mixed_groups": lambda: dist.batch_isend_irecv([
                dist.P2POp(dist.isend, engine.ones(1), 3 - rank, group=groups["pair12"]),
                dist.P2POp(dist.irecv, engine.ones(1), 3 - rank)]),
        })
    info["errors"] = {name: _error(call) for name, call in calls.items()}


def run_groups(out):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    results, info = {}, {"group_world": [dist.group.WORLD is not None, dist.get_process_group_ranks(dist.group.WORLD)]}
    groups = {}
    for name, (ranks, sort_ranks) in GROUPS.items():
        groups[name] = dist.new_group(ranks, sort_ranks=sort_ranks)
    for name, group in groups.items():
        if rank in members(name):
            collectives(name, group, members(name), results)
            objects(name, group, members(name), info)
        elif name == "pair01":
            non_member(group, info)
    ddp_and_sync_bn(groups, results)
    subgroup_helpers(info)
    monitored(groups, info)
    bad_calls(groups, info)
    dist.barrier()
    dist.destroy_process_group()
    info["after_destroy"] = dist.is_initialized()
    save(out, rank, results, info)


def run_nccl(out):
    dist.init_process_group("nccl")
    results, ranks = {}, list(range(dist.get_world_size()))
    for dtype in DTYPES:
        for shape in NCCL_SHAPES:
            exchanges("nccl", None, ranks, dtype, shape, results)
    rank = dist.get_rank()
    dist.destroy_process_group()
    save(out, rank, results, {})


def save(out, rank, results, info):
    np.savez(os.path.join(out, f"rank{rank}.npz"), **results)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)


if __name__ == "__main__":
    if sys.argv[2] == "nccl":
        from rank_collectives import emulated_cuda
        emulated_cuda()
        DEVICE = "cuda"
        run_nccl(sys.argv[1])
    else:
        run_groups(sys.argv[1])
