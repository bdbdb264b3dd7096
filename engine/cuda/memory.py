"""``torch.cuda``'s memory statistics and allocator calls, on CuPy's default memory pool.

CuPy's pool knows the bytes in use (``used_bytes``) and held (``total_bytes``) now, and nothing of the past.
From ``install`` on (the first call into ``engine.cuda`` that needs a GPU) every allocation goes through
``_malloc``, which keeps the rest that ``memory_stats`` reports: the peaks of both, the number and bytes of
allocations since, and the out-of-memory count; it also turns CuPy's ``OutOfMemoryError`` into
``OutOfMemoryError`` (torch's, a RuntimeError). Keys of torch's that the pool cannot know (the large and small
pools, segments, splits, requested bytes, frees counted one by one) are left out rather than guessed.
"""
import collections
import warnings

from .. import _device


class OutOfMemoryError(RuntimeError):
    """``torch.OutOfMemoryError``: a GPU allocation failed (``torch.cuda.OutOfMemoryError`` is the same class)."""


_stats = {}  # what _malloc has counted since install (see _reset_all); empty until the first count
_installed = []  # the CuPy module whose allocator is _malloc


def _pool():
    return _device.cupy().get_default_memory_pool()


def _reset_all(pool):
    used, held = pool.used_bytes(), pool.total_bytes()
    _stats.update(baseline=used, allocated_bytes=0, allocations=0, num_ooms=0, peak_allocated=used,
                  peak_reserved=held)


def _malloc(size):
    """The allocator engine's CuPy allocates through: the pool's ``malloc``, counted (see the module docstring)."""
    cp = _device.cupy()
    pool = cp.get_default_memory_pool()
    if not _stats:
        _reset_all(pool)
    try:
        memory = pool.malloc(size)
    except cp.cuda.memory.OutOfMemoryError as error:
        _stats["num_ooms"] += 1
        raise _out_of_memory(size, pool) from error
    _stats["allocated_bytes"] += size
    _stats["allocations"] += 1
    _stats["peak_allocated"] = max(_stats["peak_allocated"], pool.used_bytes())
    _stats["peak_reserved"] = max(_stats["peak_reserved"], pool.total_bytes())
    return memory


def _out_of_memory(size, pool):
    """torch's message for a failed allocation, with the pool's numbers."""
    try:
        free, total = _device.cupy().cuda.runtime.memGetInfo()
        capacity = f" GPU {_device.cupy().cuda.Device().id} has a total capacity of {_format(total)} of which " \
                   f"{_format(free)} is free."
    except Exception:  # the driver cannot say
        capacity = ""
    used, held = pool.used_bytes(), pool.total_bytes()
    return OutOfMemoryError(f"CUDA out of memory. Tried to allocate {_format(size)}.{capacity} Of the allocated "
                            f"memory {_format(used)} is allocated by the engine, and {_format(held - used)} is "
                            "reserved by the engine but unallocated.")


def _format(nbytes):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes} bytes" if unit == "bytes" else f"{nbytes:.2f} {unit}"
        nbytes /= 1024


def install(cp=None):
    """Route the allocations of CuPy (``cp``, default: the engine's) through ``_malloc``, once; the statistics
    start then. Setting the allocator does not touch a GPU: ``engine._device`` may call this on importing CuPy.
    Returns the statistics."""
    cp = cp or _device.cupy()
    if cp not in _installed:
        _installed[:] = [cp]
        cp.cuda.set_allocator(_malloc)
    if not _stats and _device.cuda_available():
        _reset_all(cp.get_default_memory_pool())
    return _stats


def _available():
    return _device.cuda_available()


def memory_stats(device=None):
    """torch's statistics that CuPy's pool can give (see the module docstring), sorted by key; empty without a
    GPU (as torch's)."""
    if not _available():
        return collections.OrderedDict()
    stats, pool = install(), _pool()
    used, held = pool.used_bytes(), pool.total_bytes()
    stats["peak_allocated"] = max(stats["peak_allocated"], used)
    stats["peak_reserved"] = max(stats["peak_reserved"], held)
    values = {
        "allocated_bytes.all.current": used, "allocated_bytes.all.peak": stats["peak_allocated"],
        "allocated_bytes.all.allocated": stats["allocated_bytes"],
        "allocated_bytes.all.freed": stats["baseline"] + stats["allocated_bytes"] - used,
        "active_bytes.all.current": used, "active_bytes.all.peak": stats["peak_allocated"],
        "reserved_bytes.all.current": held, "reserved_bytes.all.peak": stats["peak_reserved"],
        "allocation.all.allocated": stats["allocations"],
        "inactive_split_bytes.all.current": held - used,
        "num_ooms": stats["num_ooms"], "num_alloc_retries": 0,
    }
    return collections.OrderedDict(sorted(values.items()))


def memory_stats_as_nested_dict(device=None):
    """``memory_stats`` nested at each dot: ``{"allocated_bytes": {"all": {"current": ...}}}``."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return nested


def _cell(value, bytes_):
    if value is None:
        return "   n/a    "
    if not bytes_:
        return f"{value:7d}   "
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 768 * 1024 or unit == "TiB":
            return f"{value:6d} {unit:<3}"
        value //= 1024


def memory_summary(device=None, abbreviated=False):
    """torch's table of the memory statistics, with the rows CuPy's pool can fill (n/a: a number it cannot know)."""
    stats = memory_stats(device)
    index = 0 if not stats else _device.cupy().cuda.Device().id
    get = stats.get
    rows = [("Allocated memory", True, "allocated_bytes.all."), ("Active memory", True, "active_bytes.all."),
            ("GPU reserved memory", True, "reserved_bytes.all."),
            ("Non-releasable memory", True, "inactive_split_bytes.all."), ("Allocations", False, "allocation.all.")]
    lines = ["=" * 75, f" {'':16} Engine CUDA memory summary, device ID {index:<18d} ", "-" * 75,
             f"  {'':9} CUDA OOMs: {get('num_ooms', 0):<12d} | {'':6} cudaMalloc retries: "
             f"{get('num_alloc_retries', 0):<8d}  ", "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for name, bytes_, prefix in rows:
        cells = [_cell(get(prefix + column), bytes_) for column in ("current", "peak", "allocated", "freed")]
        lines += ["-" * 75, f" {name:<21} | " + " | ".join(cells) + " "]
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_snapshot(mempool_id=None):
    """The allocator's segments: an empty list, as CuPy's pool does not list its blocks."""
    return []


def memory_allocated(device=None):
    """Bytes held by tensors (the memory pool's blocks in use)."""
    return _pool().used_bytes() if _available() else 0


def memory_reserved(device=None):
    """Bytes the memory pool holds, in use or cached."""
    return _pool().total_bytes() if _available() else 0


def max_memory_allocated(device=None):
    """The peak of ``memory_allocated`` since the first call into ``engine.cuda`` or the last reset."""
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def max_memory_reserved(device=None):
    """The peak of ``memory_reserved`` since the first call into ``engine.cuda`` or the last reset."""
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def _need_gpu():
    reason = _device.cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")


def gpu():
    """CuPy, once a GPU is known to be there (else torch's one line saying what is missing), with its
    allocations going through ``_malloc``: every call of ``engine.cuda`` that needs a GPU comes through here."""
    _need_gpu()
    install()
    return _device.cupy()


def reset_peak_memory_stats(device=None):
    """Restart both peaks from the current values. Without a GPU a no-op (torch.cuda's raises, but
    ``torch.accelerator.reset_peak_memory_stats``, which ``engine.accelerator`` builds on this, does not)."""
    if not _available():
        return
    stats, pool = install(), _pool()
    stats.update(peak_allocated=pool.used_bytes(), peak_reserved=pool.total_bytes())


def reset_accumulated_memory_stats(device=None):
    """Restart the counts of allocations, allocated bytes and out-of-memory errors."""
    _need_gpu()
    stats = install()
    stats.update(baseline=_pool().used_bytes(), allocated_bytes=0, allocations=0, num_ooms=0)


def reset_max_memory_allocated(device=None):
    """Deprecated by torch for ``reset_peak_memory_stats``, which it calls (with torch's FutureWarning)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    _need_gpu()
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated by torch for ``reset_peak_memory_stats``, which it calls (with torch's FutureWarning)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls torch.cuda.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    _need_gpu()
    reset_peak_memory_stats(device)


def memory_cached(device=None):
    """Deprecated name of ``memory_reserved``."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`", FutureWarning,
                  stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated name of ``max_memory_reserved``."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to `torch.cuda.max_memory_reserved`",
                  FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def set_per_process_memory_fraction(fraction, device=None):
    """Cap the pool at ``fraction`` of the GPU's memory (CuPy's ``set_limit``); beyond it allocations raise
    ``OutOfMemoryError``."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _need_gpu()
    install()
    _pool().set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None):
    """The pool's cap as a fraction of the GPU's memory (1.0 where none is set)."""
    _need_gpu()
    limit = _pool().get_limit()
    return 1.0 if limit == 0 else limit / _device.cupy().cuda.runtime.memGetInfo()[1]


def caching_allocator_alloc(size, device=None, stream=None):
    """``size`` bytes from the pool, as an int address; give it back with ``caching_allocator_delete``."""
    _need_gpu()
    install()
    memory = _malloc(int(size))
    _live[int(memory.ptr)] = memory
    return int(memory.ptr)


_live = {}  # address -> the pool's pointer that caching_allocator_alloc gave out


def caching_allocator_delete(mem_ptr):
    """Give back memory from ``caching_allocator_alloc`` (to the pool: ``empty_cache`` frees it)."""
    _live.pop(int(mem_ptr), None)


def ipc_collect():
    """Nothing to collect: the engine shares no GPU memory between processes."""
    _need_gpu()


def mem_get_info(device=None):
    """(free, total) bytes of the GPU."""
    _need_gpu()
    return _device.cupy().cuda.runtime.memGetInfo()
