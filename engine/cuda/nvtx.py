"""``torch.cuda.nvtx``: NVTX ranges and marks for Nsight Systems, through ``cupy.cuda.nvtx``; where CuPy or its
NVTX library is missing, each call does nothing (returning what torch's stub returns)."""
import contextlib

from .. import _device


def _nvtx():
    cp = _device.cupy_module()
    module = None if cp is None else getattr(cp.cuda, "nvtx", None)
    return module if getattr(module, "available", False) else None


_COLOR = 0xFF76B900  # the ARGB colour of range_start's ranges (CuPy's RangeStart needs one)
_depth = []  # one entry per open range_push: NVTX's nesting level is its length


def range_push(msg):
    """Open a nested range named ``msg``; returns its depth (from 0), or -2 where NVTX is missing."""
    nvtx = _nvtx()
    if nvtx is None:
        return -2
    nvtx.RangePush(msg)
    _depth.append(msg)
    return len(_depth) - 1


def range_pop():
    """Close the innermost open range; returns its depth, or -2 where NVTX is missing."""
    nvtx = _nvtx()
    if nvtx is None:
        return -2
    nvtx.RangePop()
    if not _depth:
        return -1
    _depth.pop()
    return len(_depth)


def range_start(msg):
    """Start a range that may end on another thread; returns its id for ``range_end`` (0 where NVTX is missing)."""
    nvtx = _nvtx()
    return 0 if nvtx is None else nvtx.RangeStart(msg, _COLOR)


def range_end(range_id):
    """End the range ``range_start`` gave ``range_id``."""
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangeEnd(range_id)


def mark(msg):
    """An instant event named ``msg``."""
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.Mark(msg)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """A range around the code inside (also a decorator); ``msg`` is formatted with ``args`` and ``kwargs``."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
