"""The GPU's counter-based generator (``backends/cuda/philox.py``): Philox4x32-10 as published, the values and
offsets of its draws, the distributions, and seeding in place."""
import os

import numpy as np
import pytest

import engine

_M = (0xD2511F53, 0xCD9E8D57)
_W = (0x9E3779B9, 0xBB67AE85)
_MASK = 0xFFFFFFFF


def philox(counter, key):
    """Philox4x32-10 of four 32-bit counter words under two key words (Salmon et al. 2011), in Python."""
    c, k = list(counter), list(key)
    for _ in range(10):
        p0, p1 = _M[0] * c[0], _M[1] * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & _MASK, (p0 >> 32) ^ c[3] ^ k[1], p0 & _MASK]
        k = [(k[0] + _W[0]) & _MASK, (k[1] + _W[1]) & _MASK]
    return c


def test_the_reference_gives_the_published_answers():
    """Random123's known-answer vectors for Philox4x32-10."""
    assert philox((0, 0, 0, 0), (0, 0)) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox((_MASK,) * 4, (_MASK,) * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def _block(seed, counter):
    return philox((counter & _MASK, counter >> 32, 0, 0), (seed & _MASK, seed >> 32))


def _uniform32(seed, first_block, n):
    words = [w for b in range(first_block, first_block + -(-n // 4)) for w in _block(seed, b)][:n]
    return np.array([(w >> 8) / 2 ** 24 for w in words], np.float32)


def _uniform64(seed, first_block, n):
    words = [w for b in range(first_block, first_block + -(-n // 2)) for w in _block(seed, b)]
    return np.array([((words[2 * i] >> 5) * 2 ** 26 + (words[2 * i + 1] >> 6)) / 2 ** 53 for i in range(n)])


def _generator(seed):
    return engine.backends.runtime("cuda").generator(seed)


@pytest.mark.parametrize("seed", [0, 2 ** 40 + 12345])
def test_uniform_draws_are_philox_blocks_in_order(cuda, seed):
    g = _generator(seed)
    first = g.random_sample(10, dtype=np.float32)  # blocks 0-2 (the last half used)
    np.testing.assert_array_equal(first.get(), _uniform32(seed, 0, 10))
    following = g.random_sample((2, 3), dtype=np.float64)  # blocks 3-5: two float64 values a block
    np.testing.assert_array_equal(following.get().ravel(), _uniform64(seed, 3, 6))
    assert following.shape == (2, 3) and following.dtype == np.float64
    np.testing.assert_array_equal(g.random_sample(4, dtype=np.float32).get(), _uniform32(seed, 6, 4))
    assert g.random_sample(0, dtype=np.float32).size == 0
    np.testing.assert_array_equal(g.random_sample(1, dtype=np.float32).get(), _uniform32(seed, 7, 1))


def test_normal_draws_are_box_muller_of_the_blocks(cuda):
    g = _generator(7)
    got = g.standard_normal(6, dtype=np.float64).get()
    u = _uniform64(7, 0, 6)
    radius = np.sqrt(-2 * np.log(1 - u[0::2]))
    want = np.stack([radius * np.cos(2 * np.pi * u[1::2]), radius * np.sin(2 * np.pi * u[1::2])], 1).ravel()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    many = g.standard_normal((400, 250), dtype=np.float32).get()
    assert many.dtype == np.float32 and abs(many.mean()) < 0.02 and abs(many.std() - 1) < 0.02
    uniform = g.uniform(-2.0, 3.0, 100000, dtype=np.float32).get()
    assert -2 <= uniform.min() and uniform.max() < 3 and abs(uniform.mean() - 0.5) < 0.03
    normal = g.normal(4.0, 0.5, 100000, dtype=np.float64).get()
    assert abs(normal.mean() - 4) < 0.01 and abs(normal.std() - 0.5) < 0.01


def test_normal_of_tensors_draws_on_the_device(cuda):
    mean = engine.tensor(_uniform32(1, 0, 12).reshape(3, 4) * 10, device="cuda")
    std = engine.tensor(_uniform32(2, 0, 4) + 0.5, device="cuda")
    engine.manual_seed(9)
    got = engine.normal(mean, std).cpu().numpy()
    engine.manual_seed(9)
    z = engine.random.cuda_rng(0).standard_normal((3, 4), dtype=np.float32).get()
    np.testing.assert_array_equal(got, z * std.cpu().numpy() + mean.cpu().numpy())
    assert engine.normal(mean, 2.0).device.type == "cuda"


def test_manual_seed_restarts_the_generators_in_place(cuda):
    engine.manual_seed(3)
    a = engine.rand(5, device="cuda")
    b = engine.randn(5, device="cuda")
    generator = engine.random.cuda_rng(0)
    engine.manual_seed(3)
    assert engine.random.cuda_rng(0) is generator  # a captured graph keeps reading its state
    np.testing.assert_array_equal(engine.rand(5, device="cuda").cpu().numpy(), a.cpu().numpy())
    np.testing.assert_array_equal(engine.randn(5, device="cuda").cpu().numpy(), b.cpu().numpy())
    engine.cuda.manual_seed(4)
    assert not np.array_equal(engine.rand(5, device="cuda").cpu().numpy(), a.cpu().numpy())


def test_dropout_on_the_gpu_keeps_the_expected_value(cuda):
    engine.manual_seed(0)
    x = engine.ones(200, 500, device="cuda")
    y = engine.nn.functional.dropout(x, 0.3).cpu().numpy()
    assert set(np.unique(y).tolist()) == {0.0, np.float32(1 / 0.7)}
    assert abs((y == 0).mean() - 0.3) < 0.01


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_seeding_in_a_forked_process_leaves_the_gpu_alone(cuda, monkeypatch):
    """A DataLoader worker forked from a process that drew on the GPU seeds itself: it must not write its parent's
    device memory (CUDA fails in a forked child); its generators are dropped instead."""
    engine.rand(3, device="cuda")
    reseeded = []
    monkeypatch.setattr(engine.random.cuda_rng(0), "manual_seed", reseeded.append)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's outcome is its exit status
        engine.manual_seed(5)
        os._exit(0 if not reseeded and not engine.random._cuda_states else 1)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    engine.manual_seed(5)
    assert reseeded == [5]


_WEIGHTS = np.array([[1, 0, 3, 6, 0], [0, 0, 2, 0, 0], [5, 5, 0, 5, 5]], np.float32)


def _multinomial(count, replacement, seed=3):
    engine.manual_seed(seed)
    picks = engine.multinomial(engine.tensor(_WEIGHTS, device="cuda"), count, replacement)
    assert picks.device.type == "cuda" and picks.dtype == engine.int64 and picks.shape == (3, count)
    return picks.cpu().numpy()


def test_multinomial_with_replacement_draws_in_proportion_on_the_device(cuda, monkeypatch):
    """Drawn from the device generator's uniforms (the CPU stream is not touched): frequencies in proportion to
    the weights, zero weights never taken, the same draws after the same seed."""
    from engine._rng import discrete
    monkeypatch.setattr(discrete, "multinomial", None)  # the CPU sampler
    picks = _multinomial(6000, True)
    for row, weights in zip(picks, _WEIGHTS):
        frequencies = np.bincount(row, minlength=5) / len(row)
        np.testing.assert_allclose(frequencies, weights / weights.sum(), atol=0.03)
    np.testing.assert_array_equal(_multinomial(6000, True), picks)
    assert not np.array_equal(_multinomial(6000, True, seed=4), picks)
    one = engine.multinomial(engine.tensor(_WEIGHTS[2], device="cuda"), 2, True)
    assert one.shape == (2,) and set(one.cpu().tolist()) <= {0, 1, 3, 4}


def test_multinomial_without_replacement_takes_each_category_once(cuda):
    """Distinct categories, positive weights before zero ones, and first picks in proportion to the weights."""
    picks = _multinomial(5, False)
    for row, weights in zip(picks, _WEIGHTS):
        assert sorted(row) == list(range(5))
        positive = int((weights > 0).sum())
        assert all(weights[row[:positive]] > 0)
    engine.manual_seed(5)
    first = engine.multinomial(engine.tensor(np.tile(_WEIGHTS[:1], (6000, 1)), device="cuda"), 2).cpu().numpy()
    np.testing.assert_allclose(np.bincount(first[:, 0], minlength=5) / 6000, _WEIGHTS[0] / 10, atol=0.03)
    assert (first[:, 0] != first[:, 1]).all()


@pytest.mark.parametrize("weights, count, message", [
    ([[1.0, -1.0]], 1, "probability tensor contains either `inf`, `nan` or element < 0"),
    ([[1.0, float("inf")]], 1, "probability tensor contains either `inf`, `nan` or element < 0"),
    ([[1.0, 2.0], [0.0, 0.0]], 1, r"invalid multinomial distribution \(sum of probabilities <= 0\)"),
    ([[1.0, 2.0]], 3, r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
])
def test_multinomial_errors_on_the_gpu_are_torchs(cuda, weights, count, message):
    with pytest.raises(RuntimeError, match=message):
        engine.multinomial(engine.tensor(weights, device="cuda"), count)


def test_multinomial_is_captured_and_new_in_each_replay(cuda):
    import warnings

    class Picks(engine.nn.Graph):
        def build(self, weights):
            return engine.multinomial(weights, 4, replacement=True), engine.multinomial(weights, 3)

    graph = Picks()
    weights = engine.tensor(_WEIGHTS, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws = [[p.cpu().numpy() for p in graph(weights)] for _ in range(4)]
    assert graph._last_plan.captured is not None
    assert len({with_replacement.tobytes() for with_replacement, _ in draws}) == 4  # the replays too
    for with_replacement, without in draws:
        assert (_WEIGHTS[np.arange(3)[:, None], with_replacement] > 0).all()
        assert all(len(set(row)) == 3 for row in without)
