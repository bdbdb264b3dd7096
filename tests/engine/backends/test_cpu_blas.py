"""OpenBLAS's thread count through its C API: the limit batch streams run under, and
engine.set_num_threads without threadpoolctl."""
import pytest

import engine
from engine.backends.cpu import blas
from engine.utils import threads

pytestmark = pytest.mark.skipif(blas.threads() is None, reason="numpy is not linked to OpenBLAS here")


def test_limit_holds_inside_and_is_restored(two_blas_threads):
    with blas.limited(1) as single:
        assert single and blas.threads() == 1
    assert blas.threads() == 2


def test_thread_count_without_threadpoolctl(two_blas_threads, monkeypatch):
    monkeypatch.setattr(threads, "_controller", lambda: False)
    engine.set_num_threads(1)
    assert blas.threads() == 1 and engine.get_num_threads() == 1
    engine.set_num_threads(2)
    assert blas.threads() == 2 and engine.get_num_threads() == 2
