"""The thread count of the OpenBLAS library inside numpy, read and set through its C API.

Batch streams (``nn.Graph``) run one GEMM per core at a time, each on one BLAS thread; with OpenBLAS
still splitting every GEMM over all cores the streams fight over them (resnet50 at batch 8: 690 ms
a call against 600-640 unsplit and 480-500 with one BLAS thread per stream). It also lets
``engine.set_num_threads`` work without threadpoolctl, which is not a runtime dependency: here the
library is found among the process's mapped files (Linux), under any of the symbol names its builds
export (numpy's wheels prefix and suffix them).
"""
import contextlib
import ctypes
import itertools
import os
import threading

_NAMES = tuple(f"{prefix}openblas_{{}}_num_threads{suffix}"
               for prefix, suffix in itertools.product(("scipy_", ""), ("64_", "", "_64")))
_lock = threading.Lock()
_api = None


def _find():
    """(get, set) C functions of the loaded OpenBLAS, or None where there is none (MKL, Accelerate,
    a system without /proc)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in os.path.basename(line.split()[-1]).lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _NAMES:
            get, set_ = getattr(lib, name.format("get"), None), getattr(lib, name.format("set"), None)
            if get is not None and set_ is not None:
                get.restype, set_.argtypes = ctypes.c_int, (ctypes.c_int,)
                return get, set_
    return None


def _openblas():
    """The (get, set) pair, looked up once (numpy, imported by engine first, has loaded the library)."""
    global _api
    if _api is None:
        _api = _find() or False
    return _api


def threads():
    """OpenBLAS's thread count, or None without OpenBLAS."""
    api = _openblas()
    return api[0]() if api else None


def set_threads(n):
    """Set OpenBLAS's thread count; returns whether it took (False without OpenBLAS, see ``limited``)."""
    api = _openblas()
    if not api:
        return False
    get, set_ = api
    with _lock:
        set_(n)
        return get() == n


@contextlib.contextmanager
def limited(n):
    """OpenBLAS on at most ``n`` threads inside; yields whether that holds (False: no OpenBLAS, or it
    ignored the request, as it does from a thread other than the one that set it first)."""
    api = _openblas()
    if not api:
        yield False
        return
    get, set_ = api
    with _lock:
        before = get()
        if before > n:
            set_(n)
        ok = get() <= n
    try:
        yield ok
    finally:
        if before > n:
            with _lock:
                set_(before)
