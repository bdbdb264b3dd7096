"""Worker (run under mpiexec by test_distributed_sync_batch_norm.py): nn.SyncBatchNorm in training on
this rank's samples, two steps, forward and backward; writes OUT/rank<r>.npz."""
import os
import sys

import numpy as np

import engine
import engine.distributed as dist
from sync_bn_cases import CASES, CHANNELS, STEPS, affine, rank_arrays


def main(out):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    results = {}
    weight, bias = affine()
    for case in CASES:
        layer = engine.nn.SyncBatchNorm(CHANNELS)
        layer.weight.data = engine.tensor(weight)
        layer.bias.data = engine.tensor(bias)
        for step in range(STEPS):
            x, g = rank_arrays(case, rank, step)
            x = engine.tensor(x, requires_grad=True)
            layer.zero_grad()
            y = layer(x)
            (y * engine.tensor(g)).sum().backward()
            prefix = f"{case}/{step}/"
            results[prefix + "out"] = y.detach().numpy()
            results[prefix + "input_grad"] = x.grad.numpy()
            results[prefix + "weight_grad"] = layer.weight.grad.numpy()
            results[prefix + "bias_grad"] = layer.bias.grad.numpy()
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                results[prefix + name] = getattr(layer, name).numpy().copy()
    dist.destroy_process_group()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **results)


if __name__ == "__main__":
    main(sys.argv[1])
