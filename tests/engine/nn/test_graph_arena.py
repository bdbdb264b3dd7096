"""The static memory plan of CUDA graphs (``backends/cuda/arena.py``): packing lifetimes into one arena, an
allocator that follows the plan only where it is safe, and inference graphs that take their buffers from it.
On a GPU (marked ``cuda``) and on the CPU emulation of CuPy, whose arrays lie in the memory its allocators
give, as on a GPU."""
import numpy as np
import pytest

import engine
from op_check import assert_close
from test_graph_cuda import _graph_on_gpu, _rand, _train_on_gpu, small_resnet_on_gpu


def _arena():
    from engine.backends.cuda import arena
    return arena


def _random_lifetimes(rng, n, equal_sizes=False):
    clock = rng.permutation(2 * n) + 1
    made, freed = np.minimum(clock[:n], clock[n:]), np.maximum(clock[:n], clock[n:]).astype(float)
    freed[rng.random(n) < 0.1] = float("inf")  # some never freed
    sizes = [512] * n if equal_sizes else [512 * int(k) for k in rng.integers(1, 40, n)]
    return sizes, made.tolist(), freed.tolist()


@pytest.mark.parametrize("search", [False, True])
@pytest.mark.parametrize("seed", [0] + [pytest.param(s, marks=pytest.mark.slow) for s in range(1, 5)])  # 0.9 s each
def test_packed_buffers_alive_together_never_share_bytes(cuda, seed, search, monkeypatch):
    if search:  # the random tries too, whatever the waste
        monkeypatch.setattr(_arena(), "SEARCH_WASTE", -1)
    sizes, made, freed = _random_lifetimes(np.random.default_rng(seed), 150)
    offsets, total = _arena().pack(sizes, made, freed)
    for i in range(len(sizes)):
        assert offsets[i] % 512 == 0 and offsets[i] + sizes[i] <= total
        for j in range(i):
            if made[i] < freed[j] and made[j] < freed[i]:
                assert offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i], (i, j)
    peak = _arena().live_peak(sizes, made, freed)
    assert peak <= total <= 1.5 * peak


@pytest.mark.parametrize("seed", range(3))
def test_buffers_of_one_size_pack_into_the_peak(cuda, seed):
    """For equal sizes, first fit in order of birth is an optimal colouring of the interval graph."""
    sizes, made, freed = _random_lifetimes(np.random.default_rng(seed), 100, equal_sizes=True)
    assert _arena().pack(sizes, made, freed)[1] == _arena().live_peak(sizes, made, freed)


def _chain(links):
    """A chain of block outputs (49 units), each alive with the next, and a column matrix (62 units) alive in
    each block with its output only: resnet50's large buffers. Units of 512 bytes."""
    sizes, made, freed = [], [], []
    for k in range(links):
        sizes += [49 * 512, 62 * 512]
        made += [10 * k, 10 * k + 5]
        freed += [10 * k + 12, 10 * k + 6]
    return sizes, made, freed


def test_chains_of_buffers_alternate_into_the_live_peak(cuda):
    """Largest first puts every column matrix at 0, and the outputs then stack three high (160 units); in order
    of birth, an output put as high as the arena allows leaves the next column matrix room below (111 units:
    the live peak, one output and one column matrix)."""
    arena = _arena()
    sizes, made, freed = _chain(8)
    largest_first = arena._first_fit(sizes, made, freed, np.lexsort((made, -np.asarray(sizes))),
                                     high=np.zeros(len(sizes), bool))
    assert largest_first[1] == 160 * 512
    assert arena.live_peak(sizes, made, freed) == arena.pack(sizes, made, freed)[1] == 111 * 512


def test_the_random_search_takes_a_smaller_packing(cuda, monkeypatch):
    """Where both fixed orders waste over ``SEARCH_WASTE``, the seeded tries run, and keep only a smaller arena:
    here, with the birth order's packing made useless, they find the chain's live peak."""
    arena = _arena()
    first_fit = arena._first_fit
    monkeypatch.setattr(arena, "_first_fit", lambda sizes, made, freed, order, high: (
        ([0] * len(sizes), 10 ** 9) if high.all() else first_fit(sizes, made, freed, order, high)))
    sizes, made, freed = _chain(3)
    monkeypatch.setattr(arena, "SEARCH_WASTE", 16 << 20)
    assert arena.pack(sizes, made, freed)[1] == 160 * 512
    monkeypatch.setattr(arena, "SEARCH_WASTE", 0)
    assert arena.pack(sizes, made, freed) == arena.pack(sizes, made, freed)  # seeded
    assert arena.pack(sizes, made, freed)[1] == 111 * 512


def test_a_freed_buffers_place_is_reused(cuda):
    # a [1, 3), b [2, 5), c [4, 6): c fits where a was
    offsets, total = _arena().pack([1024, 512, 1024], [1, 2, 4], [3, 5, 6])
    assert offsets == [0, 1024, 0] and total == 1536
    assert _arena().pack([], [], []) == ([], 0)


def _recorded_run(arena, pool):
    """Lifetimes of a run: a and b alive together, then c after a is gone."""
    lifetimes = arena.Lifetimes(pool)
    a, b = lifetimes.malloc(1000), lifetimes.malloc(300)
    del a
    c = lifetimes.malloc(900)
    del b, c
    return lifetimes


def test_lifetimes_are_recorded_from_allocation_to_free(cuda):
    import cupy
    lifetimes = _recorded_run(_arena(), cupy.cuda.MemoryPool())
    assert lifetimes.sizes == [1024, 512, 1024]
    assert lifetimes.made == [1, 2, 4] and lifetimes.freed == [3, 5, 6]


def test_the_allocator_follows_the_plan(cuda):
    import cupy
    arena = _arena()
    pool = cupy.cuda.MemoryPool()
    allocator = arena.ArenaAllocator(pool, _recorded_run(arena, pool))
    assert allocator.offsets == [0, 1024, 0] and allocator.arena_bytes == 1536
    a, b = allocator.malloc(1000), allocator.malloc(300)
    del a
    c = allocator.malloc(900)
    base = allocator.arena.ptr
    assert (b.ptr - base, c.ptr - base) == (1024, 0) and allocator.misses == 0


def test_the_allocator_takes_a_pool_block_where_the_plan_is_unsafe(cuda):
    """The run goes another way than the recorded one: a is still alive when c comes (c's place is a's), and
    a fourth allocation has no place at all."""
    import cupy
    arena = _arena()
    pool = cupy.cuda.MemoryPool()
    allocator = arena.ArenaAllocator(pool, _recorded_run(arena, pool))
    a, b = allocator.malloc(1000), allocator.malloc(300)
    c = allocator.malloc(900)
    d = allocator.malloc(100)
    assert allocator.misses == 2 and len(allocator.kept) == 2
    base, end = allocator.arena.ptr, allocator.arena.ptr + allocator.arena_bytes
    assert a.ptr == base and not base <= c.ptr < end and not base <= d.ptr < end
    del a, b, c, d
    e = arena.ArenaAllocator(pool, _recorded_run(arena, pool))
    assert e.malloc(2000).ptr != e.arena.ptr and e.misses == 1  # a size the plan does not have at that place


def test_an_inference_graph_takes_its_buffers_from_one_packed_arena(cuda):
    """Every buffer of the capture comes from the arena its warm-up planned, and the arena holds no more than
    the peak of the bytes the run had alive at once (the least any allocator needs), within 10%."""
    graph = _graph_on_gpu(small_resnet_on_gpu())
    graph(engine.tensor(_rand(3, 3, 11, 13), device="cuda"))
    arena = graph._last_plan.captured.graph.arena
    assert arena.count > 20 and arena.misses == 0
    lifetimes = arena.lifetimes
    peak = lifetimes.peak()
    assert arena.arena_bytes <= 1.1 * peak < sum(lifetimes.sizes)


def test_a_training_step_takes_its_buffers_from_one_packed_arena(cuda):
    """The step's second call is the capture's warm-up: the captured step takes every buffer from the arena
    planned from it (activations kept for the backward, gradients, the update's temporaries), within 10% of
    the peak; the graph's losses follow eager's (the full comparison: ``test_graph_cuda``)."""
    rng = np.random.default_rng(0)
    batches = [(_rand(4, 3, 9, 11, seed=s), rng.integers(0, 5, 4)) for s in range(4)]
    losses, _, _, graph = _train_on_gpu("adamw", 1, True, batches)
    arena = next(iter(graph._steps.values())).replay.arena
    assert arena.count > 100 and arena.misses == 0
    lifetimes = arena.lifetimes
    peak = lifetimes.peak()
    assert arena.arena_bytes <= 1.1 * peak < sum(lifetimes.sizes)
    np.testing.assert_allclose(losses, _train_on_gpu("adamw", 1, False, batches)[0], rtol=1e-5)


def test_an_arena_that_shares_live_bytes_corrupts_the_replay(cuda, monkeypatch):
    """What the arena's checks prevent: a plan that puts every buffer at one place, followed blindly, makes
    replays wrong (the emulation holds buffers by address, as a GPU does); the allocator's check that a place
    is free keeps the same plan safe."""
    from engine.backends.cuda import arena
    model = small_resnet_on_gpu()
    x = engine.tensor(_rand(3, 3, 11, 13), device="cuda")
    with engine.no_grad():
        want = model(x).cpu().numpy()
    monkeypatch.setattr(arena, "pack", lambda sizes, made, freed: ([0] * len(sizes), max(sizes)))
    graph = _graph_on_gpu(model)
    graph(x)
    assert graph._last_plan.captured.graph.arena.misses > 0
    assert_close(graph(x).cpu().numpy(), want, rtol=1e-5)
    monkeypatch.setattr(arena.ArenaAllocator, "_fits", lambda self, index, size: True)
    blind = _graph_on_gpu(model)
    blind(x)
    assert not np.allclose(blind(x).cpu().numpy(), want, rtol=1e-3, atol=1e-3)
