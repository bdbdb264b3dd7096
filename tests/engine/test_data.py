"""engine.utils.data: datasets, samplers, collation (vs torch.utils.data.default_collate) and the DataLoader."""
import collections
import os
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import engine
from engine.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, IterableDataset,
                               RandomSampler, SequentialSampler, Subset, SubsetRandomSampler, TensorDataset,
                               WeightedRandomSampler, default_collate, default_convert, get_worker_info,
                               random_split)

Point = collections.namedtuple("Point", "x y")


class Squares(Dataset):
    """Item i is (i, i*i, pid of the process that fetched it, value set by worker_init_fn there)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if i >= self.n:
            raise IndexError(i)
        return {"i": i, "sq": np.array([i * i, -i], dtype=np.int64), "pid": os.getpid(),
                "init": os.environ.get("DATA_TEST_INIT", "none")}

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    """0..n-1, sharded by worker id so that each item is produced once across workers."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class Failing(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise KeyError("bad sample 3")
        return i

    def __len__(self):
        return 6


def _mark_worker(worker_id):
    os.environ["DATA_TEST_INIT"] = f"w{worker_id}-{get_worker_info().num_workers}"


def _to_numpy(obj):
    """Recursively turn engine/torch tensors into numpy arrays for comparison."""
    if isinstance(obj, (engine.Tensor, torch.Tensor)):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(v) for v in obj) if not hasattr(obj, "_fields") else type(obj)(*map(_to_numpy, obj))
    return obj


def _assert_same(ours, ref):
    assert type(ours) is type(ref) or (isinstance(ours, np.ndarray) and isinstance(ref, np.ndarray))
    if isinstance(ours, np.ndarray):
        assert ours.dtype == ref.dtype and ours.shape == ref.shape
        np.testing.assert_array_equal(ours, ref)
    elif isinstance(ours, dict):
        assert list(ours) == list(ref)
        for k in ours:
            _assert_same(ours[k], ref[k])
    elif isinstance(ours, (list, tuple)):
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref):
            _assert_same(a, b)
    else:
        assert ours == ref


# ---------------------------------------------------------------- collation

def _nested_batch(seed):
    rng = np.random.default_rng(seed)
    return [{"img": rng.standard_normal((2, 3)).astype(np.float32), "label": int(rng.integers(10)),
             "score": float(rng.random()), "flag": bool(i % 2), "name": f"s{i}",
             "np_scalar": np.float32(i), "np_int": np.int16(i),
             "pair": (i, np.arange(3, dtype=np.int32) + i), "point": Point(i, [i, 2.5 * i]),
             "seq": [np.uint8(i), [i, i + 1]]} for i in range(4)]


def test_default_collate_matches_torch():
    batch = _nested_batch(0)
    ours = default_collate(batch)
    ref = tud.default_collate(batch)
    _assert_same(_to_numpy(ours), _to_numpy(ref))
    assert isinstance(ours["img"], engine.Tensor) and ours["img"].dtype == engine.float32
    assert ours["score"].dtype == engine.float64 and ours["label"].dtype == engine.int64
    assert ours["flag"].dtype == engine.bool and isinstance(ours["pair"], list)
    assert isinstance(ours["point"], Point) and ours["name"] == ["s0", "s1", "s2", "s3"]


def test_default_collate_tensors_and_errors():
    tensors = [engine.arange(6).reshape(2, 3) * k for k in range(3)]
    ours = default_collate([(t, t.float()) for t in tensors])
    ref = tud.default_collate([(torch.from_numpy(t.numpy()), torch.from_numpy(t.numpy()).float()) for t in tensors])
    _assert_same(_to_numpy(ours), _to_numpy(ref))
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers, dicts or lists"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        default_collate([engine.zeros(2), engine.zeros(3)])


def test_default_convert_matches_torch():
    sample = {"a": np.arange(4.0), "b": (np.int64(3), "x"), "c": Point(np.ones(2), 1), "d": [np.zeros(1), b"y"],
              "e": np.array(["s"])}
    ours, ref = default_convert(sample), tud.default_convert(sample)
    assert isinstance(ours["a"], engine.Tensor) and isinstance(ours["b"], list) and isinstance(ours["c"], Point)
    assert isinstance(ours["e"], np.ndarray)
    _assert_same(_to_numpy(ours), _to_numpy(ref))


# ---------------------------------------------------------------- datasets

def test_tensor_subset_concat_chain():
    x, y = engine.arange(10).float(), engine.arange(10) * 2
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 6
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, engine.arange(3))
    sub = Subset(ds, [7, 2, 5])
    assert len(sub) == 3 and sub[0][1].item() == 14
    cat = ds + Squares(4)
    assert isinstance(cat, ConcatDataset) and len(cat) == 14 and cat.cumulative_sizes == [10, 14]
    assert cat[11]["i"] == 1 and cat[-1]["i"] == 3
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cat[-15]
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([ds, Stream(3)])
    chain = Stream(3) + Stream(2)
    assert isinstance(chain, ChainDataset) and list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
    with pytest.raises(NotImplementedError, match="should implement __getitem__"):
        Dataset()[0]


def test_random_split():
    ds = Squares(10)
    parts = random_split(ds, [3, 7], generator=engine.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    indices = parts[0].indices + parts[1].indices
    assert sorted(indices) == list(range(10))
    again = random_split(ds, [3, 7], generator=engine.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    frac = random_split(Squares(11), [0.5, 0.3, 0.2], generator=engine.Generator().manual_seed(1))
    ref = tud.random_split(range(11), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(1))
    assert [len(p) for p in frac] == [len(p) for p in ref] == [6, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(ds, [1.5, -0.5])


# ---------------------------------------------------------------- samplers

def test_samplers():
    data = range(7)
    assert list(SequentialSampler(data)) == list(range(7))
    g = engine.Generator().manual_seed(3)
    perm = list(RandomSampler(data, generator=g))
    assert sorted(perm) == list(range(7))
    assert perm == list(RandomSampler(data, generator=engine.Generator().manual_seed(3)))
    many = list(RandomSampler(data, num_samples=17, generator=g))
    assert len(many) == 17 and sorted(many[:7]) == sorted(many[7:14]) == list(range(7))
    assert set(many[14:]) <= set(range(7)) and len(set(many[14:])) == 3
    repl = list(RandomSampler(data, replacement=True, num_samples=50, generator=g))
    assert len(repl) == 50 and set(repl) <= set(range(7)) and len(set(repl)) < 50
    engine.manual_seed(5)
    first = list(RandomSampler(data))
    engine.manual_seed(5)
    assert list(RandomSampler(data)) == first
    sub = list(SubsetRandomSampler([10, 20, 30, 40], generator=g))
    assert sorted(sub) == [10, 20, 30, 40]
    weighted = list(WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 400, generator=g))
    assert set(weighted) == {1, 3} and 0.65 < weighted.count(3) / 400 < 0.85
    no_repl = list(WeightedRandomSampler(engine.tensor([1.0, 1.0, 1.0]), 3, replacement=False, generator=g))
    assert sorted(no_repl) == [0, 1, 2]
    batches = BatchSampler(SequentialSampler(range(10)), 4, drop_last=False)
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] and len(batches) == 3
    dropped = BatchSampler(SequentialSampler(range(10)), 4, drop_last=True)
    assert list(dropped) == [[0, 1, 2, 3], [4, 5, 6, 7]] and len(dropped) == 2


def test_sampler_errors():
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, drop_last=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence but given weights have shape \(2, 2\)"):
        WeightedRandomSampler([[1, 2], [3, 4]], 2)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([1.0, 2.0], 3, replacement=False))


# ---------------------------------------------------------------- DataLoader (main process)

def test_dataloader_batches_order_and_len():
    ds = TensorDataset(engine.arange(10), engine.arange(10).float() / 2)
    loader = DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].dtype == engine.float32
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [b[0].tolist() for b in DataLoader(ds, batch_size=4, drop_last=True)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    single = list(DataLoader(Squares(3), batch_size=None))
    assert single[2]["i"] == 2 and isinstance(single[2]["sq"], engine.Tensor)
    custom = DataLoader(Squares(5), batch_size=2, collate_fn=lambda b: [s["i"] for s in b])
    assert list(custom) == [[0, 1], [2, 3], [4]]
    by_batches = DataLoader(Squares(6), batch_sampler=[[5, 0], [2]])
    assert [b["i"].tolist() for b in by_batches] == [[5, 0], [2]]
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3 and len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2


def test_dataloader_shuffle_reproducible_with_generator():
    ds = TensorDataset(engine.arange(20))

    def run(seed):
        loader = DataLoader(ds, batch_size=6, shuffle=True, generator=engine.Generator().manual_seed(seed))
        return [b[0].tolist() for epoch in range(2) for b in loader]

    first = run(0)
    assert first == run(0) and first != run(1)
    assert sorted(sum(first[:4], [])) == list(range(20)) and first[:4] != first[4:]


def test_dataloader_argument_errors():
    ds = Squares(4)
    cases = [
        (dict(sampler=SequentialSampler(ds), shuffle=True), "sampler option is mutually exclusive with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive with batch_size"),
        (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
        (dict(num_workers=-1), "num_workers option should be non-negative"),
        (dict(timeout=-1), "timeout option should be non-negative"),
        (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
        (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            DataLoader(ds, **kwargs)
        with pytest.raises(ValueError, match=message.split(" option")[0]):
            tud.DataLoader(range(4), **kwargs)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    loader = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3


# ---------------------------------------------------------------- DataLoader with worker processes

def test_workers_match_single_process_and_init_per_worker():
    ds = Squares(23)
    kwargs = dict(batch_size=4, shuffle=True)
    serial = list(DataLoader(ds, generator=engine.Generator().manual_seed(7), **kwargs))
    parallel = list(DataLoader(ds, num_workers=2, worker_init_fn=_mark_worker, prefetch_factor=3,
                               generator=engine.Generator().manual_seed(7), **kwargs))
    assert [b["i"].tolist() for b in parallel] == [b["i"].tolist() for b in serial]
    for a, b in zip(parallel, serial):
        np.testing.assert_array_equal(a["sq"].numpy(), b["sq"].numpy())
    pids = {p for b in parallel for p in b["pid"].tolist()}
    assert len(pids) == 2 and os.getpid() not in pids
    inits = {(p, s) for b in parallel for p, s in zip(b["pid"].tolist(), b["init"])}
    assert {s for _, s in inits} == {"w0-2", "w1-2"} and len(inits) == 2  # one init per worker process
    assert serial[0]["init"][0] == "none"


def test_persistent_workers_reused_and_iterable_sharding():
    loader = DataLoader(Squares(9), batch_size=2, num_workers=2, persistent_workers=True)
    first, second = list(loader), list(loader)
    assert [b["i"].tolist() for b in first] == [b["i"].tolist() for b in second] == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    pids = lambda batches: {p for b in batches for p in b["pid"].tolist()}
    assert pids(first) == pids(second) and len(pids(first)) == 2
    it = iter(loader)
    next(it)  # abandon an epoch part-way: the next epoch must still be complete and in order
    assert [b["i"].tolist() for b in loader] == [b["i"].tolist() for b in first]
    other = list(DataLoader(Squares(9), batch_size=2, num_workers=2))
    assert pids(other).isdisjoint(pids(first))

    stream = DataLoader(Stream(10), batch_size=3, num_workers=2, persistent_workers=True)
    expected = [[0, 2, 4], [1, 3, 5], [6, 8], [7, 9]]  # worker 0 takes evens, worker 1 odds, round-robin
    assert [b.tolist() for b in stream] == expected and [b.tolist() for b in stream] == expected
    ref = tud.DataLoader(_TorchStream(10), batch_size=3, num_workers=2)
    assert [b.tolist() for b in ref] == expected


class _TorchStream(tud.IterableDataset):
    """Stream for torch's DataLoader (sharded the same way)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = tud.get_worker_info()
        return iter(range(info.id, self.n, info.num_workers))


class _Slow(Dataset):
    def __getitem__(self, i):
        time.sleep(1)
        return i

    def __len__(self):
        return 2


def test_worker_errors_and_timeout():
    with pytest.raises(KeyError, match="(?s)Caught KeyError in DataLoader worker process .*bad sample 3"):
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        list(DataLoader(_Slow(), num_workers=1, timeout=0.3))
