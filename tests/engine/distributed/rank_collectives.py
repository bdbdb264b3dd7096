"""Worker (run under mpiexec by test_distributed_collectives.py): every collective on every case of
collective_cases.py, with the backend and on the device the arguments name (``cuda`` is the CPU
emulation of CuPy, and the NCCL backend then runs on fake_nccl.py); writes this rank's results and error
messages to OUT/rank<r>.npz and .json."""
import json
import os
import sys

import numpy as np

import engine
import engine.distributed as dist
from collective_cases import DTYPES, OPS, SHAPES, key, rank_input


DEVICE = "cpu"


def tensor(array):
    return engine.tensor(array.copy(), device=DEVICE)


def zeros(shape, dtype):
    return engine.zeros(shape, dtype=getattr(engine, dtype), device=DEVICE)


def host(t):
    return t.cpu().numpy()


def run_cases(rank, size):
    results = {}
    for dtype in DTYPES:
        for shape in SHAPES:
            mine = rank_input(rank, dtype, shape)
            for op in OPS:
                t = tensor(mine)
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                results[key("all_reduce", dtype, shape, op)] = host(t)
            t = tensor(mine)
            dist.all_reduce(t, async_op=True).wait()
            results[key("all_reduce_async", dtype, shape)] = host(t)
            t = tensor(mine)
            work = dist.broadcast(t, src=1, async_op=True)
            while not work.is_completed():  # polled instead of waited on: the result is in place all the same
                pass
            results[key("broadcast_polled", dtype, shape)] = host(t)
            t = tensor(mine)
            dist.broadcast(t, src=1)
            results[key("broadcast", dtype, shape)] = host(t)
            t = tensor(mine)
            dist.reduce(t, dst=1)
            results[key("reduce", dtype, shape)] = host(t)
            gathered = [zeros(shape, dtype) for _ in range(size)]
            dist.all_gather(gathered, tensor(mine))
            results[key("all_gather", dtype, shape)] = np.stack([host(g) for g in gathered])
            out = zeros((size * shape[0],) + shape[1:], dtype)
            dist.all_gather_into_tensor(out, tensor(mine))
            results[key("all_gather_into_tensor", dtype, shape)] = host(out)
            big = rank_input(rank, dtype, (size * shape[0],) + shape[1:], "scatter")
            out = zeros(shape, dtype)
            dist.reduce_scatter_tensor(out, tensor(big))
            results[key("reduce_scatter_tensor", dtype, shape)] = host(out)
            gathered = [zeros(shape, dtype) for _ in range(size)] if rank == 0 else None
            dist.gather(tensor(mine), gathered, dst=0)
            if rank == 0:
                results[key("gather", dtype, shape)] = np.stack([host(g) for g in gathered])
            out = zeros(shape, dtype)
            parts = [tensor(rank_input(r, dtype, shape, "part")) for r in range(size)] if rank == 1 else None
            dist.scatter(out, parts, src=1)
            results[key("scatter", dtype, shape)] = host(out)
            received = zeros(shape, dtype)
            if rank == 0:
                dist.send(tensor(mine), dst=1, tag=3)
                source = dist.recv(received, src=1, tag=4)
            else:
                source = dist.recv(received, src=None if dist.get_backend() == "mpi" else 0, tag=3)  # NCCL needs src
                dist.send(tensor(mine), dst=0, tag=4)
            results[key("recv", dtype, shape)] = host(received)
            results[key("recv_source", dtype, shape)] = np.array(source)
    # a view that is not contiguous: the result lands in the view's own memory
    base = tensor(rank_input(rank, "float32", (5, 3)))
    view = base.t()
    dist.all_reduce(view)
    results[key("all_reduce_view")] = host(base)
    # bool and float16 take the MPI types around them
    flags = tensor(rank_input(rank, "int64", (9,)) > 0)
    dist.all_reduce(flags, op=dist.ReduceOp.SUM)
    results[key("all_reduce_bool_sum")] = host(flags)
    half = tensor(rank_input(rank, "float32", (6,)).astype(np.float16))
    dist.all_reduce(half, op=dist.ReduceOp.MAX)
    results[key("all_reduce_float16_max")] = host(half)
    return results


def error_messages(rank, size):
    """The one-line errors of bad calls (raised before any communication, so the ranks stay in step)."""
    def zeros(n):
        return engine.zeros(n, device=DEVICE)
    calls = {
        "list_length": lambda: dist.all_gather([zeros(2)], zeros(2)),
        "list_shape": lambda: dist.all_gather([zeros(2), zeros(3)], zeros(2)),
        "bad_src": lambda: dist.broadcast(zeros(2), src=size),
        "send_self": lambda: dist.send(zeros(2), dst=rank),
        "gather_sizes": lambda: dist.all_gather_into_tensor(zeros(3), zeros(2)),
        "bitwise_float": lambda: dist.all_reduce(zeros(2), op=dist.ReduceOp.BAND),
        "not_tensor": lambda: dist.all_reduce(np.zeros(2)),
        "not_op": lambda: dist.all_reduce(zeros(2), op="sum"),
    }
    messages = {}
    for name, call in calls.items():
        try:
            call()
            messages[name] = None
        except Exception as e:
            messages[name] = f"{type(e).__name__}: {e}"
    return messages


def main(out, backend, device):
    global DEVICE
    DEVICE = device
    dist.init_process_group(backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    info = {"rank": rank, "size": size, "backend": dist.get_backend(), "initialized": dist.is_initialized()}
    results = run_cases(rank, size)
    info["errors"] = error_messages(rank, size)
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank, "text": "x" * rank})
    info["objects"] = objects
    listed = [rank, "from rank %d" % rank] if rank == 1 else [None, None]
    dist.broadcast_object_list(listed, src=1)
    info["broadcast_objects"] = listed
    dist.barrier()
    dist.destroy_process_group()
    info["after_destroy"] = dist.is_initialized()
    dist.init_process_group(backend)  # a second group after the first was destroyed
    again = tensor(np.ones(3, np.float32) * (rank + 1))
    dist.all_reduce(again)
    info["second_group"] = host(again).tolist()
    dist.destroy_process_group()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **results)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)


_EMULATION = []  # the emulation's context, held so that it is not closed before the process ends


def emulated_cuda():
    """The CPU emulation of CuPy installed (with fake_nccl.py as its NCCL), for the rest of the process."""
    import cuda_emulator
    import fake_nccl
    context = cuda_emulator.installed()
    _EMULATION.append(context)
    emulated = context.__enter__()
    nccl = fake_nccl.module()
    emulated.cuda.nccl = nccl
    sys.modules["cupy.cuda.nccl"] = nccl


if __name__ == "__main__":
    if sys.argv[3] == "cuda":
        emulated_cuda()
    main(*sys.argv[1:4])
