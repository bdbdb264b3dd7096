"""Differential checks of engine.utils.data against torch.utils.data, for the cases a fuzzer found diverging
(tests/engine/test_data.py has the broad promise): WeightedRandomSampler's lazy validation and float64 tensor,
torch's strict integer checks, default_collate/default_convert keeping tuples of strings, defaultdicts and list
subclasses and inferring numpy scalars' dtype as torch does, TensorDataset's and Subset's errors, the generic
(subscriptable) classes, DataLoader's in_order, multiprocessing_context checks, iterator length, timeout without
workers and the IterableDataset length warning, the frozen WorkerInfo, KeyErrors from workers, and a forked worker
that must not stop another loader's workers. A representative sample of the sweeps that matched torch (sampler and
loader orders with one seed) rides along."""
import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import engine
import engine.utils.data as eud

pytestmark = pytest.mark.slow

Pair = collections.namedtuple("Pair", "x y")


class Tagged(list):
    """A list subclass with an attribute: collation must keep both."""

    tag = None


def plain(x):
    """Tensors as (dtype name, shape, values); containers keep their type's name; other values as they are."""
    if isinstance(x, (torch.Tensor, engine.Tensor)):
        return str(x.dtype).split(".")[-1], tuple(x.shape), x.tolist()
    if isinstance(x, dict):
        return type(x).__name__, [(k, plain(v)) for k, v in x.items()]
    if isinstance(x, (list, tuple)):
        return type(x).__name__, [plain(v) for v in x]
    return x


def both(fn, seed=0):
    """``fn(module, data_module)`` for engine and torch after the same manual_seed, with a draw from each
    default stream afterwards (so the streams must end in step)."""
    out = []
    for mod, data in ((engine, eud), (torch, tud)):
        mod.manual_seed(seed)
        out.append(plain((fn(mod, data), mod.randint(0, 1000, (2,)))))
    return out


# ---- samplers ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("weights, num, replacement, match", [
    ([1.0, -1.0], 2, True, "probability tensor contains|encountering probability entry < 0"),
    ([0.0, 0.0], 2, True, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    ([1.0, 1.0], 3, False, r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
])
def test_weighted_sampler_checks_weights_when_iterated(weights, num, replacement, match):
    for data in (eud, tud):
        sampler = data.WeightedRandomSampler(weights, num, replacement=replacement)
        with pytest.raises(RuntimeError, match=match):
            list(sampler)


def test_weighted_sampler_keeps_a_float64_tensor():
    ours = eud.WeightedRandomSampler(np.array([1, 2, 3], dtype=np.int32), 2).weights
    assert isinstance(ours, engine.Tensor) and plain(ours) == plain(tud.WeightedRandomSampler([1, 2, 3], 2).weights)


@pytest.mark.parametrize("seed, n, num, replacement, generator", [
    (0, 7, 5, True, False), (3, 9, 9, False, True), (11, 1, 4, True, True), (5, 13, 2, False, False)])
def test_weighted_sampler_draws_torchs_indices(seed, n, num, replacement, generator):
    weights = np.random.RandomState(seed).rand(n).tolist()
    ours, ref = both(lambda m, d: list(d.WeightedRandomSampler(
        weights, num, replacement, generator=m.Generator().manual_seed(seed) if generator else None)), seed)
    assert ours == ref


@pytest.mark.parametrize("make, message", [
    (lambda d: d.RandomSampler(range(3), num_samples=np.int64(2)), "num_samples=2"),
    (lambda d: d.WeightedRandomSampler([1.0, 1.0], np.int64(1)), "num_samples=1"),
    (lambda d: d.WeightedRandomSampler([1.0, 1.0], True), "num_samples=True"),
    (lambda d: d.BatchSampler(range(3), np.int64(2), False), "batch_size=2"),
    (lambda d: d.BatchSampler(range(3), 2.0, False), "batch_size=2.0"),
])
def test_sizes_must_be_python_ints(make, message):
    for data in (eud, tud):
        with pytest.raises(ValueError, match=f"should be a positive integer value, but got {message}"):
            make(data)


def test_random_sampler_takes_num_samples_true_as_torch_does():
    ours, ref = both(lambda m, d: list(d.RandomSampler(range(4), num_samples=True)), 2)
    assert ours == ref


@pytest.mark.parametrize("n, replacement, num_samples, generator, seed", [
    (7, False, None, False, 0), (5, True, 40, True, 1), (6, False, 14, False, 2), (1, True, None, True, 3)])
def test_random_sampler_orders_match_torchs(n, replacement, num_samples, generator, seed):
    def order(m, d):
        g = m.Generator().manual_seed(seed + 9) if generator else None
        sampler = d.RandomSampler(range(n), replacement=replacement, num_samples=num_samples, generator=g)
        return list(sampler), list(sampler)
    ours, ref = both(order, seed)
    assert ours == ref


# ---- collation ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [
    lambda m: [("a", 1), ("b", 2)],
    lambda m: [Pair(b"x", m.ones(2)), Pair(b"y", m.zeros(2))],
    lambda m: [{"k": ("s", [1.5])}, {"k": ("t", [2.5])}],
    lambda m: [collections.defaultdict(list, a=1), collections.defaultdict(list, a=2)],
    lambda m: [collections.OrderedDict(b=np.float32(1), a=2), collections.OrderedDict(b=np.float32(3), a=4)],
    lambda m: [np.int32(1), np.float16(2)],
    lambda m: [np.float16(1), 3.5],
    lambda m: [np.complex64(1), 3],
    lambda m: [np.uint8(1), np.int8(2)],
])
def test_default_collate_matches_torch(batch):
    assert plain(eud.default_collate(batch(engine))) == plain(tud.default_collate(batch(torch)))


def test_collation_keeps_defaultdict_factories_and_list_subclasses():
    sample = Tagged([np.zeros(2)])
    sample.tag = "t"
    for collate in (eud.default_collate, lambda b: eud.default_convert(b[0])):
        out = collate([collections.defaultdict(int, a=sample)])
        assert out.default_factory is int and type(out["a"]) is Tagged and out["a"].tag == "t"


@pytest.mark.parametrize("data", [
    lambda m: collections.defaultdict(list, a=np.arange(3)), lambda m: (np.zeros(1), "a"), lambda m: np.float16(2)])
def test_default_convert_matches_torch(data):
    assert plain(eud.default_convert(data(engine))) == plain(tud.default_convert(data(torch)))


def test_default_collate_refuses_a_non_tensor_after_a_tensor():
    for mod, data in ((engine, eud), (torch, tud)):
        with pytest.raises(TypeError, match="expected Tensor as element 1 in argument 0, but got numpy.ndarray"):
            data.default_collate([mod.zeros(2), np.zeros(2)])


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("sparse", [lambda t: t.to_sparse(), lambda t: t.to_sparse_csr()])
def test_default_collate_refuses_sparse_tensors(sparse):
    for mod, data in ((engine, eud), (torch, tud)):
        with pytest.raises(RuntimeError, match="^Batches of sparse tensors are not currently supported"):
            data.default_collate([sparse(mod.eye(2))] * 2)


# ---- datasets ---------------------------------------------------------------------------------------------
def test_tensor_dataset_size_mismatch_is_an_assertion():
    for mod, data in ((engine, eud), (torch, tud)):
        with pytest.raises(AssertionError, match="^Size mismatch between tensors$"):
            data.TensorDataset(mod.zeros(2), mod.zeros(3))


def test_subset_overriding_getitem_alone_is_refused():
    for data in (eud, tud):
        subset = type("Doubled", (data.Subset,), {"__getitem__": lambda self, i: 2 * self.dataset[i]})
        with pytest.raises(NotImplementedError, match="Doubled overrides __getitem__ but not __getitems__"):
            subset([1, 2], [0, 1])


def test_concat_dataset_keeps_the_deprecated_name():
    with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
        assert eud.ConcatDataset([[1], [2, 3]]).cummulative_sizes == [1, 3]


@pytest.mark.parametrize("name", ["Dataset", "IterableDataset", "ChainDataset", "Subset", "StackDataset",
                                  "ConcatDataset", "Sampler", "DistributedSampler", "DataLoader"])
def test_generic_classes_are_subscriptable(name):
    for data in (eud, tud):
        assert getattr(data, name)[int] is not None


def test_typed_subclasses_and_abstract_iterable_datasets():
    for data in (eud, tud):
        class Squares(data.Dataset[int]):
            def __getitem__(self, i):
                return i * i

            def __len__(self):
                return 3

        assert next(iter(data.DataLoader[int](Squares(), batch_size=3))).tolist() == [0, 1, 4]
        with pytest.raises(TypeError, match="Can't instantiate abstract class NoIter"):
            type("NoIter", (data.IterableDataset,), {})()


# ---- DataLoader ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, error, match", [
    (dict(multiprocessing_context="fork"), ValueError, "can only be used with multi-process loading"),
    (dict(num_workers=1, multiprocessing_context="bogus"), ValueError, "should specify a valid start method in"),
    (dict(num_workers=1, multiprocessing_context=3), TypeError, "should be a valid context object or a string"),
])
def test_multiprocessing_context_is_checked(kwargs, error, match):
    for data in (eud, tud):
        with pytest.raises(error, match=match):
            data.DataLoader(range(3), **kwargs)


def test_in_order_and_the_iterators_length():
    for data in (eud, tud):
        it = iter(data.DataLoader(range(5), batch_size=2, in_order=False))
        assert len(it) == 3 and next(it).tolist() == [0, 1] and len(it) == 3


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's iterator __del__
@pytest.mark.parametrize("kwargs, match", [
    (dict(timeout=5), "requires timeout == 0"),
    (dict(num_workers=1, prefetch_factor=0), "prefetch_factor must be greater than 0"),
])
def test_iterators_refuse_settings_that_cannot_work(kwargs, match):
    """A timeout without workers, and workers with nothing in flight (which would silently yield nothing)."""
    for data in (eud, tud):
        with pytest.raises(AssertionError, match=match):
            iter(data.DataLoader(range(3), **kwargs))


def test_iterable_dataset_longer_than_reported_warns():
    for data in (eud, tud):
        class Lying(data.IterableDataset):
            def __iter__(self):
                return iter(range(4))

            def __len__(self):
                return 2

        loader = data.DataLoader(Lying(), batch_size=None)
        assert len(loader) == 2
        with pytest.warns(UserWarning, match=r"was reported to be 2\(when accessing len\(dataloader\)\), but [34] samples"):
            assert list(loader) == [0, 1, 2, 3]


@pytest.mark.parametrize("n, batch_size, shuffle, generator, drop_last, seed", [
    (10, 3, True, False, False, 0), (9, None, True, True, False, 1), (7, 2, None, False, True, 2),
    (1, 4, True, True, False, 3)])
def test_loader_batches_match_torchs(n, batch_size, shuffle, generator, drop_last, seed):
    def batches(m, d):
        g = m.Generator().manual_seed(seed + 5) if generator else None
        samples = [{"i": i, "x": np.full(2, i, dtype=np.float32), "s": str(i)} for i in range(n)]
        loader = d.DataLoader(samples, batch_size=batch_size, shuffle=shuffle, generator=g, drop_last=drop_last)
        return len(loader), list(loader), list(loader)
    ours, ref = both(batches, seed)
    assert ours == ref


# ---- workers ------------------------------------------------------------------------------------------------
def test_worker_info_is_frozen_with_torchs_fields():
    info = eud.WorkerInfo(0, 2, 7, None)
    assert (info.rng, info.worker_method) == (None, "multiprocessing")
    with pytest.raises(AttributeError, match="cannot assign to field 'id'"):
        info.id = 1


def test_worker_key_error_message_reads_as_text():
    def fail(batch):
        raise KeyError("missing")
    for data in (eud, tud):
        with pytest.raises(KeyError) as caught:
            list(data.DataLoader([1, 2], num_workers=1, collate_fn=fail))
        assert str(caught.value).startswith("Caught KeyError in DataLoader worker process 0.\nOriginal Traceback")


class _Seeds:
    """Each item records the worker's torch-style seeds: initial_seed, WorkerInfo.seed and a draw."""

    def __init__(self, mod, data):
        self.mod, self.data = mod, data

    def __len__(self):
        return 6

    def __getitem__(self, i):
        info = self.data.get_worker_info()
        return i, info.id, self.mod.initial_seed(), info.seed, self.mod.rand(1).item(), float(np.random.rand())


def test_forked_worker_leaves_another_loaders_workers_running():
    """A worker forked for loader B holds a copy of persistent loader A's iterator; that copy's finalizer
    (run here explicitly, as garbage collection in the child would) must not stop A's workers. The seeds the
    workers see are torch's."""
    def epochs(mod, data):
        a = data.DataLoader(_Seeds(mod, data), batch_size=2, shuffle=True, num_workers=2, persistent_workers=True)
        first = list(a)
        finalize = getattr(a._iterator, "_finalizer", lambda: None)
        b = data.DataLoader([0, 1], num_workers=1, worker_init_fn=lambda worker_id: finalize())
        return first, list(b), list(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, ref = both(epochs, 4)
    assert ours == ref


class _Batch:
    """A custom batch type: pin_memory pins it through its own method, as torch's loader does."""

    def __init__(self, samples):
        self.x = engine.stack([s[0] for s in samples])
        self.pinned = False

    def pin_memory(self):
        self.x, self.pinned = self.x.pin_memory(), True
        return self


def test_pin_memory_reaches_custom_batches_and_defaultdicts(cuda):
    data = eud.TensorDataset(engine.arange(5.0))
    custom = list(eud.DataLoader(data, batch_size=2, collate_fn=_Batch, pin_memory=True))
    assert all(b.pinned and b.x.is_pinned() for b in custom) and custom[-1].x.tolist() == [4.0]
    keyed = eud.DataLoader(data, batch_size=3, pin_memory=True,
                           collate_fn=lambda b: collections.defaultdict(list, x=eud.default_collate(b)[0]))
    batches = list(keyed)
    assert [b.default_factory for b in batches] == [list, list]
    assert [b["x"].is_pinned() for b in batches] == [True, True] and batches[1]["x"].tolist() == [3.0, 4.0]
