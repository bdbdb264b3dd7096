"""A CUDA graph's static memory plan: the buffers of its run packed into one arena by liveness.

A capture's warm-up run records every allocation it makes: its size, and when it was made and freed on a
clock that ticks at each of those events (``Lifetimes``). ``pack`` places these intervals in one arena,
largest first, each at the lowest offset free of every buffer whose lifetime overlaps its own, so that two
buffers share bytes only where they are never alive together. The capture, which runs the same code, then
takes its n-th allocation from the n-th place of the plan (``ArenaAllocator``), and its replays touch no
other memory.

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


def pack(sizes, made, freed):
    """(offsets, arena size): an offset for each buffer such that buffers whose lifetimes [made, freed)
    overlap do not overlap in the arena; placed largest first, each at the lowest offset that fits. The
    lifetimes a buffer meets are found with numpy: a training step has thousands of buffers."""
    size, born, dies = np.asarray(sizes, np.int64), np.asarray(made, np.float64), np.asarray(freed, np.float64)
    offsets = np.zeros(len(sizes), np.int64)
    placed = np.zeros(len(sizes), bool)
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], made[i])):
        met = np.flatnonzero(placed & (born < dies[i]) & (born[i] < dies))
        offset = 0
        for start, end in sorted(zip(offsets[met].tolist(), (offsets[met] + size[met]).tolist())):
            if offset + sizes[i] <= start:
                break
            offset = max(offset, end)
        offsets[i] = offset
        placed[i] = True
    return offsets.tolist(), int((offsets + size).max(initial=0))


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
