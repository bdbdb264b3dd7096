"""Train resnet18 on several processes with DistributedDataParallel — PyTorch code, no PyTorch.

    python -m engine.distributed.run --nproc-per-node 2 scripts/train_ddp.py [--epochs 2] [--graph]

The shipped digits (8x8, resized to 32x32) are shared out by a DistributedSampler; each process trains
its replica on its share of every batch, gradients are averaged during the backward, and BatchNorm is
SyncBatchNorm, so the run trains as one process would on the whole batch. ``--graph`` compiles the
training step with nn.Graph. Rank 0 prints the mean loss of each epoch over all ranks and, at the end,
the held-out accuracy.
"""
import argparse
import time

import engine as torch
import engine.distributed as dist
import engine.nn.functional as F
from engine.nn.parallel import DistributedDataParallel
from engine.utils.data import DataLoader, DistributedSampler, TensorDataset
from flowvision.datasets import load_digits
from flowvision.models import resnet18


class TrainStep(torch.nn.Graph):
    """One compiled training step: forward, loss, backward (with its all-reduces) and the optimizer."""

    def __init__(self, model, optimizer):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)

    def build(self, images, labels):
        loss = F.cross_entropy(self.model(images), labels)
        loss.backward()
        return loss


def resized(images, size):
    return F.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)


def evaluate(model, images, labels, size):
    model.eval()
    with torch.no_grad():
        predictions = model(resized(torch.from_numpy(images), size)).argmax(1).numpy()
    model.train()
    return float((predictions == labels).mean())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per process and step")
    parser.add_argument("--size", type=int, default=32, help="image side the digits are resized to")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--graph", action="store_true", help="compile the training step with nn.Graph")
    parser.add_argument("--max-steps", type=int, default=None, help="stop each epoch after this many steps")
    args = parser.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    (train_x, train_y), (test_x, test_y) = load_digits()
    dataset = TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y))
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    torch.manual_seed(0)
    model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(resnet18(num_classes=10, in_chans=1))
    model = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = TrainStep(model, optimizer) if args.graph else None

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        start = time.perf_counter()
        total, steps = torch.zeros(2, dtype=torch.float64), 0
        for images, labels in loader:
            images = resized(images, args.size)
            if step is not None:
                loss = step(images, labels)
            else:
                optimizer.zero_grad()
                loss = F.cross_entropy(model(images), labels)
                loss.backward()
                optimizer.step()
            total += torch.tensor([loss.item(), 1.0], dtype=torch.float64)
            steps += 1
            if args.max_steps is not None and steps >= args.max_steps:
                break
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {total[0].item() / total[1].item():.4f} over {world} processes, "
                  f"{steps} steps of {world} x {args.batch_size} samples in {time.perf_counter() - start:.1f} s",
                  flush=True)
    if rank == 0:
        print(f"held-out accuracy {evaluate(model.module, test_x, test_y, args.size):.3f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
