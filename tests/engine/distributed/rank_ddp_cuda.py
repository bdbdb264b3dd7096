"""Worker (run under mpiexec by test_distributed_ddp.py): DistributedDataParallel of a CUDA module on the
CPU emulation of CuPy over the NCCL transport (fake_nccl.py): rank 0 leaves a head out, inputs come
from the host and ``device_ids`` moves them; writes the gradients to OUT/rank<r>.npz."""
import os
import sys

import numpy as np

import engine
import engine.distributed as dist
from ddp_cases import HEADS, TwoHeads, heads_input
from engine.nn.parallel import DistributedDataParallel as DDP
from rank_collectives import emulated_cuda


def main(out):
    emulated_cuda()
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    engine.manual_seed(0)
    model = DDP(TwoHeads().cuda(), device_ids=[0], find_unused_parameters=True)
    model(heads_input(rank), HEADS[rank]).backward()
    grads = {name: p.grad.cpu().numpy() for name, p in model.module.named_parameters() if p.grad is not None}
    assert all(p.grad.is_cuda for p in model.module.parameters() if p.grad is not None)
    dist.destroy_process_group()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **{"unused/" + k: v for k, v in grads.items()})


if __name__ == "__main__":
    main(sys.argv[1])
