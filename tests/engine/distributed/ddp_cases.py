"""What the DistributedDataParallel tests train, shared by the ranks (rank_ddp.py) and the single-process
reference the test computes: resnet18 at 32x32, 5 SGD-momentum steps on 8 samples per step, split 4 per
rank; and a small two-headed model for unused parameters.

resnet18 trains in float64: in float32, the last bits in which two correct ways of summing a gradient
differ flip max-pooling and ReLU choices within a few steps (one process, its gradients changed by
1e-6 relative at the first step, ends 1e-3 away after five), so only float64 can show that the
distributed steps equal the single-process ones to 1e-5 (the collectives are tested in float32 too).
"""
import numpy as np

import engine
import engine.nn as nn
import engine.nn.functional as F

STEPS = 5
SAMPLES = 8
SIZE = 32
RANKS = 2
PER_RANK = SAMPLES // RANKS
#: small enough that the 5 steps train (at 0.05 the loss grows); every weight still moves by more than 2e-4
LR = 0.002
MOMENTUM = 0.9


def resnet(seed):
    """resnet18 (10 classes) with weights drawn from ``seed``, in float64 (see the module docstring)."""
    from flowvision.models import resnet18
    engine.manual_seed(seed)
    return resnet18(num_classes=10).double()


def batches(count=STEPS):
    """``count`` batches of (images, labels), the same in every process."""
    rng = np.random.default_rng(2024)
    return [(engine.tensor(rng.standard_normal((SAMPLES, 3, SIZE, SIZE))),
             engine.tensor(rng.integers(0, 10, SAMPLES))) for _ in range(count)]


def batch_pairs():
    """``STEPS`` pairs of batches: each step accumulates the gradients of two (two micro-batches of 8
    samples keep BatchNorm as well-conditioned as the whole batches; micro-batches of 4 are not)."""
    pairs = batches(2 * STEPS)
    return list(zip(pairs[0::2], pairs[1::2]))


def rank_part(tensor, rank, lo=0, hi=PER_RANK):
    """Samples [lo, hi) of rank ``rank``'s share of a batch."""
    return tensor[rank * PER_RANK + lo:rank * PER_RANK + hi]


def sgd(model):
    return engine.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)


def train(model, step):
    """``STEPS`` optimizer steps; ``step(optimizer, images, labels)`` does one."""
    optimizer = sgd(model)
    for images, labels in batches():
        step(optimizer, images, labels)
    return model


def whole_batch_step(model):
    def step(optimizer, images, labels):
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()
    return step


def train_accumulating(model):
    """``STEPS`` optimizer steps, each on the gradients of a pair of whole batches."""
    optimizer = sgd(model)
    for pair in batch_pairs():
        optimizer.zero_grad()
        for images, labels in pair:
            F.cross_entropy(model(images), labels).backward()
        optimizer.step()
    return model


def state(module):
    """Parameters and buffers by name, as numpy arrays."""
    return {k: v.detach().numpy().copy() for k, v in module.state_dict().items()}


class TwoHeads(nn.Module):
    """A trunk and two heads; ``forward(x, heads)`` uses only the named heads (one more head is never used)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(5, 6)
        self.left = nn.Linear(6, 3)
        self.right = nn.Linear(6, 3)
        self.never = nn.Linear(6, 3)

    def forward(self, x, heads):
        h = self.trunk(x).relu()
        return sum(getattr(self, name)(h).sum() for name in heads)


HEADS = {0: ("left",), 1: ("left", "right")}


def heads_input(rank):
    return engine.tensor(np.random.default_rng(rank).standard_normal((3, 5)).astype(np.float32))
