"""Differential checks of engine's CPU random streams against torch's, for the cases a fuzzer found diverging
(tests/engine/test_torch_rng.py has the broad promise): the state bytes after drawing nothing, ``random_``'s
``to`` whose predecessor a floating dtype rounds up to 2^63, torch's Poisson, binomial and Gamma rejection loops,
multinomial's order of tied keys, rrelu's slopes, ``fork_rng``, and sequences of draws from interleaved generators
with a state saved mid-way."""
import random
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.random
from engine._rng import continuous, counts

pytestmark = pytest.mark.slow


def as_numpy(t):
    """Values as float64 (bfloat16 too) or int64, with the dtype's name."""
    name = str(t.dtype).split(".")[-1]
    values = t.detach().double().numpy() if t.dtype.is_floating_point else t.detach().numpy()
    return name, values


def assert_same(ours, ref):
    """Same dtype and shape, bit-equal values; the message names the first index that differs."""
    (name_a, a), (name_b, b) = as_numpy(ours), as_numpy(ref)
    assert name_a == name_b and a.shape == b.shape, (name_a, name_b, a.shape, b.shape)
    differ = np.flatnonzero(~((a == b) | (np.isnan(a) & np.isnan(b))).ravel())
    assert differ.size == 0, f"{differ.size} of {a.size} differ, first at {differ[0]}: {a.ravel()[differ[0]]} " \
                             f"vs {b.ravel()[differ[0]]}"


def assert_states_equal():
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


def both(fn, seed):
    """``fn(module)`` after ``manual_seed(seed)`` in engine and in torch; the default streams end in step."""
    engine.manual_seed(seed)
    ours = fn(engine)
    torch.manual_seed(seed)
    ref = fn(torch)
    assert_states_equal()
    return ours, ref


# ---- the state bytes after drawing nothing ---------------------------------------------------------------
@pytest.mark.parametrize("draw", [
    lambda m: m.randperm(0), lambda m: m.randperm(1), lambda m: m.randint(0, 5, (0,)),
    lambda m: m.rand(0, dtype=m.float64), lambda m: m.empty(0, dtype=m.float16).exponential_(),
    lambda m: m.empty(3, 0).bernoulli_(0.5), lambda m: m.empty(0, dtype=m.int8).random_(0, 5)])
def test_drawing_nothing_leaves_the_seeded_state(draw):
    both(draw, 11)
    engine.manual_seed(3)
    torch.manual_seed(3)
    g_ours, g_ref = engine.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    engine.randperm(1, generator=g_ours)
    torch.randperm(1, generator=g_ref)
    assert np.array_equal(g_ours.get_state().numpy(), g_ref.get_state().numpy())


# ---- random_ / randint near 2^63 on floating dtypes ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
@pytest.mark.parametrize("low,high", [(0, 2 ** 63 - 1), (0, 2 ** 63 - 2), (-2 ** 63, 2 ** 63 - 1),
                                      (2 ** 62, 2 ** 63 - 1), (0, 2 ** 63 - 1024), (2 ** 63 - 2 ** 40, 2 ** 63 - 1),
                                      (-2 ** 63, -2 ** 62), (0, 2 ** 40 + 1), (5, 2 ** 25 + 3)])
def test_random_from_to_where_to_minus_one_rounds_past_int64(dtype, low, high):
    """torch casts the rounded ``to - 1`` back to int64 before comparing: 2^63 wraps to -2^63, so such a ``to``
    is kept as given."""
    def draw(m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return m.empty(300, dtype=getattr(m, dtype)).random_(low, high)
            except RuntimeError as error:
                return str(error)
    ours, ref = both(draw, 3)
    if isinstance(ref, str):
        assert ours == ref
    else:
        assert_same(ours, ref)


@pytest.mark.filterwarnings("ignore:from is out of bounds", "ignore:to - 1 is out of bounds")
def test_randint_full_range_bfloat16():
    ours, ref = both(lambda m: m.randint(-2 ** 63, 2 ** 63 - 1, (4096,), dtype=m.bfloat16), 0)
    assert_same(ours, ref)


# ---- Poisson and binomial counts: torch's rejection loops -----------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize("scale", [0.5, 9.9, 10.0, 40.0, 3000.0])
def test_poisson_equals_torch(dtype, scale):
    def draw(m):
        rates = m.rand(3, 19, dtype=getattr(m, dtype)) * scale
        rates[0, 0] = 0
        return m.poisson(rates.t())  # a transposed input: drawn in the output's order
    ours, ref = both(draw, int(scale * 7))
    assert_same(ours, ref)


def test_poisson_with_a_generator_and_twice_in_a_row():
    rates = np.linspace(0, 30, 37)
    g_ours, g_ref = engine.Generator().manual_seed(8), torch.Generator().manual_seed(8)
    for _ in range(2):
        ours = engine.poisson(engine.tensor(rates), generator=g_ours)
        ref = torch.poisson(torch.tensor(rates), generator=g_ref)
        assert_same(ours, ref)
    assert np.array_equal(g_ours.get_state().numpy(), g_ref.get_state().numpy())


@pytest.mark.parametrize("bad", [-1.0, float("nan")])
def test_poisson_refuses_a_negative_or_nan_rate(bad):
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        engine.poisson(engine.tensor([1.0, bad]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("most,probs", [(5, "low"), (30, "any"), (1000, "any"), (40, "high"), (10 ** 5, "any")])
def test_binomial_equals_torch(dtype, most, probs):
    def draw(m):
        count = m.floor(m.rand(2, 23, dtype=getattr(m, dtype)) * most)
        prob = m.rand(2, 23, dtype=getattr(m, dtype))
        prob = prob * 0.2 if probs == "low" else 0.8 + 0.2 * prob if probs == "high" else prob
        count[0, 0], prob[0, 1], prob[0, 2] = 0, 0, 1
        return m.binomial(count, prob)
    ours, ref = both(draw, most)
    assert_same(ours, ref)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binomial_of_huge_counts_and_probabilities_outside_0_1(dtype):
    """Huge counts floor a double straight into the count's type (no int64 on the way); torch does not check the
    probabilities: p >= 1 gives the count, p <= 0 zero."""
    def draw(m):
        count = m.tensor([1e20, 3e9, 7e15, 5.0, 5.0, 3.0, 40.0], dtype=getattr(m, dtype))
        return m.binomial(count, m.tensor([0.5, 0.3, 0.99, 1.5, -0.5, 0.0, 1.0], dtype=getattr(m, dtype)))
    ours, ref = both(draw, 0)
    assert_same(ours, ref)


def test_binomial_of_nan_or_infinite_count_returns():
    """torch's loop never ends there; ours returns NaN and the infinite count."""
    out = engine.binomial(engine.tensor([float("nan"), 10.0, float("inf")]), engine.tensor([0.5, float("nan"), 0.5]))
    assert np.isnan(out.numpy()[:2]).all() and out.numpy()[2] == np.inf


def test_counts_on_cuda_use_the_host_generator(cuda):
    rates = np.linspace(0, 25, 33)
    ours = engine.poisson(engine.tensor(rates, device="cuda"), generator=engine.Generator().manual_seed(4))
    ref = torch.poisson(torch.tensor(rates), generator=torch.Generator().manual_seed(4))
    assert ours.device.type == "cuda"
    assert_same(ours.cpu(), ref)
    ours = engine.binomial(engine.full((9,), 30.0, device="cuda"), engine.full((9,), 0.4, device="cuda"),
                           generator=engine.Generator().manual_seed(4))
    ref = torch.binomial(torch.full((9,), 30.0), torch.full((9,), 0.4), generator=torch.Generator().manual_seed(4))
    assert_same(ours.cpu(), ref)


# ---- multinomial without replacement: tied keys come in torch's top-k order ------------------------------------------
@pytest.mark.parametrize("categories,count,kind", [(16, 9, "zeros"), (100, 72, "zeros"), (20, 20, "one"),
                                                   (130, 60, "halves"), (5000, 40, "one"), (65, 64, "zeros")])
def test_multinomial_ties_in_torch_order(categories, count, kind):
    def draw(m):
        weights = m.rand(3, categories, dtype=m.float64 if categories % 2 else m.float32)
        if kind == "zeros":
            weights[:, ::2] = 0
        elif kind == "halves":
            weights = m.round(weights * 2) / 2
        else:
            weights = m.zeros(3, categories)
            weights[:, categories // 3] = 1
        return m.multinomial(weights, count, replacement=False)
    ours, ref = both(draw, categories)
    assert_same(ours, ref)


# ---- Gamma draws and rrelu slopes (the samplers; their ops draw elsewhere) ---------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [0.05, 0.9, 3.0, 50.0])
def test_standard_gamma_sampler_equals_torch(dtype, scale):
    torch.manual_seed(1)
    alpha = torch.rand(3, 17, dtype=torch.float32 if dtype == np.float32 else torch.float64) * scale
    alpha[0, 0] = 0
    engine.set_rng_state(torch.get_rng_state())
    ref = torch._standard_gamma(alpha)
    x = counts.standard_gamma(engine.random.default_generator, alpha.numpy().astype(np.float64),
                              dtype == np.float32)
    ours = np.maximum(x.astype(dtype), np.finfo(dtype).tiny)
    assert np.array_equal(ours, ref.numpy())
    assert_states_equal()  # the normal sampler's cached second sample included


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lower,upper", [(1 / 8, 1 / 3), (0.1, 0.3), (-0.5, 2.0)])
def test_rrelu_noise_equals_torch(dtype, lower, upper):
    torch.manual_seed(2)
    x = torch.randn(5, 23, dtype=torch.float32 if dtype == np.float32 else torch.float64)
    x[0, :3] = 0
    engine.set_rng_state(torch.get_rng_state())
    ref = torch.nn.functional.rrelu(x.t(), lower, upper, training=True)
    noise = continuous.rrelu_noise(engine.random.default_generator, x.numpy().T, lower, upper)
    assert noise.dtype == dtype
    assert np.array_equal((x.numpy().T * noise).astype(dtype), ref.numpy())
    assert_states_equal()


# ---- fork_rng ------------------------------------------------------------------------------------------------
def test_fork_rng_restores_the_default_stream():
    engine.manual_seed(6)
    with engine.random.fork_rng():
        inside = engine.rand(20)
        with engine.random.fork_rng(enabled=False):
            engine.randn(3)
    after = engine.rand(20)
    torch.manual_seed(6)
    with torch.random.fork_rng():
        assert_same(inside, torch.rand(20))
        torch.randn(3)
    assert_same(after, torch.rand(20))
    assert_states_equal()
    with engine.random.fork_rng(devices=[]):
        engine.rand(4)
    assert_states_equal()


def test_fork_rng_restores_a_gpu_stream(cuda):
    engine.manual_seed(9)
    with engine.random.fork_rng():
        inside = engine.rand(7, device="cuda")
        engine.rand(3)
    assert_same(engine.rand(7, device="cuda").cpu(), inside.cpu())
    with engine.random.fork_rng(devices=[0]):
        inside = engine.rand(7, device="cuda")
    assert_same(engine.rand(7, device="cuda").cpu(), inside.cpu())


# ---- sequences: interleaved generators, a state saved and restored mid-way -----------------------------------------
_OPS = [
    lambda m, g, n: m.rand(n, generator=g),
    lambda m, g, n: m.randn(n, dtype=m.float64, generator=g),
    lambda m, g, n: m.empty(n).log_normal_(generator=g),
    lambda m, g, n: m.randint(0, 7, (n,), generator=g),
    lambda m, g, n: m.randperm(n, generator=g),
    lambda m, g, n: m.normal(m.zeros(n), m.ones(n), generator=g),
    lambda m, g, n: m.poisson(m.full((n,), 12.5), generator=g),
    lambda m, g, n: m.binomial(m.full((n,), 30.0), m.full((n,), 0.4), generator=g),
    lambda m, g, n: m.multinomial(m.ones(5), 3, generator=g),
    lambda m, g, n: m.bernoulli(m.full((n,), 0.3), generator=g),
]


@pytest.mark.parametrize("case", range(6))
def test_interleaved_sequences_with_a_restored_state(case):
    rng = random.Random(case)
    steps = [(rng.randrange(len(_OPS)), rng.choice([1, 2, 15, 16, 17, 257]), rng.random() < 0.4)
             for _ in range(rng.randint(3, 6))]
    save_at = rng.randrange(len(steps))

    def program(m):
        g = m.Generator().manual_seed(case + 100)
        outs, saved = [], None
        for i, (op, n, own) in enumerate(steps):
            if i == save_at:
                saved = m.get_rng_state(), g.get_state()
            outs.append(_OPS[op](m, g if own else None, n))
        m.set_rng_state(saved[0])
        g.set_state(saved[1])
        outs += [_OPS[op](m, g if own else None, n) for op, n, own in steps[save_at:]]
        return outs + [g.get_state()]
    ours, ref = both(program, case)
    for a, b in zip(ours, ref):
        assert_same(a, b)


# ---- the ops and distributions drawing through those samplers ----------------------------------------------------
def _data(m, shape, dtype):
    values = np.random.default_rng(7).standard_normal(shape)
    return m.tensor(values, dtype=getattr(m, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_rrelu_in_training_equals_torch(dtype):
    ours, ref = both(lambda m: m.nn.functional.rrelu(_data(m, (3, 37), dtype), 0.1, 0.4, training=True), 21)
    assert_same(ours, ref)


def test_rrelu_of_float16_on_the_cpu_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match="rrelu_with_noise_out_cpu"):
        engine.nn.functional.rrelu(engine.ones(3, dtype=engine.float16), training=True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name, shape", [("dropout", (4, 33)), ("dropout3d", (3, 4, 2, 5)), ("dropout3d", (2, 3, 4, 2, 5))])
def test_dropout_masks_equal_torch(name, shape, dtype):
    ours, ref = both(lambda m: getattr(m.nn.functional, name)(_data(m, shape, dtype), 0.3, training=True), 5)
    assert_same(ours, ref)


@pytest.mark.parametrize("make", [lambda m, a: m.distributions.Gamma(a, a * 2).sample((3,)),
                                  lambda m, a: m.distributions.Dirichlet(a).sample((2,)),
                                  lambda m, a: m.distributions.Beta(a, a + 1).sample(),
                                  lambda m, a: m.distributions.StudentT(a + 2).sample()])
def test_gamma_based_distributions_equal_torch(make):
    ours, ref = both(lambda m: make(m, m.tensor([0.3, 1.0, 2.5, 7.0])), 9)
    np.testing.assert_allclose(as_numpy(ours)[1], as_numpy(ref)[1], rtol=1e-6)


def test_geometric_on_bool_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match="geometric_cpu"):
        engine.ones(3, dtype=engine.bool).geometric_(0.5)
