"""Worker (run under mpiexec by test_distributed_ddp.py): DistributedDataParallel training of resnet18
with SyncBatchNorm on this rank's share of each batch, eagerly, with no_sync accumulation or in an
nn.Graph (``sys.argv[2]`` lists which), and the unused-parameter cases; writes OUT/rank<r>.npz/.json."""
import json
import os
import sys

import numpy as np

import engine
import engine.distributed as dist
import engine.nn.functional as F
from ddp_cases import HEADS, TwoHeads, batch_pairs, batches, heads_input, rank_part, resnet, sgd, state
from engine.nn.parallel import DistributedDataParallel as DDP


def sync_bn_resnet(rank):
    """resnet18 with SyncBatchNorm, drawn from another seed on rank 1 (the wrap gives it rank 0's)."""
    return engine.nn.SyncBatchNorm.convert_sync_batchnorm(resnet(seed=rank))


def train_eager(rank, info):
    module = sync_bn_resnet(rank)
    probe = {}

    def buckets_started(param):
        """Runs before DDP's hook of the backward's last gradient (it was registered first)."""
        probe.setdefault("started", model.reducer.next_bucket)
    module.conv1.weight.register_post_accumulate_grad_hook(buckets_started)
    model = DDP(module, bucket_cap_mb=1)
    info["keys_match"] = list(model.state_dict()) == ["module." + k for k in model.module.state_dict()]
    optimizer = sgd(model)
    for images, labels in batches():
        optimizer.zero_grad()
        F.cross_entropy(model(rank_part(images, rank)), rank_part(labels, rank)).backward()
        optimizer.step()
    info["buckets"] = len(model.reducer.buckets)
    info["started_before_last_gradient"] = probe["started"]
    return state(model.module)


def train_no_sync(rank):
    """Each step: this rank's share of the first batch of a pair under no_sync, then of the second."""
    model = DDP(sync_bn_resnet(rank), bucket_cap_mb=4)
    optimizer = sgd(model)
    for (first, first_labels), (second, second_labels) in batch_pairs():
        optimizer.zero_grad()
        with model.no_sync():
            F.cross_entropy(model(rank_part(first, rank)), rank_part(first_labels, rank)).backward()
        F.cross_entropy(model(rank_part(second, rank)), rank_part(second_labels, rank)).backward()
        optimizer.step()
    return state(model.module)


class TrainStep(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(sgd(model))

    def build(self, images, labels):
        loss = F.cross_entropy(self.model(images), labels)
        loss.backward()
        return loss


def train_graph(rank, info):
    model = DDP(sync_bn_resnet(rank))
    step = TrainStep(model)
    for images, labels in batches():
        step(rank_part(images, rank), rank_part(labels, rank))
    info["graph_plans"] = step.num_compiled
    info["graph_broadcasts"] = sum(op.name() == "BroadcastInPlace" for plan in step._plans.values() for op in plan.ops)
    info["graph_log"] = [line for plan in step._plans.values() for line in plan.log]
    return state(model.module)


def unused_parameters(rank, info):
    """Gradients with find_unused_parameters (rank 0 leaves a head out), then the error without it."""
    engine.manual_seed(0)
    model = DDP(TwoHeads(), find_unused_parameters=True)
    model(heads_input(rank), HEADS[rank]).backward()
    grads = {name: p.grad.numpy().copy() for name, p in model.module.named_parameters() if p.grad is not None}
    engine.manual_seed(0)
    strict = DDP(TwoHeads())
    strict(heads_input(rank), HEADS[rank]).backward()
    try:
        strict(heads_input(rank), HEADS[rank])
        info["unused_error"] = None
    except RuntimeError as e:
        info["unused_error"] = str(e)
    return grads


def main(out, parts):
    dist.init_process_group("mpi")
    rank = dist.get_rank()
    info = {}
    arrays = {}
    if "eager" in parts:
        arrays.update({"eager/" + k: v for k, v in train_eager(rank, info).items()})
    if "no_sync" in parts:
        arrays.update({"no_sync/" + k: v for k, v in train_no_sync(rank).items()})
    if "graph" in parts:
        arrays.update({"graph/" + k: v for k, v in train_graph(rank, info).items()})
    if "unused" in parts:
        arrays.update({"unused/" + k: v for k, v in unused_parameters(rank, info).items()})
    dist.destroy_process_group()
    np.savez(os.path.join(out, f"rank{rank}.npz"), **arrays)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(","))
