"""Time one training step of a zoo model, in one process or as DistributedDataParallel on several
(``scripts/bench.py --suite distributed`` runs it both ways).

    python scripts/ddp_step_timer.py [--model resnet50] [--batch 4] [--size 224] [--repeat 5]
    python -m engine.distributed.run --nproc-per-node 2 scripts/ddp_step_timer.py [...]

A step is forward, cross-entropy, backward (under DDP with its bucketed all-reduces) and an SGD-momentum
update on ``--batch`` random samples per process. Rank 0 prints the median step time of ``--repeat``
steps after one warm-up step as JSON on its last line.
"""
import argparse
import json
import statistics
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=4, help="samples per process")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads per process")
    args = parser.parse_args()

    import engine
    import engine.distributed as dist
    import engine.nn.functional as F
    import flowvision.models
    from engine.nn.parallel import DistributedDataParallel

    engine.set_num_threads(args.threads)
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    engine.manual_seed(0)
    model = flowvision.models.get_model(args.model)
    if world > 1:
        model = DistributedDataParallel(model)
    optimizer = engine.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(rank)
    images = engine.from_numpy(rng.standard_normal((args.batch, 3, args.size, args.size), dtype=np.float32))
    labels = engine.from_numpy(rng.integers(0, 1000, args.batch))
    times = []
    for _ in range(args.repeat + 1):
        start = time.perf_counter()
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps({"model": args.model, "processes": world, "batch": args.batch,
                          "median_s": statistics.median(times[1:])}))


if __name__ == "__main__":
    main()
