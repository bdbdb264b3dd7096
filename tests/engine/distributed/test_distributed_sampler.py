"""DistributedSampler against torch's: lengths and sequences for every dataset size, replica count, rank,
drop_last and shuffle; the shuffled sequences' structure (one permutation shared by the ranks, padded
from its start or cut at its end, new each epoch); bad placements refused in one line."""
import itertools

import pytest
import torch
from torch.utils.data import DistributedSampler as TorchSampler

import engine
from engine.utils.data import DataLoader, DistributedSampler, TensorDataset

SIZES = (0, 1, 5, 7, 10, 13)
REPLICAS = (1, 2, 3, 4)
PLACEMENTS = [(n, replicas, rank) for n in SIZES for replicas in REPLICAS for rank in range(replicas)]


def _pair(n, replicas, rank, **kwargs):
    return (DistributedSampler(range(n), replicas, rank, **kwargs),
            TorchSampler(range(n), replicas, rank, **kwargs))


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n,replicas,rank", PLACEMENTS)
def test_sequential_sequences_equal_torchs(n, replicas, rank, drop_last):
    ours, theirs = _pair(n, replicas, rank, shuffle=False, drop_last=drop_last)
    assert (len(ours), ours.num_samples, ours.total_size) == (len(theirs), theirs.num_samples, theirs.total_size)
    assert list(ours) == list(theirs)


def test_shuffled_sequences_equal_torchs():
    """Needs engine.randperm with a seeded Generator to draw torch's permutations (engine/random.py)."""
    for (n, replicas, rank), drop_last, seed, epoch in itertools.product(PLACEMENTS, (False, True), (0, 7), (0, 3)):
        ours, theirs = _pair(n, replicas, rank, shuffle=True, seed=seed, drop_last=drop_last)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs), (n, replicas, rank, drop_last, seed, epoch)


def _interleaved(n, replicas, **kwargs):
    """Every rank's indices woven back into the epoch's one sequence (rank r holds positions r, r+R, ...)."""
    per_rank = [list(DistributedSampler(range(n), replicas, rank, **kwargs)) for rank in range(replicas)]
    return [indices[i] for i in range(len(per_rank[0])) for indices in per_rank]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n,replicas", [(n, r) for n in SIZES if n for r in REPLICAS])
def test_shuffled_sequences_share_one_padded_permutation(n, replicas, drop_last):
    epoch_zero = _interleaved(n, replicas, shuffle=True, seed=5, drop_last=drop_last)
    theirs = TorchSampler(range(n), replicas, 0, shuffle=True, seed=5, drop_last=drop_last)
    assert len(epoch_zero) == theirs.total_size
    if drop_last:
        assert len(set(epoch_zero)) == len(epoch_zero) and set(epoch_zero) <= set(range(n))
    else:
        assert sorted(epoch_zero[:n]) == list(range(n))
        padding = epoch_zero[n:]
        assert padding == (epoch_zero[:n] * len(padding))[:len(padding)]
    assert _interleaved(n, replicas, shuffle=True, seed=5, drop_last=drop_last) == epoch_zero


def test_set_epoch_and_seed_change_the_permutation():
    sampler = DistributedSampler(range(50), 2, 1, seed=3)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    assert list(sampler) != first
    assert list(DistributedSampler(range(50), 2, 1, seed=4)) != first


def test_feeds_a_dataloader():
    data = TensorDataset(engine.arange(11))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data, 3, 2, shuffle=False))
    theirs = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(11)), batch_size=4,
                                         sampler=TorchSampler(range(11), 3, 2, shuffle=False))
    assert [b[0].tolist() for b in loader] == [b[0].tolist() for b in theirs]


def test_bad_placements_are_refused():
    with pytest.raises(ValueError, match=r"^Invalid rank 2, rank should be in the interval \[0, 1\]$"):
        DistributedSampler(range(4), 2, 2)
    with pytest.raises(ValueError, match=r"^Invalid rank -1"):
        DistributedSampler(range(4), 2, -1)
    for placement in ({}, {"num_replicas": 2}, {"rank": 0}):  # torch's error where no process group is initialised
        with pytest.raises(ValueError) as theirs:
            TorchSampler(range(4), **placement)
        with pytest.raises(ValueError) as ours:
            DistributedSampler(range(4), **placement)
        assert str(ours.value) == str(theirs.value)
