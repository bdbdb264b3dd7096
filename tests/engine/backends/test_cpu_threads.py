"""The CPU thread helpers: numpy's ufunc buffer size around per-channel broadcast kernels."""
import threading

import numpy as np
import pytest

from engine.backends.cpu import threads


@pytest.mark.parametrize("row_length,expected", [(511, 8192), (512, 512), (8191, 512), (8192, 8192)])
def test_row_buffer_only_for_rows_numpy_would_buffer(row_length, expected):
    seen = []
    threads.with_row_buffer(lambda lo, hi: seen.append(np.getbufsize()), row_length)(0, 1)
    assert seen == [expected]
    assert np.getbufsize() == 8192


def test_row_buffer_set_in_every_thread_and_restored_after_errors():
    seen = {}

    def block(lo, hi):
        seen[threading.get_ident()] = np.getbufsize()
    threads.parallel_blocks(threads.with_row_buffer(block, 1024), 64, 1 << 20)
    assert set(seen.values()) == {512} and len(seen) == min(2, threads.get_num_threads())

    def failing(lo, hi):
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        threads.with_row_buffer(failing, 1024)(0, 1)
    assert np.getbufsize() == 8192
