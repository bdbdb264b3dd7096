"""engine's CPU random numbers equal torch's bit for bit: the mt19937 generator (seeding, state bytes,
64-bit draws), every sampler's use of the stream (uniform, normal's vectorised and scalar paths with
their cache, integers, permutations, Bernoulli, exponential and friends, multinomial), fill order on
strided targets, initialisers, dropout masks, DataLoader shuffles and worker seeds. (FakeData's images
are checked against torchvision's in tests/flowvision/datasets; whole models in tests/flowvision/models.)"""
from fractions import Fraction

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import engine
import engine.nn.functional as F
from engine._rng.rounding import fma32, fma64
from engine.utils.data import (DataLoader, RandomSampler, SubsetRandomSampler, TensorDataset,
                               WeightedRandomSampler, get_worker_info, random_split)

ODD_SIZES = [1, 2, 7, 15, 16, 17, 31, 33, 1000, 4099, 10000]


def assert_same(ours, ref):
    """Bit-equal values, same shape and dtype."""
    a = ours.numpy() if isinstance(ours, engine.Tensor) else np.asarray(ours)
    b = ref.numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    assert np.array_equal(a, b, equal_nan=True), f"{np.count_nonzero(a != b)} of {a.size} elements differ"


def both(fn, seed=0):
    """``fn(module)`` run with engine and with torch after the same seed: (ours, torch's)."""
    engine.manual_seed(seed)
    ours = fn(engine)
    torch.manual_seed(seed)
    ref = fn(torch)
    return ours, ref


def assert_streams_in_step():
    """The default generators ended in the same state (the same numbers were drawn)."""
    assert_same(engine.get_rng_state(), torch.get_rng_state())


# ---- the generator -------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 12345, 2 ** 32 + 5, 2 ** 63 + 11, -1, -(2 ** 63)])
def test_seeded_state_bytes_equal_torch(seed):
    ours = engine.Generator().manual_seed(seed)
    ref = torch.Generator().manual_seed(seed)
    assert ours.initial_seed() == ref.initial_seed()
    assert_same(ours.get_state(), ref.get_state())


def test_default_generator_state_and_fresh_generator_seed():
    assert engine.Generator().initial_seed() == torch.Generator().initial_seed()
    assert_same(engine.Generator().get_state(), torch.Generator().get_state())
    with pytest.raises(RuntimeError, match="does not fit in 64 bits"):
        engine.manual_seed(2 ** 64)


@pytest.mark.parametrize("draws", [1, 623, 624, 625, 1250, 1873])
def test_state_bytes_after_draws_and_across_twists(draws):
    ours, ref = engine.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    engine.rand(draws, generator=ours)
    torch.rand(draws, generator=ref)
    assert_same(ours.get_state(), ref.get_state())
    assert_same(engine.Generator().set_state(ref.get_state()).get_state(), ref.get_state())


def test_torch_state_continues_on_engine_and_back():
    torch.manual_seed(3)
    torch.randn(5)  # leaves a cached normal sample in the state
    torch.rand(10)
    engine.set_rng_state(torch.get_rng_state())
    assert_same(engine.get_rng_state(), torch.get_rng_state())
    assert_same(engine.randn(7), torch.randn(7))  # starts from the cached sample
    saved = engine.get_rng_state()
    first = engine.rand(9).numpy()
    engine.set_rng_state(saved)
    assert_same(engine.rand(9), first)
    torch.set_rng_state(torch.from_numpy(saved.numpy()))
    assert_same(torch.rand(9), first)


def test_generator_objects_are_independent_of_the_default():
    engine.manual_seed(1)
    before = engine.get_rng_state().numpy()
    g = engine.Generator().manual_seed(99)
    ours = engine.randn(40, generator=g)
    assert_same(engine.get_rng_state(), before)
    assert_same(ours, torch.randn(40, generator=torch.Generator().manual_seed(99)))


def test_bad_states_are_refused_in_one_line():
    g = engine.Generator()
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056 but found the "
                                           "input RNG state size to be 3"):
        g.set_state(engine.zeros(3, dtype=engine.uint8))
    with pytest.raises(RuntimeError, match="^Invalid mt19937 state$"):
        g.set_state(engine.zeros(5056, dtype=engine.uint8))


# ---- uniform --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", ODD_SIZES)
def test_rand_float32_and_float64(size):
    assert_same(*both(lambda m: m.rand(size)))
    assert_same(*both(lambda m: m.rand(size, 3, dtype=m.float64)))


@pytest.mark.parametrize("low,high", [(-0.3, 0.7), (2.5, 3.7), (-1e-3, 5.0), (-0.0441941738, 0.0441941738),
                                      (1.0, 1.0), (100.0, 100.5), (-1e-12, 1.0), (1e-12, 3e-12)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_bounds_round_as_torch_fused_kernel(low, high, dtype):
    assert_same(*both(lambda m: m.empty(3, 1001, dtype=getattr(m, dtype)).uniform_(low, high)))


def test_uniform_float16():
    assert_same(*both(lambda m: m.empty(999, dtype=m.float16).uniform_(-2.0, 3.0)))


@pytest.mark.parametrize("view", [lambda t: t.transpose(0, 2), lambda t: t[:, ::3], lambda t: t.permute(2, 0, 1)[1:],
                                  lambda t: t.transpose(0, 1)[:, 1:, ::2]])
def test_strided_targets_fill_in_memory_order(view):
    assert_same(*both(lambda m: view(m.zeros(6, 9, 5)).uniform_(-1, 2)))
    assert_same(*both(lambda m: view(m.zeros(6, 9, 5)).normal_(0.5, 2.0)))
    assert_same(*both(lambda m: view(m.zeros(6, 9, 5)).bernoulli_(0.3)))
    assert_same(*both(lambda m: view(m.zeros(6, 9, 5, dtype=m.int64)).random_(3, 11)))


# ---- normal ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", ODD_SIZES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randn_vectorised_and_scalar_paths(size, dtype):
    assert_same(*both(lambda m: m.randn(size, dtype=getattr(m, dtype))))


def test_randn_float16_draws_per_block():
    for size in (16, 17, 40):
        assert_same(*both(lambda m: m.randn(size, dtype=m.float16)))
        assert_streams_in_step()


def test_scalar_path_caches_every_second_sample_across_calls():
    def draws(m):
        parts = [m.randn(3), m.randn(5), m.randn(20, dtype=m.float64).float(), m.randn(2, 3).reshape(-1),
                 m.empty(4, 5).t().normal_().reshape(-1), m.randn(1)]
        return m.cat(parts)
    assert_same(*both(draws))
    assert_streams_in_step()


@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (0.0, 0.02), (0.5, 1.7), (-3.0, 1e-6), (1.0, 0.0)])
@pytest.mark.parametrize("size", [5, 16, 1001])
def test_normal_mean_and_std_are_fused_as_in_torch(mean, std, size):
    assert_same(*both(lambda m: m.empty(size).normal_(mean, std)))
    assert_same(*both(lambda m: m.empty(size, dtype=m.float64).normal_(mean, std)))


def test_large_normal_fill_matches_torch():
    assert_same(*both(lambda m: m.randn(3, 333_333), seed=5))


def test_normal_function_forms():
    p = np.random.default_rng(0).random((7, 9)).astype(np.float32)
    assert_same(*both(lambda m: m.normal(m.from_numpy(p), m.from_numpy(p * 2))))
    assert_same(*both(lambda m: m.normal(m.from_numpy(p), 2.0)))
    assert_same(*both(lambda m: m.normal(1.5, m.from_numpy(p))))
    assert_same(*both(lambda m: m.normal(1.5, 0.5, (4, 5))))


def test_like_functions_follow_the_input_layout():
    x = np.random.default_rng(1).standard_normal((6, 5)).astype(np.float32)
    assert_same(*both(lambda m: m.randn_like(m.from_numpy(x).t())))
    assert_same(*both(lambda m: m.rand_like(m.from_numpy(x).t())))
    assert_same(*both(lambda m: m.randint_like(m.from_numpy(x).t(), 3, 9)))


# ---- integers, permutations, Bernoulli and the rest -----------------------------------------------------------
@pytest.mark.parametrize("low,high", [(0, 10), (-5, 7), (0, 2 ** 28 - 1), (0, 2 ** 28), (3, 2 ** 40),
                                      (-2 ** 62, 2 ** 62)])
def test_randint_ranges(low, high):
    assert_same(*both(lambda m: m.randint(low, high, (3, 41))))


def test_randint_dtypes_and_short_forms():
    assert_same(*both(lambda m: m.randint(9, (50,), dtype=m.int32)))
    assert_same(*both(lambda m: m.randint(-4, 9, (50,), dtype=m.float32)))
    assert_same(*both(lambda m: m.randint(0, 2, (50,), dtype=m.bool)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int16", "uint8", "bool"])
def test_random_forms(dtype):
    assert_same(*both(lambda m: m.empty(60, dtype=getattr(m, dtype)).random_()))
    assert_same(*both(lambda m: m.empty(60, dtype=getattr(m, dtype)).random_(2)))
    if dtype != "bool":
        assert_same(*both(lambda m: m.empty(60, dtype=getattr(m, dtype)).random_(1, 7)))
        assert_same(*both(lambda m: m.empty(60, dtype=getattr(m, dtype)).random_(3, None)))
    if dtype in ("int64", "float32", "float64"):
        assert_same(*both(lambda m: m.empty(60, dtype=getattr(m, dtype)).random_(-2 ** 63, None)))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 100, 1001, 4097])
def test_randperm(n):
    assert_same(*both(lambda m: m.randperm(n)))
    assert_same(*both(lambda m: m.randperm(n, dtype=m.int32)))


def test_bernoulli_forms():
    p = np.random.default_rng(0).random((7, 9)).astype(np.float32)
    assert_same(*both(lambda m: m.empty(40, 30).bernoulli_(0.3)))
    assert_same(*both(lambda m: m.empty(40, 30, dtype=m.float64).bernoulli_(0.7)))
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(p))))
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(p.astype(np.float64)))))
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(p), 0.25)))
    assert_same(*both(lambda m: m.zeros(7, 9).bernoulli_(m.from_numpy(p))))
    assert_same(*both(lambda m: m.zeros(9, 7).t().bernoulli_(m.from_numpy(p[:1]))))
    # torch.bernoulli draws into a contiguous result whatever the input's layout: expanded, channels-last, strided
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(p[:1]).expand(5, 9))))
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(p[:, :1]).expand(7, 4))))
    x = np.random.default_rng(1).random((2, 3, 4, 5)).astype(np.float32)
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(x).contiguous(memory_format=m.channels_last))))
    assert_same(*both(lambda m: m.bernoulli(m.from_numpy(x)[:, :, ::2].transpose(1, 3))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exponential_geometric_log_normal_cauchy(dtype):
    assert_same(*both(lambda m: m.empty(101, dtype=getattr(m, dtype)).exponential_(2.5)))
    assert_same(*both(lambda m: m.empty(101, dtype=getattr(m, dtype)).geometric_(0.3)))
    assert_same(*both(lambda m: m.empty(101, dtype=getattr(m, dtype)).log_normal_(0.5, 0.7)))
    assert_same(*both(lambda m: m.empty(101, dtype=getattr(m, dtype)).cauchy_(0.5, 2.0)))


@pytest.mark.parametrize("count,replacement", [(1, True), (1, False), (5, False), (13, True), (9, False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_multinomial(count, replacement, dtype):
    p = np.random.default_rng(2).random((4, 9)).astype(dtype)
    p[1, 3] = 0
    assert_same(*both(lambda m: m.multinomial(m.from_numpy(p), count, replacement)))
    assert_same(*both(lambda m: m.multinomial(m.from_numpy(p[0]), count, replacement)))


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(RuntimeError, match=r"^random_ expects 'from' to be less than 'to', but got from=5 >= to=5$"):
        engine.randint(5, 5, (3,))
    with pytest.raises(RuntimeError, match=r"^normal expects std >= 0.0, but found std -1$"):
        engine.empty(3).normal_(0, -1)
    with pytest.raises(RuntimeError, match=r"^bernoulli_ expects p to be in \[0, 1\], but got p=1.5$"):
        engine.empty(3).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match=r"^exponential_ expects lambda > 0.0, but found lambda=0$"):
        engine.empty(3).exponential_(0)
    with pytest.raises(RuntimeError, match="check_uniform_bounds\" not implemented for 'Long'"):
        engine.empty(3, dtype=engine.int64).uniform_()
    with pytest.raises(RuntimeError, match="^n must be non-negative, got-1$"):
        engine.randperm(-1)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        engine.multinomial(engine.ones(3), 4)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        engine.multinomial(engine.zeros(3), 1)


# ---- the exact roundings the kernels rely on ----------------------------------------------------------------
def _nearest_float32(exact):
    """The float32 nearest to a Fraction (ties to even)."""
    guess = np.float32(float(exact))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    return min(candidates, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(np.int32)) & 1))


def test_fma32_rounds_once_even_where_float64_lands_halfway():
    a = np.float32(2.0 ** -24 * (1 + 2.0 ** -23))
    b = np.float32(1 - 2.0 ** -23)
    c = np.float32(1 + 2.0 ** -23)  # a*b + c is just below a float32 midpoint; float64 rounds onto it
    assert np.float32(np.float64(a) * np.float64(b) + np.float64(c)) != c
    assert fma32(np.array([a]), np.array([b]), np.array([c]))[0] == c
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2000)).astype(np.float32)
    z = (rng.standard_normal(2000) * 10.0 ** rng.integers(-6, 6, 2000)).astype(np.float32)
    expected = [_nearest_float32(Fraction(float(p)) * Fraction(float(q)) + Fraction(float(r)))
                for p, q, r in zip(x, y, z)]
    assert_same(fma32(x, y, z), np.array(expected, np.float32))


def test_fma64_is_correctly_rounded():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(3000) * 10.0 ** rng.integers(-5, 5, 3000)
    y, z = rng.standard_normal(3000), rng.standard_normal(3000) * 10.0 ** rng.integers(-8, 3, 3000)
    expected = [float(Fraction(p) * Fraction(q) + Fraction(r)) for p, q, r in zip(x, y, z)]
    assert_same(fma64(x, y, z), np.array(expected))


# ---- initialisers and layers -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs", [("uniform_", {"a": -0.3, "b": 0.9}), ("normal_", {"mean": 0.2, "std": 0.7}),
                                         ("xavier_uniform_", {"gain": 1.7}), ("xavier_normal_", {"gain": 0.5}),
                                         ("kaiming_uniform_", {"a": 5 ** 0.5}),
                                         ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
                                         ("trunc_normal_", {"std": 0.02}),
                                         ("trunc_normal_", {"mean": 0.3, "std": 1.0, "a": -0.5, "b": 1.5}),
                                         ("trunc_normal_", {"mean": 0.0, "std": 1.0, "a": 0.5, "b": 2.5})])
@pytest.mark.parametrize("shape", [(64, 3, 7, 7), (5, 3), (1000, 13)])
def test_initialisers_equal_torch(name, kwargs, shape):
    ours, ref = both(lambda m: getattr(m.nn.init, name)(m.empty(*shape), **kwargs))
    assert_same(ours, ref)
    assert_streams_in_step()


def test_trunc_normal_redraws_out_of_range_values():
    ours, ref = both(lambda m: m.nn.init.trunc_normal_(m.empty(40, 50), std=1.0, a=-1.0, b=1.0))
    assert_same(ours, ref)
    assert_streams_in_step()


def test_orthogonal_draws_torch_normals_and_agrees_to_rounding():
    for shape in [(6, 4), (4, 6), (5, 2, 3)]:
        ours, ref = both(lambda m: m.nn.init.orthogonal_(m.empty(*shape), gain=2.0))
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=1e-5)
        assert_streams_in_step()


@pytest.mark.parametrize("make", [lambda nn: nn.Linear(13, 7), lambda nn: nn.Linear(13, 7, bias=False),
                                  lambda nn: nn.Conv2d(8, 16, 3, groups=4), lambda nn: nn.Conv1d(6, 4, 3),
                                  lambda nn: nn.ConvTranspose2d(6, 4, 3), lambda nn: nn.Embedding(10, 4),
                                  lambda nn: nn.MultiheadAttention(16, 4, kdim=8, vdim=6),
                                  lambda nn: nn.TransformerEncoderLayer(16, 4, 32), lambda nn: nn.PReLU()])
def test_layer_default_initialisation_equals_torch(make):
    ours, ref = both(lambda m: make(m.nn))
    for key, value in ref.state_dict().items():
        assert_same(ours.state_dict()[key], value)
    assert_streams_in_step()


# ---- dropout -----------------------------------------------------------------------------------------------
X = np.random.default_rng(3).standard_normal((4, 6, 5, 3)).astype(np.float32)


@pytest.mark.parametrize("call", [lambda F, x: F.dropout(x, 0.3, True), lambda F, x: F.dropout(x, 0.5, True, True),
                                  lambda F, x: F.dropout(x.transpose(1, 3), 0.2, True),
                                  lambda F, x: F.dropout2d(x, 0.4, True),
                                  lambda F, x: F.dropout1d(x.reshape(4, 6, 15), 0.4, True),
                                  lambda F, x: F.dropout3d(x.unsqueeze(2), 0.25, True),
                                  lambda F, x: F.alpha_dropout(x, 0.2, True)])
def test_dropout_masks_and_outputs_equal_torch(call):
    ours, ref = both(lambda m: call(m.nn.functional, m.from_numpy(X.copy())))
    assert_same(ours.detach(), ref.detach())
    assert_streams_in_step()


def test_dropout_module_in_training_and_its_gradient():
    ours, ref = both(lambda m: m.nn.Dropout(0.5)(m.from_numpy(X).requires_grad_()))
    assert_same(ours.detach(), ref.detach())
    ours.sum().backward()
    ref.sum().backward()


def test_dropout_in_eval_mode_draws_nothing():
    engine.manual_seed(0)
    before = engine.get_rng_state().numpy()
    assert F.dropout(engine.from_numpy(X), 0.5, training=False) is not None
    assert_same(engine.get_rng_state(), before)


# ---- data loading ----------------------------------------------------------------------------------------------
def _orders(m, data, **kwargs):
    loader = (DataLoader if m is engine else tud.DataLoader)(data(m), **kwargs)
    return [batch[0].tolist() for batch in loader]


def _tensor_data(m):
    return (TensorDataset if m is engine else tud.TensorDataset)(m.arange(23))


@pytest.mark.parametrize("kwargs", [{"shuffle": True, "batch_size": 5},
                                    {"shuffle": True, "batch_size": 4, "drop_last": True}])
def test_dataloader_shuffle_order_equals_torch(kwargs):
    ours, ref = both(lambda m: [_orders(m, _tensor_data, **kwargs) for _ in range(3)])
    assert ours == ref
    gen_ours = engine.Generator().manual_seed(5)
    gen_ref = torch.Generator().manual_seed(5)
    assert _orders(engine, _tensor_data, generator=gen_ours, **kwargs) == \
        _orders(torch, _tensor_data, generator=gen_ref, **kwargs)


def test_samplers_equal_torch():
    def draws(m):
        data = list(range(37))
        random_sampler = RandomSampler if m is engine else tud.RandomSampler
        subset = SubsetRandomSampler if m is engine else tud.SubsetRandomSampler
        weighted = WeightedRandomSampler if m is engine else tud.WeightedRandomSampler
        split = random_split if m is engine else tud.random_split
        weights = [0.1, 2.0, 0.5, 0.0, 3.0, 1.0]
        return [list(random_sampler(data)), list(random_sampler(data, replacement=True, num_samples=75)),
                list(random_sampler(data, num_samples=80)), list(subset([3, 9, 4, 1, 7])),
                list(weighted(weights, 20)), list(weighted(weights, 4, replacement=False)),
                [list(s.indices) for s in split(data, [10, 20, 7])]]
    ours, ref = both(draws)
    assert ours == ref


class _WorkerSeeds(tud.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = get_worker_info() or tud.get_worker_info()
        return [info.seed, int(np.random.randint(0, 2 ** 31)), float(engine.rand(1)) if get_worker_info() else
                float(torch.rand(1))]


def test_worker_seeds_equal_torch():
    def seeds(m):
        loader = (DataLoader if m is engine else tud.DataLoader)(_WorkerSeeds(), batch_size=None, num_workers=2)
        return sorted(tuple(float(v) for v in item) for item in loader)
    ours, ref = both(seeds, seed=11)
    assert ours == ref



# ---- GPU tensors ------------------------------------------------------------------------------------------
def test_in_place_samplers_on_the_gpu_draw_there(cuda):
    engine.manual_seed(4)
    cpu_state = engine.get_rng_state().numpy()
    filled = [engine.empty(300, device="cuda").uniform_(-2, 3), engine.empty(300, device="cuda").normal_(1, 2),
              engine.empty(300, device="cuda").bernoulli_(0.25), engine.empty(300, device="cuda").exponential_(2),
              engine.empty(300, dtype=engine.int64, device="cuda").random_(3, 9)]
    assert all(t.device.type == "cuda" for t in filled)
    assert_same(engine.get_rng_state(), cpu_state)  # the CPU stream is untouched, as in torch
    uniform, normal, coin, exponential, integers = (t.cpu().numpy() for t in filled)
    assert -2 <= uniform.min() and uniform.max() < 3 and abs(normal.mean() - 1) < 0.4
    assert set(np.unique(coin)) <= {0, 1} and exponential.min() >= 0 and 3 <= integers.min() and integers.max() < 9
    engine.manual_seed(4)
    assert_same(engine.empty(300, device="cuda").uniform_(-2, 3).cpu(), uniform)
