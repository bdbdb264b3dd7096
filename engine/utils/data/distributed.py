"""``DistributedSampler``: each rank of a process group visits its own share of a dataset's indices.

As torch's: with ``shuffle`` the indices are ``randperm(len(dataset))`` of a generator seeded with
``seed + epoch`` (so every rank draws the same permutation, and ``set_epoch`` changes it each epoch);
without ``drop_last`` the list is padded by repeating its start until every rank gets equally many,
with ``drop_last`` its tail is cut instead; rank r then takes every ``num_replicas``-th index from r.
"""
import math

from ... import random as _random
from ...ops.creation import randperm
from .sampler import Sampler, _T_co


def _group_placement(num_replicas, rank):
    """``(num_replicas, rank)``, missing values taken from the default process group (torch's ValueError where
    none is initialised)."""
    if num_replicas is None or rank is None:
        from ... import distributed
        if not distributed.is_available():
            raise RuntimeError("Requires distributed package to be available")
        num_replicas = distributed.get_world_size() if num_replicas is None else num_replicas
        rank = distributed.get_rank() if rank is None else rank
    if rank >= num_replicas or rank < 0:
        raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
    return num_replicas, rank


class DistributedSampler(Sampler[_T_co]):
    """The indices of rank ``rank`` out of ``num_replicas`` (see the module docstring)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        self.num_replicas, self.rank = _group_placement(num_replicas, rank)
        self.dataset = dataset
        self.epoch = 0
        self.drop_last = drop_last
        self.shuffle = shuffle
        self.seed = seed
        size = len(dataset)
        if drop_last and size % self.num_replicas != 0:
            self.num_samples = math.ceil((size - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(size / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def _all_indices(self):
        """The whole epoch's indices (every rank's), padded or cut to ``total_size``."""
        size = len(self.dataset)
        if self.shuffle:
            generator = _random.Generator()
            generator.manual_seed(self.seed + self.epoch)
            indices = randperm(size, generator=generator).tolist()
        else:
            indices = list(range(size))
        if self.drop_last:
            return indices[:self.total_size]
        missing = self.total_size - len(indices)
        repeats = math.ceil(missing / len(indices)) if indices else 0
        return indices + (indices * repeats)[:missing]

    def __iter__(self):
        return iter(self._all_indices()[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Draw a different permutation for ``epoch`` (call before each epoch's DataLoader iteration)."""
        self.epoch = epoch
