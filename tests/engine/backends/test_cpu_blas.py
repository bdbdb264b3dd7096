"""OpenBLAS's thread count through its C API: the limit batch streams run under, and
engine.set_num_threads without threadpoolctl, and the short idle spin of its worker threads."""
import os
import subprocess
import sys

import pytest

import engine
from engine.backends.cpu import blas

pytestmark = pytest.mark.skipif(blas.threads() is None, reason="numpy is not linked to OpenBLAS here")


def test_limit_holds_inside_and_is_restored(two_blas_threads):
    with blas.limited(1) as single:
        assert single and blas.threads() == 1
    assert blas.threads() == 2


def test_thread_count_without_threadpoolctl(two_blas_threads, monkeypatch):
    monkeypatch.setattr(blas, "_threadpool_controller", lambda: False)
    engine.set_num_threads(1)
    assert blas.threads() == 1 and engine.get_num_threads() == 1
    engine.set_num_threads(2)
    assert blas.threads() == 2 and engine.get_num_threads() == 2


_IDLE_CPU_SCRIPT = """
import time
import numpy as np
from engine.backends.cpu import blas

a = np.random.default_rng(0).standard_normal((600, 600), dtype=np.float32)
exact = a.astype(np.float64) @ a.astype(np.float64)


def idle_cpu_after_gemm():
    product = a @ a
    start = time.process_time()
    time.sleep(0.3)
    return time.process_time() - start, product


before, _ = idle_cpu_after_gemm()
shortened = blas.shorten_idle_spin()
after, product = idle_cpu_after_gemm()
assert np.allclose(product, exact, rtol=1e-4, atol=1e-3)
print(before, shortened, after)
"""


@pytest.mark.slow  # waits for idle threads
def test_idle_openblas_threads_stop_spinning_soon():
    """After a threaded GEMM, OpenBLAS's idle worker burns CPU time while the process sleeps (its
    default spin of ~0.1 s); after shorten_idle_spin it does not, and GEMMs still give the right
    product (their workers restart). In a fresh process, as engine's thread pool shortens the spin."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    env.pop("OPENBLAS_THREAD_TIMEOUT", None)
    out = subprocess.run([sys.executable, "-c", _IDLE_CPU_SCRIPT], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    before, shortened, after = float(out[0]), out[1], float(out[2])
    assert shortened == "True"
    assert before > 0.05 and after < 0.02, (before, after)


def test_a_user_set_spin_timeout_stands(monkeypatch):
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    assert blas.shorten_idle_spin() is False
