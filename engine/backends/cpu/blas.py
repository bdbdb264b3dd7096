"""The thread count of the OpenBLAS library inside numpy, read and set through its C API.

Batch streams (``nn.Graph``) run one GEMM per core at a time, each on one BLAS thread; with OpenBLAS
still splitting every GEMM over all cores the streams fight over them (resnet50 at batch 8: 690 ms
a call against 600-640 unsplit and 480-500 with one BLAS thread per stream). It also lets
``engine.set_num_threads`` work without threadpoolctl, which is not a runtime dependency: here the
library is found among the process's mapped files (Linux), under any of the symbol names its builds
export (numpy's wheels prefix and suffix them).

OpenBLAS's worker threads also spin, after each threaded call, for 2**28 clock ticks (~0.1 s) before
they sleep: numpy work that our own thread pool runs right after a GEMM then shares its cores with them
(``shorten_idle_spin``).

``gemm`` calls the library's cblas GEMM directly where numpy's matmul falls short: it accumulates into
its output (BLAS's beta = 1) with no temporary and no extra pass.
"""
import contextlib
import ctypes
import itertools
import os
import threading

import numpy as np

# (prefix, suffix) pairs around OpenBLAS's symbol names in the builds we know (numpy's wheels: scipy_, 64_).
_AFFIXES = tuple(itertools.product(("scipy_", ""), ("64_", "", "_64")))
_NAMES = tuple(f"{prefix}openblas_{{}}_num_threads{suffix}" for prefix, suffix in _AFFIXES)
_lock = threading.Lock()
_api = None
_gemm_api = None
# OpenBLAS's idle workers sleep after 2**this clock ticks (~0.1 ms) instead of 2**28 (~0.1 s).
_IDLE_SPIN_EXPONENT = 18
_TIMEOUT_VARIABLE = "OPENBLAS_THREAD_TIMEOUT"


def _find():
    """(get, set, library) of the loaded OpenBLAS: its thread-count C functions and the library itself;
    None where there is none (MKL, Accelerate, a system without /proc)."""
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
                return get, set_, lib
    return None


def _openblas():
    """The (get, set, library) triple, looked up once (numpy, imported by engine first, has loaded the
    library)."""
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
    get, set_, _ = api
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
    get, set_, _ = api
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


def shorten_idle_spin():
    """Make OpenBLAS's idle worker threads sleep 2**_IDLE_SPIN_EXPONENT clock ticks after a call instead
    of spinning for ~0.1 s; returns whether it did (False without OpenBLAS or those C functions, or when
    the user set OPENBLAS_THREAD_TIMEOUT, whose choice stands).

    A spinning worker holds a core while our thread pool runs the numpy passes that follow a GEMM
    (epilogues, depthwise convolutions), so those ran at half speed: MobileNetV3's 960-channel 5x5
    depthwise layer took 9.1-10.4 ms right after a GEMM against 5.4-5.5 with the short spin, and
    lraspp_mobilenet_v3_large's graph 115-127 ms against 95-104 (in-process alternating calls).
    OpenBLAS reads the timeout from its environment variable when its threads start, so the variable is
    set just while the library re-reads its settings, and the workers are stopped: the next threaded
    call starts them again with it. Call it where no other thread is inside OpenBLAS."""
    api = _openblas()
    if not api or _TIMEOUT_VARIABLE in os.environ:
        return False
    read_settings = getattr(api[2], "openblas_read_env", None)
    stop_workers = getattr(api[2], "blas_thread_shutdown_", None)
    if read_settings is None or stop_workers is None:
        return False
    with _lock:
        os.environ[_TIMEOUT_VARIABLE] = str(_IDLE_SPIN_EXPONENT)
        try:
            read_settings()
        finally:
            del os.environ[_TIMEOUT_VARIABLE]
        stop_workers()
    return True


# cblas's enums: row-major storage, untransposed and transposed operands.
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


def _find_gemm():
    """{dtype: cblas ?gemm function} of the loaded OpenBLAS, with its integer width (64-bit in builds whose
    configuration says USE64BITINT, as numpy's wheels are) set up and checked on a small product;
    empty where there is no OpenBLAS or no such function."""
    api = _openblas()
    if not api:
        return {}
    lib = api[2]
    affix = next(((prefix, suffix) for prefix, suffix in _AFFIXES
                  if getattr(lib, f"{prefix}cblas_sgemm{suffix}", None) is not None), None)
    if affix is None:
        return {}
    prefix, suffix = affix
    config = getattr(lib, f"{prefix}openblas_get_config{suffix}", None)
    if config is None:
        return {}
    config.restype = ctypes.c_char_p
    size = ctypes.c_int64 if b"USE64BITINT" in config() else ctypes.c_int32
    functions = {}
    for dtype, letter, scalar in ((np.float32, "s", ctypes.c_float), (np.float64, "d", ctypes.c_double)):
        fn = getattr(lib, f"{prefix}cblas_{letter}gemm{suffix}", None)
        if fn is None:
            continue
        fn.restype = None
        fn.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size, scalar, ctypes.c_void_p, size,
                       ctypes.c_void_p, size, scalar, ctypes.c_void_p, size)
        a, b = np.arange(6, dtype=dtype).reshape(2, 3), np.arange(6, dtype=dtype).reshape(3, 2)
        out = np.ones((2, 2), dtype)
        if not _call_gemm(fn, a, b, out, 1.0) or not np.array_equal(out, a @ b + 1):
            return {}
        functions[np.dtype(dtype)] = fn
    return functions


def _operand(m):
    """(transpose flag, leading dimension) of a 2-D matrix cblas can read in place, or None."""
    item = m.itemsize
    rows, cols = m.strides
    if cols == item and rows % item == 0 and rows // item >= max(1, m.shape[1]):
        return _NO_TRANS, rows // item
    if rows == item and cols % item == 0 and cols // item >= max(1, m.shape[0]):
        return _TRANS, cols // item
    return None


def _call_gemm(fn, a, b, out, beta):
    """out = a @ b + beta * out through ``fn``; False (nothing done) where an operand's layout does not
    suit cblas, or where out may overlap an operand (numpy then works on a copy)."""
    ta, tb, to = _operand(a), _operand(b), _operand(out)
    if ta is None or tb is None or to is None or to[0] != _NO_TRANS:
        return False
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return False
    (m, k), n = a.shape, b.shape[1]
    fn(_ROW_MAJOR, ta[0], tb[0], m, n, k, 1.0, a.ctypes.data, ta[1], b.ctypes.data, tb[1], beta, out.ctypes.data,
       to[1])
    return True


def gemm(a, b, out, accumulate=False):
    """``out = a @ b``, or ``out += a @ b`` with ``accumulate``, for 2-D matrices (strided row windows of
    longer rows and transposed views are read in place). Summing several products into one output
    (a convolution's kernel rows) then costs no temporary and no extra pass; without OpenBLAS, or with
    other dtypes or layouts, numpy does the same with them."""
    global _gemm_api
    if a.shape[1] != b.shape[0] or out.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"gemm: shapes {a.shape} @ {b.shape} do not give {out.shape}")
    if _gemm_api is None:
        with _lock:
            _gemm_api = _find_gemm()
    fn = _gemm_api.get(out.dtype) if a.dtype == b.dtype == out.dtype and min(a.shape + b.shape) > 0 else None
    if fn is not None and _call_gemm(fn, a, b, out, 1.0 if accumulate else 0.0):
        return out
    if accumulate:
        out += a @ b
    else:
        np.matmul(a, b, out=out)
    return out


_controller = None


def _threadpool_controller():
    """threadpoolctl's controller where it is installed (any BLAS), else False."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
            _controller = ThreadpoolController()
        except ImportError:
            _controller = False
    return _controller


def num_threads():
    """The BLAS library's thread count (``torch.get_num_threads``)."""
    ctl = _threadpool_controller()
    if ctl:
        for info in ctl.info():
            if info.get("user_api") == "blas":
                return info["num_threads"]
    return threads() or os.cpu_count() or 1


def set_num_threads(n):
    """Set the BLAS thread count: through threadpoolctl where installed, else through OpenBLAS's C API."""
    ctl = _threadpool_controller()
    if ctl:
        ctl.limit(limits=int(n), user_api="blas")
    elif not set_threads(int(n)):
        raise RuntimeError("set_num_threads needs numpy built with OpenBLAS, or threadpoolctl for other BLAS "
                           "libraries (pip install threadpoolctl)")
