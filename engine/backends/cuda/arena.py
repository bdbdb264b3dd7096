"""A CUDA graph's static memory plan: the buffers of its run packed into one arena by liveness.

A capture's warm-up run records every allocation it makes: its size, and when it was made and freed on a
clock that ticks at each of those events (``Lifetimes``). ``pack`` places these intervals in one arena,
largest first, each at the lowest offset free of every buffer whose lifetime overlaps its own, so that two
buffers share bytes only where they are never alive together; where that needs more than the peak of the
bytes alive at once, it tries other orders and keeps the smallest arena. The capture, which runs the same
code, then takes its n-th allocation from the n-th place of the plan (``ArenaAllocator``), and its replays
touch no other memory.

The plan is followed only where it is safe: an allocation whose size differs from the plan's, or whose
place overlaps a buffer still alive (the run went another way than the warm-up), comes from the graph's
memory pool instead and is held for the graph's life. Memory can be wasted that way, never shared.
"""
import weakref

import cupy
import numpy as np

#: Every buffer starts at a multiple of this (CuPy's pool rounds its blocks to 512 bytes).
ALIGNMENT = 512


def _rounded(size):
    return -(-size // ALIGNMENT) * ALIGNMENT


class _Owner:
    """Keeps the memory a tracked buffer lies in alive; its finaliser runs when the buffer is freed."""

    __slots__ = ("memory", "__weakref__")

    def __init__(self, memory):
        self.memory = memory


def _tracked(ptr, size, memory, on_free):
    """A pointer to ``size`` bytes at ``ptr`` inside ``memory``; ``on_free()`` runs once every array on it
    is gone."""
    owner = _Owner(memory)
    weakref.finalize(owner, on_free)
    return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(ptr, size, owner, cupy.cuda.Device().id), 0)


class Lifetimes:
    """An allocator (``malloc``) drawing from ``pool`` that records each allocation's rounded size and its
    lifetime [made, freed) on a clock of allocations and frees; a buffer never freed lives forever."""

    FOREVER = float("inf")

    def __init__(self, pool):
        self.pool = pool
        self.clock = 0
        self.sizes, self.made, self.freed = [], [], []

    def _tick(self):
        self.clock += 1
        return self.clock

    def malloc(self, size):
        if size == 0:
            return self.pool.malloc(0)
        index = len(self.sizes)
        self.sizes.append(_rounded(size))
        self.made.append(self._tick())
        self.freed.append(self.FOREVER)
        block = self.pool.malloc(size)
        return _tracked(block.ptr, size, block, lambda: self.freed.__setitem__(index, self._tick()))

    def peak(self):
        """The most bytes the recorded run had alive at once (``live_peak``)."""
        return live_peak(self.sizes, self.made, self.freed)


def live_peak(sizes, made, freed):
    """The most bytes alive at once in lifetimes [made, freed): the least arena any packing needs."""
    events = sorted([(t, s) for s, t in zip(sizes, made)] + [(t, -s) for s, t in zip(sizes, freed)])
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak


#: ``pack`` searches at random only where its two fixed orders waste more than this over the live peak. Largest
#: first fixes every big buffer before the ones it alternates with: resnet50's inference graph at 16x3x224x224
#: (emulated: ``scripts/memory_plan.py --emulate --batch 16 --size 224 resnet50``) packs into 172.3 MiB that way
#: against a live peak of 142.4 MiB (its 62 MB column matrices all land at offset 0, and the 49 MB block outputs,
#: each alive with the next, cannot alternate around them); in order of birth, 160.1 MiB; the search finds 142.4.
SEARCH_WASTE = 16 << 20
#: The search's tries: at most ``SEARCH_TRIES``, and fewer for many buffers, a try costing about n**2 numpy
#: element operations (4 ms for resnet50's 734 buffers, 0.1 s for its 4569 in a training step, on 2 cores), so
#: that tries * n**2 stays under ``SEARCH_WORK``. Three seeds on resnet50 above reached the peak within 150 tries.
SEARCH_TRIES = 300
SEARCH_WORK = 5e8


def pack(sizes, made, freed):
    """(offsets, arena size): an offset for each buffer such that buffers whose lifetimes [made, freed)
    overlap do not overlap in the arena, the smallest arena of these packings (each places buffers one by one,
    in the first gap that fits among the placed buffers they meet):

    - largest first, each at the bottom of its gap (the best of the three on most zoo graphs);
    - in order of birth, a buffer above all those it meets put as high as the arena so far allows (this lets
      chains of buffers alternate: resnet50 at batch 2, 64x64 pixels, 2.12 -> 1.88 MiB, 0.3% over the live
      peak);
    - where the arena still wastes over ``SEARCH_WASTE``: seeded random tries, largest first with sizes jittered
      by up to 20% and a random share of the buffers put high, until one packs into the live peak.

    Deterministic: the same lifetimes give the same plan."""
    size = np.asarray(sizes, np.int64)
    n = len(sizes)
    floor = live_peak(sizes, made, freed)

    def smaller(packing, order, high):  # the first of the two where they tie
        tried = _first_fit(sizes, made, freed, order, high)
        return tried if tried[1] < packing[1] else packing

    best = _first_fit(sizes, made, freed, np.lexsort((made, -size)), high=np.zeros(n, bool))
    if best[1] > floor:
        best = smaller(best, np.lexsort((-size, made)), high=np.ones(n, bool))
    if best[1] - floor <= SEARCH_WASTE:
        return best
    rng = np.random.default_rng(0)
    for _ in range(min(SEARCH_TRIES, int(SEARCH_WORK / n ** 2))):
        best = smaller(best, np.lexsort((made, -size * rng.uniform(0.8, 1.2, n))),
                       high=rng.random(n) < rng.uniform(0, 0.5))
        if best[1] == floor:
            break
    return best


def _first_fit(sizes, made, freed, order, high):
    """(offsets, arena size) placing the buffers in ``order``, each at the bottom of the first gap that fits
    among the placed buffers whose lifetimes overlap its own; where none fits, right above them or, where
    ``high`` says so, as high as the arena's size so far allows. The lifetimes a buffer meets are found with
    numpy: a training step has thousands of buffers."""
    size, born, dies = np.asarray(sizes, np.int64), np.asarray(made, np.float64), np.asarray(freed, np.float64)
    offsets = np.zeros(len(sizes), np.int64)
    placed = np.zeros(len(sizes), bool)
    height = 0
    for i in order.tolist():
        met = np.flatnonzero(placed & (born < dies[i]) & (born[i] < dies))
        offset = 0
        in_gap = False
        for start, end in sorted(zip(offsets[met].tolist(), (offsets[met] + size[met]).tolist())):
            if offset + sizes[i] <= start:
                in_gap = True
                break
            offset = max(offset, end)
        if high[i] and not in_gap:
            offset = max(offset, height - sizes[i])
        offsets[i] = offset
        placed[i] = True
        height = max(height, offset + sizes[i])
    return offsets.tolist(), height


class ArenaAllocator:
    """An allocator (``malloc``) that gives the n-th allocation the n-th place of a plan made by ``pack`` from
    a run's ``Lifetimes``, in one arena drawn from ``pool``; where the size differs or the place is in use, a
    block of ``pool`` held for the allocator's life (``misses`` counts those)."""

    def __init__(self, pool, lifetimes):
        self.pool = pool
        self.lifetimes = lifetimes
        self.sizes = lifetimes.sizes
        self.offsets, self.arena_bytes = pack(lifetimes.sizes, lifetimes.made, lifetimes.freed)
        self.arena = pool.malloc(self.arena_bytes) if self.arena_bytes else None
        self.count = 0
        self.live = {}  # plan index -> (start, end) in the arena, while its buffer is alive
        self.kept = []
        self.misses = 0

    def _fits(self, index, size):
        if index >= len(self.sizes) or self.sizes[index] != _rounded(size):
            return False
        start, end = self.offsets[index], self.offsets[index] + self.sizes[index]
        return all(end <= lo or hi <= start for lo, hi in self.live.values())

    def malloc(self, size):
        if size == 0:
            return self.pool.malloc(0)
        index = self.count
        self.count += 1
        if not self._fits(index, size):
            self.misses += 1
            block = self.pool.malloc(size)
            self.kept.append(block)
            return block
        start = self.offsets[index]
        self.live[index] = (start, start + self.sizes[index])
        return _tracked(self.arena.ptr + start, size, self.arena, lambda: self.live.pop(index, None))
